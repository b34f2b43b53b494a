"""Each graph pass on small ONNX models: the structure before and after, the same numbers as
before (reference evaluator) and as onnxruntime, and idempotence (a second run changes nothing)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model, load_model
from nn2c.ir import Graph, verify
from nn2c.passes.base import PassResult
from nn2c.passes.constant_folding import fold_constants
from nn2c.passes.dead_code import eliminate_dead_code
from nn2c.passes.fold_affine import fold_affine
from nn2c.passes.fuse_activation import fuse_activations
from nn2c.passes.fuse_reduce_reshape import fuse_reduce_reshape
from nn2c.passes.layout import sink_transposes
from nn2c.passes.pipeline import PIPELINES, format_report, optimize, report_dict
from nn2c.passes.qdq import rewrite_qdq
from nn2c.passes.simplify import simplify
from nn2c.reference import run_graph
from nn2c.verify.inputs import random_records
from nn2c.verify.onnx_oracle import run_onnxruntime
from tests.test_onnx_models import OnnxBuilder, assert_matches_ort

onnx = pytest.importorskip("onnx")
Pass = Callable[[Graph], PassResult]


def ops(graph: Graph) -> list[str]:
    return [n.op for n in graph.nodes]


def apply(path: Path, *passes: Pass, nhwc_io: bool = False, rtol: float = 1e-5) -> tuple[Graph, list[str]]:
    """Load, run the passes (and dead code) in rounds until nothing changes; every pass must leave the
    graph valid and be idempotent (a second run right after the first changes nothing), and the
    result must compute what the graph computed before and what onnxruntime computes."""
    graph = load_model(path, nhwc_io=nhwc_io)
    before = ops(graph)
    records = random_records(graph.inputs, 2, seed=3)
    expected = [run_graph(graph, r) for r in records]
    changed = True
    while changed:
        changed = False
        for run in (*passes, eliminate_dead_code):
            changed |= run(graph).modified
            verify(graph)
            assert not run(graph).modified, f"{run.__name__} changed the graph a second time"
    for record, want in zip(records, expected, strict=True):
        for got, ref in zip(run_graph(graph, record), want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-5)
    theirs = run_onnxruntime(path, graph, records)
    for record, ort_out in zip(records, theirs, strict=True):
        for got, ref in zip(run_graph(graph, record), ort_out, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    return graph, before


# --- constant folding --------------------------------------------------------------------------------
def test_constant_folding_evaluates_shape_arithmetic(tmp_path):
    b = OnnxBuilder(opset=18)
    x = b.input([1, 2, 3, 4])
    shape = b.node("Shape", [x])
    dims = b.node("Gather", [shape, b.const(np.array([0, 1], np.int64))], axis=0)
    prod = b.node("Mul", [b.node("Gather", [shape, b.const(np.array(2, np.int64))], axis=0),
                          b.node("Gather", [shape, b.const(np.array(3, np.int64))], axis=0)])
    prod = b.node("Unsqueeze", [prod, b.const(np.array([0], np.int64))])
    target = b.node("Concat", [dims, prod], axis=0)
    y = b.node("Reshape", [x, b.node("Cast", [target], to=onnx.TensorProto.INT64)])
    path = b.save(tmp_path / "shape.onnx", [b.node("Relu", [y])])
    graph, before = apply(path, fold_constants)
    assert {"GATHER", "MUL", "CONCATENATION"} <= set(before)
    assert ops(graph) == ["RESHAPE", "RELU"]


def test_constant_folding_respects_the_size_limit(tmp_path):
    b = OnnxBuilder()
    x = b.input([128, 256])
    big = b.node("Add", [b.const(np.ones((128, 1), np.float32)), b.const(np.ones((1, 256), np.float32))])
    small = b.node("Mul", [b.const(np.full((4,), 2, np.float32)), b.const(np.array(3, np.float32))])
    path = b.save(tmp_path / "limit.onnx", [b.node("Mul", [x, big]), b.node("Relu", [small])])
    graph = load_model(path)
    result = fold_constants(graph)
    verify(graph)
    # 128 KiB computed from 1.5 KiB of inputs is over the limit; the 16-byte product is folded
    # (the RELU of it is a graph output, which stays computed)
    assert result.removed_ops == 1 and ops(graph) == ["ADD", "MUL", "RELU"]
    assert fold_constants(graph, max_bytes=1 << 20).removed_ops == 1
    assert ops(graph) == ["MUL", "RELU"]


# --- simplify ----------------------------------------------------------------------------------------
def test_simplify_removes_neutral_and_identity_nodes(tmp_path):
    b = OnnxBuilder()
    x = b.input([1, 3, 4])
    y = b.node("Identity", [x])
    y = b.node("Mul", [y, b.const(np.ones((3, 1), np.float32))])
    y = b.node("Add", [b.const(np.zeros((4,), np.float32)), y])
    y = b.node("Sub", [y, b.const(np.array(0, np.float32))])
    y = b.node("Div", [y, b.const(np.array(1, np.float32))])
    y = b.node("Dropout", [b.node("Tanh", [y])])
    kept = b.node("Sub", [b.const(np.array(0, np.float32)), y])  # 0 - y is not y
    broadcast = b.node("Add", [b.node("Relu", [x]), b.const(np.zeros((2, 1, 1), np.float32))])  # grows the shape
    path = b.save(tmp_path / "neutral.onnx", [kept, broadcast])
    graph, before = apply(path, simplify)
    assert before.count("IDENTITY") == 2
    assert ops(graph) == ["TANH", "SUB", "RELU", "ADD"]


def test_simplify_merges_reshapes_and_transposes(tmp_path):
    b = OnnxBuilder()
    x = b.input([1, 4, 3, 2])
    y = b.node("Transpose", [x], perm=[0, 2, 3, 1])
    y = b.node("Transpose", [y], perm=[0, 3, 1, 2])  # inverse: cancelled
    y = b.node("Transpose", [y], perm=[0, 2, 1, 3])
    y = b.node("Transpose", [y], perm=[0, 1, 3, 2])  # composed into one
    y = b.node("Reshape", [y, b.const(np.array([1, 24], np.int64))])
    y = b.node("Unsqueeze", [y, b.const(np.array([0], np.int64))])
    y = b.node("Squeeze", [y, b.const(np.array([0], np.int64))])
    y = b.node("Reshape", [y, b.const(np.array([1, 6, 4], np.int64))])
    z = b.node("Transpose", [b.node("Relu", [b.input([1, 5, 1, 1])])], perm=[0, 2, 3, 1])  # unit dims only
    path = b.save(tmp_path / "chains.onnx", [b.node("Sigmoid", [y]), z])
    graph, _ = apply(path, simplify)
    assert sorted(ops(graph)) == ["LOGISTIC", "RELU", "RESHAPE", "RESHAPE", "TRANSPOSE"]


def test_simplify_turns_clamps_into_activations(tmp_path):
    b = OnnxBuilder(opset=14)
    x = b.input([1, 3, 4, 4])
    relu = b.node("Max", [x, b.const(np.array(0, np.float32))])
    relu6 = b.node("Min", [b.node("Relu", [x]), b.const(np.array(6, np.float32))])
    n1 = b.node("Min", [b.node("Max", [x, b.const(np.array(-1, np.float32))]), b.const(np.array(1, np.float32))])
    hs = b.node("Mul", [x, b.node("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)])
    path = b.save(tmp_path / "clamps.onnx", [relu, relu6, n1, hs])
    graph, _ = apply(path, simplify)
    assert sorted(ops(graph)) == sorted(["RELU", "RELU6", "RELU_N1_TO_1", "HARD_SWISH"])


# --- layout --------------------------------------------------------------------------------------------
def test_layout_cancels_the_transposes_of_a_conv_chain(tmp_path):
    b = OnnxBuilder(opset=18)
    x = b.input([1, 3, 8, 8])
    c1 = b.node("Conv", [x, b.weights((4, 3, 3, 3))], pads=[1, 1, 1, 1])
    r = b.node("LeakyRelu", [c1], alpha=0.1)
    c2 = b.node("Conv", [r, b.weights((4, 4, 1, 1))])
    s = b.node("Add", [b.node("Mul", [c2, b.weights((4, 1, 1))]), r])  # residual + per-channel constant
    cat = b.node("Concat", [s, b.node("Sigmoid", [c1])], axis=1)
    pad = b.node("Pad", [cat, b.const(np.array([0, 0, 1, 0, 0, 0, 0, 1], np.int64))])
    sl = b.node("Slice", [pad, b.const(np.array([1], np.int64)), b.const(np.array([7], np.int64)),
                          b.const(np.array([1], np.int64))])
    m = b.node("ReduceMean", [sl, b.const(np.array([1], np.int64))], keepdims=1)
    path = b.save(tmp_path / "chain.onnx", [m])
    graph, before = apply(path, simplify, sink_transposes, simplify, nhwc_io=True)
    assert before.count("TRANSPOSE") >= 6
    assert "TRANSPOSE" not in ops(graph)
    # in the model's own NCHW layout: one transpose at the input; the one-channel output's transpose
    # moves a unit dimension only, so it is a reshape
    graph, _ = apply(path, simplify, sink_transposes, simplify)
    assert ops(graph).count("TRANSPOSE") == 1 and ops(graph)[0] == "TRANSPOSE" and ops(graph)[-1] == "RESHAPE"


def test_layout_permutes_dense_weights_instead_of_transposing(tmp_path):
    b = OnnxBuilder()
    x = b.input([1, 3, 6, 6])
    c = b.node("Conv", [x, b.weights((5, 3, 3, 3))])
    y = b.node("Gemm", [b.node("Flatten", [b.node("Relu", [c])]), b.weights((5 * 4 * 4, 7))])
    path = b.save(tmp_path / "flatten.onnx", [y])
    graph, _ = apply(path, simplify, sink_transposes, simplify, nhwc_io=True)
    assert ops(graph) == ["CONV_2D", "RELU", "RESHAPE", "FULLY_CONNECTED"]


def test_layout_keeps_a_softmax_over_channels_correct(tmp_path):
    b = OnnxBuilder()
    x = b.input([1, 3, 4, 4])
    c = b.node("Conv", [x, b.weights((5, 3, 1, 1))])
    path = b.save(tmp_path / "softmax.onnx", [b.node("Softmax", [c], axis=1)])
    graph, _ = apply(path, simplify, sink_transposes, simplify, nhwc_io=True)
    assert ops(graph) == ["CONV_2D", "SOFTMAX"]  # channels are the last axis in NHWC


# --- batch-norm folding ----------------------------------------------------------------------------------
def _bn(b: OnnxBuilder, x: str, channels: int) -> str:
    return b.node("BatchNormalization", [x, b.weights((channels,)), b.weights((channels,)), b.weights((channels,)),
                                         b.const(np.linspace(0.3, 2.0, channels).astype(np.float32))])


@pytest.mark.parametrize("kind", ["conv", "depthwise", "conv1d", "gemm"])
def test_batchnorm_folds_into_the_layer_before(tmp_path, kind):
    b = OnnxBuilder()
    if kind == "conv":
        y = b.node("Conv", [b.input([1, 3, 6, 6]), b.weights((4, 3, 3, 3)), b.weights((4,))])
        channels = 4
    elif kind == "depthwise":
        y = b.node("Conv", [b.input([1, 4, 6, 6]), b.weights((8, 1, 3, 3))], group=4)
        channels = 8
    elif kind == "conv1d":
        y = b.node("Conv", [b.input([1, 3, 16]), b.weights((4, 3, 5))], pads=[2, 2])
        channels = 4
    else:
        y = b.node("Gemm", [b.input([2, 6]), b.weights((5, 6))], transB=1)
        channels = 5
    path = b.save(tmp_path / f"{kind}.onnx", [b.node("Relu", [_bn(b, y, channels)])])
    graph, before = apply(path, simplify, sink_transposes, simplify, fold_affine, fuse_activations, simplify,
                          nhwc_io=True)
    assert "MUL" in before and "ADD" in before
    assert "MUL" not in ops(graph) and "ADD" not in ops(graph) and "RELU" not in ops(graph), ops(graph)
    assert_matches_ort(path, tmp_path, nhwc_io=True)


def test_affine_fold_needs_a_sole_reader_and_no_activation(tmp_path):
    b = OnnxBuilder()
    c = b.node("Conv", [b.input([1, 3, 5, 5]), b.weights((4, 3, 3, 3))])
    scaled = b.node("Div", [c, b.const(np.array([2, 4, 8, 0.5], np.float32).reshape(4, 1, 1))])
    shifted = b.node("Sub", [b.node("Relu", [scaled]), b.weights((4, 1, 1))])  # after RELU: not folded
    other = b.node("Mul", [c, b.const(np.array(3, np.float32))])  # c has two readers: not folded
    path = b.save(tmp_path / "affine.onnx", [shifted, other])
    graph, _ = apply(path, simplify, sink_transposes, simplify, fold_affine, nhwc_io=True)
    assert ops(graph).count("DIV") == 1 and ops(graph).count("SUB") == 1 and ops(graph).count("MUL") == 1


# --- fusion --------------------------------------------------------------------------------------------
def test_activations_fuse_into_their_producers(tmp_path):
    b = OnnxBuilder()
    x = b.input([1, 4, 6, 6])
    a = b.node("Relu", [b.node("Conv", [x, b.weights((4, 4, 3, 3))], pads=[1, 1, 1, 1])])
    s = b.node("Clip", [b.node("Add", [a, x]), b.const(np.array(0, np.float32)), b.const(np.array(6, np.float32))])
    s = b.node("Relu", [s])  # RELU after RELU6 is RELU6
    m = b.node("Mul", [s, x])
    shared = b.node("Relu", [m])
    two = b.node("Sigmoid", [m])  # m has two readers: its RELU stays a node
    path = b.save(tmp_path / "fuse.onnx", [shared, two])
    graph, _ = apply(path, simplify, sink_transposes, simplify, fuse_activations, nhwc_io=True)
    by_op = {n.op: n for n in graph.nodes}
    assert by_op["CONV_2D"].attrs["fused_activation_function"] == "RELU"
    assert by_op["ADD"].attrs["fused_activation_function"] == "RELU6"
    assert by_op["MUL"].attrs["fused_activation_function"] == "NONE" and "RELU" in by_op
    assert "RELU6" not in ops(graph)


def test_global_pool_and_flatten_become_one_mean(tmp_path):
    b = OnnxBuilder()
    x = b.input([1, 6, 5, 5])
    y = b.node("Flatten", [b.node("GlobalAveragePool", [b.node("Relu", [x])])])
    path = b.save(tmp_path / "gap.onnx", [y])
    graph, _ = apply(path, simplify, sink_transposes, simplify, fuse_reduce_reshape, nhwc_io=True)
    assert ops(graph) == ["RELU", "MEAN"]
    assert graph.nodes[1].attrs["keep_dims"] is False and graph.nodes[1].outputs[0].type.shape == (1, 6)


# --- QDQ -----------------------------------------------------------------------------------------------
def _qdq(b: OnnxBuilder, x: str, scale: float, zp: int) -> str:
    s, z = b.const(np.array(scale, np.float32)), b.const(np.array(zp, np.int8))
    return b.node("DequantizeLinear", [b.node("QuantizeLinear", [x, s, z]), s, z])


def test_qdq_pairs_and_integer_rewrite(tmp_path):
    b = OnnxBuilder()
    x = _qdq(b, b.input([1, 4, 6, 6]), 0.05, 3)
    w = b.const(b.rng.integers(-100, 100, (4, 4, 3, 3)).astype(np.int8))
    w_scale = b.const(np.linspace(0.002, 0.004, 4).astype(np.float32))
    w = b.node("DequantizeLinear", [w, w_scale, b.const(np.zeros(4, np.int8))], axis=0)
    c = b.node("Conv", [x, w], pads=[1, 1, 1, 1])
    y = _qdq(b, c, 0.08, -2)
    y = _qdq(b, y, 0.08, -2)  # a redundant Q/DQ pair
    y = _qdq(b, b.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2]), 0.1, 0)  # requantized
    path = b.save(tmp_path / "qdq.onnx", [y])
    graph = load_model(path, nhwc_io=True)
    optimize(graph, 2, check=True)
    assert ops(graph) == ["QUANTIZE", "CONV_2D", "MAX_POOL_2D", "QUANTIZE", "DEQUANTIZE"]
    assert graph.nodes[1].outputs[0].type.dtype == "int8"
    assert not rewrite_qdq(graph).modified
    result = compile_model(path, CompileOptions(nhwc_io=True))
    records = random_records(result.graph.inputs, 4, seed=1)
    ours = [run_graph(result.graph, r)[0] for r in records]
    theirs = run_onnxruntime(path, result.graph, records, optimized=False)
    for got, ref in zip(ours, theirs, strict=True):
        assert np.abs(got - ref[0]).max() <= 0.1 * 1.001


# --- the pipeline --------------------------------------------------------------------------------------
def test_pipeline_is_idempotent_and_reports(tmp_path):
    from tests.test_onnx_models import _small_cnn

    path = _small_cnn(tmp_path / "cnn.onnx")
    for level in PIPELINES:
        graph = load_model(path)
        first = optimize(graph, level, check=True)
        second = optimize(graph, level, check=True)
        assert not any(r.modified for r in second.per_pass.values()), level
        assert second.iterations == 1
        text = format_report(first)
        assert f"-O{level}" in text
        assert report_dict(first)["ops_after"] == len(graph.nodes)
    assert "fold-batchnorm" in text and "operator(s) removed or fused" in text


def test_tf2onnx_style_nhwc_model_has_no_transposes_left(tmp_path):
    """tf2onnx keeps TensorFlow's NHWC graph inputs and wraps each conv in Transposes."""
    b = OnnxBuilder(opset=13)
    x = b.input([1, 8, 8, 3])
    y = b.node("Transpose", [x], perm=[0, 3, 1, 2])
    y = b.node("Conv", [y, b.weights((4, 3, 3, 3)), b.weights((4,))], pads=[1, 1, 1, 1])
    y = b.node("Relu", [y])
    y = b.node("Transpose", [y], perm=[0, 2, 3, 1])
    y = b.node("Transpose", [y], perm=[0, 3, 1, 2])
    y = b.node("Conv", [y, b.weights((4, 1, 3, 3))], group=4, pads=[1, 1, 1, 1])
    y = b.node("Transpose", [y], perm=[0, 2, 3, 1])
    y = b.node("Reshape", [y, b.const(np.array([1, -1], np.int64))])
    path = b.save(tmp_path / "tf2onnx.onnx", [b.node("MatMul", [y, b.weights((256, 3))])])
    graph = load_model(path)
    optimize(graph, 2, check=True)
    assert ops(graph) == ["CONV_2D", "DEPTHWISE_CONV_2D", "RESHAPE", "FULLY_CONNECTED"]
    assert_matches_ort(path, tmp_path)
