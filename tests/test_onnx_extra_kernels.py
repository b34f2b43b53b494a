"""The kernels ONNX models brought in (codegen/ops/extra.py: RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU,
HARD_SWISH, SUB, SPLIT, SPLIT_V) are TFLite builtins too: checked against TFLite Micro, bit for bit
for integers and 1e-5 relative for floats, on single-operator TFLite models."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder

Q = {"int8": {"scale": 0.05, "zero_point": -7}, "int16": {"scale": 0.002, "zero_point": 0}, "float32": {}}
Q_OUT = {"int8": {"scale": 0.04, "zero_point": -20}, "int16": {"scale": 0.0015, "zero_point": 0}, "float32": {}}


@pytest.mark.parametrize("op", ["RELU", "RELU6"])  # TFLM has no RELU_N1_TO_1 (the ONNX tests cover it)
@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
def test_relu_family(tmp_path, op, dtype):
    b = ModelBuilder()
    x = b.tensor(dtype, (2, 5, 7), **Q[dtype])
    out_q = Q_OUT[dtype] if op == "RELU" else Q[dtype]  # TFLM's RELU6 keeps the input's parameters
    y = b.tensor(dtype, (2, 5, 7), **out_q)
    b.op(op, [x], [y])
    assert_matches_tflm(b.build([x], [y]), tmp_path, records=3)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("alpha", [0.1, 0.5])
def test_leaky_relu(tmp_path, dtype, alpha):
    b = ModelBuilder()
    x = b.tensor(dtype, (1, 6, 9), **Q[dtype])
    y = b.tensor(dtype, (1, 6, 9), **Q_OUT[dtype])
    b.op("LEAKY_RELU", [x], [y], {"alpha": alpha})
    assert_matches_tflm(b.build([x], [y]), tmp_path, records=3)


def test_hard_swish_float(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 4, 4, 3))
    y = b.tensor("float32", (1, 4, 4, 3))
    b.op("HARD_SWISH", [x], [y])
    assert_matches_tflm(b.build([x], [y]), tmp_path, records=3)


@pytest.mark.parametrize(("in_q", "out_q"), [((0.05, -7), (0.04, -20)), ((0.2, 10), (0.01, -128)),
                                             ((0.01, 0), (0.3, 5)), ((0.1, -128), (0.1, -128))])
def test_hard_swish_int8(tmp_path, in_q, out_q):
    b = ModelBuilder()
    x = b.tensor("int8", (1, 256), scale=in_q[0], zero_point=in_q[1])
    y = b.tensor("int8", (1, 256), scale=out_q[0], zero_point=out_q[1])
    b.op("HARD_SWISH", [x], [y])
    assert_matches_tflm(b.build([x], [y]), tmp_path, records=4)


# int32 SUB has no fused activation in TFLite: that combination is not generated
@pytest.mark.parametrize(("dtype", "activation"), [("float32", "NONE"), ("float32", "RELU6"), ("int8", "NONE"),
                                                   ("int8", "RELU6"), ("int16", "NONE"), ("int16", "RELU6"),
                                                   ("int32", "NONE")])
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (1, 3, 1)), ((4,), (3, 1))])
def test_sub(tmp_path, dtype, shapes, activation):
    a_shape, b_shape = shapes
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    q_a = {"int8": {"scale": 0.05, "zero_point": -7}, "int16": {"scale": 0.002, "zero_point": 0}}.get(dtype, {})
    q_b = {"int8": {"scale": 0.03, "zero_point": 4}, "int16": {"scale": 0.003, "zero_point": 0}}.get(dtype, {})
    b = ModelBuilder()
    x1 = b.tensor(dtype, a_shape, **q_a)
    x2 = b.tensor(dtype, b_shape, **q_b)
    y = b.tensor(dtype, out_shape, **Q_OUT.get(dtype, {}))
    b.op("SUB", [x1, x2], [y], {"fused_activation_function": activation})
    assert_matches_tflm(b.build([x1, x2], [y]), tmp_path, records=3)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_split(tmp_path, dtype, axis):
    b = ModelBuilder()
    x = b.tensor(dtype, (4, 6, 2), **Q[dtype])
    ax = b.tensor("int32", (1,), data=np.array([axis]))
    shape = [4, 6, 2]
    shape[axis] //= 2
    outs = [b.tensor(dtype, tuple(shape), **Q[dtype]) for _ in range(2)]
    b.op("SPLIT", [ax, x], outs, {"num_splits": 2})
    assert_matches_tflm(b.build([x], outs), tmp_path, records=2)


@pytest.mark.parametrize("sizes", [[1, 2, 3], [4, -1]])
def test_split_v(tmp_path, sizes):
    b = ModelBuilder()
    x = b.tensor("int8", (2, 6, 3), scale=0.1, zero_point=1)
    size_t = b.tensor("int32", (len(sizes),), data=np.array(sizes))
    ax = b.tensor("int32", (1,), data=np.array([1]))
    resolved = [s if s >= 0 else 6 - sum(v for v in sizes if v >= 0) for s in sizes]
    outs = [b.tensor("int8", (2, s, 3), scale=0.1, zero_point=1) for s in resolved]
    b.op("SPLIT_V", [x, size_t, ax], outs, {"num_splits": len(sizes)})
    assert_matches_tflm(b.build([x], outs), tmp_path, records=2)
