"""A TinyNAS-style search for STM32F746 (Cortex-M7, 216 MHz, 320 KB SRAM, 1 MB flash): 500 MCUNet-style
int8 candidates profiled on Ray (a local cluster), then the best one under 320 KB and under 256 KB of RAM.

    python examples/nas_sweep.py [OUTPUT_FOLDER] [--address RAY_ADDRESS]   (default: demo_out/nas_sweep)

"Best" = the most MACs among the candidates that fit: RAM (arena + state, exact) within the budget and
flash (weights exact + code estimated) within the board's 1 MB. MACs stand in for capacity (accuracy),
as in MCUNet's TinyNAS, which picks the search space whose fitting networks have the most FLOPs; the
ties break on the lower estimated latency. The sweep is resumable: run it again and it skips the
candidates in OUTPUT_FOLDER/results.csv.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from nn2c.sweep import SearchSpace, run_sweep

ROOT = Path(__file__).resolve().parent.parent
BOARD = "stm32f746"
KB = 1024
SPACE = SearchSpace(name="mcunet-f746", candidates=500, seed=0, board=BOARD,
                    resolution=(96, 112, 128, 144, 160, 176), width=(0.35, 0.5, 0.75, 1.0),
                    kernel_sizes=(3, 5, 7), expand_ratios=(3, 4, 6), depth=(1, 2, 3),
                    stages=((24, 2), (40, 2), (80, 2), (96, 1), (192, 2)), stem_channels=16, classes=2)


def best_under(rows: list[dict], ram_limit: int) -> dict | None:
    fitting = [r for r in rows if r["status"] == "ok" and int(r["ram_bytes"]) <= ram_limit
               and r["fits_flash"] == "yes"]
    return max(fitting, key=lambda r: (int(r["macs"]), -float(r["latency_ms_estimate"])), default=None)


def describe(row: dict | None, limit: int) -> str:
    if row is None:
        return f"under {limit // KB} KB: no candidate fits"
    return (f"under {limit // KB} KB: candidate {row['index']} ({row['id']}): {int(row['macs']) / 1e6:.1f} M MACs, "
            f"RAM {int(row['ram_bytes']):,} B, flash {int(row['flash_bytes_estimate']):,} B (est.), "
            f"latency {float(row['latency_ms_estimate']):.1f} ms (est.); resolution {row['resolution']}, "
            f"width {row['width']}, depths {row['depths']}, kernels {row['kernel_sizes']}, "
            f"expand {row['expand_ratios']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(ROOT / "demo_out" / "nas_sweep"))
    parser.add_argument("--address", default=None, help="an existing Ray cluster (default: a local one)")
    args = parser.parse_args()
    started = time.perf_counter()
    result = run_sweep(SPACE, args.out, address=args.address)
    seconds = time.perf_counter() - started
    ok = [r for r in result.rows if r["status"] == "ok"]
    print(f"{len(result.rows)} candidates for {BOARD} ({result.evaluated} evaluated now, {result.skipped} already "
          f"done), {len(ok)} profiled, {len(result.failed)} failed, {sum(r['fits'] == 'yes' for r in ok)} fit the "
          f"board; wall time {seconds:.1f} s")
    for limit in (320 * KB, 256 * KB):
        print(describe(best_under(result.rows, limit), limit))
    print(f"results: {result.csv}\nplot: {result.plot}\npage: {result.html}")


if __name__ == "__main__":
    main()
