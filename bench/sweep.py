"""Sweep throughput on this machine: the same 40 candidates of examples/nas_sweep.py's search space
(seed 1) profiled by a plain serial loop in one process and by Ray (a local cluster, one task per
candidate), each into a fresh results folder (no resume, no reports).

- serial: run_sweep(use_ray=False), the evaluation called in a loop in this process;
- Ray, cold: run_sweep() starting and stopping its own local cluster (what `nn2c sweep` costs);
- Ray, warm: the same with a cluster already running (what a long search pays per candidate).
Each also reports the median and p95 profile time per candidate (inside the evaluation). Writes
the `sweep` section of docs/BENCHMARKS.md.

    python bench/sweep.py [--candidates 40] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "examples"))

from nas_sweep import SPACE  # noqa: E402
from report_file import replace_section  # noqa: E402

from nn2c.sweep import run_sweep  # noqa: E402


def _run(label: str, count: int, **kwargs) -> dict:
    space = replace(SPACE, candidates=count, seed=1)
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        result = run_sweep(space, out, progress=False, report=False, **kwargs)
        seconds = time.perf_counter() - started
    times = sorted(float(r["profile_seconds"]) for r in result.rows)
    assert result.evaluated == count and len(result.rows) == count, (result.evaluated, len(result.rows))
    row = {"label": label, "seconds": seconds, "per_s": count / seconds, "median": statistics.median(times),
           "p95": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
           "failed": len(result.failed)}
    print(f"{label}: {seconds:.1f} s, {row['per_s']:.2f} candidates/s, profile median {row['median']:.2f} s "
          f"p95 {row['p95']:.2f} s, {row['failed']} failed", flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=40)
    parser.add_argument("--workers", type=int, default=None, help="local Ray CPUs (default: all)")
    args = parser.parse_args()
    import ray

    load_before = os.getloadavg()[0]
    rows = [_run("serial loop (one process)", args.candidates, use_ray=False),
            _run("Ray, cold (starts and stops a local cluster)", args.candidates, workers=args.workers)]
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    try:
        rows.append(_run("Ray, warm (cluster already running)", args.candidates))
    finally:
        ray.shutdown()
    serial = rows[0]["seconds"]
    load_after = os.getloadavg()[0]
    lines = [f"Sweep throughput (`python bench/sweep.py --candidates {args.candidates}`): the same "
             f"{args.candidates} candidates of examples/nas_sweep.py's search space (seed 1, board stm32f746), "
             f"on this machine ({os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
             f"Ray {ray.__version__}). Wall time of run_sweep, each into a fresh folder; profile = nn2c.profile "
             "on the in-memory graph inside one evaluation. The machine is shared: 1-minute load average "
             f"{load_before:.2f} before the runs, {load_after:.2f} after. Two profiles at once on 2 cores (plus "
             "the driver, Ray's own processes and the other load) each take longer than one alone, which is why "
             "the speed-up stays under 2x: compare the profile medians.", "",
             "| run | wall time | candidates / s | speed-up vs serial | profile median | profile p95 | failed |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['label']} | {r['seconds']:.1f} s | {r['per_s']:.2f} | {serial / r['seconds']:.2f}x | "
              f"{r['median']:.2f} s | {r['p95']:.2f} s | {r['failed']} |" for r in rows]
    replace_section("sweep", "## Sweeps\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
