"""Horizontal fusion: parallel layers on one input, concatenated along channels, become one layer.

Structure after -O2 and equality with the reference runtimes: onnxruntime for a float ONNX fire
module, TFLite Micro bit for bit for an int8 TFLite one (per-tensor weights of different scales
become per-channel), and the cases that must stay apart (other kernel sizes, other activations).
"""

from __future__ import annotations

import numpy as np
import pytest

from nn2c.api import load_model
from nn2c.passes.pipeline import optimize
from tests.oracle_check import assert_matches_tflm
from tests.test_onnx_models import OnnxBuilder, assert_matches_ort, ops_after
from tests.tflite_builder import ModelBuilder

pytest.importorskip("onnx")


def _fire(tmp_path, kernels=(3, 3), pads=(1, 1), axis=1):
    b = OnnxBuilder(seed=4)
    x = b.input([1, 6, 8, 8])
    squeeze = b.node("Relu", [b.node("Conv", [x, b.weights((4, 6, 1, 1)), b.weights((4,))])])
    branches = [b.node("Conv", [squeeze, b.weights((c, 4, k, k)), b.weights((c,))], pads=[p] * 4)
                for c, k, p in zip((5, 7), kernels, pads, strict=True)]
    y = b.node("Relu", [b.node("Concat", branches, axis=axis)])
    return b.save(tmp_path / "fire.onnx", [y])


def test_fire_module_branches_become_one_convolution(tmp_path):
    path = _fire(tmp_path)
    assert ops_after(path, opt_level=0).count("CONV_2D") == 3
    ops = ops_after(path, nhwc_io=True)
    assert ops == ["CONV_2D", "CONV_2D"], ops  # squeeze, and both expand branches with the RELU fused
    assert_matches_ort(path, tmp_path, nhwc_io=True)
    assert_matches_ort(path, tmp_path)


def test_different_kernels_stay_apart(tmp_path):
    path = _fire(tmp_path, kernels=(1, 3), pads=(0, 1))
    assert ops_after(path, nhwc_io=True).count("CONV_2D") == 3
    assert_matches_ort(path, tmp_path, nhwc_io=True)


def _int8_branches(scales: tuple[float, float], activations: tuple[str, str] = ("RELU", "RELU")) -> bytes:
    rng = np.random.default_rng(5)
    b = ModelBuilder()
    x = b.tensor("int8", (1, 6, 6, 4), scale=0.05, zero_point=-3)
    outs = []
    for w_scale, channels, activation in zip(scales, (3, 5), activations, strict=True):
        w = b.tensor("int8", (channels, 3, 3, 4), scale=w_scale, zero_point=0,
                     data=rng.integers(-127, 128, (channels, 3, 3, 4)))
        bias = b.tensor("int32", (channels,), scale=0.05 * w_scale, zero_point=0,
                        data=rng.integers(-500, 500, channels))
        # TFLite Micro's int8 CONCATENATION copies bytes: its inputs carry the output's quantization
        y = b.tensor("int8", (1, 6, 6, channels), scale=0.2, zero_point=-5)
        b.op("CONV_2D", [x, w, bias], [y], {"padding": "SAME", "stride_h": 1, "stride_w": 1,
                                             "fused_activation_function": activation})
        outs.append(y)
    cat = b.tensor("int8", (1, 6, 6, 8), scale=0.2, zero_point=-5)
    b.op("CONCATENATION", outs, [cat], {"axis": 3, "fused_activation_function": "NONE"})
    return b.build([x], [cat])


def _ops(model: bytes, tmp_path) -> list[str]:
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    graph = load_model(path)
    optimize(graph, 2, check=True)
    second = optimize(graph, 2, check=True)
    assert not any(r.modified for r in second.per_pass.values())  # idempotent
    return [n.op for n in graph.nodes]


def test_int8_branches_fuse_bit_exact(tmp_path):
    model = _int8_branches((0.01, 0.03))
    assert _ops(model, tmp_path) == ["CONV_2D"]
    assert_matches_tflm(model, tmp_path)


def test_int8_branches_with_different_activations_stay_apart(tmp_path):
    model = _int8_branches((0.01, 0.03), ("RELU", "NONE"))
    assert _ops(model, tmp_path) == ["CONV_2D", "CONV_2D", "CONCATENATION"]
    assert_matches_tflm(model, tmp_path)
