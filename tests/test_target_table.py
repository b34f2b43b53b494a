"""The target table (nn2c.target) and the fixed-point helpers (nn2c.quant.fixedpoint).

The table is the one source of the target facts: the footprint build, the bench image's compile
and link, and QEMU read the flags and the board from the same Target (checked by changing an entry
and watching every command follow); the SIMD facts agree with the kernels (their source, the
compiler's feature macros under the table's flags, the fields the lowerings emit); get_target
names the choices. The fixed-point helpers: the two QuantizeMultiplier variants differ exactly where
documented, and the activation kernels' own rescales follow TFLite Micro's Prepare.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import nn2c
from nn2c import target as target_module
from nn2c.api import CompileOptions, compile_model
from nn2c.codegen.context import TARGETS as CONTEXT_TARGETS
from nn2c.codegen.context import EmitContext
from nn2c.errors import BuildError, UsageError
from nn2c.quant import fixedpoint as fp
from nn2c.target import TARGETS, Target, bench_targets, get_target
from nn2c.targets import cortexm, cortexm_build, cortexm_run, footprint
from tests.conftest import model_path

KERNELS = Path(nn2c.__file__).parent / "kernels"
CORTEX_M = [name for name, t in TARGETS.items() if t.is_cortex_m]


# --- the table ----------------------------------------------------------------------------------
def test_names_and_reexports():
    assert list(TARGETS) == ["host", "cortex-m4", "cortex-m7", "cortex-m55"]
    assert CONTEXT_TARGETS is TARGETS  # api.py's `options.target not in TARGETS` sees the table
    assert bench_targets() == ["cortex-m4", "cortex-m7", "cortex-m55"]
    assert {n: TARGETS[n].qemu_board for n in bench_targets()} == cortexm.BOARDS
    assert {n: list(TARGETS[n].cflags) for n in CORTEX_M} == footprint.CORTEX_M_FLAGS
    for name, t in TARGETS.items():
        assert t.name == name
        with pytest.raises(dataclasses.FrozenInstanceError):
            t.simd = "mve"  # type: ignore[misc]


def test_get_target():
    assert get_target("cortex-m55") is TARGETS["cortex-m55"]
    assert get_target(TARGETS["cortex-m4"]) is TARGETS["cortex-m4"]
    for bad in ("cortex-m33", "", "HOST"):
        with pytest.raises(UsageError) as info:
            get_target(bad)
        assert str(info.value) == (f"unknown target {bad!r}; choose one of host, cortex-m4, cortex-m7, "
                                   "cortex-m55")
    with pytest.raises(UsageError):
        get_target(None)  # type: ignore[arg-type]


def test_emit_context_resolves_the_name():
    assert EmitContext("m").target is TARGETS["host"]
    assert EmitContext("m", "cortex-m7").target is TARGETS["cortex-m7"]
    assert EmitContext("m", TARGETS["cortex-m55"]).target is TARGETS["cortex-m55"]
    with pytest.raises(UsageError, match="choose one of"):
        EmitContext("m", "cortex-m0")


def test_compile_refuses_an_unknown_target():
    with pytest.raises(UsageError, match="unknown target 'riscv'"):
        compile_model(model_path("tflite_micro/hello_world_int8.tflite"), CompileOptions(target="riscv"))


def test_target_module_is_the_bottom_floor():
    """nn2c.target imports nothing of nn2c but nn2c.errors (codegen and targets import it)."""
    source = Path(target_module.__file__).read_text()
    imports = re.findall(r"^\s*(?:from|import)\s+(nn2c[\w.]*)", source, re.M)
    assert imports == ["nn2c.errors"]


def test_facts_hang_together():
    host = TARGETS["host"]
    assert (host.cflags, host.qemu_board, host.simd, host.gemm_layout, host.dw_lanes) == ((), None, None, None, None)
    assert not host.is_cortex_m
    for name in CORTEX_M:
        t = TARGETS[name]
        assert t.cflags[:2] == ("-mthumb", f"-mcpu={t.mcpu}") and t.cflags[-1] == "-mfloat-abi=hard"
        assert t.qemu_board is not None and t.simd in ("dsp", "mve")
        assert t.gp_registers == 13  # r0-r12
        assert t.alignment == 16 and t.alignment % 4 == 0
        if t.simd == "dsp":
            assert (t.gemm_layout, t.dw_lanes, t.conv_pair_int16, t.vector_registers) == ((2, 4), 4, True, 0)
        else:
            assert (t.gemm_layout, t.dw_lanes, t.conv_pair_int16, t.vector_registers) == ((4, 16), 16, False, 8)


def test_simd_layouts_match_the_kernel_source():
    """(G, KB) and the depthwise lanes of each family as nn2c_simd.c / nn2c_simd.h state them."""
    source = (KERNELS / "nn2c_simd.c").read_text()
    header = (KERNELS / "nn2c_simd.h").read_text()
    for family, macro in (("dsp", "DSP"), ("mve", "MVE")):
        gemm = re.search(rf"#if defined\(NN2C_SIMD_{macro}\)\n(?:.*\n){{0,12}}?/\* G = (\d+), KB = (\d+)\.", source)
        lanes = re.search(rf"L = (\d+) \({macro}", header)
        assert gemm and lanes, family
        for t in TARGETS.values():
            if t.simd == family:
                assert t.gemm_layout == (int(gemm[1]), int(gemm[2])), t.name
                assert t.dw_lanes == int(lanes[1]), t.name


def test_lowerings_emit_the_table_layout():
    """kws_ref_model (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED int8) on every target: the kernels'
    params carry the table's G, KB and lanes; the host gets the portable kernels."""
    path = model_path("mlcommons_tiny/kws_ref_model.tflite")
    for name, t in TARGETS.items():
        code = compile_model(path, CompileOptions(target=name)).files["kws_ref_model.c"]
        groups = set(re.findall(r"\.rows_per_group = (\d+), \.k_block = (\d+)", code))
        lanes = set(re.findall(r"\.lanes = (\d+)", code))
        if t.gemm_layout is None:
            assert not groups and not lanes and "_simd(" not in code
        else:
            assert groups == {tuple(map(str, t.gemm_layout))}
            assert lanes == {str(t.dw_lanes)}


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not installed")
@pytest.mark.parametrize("name", CORTEX_M)
def test_table_flags_select_the_table_simd_family(name):
    """nn2c_simd.c picks its kernels from the compiler's feature macros: under the table's flags they
    must name the table's SIMD family (MVE integer, else DSP)."""
    t = TARGETS[name]
    macros = subprocess.run(["arm-none-eabi-gcc", *t.cflags, "-dM", "-E", "-x", "c", "/dev/null"],
                            capture_output=True, text=True, check=True).stdout
    mve = re.search(r"#define __ARM_FEATURE_MVE (\d+)", macros)
    dsp = re.search(r"#define __ARM_FEATURE_DSP (\d+)", macros)
    family = "mve" if mve and int(mve[1]) & 1 else "dsp" if dsp and int(dsp[1]) else None
    assert family == t.simd
    assert f"#define __ARM_ARCH_PROFILE {ord('M')}" in macros  # an M-profile core


