"""Long fuzz campaign over the repo's models; writes the `fuzz` section of docs/BENCHMARKS.md.

    python bench/fuzz.py [--seconds 600] [--seed 0] [--keep DIR] [--no-write] [--formats onnx] [--no-execute]
                         [--only scatter,gather]

One campaign per format, --seconds each: the .tflite models under 400 KB and tests/assets' exports
(fuzz/tflite_mutator.py); the ONNX seeds in models/onnx/ and every case of the ONNX backend node
suite (generated from the installed onnx package, tests/onnx_backend_cases.py) that nn2c compiles
(fuzz/onnx_mutator.py). Every mutant must compile or end in one nn2c error; ONNX mutants that
compile are also built with ASan + UBSan and run on random and extreme inputs in up to half of the
time (tests/onnx_backend_sanitize.py): a crash of the generated code is a failure too. Failing
mutants are kept in --keep (default: a temporary folder) to reproduce with `nn2c compile`. A
format left out with --formats keeps its row of the last run. Exit status 1 if any mutant failed.
"""

from __future__ import annotations

import argparse
import collections
import logging
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from report_file import BENCHMARKS, replace_section  # noqa: E402

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


# What campaigns of TFLite mutants found (this script's, which builds and runs them too; and a QEMU one: mutants of
# person_detect and vww_96_int8 compiled for the Cortex-M4, run in QEMU and compared with TFLM), fixed at the root;
# each has a regression test (tests/test_op_conv.py, tests/test_errors.py, tests/test_fuzz.py)
FOUND_TFLITE: list[str] = [
    "a filter scale of 1e38 on one channel (person_detect): an output multiplier of 2^30 or more, where TFLite "
    "Micro's requantisation shifts left by 31 bits or more (undefined in C++), and nn2c's capped multiplier gave "
    "outputs up to 5 away from TFLM's; now InvalidModelError naming the layer, the channel and the multiplier",
    "a DEPTHWISE_CONV_2D's bias input set to -1 (vww_96_int8): TFLite Micro's interpreter segfaults on it, which "
    "took nn2c verify and nn2c bench down with it; TFLM now runs in a child process, its crash a line of the report",
    "an operator's opcode index moved to AVERAGE_POOL_2D, its options still Conv2DOptions (kws_ref_model_float32, "
    "this script's --seed 1): the in-place analysis raised KeyError (a traceback); a pooling without Pool2DOptions is "
    "now refused (kept as tests/assets/fuzz/kws_float_average_pool_without_its_options.tflite)",
    "a depthwise layer's output shape cut to one row (person_detect): the next 1x1 convolution, declared 48x48 over "
    "a 1x48 input, read past its input (a segfault on the host, minutes in QEMU); a CONV_2D or DEPTHWISE_CONV_2D "
    "whose declared output is larger than its input, filter, strides, dilations and padding make is now refused",
]


# What the campaign seeded from the ONNX backend suite found (attribute, value and shape mutants of
# the newer operators), fixed at the root; the kept mutants are tests/assets/fuzz/onnx_*.onnx, each
# checked by tests/test_fuzz.py.
FOUND_BACKEND: list[str] = [
    "NaN constants (a Gemm alpha, a Constant's value, an initializer): written as NAN into the weights file, "
    "which did not include <math.h>, so the generated C failed to build (it is included now when needed)",
    "integer attributes out of int32 (an Attention right_window_size or an LpPool kernel_shape of 2^40): "
    "the C failed to build (-Werror=overflow in the params struct); every int32 params field is now "
    "range-checked when the lowering makes it (InvalidModelError naming the node and the field)",
    "ConvTranspose dilations of 2^31 - 1 over a 1000-tap filter: compiled, and the kernel's index "
    "arithmetic overflowed int32 (UBSan); now InvalidModelError when the dilated filter and the output "
    "span more than 32-bit indices",
    "a MaxPool kernel of 2^31 - 1 rows over 32 rows with the seed's declared output shape kept: compiled "
    "(the declared shape was taken as is), and the generated program looped over 2^31 taps per output "
    "(a hang); the window pool now checks that each output extent follows from input, kernel, stride, "
    "dilation and pads",
    "a 3-D AveragePool with a stride of 2^31 - 1: the kernel's tap positions overflowed int32 (UBSan); the "
    "window pool now refuses geometries whose positions do not fit 32 bits",
    "OneHot whose axis changed while the declared output shape was kept: the kernel read indices past their "
    "tensor (ASan); the output shape must now be the indices' shape with the depth inserted at the axis",
    "RotaryEmbedding with sin and cos caches of different batch sizes: the kernel walked both with the cos "
    "cache's strides (ASan); the caches must now have the same shape",
    "Gather / GatherND with run-time indices whose axis or batch_dims changed while the declared output "
    "shape was kept: the kernel wrote past the output (ASan); the output shape must now be what the data and "
    "indices shapes give (campaign aimed at the new run-time index operators, --only)",
    "MaxPool's Indices output with a storage_order of 2^40: the C failed to build (-Werror=overflow); "
    "storage_order must be 0 or 1",
    "an int64 constant at INT64_MIN (a mutated NegativeLogLikelihoodLoss expansion): written as "
    "-9223372036854775808LL, which C does not accept (the C failed to build); now (-9223372036854775807LL - 1)",
    "a MaxPool kernel of 2^31 - 1 rows with SAME_UPPER pads: the in-place planner listed every tap of every "
    "window (a 16 GiB array, MemoryError); it now finds each window's first input row in closed form",
    "an expanded Attention with a Q dimension of 65536: the MILP planner returned overlapping offsets "
    "(floating-point tolerance on offsets of millions of bytes) and the planner's own check raised an "
    "AssertionError; a plan that fails the check is now dropped for the checked greedy one",
]


