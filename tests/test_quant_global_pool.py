"""Global average pools over a few pixels are quantized as a depthwise convolution
(nn2c/quant/global_pool.py): its int8 output is the mean rounded once, where TFLite Micro's int8
MEAN (what the C would run otherwise) rounds twice and moves many outputs by one code.

A float ONNX GlobalAveragePool over 2 x 2 pixels, quantized with int8 I/O and built: the C's codes
are compared with the exactly rounded mean of the very codes it was given, and with TFLite Micro
running the .tflite nn2c writes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.quant import global_pool
from nn2c.verify.compare import run_compiled

CHANNELS = 32


def _pool_model(path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    h, tp = onnx.helper, onnx.TensorProto
    graph = h.make_graph([h.make_node("GlobalAveragePool", ["x"], ["y"])], "pool",
                         [h.make_tensor_value_info("x", tp.FLOAT, [1, CHANNELS, 2, 2])],
                         [h.make_tensor_value_info("y", tp.FLOAT, [1, CHANNELS, 1, 1])])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(path))
    return path


def _compile_and_run(path: Path, tmp_path: Path, tag: str) -> tuple[object, np.ndarray, np.ndarray]:
    """(CompileResult, 200 int8 input records, the C's int8 outputs)."""
    rng = np.random.default_rng(7)
    np.save(tmp_path / "calibration.npy", rng.uniform(-1.0, 3.0, (32, 1, 2, 2, CHANNELS)).astype(np.float32))
    # channels-last I/O: the pool reads the input as the NHWC tensor a convolution would have made
    result = compile_model(path, CompileOptions(quantize="int8", calibration=str(tmp_path / "calibration.npy"),
                                                io="int8", nhwc_io=True, write_tflite=str(tmp_path / f"{tag}.tflite")))
    codes = rng.integers(-128, 128, (200, *result.graph.inputs[0].type.shape)).astype(np.int8)
    got = np.stack([r[0] for r in run_compiled(result, [[c] for c in codes], tmp_path / tag)])
    return result, codes, got


def _rounding_error(result, codes: np.ndarray, got: np.ndarray) -> np.ndarray:
    """The C's codes minus the exactly rounded mean of the input codes' real values."""
    qx, qy = result.graph.inputs[0].type.quant, result.graph.outputs[0].type.quant
    mean = ((codes.astype(np.float64) - qx.zero_point[0]) * qx.scale[0]).mean(axis=(2, 3))  # [N, 1, H, W, C]
    exact = np.clip(np.round(mean / qy.scale[0]) + qy.zero_point[0], -128, 127)
    return got.astype(np.int64).reshape(exact.shape) - exact


def test_small_global_pool_is_rounded_once(tmp_path, monkeypatch):
    model = _pool_model(tmp_path / "pool.onnx")
    result, codes, got = _compile_and_run(model, tmp_path, "depthwise")
    assert {n.op for n in result.graph.nodes} == {"DEPTHWISE_CONV_2D"}
    error = _rounding_error(result, codes, got)
    assert np.abs(error).max() <= 1 and np.mean(error != 0) < 0.01 and abs(error.mean()) < 0.01

    monkeypatch.setattr(global_pool, "MAX_PIXELS", 0)  # TFLite Micro's MEAN, for contrast
    result, codes, got = _compile_and_run(model, tmp_path, "mean")
    assert {n.op for n in result.graph.nodes} == {"MEAN"}
    error = _rounding_error(result, codes, got)
    assert np.mean(error != 0) > 0.05 and abs(error.mean()) > 0.03  # the double rounding the replacement avoids


def test_pool_as_depthwise_is_bit_exact_with_tflm(tmp_path):
    pytest.importorskip("tflite_micro", reason="SKIPPED LOUDLY: tflite_micro (the TFLM oracle) is not installed")
    from nn2c.verify.oracle import run_tflm

    result, codes, got = _compile_and_run(_pool_model(tmp_path / "pool.onnx"), tmp_path, "depthwise")
    tflm = run_tflm(result.tflite, [[c] for c in codes], 1)
    np.testing.assert_array_equal(np.stack([r[0] for r in tflm]).reshape(got.shape), got)
