"""Graph optimiser benchmark: operators, arena and flash of every repo model at -O0 and at -O2.

For every .tflite model in models/ (and two float CNNs exported from PyTorch to ONNX in this run,
with the BatchNormalization, Dropout, Identity and NCHW transposes such exports carry), compile at
-O0 (no passes) and -O2 (everything), and record: operators, arena bytes (exact planner, in-place
on), flash bytes of the weights (NAME_weights.c arrays: weights plus per-layer constant tables) and,
when arm-none-eabi-gcc is installed, flash code bytes of the generated objects for Cortex-M4.
Writes the `passes` section of docs/BENCHMARKS.md.

    python bench/passes.py [--models kws vww ...] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from report_file import replace_section  # noqa: E402

from nn2c import CompileOptions, compile_model  # noqa: E402
from nn2c.errors import NN2CError  # noqa: E402
from nn2c.targets.footprint import arm_toolchain, measure  # noqa: E402


def repo_models() -> list[Path]:
    return sorted((ROOT / "models").glob("*/*.tflite")) + sorted((ROOT / "models" / "onnx").glob("*.onnx"))


def torch_models(folder: Path) -> list[Path]:
    """Float CNNs exported from PyTorch (the test suite's SmallNet and AudioNet, seed 0)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("PyTorch is not installed (pip install torch==2.13.0): ONNX rows skipped", file=sys.stderr)
        return []
    from tests.test_onnx_torch import AudioNet, SmallNet, _export, _randomize

    # exported without the exporter's own constant folding: BatchNormalization stays in the graph
    return [_export(_randomize(SmallNet(), 0), (1, 3, 16, 16), folder / "torch_smallnet.onnx", fold=False),
            _export(_randomize(AudioNet(), 0), (1, 4, 32), folder / "torch_audionet.onnx", fold=False)]


def measure_level(path: Path, level: int) -> dict:
    # ONNX rows with channels-last I/O, as firmware feeding camera/audio buffers would take them
    options = CompileOptions(opt_level=level, plan_time_limit=20.0, nhwc_io=path.suffix == ".onnx")
    result = compile_model(path, options)
    ops: dict[str, int] = {}
    for node in result.graph.nodes:
        ops[node.op] = ops.get(node.op, 0) + 1
    row = {"ops": len(result.graph.nodes), "arena": result.arena_bytes, "weights": result.code.weight_bytes,
           "code": None, "op_types": ops}
    if arm_toolchain():
        with tempfile.TemporaryDirectory() as tmp:
            row["code"] = measure(result.write(Path(tmp) / "out"), "cortex-m4").code_bytes
    return row


def _fmt(value) -> str:
    return "-" if value is None else f"{value:,}"


def _delta(before: int | None, after: int | None) -> str:
    if not before or after is None:
        return ""
    return f" ({100.0 * (after - before) / before:+.0f}%)" if after != before else ""


def render(rows: list[dict]) -> str:
    lines = [
        "## Graph optimiser: -O0 against -O2",
        "",
        "Written by `bench/passes.py`. Per model: operators, arena bytes (exact planner, in-place on), flash",
        "bytes of weights and constant tables, and flash code bytes of the generated objects built with",
        "arm-none-eabi-gcc -O2 for Cortex-M4 (main.c excluded), with no graph passes (-O0) and all of them",
        "(-O2). The TFLite converter has already folded most of what the passes remove, so the TFLite",
        "rows change little (PAD folded into convolutions, QUANTIZE/DEQUANTIZE pairs, dead tensors); the",
        "two PyTorch exports show what an unoptimised graph carries (BatchNormalization, Dropout,",
        "Identity, NCHW transposes, Split/Concat plumbing).",
        "",
        "| model | ops -O0 | ops -O2 | arena -O0 | arena -O2 | weights -O0 | weights -O2 | code -O0 | code -O2 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | not compiled: {r['error']} |" + " |" * 7)
            continue
        a, b = r["O0"], r["O2"]
        if "error" in a or "error" in b:
            bad, level = (a, "-O0") if "error" in a else (b, "-O2")
            good = b if bad is a else a
            lines.append(f"| {r['model']} | not compiled at {level}: {bad['error']} | {good['ops']} | - | "
                         f"{_fmt(good['arena'])} | - | {_fmt(good['weights'])} | - | {_fmt(good['code'])} |")
            continue
        lines.append(
            f"| {r['model']} | {a['ops']} | {b['ops']}{_delta(a['ops'], b['ops'])} | {_fmt(a['arena'])} | "
            f"{_fmt(b['arena'])}{_delta(a['arena'], b['arena'])} | {_fmt(a['weights'])} | "
            f"{_fmt(b['weights'])}{_delta(a['weights'], b['weights'])} | {_fmt(a['code'])} | "
            f"{_fmt(b['code'])}{_delta(a['code'], b['code'])} |"
        )
    changed = [r for r in rows if "error" not in r and "error" not in r["O0"] and "error" not in r["O2"]
               and r["O0"]["op_types"] != r["O2"]["op_types"]]
    if changed:
        lines += ["", "Operator types removed or added by -O2:", ""]
        for r in changed:
            before, after = r["O0"]["op_types"], r["O2"]["op_types"]
            diff = []
            for op in sorted(set(before) | set(after)):
                d = after.get(op, 0) - before.get(op, 0)
                if d:
                    diff.append(f"{op} {d:+d}")
            lines.append(f"- {r['model']}: {', '.join(diff)}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", help="model names (substring match); default: all")
    parser.add_argument("--no-write", action="store_true", help="print only, leave docs/BENCHMARKS.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = repo_models() + torch_models(Path(tmp))
        paths = [p for p in paths if not args.models or any(s in str(p) for s in args.models)]
        for path in paths:
            name = f"{path.parent.name}/{path.stem}" if path.parent.parent.name == "models" else f"{path.stem} (ONNX)"
            started = time.time()
            row: dict = {"model": name}
            for level in (0, 2):
                try:
                    row[f"O{level}"] = measure_level(path, level)
                except NN2CError as exc:  # e.g. a QDQ model's int32 DEQUANTIZE has a kernel only after -O2
                    row[f"O{level}"] = {"error": str(exc).splitlines()[0][:80]}
            if all("error" in row[level] for level in ("O0", "O2")):
                row = {"model": name, "error": row["O2"]["error"]}
            rows.append(row)
            print(f"{name}: {row.get('O0', {}).get('ops')} -> {row.get('O2', {}).get('ops')} ops, "
                  f"{time.time() - started:.1f} s", file=sys.stderr)
    text = render(rows)
    print(text)
    if not args.no_write:
        replace_section("passes", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