def backend_seeds(folder: Path, only: list[str] | None = None) -> list[Path]:
    """The ONNX backend suite's applicable cases that nn2c compiles, written to folder as .onnx files
    (with `only`: the cases whose name or operator contains one of these substrings)."""
    from tests.onnx_backend_cases import applicable_cases, select

    from nn2c.api import CompileOptions, compile_model
    from nn2c.errors import NN2CError

    cases = applicable_cases()
    if only:
        chosen = {c.name for part in only for c in select(cases, part)}
        cases = [c for c in cases if c.name in chosen]
    seeds = []
    for case in cases:
        path = folder / f"{case.name}.onnx"
        path.write_bytes(case.model.SerializeToString())
        try:
            compile_model(path, CompileOptions(plan_time_limit=2.0))
        except NN2CError:
            path.unlink()
            continue
        seeds.append(path)
    return seeds


def _rows(name: str, result: CampaignResult) -> list[str]:
    errors = ", ".join(f"{k} {v:,}" for k, v in result.errors.most_common()) or "none"
    executed = f"{result.executed:,} ({result.generated_code_failures})" if result.executed else "-"
    return [f"| {name} | {result.inputs:,} | {result.compiled:,} | {result.rejected:,} ({errors}) | "
            f"{result.tracebacks} | {result.memory_errors} | {result.hangs} | {executed} |"]


