"""ONNX operators one at a time: each small model compiles at -O2 and matches onnxruntime (1e-4 rel)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.test_onnx_models import OnnxBuilder, assert_matches_ort, ops_after

onnx = pytest.importorskip("onnx")

Case = Callable[[OnnxBuilder], list[str]]


def _conv(shape, weights, **attrs) -> Case:
    def build(b: OnnxBuilder) -> list[str]:
        x = b.input(shape)
        return [b.node("Conv", [x, b.weights(weights), b.weights((weights[0],))], **attrs)]
    return build


def _unary(op: str, shape=(1, 4, 5, 5), **attrs) -> Case:
    def build(b: OnnxBuilder) -> list[str]:
        return [b.node(op, [b.input(list(shape))], **attrs)]
    return build


def _binary(op: str, shape_a, shape_b, const_b: bool = False) -> Case:
    def build(b: OnnxBuilder) -> list[str]:
        a = b.input(list(shape_a))
        other = b.weights(tuple(shape_b)) if const_b else b.input(list(shape_b))
        if op == "Div" and const_b:
            other = b.const(np.abs(b.rng.standard_normal(shape_b)).astype(np.float32) + 0.5)
        return [b.node(op, [a, other])]
    return build


def _pool(op: str, shape=(1, 3, 8, 8), **attrs) -> Case:
    def build(b: OnnxBuilder) -> list[str]:
        return [b.node(op, [b.input(list(shape))], **attrs)]
    return build


def _gemm(**attrs) -> Case:
    def build(b: OnnxBuilder) -> list[str]:
        x = b.input([2, 6] if not attrs.get("transA") else [6, 2])
        w = b.weights((5, 6) if attrs.get("transB") else (6, 5))
        return [b.node("Gemm", [x, w, b.weights((5,))], **attrs)]
    return build


def _matmul(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 3, 7])
    y = b.node("MatMul", [x, b.weights((7, 4))])
    return [b.node("Add", [y, b.weights((4,))])]


def _batchnorm_alone(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 3, 4, 4])
    return [b.node("BatchNormalization", [x, b.weights((3,)), b.weights((3,)), b.weights((3,)),
                                          b.const(np.array([0.5, 1.0, 2.0], np.float32))])]


def _concat_split(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 6, 4, 4])
    y = b.input([1, 2, 4, 4])
    c = b.node("Concat", [x, y], axis=1)
    parts = b.node("Split", [c, b.const(np.array([3, 5], np.int64))], outputs=2, axis=1)
    return [b.node("Relu", [parts[0]]), b.node("Sigmoid", [parts[1]])]


def _slice(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 6, 8, 8])
    s1 = b.node("Slice", [x, b.const(np.array([1, 2], np.int64)), b.const(np.array([5, 100], np.int64)),
                          b.const(np.array([1, 3], np.int64)), b.const(np.array([2, 1], np.int64))])
    s2 = b.node("Slice", [x, b.const(np.array([-1], np.int64)), b.const(np.array([-100], np.int64)),
                          b.const(np.array([2], np.int64)), b.const(np.array([-2], np.int64))])
    return [s1, s2]


def _reshapes(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 4, 3, 2])
    y = b.node("Reshape", [x, b.const(np.array([1, 12, 2], np.int64))])
    y = b.node("Unsqueeze", [y, b.const(np.array([0], np.int64))])
    y = b.node("Squeeze", [y, b.const(np.array([0], np.int64))])
    y = b.node("Transpose", [y], perm=[0, 2, 1])
    y = b.node("Relu", [y])
    return [b.node("Flatten", [y], axis=1)]


def _shape_chain(b: OnnxBuilder) -> list[str]:
    """Reshape to a shape computed by Shape -> Gather -> Unsqueeze -> Concat (folded at compile time)."""
    x = b.input([1, 4, 3, 3])
    shape = b.node("Shape", [x])
    batch = b.node("Gather", [shape, b.const(np.array(0, np.int64))], axis=0)
    batch = b.node("Unsqueeze", [batch, b.const(np.array([0], np.int64))])
    target = b.node("Concat", [batch, b.const(np.array([-1], np.int64))], axis=0)
    target = b.node("Cast", [target], to=onnx.TensorProto.INT64)
    y = b.node("Reshape", [x, target])
    return [b.node("Gemm", [y, b.weights((36, 5))])]


def _pad(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 2, 4, 5])
    y = b.node("Pad", [x, b.const(np.array([0, 0, 1, 2, 0, 1, 0, 3], np.int64))])
    z = b.node("Pad", [x, b.const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)), b.const(np.array(0.5, np.float32))])
    return [y, z]


def _softmax(axis: int) -> Case:
    def build(b: OnnxBuilder) -> list[str]:
        return [b.node("Softmax", [b.input([1, 3, 4])], axis=axis)]
    return build


def _reduce_mean(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 4, 3, 5])
    return [b.node("ReduceMean", [x, b.const(np.array([2, 3], np.int64))], keepdims=0),
            b.node("ReduceMean", [x, b.const(np.array([1], np.int64))], keepdims=1)]


def _clip(lo, hi) -> Case:
    def build(b: OnnxBuilder) -> list[str]:
        x = b.input([1, 3, 4, 4])
        inputs = [x, b.const(np.array(lo, np.float32)) if lo is not None else "",
                  b.const(np.array(hi, np.float32)) if hi is not None else ""]
        while inputs[-1] == "":
            inputs.pop()
        return [b.node("Clip", inputs)]
    return build


def _conv1d_net(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 2, 32])
    y = b.node("Conv", [x, b.weights((6, 2, 5)), b.weights((6,))], pads=[2, 2])
    y = b.node("BatchNormalization", [y, b.weights((6,)), b.weights((6,)), b.weights((6,)),
                                      b.const(np.linspace(0.5, 2, 6).astype(np.float32))])
    y = b.node("Relu", [y])
    y = b.node("Conv", [y, b.weights((6, 1, 3)), b.weights((6,))], group=6, strides=[2], pads=[1, 1])
    y = b.node("MaxPool", [y], kernel_shape=[2], strides=[2])
    y = b.node("AveragePool", [y], kernel_shape=[3], strides=[1], pads=[1, 1])
    y = b.node("GlobalAveragePool", [y])
    return [b.node("Flatten", [y])]


CASES: dict[str, Case] = {
    "conv_same": _conv([1, 3, 7, 7], (4, 3, 3, 3), pads=[1, 1, 1, 1]),
    "conv_stride2_asym": _conv([1, 3, 8, 8], (4, 3, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2]),
    "conv_auto_same_lower": _conv([1, 3, 8, 8], (4, 3, 3, 3), auto_pad="SAME_LOWER", strides=[2, 2]),
    "conv_auto_same_upper": _conv([1, 3, 8, 8], (4, 3, 2, 2), auto_pad="SAME_UPPER"),
    "conv_dilated": _conv([1, 2, 9, 9], (3, 2, 3, 3), dilations=[2, 2], pads=[2, 2, 2, 2]),
    "conv_grouped": _conv([1, 4, 6, 6], (6, 2, 3, 3), group=2),
    "conv_depthwise_multiplier": _conv([1, 3, 6, 6], (6, 1, 3, 3), group=3, pads=[1, 0, 1, 0]),
    "conv_rect": _conv([1, 2, 6, 9], (3, 2, 1, 3), strides=[1, 2]),
    "conv1d_net": _conv1d_net,
    "maxpool_same": _pool("MaxPool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
    "maxpool_explicit": _pool("MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "avgpool_exclude_pad": _pool("AveragePool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "avgpool_include_pad": _pool("AveragePool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                                 count_include_pad=1),
    "avgpool_valid": _pool("AveragePool", kernel_shape=[2, 2], strides=[2, 2]),
    "global_max": _unary("GlobalMaxPool"),
    "gemm": _gemm(),
    "gemm_transB_alpha_beta": _gemm(transB=1, alpha=0.5, beta=2.0),
    "gemm_transA": _gemm(transA=1),
    "matmul_3d": _matmul,
    "batchnorm_alone": _batchnorm_alone,
    "relu": _unary("Relu"),
    "leaky_relu": _unary("LeakyRelu", alpha=0.1),
    "sigmoid": _unary("Sigmoid"),
    "tanh": _unary("Tanh"),
    "hard_sigmoid": _unary("HardSigmoid", alpha=0.3, beta=0.4),
    "hard_swish": _unary("HardSwish"),
    "clip_relu6": _clip(0.0, 6.0),
    "clip_lower": _clip(0.0, None),
    "clip_range": _clip(-0.5, 0.7),
    "clip_n1_to_1": _clip(-1.0, 1.0),
    "clip_0_to_1": _clip(0.0, 1.0),
    "add_broadcast": _binary("Add", (1, 3, 4, 4), (3, 1, 1), const_b=True),
    "sub_two_inputs": _binary("Sub", (1, 3, 4, 4), (1, 1, 4, 4)),
    "sub_const": _binary("Sub", (1, 3, 4, 4), (4,), const_b=True),
    "mul_inputs": _binary("Mul", (1, 3, 4, 4), (1, 3, 1, 1)),
    "div_const": _binary("Div", (1, 3, 4, 4), (1, 3, 1, 1), const_b=True),
    "max_min": _binary("Max", (2, 5), (2, 5)),
    "concat_split": _concat_split,
    "slice": _slice,
    "reshapes": _reshapes,
    "shape_chain": _shape_chain,
    "pad": _pad,
    "softmax_last": _softmax(-1),
    "softmax_middle": _softmax(1),
    "reduce_mean": _reduce_mean,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_matches_onnxruntime(tmp_path, case):
    b = OnnxBuilder(opset=18, seed=sorted(CASES).index(case))
    outputs = CASES[case](b)
    path = b.save(tmp_path / f"{case}.onnx", outputs)
    assert_matches_ort(path, tmp_path, nhwc_io=case.startswith(("conv", "maxpool", "avgpool")))


def test_opset_11_attributes(tmp_path):
    """Split sizes, Squeeze / Unsqueeze axes, ReduceMean axes and Clip bounds as opset-11 attributes."""
    b = OnnxBuilder(opset=11)
    x = b.input([1, 6, 3])
    parts = b.node("Split", [x], outputs=2, axis=1, split=[2, 4])
    y = b.node("Unsqueeze", [parts[1]], axes=[0])
    y = b.node("Squeeze", [y], axes=[0])
    y = b.node("ReduceMean", [y], axes=[2], keepdims=0)
    y = b.node("Clip", [y, b.const(np.array(-0.2, np.float32)), b.const(np.array(0.3, np.float32))])
    z = b.node("Softmax", [parts[0]], axis=1)  # opset < 13: over all axes from 1 on
    path = b.save(tmp_path / "opset11.onnx", [y, z])
    assert_matches_ort(path, tmp_path)


def test_constant_chain_leaves_no_code(tmp_path):
    b = OnnxBuilder(opset=18)
    outputs = _shape_chain(b)
    path = b.save(tmp_path / "chain.onnx", outputs)
    assert ops_after(path, opt_level=1) == ["RESHAPE", "FULLY_CONNECTED"]
    assert ops_after(path, opt_level=2) == ["RESHAPE", "FULLY_CONNECTED"]
