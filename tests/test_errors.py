"""Bad input ends in one clear error line and a non-zero exit code: never a traceback, never a
half-written output folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import model_path
from tests.test_op_signal import CustomOpModel
from tests.tflite_builder import ModelBuilder

KWS = model_path("mlcommons_tiny/kws_ref_model.tflite")


def nn2c(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nn2c", *args], capture_output=True, text=True, timeout=300)


def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("nn2c: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_not_a_model(tmp_path):
    bogus = tmp_path / "notes.tflite"
    bogus.write_text("this is not a model\n")
    out = tmp_path / "out"
    result = nn2c("compile", str(bogus), "-o", str(out))
    assert_one_line_error(result, "not a TensorFlow Lite model", "notes.tflite")
    assert result.returncode == 2
    assert not out.exists()


def test_missing_file(tmp_path):
    result = nn2c("compile", str(tmp_path / "nope.tflite"), "-o", str(tmp_path / "out"))
    assert_one_line_error(result, "no such model file")


@pytest.mark.parametrize("keep", [12, 100, 1000, 20000])
def test_truncated_flatbuffer(tmp_path, keep):
    data = KWS.read_bytes()[:keep]
    bad = tmp_path / "truncated.tflite"
    bad.write_bytes(data)
    out = tmp_path / "out"
    result = nn2c("compile", str(bad), "-o", str(out))
    assert_one_line_error(result, "truncated.tflite")
    assert not out.exists()
    assert not list(tmp_path.glob(".out.*")), "staging folder left behind"


def test_corrupted_flatbuffer(tmp_path):
    rng = np.random.default_rng(3)
    data = bytearray(KWS.read_bytes())
    for position in rng.integers(8, 2000, 200):  # scramble the tables, keep the identifier
        data[position] ^= 0xFF
    bad = tmp_path / "corrupt.tflite"
    bad.write_bytes(bytes(data))
    result = nn2c("compile", str(bad), "-o", str(tmp_path / "out"))
    if result.returncode == 0:  # a flip can land on harmless bytes; then the output must be complete
        assert (tmp_path / "out" / "corrupt.c").is_file()
    else:
        assert_one_line_error(result, "corrupt.tflite")
        assert not (tmp_path / "out").exists()


def test_unsupported_operator_is_named_with_its_index(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 8))
    y = b.tensor("float32", (1, 8))
    z = b.tensor("float32", (1, 8))
    b.op("FULLY_CONNECTED", [x, b.tensor("float32", (8, 8), data=np.eye(8)), -1], [y])
    b.op("ATAN2", [y, y], [z])  # a builtin TFLM does not run either
    path = tmp_path / "atan2.tflite"
    path.write_bytes(b.build([x], [z]))
    result = nn2c("compile", str(path), "-o", str(tmp_path / "out"))
    assert_one_line_error(result, "ATAN2", "op #1")
    assert result.returncode == 3
    assert not (tmp_path / "out").exists()


def test_custom_ops_are_listed(tmp_path):
    """Custom operators other than TFLM's Signal ones (which nn2c compiles, tests/test_op_signal.py)."""
    m = CustomOpModel()
    x, y, z = m.tensor("int16", (4,)), m.tensor("int16", (4,)), m.tensor("int16", (4,))
    m.custom("SignalWindow", [x, m.tensor("int16", (4,), data=np.ones(4))], [y], {"shift": 0})
    m.custom("MyVendorOp", [y], [z], {"gain": 2})
    m.custom("ZetaResampler", [y], [z], {"ratio": 2})
    path = tmp_path / "custom.tflite"
    path.write_bytes(m.serialize([x], [z]))
    result = nn2c("compile", str(path), "-o", str(tmp_path / "out"))
    assert_one_line_error(result, "custom operators are not supported: MyVendorOp, ZetaResampler", "op #1")
    assert result.returncode == 3
    assert not (tmp_path / "out").exists()


