"""The command line: help for every option, --json on every command, -q / -v, exit codes documented."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from nn2c.cli import EXIT_CODES, main
from tests.conftest import model_path

AD01 = model_path("mlcommons_tiny/ad01_int8.tflite")
SPEECH = model_path("tflite_micro/micro_speech_quantized.tflite")
ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[tuple[str, click.Command]]:
    found = [("nn2c", main)]
    found += [(f"nn2c {name}", command) for name, command in sorted(main.commands.items())]
    return found


@pytest.mark.parametrize("path, command", _commands(), ids=[p for p, _ in _commands()])
def test_every_option_has_help(path, command):
    assert command.help and command.help.strip(), f"{path} has no description"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help and len(param.help.strip()) > 10, f"{path} {'/'.join(param.opts)} has no help"
    ctx = click.Context(command, info_name=path)
    text = command.get_help(ctx)
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.opts[-1] in text


def test_main_help_lists_exit_codes_and_docs_agree():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "Exit codes:" in result.output
    guide = (ROOT / "docs" / "user-guide.md").read_text()
    for code, meaning in EXIT_CODES.items():
        assert re.search(rf"^\s+{code}\s+{re.escape(meaning)}$", result.output, re.M), code
        assert re.search(rf"^\| {code} \|", guide, re.M), f"docs/user-guide.md does not list exit code {code}"
    for name in main.commands:
        assert name in result.output


def _json(args: list[str]) -> dict:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_compile_json(tmp_path):
    payload = _json(["compile", str(AD01), "-o", str(tmp_path / "out"), "--json", "--passes-report"])
    assert payload["operators"] == 10 and payload["arena_bytes"] == 768 and payload["ram_bytes"] == 768
    assert {"CMakeLists.txt", "nn2c.mk", "README.md", "ad01_int8.c"} <= set(payload["files"])
    assert payload["passes"]["ops_after"] == payload["operators"]


def test_inspect_json_has_per_layer_data():
    payload = _json(["inspect", str(SPEECH), "--json"])
    assert payload["operators"] == len(payload["layers"]) == 4
    conv = next(x for x in payload["layers"] if x["op"] == "DEPTHWISE_CONV_2D")
    assert conv["macs"] > 0 and conv["weight_bytes"] > 0
    assert conv["inputs"][0]["quantization"]["zero_point"] is not None
    assert conv["inputs"][1]["constant"] is True
    assert payload["inputs"][0]["dtype"] == "int8" and payload["inputs"][0]["shape"] == [1, 1960]
    assert payload["macs"] == sum(x["macs"] for x in payload["layers"])


def test_run_json(tmp_path):
    out = tmp_path / "out"
    _json(["compile", str(AD01), "-o", str(out), "--json"])
    manifest = json.loads((out / "nn2c_manifest.json").read_text())
    x = np.zeros([2, *manifest["inputs"][0]["shape"]], dtype=np.int8)
    np.save(tmp_path / "x.npy", x)
    payload = _json(["run", str(out), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npz"), "--json"])
    assert payload["outputs"][0]["dtype"] == "int8" and payload["outputs"][0]["shape"][0] == 2
    assert np.load(tmp_path / "y.npz")["output_0"].shape[0] == 2


def test_verify_json():
    payload = _json(["verify", str(AD01), "--inputs", "1", "--json", "-"])
    assert payload["passed"] is True and payload["comparisons"]


def test_bench_json_and_report(tmp_path):
    if shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None:
        pytest.skip("SKIPPED LOUDLY: arm-none-eabi-gcc / qemu-system-arm missing; CI installs them")
    payload = _json(["bench", str(model_path("tflite_micro/hello_world_int8.tflite")), "--inputs", "1", "--json",
                     "--report", str(tmp_path / "rep")])
    assert payload["passed"] and payload["instructions_per_inference"] > 0
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "<th>instructions</th>" in html


def test_quiet_prints_nothing_and_verbose_logs_steps_on_stderr(tmp_path):
    runner = CliRunner()
    quiet = runner.invoke(main, ["-q", "compile", str(AD01), "-o", str(tmp_path / "a")])
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""
    quiet = runner.invoke(main, ["compile", str(AD01), "-o", str(tmp_path / "b"), "--quiet"])
    assert quiet.exit_code == 0 and quiet.stdout == ""
    loud = runner.invoke(main, ["compile", str(AD01), "-o", str(tmp_path / "c"), "-v"])
    assert loud.exit_code == 0 and loud.stdout.startswith("compiled ")
    assert "nn2c: reading the model (" in loud.stderr and "planning memory" in loud.stderr
    assert "arena peak at op" in loud.stderr
    # errors still print under --quiet
    failed = runner.invoke(main, ["-q", "compile", str(AD01), "-o", str(tmp_path / "d"), "--ram-budget", "10"])
    assert failed.exit_code == 4 and failed.stderr.startswith("nn2c: error: ")


def test_pipes_get_clean_json_and_no_spinner(tmp_path):
    """A real process with stdout and stderr piped (as in CI): JSON parses, stderr has no terminal codes."""
    done = subprocess.run([sys.executable, "-m", "nn2c", "compile", str(AD01), "-o", str(tmp_path / "out"), "--json",
                           "--report"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["report_files"] == ["live_bytes.png", "memory_plan.png", "report.html",
                                                        "report.md"]
    assert done.stderr == ""
