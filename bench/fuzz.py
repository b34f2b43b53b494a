"""Long fuzz campaign over the repo's models; writes the `fuzz` section of docs/BENCHMARKS.md.

    python bench/fuzz.py [--seconds 600] [--seed 0] [--keep DIR] [--no-write]

One campaign per format, --seconds each: the .tflite models under 400 KB and tests/assets' exports
(fuzz/tflite_mutator.py) and the ONNX seeds in models/onnx/ (fuzz/onnx_mutator.py). Every mutant
must compile or end in one nn2c error; failing mutants are kept in --keep (default: a temporary folder) to reproduce with
`nn2c compile`. Exit status 1 if any mutant failed.
"""

from __future__ import annotations

import argparse
import collections
import logging
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from report_file import replace_section  # noqa: E402

from nn2c.fuzz.campaign import CampaignResult, run_campaign  # noqa: E402

# the repo's models, plus the converter exports kept for tests (Keras RNNs as WHILE loops)
TFLITE_MODELS = sorted(p for p in (ROOT / "models").rglob("*.tflite") if p.stat().st_size < 400_000) + sorted(
    (ROOT / "tests" / "assets").rglob("*.tflite"))
ONNX_MODELS = sorted((ROOT / "models" / "onnx").glob("*.onnx"))

# What the fuzzer found, fixed at the root; each has a regression test in tests/test_fuzz.py.
FOUND = [
    "initializers whose data disagrees with their dims or type: ValueError from onnx.numpy_helper "
    "(now InvalidModelError naming the initializer)",
    "initializers of a type nn2c has no kernel for (uint16, uint4, ...): an internal exception escaped "
    "(now UnsupportedOpError)",
    "huge input or intermediate dimensions (2^31 - 1, 2^40): OverflowError or a multi-GB allocation "
    "(now InvalidModelError: tensors over 1 GiB are a corrupt shape, as in the TFLite frontend)",
    "value_info declaring a 2^31-element tensor: ONNX shape inference ran for minutes (a hang; declared "
    "shapes are now checked first)",
    "ConstantOfShape of a huge shape: MemoryError (now UnsupportedOpError over 64 MiB)",
    "QuantizeLinear / DequantizeLinear with no scale, more zero points than scales, per-channel scales "
    "that do not match the axis, or an axis out of range (silently wrapped): IndexError / ValueError in "
    "passes/qdq.py (now InvalidModelError)",
    "a Conv bias of shape [C, 1]: ValueError in passes/qdq.py (now InvalidModelError; the pass also "
    "declines such a bias)",
    "names that are not UTF-8: protobuf hands out bytes, which reached the C writer (TypeError; now "
    "InvalidModelError)",
    "BatchNormalization with variance + epsilon <= 0 and DequantizeLinear of float data: NaN weights "
    "(now InvalidModelError)",
    "external data (tensors stored in another file): resolved from the working directory by the onnx "
    "checker and numpy_helper; now refused before anything looks the file up",
]


def _rows(name: str, result: CampaignResult) -> list[str]:
    errors = ", ".join(f"{k} {v:,}" for k, v in result.errors.most_common()) or "none"
    return [f"| {name} | {result.inputs:,} | {result.compiled:,} | {result.rejected:,} ({errors}) | "
            f"{result.tracebacks} | {result.memory_errors} | {result.hangs} |"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600, help="per format (default 600)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="folder for failing mutants")
    parser.add_argument("--no-write", action="store_true", help="print the section, do not update BENCHMARKS.md")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # onnxruntime / onnx chatter on hostile models
    warnings.simplefilter("ignore", RuntimeWarning)  # numpy on NaN / inf weights; the error that follows says it
    keep = args.keep or Path(tempfile.mkdtemp(prefix="nn2c_fuzz_failures_"))
    results = {}
    for fmt, models in (("TFLite", TFLITE_MODELS), ("ONNX", ONNX_MODELS)):
        print(f"{fmt}: {len(models)} seeds, {args.seconds:g} s ...", flush=True)
        results[fmt] = run_campaign(models, seconds=args.seconds, seed=args.seed, keep_failures=keep)
    failures = [f for r in results.values() for f in r.failures]
    lines = [
        "## Fuzzing the importers",
        "",
        f"Written by `bench/fuzz.py --seconds {args.seconds:g} --seed {args.seed}` ({args.seconds / 60:g} min per "
        "format, one process, compiled in-process without the C build, 30 s limit per input, address space "
        f"capped at 8 GiB). Seeds: the {len(TFLITE_MODELS)} repo .tflite models under 400 KB and the "
        f"{len(ONNX_MODELS)} ONNX models of `models/onnx/`. TFLite mutants: flatbuffer fields overwritten in place "
        "(shapes, buffer/tensor indices, scales, zero points, quantization axes, opcode versions). ONNX mutants: "
        "protobuf fields (dims, initializer data and types, node inputs/outputs and cycles, attributes, Reshape "
        "shapes, Q/DQ scales/zero points/axes, opsets and domains, op types, hostile nodes inserted on an edge, "
        "external data). Both: byte flips and truncation.",
        "",
        "| format | inputs | compiled | rejected (by nn2c error type) | tracebacks | MemoryErrors | hangs (> 30 s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for fmt, result in results.items():
        lines += _rows(fmt, result)
    if failures:
        kinds = collections.Counter(f.split(" on ")[0] for f in failures)
        lines += ["", "Failures (reproducers in the --keep folder): "
                  + "; ".join(f"{v} x {k}" for k, v in kinds.most_common())]
    lines += ["", "Bugs the ONNX fuzzer found, fixed at the root (a regression test each in `tests/test_fuzz.py`):", ""]
    lines += [f"- {item}" for item in FOUND]
    text = "\n".join(lines)
    print(text)
    for failure in failures[:50]:
        print("FAILURE:", failure, file=sys.stderr)
    if not args.no_write:
        replace_section("fuzz", text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
