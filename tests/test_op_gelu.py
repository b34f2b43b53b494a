"""TFLite GELU (a LiteRT builtin that TFLM does not register) against LiteRT: the Keras 3 transformer
export writes it (docs/zoo-keras.md). int8 is a 256-entry table built as TFLite's kernels/gelu.cc
builds it (bit-exact); float within 1e-5 relative. Both `approximate` forms: TFLite stores a bool,
the IR the ONNX strings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nn2c.api import compile_model
from nn2c.verify.build import build, run
from nn2c.verify.oracle import is_installed, run_litert
from tests.tflite_builder import ModelBuilder

# (input scale, zero point), (output scale, zero point): a wide and a narrow input range, a shifted one
QUANT = [((0.05, 0), (0.03, -20)), ((0.0125, -10), (0.01, -100)), ((0.1, 40), (0.05, -110))]


def _model(dtype: str, approximate: bool, quant: tuple | None) -> bytes:
    b = ModelBuilder()
    in_q, out_q = quant if quant is not None else ((None, None), (None, None))
    x = b.tensor(dtype, (4, 64), *in_q)
    y = b.tensor(dtype, (4, 64), *out_q)
    b.op("GELU", [x], [y], {"approximate": approximate}, version=2 if dtype == "int8" else 1)
    return b.build([x], [y])


def _check(model: bytes, records: list[list[np.ndarray]], tmp_path: Path) -> None:
    if not is_installed("litert"):
        pytest.skip("SKIPPED LOUDLY: ai-edge-litert is not installed (pip install 'nn2c[oracle]'); CI installs it")
    path = tmp_path / "gelu.tflite"
    path.write_bytes(model)
    result = compile_model(path)
    exe = build(result.write(tmp_path / "c", force=True), tmp_path / "runner",
                extra_flags=["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], opt="-O1")
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    theirs = run_litert(path, records, 1)
    for k, (mine, ref) in enumerate(zip(ours, theirs, strict=True)):
        a, b = mine[0], np.asarray(ref[0]).reshape(mine[0].shape)
        if a.dtype == np.int8:
            assert np.array_equal(a, b), f"record {k}: {int((a != b).sum())} of {a.size} differ"
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"record {k}")


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("quant", QUANT)
def test_int8_gelu_matches_litert_on_every_input(approximate, quant, tmp_path):
    every = np.resize(np.arange(-128, 128, dtype=np.int8), (4, 64))  # each int8 value once
    _check(_model("int8", approximate, quant), [[every]], tmp_path)


@pytest.mark.parametrize("approximate", [False, True])
def test_float_gelu_matches_litert(approximate, tmp_path):
    rng = np.random.default_rng(4)
    records = [[(rng.standard_normal((4, 64)) * s).astype(np.float32)] for s in (0.5, 2.0, 4.0)]
    _check(_model("float32", approximate, None), records, tmp_path)