# --- every build reads the same Target --------------------------------------------------------
def _probe(monkeypatch, name: str) -> Target:
    """Replace the table entry of `name` by one with a distinctive FPU and board."""
    probe = dataclasses.replace(TARGETS[name], fpu="probe-fpu", qemu_board="probe-board")
    monkeypatch.setitem(TARGETS, name, probe)
    return probe


class _Completed:
    def __init__(self, stdout: str = "") -> None:
        self.returncode, self.stdout, self.stderr = 0, stdout, ""


def test_footprint_and_bench_image_take_flags_and_board_from_the_table(monkeypatch, tmp_path):
    probe = _probe(monkeypatch, "cortex-m4")
    assert "-mfpu=probe-fpu" in probe.cflags
    model = tmp_path / "model"
    model.mkdir()
    (model / "m.c").write_text("int m_invoke(void) { return 0; }\n")
    (model / "m_weights.c").write_text("const int m_w0[1] = {0};\n")
    (model / "main.c").write_text("int main(void) { return 0; }\n")

    commands: list[list[str]] = []

    def fake_run(command, *args, **kwargs):
        commands.append([str(c) for c in command])
        size = "   text    data     bss     dec     hex filename\n      8       0       0       8       8 x.o\n"
        return _Completed(size if "size" in command[0] else "")

    monkeypatch.setattr(footprint, "arm_toolchain", lambda: ("arm-gcc", "arm-size"))
    monkeypatch.setattr(footprint.subprocess, "run", fake_run)
    footprint.measure(model, "cortex-m4")
    footprint_compiles = [c for c in commands if c[0] == "arm-gcc"]
    assert len(footprint_compiles) == 2  # m.c, m_weights.c (main.c excluded)

    commands.clear()
    monkeypatch.setattr(cortexm_build, "require_tools", lambda need_qemu=True: None)
    monkeypatch.setattr(cortexm_build, "arm_tool", lambda tool: f"arm-{tool}")
    monkeypatch.setattr(cortexm_build, "_run", lambda command, cwd=None: fake_run(command))
    image = cortexm_build.build_image(model, "m", [b"\x00" * 4], "cortex-m4", tmp_path / "build")
    image_commands = [c for c in commands if c[0] == "arm-gcc"]
    assert len(image_commands) == 2 + 3 + 1  # model objects, runtime objects, the link

    flags = list(probe.cflags)
    for command in footprint_compiles + image_commands:
        assert command[1:1 + len(flags)] == flags, command
    qemu = cortexm_run.qemu_command(image, Path("plugin.so"), {"begin": "0x0"})
    assert qemu[qemu.index("-M") + 1] == "probe-board"


