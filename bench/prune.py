"""Structured pruning benchmark: half of every convolution's filters zeroed, dense compile against pruned.

For each model: zero the 50% of filters with the smallest L1 norm in every CONV_2D and
DEPTHWISE_CONV_2D (patching the weight bytes of the .tflite, tests/test_prune_structured.py's
zero_filters_by_l1), compile the original and the zeroed model at -O2, and count MACs (ir.cost),
arena bytes (the exact planner) and weight bytes of each compile; then run the zeroed model's C
on seeded inputs against TFLM running the same zeroed .tflite (integer outputs must be identical).
The MAC and arena savings come from passes/prune_channels.py; TFLM runs the zeroed model dense.
Writes the `prune` section of docs/BENCHMARKS.md.

    python bench/prune.py [--models mlcommons_tiny/kws_ref_model ...] [--records 4] [--no-write]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from report_file import replace_section  # noqa: E402
from tests.conftest import model_path  # noqa: E402
from tests.test_prune_structured import zero_filters_by_l1  # noqa: E402

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.ir.cost import macs  # noqa: E402
from nn2c.passes.pipeline import PIPELINES  # noqa: E402
from nn2c.verify.compare import verify_model  # noqa: E402

MODELS = ["mlcommons_tiny/kws_ref_model", "mlcommons_tiny/vww_96_int8", "tflite_micro/person_detect",
          "mlcommons_tiny/pretrainedResnet_quant", "mlcommons_tiny/vww_96_float"]


@contextlib.contextmanager
def without_pruning() -> Iterator[None]:
    """The -O2 pipeline without prune-channels: the dense compile, as before the pass existed."""
    saved = PIPELINES[2]
    PIPELINES[2] = [(name, run) for name, run in saved if name != "prune-channels"]
    try:
        yield
    finally:
        PIPELINES[2] = saved


def _tflm(path: Path, records: int, workdir: Path) -> str:
    report = verify_model(path, count=records, seed=0, references=("tflm",), workdir=workdir,
                          float_rtol=0.0, float_atol=0.0)  # float outputs too must be identical
    if "tflm" in report.skipped:
        return f"not run: {report.skipped['tflm']}"
    bad = sum(c.mismatches for c in report.comparisons)
    return f"bit-exact ({records} inputs)" if bad == 0 else f"{bad} values differ"


def measure(model: str, records: int, workdir: Path) -> dict:
    dense_path = model_path(f"{model}.tflite")
    pruned_path = workdir / f"{Path(model).name}_zeroed50.tflite"
    zero_filters_by_l1(dense_path, pruned_path)
    row: dict = {"model": model}
    with without_pruning():
        runs = [("dense", dense_path, compile_model(dense_path, CompileOptions(opt_level=2)))]
    runs += [("original", dense_path, compile_model(dense_path, CompileOptions(opt_level=2))),
             ("pruned", pruned_path, compile_model(pruned_path, CompileOptions(opt_level=2)))]
    for kind, _, result in runs:
        row[f"macs_{kind}"] = sum(macs(n) for n in result.graph.nodes)
        row[f"arena_{kind}"] = result.arena_bytes
        row[f"weights_{kind}"] = result.code.weight_bytes
        stats = result.passes.per_pass.get("prune-channels") if result.passes is not None else None
        notes = stats.notes if stats is not None else []
        row[f"note_{kind}"] = notes[0] if notes else "nothing removed"
    row["tflm"] = _tflm(pruned_path, records, workdir / f"{Path(model).name}_c")
    if row["macs_original"] != row["macs_dense"]:  # the pass changed the published model too: check it
        row["tflm_original"] = _tflm(dense_path, records, workdir / f"{Path(model).name}_orig_c")
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "## Structured pruning: 50% of the filters zeroed",
        "",
        "Written by `bench/prune.py`. Every CONV_2D and DEPTHWISE_CONV_2D has the half of its filters with",
        "the smallest L1 norm set to zero (no fine-tuning: this measures the compiler, not accuracy). The",
        "dense columns compile the original model at -O2 without `prune-channels`, the pruned columns the",
        "zeroed one at -O2, where `prune-channels` (passes/prune_channels.py) removes channels whose filters",
        "are zero and channels nothing reads, folding constant channels into the next biases (a constant",
        "equal to the zero point goes through padding too). MACs from `ir.cost`, arena from",
        "the exact planner. The last column compares the zeroed model's C with TFLM running the same",
        "zeroed .tflite dense. Channels that feed a padded kxk convolution, a residual ADD or a graph",
        "output stay dense. vww_96_int8's arena is mostly its 96x96x3 input, which no pruning shrinks.",
        "Float layers lose only channels nothing reads (a float constant is never folded into a bias:",
        "that would reorder float additions), so the zeroed float model keeps its MACs.",
        "",
        "| model | MACs dense | MACs pruned | ratio | arena dense | arena pruned | ratio | weights dense | "
        "weights pruned | TFLM |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['macs_dense']:,} | {r['macs_pruned']:,} | {r['macs_pruned'] / r['macs_dense']:.2f}x "
            f"| {r['arena_dense']:,} | {r['arena_pruned']:,} | {r['arena_pruned'] / r['arena_dense']:.2f}x "
            f"| {r['weights_dense']:,} | {r['weights_pruned']:,} | {r['tflm']} |")
    lines += ["", "Notes of the pass on the zeroed models (`nn2c compile --passes-report`):", ""]
    lines += [f"- {r['model']}: {r['note_pruned']}" for r in rows]
    published = [r for r in rows if "tflm_original" in r]
    if published:
        lines += ["", "Some published models already have all-zero filters; -O2 now removes them too (the",
                  "original model, compiled with and without the pass):", "",
                  "| model | MACs without | MACs with | arena without | arena with | TFLM |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['model']} | {r['macs_dense']:,} | {r['macs_original']:,} | {r['arena_dense']:,} "
                  f"| {r['arena_original']:,} | {r['tflm_original']} |" for r in published]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--records", type=int, default=4)
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/BENCHMARKS.md alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(m, args.records, Path(tmp)) for m in args.models]
    text = table(rows)
    print(text)
    if not args.no_write:
        replace_section("prune", text)
    verdicts = [r["tflm"] for r in rows] + [r["tflm_original"] for r in rows if "tflm_original" in r]
    return 0 if all(v.startswith(("bit-exact", "not run")) for v in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
