"""Run the Keras 3 zoo (tests/keras_zoo_build.py) through nn2c and write the table of docs/zoo-keras.md.

Each model is built with Keras 3 (applications / layers, seeded random weights, small inputs) and
converted by the TFLite converter to float and to full-integer int8; each .tflite is compiled at -O2,
built, run on three seeded inputs and compared with TFLite Micro (int8: bit for bit; float: within
1e-4 relative), or with LiteRT where TFLM cannot run the model (the table says why). The table gives
the converter settings, the TFLite operators, the result (or the one-line error of a refusal or of
the converter), the largest difference, the arena and the flash weights.

    python bench/keras_zoo.py                          # convert and run everything; rewrites docs/zoo-keras.md
    python bench/keras_zoo.py --models DIR             # the same, keeping the .tflite files in DIR (or reusing them)
    python bench/keras_zoo.py --only lstm_unrolled_20x8   # a subset, printed only

Needs the tensorflow venv (`make tf-venv`, or NN2C_TF_PYTHON=/path/to/python).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.keras_zoo import ATOL, RTOL, build_zoo, check_model, tf_python, tflite_operators  # noqa: E402
from tests.keras_zoo_build import parse_selection  # noqa: E402

from nn2c.errors import NN2CError  # noqa: E402


@dataclass
class Row:
    model: str
    variant: str
    settings: str
    operators: list[str]
    result: str  # "match", "mismatch", "converter failed: ...", or nn2c's refusal
    reference: str = ""
    why_not_tflm: str = ""
    max_rel: float | None = None
    max_abs: float | None = None
    arena: int | None = None
    weights: int | None = None
    seconds: float = 0.0


def run(entry: dict[str, Any], folder: Path) -> Row:
    started = time.perf_counter()
    row = Row(entry["model"], entry["variant"], entry["settings"], [], "")
    if entry["status"] != "ok":
        row.result = f"converter failed: {entry['error']}"
        return row
    path = folder / entry["file"]
    row.operators = tflite_operators(path)
    try:
        check = check_model(path, entry["input_sample"], folder / f"{path.stem}_c")
    except NN2CError as exc:
        row.result = f"refused: {str(exc).replace(str(path), path.name)}"
    else:
        row.result = "mismatch" if check.mismatches else "match"
        if not check.input_dependent:
            row.result += " (the outputs do not depend on the input)"
        row.reference, row.why_not_tflm = check.reference, check.why_not_tflm
        row.max_rel, row.max_abs = check.max_rel, check.max_abs
        row.arena, row.weights = check.arena, check.weights
    row.seconds = time.perf_counter() - started
    return row


def _diff(row: Row) -> str:
    if row.max_abs is None:
        return ""
    # int8 outputs: the largest difference in quantized steps; float: relative
    return f"{row.max_abs:g} (int)" if "int8" in row.variant and "float_io" not in row.variant else f"{row.max_rel:.1e}"


def legend(rows: list[Row]) -> str:
    """The converter settings of each variant, in full (the table names the variant)."""
    settings = {r.variant: r.settings for r in rows}
    return "\n".join(f"- `{variant}`: {text}" for variant, text in settings.items())


def table(rows: list[Row]) -> str:
    lines = ["| model | converter settings | TFLite operators | result | reference | max diff | arena B | "
             "flash weights B |",
             "|---|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        reference = "TFLM" if r.reference == "tflm" else (f"LiteRT ({r.why_not_tflm})" if r.reference else "")
        lines.append(f"| {r.model} | `{r.variant}` | {', '.join(r.operators)} | {r.result[:200]} | "
                     f"{reference} | {_diff(r)} | {r.arena or ''} | {r.weights or ''} |")
    return "\n".join(lines)


def load_or_build(folder: Path, only: str | None) -> dict[str, Any] | None:
    """The manifest of folder's conversions, converting them first where folder has none (None: no
    tensorflow venv)."""
    if (folder / "manifest.json").exists():
        manifest: dict[str, Any] = json.loads((folder / "manifest.json").read_text())
        if only:
            wanted = set(parse_selection(only))
            manifest["models"] = [r for r in manifest["models"] if (r["model"], r["variant"]) in wanted]
        return manifest
    python = tf_python()
    if not python.exists():
        print(f"keras_zoo: no tensorflow venv ({python} does not exist): run `make tf-venv` or set "
              "NN2C_TF_PYTHON", file=sys.stderr)
        return None
    return build_zoo(python, folder, only)


def document(rows: list[Row], summary: str) -> str:
    intro = (__doc__ or "").split("\n\n")[1]
    return (f"# The Keras 3 zoo\n\n{intro}\n\nWritten by `python bench/keras_zoo.py`; the models and the "
            "converter settings are in `tests/keras_zoo_build.py` (Keras definitions with seeded random weights, "
            "nothing downloaded); `tests/test_keras_zoo.py` checks a subset in CI. Float outputs match when "
            f"within {RTOL:g} relative + {ATOL:g} absolute; max diff is the largest relative difference of a "
            "float output, or the largest difference in quantized steps of an int8 output.\n\n"
            f"Converter settings:\n{legend(rows)}\n\n{summary}.\n\n{table(rows)}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="models (or MODEL:VARIANT), comma-separated, as keras_zoo_build.py takes")
    parser.add_argument("--models", type=Path, help="the folder of the conversions: reused when it holds "
                        "manifest.json, else converted into (default: a temporary folder)")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nn2c_keras_zoo_") as tmp:
        folder = args.models or Path(tmp)
        manifest = load_or_build(folder, args.only)
        if manifest is None:
            return 7
        rows = []
        for entry in manifest["models"]:
            row = run(entry, folder)
            print(f"{row.model} {row.variant}: {row.result[:140]} ({row.seconds:.0f} s)", file=sys.stderr)
            rows.append(row)
    checking = time.perf_counter() - started
    matched = sum(r.result == "match" for r in rows)
    versions = manifest["versions"]
    summary = (f"{matched} of {len(rows)} conversions compile and match (tensorflow-cpu {versions['tensorflow']}, "
               f"Keras {versions['keras']}, Python {versions['python']}; {manifest['seconds']:.0f} s converting "
               f"in tensorflow, {sum(r.seconds for r in rows):.0f} s compiling, building and comparing)")
    print(table(rows))
    print(summary, f"({checking:.0f} s in this run)")
    if not args.only:
        (ROOT / "docs" / "zoo-keras.md").write_text(document(rows, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
