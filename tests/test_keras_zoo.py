"""Keras models as users export them with the TFLite converter compile and match TFLite Micro.

A representative subset of the Keras zoo (tests/keras_zoo_build.py: convolutions with residual adds,
depthwise + hard-swish + squeeze-excite, multi-head attention with LayerNormalization, causal dilated
Conv1D, an unrolled GRU, a Keras 2 LSTM fused into UNIDIRECTIONAL_SEQUENCE_LSTM) is converted once per
session by tensorflow's own Python (a separate venv: tensorflow's pins clash with nn2c's), then each
model is compiled at -O2, built, run on three seeded inputs and compared with TFLM: int8 bit for bit,
float within 1e-4 relative. bench/keras_zoo.py runs the whole zoo and writes docs/zoo-keras.md.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.keras_zoo import build_zoo, check_model, tf_python
from tests.keras_zoo_build import parse_selection

# what CI converts and checks, each entry for operators the others lack; the larger image models
# (conversions of 15-35 s each) and the Keras 3 LSTM loop (its exact memory plan takes 13 s) are left to
# the bench; the fused Keras 2 LSTM adds about 7 s (its conversion 5 s)
CI_SELECTION = ("resnet8_32:int8,mobilenet_v3_small_075_64:int8,transformer_relu_16x24:int8,"
                "tcn_conv1d_49x10,gru_unrolled_20x8:int8,lstm_fused_20x8:int8,gru_20x8:float")
CASES = [case for case in parse_selection(CI_SELECTION) if case != ("gru_20x8", "float")]


@pytest.fixture(scope="session")
def keras_zoo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The converted subset and its manifest, made once for all pytest-xdist workers."""
    python = tf_python()
    if not python.exists():
        pytest.skip(f"SKIPPED LOUDLY: no tensorflow venv for the Keras zoo ({python} does not exist; "
                    "NN2C_TF_PYTHON names another); make it with `make tf-venv` (tensorflow-cpu==2.21.0)")
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers' base folders share this parent
        root = root.parent
    folder = root / "keras_zoo"
    with open(root / "keras_zoo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker converts; the others wait, then read
        if (folder / "manifest.json").exists():
            return folder, json.loads((folder / "manifest.json").read_text())
        return folder, build_zoo(python, folder, CI_SELECTION)


@pytest.mark.parametrize(("model", "variant"), CASES, ids=[f"{m}-{v}" for m, v in CASES])
def test_keras_model_matches_tflm(keras_zoo: tuple[Path, dict[str, Any]], model: str, variant: str,
                                  tmp_path: Path) -> None:
    folder, manifest = keras_zoo
    entry = next(r for r in manifest["models"] if (r["model"], r["variant"]) == (model, variant))
    assert entry["status"] == "ok", f"the TFLite converter failed: {entry.get('error')}"
    check = check_model(folder / entry["file"], entry["input_sample"], tmp_path / "c")
    assert check.reference == "tflm", f"TFLM did not run the model: {check.why_not_tflm}"
    # the converter settings took effect: int8 models take and give int8 (float: float32)
    expected = "int8" if variant == "int8" else "float32"
    assert set(check.io_dtypes) == {expected}, check.io_dtypes
    assert check.input_dependent, "the reference's outputs are the same for every input: nothing is tested"
    assert check.comparisons and all(c.elements > 0 for c in check.comparisons)
    for c in check.comparisons:
        assert c.mismatches == 0, (
            f"output {c.output}: {c.mismatches}/{c.elements} values differ from TFLM "
            f"(max abs diff {c.max_abs_diff:g}, max rel diff {c.max_rel_diff:.3g})")


def test_keras_gru_loop_quantized_by_nn2c_is_bit_exact_with_tflm(keras_zoo: tuple[Path, dict[str, Any]],
                                                               tmp_path: Path) -> None:
    """Keras 3 writes a GRU as a WHILE loop, and the TFLite converter's int8 calibration crashes on it
    (tensorflow#62281, #75140). nn2c quantizes the float export itself: `--quantize int8
    --write-tflite` gives an int8 .tflite (the loop unrolled, each weight stored once) that TFLM runs
    bit for bit like nn2c's C, within a few dB of float."""
    import numpy as np

    from nn2c.api import CompileOptions, compile_model, load_model
    from tests.oracle_check import assert_matches_tflm

    folder, manifest = keras_zoo
    entry = next(r for r in manifest["models"] if (r["model"], r["variant"]) == ("gru_20x8", "float"))
    assert entry["status"] == "ok", f"the TFLite converter failed: {entry.get('error')}"
    calibration = tmp_path / "calibration.npy"
    np.save(calibration, np.random.default_rng(0).standard_normal((16, 1, 20, 8)).astype(np.float32))
    written = tmp_path / "gru_int8.tflite"
    result = compile_model(folder / entry["file"], CompileOptions(quantize="int8", calibration=str(calibration),
                                                                  write_tflite=str(written)))
    assert result.quant.output_sqnr_db > 30, result.quant.output_sqnr_db
    assert result.tflite is not None
    written.write_bytes(result.tflite)
    graph = load_model(written)
    filters = [n.inputs[1] for n in graph.nodes if n.op == "FULLY_CONNECTED"]
    assert len(filters) >= 40 and all(f.type.dtype == "int8" for f in filters)  # 2 per step, 20 steps
    assert len({id(f) for f in filters}) == 5  # each Keras weight once: 2 per GRU layer + the Dense
    assert_matches_tflm(written, tmp_path, records=3, name="gru_int8")
