"""Optional dependencies: `pip install nn2c` without extras compiles; the reference runtimes (the
`oracle` extra) are needed only to verify, and their absence is one error line with exit 7 naming
the extra to install. Also: the built wheel carries the C kernels and the Cortex-M target files.

A missing runtime is simulated in a child process that puts None in sys.modules for its modules
(the import then fails as if the package were not installed) before running nn2c's CLI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nn2c.errors import UsageError
from nn2c.targets.cortexm_bench import BenchReport, format_report
from nn2c.targets.cortexm_footprint import ImageFootprint
from nn2c.verify.oracle import INSTALL_ORACLE, MissingReferenceError, missing_references
from tests.conftest import model_path, require_cc

ROOT = Path(__file__).resolve().parent.parent
AD01 = model_path("mlcommons_tiny/ad01_int8.tflite")
CNN_ONNX = model_path("onnx/cnn_float.onnx")
TFLM, LITERT, ORT = "tflite_micro", "ai_edge_litert", "onnxruntime"
ORACLES = (TFLM, LITERT, ORT)

_RUN_CLI = """
import json, sys
blocked, args = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name in list(sys.modules):
    if name.split(".")[0] in blocked:
        del sys.modules[name]
for name in blocked:
    sys.modules[name] = None  # `import name` now fails as if the package were not installed
from nn2c.cli import main
try:
    main(args, prog_name="nn2c")
finally:
    watched = ("matplotlib", "onnx", "tflite_micro", "ai_edge_litert", "onnxruntime")
    imported = sorted({m.split(".")[0] for m, v in sys.modules.items() if v is not None} & set(watched))
    sys.stderr.write("IMPORTED " + json.dumps(imported) + "\\n")
