"""Properties of the generated C: deterministic bytes, strict-warning clean, sanitizer clean,
sanitised identifiers, a usable C API."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.verify.build import build, run
from nn2c.verify.oracle import run_tflm
from tests.c_safety import assert_no_injected_code, extreme_records
from tests.conftest import LARGE_MODELS, TFLM_MODELS, model_path
from tests.oracle_check import assert_records_match
from tests.tflite_builder import ModelBuilder


@pytest.mark.parametrize("model", [*TFLM_MODELS, "mlcommons_tiny/kws_ref_model_float32.tflite",
                                   *(pytest.param(m, marks=pytest.mark.slow) for m in LARGE_MODELS)])
def test_compile_is_deterministic(model):
    first = compile_model(model_path(model)).files
    second = compile_model(model_path(model)).files
    assert first.keys() == second.keys()
    for name in first:
        assert first[name] == second[name], f"{name} differs between two compiles"




def _assert_sanitizer_clean_on_extreme_inputs(model: str, tmp_path, options: CompileOptions | None = None):
    """The compiled model built with ASan + UBSan (-Werror too), run on all-min / all-max inputs: equal to TFLM.
    Returns the compile result."""
    result = compile_model(model_path(model), options)
    out = result.write(tmp_path / "out")
    exe = build(out, tmp_path / "asan_runner", opt="-O1",
                extra_flags=["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                             "-fno-omit-frame-pointer"])
    records = extreme_records(result.graph)
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    theirs = run_tflm(model_path(model), records, len(result.graph.outputs))
    assert_records_match(ours, theirs)
    return result


@pytest.mark.parametrize("model", TFLM_MODELS)
def test_sanitizers_clean_on_extreme_inputs(model, tmp_path):
    """ASan + UBSan build (-Werror too) on all-min / all-max inputs; results still equal TFLM."""
    _assert_sanitizer_clean_on_extreme_inputs(model, tmp_path)


@pytest.mark.parametrize("model", ["mlcommons_tiny/ad01_int8.tflite", "mlcommons_tiny/kws_ref_model.tflite"])
def test_cortex_m4_layouts_sanitizer_clean_on_host(model, tmp_path):
    """The Cortex-M4 lowering built for the host (its portable kernels read the Arm DSP layouts: dual filters, whose
    records hold A's bias + 256 B's) with ASan + UBSan on all-min / all-max inputs; results equal TFLM."""
    result = _assert_sanitizer_clean_on_extreme_inputs(model, tmp_path, CompileOptions(target="cortex-m4"))
    assert result.files[f"{result.name}.c"].count(".dual = 1") >= 5


def test_hostile_names_cannot_inject_code(tmp_path):
    hostile = 'x */ int evil; /* \n #include <stdlib.h> // "q" \\ ??/ é \u202e'
    b = ModelBuilder(description=hostile)
    x = b.tensor("float32", (1, 4), name=hostile)
    w = b.tensor("float32", (2, 4), data=np.arange(8).reshape(2, 4), name="w" + hostile)
    y = b.tensor("float32", (1, 2), name="*/ exit(1); /*")
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    path = tmp_path / "hostile.tflite"
    path.write_bytes(b.build([x], [y]))
    result = compile_model(path)
    assert_no_injected_code(result.files, ("evil", "exit(1)", "stdlib"))
    out = result.write(tmp_path / "out")
    exe = build(out, tmp_path / "runner")
    ours = run(exe, [[np.ones((1, 4), np.float32)]], result.graph.inputs, result.graph.outputs)
    assert np.allclose(ours[0][0], [[6.0, 22.0]])


def test_header_exposes_io_shapes_quantization_and_arena():
    result = compile_model(model_path("mlcommons_tiny/ad01_int8.tflite"))
    header = result.files["ad01_int8.h"]
    assert "#define AD01_INT8_INPUT0_SHAPE {1, 640}" in header
    assert "#define AD01_INT8_INPUT0_ZERO_POINT 89" in header
    assert re.search(r"#define AD01_INT8_ARENA_BYTES \d+", header)
    for fn in ("ad01_int8_input(int index)", "ad01_int8_output(int index)", "ad01_int8_invoke(void)",
               "ad01_int8_reset(void)"):
        assert fn in header
    weights = result.files["ad01_int8_weights.c"]
    assert "NN2C_ALIGNED(16)" in weights and "const int8_t" in weights
    assert "static uint8_t ad01_int8_arena[" in result.files["ad01_int8.c"]
    assert "malloc" not in "".join(result.files.values())


def test_user_firmware_can_drive_the_c_api(tmp_path):
    """A separate C program (not the generated main.c) uses only the header to run an inference."""
    result = compile_model(model_path("tflite_micro/hello_world_float.tflite"), )
    out = result.write(tmp_path / "out")
    (out / "main.c").unlink()
    (tmp_path / "app.c").write_text(
        '#include <stdio.h>\n#include "hello_world_float.h"\n'
        "int main(void) {\n"
        "    float *x = (float *)hello_world_float_input(0);\n"
        "    if (!x || hello_world_float_input(1) != NULL) return 10;\n"
        "    x[0] = 1.5f;\n"
        "    if (hello_world_float_invoke() != HELLO_WORLD_FLOAT_OK) return 11;\n"
        '    printf("%.6f\\n", (double)((const float *)hello_world_float_output(0))[0]);\n'
        "    return 0;\n}\n")
    sources = [str(p) for p in out.rglob("*.c")] + [str(tmp_path / "app.c")]
    exe = tmp_path / "app"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", str(out), *sources,
                    "-o", str(exe), "-lm"], check=True, capture_output=True)
    printed = float(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    expected = run_tflm(model_path("tflite_micro/hello_world_float.tflite"),
                        [[np.array([[1.5]], np.float32)]], 1)[0][0]
    assert abs(printed - float(expected.ravel()[0])) < 1e-5
