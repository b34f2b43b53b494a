"""Structured pruning (passes/prune_channels.py): channels of all-zero filters removed, bit-exact with TFLM."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model, load_model
from nn2c.errors import InvalidModelError
from nn2c.ir import Graph
from nn2c.ir.cost import macs
from nn2c.passes.pipeline import optimize
from nn2c.passes.prune_channels import prune_constant_channels
from tests.conftest import model_path
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder

IN_SCALE, IN_ZP = 0.05, -3


class _Net:
    """A small int8 NHWC network under construction: each layer adds its weights and output tensor."""

    def __init__(self, shape: tuple[int, ...], seed: int = 7) -> None:
        self.b = ModelBuilder()
        self.rng = np.random.default_rng(seed)
        self.x = self.b.tensor("int8", shape, scale=IN_SCALE, zero_point=IN_ZP)
        self.shapes = {self.x: shape}
        self.scales = {self.x: IN_SCALE}

    def _out(self, shape: tuple[int, ...], scale: float = 0.08, zero_point: int = -20) -> int:
        index = self.b.tensor("int8", shape, scale=scale, zero_point=zero_point)
        self.shapes[index], self.scales[index] = shape, scale
        return index

    def _filter(self, shape: tuple[int, ...], axis: int, zero: list[int]) -> tuple[int, list[float]]:
        channels = shape[axis]
        data = self.rng.integers(-60, 61, shape)
        index: list = [slice(None)] * len(shape)
        index[axis] = zero
        data[tuple(index)] = 0
        w_scales = [float(s) for s in self.rng.uniform(0.01, 0.03, channels)]
        w = self.b.tensor("int8", shape, scale=w_scales, zero_point=[0] * channels, axis=axis, data=data)
        return w, w_scales

    def conv(self, x: int, out_c: int, k: int, padding: str, zero: list[int], depthwise: bool = False,
             activation: str = "RELU6", zero_bias: int | None = None) -> int:
        """A convolution whose filters `zero` are all zero (with bias `zero_bias` if given)."""
        n, h, w, c = self.shapes[x]
        if depthwise:
            out_c = c
            weights, w_scales = self._filter((1, k, k, c), 3, zero)
        else:
            weights, w_scales = self._filter((out_c, k, k, c), 0, zero)
        bias_scales = [self.scales[x] * s for s in w_scales]
        bias_data = self.rng.integers(-3000, 3000, out_c)
        if zero_bias is not None:
            bias_data[zero] = zero_bias
        bias = self.b.tensor("int32", (out_c,), scale=bias_scales, zero_point=[0] * out_c, data=bias_data)
        oh, ow = (h, w) if padding == "SAME" else (h - k + 1, w - k + 1)
        y = self._out((n, oh, ow, out_c))
        options = {"padding": padding, "stride_h": 1, "stride_w": 1, "fused_activation_function": activation}
        if depthwise:
            options["depth_multiplier"] = 1
        self.b.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, weights, bias], [y], options)
        return y

    def head(self, x: int, classes: int) -> int:
        n, h, w, c = self.shapes[x]
        pooled = self._out((n, 1, 1, c), self.scales[x], -20)
        self.b.op("AVERAGE_POOL_2D", [x], [pooled], {"padding": "VALID", "stride_h": 1, "stride_w": 1,
                                                    "filter_height": h, "filter_width": w})
        shape = self.b.tensor("int32", (2,), data=np.array([n, c]))
        flat = self._out((n, c), self.scales[x], -20)
        self.b.op("RESHAPE", [pooled, shape], [flat])
        data = self.rng.integers(-90, 91, (classes, c))
        w = self.b.tensor("int8", (classes, c), scale=0.02, zero_point=0, data=data)
        bias = self.b.tensor("int32", (classes,), scale=self.scales[x] * 0.02, zero_point=0,
                             data=self.rng.integers(-2000, 2000, classes))
        y = self._out((n, classes), 0.1, 5)
        self.b.op("FULLY_CONNECTED", [flat, w, bias], [y], {"fused_activation_function": "NONE"})
        return y

    def build(self, outputs: list[int]) -> bytes:
        return self.b.build([self.x], outputs)


def _total_macs(graph: Graph) -> int:
    return sum(macs(n) for n in graph.nodes)


def _cnn() -> bytes:
    """pointwise (zero filters) -> depthwise VALID -> pointwise -> depthwise SAME, concatenated with a
    second pointwise branch -> average pool -> reshape -> fully connected."""
    net = _Net((1, 8, 8, 4))
    t1 = net.conv(net.x, 8, 1, "SAME", zero=[1, 4, 6])  # constants, through a VALID depthwise
    t2 = net.conv(t1, 0, 3, "VALID", zero=[2], depthwise=True)  # channel 2 of t1 becomes unread
    t3 = net.conv(t2, 6, 1, "SAME", zero=[3, 5])
    t4 = net.conv(t3, 0, 3, "SAME", zero=[5], depthwise=True)  # t3's constant channel 3 meets padding: dense
    t5 = net.conv(t2, 4, 1, "VALID", zero=[0, 2], activation="RELU")
    cat = net._out((1, 6, 6, 10))
    net.b.op("CONCATENATION", [t4, t5], [cat], {"axis": 3})
    return net.build([net.head(cat, 5)])


def test_cnn_with_zero_filters_is_bit_exact_and_does_fewer_macs(tmp_path):
    path = tmp_path / "cnn.tflite"
    path.write_bytes(_cnn())
    dense = load_model(path)
    before = _total_macs(dense)
    graph = load_model(path)
    report = optimize(graph, 2, check=True)
    result = report.per_pass["prune-channels"]
    assert result.modified and result.bytes_saved > 0
    shapes = [n.outputs[0].type.shape[-1] for n in graph.nodes]
    # t1 loses 1, 2, 4, 6 (constant or unread); t2 the same; t3 loses 5 (unread) but keeps its constant
    # channel 3 (SAME depthwise: padding); t5 loses 0 and 2 (constants folded into the FC bias).
    assert shapes[:5] == [4, 4, 5, 5, 2], shapes
    assert graph.outputs[0].type.shape == dense.outputs[0].type.shape
    assert _total_macs(graph) < 0.7 * before
    assert result.notes[0].startswith("removed 12 constant or unread channel(s)")
    assert_matches_tflm(path, tmp_path, records=6)


def test_constant_channel_into_add_or_padded_conv_stays_dense(tmp_path):
    net = _Net((1, 6, 6, 3), seed=3)
    t1 = net.conv(net.x, 4, 1, "SAME", zero=[0, 2], activation="NONE", zero_bias=1500)  # k != zp
    t2 = net.conv(t1, 4, 3, "SAME", zero=[])  # a kxk SAME convolution reads padding (zp, not k)
    t3 = net.conv(net.x, 4, 1, "SAME", zero=[1], zero_bias=1500)
    summed = net._out((1, 6, 6, 4))
    net.b.op("ADD", [t2, t3], [summed], {"fused_activation_function": "NONE"})  # ADD requantises
    path = tmp_path / "dense.tflite"
    path.write_bytes(net.build([summed]))
    graph = load_model(path)
    assert not prune_constant_channels(graph).modified
    assert_matches_tflm(path, tmp_path, records=3)


def test_relu_channel_at_the_zero_point_goes_through_padding(tmp_path):
    """A zero filter with a negative bias under RELU outputs the zero point, which is what a padded tap
    reads: a padded 3x3 convolution absorbs it (it contributes w * 0 everywhere)."""
    net = _Net((1, 6, 6, 3), seed=5)
    t1 = net.conv(net.x, 4, 1, "SAME", zero=[1, 3], activation="RELU", zero_bias=-1500)
    t2 = net.conv(t1, 5, 3, "SAME", zero=[])
    path = tmp_path / "relu_zp.tflite"
    path.write_bytes(net.build([t2]))
    graph = load_model(path)
    assert prune_constant_channels(graph).modified
    assert [n.inputs[1].type.shape for n in graph.nodes if n.inputs[1] is not None] == [(2, 1, 1, 3), (5, 3, 3, 2)]
    assert_matches_tflm(path, tmp_path, records=3)


def test_constants_through_max_pool_into_a_convolution_without_bias(tmp_path):
    """MAX_POOL_2D of a constant is the constant; the reading convolution has no bias, so the pass
    gives it one that holds the folded constants."""
    net = _Net((1, 6, 6, 3), seed=9)
    t1 = net.conv(net.x, 4, 1, "SAME", zero=[0, 2], zero_bias=1500)
    pooled = net._out((1, 3, 3, 4), 0.08, -20)  # the same quantization as t1
    net.b.op("MAX_POOL_2D", [t1], [pooled], {"padding": "VALID", "stride_h": 2, "stride_w": 2,
                                             "filter_height": 2, "filter_width": 2})
    w = net.b.tensor("int8", (5, 1, 1, 4), scale=[0.02] * 5, zero_point=[0] * 5, axis=0,
                     data=net.rng.integers(-100, 101, (5, 1, 1, 4)))
    y = net._out((1, 3, 3, 5), 0.1, 4)
    net.b.op("CONV_2D", [pooled, w, -1], [y], {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    path = tmp_path / "maxpool_nobias.tflite"
    path.write_bytes(net.build([y]))
    graph = load_model(path)
    assert prune_constant_channels(graph).modified
    conv = graph.nodes[-1]
    assert conv.inputs[1] is not None and conv.inputs[1].type.shape == (5, 1, 1, 2)
    assert len(conv.inputs) == 3 and conv.inputs[2] is not None and np.asarray(conv.inputs[2].data).any()
    assert_matches_tflm(path, tmp_path, records=4)


def test_float_constant_channel_is_not_folded(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 4, 4, 3))
    w = np.ones((4, 1, 1, 3), dtype=np.float32)
    w[1] = 0.0
    weights = b.tensor("float32", (4, 1, 1, 3), data=w)
    bias = b.tensor("float32", (4,), data=np.arange(4, dtype=np.float32))
    y = b.tensor("float32", (1, 4, 4, 4))
    b.op("CONV_2D", [x, weights, bias], [y], {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    fc_w = b.tensor("float32", (2, 4), data=np.ones((2, 4)))
    z = b.tensor("float32", (16, 2))
    b.op("FULLY_CONNECTED", [y, fc_w, -1], [z])
    path = tmp_path / "float.tflite"
    path.write_bytes(b.build([x], [z]))
    graph = load_model(path)
    assert not prune_constant_channels(graph).modified  # folding would reorder float additions


def test_float_unread_channels_are_removed(tmp_path):
    """Float: a zero pointwise filter whose channel the depthwise passes on to a convolution with zero
    weights for it, and a zero depthwise filter likewise unread: both channels go, nothing is folded."""
    rng = np.random.default_rng(11)
    b = ModelBuilder()
    x = b.tensor("float32", (1, 6, 6, 3))
    wa = rng.standard_normal((4, 1, 1, 3)).astype(np.float32)
    wa[1] = 0.0
    a = b.tensor("float32", (1, 6, 6, 4))
    b.op("CONV_2D", [x, b.tensor("float32", wa.shape, data=wa), b.tensor("float32", (4,), data=rng.standard_normal(4))],
         [a], {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"})
    wd = rng.standard_normal((1, 3, 3, 4)).astype(np.float32)
    wd[..., 2] = 0.0
    d = b.tensor("float32", (1, 6, 6, 4))
    b.op("DEPTHWISE_CONV_2D", [a, b.tensor("float32", wd.shape, data=wd),
                               b.tensor("float32", (4,), data=rng.standard_normal(4))],
         [d], {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1})
    wb = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    wb[..., [1, 2]] = 0.0
    out = b.tensor("float32", (1, 6, 6, 3))
    b.op("CONV_2D", [d, b.tensor("float32", wb.shape, data=wb), -1], [out],
         {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    path = tmp_path / "float_unread.tflite"
    path.write_bytes(b.build([x], [out]))
    graph = load_model(path)
    assert prune_constant_channels(graph).modified
    assert [n.outputs[0].type.shape[-1] for n in graph.nodes] == [2, 2, 3]
    last_weights = graph.nodes[2].inputs[1]
    assert last_weights is not None and last_weights.type.shape == (3, 3, 3, 2)
    assert_matches_tflm(path, tmp_path, records=3, rtol=0.0, atol=0.0)  # the same float operations


def zero_filters_by_l1(source: Path, target: Path, fraction: float = 0.5) -> None:
    """Zero the `fraction` of filters with the smallest L1 norm in every CONV_2D and DEPTHWISE_CONV_2D,
    by patching the weight bytes of the .tflite file in place (each filter buffer is found once)."""
    data = bytearray(source.read_bytes())
    for node in load_model(source).nodes:
        if node.op not in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            continue
        weights = node.inputs[1]
        assert weights is not None
        w = np.asarray(weights.data)
        raw = w.tobytes()
        at = bytes(data).find(raw)
        assert at >= 0 and bytes(data).find(raw, at + 1) < 0, f"{node.where()}: filter bytes not unique"
        axis = 3 if node.op == "DEPTHWISE_CONV_2D" else 0
        l1 = np.abs(w.astype(np.int64)).sum(axis=tuple(a for a in range(4) if a != axis))
        index: list = [slice(None)] * 4
        index[axis] = np.argsort(l1, kind="stable")[: int(len(l1) * fraction)]
        pruned = w.copy()
        pruned[tuple(index)] = 0
        data[at:at + len(raw)] = pruned.tobytes()
    target.write_bytes(bytes(data))


def _macs_and_arena(path: Path) -> tuple[int, int, int]:
    """MACs as imported, MACs after -O2 (with prune-channels), arena of the -O2 compile."""
    imported = _total_macs(load_model(path))
    result = compile_model(path, CompileOptions(opt_level=2))
    return imported, _total_macs(result.graph), result.arena_bytes


def test_kws_with_half_its_filters_zeroed(tmp_path):
    dense_path = model_path("mlcommons_tiny/kws_ref_model.tflite")
    pruned_path = tmp_path / "kws50.tflite"
    zero_filters_by_l1(dense_path, pruned_path)
    dense_macs, dense_compiled_macs, dense_arena = _macs_and_arena(dense_path)
    assert dense_compiled_macs == dense_macs  # the original has no zero filter: its compile is dense
    _, pruned_macs, pruned_arena = _macs_and_arena(pruned_path)
    assert pruned_macs <= 0.55 * dense_macs, (pruned_macs, dense_macs)
    assert pruned_arena <= 0.6 * dense_arena, (pruned_arena, dense_arena)
    assert_matches_tflm(pruned_path, tmp_path, records=4)


def test_mobilenet_vww_with_half_its_filters_zeroed(tmp_path):
    dense_path = model_path("mlcommons_tiny/vww_96_int8.tflite")
    pruned_path = tmp_path / "vww50.tflite"
    zero_filters_by_l1(dense_path, pruned_path)
    dense_macs, _, dense_arena = _macs_and_arena(dense_path)
    _, pruned_macs, pruned_arena = _macs_and_arena(pruned_path)
    assert pruned_macs <= 0.55 * dense_macs, (pruned_macs, dense_macs)
    # the 96x96x3 input (27,648 bytes) is most of the arena and cannot shrink
    assert pruned_arena <= dense_arena
    assert_matches_tflm(pruned_path, tmp_path, records=2)


def test_vww_as_published_has_dead_channels_and_stays_bit_exact(tmp_path):
    """The MLPerf Tiny VWW model already has hundreds of all-zero pointwise filters (whose channels the
    next layer does not read): -O2 removes them."""
    path = model_path("mlcommons_tiny/vww_96_int8.tflite")
    imported, compiled, _ = _macs_and_arena(path)
    assert compiled < 0.6 * imported
    assert_matches_tflm(path, tmp_path, records=2)


def _pool_without_input() -> bytes:
    b = ModelBuilder()
    x = b.tensor("int8", (1, 4, 4, 2), scale=0.1, zero_point=0)
    w = b.tensor("int8", (2, 1, 1, 2), scale=[0.1, 0.1], zero_point=[0, 0], axis=0,
                 data=np.array([[[[0, 0]]], [[[1, 2]]]]))  # one all-zero filter: prune-channels looks further
    h = b.tensor("int8", (1, 4, 4, 2), scale=0.1, zero_point=0)
    b.op("CONV_2D", [x, w, -1], [h], {"padding": "VALID", "stride_h": 1, "stride_w": 1})
    y = b.tensor("int8", (1, 1, 1, 2), scale=0.1, zero_point=0)
    b.op("AVERAGE_POOL_2D", [], [y], {"padding": "VALID", "stride_h": 1, "stride_w": 1, "filter_height": 4,
                                      "filter_width": 4})
    return b.build([x], [y, h])


def _fc_of_a_scalar() -> bytes:
    b = ModelBuilder()
    x = b.tensor("int8", (), scale=0.1, zero_point=0)
    w = b.tensor("int8", (2, 3), scale=0.1, zero_point=0, data=np.zeros((2, 3)))
    y = b.tensor("int8", (1, 2), scale=0.1, zero_point=0)
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    return b.build([x], [y])


@pytest.mark.parametrize("build", [_pool_without_input, _fc_of_a_scalar])
def test_malformed_operators_get_one_error_line_past_prune_channels(build, tmp_path):
    """Two mutants the fuzzer found (a pool with no input, a FULLY_CONNECTED of a 0-d tensor) once raised
    IndexError inside prune-channels; the operator's own check now says what is wrong."""
    path = tmp_path / "bad.tflite"
    path.write_bytes(build())
    with pytest.raises(InvalidModelError) as error:
        compile_model(path)
    assert "\n" not in str(error.value) and "op #" in str(error.value)
