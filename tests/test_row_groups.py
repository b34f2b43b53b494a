"""Row groups (memory/fusion.py, memory/rows.py, codegen/stream.py): several layers run one output
row at a time; the outputs stay bit-exact with TFLite Micro and the arena drops below the
layer-by-layer floor.

Converter-shaped int8 models are built here (MobileNetV2 inverted bottlenecks with SAME / VALID
padding, stride-2 depthwise, 3x3 / 5x5 / 7x7 kernels on small maps, residual ADDs; ResNet basic
blocks with a strided 1x1 shortcut; pooling), compiled with --schedule min-ram and compared with
TFLM on seeded inputs.
"""

from __future__ import annotations

import shutil
from math import sqrt

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.codegen.ops.conv import compute_out_size
from nn2c.memory.fusion import AUTO_OVERHEAD
from nn2c.memory.rows import Member, RowMap, simulate
from nn2c.verify.compare import verify_model
from tests.conftest import model_path
from tests.tflite_builder import ModelBuilder


class Net:
    """A tiny int8 network builder: each layer returns its output tensor (id, shape, scale)."""

    def __init__(self, seed: int) -> None:
        self.b = ModelBuilder()
        self.rng = np.random.default_rng(seed)
        self.zero_point: dict[int, int] = {}

    def input(self, shape: tuple[int, int, int, int]) -> tuple[int, tuple, float]:
        return self.b.tensor("int8", shape, scale=0.05, zero_point=-3), shape, 0.05

    def conv(self, x, out_c: int, k: int = 1, stride: int = 1, padding: str = "SAME", depthwise: bool = False,
             activation: str = "RELU6", name: str | None = None):
        tensor, shape, in_scale = x
        _, h, w, c = shape
        rng = self.rng
        out_c = c if depthwise else out_c
        wshape = (1, k, k, c) if depthwise else (out_c, k, k, c)
        depth = k * k if depthwise else k * k * c
        w_scales = rng.uniform(0.002, 0.02, out_c)
        weights = self.b.tensor("int8", wshape, scale=list(w_scales), zero_point=[0] * out_c,
                                axis=3 if depthwise else 0, data=rng.integers(-127, 128, wshape))
        bias_scales = [float(np.float32(in_scale) * np.float32(s)) for s in w_scales]
        bias = self.b.tensor("int32", (out_c,), scale=bias_scales, zero_point=[0] * out_c,
                             data=rng.integers(-2000, 2000, out_c))
        oh, ow = (compute_out_size(padding, n, k, stride, 1) for n in (h, w))
        out_scale = float(in_scale * np.mean(w_scales) * sqrt(depth) * 73.0 * 74.0 / 40.0)
        out_shape = (1, oh, ow, out_c)
        zp = int(rng.integers(-20, 20))
        y = self.b.tensor("int8", out_shape, scale=out_scale, zero_point=zp, name=name)
        self.zero_point[y] = zp
        options = {"padding": padding, "stride_h": stride, "stride_w": stride, "dilation_hfactor": 1,
                   "dilation_wfactor": 1, "fused_activation_function": activation}
        if depthwise:
            options["depth_multiplier"] = 1
        self.b.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [tensor, weights, bias], [y], options, version=2)
        return y, out_shape, out_scale

    def add(self, a, b):
        scale = max(a[2], b[2]) * 1.5
        y = self.b.tensor("int8", a[1], scale=scale, zero_point=2)
        self.b.op("ADD", [a[0], b[0]], [y], {"fused_activation_function": "NONE"}, version=2)
        return y, a[1], scale

    def pool(self, x, k: int, stride: int, op: str = "MAX_POOL_2D", padding: str = "VALID"):
        tensor, (_, h, w, c), scale = x
        oh, ow = (compute_out_size(padding, n, k, stride, 1) for n in (h, w))
        y = self.b.tensor("int8", (1, oh, ow, c), scale=scale, zero_point=self.zero_point.get(tensor, 2))
        self.b.op(op, [tensor], [y], {"padding": padding, "stride_h": stride, "stride_w": stride,
                                      "filter_height": k, "filter_width": k, "fused_activation_function": "NONE"})
        return y, (1, oh, ow, c), scale

    def inverted_bottleneck(self, x, expand: int, out_c: int, k: int, stride: int, padding: str = "SAME"):
        c = x[1][3]
        h = self.conv(x, c * expand, 1)
        h = self.conv(h, 0, k, stride, padding, depthwise=True)
        h = self.conv(h, out_c, 1, activation="NONE")
        if stride == 1 and out_c == c and h[1] == x[1]:
            h = self.add(h, x)
        return h

    def fully_connected(self, x, units: int):
        """FULLY_CONNECTED over the whole 4-D map (as micro_speech's reads its convolution)."""
        tensor, shape, in_scale = x
        depth = int(np.prod(shape))
        w_scale = 0.004
        weights = self.b.tensor("int8", (units, depth), scale=w_scale, zero_point=0,
                                data=self.rng.integers(-127, 128, (units, depth)))
        bias = self.b.tensor("int32", (units,), scale=float(np.float32(in_scale) * np.float32(w_scale)), zero_point=0,
                             data=self.rng.integers(-3000, 3000, units))
        out_scale = float(in_scale * w_scale * sqrt(depth) * 60.0)
        y = self.b.tensor("int8", (1, units), scale=out_scale, zero_point=-7)
        self.b.op("FULLY_CONNECTED", [tensor, weights, bias], [y], {"fused_activation_function": "NONE"})
        return y, (1, units), out_scale

    def depthwise_multiplier(self, x, multiplier: int, kh: int, kw: int, stride: int, padding: str):
        """A DEPTHWISE_CONV_2D of one input channel and `multiplier` outputs (micro_speech's first layer)."""
        tensor, (_, h, w, _), in_scale = x
        rng = self.rng
        w_scales = rng.uniform(0.002, 0.02, multiplier)
        weights = self.b.tensor("int8", (1, kh, kw, multiplier), scale=list(w_scales), zero_point=[0] * multiplier,
                                axis=3, data=rng.integers(-127, 128, (1, kh, kw, multiplier)))
        bias = self.b.tensor("int32", (multiplier,), scale=[float(np.float32(in_scale) * np.float32(s))
                                                           for s in w_scales],
                             zero_point=[0] * multiplier, data=rng.integers(-2000, 2000, multiplier))
        oh = compute_out_size(padding, h, kh, stride, 1)
        ow = compute_out_size(padding, w, kw, stride, 1)
        out_scale = float(in_scale * np.mean(w_scales) * sqrt(kh * kw) * 30.0)
        y = self.b.tensor("int8", (1, oh, ow, multiplier), scale=out_scale, zero_point=-128)
        self.b.op("DEPTHWISE_CONV_2D", [tensor, weights, bias], [y],
                  {"padding": padding, "stride_h": stride, "stride_w": stride, "dilation_hfactor": 1,
                   "dilation_wfactor": 1, "depth_multiplier": multiplier, "fused_activation_function": "RELU"},
                  version=2)
        return y, (1, oh, ow, multiplier), out_scale

    def build(self, x, y) -> bytes:
        return self.b.build([x[0]], [y[0]])