def test_bad_custom_options_are_one_line(tmp_path):
    m = CustomOpModel()
    x, y = m.tensor("int16", (4,)), m.tensor("int16", (4,))
    m.custom("SignalWindow", [x, m.tensor("int16", (4,), data=np.ones(4))], [y], b"\x05\x00garbage")
    path = tmp_path / "bad_options.tflite"
    path.write_bytes(m.serialize([x], [y]))
    result = nn2c("compile", str(path), "-o", str(tmp_path / "out"))
    assert_one_line_error(result, "op #0 CUSTOM:SignalWindow", "FlexBuffers")
    assert result.returncode == 2


def test_dynamic_shape(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (-1, 8))
    y = b.tensor("float32", (-1, 4))
    b.op("FULLY_CONNECTED", [x, b.tensor("float32", (4, 8), data=np.ones((4, 8))), -1], [y])
    path = tmp_path / "dynamic.tflite"
    path.write_bytes(b.build([x], [y]))
    result = nn2c("compile", str(path), "-o", str(tmp_path / "out"))
    assert_one_line_error(result, "dynamic shape", "fixed input shapes")


def test_ram_budget_exceeded(tmp_path):
    out = tmp_path / "out"
    result = nn2c("compile", str(KWS), "-o", str(out), "--ram-budget", "1000")
    assert_one_line_error(result, "RAM", "budget of 1,000", "--ram-budget")
    assert result.returncode == 4
    assert not out.exists()


def test_existing_output_is_not_clobbered(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "firmware.c").write_text("int keep_me;\n")
    hello = str(model_path("tflite_micro/hello_world_int8.tflite"))
    result = nn2c("compile", hello, "-o", str(out))
    assert_one_line_error(result, "--force")
    assert (out / "firmware.c").read_text() == "int keep_me;\n"
    assert nn2c("compile", hello, "-o", str(out), "--force").returncode == 0
    assert not (out / "firmware.c").exists()
    assert (out / "hello_world_int8.c").is_file()


def test_version_and_help():
    assert nn2c("--version").returncode == 0
    for command in ("compile", "inspect", "run", "verify"):
        result = nn2c(command, "--help")
        assert result.returncode == 0 and "Usage" in result.stdout


def test_inspect_prints_shapes_quantization_and_macs():
    result = nn2c("inspect", str(KWS))
    assert result.returncode == 0, result.stderr
    assert "CONV_2D" in result.stdout and "int8[1x49x10x1] q(scale=0.584703, zp=83)" in result.stdout
    total = next(line for line in result.stdout.splitlines() if line.strip().startswith("total:"))
    assert "2,656,768 MACs" in total  # the figure models/README.md gives for this model


def test_package_main_module_exists():
    assert Path(__import__("nn2c").__file__).with_name("__main__.py").is_file()


