"""The output folder is a drop-in library: CMake, a Makefile fragment and a README with the real API."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from nn2c import CompileOptions, compile_model
from nn2c.verify.build import run as run_exe
from nn2c.verify.inputs import random_records
from tests.conftest import model_path

WARNINGS = "-Wall -Wextra -Werror"
KWS = "mlcommons_tiny/kws_ref_model.tflite"


def _compile(tmp_path: Path, model: str, name: str, folder: str = "out"):
    result = compile_model(model_path(model), CompileOptions(name=name))
    out = result.write(tmp_path / folder)
    return result, out


def _outputs(exe: Path, result, records) -> list[list[np.ndarray]]:
    return run_exe(exe, records, result.graph.inputs, result.graph.outputs)


def test_every_compile_writes_the_library_files(tmp_path):
    _, out = _compile(tmp_path, KWS, "kws")
    for file_name in ("CMakeLists.txt", "nn2c.mk", "README.md"):
        assert (out / file_name).is_file(), file_name
    cmake = (out / "CMakeLists.txt").read_text()
    assert "add_library(kws STATIC" in cmake and "add_executable(kws_example main.c)" in cmake
    # every library source is listed, the example program only as the example
    sources = sorted(str(p.relative_to(out)) for p in out.rglob("*.c") if p.name != "main.c")
    for source in sources:
        assert f"    {source}\n" in cmake
        assert f"$(NN2C_KWS_DIR)/{source}" in (out / "nn2c.mk").read_text()


def test_library_files_are_deterministic_and_relative(tmp_path):
    _, a = _compile(tmp_path, KWS, "kws", "a")
    _, b = _compile(tmp_path, KWS, "kws", "b")
    for file_name in ("CMakeLists.txt", "nn2c.mk", "README.md"):
        text = (a / file_name).read_bytes()
        assert text == (b / file_name).read_bytes(), file_name
        assert str(tmp_path).encode() not in text and b"/home/" not in text and b"/work/" not in text
        text.decode("ascii")  # plain ASCII: any toolchain reads it


@pytest.mark.skipif(shutil.which("cmake") is None, reason="SKIPPED LOUDLY: cmake is not installed (apt install cmake)")
def test_cmake_builds_library_and_example_warning_free(tmp_path):
    result, out = _compile(tmp_path, KWS, "kws")
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(out), "-B", str(build), f"-DCMAKE_C_FLAGS={WARNINGS}",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True, text=True)
    made = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    assert (build / "libkws.a").is_file()
    records = random_records(result.graph.inputs, 2, seed=0)
    ours = _outputs(build / "kws_example", result, records)
    # same bytes as nn2c's own host build of the folder
    from nn2c.verify.build import build as nn2c_build

    reference = _outputs(nn2c_build(out, tmp_path / "ref_exe"), result, records)
    for got, want in zip(ours, reference, strict=True):
        np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.skipif(shutil.which("cmake") is None, reason="SKIPPED LOUDLY: cmake is not installed (apt install cmake)")
def test_cmake_add_subdirectory_links_into_a_firmware_project(tmp_path):
    _, out = _compile(tmp_path, "mlcommons_tiny/ad01_int8.tflite", "ad01")
    project = tmp_path / "firmware"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(firmware C)\n"
        f"add_subdirectory({out.as_posix()} ad01)\n"
        "add_executable(firmware app.c)\ntarget_link_libraries(firmware PRIVATE ad01)\n")
    (project / "app.c").write_text(
        '#include "ad01.h"\nint main(void)\n{\n    return ad01_invoke() == AD01_OK ? 0 : 1;\n}\n')
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(project), "-B", str(build), f"-DCMAKE_C_FLAGS={WARNINGS}"], check=True,
                   capture_output=True, text=True)
    made = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    assert not (build / "ad01" / "ad01_example").exists()  # the example is off inside another project
    assert subprocess.run([str(build / "firmware")]).returncode == 0


@pytest.mark.skipif(shutil.which("make") is None, reason="SKIPPED LOUDLY: make is not installed")
def test_makefile_fragment_builds_from_another_directory(tmp_path):
    result, _ = _compile(tmp_path, "tflite_micro/micro_speech_lstm.tflite", "speech")
    app = tmp_path / "app"
    app.mkdir()
    (app / "Makefile").write_text(
        "include ../out/nn2c.mk\n"
        f"CFLAGS += -std=c99 -O2 {WARNINGS} $(NN2C_INCLUDES)\n"
        "LDLIBS += $(NN2C_LDLIBS)\n"
        "example: $(NN2C_SRCS) $(NN2C_SPEECH_EXAMPLE)\n"
        "\t$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)\n")
    made = subprocess.run(["make", "-C", str(app)], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    records = random_records(result.graph.inputs, 2, seed=1)
    ours = _outputs(app / "example", result, records)
    assert ours[0][0].shape == tuple(result.graph.outputs[0].type.shape)


@pytest.mark.parametrize("model, name", [(KWS, "kws"), ("tflite_micro/hello_world_float.tflite", "sine"),
                                         ("tflite_micro/micro_speech_lstm.tflite", "speech")])
def test_readme_states_the_real_api_and_its_example_compiles(tmp_path, model, name):
    result, out = _compile(tmp_path, model, name)
    readme = (out / "README.md").read_text()
    for value in result.graph.inputs + result.graph.outputs:
        shape = "{" + ", ".join(str(d) for d in value.type.shape) + "}"
        assert shape in readme
        q = value.type.quant
        if q is not None and not q.per_channel:
            assert f"zero point {q.zero_point[0]}" in readme
    assert f"{name}_invoke()" in readme and f"{result.arena_bytes:,} B tensor arena" in readme
    example = re.search(r"```c\n(.*?)```", readme, re.S)
    assert example is not None
    (out / "example_from_readme.c").write_text(example.group(1))
    cc = subprocess.run(["cc", "-std=c99", *WARNINGS.split(), "-I", str(out), "-c", str(out / "example_from_readme.c"),
                         "-o", str(tmp_path / "example.o")], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
