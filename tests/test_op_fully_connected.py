"""FULLY_CONNECTED against TFLM: int8 (per-tensor and per-channel weights, zero points, activations,
batches, with and without bias) and float32."""

from __future__ import annotations

import re

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.codegen.ops.conv import DUAL_LIMIT, dual_fits, pack_dual_filter
from nn2c.verify.compare import verify_model
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder


@pytest.mark.parametrize("batches,depth,units", [(1, 1, 16), (1, 640, 128), (3, 37, 5), (2, 16, 1)])
@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_int8_fully_connected(tmp_path, batches, depth, units, activation, with_bias):
    rng = np.random.default_rng(depth * 7 + units)
    b = ModelBuilder()
    x = b.tensor("int8", (batches, depth), scale=float(rng.uniform(0.01, 0.2)), zero_point=int(rng.integers(-20, 20)))
    w = b.tensor("int8", (units, depth), scale=float(rng.uniform(0.002, 0.02)), zero_point=0,
                 data=rng.integers(-127, 128, (units, depth)))
    bias = -1
    if with_bias:
        bias = b.tensor("int32", (units,), scale=1e-4, zero_point=0, data=rng.integers(-3000, 3000, units))
    y = b.tensor("int8", (batches, units), scale=float(rng.uniform(0.05, 0.5)), zero_point=int(rng.integers(-10, 10)))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": activation})
    assert_matches_tflm(b.build([x], [y]), tmp_path, records=4)


def test_float_fully_connected_with_relu6(tmp_path):
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.tensor("float32", (2, 50))
    w = b.tensor("float32", (20, 50), data=rng.standard_normal((20, 50)))
    bias = b.tensor("float32", (20,), data=rng.standard_normal(20))
    y = b.tensor("float32", (2, 20))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": "RELU6"})
    assert_matches_tflm(b.build([x], [y]), tmp_path, records=4)


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("batches,depth,units,activation", [(1, 640, 128, "RELU"), (3, 37, 5, "NONE"),
                                                            (2, 16, 1, "RELU6"), (1, 23, 7, "RELU")])
def test_int8_fully_connected_cortex_m_layouts(tmp_path, target, batches, depth, units, activation):
    """The Cortex-M kernel (folded input offset, re-laid-out weights; nn2c_simd.c's portable branch
    on the host) on odd depths and unit counts."""
    rng = np.random.default_rng(depth + units)
    b = ModelBuilder()
    x = b.tensor("int8", (batches, depth), scale=float(rng.uniform(0.01, 0.2)), zero_point=[-128, 5, -20, 60][depth % 4])
    w = b.tensor("int8", (units, depth), scale=float(rng.uniform(0.002, 0.02)), zero_point=0,
                 data=rng.integers(-127, 128, (units, depth)))
    bias = b.tensor("int32", (units,), scale=1e-4, zero_point=0, data=rng.integers(-3000, 3000, units))
    y = b.tensor("int8", (batches, units), scale=float(rng.uniform(0.05, 0.5)), zero_point=int(rng.integers(-10, 10)))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": activation})
    path = tmp_path / "fc.tflite"
    path.write_bytes(b.build([x], [y]))
    report = verify_model(path, count=3, references=("tflm",), workdir=tmp_path / "fc_c",
                          options=CompileOptions(target=target))
    assert "tflm" not in report.skipped, report.skipped
    assert report.comparisons and not [c for c in report.comparisons if c.mismatches]



def test_int8_fully_connected_deeper_than_16_bits(tmp_path):
    """nn2c_gemm_s8_t's dimensions are 16-bit unless one is above 65,535 (NN2C_WIDE_GEOMETRY, as a convolution's
    geometry): a FULLY_CONNECTED of 70,000 inputs builds with the 32-bit fields and stays bit-exact with TFLM."""
    from nn2c.codegen.kernel_config import CONFIG_HEADER
    from nn2c.codegen.render import KERNEL_DIR

    rng = np.random.default_rng(70)
    b = ModelBuilder()
    x = b.tensor("int8", (1, 70_000), scale=0.05, zero_point=-3)
    w = b.tensor("int8", (3, 70_000), scale=0.0004, zero_point=0, data=rng.integers(-127, 128, (3, 70_000)))
    bias = b.tensor("int32", (3,), scale=2e-5, zero_point=0, data=rng.integers(-3000, 3000, 3))
    y = b.tensor("int8", (1, 3), scale=2.0, zero_point=4)  # (sums' spread ~1.4e6 x 2e-5 / 2: outputs of some +-14)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": "NONE"})
    path = tmp_path / "deep.tflite"
    path.write_bytes(b.build([x], [y]))
    options = CompileOptions(target="cortex-m4")
    assert "#define NN2C_WIDE_GEOMETRY 1" in compile_model(path, options).files[f"{KERNEL_DIR}/{CONFIG_HEADER}"]
    report = verify_model(path, count=3, references=("tflm",), workdir=tmp_path / "fc_c", options=options)
    assert "tflm" not in report.skipped, report.skipped
    assert report.comparisons and not [c for c in report.comparisons if c.mismatches]