def _previous_row(fmt: str) -> str | None:
    """This format's row in the current section (a campaign run with --formats leaving it out)."""
    text = BENCHMARKS.read_text() if BENCHMARKS.exists() else ""
    match = re.search(rf"^\| {fmt}( \([^)|]*\))? \|(.*)$", text.split("<!-- begin fuzz -->")[-1], re.M)
    if not match:
        return None
    row = f"| {fmt} (an earlier run) |{match.group(2)}"
    return row if row.count("|") == 9 else row + " - |"  # rows of runs before the build-and-run column


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600, help="per format (default 600)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="folder for failing mutants")
    parser.add_argument("--no-write", action="store_true", help="print the section, do not update BENCHMARKS.md")
    parser.add_argument("--formats", default="tflite,onnx", help="comma-separated: tflite, onnx (default both)")
    parser.add_argument("--no-backend-seeds", action="store_true",
                        help="ONNX seeds: only models/onnx/, not the backend suite's cases")
    parser.add_argument("--no-execute", action="store_true",
                        help="do not build and run the ONNX mutants that compile")
    parser.add_argument("--only", default=None,
                        help="backend seeds: only the cases whose name or operator contains one of these "
                             "comma-separated substrings (a campaign aimed at some operators)")
    args = parser.parse_args()
    only = [part.strip() for part in args.only.split(",") if part.strip()] if args.only else None
    logging.disable(logging.WARNING)  # onnxruntime / onnx chatter on hostile models
    warnings.simplefilter("ignore", RuntimeWarning)  # numpy on NaN / inf weights; the error that follows says it
    keep = args.keep or Path(tempfile.mkdtemp(prefix="nn2c_fuzz_failures_"))
    formats = {f.strip().lower() for f in args.formats.split(",")}
    results: dict[str, CampaignResult] = {}
    onnx_models = list(ONNX_MODELS)
    with tempfile.TemporaryDirectory(prefix="nn2c_fuzz_seeds_") as seed_dir:
        if "onnx" in formats and not args.no_backend_seeds:
            started = time.monotonic()
            backend = backend_seeds(Path(seed_dir), only)
            print(f"{len(backend)} backend cases compile ({time.monotonic() - started:.0f} s)", flush=True)
            onnx_models += backend
        execute = None
        if not args.no_execute:
            from tests.onnx_backend_sanitize import build_and_run_sanitized

            execute = build_and_run_sanitized
        for fmt, models, executor in (("TFLite", TFLITE_MODELS, execute), ("ONNX", onnx_models, execute)):
            if fmt.lower() not in formats:
                continue
            print(f"{fmt}: {len(models)} seeds, {args.seconds:g} s ...", flush=True)
            results[fmt] = run_campaign(models, seconds=args.seconds, seed=args.seed, keep_failures=keep,
                                        execute=executor)
    failures = [f for r in results.values() for f in r.failures]
    backend_count = len(onnx_models) - len(ONNX_MODELS)
    lines = [
        "## Fuzzing the importers",
        "",
        f"Written by `bench/fuzz.py --seconds {args.seconds:g} --seed {args.seed}"
        + (f" --only {','.join(only)}" if only else "") + f"` ({args.seconds / 60:g} min per "
        "format, one process, compiled in-process, 30 s limit per input, address space "
        f"capped at 8 GiB). Seeds: the {len(TFLITE_MODELS)} repo .tflite models under 400 KB; the "
        f"{len(ONNX_MODELS)} ONNX models of `models/onnx/`"
        + (f" and the {backend_count} cases of the ONNX backend node suite that nn2c compiles (generated from the "
           "installed onnx package)" if backend_count else "")
        + (f", only those whose name or operator contains {', '.join(repr(o) for o in only)} (`--only`)"
           if only and backend_count else "")
        + ". TFLite mutants: flatbuffer fields overwritten in place "
        "(shapes, buffer/tensor indices, scales, zero points, quantization axes, opcode versions). ONNX mutants: "
        "protobuf fields (dims, initializer data and types, node inputs/outputs and cycles, attributes, Reshape "
        "shapes, Q/DQ scales/zero points/axes, opsets and domains, op types, hostile nodes inserted on an edge, "
        "external data), attribute values nudged within their type (ints, floats, strings, lists), initializer "
        "and Constant values (NaN, inf, limits, out-of-range indices) and plausible input shapes. Both: byte flips "
        "and truncation. Built and run: mutants that compiled (both formats), built with ASan + UBSan and run on a "
        "random and 10 extreme records (up to half of the campaign's time; in brackets, those whose generated code "
        "failed to build, reported or crashed).",
        "",
        "| format | inputs | compiled | rejected (by nn2c error type) | tracebacks | MemoryErrors | hangs (> 30 s) "
        "| built and run (failed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fmt in ("TFLite", "ONNX"):
        if fmt in results:
            lines += _rows(fmt, results[fmt])
        elif (row := _previous_row(fmt)) is not None:
            lines.append(row)
    if failures:
        kinds = collections.Counter(f.split(" on ")[0] for f in failures)
        lines += ["", "Failures (reproducers in the --keep folder): "
                  + "; ".join(f"{v} x {k}" for k, v in kinds.most_common())]
    lines += ["", "Bugs the ONNX fuzzer found, fixed at the root (a regression test each in `tests/test_fuzz.py`):", ""]
    lines += [f"- {item}" for item in FOUND]
    lines += ["", "Found by campaigns of TFLite mutants (this one, and one run in QEMU against TFLM; a regression test "
              "each):", "", *(f"- {item}" for item in FOUND_TFLITE)]
    if FOUND_BACKEND:
        lines += ["", "Found by the campaign seeded from the backend suite (kept mutants in `tests/assets/fuzz/`, "
                  "checked by `tests/test_fuzz.py`):", "", *(f"- {item}" for item in FOUND_BACKEND)]
    text = "\n".join(lines)
    print(text)
    for failure in failures[:50]:
        print("FAILURE:", failure, file=sys.stderr)
    if not args.no_write:
        replace_section("fuzz", text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
