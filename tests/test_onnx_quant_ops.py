"""ONNX quantization operators with run-time parameters against onnxruntime: QuantizeLinear /
DequantizeLinear whose scales and zero points are computed by the model (per tensor and per axis;
int8, uint8, int16), DequantizeLinear of a uint8 graph input, DynamicQuantizeLinear,
MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv (integer outputs bit-exact); blocked
quantization and uint8 x int8 sums of 1,000 terms against ONNX's reference; the refusals; constant-scale Q/DQ keeping the QUANTIZE /
DEQUANTIZE form; and a sanitizer build of the kernels on extreme inputs.

Each test is one model of many independent nodes (one C build).
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="SKIPPED LOUDLY: the onnx package is not installed (pip install nn2c[test])")
ort = pytest.importorskip("onnxruntime", reason="SKIPPED LOUDLY: onnxruntime is not installed (pip install nn2c[test])")

from onnx import TensorProto  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.errors import InvalidModelError, UnsupportedOpError  # noqa: E402
from nn2c.verify.build import build, run  # noqa: E402
from tests.c_safety import extreme_records  # noqa: E402
from tests.oracle_check import assert_records_match  # noqa: E402
from tests.test_onnx_models import OnnxBuilder, assert_matches_ort, ops_after  # noqa: E402

UINT8, INT8, INT16, INT32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT16, TensorProto.INT32
SANITIZE = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def _f32(value: float | list[float]) -> np.ndarray:
    return np.asarray(value, dtype=np.float32)


def _runtime_scale(b: OnnxBuilder, x: str, axes: list[int] | None, offset: float) -> str:
    """A positive scale computed from x: mean |x| over `axes` (all: a scalar) plus an offset."""
    inputs = [b.node("Abs", [x])] + ([] if axes is None else [b.const(np.array(axes, np.int64))])
    return b.node("Add", [b.node("ReduceMean", inputs, keepdims=0), b.const(_f32(offset))])


def _qdq_zoo(b: OnnxBuilder) -> list[str]:
    x = b.input([2, 3, 4])
    per_tensor = _runtime_scale(b, x, None, 0.01)
    per_axis = _runtime_scale(b, x, [0, 2], 0.02)  # [3]: along axis 1
    outputs = []
    for dtype, zp_shape in ((UINT8, []), (INT8, []), (INT16, []), (UINT8, [3]), (INT8, [3])):
        zp = b.input(zp_shape, dtype=dtype)
        scale = per_tensor if not zp_shape else per_axis
        q = b.node("QuantizeLinear", [x, scale, zp], axis=1)
        outputs += [q, b.node("DequantizeLinear", [q, scale, zp], axis=1)]
    # no zero point: uint8; a run-time scale, constant zero point
    outputs.append(b.node("QuantizeLinear", [x, per_tensor]))
    outputs.append(b.node("QuantizeLinear", [x, per_axis, b.const(np.array([5, -7, 0], np.int8))], axis=-2))
    # a uint8 / int16 graph input dequantized with constant parameters (no QuantizeLinear before it)
    u = b.input([2, 3], dtype=UINT8)
    outputs.append(b.node("DequantizeLinear", [u, b.const(_f32(0.5)), b.const(np.array(128, np.uint8))]))
    h = b.input([2, 3], dtype=INT16)
    outputs.append(b.node("DequantizeLinear", [h, b.const(_f32([0.1, 0.2, 0.3])), b.const(np.array([1, -2, 3], np.int16))],
                          axis=1))
    return outputs


def test_runtime_quantize_dequantize_match_onnxruntime(tmp_path):
    b = OnnxBuilder(opset=21)
    path = b.save(tmp_path / "qdq_runtime.onnx", _qdq_zoo(b))
    assert_matches_ort(path, tmp_path, count=4)
    ops = ops_after(path)
    assert "QUANTIZE_LINEAR" in ops and "DEQUANTIZE_LINEAR" in ops


def test_dynamic_quantize_and_integer_products_match_onnxruntime(tmp_path):
    b = OnnxBuilder(opset=19, seed=3)
    x = b.input([3, 5])
    outputs = list(b.nodes[-1].output) if b.node("DynamicQuantizeLinear", [x], outputs=3) else []
    # MatMulInteger: run-time operands, then constant weights with per-column zero points
    a8, w8 = b.input([2, 4, 6], dtype=UINT8), b.input([6, 3], dtype=UINT8)
    outputs.append(b.node("MatMulInteger", [a8, w8, b.input([], dtype=UINT8), b.input([], dtype=UINT8)]))
    wc = b.const(b.rng.integers(-128, 128, (6, 5)).astype(np.int8))
    ai = b.input([4, 6], dtype=INT8)
    outputs.append(b.node("MatMulInteger", [ai, wc, b.const(np.array(3, np.int8)),
                                            b.const(np.arange(5, dtype=np.int8) - 2)]))
    # ConvInteger with padding (onnxruntime has per-tensor weight zero points only); QLinearConv per-channel + bias
    xc = b.input([1, 2, 5, 5], dtype=UINT8)
    wconv = b.const(b.rng.integers(0, 256, (3, 2, 3, 3)).astype(np.uint8))
    outputs.append(b.node("ConvInteger", [xc, wconv, b.const(np.array(100, np.uint8)),
                                          b.const(np.array(131, np.uint8))], pads=[1, 1, 1, 1]))
    wq = b.const(b.rng.integers(-127, 128, (4, 2, 3, 3)).astype(np.int8))
    xq = b.input([1, 2, 6, 6], dtype=INT8)
    outputs.append(b.node("QLinearConv", [xq, b.const(_f32(0.02)), b.const(np.array(-3, np.int8)), wq,
                                          b.const(_f32([0.01, 0.02, 0.015, 0.03])), b.const(np.zeros(4, np.int8)),
                                          b.const(_f32(0.25)), b.const(np.array(4, np.int8)),
                                          b.const(np.array([100, -200, 0, 3000], np.int32))], strides=[2, 2]))
    # QLinearMatMul: uint8 with run-time scales, int8 with constant per-column weights
    qa, qb = b.input([2, 3, 4], dtype=UINT8), b.input([2, 4, 5], dtype=UINT8)
    sa = _runtime_scale(b, x, None, 0.001)
    outputs.append(b.node("QLinearMatMul", [qa, sa, b.input([], dtype=UINT8), qb, b.const(_f32(0.004)),
                                            b.const(np.array(120, np.uint8)), b.const(_f32(30.0)),
                                            b.const(np.array(130, np.uint8))]))
    ia = b.input([3, 4], dtype=INT8)
    outputs.append(b.node("QLinearMatMul", [ia, b.const(_f32(0.05)), b.const(np.array(1, np.int8)),
                                            b.const(b.rng.integers(-128, 128, (4, 2)).astype(np.int8)),
                                            b.const(_f32([0.01, 0.03])), b.const(np.zeros(2, np.int8)),
                                            b.const(_f32(0.8)), b.const(np.array(-5, np.int8))]))
    path = b.save(tmp_path / "integer_ops.onnx", outputs)
    assert_matches_ort(path, tmp_path, count=4)


def test_long_uint8_int8_sums_match_onnx_reference(tmp_path):
    """uint8 x int8 products over 1,000 terms (beyond float32's exact integers: nn2c's int32 kernel, a 2-D
    b). onnxruntime is no exact oracle for these: on x86 CPUs without VNNI its u8s8 kernels add pairs of
    products in saturating int16 (VPMADDUBSW); on this machine's AMD EPYC (AVX2 only) onnxruntime 1.31
    and 1.32 put MatMulInteger up to 62,686 off the exact sum. ONNX's reference implementation judges
    them, on random inputs and on the extremes (all 0, all 255)."""
    b = OnnxBuilder(opset=19, seed=3)
    long_a = b.input([3, 1000], dtype=UINT8)
    long_w = b.const(b.rng.integers(-128, 128, (1000, 4)).astype(np.int8))
    outputs = [b.node("MatMulInteger", [long_a, long_w, b.const(np.array(7, np.uint8)),
                                        b.const(np.array([0, 5, -9, 127], np.int8))]),
               b.node("QLinearMatMul", [long_a, b.const(_f32(0.02)), b.const(np.array(7, np.uint8)), long_w,
                                        b.const(_f32(0.01)), b.const(np.array(-2, np.int8)), b.const(_f32(9.0)),
                                        b.const(np.array(128, np.uint8))])]
    path = b.save(tmp_path / "long_sums.onnx", outputs)
    result = compile_model(path, CompileOptions())
    exe = build(result.write(tmp_path / "out"), tmp_path / "runner")
    rng = np.random.default_rng(2)
    records = [[rng.integers(0, 256, (3, 1000)).astype(np.uint8)] for _ in range(3)]
    records += [[np.zeros((3, 1000), np.uint8)], [np.full((3, 1000), 255, np.uint8)]]
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    reference = ReferenceEvaluator(onnx.load(str(path)))
    theirs = [[np.asarray(t) for t in reference.run(None, {long_a: rec[0]})] for rec in records]
    assert_records_match(ours, theirs, rtol=0, atol=0)


def test_blocked_quantization_matches_onnx_reference(tmp_path):
    b = OnnxBuilder(opset=21)
    x = b.input([2, 5, 3])
    scale = b.input([2, 3, 3])  # blocks of 2 along axis 1: ceil(5 / 2) = 3
    zp = b.const(np.arange(18, dtype=np.int8).reshape(2, 3, 3) - 9)
    q = b.node("QuantizeLinear", [x, scale, zp], axis=1, block_size=2)
    y = b.node("DequantizeLinear", [q, scale, zp], axis=1, block_size=2)
    u = b.node("QuantizeLinear", [x, scale], axis=1, block_size=2, output_dtype=TensorProto.INT16)
    path = b.save(tmp_path / "blocked.onnx", [q, y, u])
    result = compile_model(path, CompileOptions())
    out = result.write(tmp_path / "out")
    exe = build(out, tmp_path / "runner")
    rng = np.random.default_rng(1)
    records = [[rng.standard_normal((2, 5, 3)).astype(np.float32) * 4,
                rng.uniform(0.05, 0.5, (2, 3, 3)).astype(np.float32)] for _ in range(3)]
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    reference = ReferenceEvaluator(onnx.load(str(path)))
    theirs = [reference.run(None, dict(zip(["x_1", "x_2"], rec, strict=True))) for rec in records]
    assert_records_match(ours, [[np.asarray(t) for t in rec] for rec in theirs], rtol=1e-6, atol=1e-6)


def test_constant_parameters_keep_the_quantize_dequantize_form(tmp_path):
    b = OnnxBuilder(opset=19)
    x = b.input([2, 3])
    q = b.node("QuantizeLinear", [x, b.const(_f32(0.1)), b.const(np.array(3, np.int8))])
    path = b.save(tmp_path / "const_qdq.onnx", [b.node("DequantizeLinear", [q, b.const(_f32(0.1)),
                                                                             b.const(np.array(3, np.int8))])])
    ops = ops_after(path, opt_level=0)
    assert "QUANTIZE" in ops and "QUANTIZE_LINEAR" not in ops and "DEQUANTIZE_LINEAR" not in ops


def _refusal(tmp_path, name: str, build_outputs) -> str:
    b = OnnxBuilder(opset=21)
    path = b.save(tmp_path / f"{name}.onnx", build_outputs(b))
    with pytest.raises((UnsupportedOpError, InvalidModelError)) as info:
        compile_model(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_refusals_are_one_line(tmp_path):
    def uint16(b: OnnxBuilder) -> list[str]:
        x = b.input([4])
        return [b.node("QuantizeLinear", [x, b.input([])], output_dtype=TensorProto.UINT16)]

    def long_sums(b: OnnxBuilder) -> list[str]:
        return [b.node("MatMulInteger", [b.input([2, 2, 300], dtype=UINT8), b.input([2, 300, 2], dtype=UINT8)])]

    assert "quantization to ONNX type 4" in _refusal(tmp_path, "uint16", uint16)
    assert "2^24" in _refusal(tmp_path, "long_sums", long_sums)


def _extreme_zoo(b: OnnxBuilder) -> list[str]:
    x = b.input([2, 3, 4])
    s = b.input([3])  # extremes: -3 / 3 (a negative scale), and NaN / inf / 0 below
    outputs = []
    for dtype in (UINT8, INT8, INT16, INT32):
        zp = b.input([3], dtype=dtype)
        q = b.node("QuantizeLinear", [x, s, zp], axis=1)
        outputs += [q, b.node("DequantizeLinear", [q, s, zp], axis=1)]
    for a_type, b_type in ((UINT8, UINT8), (UINT8, INT8), (INT8, UINT8), (INT8, INT8)):
        a, w = b.input([2, 40], dtype=a_type), b.input([40, 3], dtype=b_type)
        outputs.append(b.node("MatMulInteger", [a, w, b.input([], dtype=a_type), b.input([3], dtype=b_type)]))
    return outputs


def test_quant_kernels_sanitizer_clean_on_extreme_inputs(tmp_path):
    b = OnnxBuilder(opset=21)
    path = b.save(tmp_path / "extremes.onnx", _extreme_zoo(b))
    result = compile_model(path, CompileOptions())
    out = result.write(tmp_path / "out")
    exe = build(out, tmp_path / "asan_runner", opt="-O1", extra_flags=SANITIZE)
    records = extreme_records(result.graph)
    special = []
    for v in result.graph.inputs:
        if v.type.dtype == "float32":
            pattern = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e38, -1e38, 1e-45], dtype=np.float32)
        else:
            info = np.iinfo(np.dtype(v.type.dtype))
            pattern = np.array([info.min, info.max, 0], dtype=np.dtype(v.type.dtype))
        special.append(np.resize(pattern, v.type.shape))
    ours = run(exe, [*records, special], result.graph.inputs, result.graph.outputs)
    assert len(ours) == 3