"""


def _nn2c(args: list[str], blocked: tuple[str, ...]) -> tuple[int, str, str, list[str]]:
    """Run the CLI with `blocked` modules missing: exit code, stdout, stderr (without the probe line)
    and the watched third-party modules that were imported."""
    done = subprocess.run([sys.executable, "-c", _RUN_CLI, json.dumps(list(blocked)), json.dumps(args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    lines = done.stderr.splitlines()
    probe = [line for line in lines if line.startswith("IMPORTED ")]
    imported = json.loads(probe[-1][len("IMPORTED "):]) if probe else []
    stderr = "\n".join(line for line in lines if not line.startswith("IMPORTED "))
    return done.returncode, done.stdout, stderr, imported


def _assert_one_line_usage_error(code: int, stdout: str, stderr: str, *names: str) -> str:
    assert code == UsageError.exit_code == 7, (code, stdout, stderr)
    assert "Traceback" not in stderr and "Traceback" not in stdout, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nn2c: error: "), stderr
    assert INSTALL_ORACLE in lines[0] and "pip install 'nn2c[oracle]'" in lines[0]
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert "differ" not in stdout + stderr  # not a verification failure
    return lines[0]


def test_missing_reference_error_is_a_usage_error():
    exc = MissingReferenceError(["tflm", "litert"], nothing_to_compare=True)
    assert isinstance(exc, UsageError) and exc.exit_code == 7
    assert str(exc) == ("no reference runtime to compare the outputs with: TFLite Micro (tflite-micro) and "
                        "LiteRT (ai-edge-litert) are not installed; install the reference runtimes with: "
                        "pip install 'nn2c[oracle]'")
    assert "\n" not in str(MissingReferenceError(["onnxruntime"], "ModuleNotFoundError: x"))


def test_missing_references_sees_a_blocked_module(monkeypatch):
    assert missing_references(["tflm", "litert", "onnxruntime"]) == []  # the test environment has them
    monkeypatch.setitem(sys.modules, LITERT, None)
    assert missing_references(["tflm", "litert", "onnxruntime"]) == ["litert"]


def test_verify_tflite_without_any_reference_runtime_says_which_extra():
    code, out, err, _ = _nn2c(["verify", str(AD01)], ORACLES)
    _assert_one_line_usage_error(code, out, err, "TFLite Micro", "LiteRT", "not installed")
    assert out == ""


def test_verify_json_without_any_reference_runtime_is_the_same_error():
    code, out, err, _ = _nn2c(["verify", str(AD01), "--json", "-"], (TFLM, LITERT))
    _assert_one_line_usage_error(code, out, err, "TFLite Micro", "LiteRT")
    assert out == ""


def test_verify_onnx_without_onnxruntime_says_which_extra():
    code, out, err, _ = _nn2c(["verify", str(CNN_ONNX)], (ORT,))
    _assert_one_line_usage_error(code, out, err, "onnxruntime", "not installed")


def test_run_onnxruntime_without_onnxruntime_raises_the_usage_error(monkeypatch):
    from nn2c.api import load_model
    from nn2c.verify.onnx_oracle import run_onnxruntime

    for name in [m for m in sys.modules if m.split(".")[0] == ORT]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, ORT, None)
    with pytest.raises(MissingReferenceError, match=r"onnxruntime is not installed .*nn2c\[oracle\]"):
        run_onnxruntime(CNN_ONNX, load_model(CNN_ONNX), [])


def test_compile_needs_no_reference_runtime(tmp_path):
    for model in (AD01, CNN_ONNX):
        out_dir = tmp_path / model.stem
        code, _out, err, imported = _nn2c(["compile", str(model), "-o", str(out_dir)], ORACLES)
        assert code == 0, err
        assert (out_dir / f"{model.stem}.c").is_file() and (out_dir / "nn2c_kernels").is_dir()
        assert "error" not in err
        # pictures only with --report; no reference runtime; onnx only for an ONNX model
        assert "matplotlib" not in imported and not set(imported) & set(ORACLES), imported
        if model.suffix == ".tflite":
            assert "onnx" not in imported, imported


def test_verify_with_tflm_only_uses_it_and_says_litert_is_missing():
    require_cc()
    code, out, err, _ = _nn2c(["verify", str(AD01)], (LITERT,))
    assert code == 0, out + err
    assert "Traceback" not in err
    assert "tflm   output 0" in out and "bit-exact" in out
    assert "litert not compared: LiteRT (ai-edge-litert) is not installed" in out and INSTALL_ORACLE in out
    assert "tflm is the reference" in out


def test_verify_with_litert_only_uses_it_and_says_tflm_is_missing():
    """ad01_int8 is bit-exact with TFLM and one off LiteRT's reference kernels in places."""
    require_cc()
    code, out, err, _ = _nn2c(["verify", str(AD01), "--json", "-"], (TFLM,))
    assert code == 0, out + err
    report = json.loads(out)
    assert report["passed"] and report["missing"] == ["tflm"] and "tflm" in report["skipped"]
    assert [c["reference"] for c in report["comparisons"]] == ["litert"]
    assert report["comparisons"][0]["int_tolerance"] == 1 and report["comparisons"][0]["mismatches"] == 0
    code, out, err, _ = _nn2c(["verify", str(AD01)], (TFLM,))
    assert code == 0, out + err
    assert "tflm   not compared: TFLite Micro (tflite-micro) is not installed" in out and INSTALL_ORACLE in out
    assert "litert is the reference" in out and "MISMATCH" not in out


def _bench_report(**fields) -> BenchReport:
    return BenchReport(model=str(AD01), name="ad01_int8", target="cortex-m4", board="mps2-an386", records=2,
                       seed=0, macs=1, instructions=[100, 100], layers=[], invoke_overhead=0.0, functions={},
                       footprint=ImageFootprint(*([0] * 11)), stack_bytes=0, reference="tflm", **fields)


