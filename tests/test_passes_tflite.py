"""The graph passes on TensorFlow Lite input: structure after -O2, outputs against TFLite Micro (bit for
bit for integers, 1e-5 relative for floats), and idempotence on every model of the repo."""

from __future__ import annotations

import numpy as np
import pytest

from nn2c.api import load_model
from nn2c.ir import verify
from nn2c.passes.pipeline import optimize
from tests.conftest import MODELS
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder


def _ops(model: bytes, tmp_path, level: int = 2) -> list[str]:
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    graph = load_model(path)
    optimize(graph, level, check=True)
    return [n.op for n in graph.nodes]


def test_dequantize_quantize_pair_is_removed(tmp_path):
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.tensor("int8", (1, 8), scale=0.05, zero_point=-3)
    f = b.tensor("float32", (1, 8))
    q = b.tensor("int8", (1, 8), scale=0.05, zero_point=-3)
    w = b.tensor("int8", (4, 8), scale=0.02, zero_point=0, data=rng.integers(-127, 128, (4, 8)))
    bias = b.tensor("int32", (4,), scale=0.001, zero_point=0, data=rng.integers(-300, 300, 4))
    y = b.tensor("int8", (1, 4), scale=0.1, zero_point=2)
    b.op("DEQUANTIZE", [x], [f])
    b.op("QUANTIZE", [f], [q])
    b.op("FULLY_CONNECTED", [q, w, bias], [y], {"fused_activation_function": "RELU"})
    model = b.build([x], [y])
    assert _ops(model, tmp_path, level=0) == ["DEQUANTIZE", "QUANTIZE", "FULLY_CONNECTED"]
    assert _ops(model, tmp_path) == ["FULLY_CONNECTED"]
    assert_matches_tflm(model, tmp_path)


def test_requantizing_pair_is_kept_on_tflite_input(tmp_path):
    """TFLM runs DEQUANTIZE -> QUANTIZE in float; an integer requantization could round differently."""
    b = ModelBuilder()
    x = b.tensor("int8", (1, 16), scale=0.05, zero_point=-3)
    f = b.tensor("float32", (1, 16))
    y = b.tensor("int8", (1, 16), scale=0.07, zero_point=5)
    b.op("DEQUANTIZE", [x], [f])
    b.op("QUANTIZE", [f], [y])
    model = b.build([x], [y])
    assert _ops(model, tmp_path) == ["DEQUANTIZE", "QUANTIZE"]
    assert_matches_tflm(model, tmp_path)


def test_transpose_before_reshape_into_dense_layer(tmp_path):
    rng = np.random.default_rng(1)
    b = ModelBuilder()
    x = b.tensor("float32", (1, 3, 4, 5))
    perm = b.tensor("int32", (4,), data=np.array([0, 3, 1, 2]))
    t = b.tensor("float32", (1, 5, 3, 4))
    shape = b.tensor("int32", (2,), data=np.array([1, 60]))
    r = b.tensor("float32", (1, 60))
    w = b.tensor("float32", (6, 60), data=rng.standard_normal((6, 60)))
    bias = b.tensor("float32", (6,), data=rng.standard_normal(6))
    y = b.tensor("float32", (1, 6))
    b.op("TRANSPOSE", [x, perm], [t])
    b.op("RESHAPE", [t, shape], [r], {"new_shape": [1, 60]})
    b.op("FULLY_CONNECTED", [r, w, bias], [y], {"fused_activation_function": "NONE"})
    model = b.build([x], [y])
    assert _ops(model, tmp_path) == ["RESHAPE", "FULLY_CONNECTED"]
    assert_matches_tflm(model, tmp_path)


def test_transposes_cancel_and_affine_folds_on_float_tflite(tmp_path):
    rng = np.random.default_rng(2)
    b = ModelBuilder()
    x = b.tensor("float32", (1, 6, 6, 3))
    w = b.tensor("float32", (4, 3, 3, 3), data=rng.standard_normal((4, 3, 3, 3)))
    c = b.tensor("float32", (1, 6, 6, 4))
    s = b.tensor("float32", (4,), data=rng.uniform(0.5, 1.5, 4))
    m = b.tensor("float32", (1, 6, 6, 4))
    to_nchw = b.tensor("int32", (4,), data=np.array([0, 3, 1, 2]))
    to_nhwc = b.tensor("int32", (4,), data=np.array([0, 2, 3, 1]))
    t1 = b.tensor("float32", (1, 4, 6, 6))
    r = b.tensor("float32", (1, 4, 6, 6))
    t2 = b.tensor("float32", (1, 6, 6, 4))
    b.op("CONV_2D", [x, w, -1], [c], {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    b.op("MUL", [c, s], [m], {"fused_activation_function": "NONE"})
    b.op("TRANSPOSE", [m, to_nchw], [t1])
    b.op("RELU", [t1], [r])
    b.op("TRANSPOSE", [r, to_nhwc], [t2])
    model = b.build([x], [t2])
    assert _ops(model, tmp_path) == ["CONV_2D"]
    assert_matches_tflm(model, tmp_path)


def test_shape_slice_pack_chain_feeding_reshape_folds_away(tmp_path):
    """The converter's dynamic-batch idiom: RESHAPE(x, PACK(STRIDED_SLICE(SHAPE(x)), -1)) -> one RESHAPE."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.tensor("float32", (1, 4, 4, 2))
    shape = b.tensor("int32", (4,))
    begin, end, strides = (b.tensor("int32", (1,), data=np.array([v])) for v in (0, 1, 1))
    batch = b.tensor("int32", ())
    minus_one = b.tensor("int32", (), data=np.array(-1))
    packed = b.tensor("int32", (2,))
    flat = b.tensor("float32", (1, 32))
    w = b.tensor("float32", (3, 32), data=rng.standard_normal((3, 32)))
    y = b.tensor("float32", (1, 3))
    b.op("SHAPE", [x], [shape], {"out_type": 2})
    b.op("STRIDED_SLICE", [shape, begin, end, strides], [batch], {"shrink_axis_mask": 1})
    b.op("PACK", [batch, minus_one], [packed], {"values_count": 2, "axis": 0})
    b.op("RESHAPE", [x, packed], [flat])
    b.op("FULLY_CONNECTED", [flat, w, -1], [y], {"fused_activation_function": "NONE"})
    model = b.build([x], [y])
    assert _ops(model, tmp_path, level=0) == ["SHAPE", "STRIDED_SLICE", "PACK", "RESHAPE", "FULLY_CONNECTED"]
    assert _ops(model, tmp_path) == ["RESHAPE", "FULLY_CONNECTED"]
    assert_matches_tflm(model, tmp_path)


@pytest.mark.parametrize("path", sorted(MODELS.rglob("*.tflite")), ids=lambda p: p.name)
def test_pipeline_twice_changes_nothing_on_repo_models(path):
    graph = load_model(path)
    optimize(graph, 2, check=True)
    second = optimize(graph, 2, check=True)
    verify(graph)
    assert not any(r.modified for r in second.per_pass.values())
