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


def _model(dtype: str, variants: list[tuple[bool, tuple | None]]) -> bytes:
    """One GELU per variant (approximate, quantization), each with its own input and output: one
    compile, one build and one LiteRT run check them all."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for approximate, quant in variants:
        in_q, out_q = quant if quant is not None else ((None, None), (None, None))
        x = b.tensor(dtype, (4, 64), *in_q)
        y = b.tensor(dtype, (4, 64), *out_q)
        b.op("GELU", [x], [y], {"approximate": approximate}, version=2 if dtype == "int8" else 1)
        inputs.append(x)
        outputs.append(y)
    return b.build(inputs, outputs)


def _check(model: bytes, records: list[list[np.ndarray]], tmp_path: Path) -> None:
    if not is_installed("litert"):
        pytest.skip("SKIPPED LOUDLY: ai-edge-litert is not installed (pip install 'nn2c[oracle]'); CI installs it")
    path = tmp_path / "gelu.tflite"
    path.write_bytes(model)
    result = compile_model(path)
    exe = build(result.write(tmp_path / "c", force=True), tmp_path / "runner",
                extra_flags=["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], opt="-O1")
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    theirs = run_litert(path, records, len(result.graph.outputs))
    for k, (mine_rec, ref_rec) in enumerate(zip(ours, theirs, strict=True)):
        for j, (a, ref) in enumerate(zip(mine_rec, ref_rec, strict=True)):
            b = np.asarray(ref).reshape(a.shape)
            if a.dtype == np.int8:
                assert np.array_equal(a, b), f"record {k}, GELU {j}: {int((a != b).sum())} of {a.size} differ"
            else:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"record {k}, GELU {j}")


def test_int8_gelu_matches_litert_on_every_input(tmp_path):
    variants = [(approximate, quant) for approximate in (False, True) for quant in QUANT]
    every = np.resize(np.arange(-128, 128, dtype=np.int8), (4, 64))  # each int8 value once
    _check(_model("int8", variants), [[every] * len(variants)], tmp_path)


def test_float_gelu_matches_litert(tmp_path):
    rng = np.random.default_rng(4)
    records = [[(rng.standard_normal((4, 64)) * s).astype(np.float32) for s in (0.5, 4.0)] for _ in range(3)]
    _check(_model("float32", [(False, None), (True, None)]), records, tmp_path)