def test_dual_filter_layout_holds_both_channels_of_each_pair():
    """nn2c_gemm_s8_t.dual: each block's int16 halves h = A + 256 B (inputs 0 2 | 1 3), stored little-endian
    with B's byte B - [A < 0]; A is h's low byte sign-extended (SXTB16), and SMLAD's sums of the halves and of
    the low bytes differ by exactly 256 times B's dot product (the kernels' arithmetic, here in int64)."""
    rng = np.random.default_rng(5)
    rows = rng.integers(-127, 128, (6, 13))
    rows[1, 0], rows[0, 0] = -128, 3  # B = -128 beside A >= 0 still fits a byte
    rows[2:4, 5] = (-128, -1)  # (A may be -128 too)
    assert dual_fits(rows.astype(np.int8), np.zeros(6))
    packed = pack_dual_filter(rows.astype(np.int8))
    assert packed.dtype == np.int8 and packed.size == 6 * 16  # the int8 layout's bytes: 3 pairs x 4 blocks x 8
    x = rng.integers(-128, 128, 16)
    x[13:] = 0
    for c in range(6):
        pair, got, halves, lows = c // 2, [], 0, 0
        for k in range(16):
            at = pair * 2 * 16 + (k // 4) * 8 + 4 * (k % 2) + 2 * ((k % 4) // 2)
            low, high = int(packed[at]), int(packed[at + 1])
            h = (low & 0xFF) + 256 * high
            got.append(low if c % 2 == 0 else (h - low) // 256)
            halves, lows = halves + int(x[k]) * h, lows + int(x[k]) * low
        assert got[:13] == rows[c].tolist() and got[13:] == [0, 0, 0], c
        dot = int(np.dot(x[:13], rows[c]))
        assert (lows if c % 2 == 0 else (halves - lows) // 256) == dot
    # what does not fit: an odd channel count; B = -128 where A < 0 (B - 1 is no byte); B's bias and products
    # able to reach 2^23 (256 times them would leave int32)
    assert not dual_fits(rows[:5].astype(np.int8), np.zeros(5))
    bad = rows.copy()
    bad[0, 7], bad[1, 7] = -2, -128
    assert not dual_fits(bad.astype(np.int8), np.zeros(6))
    edge = DUAL_LIMIT - 1 - 128 * int(np.abs(rows[1]).sum())
    assert dual_fits(rows.astype(np.int8), np.array([0, edge, 0, 0, 0, 0]))
    assert not dual_fits(rows.astype(np.int8), np.array([0, -edge - 1, 0, 0, 0, 0]))


def test_optimize_speed_keeps_the_dual_filters():
    """--optimize speed on the Arm DSP widens FULLY_CONNECTED filters to int16 rows, except where the balanced
    kernel's dual filter runs (as fast, in the int8 flash): all of ad01_int8's layers of 16 channels or more."""
    from tests.conftest import model_path

    source = compile_model(model_path("mlcommons_tiny/ad01_int8.tflite"),
                           CompileOptions(target="cortex-m4", optimize="speed")).files["ad01_int8.c"]
    assert source.count(".dual = 1") == 9 and source.count("nn2c_fc_s8_rows(") == 1, source


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("build", ["-O2", "-O2 -fno-omit-frame-pointer -DNN2C_NO_INLINE_ASM"])
def test_int8_fully_connected_batches_in_qemu(tmp_path, monkeypatch, target, build):
    """The Arm DSP / Helium kernel itself (nn2c_fc_s8_simd) on a batch of 3, two input rows at a time and
    then one, and on batches of 1 of 8, 18 and 16 channels (Arm DSP: from records, whole groups of four channels
    and the last 2; a depth of whole words in pairs runs the groups in one assembly loop; 16 channels from a dual
    filter),
    in QEMU, bit-exact with TFLM; the batch pairs' and the arrays' paths stay in the Arm DSP build because a
    layer takes them (nn2c_config.h; dropping either take_path call fails the Cortex-M4 case). Built as the
    bench builds and with the C versions of the inline assembly (docs/user-guide.md)."""
    from nn2c.targets import cortexm_build
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    flags = [part for flag in cortexm_build.COMPILE_FLAGS for part in (build.split() if flag == "-O2" else [flag])]
    monkeypatch.setattr(cortexm_build, "COMPILE_FLAGS", flags)
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.tensor("int8", (3, 37), scale=0.05, zero_point=-7)
    w = b.tensor("int8", (6, 37), scale=0.01, zero_point=0, data=rng.integers(-127, 128, (6, 37)))
    bias = b.tensor("int32", (6,), scale=5e-4, zero_point=0, data=rng.integers(-3000, 3000, 6))
    y = b.tensor("int8", (3, 6), scale=0.2, zero_point=4)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": "NONE"})
    flat = b.tensor("int8", (1, 18), scale=0.2, zero_point=4)
    b.op("RESHAPE", [y], [flat], {"new_shape": [1, 18]})
    w2 = b.tensor("int8", (8, 18), scale=0.02, zero_point=0, data=rng.integers(-127, 128, (8, 18)))
    z = b.tensor("int8", (1, 8), scale=0.3, zero_point=-2)
    b.op("FULLY_CONNECTED", [flat, w2], [z], {"fused_activation_function": "NONE"})
    # a depth of two whole words and 18 channels (Arm DSP: the groups' assembly loop, nn2c_gemm_rows1_groups,
    # then the last 2)
    w3 = b.tensor("int8", (18, 8), scale=0.02, zero_point=0, data=rng.integers(-127, 128, (18, 8)))
    bias3 = b.tensor("int32", (18,), scale=6e-3, zero_point=0, data=rng.integers(-300, 300, 18))
    u = b.tensor("int8", (1, 18), scale=0.2, zero_point=3)
    b.op("FULLY_CONNECTED", [z, w3, bias3], [u], {"fused_activation_function": "NONE"})
    # beside it, 16 channels of the same input (Arm DSP: a dual filter, nn2c_gemm_rows1_groups_dual)
    w4 = b.tensor("int8", (16, 8), scale=list(rng.uniform(0.01, 0.03, 16)), zero_point=[0] * 16,
                  data=rng.integers(-127, 128, (16, 8)))
    bias4 = b.tensor("int32", (16,), scale=6e-3, zero_point=0, data=rng.integers(-300, 300, 16))
    v = b.tensor("int8", (1, 16), scale=0.25, zero_point=-5)
    b.op("FULLY_CONNECTED", [z, w4, bias4], [v], {"fused_activation_function": "NONE"})
    path = tmp_path / "fc.tflite"
    path.write_bytes(b.build([x], [u, v]))
    report = bench_model(path, target=target, count=2, seed=1, workdir=tmp_path / "qemu")
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert all(c.max_abs_diff == 0 for c in report.comparisons)
    calls = [call for layer in report.layers for call in layer.calls]
    assert calls.count("nn2c_fc_s8_simd") == 4, calls
    files = compile_model(path, CompileOptions(target=target)).files
    config = files["nn2c_kernels/nn2c_config.h"]
    for path_name in ("DSP_FC_BATCH_PAIRS", "DSP_FC_ARRAYS", "DSP_FC_GROUPS", "DSP_FC_DUAL"):  # (Arm DSP paths)
        assert (f"NN2C_OMIT_{path_name}" in config) == (target == "cortex-m55"), path_name
    records = re.findall(r"\.records = (\w+)", files["fc.c"])
    assert records[0] == "NULL" and all((r != "NULL") == (target == "cortex-m4") for r in records[1:]), records


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("optimize", ["speed", "size"])
@pytest.mark.parametrize("batches,depth,units,per_channel", [(1, 37, 18, False), (3, 16, 5, True), (2, 130, 33, True),
                                                             (2, 3, 6, False), (1, 9, 3, True)])
def test_int8_fully_connected_optimize_layouts(tmp_path, target, optimize, batches, depth, units, per_channel):
    """--optimize speed / size (nn2c_fc_s8_rows: the filter as row sums, int16 in SMLAD order or int8 with
    every whole group of 4 rows interleaved, one multiplier for a per-tensor filter) on depths with a tail
    (and one below a word: hello_world's), unit counts past a 16-row chunk and not a multiple of 4,
    per-tensor and per-channel scales; the host build reads each layout as the target's kernels do.
    On Helium, speed runs the balanced kernel (its row sums read int8 already)."""
    rng = np.random.default_rng(depth * 3 + units)
    b = ModelBuilder()
    x = b.tensor("int8", (batches, depth), scale=float(rng.uniform(0.01, 0.2)), zero_point=int(rng.integers(-60, 60)))
    w_scale = list(rng.uniform(0.002, 0.02, units)) if per_channel else float(rng.uniform(0.002, 0.02))
    w = b.tensor("int8", (units, depth), scale=w_scale, zero_point=[0] * units if per_channel else 0,
                 data=rng.integers(-127, 128, (units, depth)))
    bias = b.tensor("int32", (units,), scale=1e-4, zero_point=0, data=rng.integers(-3000, 3000, units))
    y = b.tensor("int8", (batches, units), scale=float(rng.uniform(0.05, 0.5)), zero_point=int(rng.integers(-10, 10)))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": "RELU"})
    path = tmp_path / "fc.tflite"
    path.write_bytes(b.build([x], [y]))
    options = CompileOptions(target=target, optimize=optimize)
    report = verify_model(path, count=3, references=("tflm",), workdir=tmp_path / "fc_c", options=options)
    assert "tflm" not in report.skipped, report.skipped
    assert report.comparisons and not [c for c in report.comparisons if c.mismatches]
    # the kernel the model's own code calls (the kernel files define both): Helium's speed is the balanced one
    balanced = target == "cortex-m55" and optimize == "speed"
    ran, other = ("nn2c_fc_s8_simd(", "nn2c_fc_s8_rows(") if balanced else ("nn2c_fc_s8_rows(", "nn2c_fc_s8_simd(")
    calls = "".join(f.read_text() for f in (tmp_path / "fc_c").rglob("*.c") if "nn2c_kernels" not in f.parts)
    assert ran in calls and other not in calls
