"""The Cortex-M path: cross-build, run in qemu-system-arm, count instructions, measure footprint.

End to end on real models (outputs bit-exact with TFLM, counts deterministic across two QEMU runs,
footprint figures positive and consistent with the compiler's own object sizes), plus the harness
itself on hand-written model folders: the plugin's window and per-layer buckets are exact to the
instruction, and a fault ends the run with the exception's own exit status.
Skips loudly when arm-none-eabi-gcc / binutils / qemu-system-arm are not installed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nn2c.api import CompileOptions, compile_model
from nn2c.cli import main as cli_main
from nn2c.errors import BuildError
from nn2c.targets.cortexm_bench import bench_model
from nn2c.targets.cortexm_build import build_image, missing_tools
from nn2c.targets.cortexm_run import layer_profile, run_image
from nn2c.targets.footprint import measure
from tests.conftest import model_path
from tests.test_op_lstm import _build as _lstm_model_bytes
from tests.test_op_svdf import _int8_svdf as _svdf_model_bytes
from tests.tflite_builder import ModelBuilder


@pytest.fixture(autouse=True)
def _cross_tools():
    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed; CI installs gcc-arm-none-eabi "
                    "binutils-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm")


MODELS = [
    ("tflite_micro/hello_world_int8.tflite", "cortex-m4"),
    ("tflite_micro/hello_world_int8.tflite", "cortex-m7"),
    ("tflite_micro/hello_world_float.tflite", "cortex-m4"),
    ("mlcommons_tiny/ad01_int8.tflite", "cortex-m4"),
    ("mlcommons_tiny/ad01_int8.tflite", "cortex-m55"),
    ("tinyengine/ptq_mnist_lenet-300-100.tflite", "cortex-m55"),  # float in/out, libm
    ("tinyengine/ptq_mnist_lenet-300-100.tflite", "cortex-m4"),  # QUANTIZE's rounding without VRINTA
    ("tflite_micro/keyword_scrambled_8bit.tflite", "cortex-m4"),  # SVDF state carried across inputs
    ("tflite_micro/trained_lstm_int8.tflite", "cortex-m4"),  # LSTM gates on the int16-widened row sums
    ("mlcommons_tiny/kws_ref_model.tflite", "cortex-m4"),
    ("mlcommons_tiny/kws_ref_model.tflite", "cortex-m55"),
]


@pytest.mark.parametrize(("model", "target"), MODELS)
def test_model_on_qemu(model, target, tmp_path):
    path = model_path(model)
    compiled = compile_model(path, CompileOptions(target=target))  # what bench_model compiles
    report = bench_model(path, target=target, count=3, seed=5, workdir=tmp_path, repeat=2)

    assert report.reference == "tflm", report.skipped
    assert report.passed(), [c.__dict__ for c in report.comparisons]
    for comparison in report.comparisons:
        if "float" not in str(compiled.graph.outputs[comparison.output].type.dtype):
            assert comparison.max_abs_diff == 0
    assert len(report.instructions) == 3 and min(report.instructions) > 0
    assert report.deterministic, (report.instructions, report.repeat_instructions)
    assert report.macs > 0 and report.instructions_per_mac > 0.1  # Helium: 16 MACs per VMLADAVA

    # per-layer profile: one entry per step (an operator or a row group); steps with code call a
    # kernel, aliases cost 0; the buckets add up to the window
    assert [layer.index for layer in report.layers] == list(range(len(compiled.schedule.steps)))
    for layer in report.layers:
        assert (layer.instructions > 0) == bool(layer.calls), layer
    # (invoke's own share: the relocations' moves, 1% of kws_ref_model on the Cortex-M55)
    assert sum(layer.instructions for layer in report.layers) > 0.98 * report.instructions_per_inference
    profiled = sum(layer.instructions for layer in report.layers) + report.invoke_overhead
    # exactly 2 more per window (bench_begin's return, main's call), up to rounding of the mean
    assert 1.5 <= report.instructions_per_inference - profiled <= 2.5

    # loads and stores: counted, and the layers' buckets add up to the window up to invoke's own
    # prologue / epilogue (register saves and restores, argument and address loads)
    assert len(report.loads) == len(report.stores) == 3 and min(report.loads) > 0 and min(report.stores) > 0
    assert report.loads_per_inference > report.stores_per_inference  # kernels read more than they write
    assert report.memory_overhead >= 0
    if target != "cortex-m55":  # Helium helpers access memory per element: a VLDRB.8 counts 16
        assert report.memory_accesses_per_inference < report.instructions_per_inference
        # outside the layers: invoke's own code (a state reset on the first call, the relocations' moves:
        # nn2c_move's LDM / STM of eight registers on Armv7E-M), eight accesses per instruction at most, plus
        # its prologue / epilogue
        assert report.memory_overhead <= 8 * report.invoke_overhead + 16, (report.memory_overhead,
                                                                            report.invoke_overhead)
    for layer in report.layers:
        assert (layer.memory_accesses > 0) == (layer.instructions > 0), layer
    # the lower bound: every layer that runs code has one, below what it measured
    for layer in report.layers:
        assert (layer.bound is not None) == (layer.instructions > 0), layer
        if layer.bound is not None:
            assert 0 < layer.bound.instructions < layer.instructions, (layer.op, layer.bound, layer.instructions)
            assert layer.bound_ratio is not None and layer.bound_ratio > 1
            if layer.macs:
                assert layer.bound.mac_part > 0

    fp = report.footprint
    parts = fp.flash_code + fp.flash_weights + fp.flash_libraries + fp.flash_harness + fp.flash_padding
    assert fp.flash_total == parts
    assert fp.flash_code > 0 and fp.flash_weights > 0 and fp.flash_harness > 0
    objects = measure(tmp_path / compiled.name, target)  # the lead's per-object sizes, before linking
    assert objects.weight_bytes == compiled.code.weight_bytes
    alignment = 16 * compiled.files[f"{compiled.name}_weights.c"].count("NN2C_ALIGNED(16) =")
    assert compiled.code.weight_bytes <= fp.flash_weights <= compiled.code.weight_bytes + alignment
    assert fp.flash_code <= objects.code_bytes  # --gc-sections only removes
    assert fp.ram_arena == max(compiled.arena_bytes, 16)
    # arena + state + small flags (the state-ready flag of recurrent models)
    assert 0 <= objects.ram_bytes - (fp.ram_arena + compiled.code.state_bytes) <= 16
    ram_alignment = 16 * (1 + len(compiled.graph.variables()))  # each buffer is 16-byte aligned
    assert objects.ram_bytes <= fp.ram_model < objects.ram_bytes + ram_alignment
    # measured stack >= invoke's frame + the deepest kernel frame it calls (gcc -fstack-usage)
    frames = {}
    for su in (tmp_path / f"build_{target}" / "obj").glob("*.su"):
        for line in su.read_text().splitlines():
            where, size, _ = line.split("\t")
            frames[where.rsplit(":", 1)[-1]] = int(size)
    kernels = {call for layer in report.layers for call in layer.calls if call in frames}
    static = frames[f"{compiled.name}_invoke"] + max(frames[k] for k in kernels)
    # painting sees only written bytes: a frame's spill slots of paths not taken stay unseen
    assert static <= report.stack_bytes + 64 and report.stack_bytes < 16384
    assert report.warnings == []  # generated code and harness compile warning-free for Arm too


# TFLM + CMSIS-NN instructions per inference (shared/docs/baseline-cortexm.md)
TFLM_CMSIS = {
    ("mlcommons_tiny/kws_ref_model.tflite", "cortex-m4"): 7_697_707,
    ("mlcommons_tiny/ad01_int8.tflite", "cortex-m4"): 582_878,
    ("mlcommons_tiny/ad01_int8.tflite", "cortex-m55"): 149_903,
}


@pytest.mark.parametrize(("model", "target"), [("mlcommons_tiny/ad01_int8.tflite", "cortex-m4"),
                                               ("mlcommons_tiny/ad01_int8.tflite", "cortex-m55")])
def test_simd_kernels_beat_portable_and_tflm(model, target, tmp_path):
    """The target's DSP / MVE kernels: bit-exact with TFLM in QEMU, fewer instructions than the
    portable kernels on the same core and than TFLM + CMSIS-NN."""
    path = model_path(model)
    simd = bench_model(path, target=target, count=2, seed=1, workdir=tmp_path / "simd")
    portable = bench_model(path, target=target, count=2, seed=1, workdir=tmp_path / "portable",
                           options=CompileOptions(target="host"))
    for report in (simd, portable):
        assert report.reference == "tflm" and report.passed()
        assert all(c.max_abs_diff == 0 for c in report.comparisons)
    calls = {call for layer in simd.layers for call in layer.calls}
    assert calls == {"nn2c_fc_s8_simd"}, calls
    print(f"{model} {target}: {simd.instructions_per_inference:,} instructions with SIMD kernels, "
          f"{portable.instructions_per_inference:,} portable, {TFLM_CMSIS[(model, target)]:,} TFLM+CMSIS-NN")
    assert simd.instructions_per_inference < 0.5 * portable.instructions_per_inference
    assert simd.instructions_per_inference < TFLM_CMSIS[(model, target)]


@pytest.mark.parametrize(("target", "optimize"), [("cortex-m4", "balanced"), ("cortex-m4", "size"),
                                                ("cortex-m55", "balanced"), ("cortex-m55", "size")])
def test_recurrent_row_sums_on_odd_shapes(target, optimize, tmp_path):
    """The recurrent kernels' SIMD row sums (nn2c_sums_s8, nn2c_dots_s8) where the real models have no
    such shapes: row counts that are not a multiple of 4 (the DSP layout's padded group), depths with a
    tail of 1-3 inputs (and an input of 2, no whole word), non-zero input / state zero points folded into
    the constants, several rows of a time-major LSTM batch and a rank-3 SVDF; bit-exact with TFLM in QEMU
    over inputs whose state carries. With --optimize size too: on the Cortex-M4 the weights as int8, 4 rows
    interleaved (nn2c_sums_s8_narrow), instead of widened to int16; on both cores the SVDF features' input
    offset applied at run time (nn2c_sums_s8_offset)."""
    models = {
        "lstm": _lstm_model_bytes(23, 2, 3, 7, 6, True, "int8", -20, 2, 2.0**-10, 10.0),
        "lstm_tail": _lstm_model_bytes(11, 1, 4, 9, 10, False, "int8", -5, 3, 0.0003, 3.0),
        "lstm_narrow": _lstm_model_bytes(5, 1, 3, 2, 5, False, "int8", 7, -1, 2.0**-11, 0.0),  # depth < 4
        "svdf": _svdf_model_bytes(9, 2, 13, 5, 3, 6, "int8", -11, 3, 13, "RELU"),
        "svdf_int16": _svdf_model_bytes(5, 1, 10, 6, 1, 8, "int16", 17, -128, 0, "NONE"),
    }
    for name, data in models.items():
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(data)
        report = bench_model(path, target=target, count=3, seed=2, workdir=tmp_path / name,
                             options=CompileOptions(target=target, optimize=optimize))
        assert report.reference == "tflm" and report.passed(), (name, [c.__dict__ for c in report.comparisons])
        assert all(c.max_abs_diff == 0 for c in report.comparisons), name


@pytest.mark.parametrize(("target", "optimize"), [("cortex-m4", "speed"), ("cortex-m4", "size"),
                                                ("cortex-m55", "size")])
def test_fully_connected_row_sums_of_optimize_in_qemu(target, optimize, tmp_path):
    """--optimize speed (the Arm DSP's int16 filter, assembly row sums) and size (int8 rows interleaved by
    4 on the DSP, as stored on Helium) in QEMU: a per-tensor layer of 3 batches with a depth tail and 18
    units (a 16-row chunk and a partial group), then a per-channel one of 33 units; bit-exact with TFLM,
    and the size build's weights no more than the filters and biases themselves."""
    rng = np.random.default_rng(17)
    b = ModelBuilder()
    x = b.tensor("int8", (3, 37), scale=0.05, zero_point=-7)
    w1 = b.tensor("int8", (18, 37), scale=0.01, zero_point=0, data=rng.integers(-127, 128, (18, 37)))
    b1 = b.tensor("int32", (18,), scale=5e-4, zero_point=0, data=rng.integers(-3000, 3000, 18))
    h = b.tensor("int8", (3, 18), scale=0.1, zero_point=4)
    b.op("FULLY_CONNECTED", [x, w1, b1], [h], {"fused_activation_function": "RELU"})
    w2 = b.tensor("int8", (33, 18), scale=list(rng.uniform(0.002, 0.02, 33)), zero_point=[0] * 33,
                  data=rng.integers(-127, 128, (33, 18)))
    b2 = b.tensor("int32", (33,), scale=1e-3, zero_point=0, data=rng.integers(-3000, 3000, 33))
    y = b.tensor("int8", (3, 33), scale=0.2, zero_point=-3)
    b.op("FULLY_CONNECTED", [h, w2, b2], [y], {"fused_activation_function": "NONE"})
    path = tmp_path / "fc2.tflite"
    path.write_bytes(b.build([x], [y]))
    options = CompileOptions(target=target, optimize=optimize)
    report = bench_model(path, target=target, count=3, seed=4, workdir=tmp_path / "fc2", options=options)
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert all(c.max_abs_diff == 0 for c in report.comparisons)
    assert {tuple(layer.calls) for layer in report.layers} == {("nn2c_fc_s8_rows",)}, report.layers
    if optimize == "size":  # filters, biases, 33 multipliers and shifts; 6 arrays aligned to 16
        assert report.footprint.flash_weights <= 18 * 37 + 33 * 18 + 4 * (18 + 33) + 8 * 33 + 6 * 15


@pytest.mark.parametrize("build", ["-O2", "-O2 -fno-omit-frame-pointer -DNN2C_NO_INLINE_ASM"])
@pytest.mark.parametrize("batches", [1, 3])
def test_fully_connected_balanced_in_qemu(batches, build, monkeypatch, tmp_path):
    """nn2c_fc_s8_simd on the Cortex-M4 (--optimize balanced) on shapes the real models lack: one row
    (the four-channel kernel, its assembly output stage where every shift is negative and the range is
    int8's) and three (a row pair, then one), a depth tail, unit counts that leave a partial group of
    four, an int8-range layer, a RELU (narrower range) and a layer with a positive shift (the C output
    stage); bit-exact with TFLM, built with and without the inline assembly."""
    from nn2c.targets import cortexm_build

    flags = [part for flag in cortexm_build.COMPILE_FLAGS for part in (build.split() if flag == "-O2" else [flag])]
    monkeypatch.setattr(cortexm_build, "COMPILE_FLAGS", flags)
    rng = np.random.default_rng(23)
    b = ModelBuilder()
    x = b.tensor("int8", (batches, 37), scale=0.05, zero_point=-7)
    layers = [  # units, output scale (shift < 0 at 0.1 and 0.2; > 0 at 2e-4), activation
        (18, 0.1, "NONE"), (33, 0.2, "RELU"), (22, 2e-4, "NONE"), (12, 0.3, "NONE")]
    h, depth = x, 37
    for units, scale, activation in layers:
        w = b.tensor("int8", (units, depth), scale=list(rng.uniform(0.002, 0.02, units)), zero_point=[0] * units,
                     data=rng.integers(-127, 128, (units, depth)))
        bias = b.tensor("int32", (units,), scale=1e-4, zero_point=0, data=rng.integers(-3000, 3000, units))
        y = b.tensor("int8", (batches, units), scale=scale, zero_point=int(rng.integers(-20, 20)))
        b.op("FULLY_CONNECTED", [h, w, bias], [y], {"fused_activation_function": activation})
        h, depth = y, units
    path = tmp_path / "fc.tflite"
    path.write_bytes(b.build([x], [h]))
    report = bench_model(path, target="cortex-m4", count=3, seed=5, workdir=tmp_path / "fc")
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert all(c.max_abs_diff == 0 for c in report.comparisons)
    assert {tuple(layer.calls) for layer in report.layers} == {("nn2c_fc_s8_simd",)}, report.layers


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_simd_kernels_in_place(target, tmp_path):
    """In-place outputs (memory/inplace.py) with the SIMD kernels: kws writes every depthwise output
    over its input and every 1x1 convolution's 64 bytes below its input (the MVE pointwise kernel
    copies the first row of a pixel pair for that, the DSP one expands both rows before writing),
    and stays bit-exact with TFLM in QEMU, within 2 % of the instructions without in-place planning
    (layer by layer: row groups have their own in-place rule, tested in test_row_groups.py)."""
    path = model_path("mlcommons_tiny/kws_ref_model.tflite")
    compiled = compile_model(path, CompileOptions(target=target, schedule="layer"))
    ops = {pair.step: compiled.graph.nodes[pair.step].op for pair in compiled.code.inplace}
    assert sorted(set(ops.values())) == ["CONV_2D", "DEPTHWISE_CONV_2D"], ops
    assert any(pair.distance < 128 and ops[pair.step] == "CONV_2D" for pair in compiled.code.inplace)
    report = bench_model(path, target=target, count=2, seed=3, workdir=tmp_path / "inplace",
                         options=CompileOptions(target=target, schedule="layer"))
    apart = bench_model(path, target=target, count=2, seed=3, workdir=tmp_path / "apart",
                        options=CompileOptions(target=target, inplace=False, schedule="layer"))
    for r in (report, apart):
        assert r.reference == "tflm" and r.passed()
        assert all(c.max_abs_diff == 0 for c in r.comparisons)
    assert report.footprint.ram_arena < apart.footprint.ram_arena
    # the in-place copies cost little: MVE copies one input row per pixel pair of a 1x1 convolution
    assert report.instructions_per_inference <= 1.02 * apart.instructions_per_inference


def test_cli_bench_json():
    result = CliRunner().invoke(
        cli_main,
        ["bench", str(model_path("tflite_micro/hello_world_int8.tflite")), "--target", "cortex-m55",
         "--inputs", "2", "--json"],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["passed"] and payload["qemu_machine"] == "mps3-an547"
    assert payload["instructions_per_inference"] > 0 and len(payload["instructions"]) == 2
    assert payload["footprint"]["flash_weights"] > 0 and payload["footprint"]["stack_high_water"] > 0
    assert {layer["op"] for layer in payload["layers"]} == {"FULLY_CONNECTED"}
    assert payload["loads_per_inference"] > 0 and payload["stores_per_inference"] > 0
    assert payload["memory_accesses_per_inference"] == payload["loads_per_inference"] + payload["stores_per_inference"]
    assert len(payload["loads"]) == len(payload["stores"]) == 2
    assert "per element" in payload["memory_note"]  # Helium: not comparable with M4
    assert 0 < payload["bound_instructions"] < payload["instructions_per_inference"]
    for layer in payload["layers"]:
        assert layer["loads"] > 0 and layer["stores"] > 0
        assert layer["memory_accesses"] == layer["loads"] + layer["stores"]
        assert layer["bound"]["instructions"] > 0 and layer["bound_ratio"] > 1
        assert layer["bound_per_mac"] < layer["instructions_per_mac"]


def test_cli_bench_report_shows_measured_layers(tmp_path):
    """`nn2c bench --report`: the layer table carries each layer's measured instructions and loads + stores,
    the same per-inference figures as --json."""
    model = str(model_path("tflite_micro/hello_world_int8.tflite"))
    result = CliRunner().invoke(cli_main, ["bench", model, "--inputs", "1", "--report", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    payload = json.loads(CliRunner().invoke(cli_main, ["bench", model, "--inputs", "1", "--json"]).output)
    table = (tmp_path / "rep" / "report.md").read_text()
    header = next(line for line in table.splitlines() if line.startswith("| # | operator |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns[-2:] == ["instructions", "loads+stores"]
    rows = [row for row in ([c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
                            if "FULLY_CONNECTED (" in line) if len(row) == len(columns)]
    measured = sorted(round(float(row[-1].replace(",", ""))) for row in rows)
    assert measured == sorted(round(layer["memory_accesses"]) for layer in payload["layers"])


# --- the harness on hand-written model folders ----------------------------------------------

FAKE_HEADER = """#ifndef FAKE_H
#define FAKE_H
#include <stddef.h>
#define FAKE_OK 0
#define FAKE_NUM_INPUTS 1
#define FAKE_NUM_OUTPUTS 1
void *fake_input(int index);
const void *fake_output(int index);
size_t fake_input_bytes(int index);
size_t fake_output_bytes(int index);
int fake_invoke(void);
void fake_reset(void);
#endif
"""

# the fake model's buffer and API (its one input is its one output, 4 bytes)
FAKE_API = """static uint8_t fake_buffer[4];
void *fake_input(int index) { return index == 0 ? &fake_buffer[0] : NULL; }
const void *fake_output(int index) { return index == 0 ? &fake_buffer[0] : NULL; }
size_t fake_input_bytes(int index) { return index == 0 ? 4 : 0; }
size_t fake_output_bytes(int index) { return index == 0 ? 4 : 0; }
void fake_reset(void) {}
"""

FAKE_SOURCE = """#include <stdint.h>
#include "fake.h"
""" + FAKE_API + """__attribute__((noipa)) void fake_kernel_a(uint8_t *x) { __asm__ volatile(".rept %c0\\n\\tnop\\n\\t.endr" :: "i"(A)); x[0] ^= 1; }
__attribute__((noipa)) void fake_kernel_b(uint8_t *x) { __asm__ volatile(".rept %c0\\n\\tnop\\n\\t.endr" :: "i"(B)); x[1] ^= 2; }
int fake_invoke(void) {
    /* [0] NOP_A: first */
    fake_kernel_a(fake_buffer);
    /* [1] NOP_B: second */
    fake_kernel_b(fake_buffer);
    BODY
    return FAKE_OK;
}
"""


def _fake_model(folder: Path, a: int, b: int, body: str = "") -> Path:
    folder.mkdir(parents=True)
    (folder / "fake.h").write_text(FAKE_HEADER)
    (folder / "fake.c").write_text(FAKE_SOURCE.replace("(A)", f"({a})").replace("(B)", f"({b})")
                                   .replace("BODY", body))
    (folder / "main.c").write_text("#error the host runner must not be part of the Cortex-M image\n")
    return folder


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_plugin_counts_exactly(target, tmp_path):
    """Adding n nops to a kernel adds exactly n to the window and to that layer's bucket."""
    records = [bytes([1, 2, 3, 4]), bytes([5, 6, 7, 8])]
    runs = {}
    for a, b in ((10, 10), (110, 310)):
        folder = _fake_model(tmp_path / f"m{a}_{b}", a, b)
        image = build_image(folder, "fake", records, target, tmp_path / f"b{a}_{b}")
        run = run_image(image)
        layers, overhead = layer_profile(image, folder, run)
        runs[(a, b)] = (run, layers, overhead)
        assert run.outputs[(0, 0)] == bytes([0, 0, 3, 4]) and run.outputs[(1, 0)] == bytes([4, 4, 7, 8])
        assert run.outside == 0
    small, large = runs[(10, 10)], runs[(110, 310)]
    assert [w - v for w, v in zip(large[0].windows, small[0].windows, strict=True)] == [400, 400]
    assert [(x.op, x.calls) for x in large[1]] == [("NOP_A", ["fake_kernel_a"]), ("NOP_B", ["fake_kernel_b"])]
    assert large[1][0].instructions - small[1][0].instructions == 100
    assert large[1][1].instructions - small[1][1].instructions == 300
    assert large[2] == small[2] > 0


# a hand-written block with known memory traffic: LDM of 4 registers (4 loads), LDRD (2), STRD (2
# stores), STM of 3 registers (3), PUSH / POP of 2 registers (2 stores, 2 loads); 9 instructions
MEMORY_BLOCK = ('__asm__ volatile("sub sp, sp, #32\\n\\tmov r12, sp\\n\\tldm r12, {r0-r3}\\n\\t'
                'ldrd r0, r1, [r12, #8]\\n\\tstrd r0, r1, [r12, #16]\\n\\tstm r12, {r0-r2}\\n\\t'
                'push {r4, r5}\\n\\tpop {r4, r5}\\n\\tadd sp, sp, #32" ::: "r0", "r1", "r2", "r3", "r12", "memory");')


def test_plugin_counts_each_memory_element(tmp_path):
    """Loads and stores count every element of LDM/STM/LDRD/STRD/PUSH/POP (how the TFLM baseline
    was counted), in the window and in the bucket of the layer whose code made them."""
    runs = {}
    for key, body in (("plain", ""), ("block", MEMORY_BLOCK)):
        folder = _fake_model(tmp_path / key, 10, 10, body)
        image = build_image(folder, "fake", [bytes(4), bytes(4)], "cortex-m4", tmp_path / f"b{key}")
        run = run_image(image)
        runs[key] = (run, layer_profile(image, folder, run)[0])
    (plain, plain_layers), (block, block_layers) = runs["plain"], runs["block"]
    assert [w - v for w, v in zip(block.windows, plain.windows, strict=True)] == [9, 9]
    assert [w - v for w, v in zip(block.loads, plain.loads, strict=True)] == [4 + 2 + 2, 4 + 2 + 2]
    assert [w - v for w, v in zip(block.stores, plain.stores, strict=True)] == [2 + 3 + 2, 2 + 3 + 2]
    # the block sits in layer [1]'s lines; layer [0] (one LDRB and one STRB in its kernel) is unchanged
    assert (block_layers[0].loads, block_layers[0].stores) == (plain_layers[0].loads, plain_layers[0].stores)
    assert plain_layers[0].stores == 1 and plain_layers[0].loads >= 1
    assert block_layers[1].loads - plain_layers[1].loads == 8
    assert block_layers[1].stores - plain_layers[1].stores == 7
    for run, layers in runs.values():  # the rest of the window: invoke's prologue and epilogue only
        assert 0 < sum(run.loads) / 2 - sum(x.loads for x in layers) <= 4
        assert 0 < sum(run.stores) / 2 - sum(x.stores for x in layers) <= 4


@pytest.mark.parametrize(("body", "fault", "status"), [
    ('__asm__ volatile("udf #0");', "UsageFault", 70),  # undefined instruction
    ("*(volatile uint32_t *)0xF0000000u = 1;", "BusFault", 69),  # no memory there
    ("((void (*)(void))0xE0000001u)();", "MemManage", 68),  # execute from an execute-never region
])
def test_fault_exits_with_its_own_status(body, fault, status, tmp_path):
    folder = _fake_model(tmp_path / "m", 1, 1, body)
    image = build_image(folder, "fake", [bytes(4)], "cortex-m4", tmp_path / "b")
    with pytest.raises(BuildError, match=f"{fault} fault \\(exit status {status}\\)"):
        run_image(image, timeout=60)


def test_missing_toolchain_is_a_clear_error(monkeypatch, tmp_path):
    folder = _fake_model(tmp_path / "m", 1, 1)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(BuildError, match="gcc-arm-none-eabi"):
        build_image(folder, "fake", [bytes(4)], "cortex-m4", tmp_path / "b")


def _quantize_model(n: int, scale: float, zero_point: int) -> bytes:
    from tests.tflite_builder import ModelBuilder

    b = ModelBuilder()
    x = b.tensor("float32", (1, n), name="x")
    q = b.tensor("int8", (1, n), scale=scale, zero_point=zero_point, name="q")
    b.op("QUANTIZE", [x], [q])
    return b.build([x], [q])


@pytest.mark.parametrize("zero_point", [-7, 0, 5])
@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_quantize_edges_in_qemu(target, zero_point, tmp_path):
    """QUANTIZE float -> int8 on the core (Helium: four lanes a step, the last 3 elements scalar) against
    TFLM on the same floats: ties of x / scale at +-0.5 and +-2.5, values past int32 (which TFLM on x86
    turns into INT32_MIN, wrapped by the zero point before the clamp), infinities and NaN."""
    from nn2c.verify.oracle import run_tflm

    scale = 0.25
    edges = [0.125, -0.125, 0.625, -0.625, 0.375, -0.375, 31.9, -32.1, 1e10, -1e10, 5.4e8, -5.4e8,
             np.inf, -np.inf, np.nan, -np.nan, 536870880.0, -536870912.0, 0.0, -0.0, 1e-30, 3.0e38]
    rng = np.random.default_rng(3)
    x = np.concatenate([np.array(edges, np.float32), rng.uniform(-40, 40, 41).astype(np.float32)])[None, :]
    path = tmp_path / "quantize.tflite"
    path.write_bytes(_quantize_model(x.shape[1], scale, zero_point))
    compiled = compile_model(path, CompileOptions(target=target))
    folder = compiled.write(tmp_path / compiled.name, force=True)
    image = build_image(folder, compiled.name, [x.tobytes()], target, tmp_path / "build")
    ours = np.frombuffer(run_image(image).outputs[(0, 0)], np.int8)
    theirs = run_tflm(path, [[x]], 1)[0][0].reshape(-1)
    assert x.shape[1] % 4 == 3  # a scalar tail after the vector steps
    assert np.array_equal(ours, theirs), [(v, a, b) for v, a, b in zip(x[0], ours, theirs, strict=True) if a != b]
    # the cases are there: saturation at both ends, NaN's INT32_MIN (wrapped by a negative zero point)
    assert {-128, 127} <= set(theirs.tolist())
