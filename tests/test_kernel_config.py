"""nn2c_config.h: a model's build leaves out the optional kernel paths none of its layers takes.

The registry (codegen/kernel_config.OPTIONAL_PATHS) and the kernel sources' `NN2C_OMIT_<PATH>` guards
name the same paths; a real model's config leaves out what its layers do not take and keeps what they
do; and the kernel object built with it is smaller than the full one. Whether every path a layer takes
is kept is checked where it matters, by running the code: the Cortex-M QEMU tests of tests/test_op_conv.py
and tests/test_row_groups.py build each case with its own config (dropping one take_path call fails them).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.codegen.kernel_config import CONFIG_HEADER, OPTIONAL_PATHS, config_header, path_symbol
from nn2c.codegen.render import KERNEL_DIR
from tests.conftest import model_path

KERNELS = Path(str(resources.files("nn2c") / "kernels"))
_GUARD = re.compile(r"NN2C_OMIT_([A-Z0-9_]+)")


def _config(relative: str, target: str, optimize: str = "balanced") -> str:
    result = compile_model(model_path(relative), CompileOptions(target=target, optimize=optimize))
    return result.files[f"{KERNEL_DIR}/{CONFIG_HEADER}"]


def _omitted(header: str) -> set[str]:
    return set(re.findall(r"#define NN2C_OMIT_([A-Z0-9_]+) 1", header))


def test_registry_and_kernel_guards_name_the_same_paths():
    guarded = {m for f in KERNELS.glob("nn2c_*.[ch]") for m in _GUARD.findall(f.read_text())}
    assert guarded == set(OPTIONAL_PATHS)
    assert _omitted((KERNELS / CONFIG_HEADER).read_text()) == set()  # the packaged copy keeps every path
    sources = "".join(f.read_text() for f in KERNELS.glob("nn2c_*.c"))
    for path in OPTIONAL_PATHS:  # each kept path's link symbol, defined under its guard in the kernels' sources
        assert f"#if !defined(NN2C_OMIT_{path})\nconst uint8_t {path_symbol(path)} = 1;\n#endif" in sources, path


def test_config_header_leaves_out_exactly_the_paths_not_taken():
    taken = {"DSP_IM2COL"}
    assert _omitted(config_header(taken)) == set(OPTIONAL_PATHS) - taken
    with pytest.raises(AssertionError):
        config_header({"NOT_A_PATH"})


def test_real_models_keep_the_paths_their_layers_take():
    # kws_ref_model on the M4: every depthwise layer and convolution reads records; its first
    # convolution (10x4 filter over 1 channel) has rows of whole words, the others are 1x1
    # (and its FULLY_CONNECTED a batch of 1, from records, of 12 channels: below the groups' loop); every
    # convolution's filter is dual, the first one's over pixel pairs, the 1x1 layers' over triples (their scratch
    # leaves the arena as it is)
    # (its AVERAGE_POOL_2D: 64 channels, whole groups of 4, in SIMD lanes)
    assert _omitted(_config("mlcommons_tiny/kws_ref_model.tflite", "cortex-m4")) == set(OPTIONAL_PATHS) - {
        "DSP_EXPAND_WINDOW", "DSP_GEMM_PAIRS", "DSP_GEMM_DUAL", "DSP_GEMM_TRIPLES", "POOL_LANES", "DSP_DW_INT16"}
    # at --optimize size its depthwise filters are int8 (DSP_DW_INT8 instead of DSP_DW_INT16)
    assert _omitted(_config("mlcommons_tiny/kws_ref_model.tflite", "cortex-m4", "size")) == set(OPTIONAL_PATHS) - {
        "DSP_EXPAND_WINDOW", "DSP_GEMM_PAIRS", "DSP_GEMM_DUAL", "POOL_LANES", "DSP_DW_INT8"}
    # ad01_int8: FULLY_CONNECTED layers of batch 1 from records, of 128 and 640 channels (the groups' loop), all
    # dual filters
    assert _omitted(_config("mlcommons_tiny/ad01_int8.tflite", "cortex-m4")) == set(OPTIONAL_PATHS) - {
        "DSP_FC_DUAL"}
    # person_detect: every depthwise layer from doubled records, a shift of -1 included (its convolution of 255
    # channels, odd, dual too, its last channel apart) and a 3x3 first convolution over 1 channel (narrow rows of
    # one word, read from the image); some 1x1 layers' triples would raise the arena, so balanced runs those over
    # pixel pairs and the others over triples; its AVERAGE_POOL_2D over 255 channels is not whole groups of 4,
    # byte by byte
    assert _omitted(_config("tflite_micro/person_detect.tflite", "cortex-m4")) == set(OPTIONAL_PATHS) - {
        "DSP_CONV_ROWS_1", "DSP_GEMM_PAIRS", "DSP_GEMM_DUAL", "DSP_GEMM_TRIPLES", "DSP_GEMM_ODD", "DSP_DW_INT16"}
    # hello_world_int8's last FULLY_CONNECTED runs sparse (16 inputs, one output), one row: no four-row loops
    assert "SPARSE_ROWS4" in _omitted(_config("tflite_micro/hello_world_int8.tflite", "cortex-m4"))
    # keyword_scrambled_8bit's SVDFs take their input's zero point at run time at --optimize size only
    scrambled = "tflite_micro/keyword_scrambled_8bit.tflite"
    assert "SVDF_INPUT_OFFSET" in _omitted(_config(scrambled, "cortex-m4"))
    assert "SVDF_INPUT_OFFSET" not in _omitted(_config(scrambled, "cortex-m55", "size"))
    # vww_96_int8: its first convolution is 3x3 over 3 channels to 8 (rows of 9 bytes: 2 words and a byte, 8
    # channels at a time); its pruned depthwise layers (22 channels, ...) end in a partial group of 4; every other
    # convolution is 1x1 over pixel triples (some of an odd channel count), so the pairs' code is left out
    vww = _omitted(_config("mlcommons_tiny/vww_96_int8.tflite", "cortex-m4"))
    assert "DSP_CONV_ROWS8_3X9" not in vww and "DSP_CONV_ROWS_3_BYTE" in vww and "DSP_DW_PARTIAL" not in vww
    assert "DSP_GEMM_TRIPLES" not in vww and "DSP_GEMM_ODD" not in vww and "DSP_GEMM_PAIRS" in vww
    # on the M55: kws's depthwise layers are 3x3 over 64 channels (the assembly's base case); tinyengine/vww's
    # have 5x5 and 7x7 filters and pruned channel counts (14, 47, ...)
    assert "MVE_DW_ANY" in _omitted(_config("mlcommons_tiny/kws_ref_model.tflite", "cortex-m55"))
    assert "MVE_DW_ANY" not in _omitted(_config("tinyengine/vww.tflite", "cortex-m55"))
    # the host has no Arm DSP path: all are left out (they guard only Arm DSP code)
    assert _omitted(_config("mlcommons_tiny/kws_ref_model.tflite", "host")) == set(OPTIONAL_PATHS)


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                    reason="SKIPPED LOUDLY: arm-none-eabi-gcc not installed; CI installs gcc-arm-none-eabi")
def test_a_models_config_shrinks_the_kernel_object(tmp_path):
    result = compile_model(model_path("mlcommons_tiny/kws_ref_model.tflite"), CompileOptions(target="cortex-m4"))
    out = result.write(tmp_path / "kws")
    full = tmp_path / "full"
    shutil.copytree(out / KERNEL_DIR, full)
    shutil.copy(KERNELS / CONFIG_HEADER, full / CONFIG_HEADER)

    def text_bytes(folder: Path) -> int:
        obj = folder / "nn2c_simd.o"
        subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16",
                        "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-c", str(folder / "nn2c_simd.c"), "-o",
                        str(obj)], check=True)
        size = subprocess.run(["arm-none-eabi-size", str(obj)], check=True, capture_output=True, text=True).stdout
        return int(size.splitlines()[1].split()[0])

    model, every = text_bytes(out / KERNEL_DIR), text_bytes(full)
    assert model < every - 3000, (model, every)  # the depthwise and pair kernels' array output stages


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                    reason="SKIPPED LOUDLY: arm-none-eabi-gcc not installed; CI installs gcc-arm-none-eabi")
def test_a_model_linked_with_kernels_missing_its_paths_fails_to_link_naming_them(tmp_path):
    """Two models in one program share one build of the kernels: person_detect's code with kws_ref_model's
    kernels (built without the narrow rows of one word, which person_detect's first layer takes)
    must not link, and the error names the missing paths; with its own kernels it links."""
    from nn2c.errors import BuildError
    from nn2c.targets.cortexm_build import build_image

    person = compile_model(model_path("tflite_micro/person_detect.tflite"), CompileOptions(target="cortex-m4"))
    kws = compile_model(model_path("mlcommons_tiny/kws_ref_model.tflite"), CompileOptions(target="cortex-m4"))
    own = person.write(tmp_path / "own")
    mixed = person.write(tmp_path / "mixed")
    # kws's kernel files over person's (its nn2c_config.h among them); person's own families stay, as in a
    # program whose kernel folder holds both models' families
    shutil.copytree(kws.write(tmp_path / "kws") / KERNEL_DIR, mixed / KERNEL_DIR, dirs_exist_ok=True)
    record = bytes(96 * 96)
    build_image(own, "person_detect", [record], "cortex-m4", tmp_path / "build_own")
    with pytest.raises(BuildError) as failure:
        build_image(mixed, "person_detect", [record], "cortex-m4", tmp_path / "build_mixed")
    assert path_symbol("DSP_CONV_ROWS_1") in str(failure.value)