def _mobilenet_like(seed: int, kernels: tuple[int, ...], padding: str) -> bytes:
    net = Net(seed)
    x = net.input((1, 40, 36, 3))
    h = net.conv(x, 8, 3, 2)
    for k in kernels:
        h = net.inverted_bottleneck(h, 4, 8, k, 1, padding)
    h = net.inverted_bottleneck(h, 3, 16, 3, 2, padding)
    h = net.inverted_bottleneck(h, 3, 16, kernels[-1], 1, padding)
    return net.build(x, h)


def _resnet_like(seed: int) -> bytes:
    net = Net(seed)
    x = net.input((1, 32, 32, 3))
    h = net.conv(x, 16, 3, 1)
    block = net.conv(net.conv(h, 16, 3), 16, 3, activation="NONE")
    h = net.add(block, h)
    block = net.conv(net.conv(h, 32, 3, 2), 32, 3, activation="NONE")
    h = net.add(block, net.conv(h, 32, 1, 2, activation="NONE"))
    h = net.conv(net.conv(h, 32, 3), 32, 1, 2)  # a strided 1x1 inside a group skips rows of its input
    h = net.pool(h, 2, 2)
    return net.build(x, h)


def _global_pool_tail(seed: int) -> bytes:
    """Blocks ending in a global AVERAGE_POOL_2D (kws_ref_model's and MobileNet's tail): the pool sums
    the rows it is given and divides after the loop, so the last map is never whole either."""
    net = Net(seed)
    x = net.input((1, 20, 15, 3))
    h = net.conv(x, 16, 3, 1)
    h = net.conv(h, 0, 3, 1, depthwise=True)
    h = net.conv(h, 24, 1)
    tensor, (_, ph, pw, c), scale = h
    y = net.b.tensor("int8", (1, 1, 1, c), scale=scale, zero_point=net.zero_point[tensor])
    net.b.op("AVERAGE_POOL_2D", [tensor], [y], {"padding": "VALID", "stride_h": 1, "stride_w": 1,
                                               "filter_height": ph, "filter_width": pw,
                                               "fused_activation_function": "NONE"})
    return net.build(x, (y, (1, 1, 1, c), scale))


