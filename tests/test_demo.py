"""The Quickstart's first command (`make demo` = examples/demo.py): a real model compiled, built, run
and compared with TFLM, plus the report, as a new user sees it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_compiles_runs_matches_tflm_and_writes_the_report(tmp_path):
    out = tmp_path / "kws"
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py"), str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5/5 inferences bit-exact with TensorFlow Lite Micro" in done.stdout
    assert "Traceback" not in done.stderr
    assert (out / "kws_runner").is_file() and (out / "kws.c").is_file()
    html = (out / "report.html").read_text()
    arena = re.search(r"arena ([0-9,]+) B", done.stdout)
    assert arena and arena.group(1) in html  # the report shows the arena the demo printed
    assert "<img" in html and (out / "memory_plan.png").stat().st_size > 1000