def test_run_builds_the_folder_and_runs_npy_inputs(tmp_path):
    out = tmp_path / "out"
    model = str(model_path("tflite_micro/hello_world_int8.tflite"))
    assert nn2c("compile", model, "-o", str(out)).returncode == 0
    inputs = np.array([[[10]], [[-50]], [[127]]], dtype=np.int8)  # three inferences
    np.save(tmp_path / "x.npy", inputs)
    result = nn2c("run", str(out), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npz"))
    assert result.returncode == 0, result.stderr
    ours = np.load(tmp_path / "y.npz")["output_0"]
    from nn2c.verify.oracle import run_tflm

    theirs = run_tflm(model, [[i] for i in inputs], 1)
    assert ours.shape == (3, 1, 1)
    assert [int(o.ravel()[0]) for o in ours] == [int(t[0].ravel()[0]) for t in theirs]
    wrong = nn2c("run", str(out), "--input", str(tmp_path / "x.npy"), "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "z.npz"))
    assert_one_line_error(wrong, "takes 1 input")


def test_verify_json_reports_bit_exactness(tmp_path):
    import json

    report_path = tmp_path / "report.json"
    result = nn2c("verify", str(model_path("mlcommons_tiny/ad01_int8.tflite")), "--inputs", "2",
                  "--json", str(report_path))
    assert result.returncode == 0, result.stderr
    report = json.loads(report_path.read_text())
    assert report["passed"] is True and report["inputs"] == 2
    tflm = [c for c in report["comparisons"] if c["reference"] == "tflm"]
    assert tflm and tflm[0]["max_abs_diff"] == 0 and tflm[0]["elements"] == 2 * 640
    assert "tflm" in result.stdout and "bit-exact" in result.stdout


def _depthwise_with_an_absent_bias(tmp_path: Path) -> Path:
    """An int8 DEPTHWISE_CONV_2D whose third input is -1 (an optional input left out, as the schema allows): nn2c
    compiles it without a bias; TFLite Micro's interpreter crashes on it (a segfault, found by fuzzing vww_96_int8)
    and LiteRT refuses to prepare it."""
    b = ModelBuilder()
    x = b.tensor("int8", (1, 4, 4, 3), scale=0.05, zero_point=1)
    w = b.tensor("int8", (1, 3, 3, 3), scale=[0.01, 0.02, 0.03], zero_point=[0, 0, 0], axis=3,
                 data=np.ones((1, 3, 3, 3), dtype=np.int64))
    y = b.tensor("int8", (1, 4, 4, 3), scale=0.1, zero_point=-2)
    b.op("DEPTHWISE_CONV_2D", [x, w, -1], [y], {"padding": "SAME", "stride_h": 1, "stride_w": 1,
                                                "depth_multiplier": 1})
    path = tmp_path / "nobias.tflite"
    path.write_bytes(b.build([x], [y]))
    return path


def test_a_reference_that_crashes_is_reported_not_fatal(tmp_path):
    """TFLM runs in a child process (nn2c.verify.oracle.run_tflm): its crash on a model is a line saying so, and
    `nn2c verify` ends in one error line saying that no reference could run the model (exit 6), not a segfault of
    nn2c itself; `nn2c bench` compares with nn2c's host build instead."""
    from nn2c.targets.cortexm_build import missing_tools

    path = _depthwise_with_an_absent_bias(tmp_path)
    result = nn2c("verify", str(path), "--inputs", "2")
    assert result.returncode == 6 and "Traceback" not in result.stderr, (result.returncode, result.stderr)
    assert "tflm   could not run this model: RuntimeError: TFLite Micro crashed on this model (signal 11)" in (
        result.stdout + result.stderr)
    assert_one_line_error(result, "no reference runtime could run this model")
    if missing_tools():
        pytest.skip(f"SKIPPED LOUDLY (bench part): {', '.join(missing_tools())} not installed")
    bench = nn2c("bench", str(path), "--inputs", "1", "--json")
    assert bench.returncode == 0 and "Traceback" not in bench.stderr, bench.stderr
    assert '"reference": "host"' in bench.stdout and "TFLite Micro crashed" in bench.stdout, bench.stdout


@pytest.mark.parametrize("target", ["host", "cortex-m4"])
def test_a_convolution_output_larger_than_its_input_makes_is_one_error_line(tmp_path, target):
    """A 1x1 CONV_2D from a 1x48 input declared 48x48 (found by fuzzing person_detect: its depthwise output's shape
    cut to one row): its windows past the padding would read past the input (the generated code crashed on the
    host and ran on for minutes in QEMU), so the layer is refused in one line, exit 2, no folder."""
    b = ModelBuilder()
    x = b.tensor("int8", (1, 1, 48, 8), scale=0.05, zero_point=1)
    w = b.tensor("int8", (16, 1, 1, 8), scale=[0.01] * 16, zero_point=[0] * 16, axis=0,
                 data=np.ones((16, 1, 1, 8), dtype=np.int64))
    y = b.tensor("int8", (1, 48, 48, 16), scale=0.1, zero_point=-2)
    b.op("CONV_2D", [x, w, -1], [y], {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    path = tmp_path / "taller.tflite"
    path.write_bytes(b.build([x], [y]))
    out = tmp_path / "out"
    result = nn2c("compile", str(path), "--target", target, "-o", str(out))
    assert_one_line_error(result, "op #0 CONV_2D", "output 48x48 is larger than the 1x48")
    assert result.returncode == 2 and not out.exists()