def test_bench_image_refuses_a_target_without_a_board():
    with pytest.raises(BuildError, match="unknown Cortex-M target 'host'; choose one of cortex-m4, cortex-m7, "
                                         "cortex-m55"):
        cortexm_build.check_target("host")
    assert cortexm_build.check_target("cortex-m7") is TARGETS["cortex-m7"]


def test_host_footprint_uses_no_core_flags(monkeypatch, tmp_path):
    (tmp_path / "m.c").write_text("int x;\n")
    commands: list[list[str]] = []

    def fake_run(command, *args, **kwargs):
        commands.append([str(c) for c in command])
        return _Completed("   text    data     bss     dec     hex filename\n 1 2 3 6 6 m.o\n")

    monkeypatch.setattr(footprint.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(footprint.subprocess, "run", fake_run)
    result = footprint.measure(tmp_path, "host")
    assert (result.ram_bytes, result.code_bytes) == (5, 3)
    assert commands[0][:3] == ["/usr/bin/cc", "-std=c99", "-O2"]


# --- fixed point ---------------------------------------------------------------------------------
def test_the_two_quantize_multipliers():
    """Equal below 2^30; from 2^30 up the TFLITE_SINGLE_ROUNDING rule saturates the exponent at 30,
    TFLite Micro's default build does not; only the saturating one checks its input."""
    for real in (1e-12, 2.0**-31, 2.0**-32, 0.0, 0.3, 1.0, 1 - 2.0**-40, 12345.678, 2.0**30 - 1):
        assert fp.quantize_multiplier(real) == fp.quantize_multiplier_uncapped(real), real
    assert fp.quantize_multiplier(2.0**30) == (2**31 - 1, 30)
    assert fp.quantize_multiplier_uncapped(2.0**30) == (2**30, 31)
    assert fp.quantize_multiplier_uncapped(2.0**31 - 1) == (2**31 - 1, 31)
    assert fp.quantize_multiplier_uncapped(2.0**40) == (2**30, 41)
    assert fp.quantize_multiplier(1 - 2.0**-40) == (2**30, 1)  # the fraction rounds to 2^31: renormalised
    assert fp.quantize_multiplier(2.0**-32) == (2**30, -31)
    assert fp.quantize_multiplier(2.0**-33) == fp.quantize_multiplier_uncapped(2.0**-33) == (0, 0)  # flushed
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            fp.quantize_multiplier(bad)
    assert fp.quantize_multiplier_uncapped(-0.5) == (-(2**30), 0)


def test_quantize_multipliers_of_a_layer_equal_one_by_one():
    """The array form (a layer's channels at once) gives quantize_multiplier's integers: random scales
    over 30 decades, the renormalised and flushed edges, and fractions whose Q31 product is an exact
    half (rounded away from zero); a bad multiplier anywhere raises."""
    rng = np.random.default_rng(5)
    halves = (np.arange(1, 2000) * 2 + 1) / 2.0**32
    reals = np.concatenate([10 ** rng.uniform(-15, 15, 20000), rng.random(20000), halves, np.nextafter(halves, 0),
                            [0.0, 2.0**-31, 2.0**-32, 2.0**-33, 1 - 2.0**-40, 2.0**30, 2.0**31, 1e300]])
    mantissas, shifts = fp.quantize_multipliers(reals)
    assert mantissas.dtype == shifts.dtype == np.int32
    assert [(int(m), int(s)) for m, s in zip(mantissas, shifts, strict=True)] == \
        [fp.quantize_multiplier(float(r)) for r in reals]
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            fp.quantize_multipliers([0.5, bad])


def test_logistic_tanh_rescales():
    # int8: frexp + TfLiteRound, no renormalisation (QuantizeMultiplier would give (2^30, 1))
    assert fp.round_frexp_q31(1 - 2.0**-40) == (2**31, 0)
    assert fp.round_frexp_q31(0.75 * 2**27) == (3 << 29, 27)
    assert fp.round_frexp_q31(2.0**-40) == (2**30, -39)  # not flushed
    # int16: doubled until above 32767 / 2, truncated
    assert fp.int16_lut_input_multiplier(1 / 32768) == (24576, 16)  # 0.375 * 2^16
    multiplier, shift = fp.int16_lut_input_multiplier(0.001)
    assert 16383.5 < 0.001 * 12288 * 2**shift < 32767 and multiplier == int(0.001 * 12288 * 2**shift)
    assert fp.int16_lut_input_multiplier(2.0) == (24576, 0)  # already above: no doubling, no cap
    assert fp.int16_lut_input_multiplier(1e-30)[1] == 31  # at most 31 doublings


def test_downscale_int32_to_int16_multiplier():
    assert fp.downscale_int32_to_int16_multiplier(2**30) == 16384
    assert fp.downscale_int32_to_int16_multiplier(2**30 + (1 << 15) - 1) == 16384
    assert fp.downscale_int32_to_int16_multiplier(2**30 + (1 << 15)) == 16385
    assert fp.downscale_int32_to_int16_multiplier(2**31 - 1 - (1 << 15)) == 2**15 - 1
    assert fp.downscale_int32_to_int16_multiplier(2**31 - 2 - (1 << 15)) == 2**15 - 1  # rounds up to it
    assert fp.downscale_int32_to_int16_multiplier(0) == 0


def test_softmax_scalings():
    # PreprocessSoftmaxScaling: min(beta * scale * 2^26, 2^31 - 1) with the uncapped exponent
    assert fp.preprocess_softmax_scaling(1.0, 1 / 16, 5) == (2**30, 23)
    assert fp.preprocess_softmax_scaling(1.0, 1e-9, 5) is None  # multiplier not above one
    assert fp.preprocess_softmax_scaling(1.0, 1e3, 5) == (2**31 - 1, 31)  # real saturated at 2^31 - 1
    # PreprocessLogSoftmaxScalingExp's divisor: 2^(31 - 23) / 2^30 = 2^-22
    assert fp.log_softmax_reverse_scaling(2**30, 23) == (2**30, 21)
    assert fp.log_softmax_reverse_scaling(2**30, 0) is None  # 2 is not below one
    assert fp.calculate_input_radius(5, 23) == (31 << 26) >> 23