def test_bench_without_tflm_compares_with_the_host_build_and_says_so(tmp_path, monkeypatch):
    """The reference step of `nn2c bench` (the QEMU part needs the cross tools, tested in test_cortexm)."""
    require_cc()
    from nn2c.api import compile_model
    from nn2c.targets.cortexm_bench import _compare, _reference_outputs
    from nn2c.verify.compare import run_compiled
    from nn2c.verify.inputs import random_records

    for name in [m for m in sys.modules if m.split(".")[0] == TFLM]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, TFLM, None)
    result = compile_model(AD01)
    model_dir = result.write(tmp_path / "ad01_int8")
    records = random_records(result.graph.inputs, 2, 0)
    ours = run_compiled(result, records)
    report = _bench_report()
    theirs = _reference_outputs(AD01, records, result.graph, model_dir, tmp_path, report)
    _compare(report, result.graph, ours, theirs)
    assert report.reference == "host" and report.missing == ["tflm"] and report.passed()
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
    text = format_report(report)
    first = text.splitlines()[0]
    assert "against nn2c's own host build, not TFLM: TFLM is not installed" in first and INSTALL_ORACLE in first
    assert "could not run this model" not in text  # said once, as not installed
    payload = report.as_dict()
    assert payload["reference"] == "host" and payload["missing"] == ["tflm"]
    assert "not installed" in payload["reference_note"] and INSTALL_ORACLE in payload["reference_note"]


def test_bench_report_names_the_reference_when_tflm_ran_or_refused():
    report = _bench_report()
    assert report.as_dict()["reference"] == "tflm" and report.as_dict()["reference_note"] == "TFLM"
    refused = _bench_report(skipped={"tflm": "RuntimeError: hybrid"})
    refused.reference = "host"
    text = format_report(refused)
    assert "nn2c's own host build (TFLM could not run the model)" in text and "RuntimeError: hybrid" in text
    assert refused.as_dict()["missing"] == []


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
                    reason="SKIPPED LOUDLY: the Cortex-M cross tools are not installed")
def test_bench_cli_without_tflm_says_the_reference_was_the_host_build():
    code, out, err, _ = _nn2c(["bench", str(AD01), "--inputs", "1", "--json"], (TFLM,))
    assert code == 0, err
    payload = json.loads(out)
    assert payload["reference"] == "host" and payload["missing"] == ["tflm"]
    code, out, err, _ = _nn2c(["bench", str(AD01), "--inputs", "1"], (TFLM,))
    assert code == 0, err
    assert "not TFLM: TFLM is not installed" in out and INSTALL_ORACLE in out


# --- packaging -------------------------------------------------------------------------------------------

def _package_data() -> dict[str, list[str]]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]["package-data"]


def test_every_package_data_pattern_matches_files():
    for package, patterns in _package_data().items():
        folder = ROOT / "src" / Path(*package.split("."))
        for pattern in patterns:
            assert list(folder.glob(pattern)), f"package-data {package}: {pattern} matches no file in {folder}"


def _data_files() -> list[str]:
    """Every file under src/nn2c that is not Python: what the wheel must carry as package data."""
    src = ROOT / "src"
    return sorted(str(p.relative_to(src)) for p in (src / "nn2c").rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts)


def test_built_wheel_has_the_kernels_and_the_cortexm_files(tmp_path):
    pytest.importorskip("setuptools", reason="SKIPPED LOUDLY: setuptools is needed to build the wheel")
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "pyproject.toml", project)
    shutil.copy(ROOT / "README.md", project)
    shutil.copytree(ROOT / "src" / "nn2c", project / "src" / "nn2c",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist"), str(project)], capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "dist").glob("nn2c-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = _data_files()
    assert any(n.startswith("nn2c/kernels/") and n.endswith(".c") for n in data)
    assert any(n.startswith("nn2c/targets/cortexm/") and n.endswith(".ld") for n in data)
    assert not [n for n in data if n not in names], "missing from the wheel"
    assert "nn2c/targets/cortexm/__init__.py" in names and "nn2c/cli.py" in names
