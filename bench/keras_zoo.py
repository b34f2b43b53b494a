"""Run the Keras zoo (tests/keras_zoo_build.py) through nn2c and write the table of docs/zoo-keras.md.

Each model is built with Keras 3 (applications / layers, seeded random weights, small inputs; one
LSTM with Keras 2, the tf_keras package) and converted by the TFLite converter to float and to
full-integer int8; each .tflite is compiled at -O2, built, run on three seeded inputs and compared
with TFLite Micro (int8: bit for bit; float: within 1e-4 relative), or with LiteRT where TFLM cannot
run the model (the table says why). The table gives the converter settings, the TFLite operators,
the result (or the one-line error of a refusal or of the converter), the largest difference, the
arena and the flash weights.

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
from importlib import metadata
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
        if entry.get("known_issue"):
            row.result += f" ({entry['known_issue']})"
        return row
    path = folder / entry["file"]
    row.operators = tflite_operators(path)
    try:
        check = check_model(path, entry["input_sample"], folder / f"{path.stem}_c")
    except NN2CError as exc:
        row.result = f"refused: {str(exc).replace(str(path), path.name)}"
    else:
        row.result = "mismatch" if check.mismatches else "match"
        if check.mismatches and _litert_judged_int8(row.variant, check.reference):
            row.result += " (LiteRT judged: see the note on its int8 rounding)"
        if not check.input_dependent:
            row.result += " (the outputs do not depend on the input)"
        row.reference, row.why_not_tflm = check.reference, check.why_not_tflm
        row.max_rel, row.max_abs = check.max_rel, check.max_abs
        row.arena, row.weights = check.arena, check.weights
    row.seconds = time.perf_counter() - started
    return row


def _litert_judged_int8(variant: str, reference: str) -> bool:
    return reference == "litert" and variant.startswith("int8")


RECURRENT_NOTE = (
    "Recurrent layers: Keras 3 exports GRU and LSTM layers as WHILE loops (gru_20x8, lstm_20x8), and their "
    "int8 conversions crash the TFLite converter: since TF 2.14 the WHILE frees an output that is the same "
    "tensor as a loop-body input (the input sequence), and the calibrator then reads it (tensorflow/tensorflow "
    "issues #62281 and #75140). Converting a `tf.function` concrete function with a fixed batch-1 input "
    "signature instead (`from_concrete_functions`, variables frozen) crashes the same way, and so does a "
    "Keras 2 (`tf_keras`) GRU, still a WHILE loop. What converts: `unroll=True` (gru_unrolled_20x8, "
    "lstm_unrolled_20x8), and an LSTM built with Keras 2 (`import tf_keras`, lstm_fused_20x8), which the "
    "converter fuses into the UNIDIRECTIONAL_SEQUENCE_LSTM builtin, as TFLite Micro users export int8 LSTMs. "
    "TFLM does not return on the float WHILE models (it gets 60 s), so LiteRT judges them." +
    " Or let nn2c quantize the float WHILE export itself: `nn2c compile gru_20x8_float.tflite -o out --quantize int8 --calibration data.npy --write-tflite gru_int8.tflite` unrolls the loop, stores each weight once, and TFLM runs the written int8 file bit-exact with nn2c's C (tests/test_keras_zoo.py; output SQNR against float: 45.1 dB gru_20x8, 45.7 dB lstm_20x8, on 16 random calibration inputs).")

LITERT_INT8_NOTE = (
    "LiteRT's int8 rounding: where TFLM cannot run an int8 model, LiteRT's reference kernels judge it, and "
    "they are not bit-exact with TFLM: the FULLY_CONNECTED of ai-edge-litert {litert} requantizes with one "
    "rounding (as TFLite built with TFLITE_SINGLE_ROUNDING does) where TFLM, and nn2c after it, round twice "
    "(a rounding doubling high multiply, then a rounding shift). transformer_relu_16x24 `int8`, which both run, shows it: LiteRT is one step off "
    "TFLM from its first FULLY_CONNECTED on, while nn2c equals TFLM. transformer_16x24 `int8` differs from "
    "it only by its GELU (TFLM has no GELU kernel), whose table in nn2c gives LiteRT's GELU output for "
    "every GELU input of the three records; its one-step differences come from the operators it shares with "
    "the ReLU model.")


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


def notes(rows: list[Row]) -> str:
    """What the failing and LiteRT-judged rows need said beyond one table cell."""
    paragraphs = []
    if any(r.model in ("gru_20x8", "lstm_20x8", "lstm_fused_20x8") for r in rows):
        paragraphs.append(RECURRENT_NOTE)
    if any(r.result.startswith("mismatch") and _litert_judged_int8(r.variant, r.reference) for r in rows):
        try:
            litert = metadata.version("ai-edge-litert")
        except metadata.PackageNotFoundError:
            litert = "(version unknown)"
        paragraphs.append(LITERT_INT8_NOTE.format(litert=litert))
    return "".join(f"\n{p}\n" for p in paragraphs)


def document(rows: list[Row], summary: str) -> str:
    intro = (__doc__ or "").split("\n\n")[1]
    return (f"# The Keras zoo\n\n{intro}\n\nWritten by `python bench/keras_zoo.py`; the models and the "
            "converter settings are in `tests/keras_zoo_build.py` (Keras definitions with seeded random weights, "
            "nothing downloaded); `tests/test_keras_zoo.py` checks a subset in CI. Float outputs match when "
            f"within {RTOL:g} relative + {ATOL:g} absolute; max diff is the largest relative difference of a "
            "float output, or the largest difference in quantized steps of an int8 output.\n\n"
            f"Converter settings:\n{legend(rows)}\n\n{summary}.\n\n{table(rows)}\n{notes(rows)}")


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
    keras2 = f", tf-keras {versions['tf_keras']}" if "tf_keras" in versions else ""
    summary = (f"{matched} of {len(rows)} conversions compile and match (tensorflow-cpu {versions['tensorflow']}, "
               f"Keras {versions['keras']}{keras2}, Python {versions['python']}; {manifest['seconds']:.0f} s converting "
               f"in tensorflow, {sum(r.seconds for r in rows):.0f} s compiling, building and comparing)")
    print(table(rows))
    print(summary, f"({checking:.0f} s in this run)")
    if not args.only:
        (ROOT / "docs" / "zoo-keras.md").write_text(document(rows, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