CASES = {
    "global_average_pool_tail": lambda: _global_pool_tail(5),
    "mobilenet_v2_3x3_same": lambda: _mobilenet_like(1, (3, 3), "SAME"),
    "mobilenet_v2_5x5_7x7_same": lambda: _mobilenet_like(2, (5, 7), "SAME"),
    "mobilenet_v2_valid": lambda: _mobilenet_like(3, (3, 5), "VALID"),
    "resnet_basic_blocks_pool": lambda: _resnet_like(4),
}


@pytest.mark.parametrize("target", ["host", "cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_row_groups_match_tflm(case, target, tmp_path):
    """min-ram groups the blocks; the C is bit-exact with TFLM. Built for the host: the Cortex-M
    lowerings (their re-laid-out weights, scratch buffers and row calls) with the portable bodies
    of the SIMD kernels; tests/test_cortexm.py runs the real DSP / Helium code in QEMU."""
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(CASES[case]())
    options = CompileOptions(schedule="min-ram", target=target)
    result = compile_model(path, options)
    groups = result.schedule.fusion.groups
    assert groups, "no row group was chosen"
    assert any(len(g.ops) >= 3 for g in groups), [len(g.ops) for g in groups]
    if case == "global_average_pool_tail":  # the pool is the sink: its input map is never whole
        assert groups[-1].ops[-1].node.op == "AVERAGE_POOL_2D" and len(groups[-1].ops) == 4
    layer = compile_model(path, CompileOptions(schedule="layer", target=target))
    assert result.arena_bytes < layer.arena_bytes
    report = verify_model(path, count=3, seed=5, references=("tflm",), workdir=tmp_path / "c", options=options)
    assert "tflm" not in report.skipped, report.skipped
    for c in report.comparisons:
        assert c.mismatches == 0, f"output {c.output}: {c.mismatches}/{c.elements} differ"


@pytest.mark.parametrize("target", ["host", "cortex-m4"])
@pytest.mark.parametrize("model", ["tflite_micro/person_detect.tflite", "mlcommons_tiny/pretrainedResnet_quant.tflite",
                                   "mlcommons_tiny/kws_ref_model.tflite", "mlcommons_tiny/vww_96_int8.tflite",
                                   "tflite_micro/micro_speech_quantized.tflite"])
def test_min_ram_real_models_match_tflm(model, target, tmp_path):
    options = CompileOptions(schedule="min-ram", target=target)
    report = verify_model(model_path(model), count=2, seed=3, references=("tflm",), workdir=tmp_path / "c",
                          options=options)
    assert "tflm" not in report.skipped, report.skipped
    assert report.comparisons and all(c.mismatches == 0 for c in report.comparisons)


def test_schedule_lowers_static_ram_below_the_layer_floor():
    """person_detect: every layer-by-layer plan needs the 48x48x16 map whole; row groups do not."""
    path = model_path("tflite_micro/person_detect.tflite")
    layer = compile_model(path, CompileOptions(schedule="layer"))
    auto = compile_model(path, CompileOptions(schedule="auto"))
    assert layer.arena_bytes >= layer.code.plan.lower_bound  # the floor of layer-by-layer execution
    assert auto.arena_bytes <= 0.6 * layer.arena_bytes
    assert auto.schedule.fusion.added_cost <= AUTO_OVERHEAD * auto.schedule.fusion.base_cost


def test_ram_budget_picks_a_schedule_that_fits_or_names_the_least():
    from nn2c.errors import BudgetExceededError

    path = model_path("mlcommons_tiny/vww_96_int8.tflite")
    fitted = compile_model(path, CompileOptions(ram_budget=30000))
    assert fitted.ram_bytes <= 30000
    with pytest.raises(BudgetExceededError, match="the least RAM any schedule reaches is"):
        compile_model(path, CompileOptions(ram_budget=8000))


# --- the row loop itself ---------------------------------------------------------------------


def _chain(rng: np.random.Generator) -> list[Member]:
    rows = int(rng.integers(6, 40))
    members: list[Member] = []
    for j in range(int(rng.integers(2, 6))):
        k, stride = int(rng.choice([1, 3, 5, 7])), int(rng.choice([1, 1, 2]))
        pad = int(rng.integers(0, k))
        out_rows = max((rows + 2 * pad - k) // stride + 1, 1)
        if (out_rows - 1) * stride - pad >= rows:
            out_rows = 1
        members.append(Member(out_rows, 8, ((j - 1, RowMap(rows, k, stride, pad)),)))
        rows = out_rows
    return members


def test_simulated_windows_hold_every_row_read():
    """Random chains: with the windows sized by occupancy (and with slack), every read finds its rows
    (simulate asserts it), slack never moves more bytes, and no window exceeds its tensor."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        members = _chain(rng)
        tight = simulate(members)
        loose = simulate(members, slack=2)
        assert loose.moved_bytes <= tight.moved_bytes
        for j, member in enumerate(members[:-1]):
            assert 1 <= tight.capacity[j] <= member.out_rows


def test_a_slower_kernel_in_a_group_is_reported():
    """micro_speech's FULLY_CONNECTED accumulates rows with the plain-filter kernel: on a SIMD target the
    summary says so (slower than the re-laid-out SIMD filter; never silent); on the host it is the
    kernel it always runs."""
    from nn2c.report.layers import schedule_dict

    path = model_path("tflite_micro/micro_speech_quantized.tflite")
    for target, slower in (("cortex-m4", True), ("host", False)):
        result = compile_model(path, CompileOptions(schedule="min-ram", target=target))
        groups = schedule_dict(result)["row_groups"]
        assert groups and groups[-1]["types"][-1] == "FULLY_CONNECTED"
        assert bool(groups[-1]["slower_kernels"]) == slower, groups


@pytest.mark.parametrize(("target", "feed_allowed", "feed"), [("cortex-m4", True, True), ("cortex-m55", True, False),
                                                           ("cortex-m4", False, False)])
def test_accumulating_sink_on_qemu_matches_tflm(target, feed_allowed, feed, monkeypatch, tmp_path):
    """micro_speech's default compile in QEMU, its FULLY_CONNECTED summing its input inside a row group.
    Feeding the sums and row windows are both options, and the cost model picks per core: on the
    Cortex-M4 the convolution feeds the sums 4 pixels at a time (the least RAM, within auto's 5%); on
    the Cortex-M55 its calls of 4 pixels cost about 10% more than the layer, so auto takes row windows
    (nn2c_move slides them) that the Helium slice kernel (VMLADAV) sums. With the feed ruled out, the
    Cortex-M4 runs the row windows through the DSP slice kernel (SXTB16 / SMLAD)."""
    import nn2c.memory.fusion as fusion
    from nn2c.codegen.stream import RowGroup
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    if missing_tools():
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing_tools())} not installed; CI installs them")
    if not feed_allowed:
        monkeypatch.setattr(fusion, "feeds_sums", lambda run: False)
    path = model_path("tflite_micro/micro_speech_quantized.tflite")
    options = CompileOptions(target=target)
    result = compile_model(path, options)
    assert [s.feed for s in result.schedule.steps if isinstance(s, RowGroup)] == [feed]
    assert result.arena_bytes < compile_model(path, CompileOptions(target=target, schedule="layer")).arena_bytes
    report = bench_model(path, target=target, count=3, seed=2, workdir=tmp_path, options=options)
    assert report.reference == "tflm", report.skipped
    assert report.passed() and all(c.max_abs_diff == 0 for c in report.comparisons)
    assert any(layer.op == "ROW_GROUP" for layer in report.layers)


def _conv_into_fc(case: str) -> bytes:
    """A convolution whose output only a FULLY_CONNECTED reads, in the shapes the feed handles
    differently: im2col staging (rows of 9 bytes) or words straight from the image, a 1x1 filter,
    an odd pixel count (a last, partial batch), odd channel and unit counts."""
    net = Net(11)
    if case == "staged_3x3_odd_pixels":  # 9 x 7 = 63 pixels, 10 channels: batches of 4, the last of 3
        x = net.input((1, 9, 7, 3))
        h = net.conv(x, 10, 3, 1)
    elif case == "words_5x4_stride2":  # micro_speech's shape: one input channel, rows of 4 bytes
        x = net.input((1, 21, 16, 1))
        h = net.depthwise_multiplier(x, 8, 5, 4, 2, "SAME")
    elif case == "pointwise_15_channels":  # 1x1: the pixels are the rows (4 channels in, 15 out)
        x = net.input((1, 5, 7, 4))
        h = net.conv(x, 15, 1, 1)
    else:  # "valid_16_channels": VALID padding, batches of 2 pixels, 5 units
        x = net.input((1, 12, 10, 4))
        h = net.conv(x, 16, 3, 1, "VALID")
    units = 5 if case == "valid_16_channels" else 4
    return net.build(x, net.fully_connected(h, units))


FEED_CASES = ("staged_3x3_odd_pixels", "words_5x4_stride2", "pointwise_15_channels", "valid_16_channels")


@pytest.mark.parametrize("target", ["host", "cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("case", FEED_CASES)
def test_convolution_feeds_fully_connected_sums(case, target, tmp_path):
    """A convolution read only by a FULLY_CONNECTED hands it a few pixels at a time: the window is
    feed_pixels(channels) pixels instead of rows, and the outputs equal TFLM's. Built for the host
    (the SIMD kernels' portable bodies); the QEMU test below runs the DSP / Helium code."""
    from nn2c.codegen.stream import feed_pixels

    path = tmp_path / f"{case}.tflite"
    path.write_bytes(_conv_into_fc(case))
    options = CompileOptions(schedule="min-ram", target=target)
    result = compile_model(path, options)
    groups = result.schedule.fusion.groups
    assert len(groups) == 1 and [o.node.op for o in groups[0].ops][-1] == "FULLY_CONNECTED", groups
    group = groups[0]
    channels = group.ops[0].output.type.shape[-1]
    assert group.feed == (target != "host")  # the host target's portable convolution has no feed
    if group.feed:
        assert group.window_bytes == [feed_pixels(channels) * channels]
    report = verify_model(path, count=3, seed=7, references=("tflm",), workdir=tmp_path / "c", options=options)
    assert "tflm" not in report.skipped, report.skipped
    for c in report.comparisons:
        assert c.mismatches == 0, f"output {c.output}: {c.mismatches}/{c.elements} differ"


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_convolution_feed_on_qemu_matches_tflm(target, tmp_path):
    """The feed's DSP (SMLAD) and Helium (VMLADAV) code in QEMU, on every shape above."""
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    if missing_tools():
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing_tools())} not installed; CI installs them")
    for case in FEED_CASES:
        path = tmp_path / f"{case}.tflite"
        path.write_bytes(_conv_into_fc(case))
        options = CompileOptions(schedule="min-ram", target=target)
        report = bench_model(path, target=target, count=2, seed=4, workdir=tmp_path / case, options=options)
        assert report.reference == "tflm", report.skipped
        assert report.passed() and all(c.max_abs_diff == 0 for c in report.comparisons), case


def test_a_member_read_only_by_the_sink_writes_into_its_rows(monkeypatch):
    """pretrainedResnet_quant's strided block: conv -> conv and a 1x1 shortcut -> ADD. The second conv's
    rows go straight into the ADD's output rows (the ADD then runs in place), so it needs no window;
    without that the block needs one more row buffer."""
    import nn2c.memory.fusion as fusion
    from nn2c.report.layers import schedule_dict

    path = model_path("mlcommons_tiny/pretrainedResnet_quant.tflite")
    result = compile_model(path, CompileOptions(target="cortex-m4"))
    aliased = [g for g in result.schedule.fusion.groups if g.alias is not None]
    assert aliased, schedule_dict(result)["row_groups"]
    for group in aliased:
        assert group.window_bytes[group.alias] == 0
        assert group.ops[group.alias].node.op == "CONV_2D" and group.ops[-1].node.op == "ADD"
    assert "rows are written in op" in result.files[f"{result.name}.c"]
    monkeypatch.setattr(fusion, "_sink_alias", lambda run: None)
    apart = compile_model(path, CompileOptions(target="cortex-m4"))
    assert result.arena_bytes < apart.arena_bytes


@pytest.mark.parametrize("model", ["tflite_micro/micro_speech_quantized.tflite", "mlcommons_tiny/kws_ref_model.tflite"])
def test_feed_and_pool_sink_are_sanitizer_and_guard_clean(model, tmp_path):
    """The Cortex-M4 lowering with --schedule min-ram built for the host (the feed's and the row sums'
    portable bodies): micro_speech's convolution feeds its FC, kws_ref_model's whole chain ends in the
    global pool's sums. ASan + UBSan on all-min / all-max inputs, and the --debug build's guard zones
    (exit 2 if a kernel wrote outside its buffer), both equal to TFLM."""
    from nn2c.verify.build import build, run
    from nn2c.verify.oracle import run_tflm
    from tests.c_safety import SANITIZE_FLAGS, extreme_records
    from tests.oracle_check import assert_records_match

    path = model_path(model)
    result = compile_model(path, CompileOptions(target="cortex-m4", schedule="min-ram"))
    kinds = [o.node.op for g in result.schedule.fusion.groups for o in g.ops]
    assert "FULLY_CONNECTED" in kinds or "AVERAGE_POOL_2D" in kinds, kinds
    exe = build(result.write(tmp_path / "asan"), tmp_path / "asan_runner", opt="-O1", extra_flags=SANITIZE_FLAGS)
    records = extreme_records(result.graph)
    assert_records_match(run(exe, records, result.graph.inputs, result.graph.outputs),
                         run_tflm(path, records, len(result.graph.outputs)))
    debug = compile_model(path, CompileOptions(target="cortex-m4", schedule="min-ram", debug=True))
    exe = build(debug.write(tmp_path / "debug"), tmp_path / "debug_runner", opt="-O1")
    records = [np.random.default_rng(k).integers(-128, 128, v.type.shape).astype(np.int8)
               for k, v in enumerate(debug.graph.inputs)]
    assert_records_match(run(exe, [records], debug.graph.inputs, debug.graph.outputs),
                         run_tflm(path, [records], len(debug.graph.outputs)))


def mcunet_candidates(count: int, seed: int) -> list[bytes]:
    """MCUNet-style int8 candidates with seeded random weights, as bench/costmodel.py measures them: input
    resolution, width multiplier, per stage a depth, and per block a kernel size (3/5/7) and an expand
    ratio (3/4/6)."""
    rng = np.random.default_rng(seed)
    models = []
    for _ in range(count):
        net = Net(int(rng.integers(1 << 30)))
        size = int(rng.choice([48, 64, 80, 96, 112]))
        width = float(rng.choice([0.35, 0.5, 0.75, 1.0]))
        channels = [max(8, round(c * width / 8) * 8) for c in (16, 24, 40, 64, 96)]
        x = net.input((1, size, size, 3))
        h = net.conv(x, channels[0], 3, 2)
        for stage, out_c in enumerate(channels[1:]):
            for block in range(int(rng.integers(1, 4))):
                h = net.inverted_bottleneck(h, int(rng.choice([3, 4, 6])), out_c, int(rng.choice([3, 5, 7])),
                                            2 if block == 0 and stage < 3 else 1)
        h = net.pool(h, h[1][1], 1, "AVERAGE_POOL_2D")
        models.append(net.build(x, h))
    return models


def _unseen_candidate() -> bytes:
    """An MCUNet-style network whose peak sits in its first blocks (seed and shape of no bench candidate)."""
    net = Net(20_261_128)
    x = net.input((1, 64, 64, 3))
    h = net.conv(x, 16, 3, 2)
    for out_c, k, expand, stride in ((16, 3, 4, 1), (24, 5, 6, 2), (24, 3, 3, 1), (40, 7, 4, 2), (48, 3, 6, 1)):
        h = net.inverted_bottleneck(h, expand, out_c, k, stride)
    return net.build(x, h)


@pytest.mark.parametrize("model", ["tinyengine/vww.tflite", "mlcommons_tiny/vww_96_int8.tflite",
                                   "tflite_micro/person_detect.tflite", "candidate"])
@pytest.mark.parametrize("schedule", ["auto", "min-ram"])
def test_spans_left_unweighed_never_hold_a_lower_ram(model, schedule, monkeypatch, tmp_path):
    """The fusion stage simulates only the runs whose groups can lower some grouping's RAM (and none when
    layer by layer already sits at the floor no grouping goes below). Weighing every run instead
    finds no smaller arena."""
    from nn2c.memory import fusion

    if model == "candidate":
        path = tmp_path / "candidate.tflite"
        path.write_bytes(_unseen_candidate())
    else:
        path = model_path(model)
    options = CompileOptions(schedule=schedule)
    weighed: list[int] = []
    real = fusion._group_options

    def counting(spans, *args, **kwargs):
        weighed.append(len(spans))
        return real(spans, *args, **kwargs)

    monkeypatch.setattr(fusion, "_group_options", counting)
    chosen = compile_model(path, options)
    monkeypatch.setattr(fusion, "_useful_spans", lambda spans, singles, lifetimes: (spans, 0))
    everything = compile_model(path, options)
    assert weighed[0] < weighed[1]  # spans were left out
    assert chosen.arena_bytes <= everything.arena_bytes


@pytest.mark.parametrize("optimize", ["balanced", "speed"])
def test_chains_run_from_a_table_sanitizer_clean(optimize, tmp_path):
    """person_detect's row groups are chains (each member reads the one before): at balanced and size they
    run through nn2c_row_chain (kernels/nn2c_rows.c: a table of the members' row facts, one function of
    the model's for their calls), at speed the loop is written out. Both are bit-exact with TFLM under
    ASan + UBSan on all-min / all-max and seeded inputs, with the Cortex-M4 lowering built for the host."""
    from nn2c.codegen.stream import is_chain
    from nn2c.verify.build import build, run
    from nn2c.verify.oracle import run_tflm
    from tests.c_safety import SANITIZE_FLAGS, extreme_records
    from tests.oracle_check import assert_records_match

    path = model_path("tflite_micro/person_detect.tflite")
    result = compile_model(path, CompileOptions(target="cortex-m4", optimize=optimize))
    chains = [g for g in result.schedule.fusion.groups if is_chain(g)]
    assert len(chains) >= 2, [g.name for g in result.schedule.fusion.groups]
    source = result.files["person_detect.c"]
    assert source.count("nn2c_row_chain(") == (len(chains) if optimize == "balanced" else 0)
    assert ("while (done" in source) == (optimize == "speed")
    exe = build(result.write(tmp_path / "asan"), tmp_path / "asan_runner", opt="-O1", extra_flags=SANITIZE_FLAGS)
    rng = np.random.default_rng(11)
    seeded = [rng.integers(-128, 128, v.type.shape).astype(np.int8) for v in result.graph.inputs]
    records = [*extreme_records(result.graph), seeded]
    assert_records_match(run(exe, records, result.graph.inputs, result.graph.outputs),
                         run_tflm(path, records, len(result.graph.outputs)))


def _random_chain(seed: int) -> bytes:
    """A seeded chain, each layer reading the one before: a CONV_2D widening the input to 16-32 channels, 1-4
    random layers (DEPTHWISE_CONV_2D or CONV_2D 1x1 / 3x3 / 5x5, MAX / AVERAGE_POOL_2D; stride 1 or 2;
    SAME or VALID), a 1x1 CONV_2D narrowing to 4-8 channels, over a map of 16-40 rows: the wide maps in
    the middle are the peak, which --schedule min-ram streams by rows."""
    net = Net(seed)
    rng = net.rng
    x = h = net.input((1, int(rng.integers(16, 41)), int(rng.integers(8, 25)), int(rng.choice([1, 3, 4, 8]))))
    net.zero_point[x[0]] = -3  # (the input's, which a pooling keeps)
    # (a name that would end a C comment and inject code, were it not sanitized: the chains' calls name it)
    h = net.conv(h, int(rng.choice([16, 24, 32])), int(rng.choice([1, 3])), int(rng.choice([1, 2])),
                 name="wide */ int injected = ; /* ??/")
    for _ in range(int(rng.integers(1, 5))):
        rows, cols = h[1][1], h[1][2]
        kind = str(rng.choice(["conv", "dw", "dw", "pool"]))
        k = int(rng.choice([1, 3, 5]))
        stride = int(rng.choice([1, 1, 2]))
        padding = str(rng.choice(["SAME", "VALID"]))
        if min(rows, cols) < k + 2 * stride:
            continue
        if kind == "pool":
            zero_point = net.zero_point.get(h[0], 2)
            h = net.pool(h, max(k, 2), stride, str(rng.choice(["MAX_POOL_2D", "AVERAGE_POOL_2D"])), padding)
            net.zero_point[h[0]] = zero_point
            continue
        h = net.conv(h, h[1][3], k, stride, padding, depthwise=kind == "dw")
    h = net.conv(h, int(rng.choice([4, 8])), 1, activation="NONE")
    return net.build(x, h)


@pytest.mark.parametrize("seed", [0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])  # (seeds 2 and 13 do not stream)
def test_random_chains_match_tflm_sanitizer_clean(seed, monkeypatch, tmp_path):
    """Seeded random chains under --schedule min-ram, the Cortex-M4 lowering built for the host with ASan +
    UBSan: their row groups are chains, each run through nn2c_row_chain (tables taken whatever the member
    count), and the outputs equal TFLM's on all-min, all-max and seeded inputs."""
    import nn2c.codegen.stream as stream
    from nn2c.codegen.stream import is_chain
    from nn2c.verify.build import build, run
    from nn2c.verify.oracle import run_tflm
    from tests.c_safety import SANITIZE_FLAGS, extreme_records
    from tests.oracle_check import assert_records_match

    monkeypatch.setattr(stream, "TABLE_MIN_MEMBERS", 1)
    path = tmp_path / f"chain{seed}.tflite"
    path.write_bytes(_random_chain(1000 + seed))
    result = compile_model(path, CompileOptions(target="cortex-m4", schedule="min-ram"))
    groups = result.schedule.fusion.groups if result.schedule.fusion is not None else []
    chains = [g for g in groups if is_chain(g)]
    assert chains and result.files[f"chain{seed}.c"].count("nn2c_row_chain(") == len(chains)
    exe = build(result.write(tmp_path / "out"), tmp_path / "runner", opt="-O1", extra_flags=SANITIZE_FLAGS)
    rng = np.random.default_rng(seed)
    seeded = [rng.integers(-128, 128, v.type.shape).astype(np.int8) for v in result.graph.inputs]
    records = [*extreme_records(result.graph), seeded]
    assert_records_match(run(exe, records, result.graph.inputs, result.graph.outputs),
                         run_tflm(path, records, len(result.graph.outputs)))


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                    reason="SKIPPED LOUDLY: arm-none-eabi-gcc not installed; CI installs gcc-arm-none-eabi")
def test_chain_tables_only_where_they_save_code(monkeypatch, tmp_path):
    """The tables cost nn2c_row_chain's one copy and save the written-out loop of each member: person_detect's
    12 chain members take them and its Cortex-M4 code shrinks by over 1 KB; vww_96_int8's one chain of 2
    members keeps its loop written out, which is smaller (chain_tables' threshold)."""
    import nn2c.codegen.stream as stream
    from nn2c.targets.cortexm_build import build_image
    from nn2c.targets.cortexm_footprint import image_footprint

    def code(model: str, tables: bool) -> tuple[int, int]:
        monkeypatch.setattr(stream, "TABLE_MIN_MEMBERS", 1 if tables else 10**6)
        result = compile_model(model_path(model), CompileOptions(target="cortex-m4"))
        folder = result.write(tmp_path / f"{result.name}_{tables}")
        record = bytes(sum(v.type.num_bytes for v in result.graph.inputs))
        image = build_image(folder, result.name, [record], "cortex-m4", tmp_path / f"build_{result.name}_{tables}",
                            large_memory=True)
        return (image_footprint(image.map_file, result.name, image.model_objects).flash_code,
                result.files[f"{result.name}.c"].count("nn2c_row_chain("))

    for model, members in (("tflite_micro/person_detect.tflite", 12), ("mlcommons_tiny/vww_96_int8.tflite", 2)):
        result = compile_model(model_path(model), CompileOptions(target="cortex-m4"))
        assert sum(len(g.ops) for g in result.schedule.fusion.groups if stream.is_chain(g)) == members
        taken = result.files[f"{result.name}.c"].count("nn2c_row_chain(") > 0
        assert taken == (members >= stream.TABLE_MIN_MEMBERS)
    (person_on, calls_on), (person_off, calls_off) = code("tflite_micro/person_detect.tflite", True), \
        code("tflite_micro/person_detect.tflite", False)
    assert (calls_on, calls_off) == (3, 0) and person_on < person_off - 1000, (person_on, person_off)
    vww_on, vww_off = code("mlcommons_tiny/vww_96_int8.tflite", True), code("mlcommons_tiny/vww_96_int8.tflite", False)
    assert vww_on[1] == 1 and vww_on[0] > vww_off[0], (vww_on, vww_off)
