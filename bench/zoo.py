"""Run the model zoo (tests/zoo.py) through nn2c and write the table of docs/zoo.md.

Each architecture is exported with both PyTorch exporters, compiled at -O2, built and run on three
seeded inputs, and compared with onnxruntime (float: within 1e-4 relative). The table gives the
ONNX operators of the export, the result (or the one-line error of a refusal), the largest
difference, the arena and the flash weights. The int8 columns (both exporters' files) compare nn2c's
post-training quantization with onnxruntime's quantize_static on the same calibration data: the
SQNR of each against onnxruntime's float outputs on held-out inputs, their difference (nn2c minus
onnxruntime; issue 15 asks for -1 dB or better) and the int8 model's arena.

    python bench/zoo.py                  # every model, both exporters, int8 columns; rewrites docs/zoo.md
    python bench/zoo.py --only vit       # a subset, printed only
    python bench/zoo.py --no-int8        # float columns only (about half the time)
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.zoo import EXPORTERS, ZOO, ZooModel, export, onnx_operators  # noqa: E402
from tests.zoo_int8 import (  # noqa: E402
    CALIBRATION_SAMPLES,
    EVALUATION_SAMPLES,
    TOLERANCE_DB,
    Int8Comparison,
    compare_int8,
)

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.errors import NN2CError  # noqa: E402
from nn2c.verify.compare import compare_outputs, run_compiled  # noqa: E402
from nn2c.verify.inputs import random_records  # noqa: E402
from nn2c.verify.onnx_oracle import run_onnxruntime  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


@dataclass
class Row:
    model: str
    family: str
    exporter: str
    operators: list[str]
    result: str  # "match", "mismatch", or the refusal
    max_rel: float | None = None
    arena: int | None = None
    weights: int | None = None
    int8: Int8Comparison | None = None
    int8_error: str = ""  # why the int8 comparison has no figures
    seconds: float = 0.0


def _int8(row: Row, path: Path, folder: Path) -> None:
    try:
        row.int8 = compare_int8(path, folder / f"{path.stem}_int8")
    except NN2CError as exc:
        row.int8_error = str(exc).replace(str(path), path.name).splitlines()[0][:160]


def run(entry: ZooModel, exporter: str, folder: Path, int8: bool) -> Row:
    started = time.perf_counter()
    try:
        path = export(entry, exporter, folder)
    except Exception as exc:  # the exporter itself fails: say so, nn2c never saw a model
        return Row(entry.name, entry.family, exporter, [], f"export failed: {str(exc).splitlines()[0][:120]}")
    row = Row(entry.name, entry.family, exporter, onnx_operators(path), "")
    try:
        result = compile_model(path, CompileOptions())
        records = random_records(result.graph.inputs, 3, 0)
        ours = run_compiled(result, records, folder / f"{path.stem}_c")
    except NN2CError as exc:
        row.result = str(exc).replace(str(path), path.name)
    else:
        theirs = run_onnxruntime(path, result.graph, records)
        comparisons = compare_outputs("onnxruntime", result.graph.outputs, ours, theirs, RTOL, ATOL)
        row.result = "mismatch" if any(c.mismatches for c in comparisons) else "match"
        row.max_rel = max((c.max_rel_diff for c in comparisons), default=0.0)
        row.arena, row.weights = result.arena_bytes, result.code.weight_bytes
        if int8:
            _int8(row, path, folder)
    row.seconds = time.perf_counter() - started
    return row


def _db(value: float) -> str:
    return ("exact" if value > 0 else "-inf") if math.isinf(value) else f"{value:.1f}"


def _int8_cells(r: Row) -> str:
    if r.int8 is None:
        return f"{'refused: ' + r.int8_error if r.int8_error else ''} | | | "
    q = r.int8
    return f"{_db(q.nn2c_sqnr_db)} | {_db(q.ort_sqnr_db)} | {q.difference_db:+.1f} | {q.arena}"


def table(rows: list[Row]) -> str:
    lines = ["| model | source | exporter | ONNX operators | result | max rel diff | arena B | weights B | "
             "int8 SQNR nn2c dB | int8 SQNR onnxruntime dB | difference dB | int8 arena B |",
             "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        result = r.result if r.result in ("match", "mismatch") else f"refused: {r.result[:160]}"
        lines.append(f"| {r.model} | {r.family} | {r.exporter} | {', '.join(r.operators)} | {result} | "
                     f"{'' if r.max_rel is None else f'{r.max_rel:.1e}'} | {r.arena or ''} | {r.weights or ''} | "
                     f"{_int8_cells(r)} |")
    return "\n".join(lines)


def int8_summary(rows: list[Row], seconds: float) -> str:
    measured = [r for r in rows if r.int8 is not None]
    within = [r for r in measured if r.int8 is not None and r.int8.within_rule]
    worst = min(measured, key=lambda r: r.int8.difference_db if r.int8 else 0.0, default=None)
    exports = len(measured)
    models = len({r.model for r in measured})
    text = (f"int8 (both exporters): {len(within)} of {exports} exports ({models} models) within {TOLERANCE_DB:g} dB "
            f"of onnxruntime's quantize_static or better")
    if worst is not None and worst.int8 is not None:
        text += f"; the lowest difference is {worst.int8.difference_db:+.2f} dB ({worst.model})"
    return text + f" ({seconds:.0f} s of the run)"


INT8_METHOD = f"""How the int8 columns are measured (each exporter's file, tests/zoo_int8.py): both
quantizers calibrate on the same {CALIBRATION_SAMPLES} seeded standard-normal inputs (the distribution of the
test inputs above; the weights are random, so there is no real data to draw from) and are scored on
{EVALUATION_SAMPLES} other seeded standard-normal inputs by SQNR = 10 log10(sum x^2 / sum (x - x_q)^2) over
every output element, x being onnxruntime's float output. nn2c: `--quantize int8 --calibration` with
its default range estimator, the generated C built and run. onnxruntime: `quantize_static` with
QuantFormat.QDQ, per_channel=True, QuantType.QInt8 activations (asymmetric) and weights (symmetric),
CalibrationMethod.MinMax, its default operator set, no `quant_pre_process`; the QDQ model run by
onnxruntime. Difference = nn2c minus onnxruntime."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="models whose name contains this")
    parser.add_argument("--no-int8", action="store_true", help="skip the int8 comparison with onnxruntime")
    args = parser.parse_args()
    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for entry in ZOO:
            if args.only and args.only not in entry.name:
                continue
            for exporter in EXPORTERS:
                row = run(entry, exporter, Path(tmp), not args.no_int8)
                int8 = "" if row.int8 is None else (f"; int8 {row.int8.nn2c_sqnr_db:.2f} dB against onnxruntime's "
                                                    f"{row.int8.ort_sqnr_db:.2f} dB ({row.int8.seconds:.0f} s)")
                print(f"{row.model} {row.exporter}: {row.result[:140]}{int8}{row.int8_error} ({row.seconds:.0f} s)",
                      file=sys.stderr)
                rows.append(row)
    text = table(rows)
    matched = sum(r.result == "match" for r in rows)
    total = time.perf_counter() - started
    summary = f"{matched} of {len(rows)} exports compile and match onnxruntime ({total:.0f} s in all)"
    if not args.no_int8:
        summary += ".\n\n" + int8_summary(rows, sum(r.int8.seconds for r in rows if r.int8 is not None))
    print(text)
    print(summary)
    if not args.only:
        (ROOT / "docs" / "zoo.md").write_text(
            "# The model zoo\n\n" + (__doc__ or "").split("\n\n")[1] + "\n\n"
            + ("" if args.no_int8 else INT8_METHOD + "\n\n") + "Written by `python bench/zoo.py`; "
            "the models are defined in `tests/zoo.py` (torchvision / timm definitions with seeded random weights, "
            "nothing downloaded).\n\n" + summary + ".\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
