"""The Quickstart demo: compile a real keyword-spotting model, build it with the host C compiler,
run it on seeded inputs and compare every output with TensorFlow Lite Micro.

    python examples/demo.py [OUTPUT_FOLDER]     (default: demo_out/kws)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from nn2c import CompileOptions, compile_model
from nn2c.report.html import write_report
from nn2c.verify.build import build, run
from nn2c.verify.inputs import random_records
from nn2c.verify.oracle import run_tflm

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "mlcommons_tiny" / "kws_ref_model.tflite"
OUT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT / "demo_out" / "kws"
LABELS = ["silence", "unknown", "yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go"]
TFLM_ARENA_M4 = 22_832  # TFLM's minimum arena for this model on Cortex-M4 (shared/docs/baseline-cortexm.md)


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main() -> int:
    print(f"1. compiling {MODEL.relative_to(ROOT)} (MLPerf Tiny keyword spotting, DS-CNN int8)")
    result = compile_model(MODEL, CompileOptions(name="kws"))
    result.write(OUT, force=True)
    write_report(result, OUT)  # report.html / report.md: per-layer table, memory plan, totals
    print(f"   -> {_shown(OUT)}/: {', '.join(sorted(f for f in result.files if '/' not in f))}")
    print(f"   static RAM: arena {result.arena_bytes:,} B + state {result.code.state_bytes:,} B "
          f"(TFLM needs a {TFLM_ARENA_M4:,} B arena on Cortex-M4); weights {result.code.weight_bytes:,} B")
    print("2. building with the host C compiler (-std=c99 -Wall -Wextra -Werror -O2)")
    exe = build(OUT, OUT / "kws_runner")
    print("3. running 5 seeded inputs through the C program and through TFLite Micro")
    records = random_records(result.graph.inputs, 5, seed=2026)
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    theirs = run_tflm(MODEL, records, len(result.graph.outputs))
    exact = 0
    for k, (mine, ref) in enumerate(zip(ours, theirs, strict=True)):
        a, b = mine[0].ravel(), ref[0].ravel()
        same = np.array_equal(a, b)
        exact += same
        top = int(np.argmax(a))
        print(f"   input {k}: nn2c says '{LABELS[top]}' (score {int(a[top])}), "
              f"TFLM says '{LABELS[int(np.argmax(b))]}'; all 12 scores identical: {same}")
    print(f"4. result: {exact}/{len(records)} inferences bit-exact with TensorFlow Lite Micro")
    print(f"   the program: {_shown(OUT / 'kws_runner')}; the report: {_shown(OUT / 'report.html')}")
    return 0 if exact == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
