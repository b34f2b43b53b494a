"""--optimize speed | balanced | size on Cortex-M: instructions and flash of each, against TFLM's flatbuffer.

For the models whose layers take the choice (int8 FULLY_CONNECTED but the row-streamed ones of a row
group; int8 LSTM and SVDF; int8 DEPTHWISE_CONV_2D whose output stage is records, on the Arm DSP), on every bench
core: compile with each --optimize level, cross-build, run seeded inputs in
QEMU (nn2c.targets.cortexm_bench, outputs checked against TFLM bit for bit; the larger memory map
where the image does not fit 512 KiB) and count instructions per inference; flash weights and code as
linked. The model's own weight bytes are the constant buffers of its .tflite (filters and biases as
TFLite stores them); beside them, the per-channel quantization arrays of those tensors (a float32 scale and an
int64 zero point each), which the file keeps outside its buffers and TFLM reads to compute the per-channel
multipliers nn2c stores. Writes the `optimize` section of docs/BENCHMARKS.md.

    python bench/optimize.py [--models ad01_int8 ...] [--targets cortex-m4 cortex-m55 cortex-m7]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from cortexm import TFLM_CMSIS, _large_memory_map  # noqa: E402
from report_file import replace_section  # noqa: E402

from nn2c.api import CompileOptions, load_model  # noqa: E402
from nn2c.errors import NN2CError  # noqa: E402
from nn2c.options import OPTIMIZE  # noqa: E402
from nn2c.targets.cortexm_bench import bench_model  # noqa: E402
from nn2c.targets.cortexm_build import missing_tools  # noqa: E402

MODELS = ["mlcommons_tiny/ad01_int8", "tinyengine/ptq_mnist_lenet-300-100", "mlcommons_tiny/kws_ref_model",
          "tflite_micro/hello_world_int8", "tflite_micro/trained_lstm_int8", "tflite_micro/keyword_scrambled_8bit",
          "mlcommons_tiny/vww_96_int8", "tflite_micro/person_detect", "tinyengine/vww"]
TARGETS = ["cortex-m4", "cortex-m55", "cortex-m7"]
TFLM_COLUMN = {"cortex-m4": 0, "cortex-m55": 1}  # TFLM_CMSIS's instructions per core


def model_weight_bytes(path: Path) -> tuple[int, int]:
    """The constant buffers of the model file as loaded (its filters and biases as TFLite stores them), and the
    per-channel quantization arrays of those tensors: 4 bytes of scale and 8 of zero point a channel."""
    graph = load_model(path)
    constants = {id(v): v for node in graph.nodes for v in node.inputs if v is not None and v.is_constant}
    buffers = sum(v.data.nbytes for v in constants.values() if v.data is not None)
    quantization = sum(4 * len(q.scale) + 8 * len(q.zero_point) for v in constants.values()
                       if (q := v.type.quant) is not None and len(q.scale) > 1)
    return buffers, quantization


def measure(model: str, target: str, optimize: str, inputs: int) -> dict:
    path = ROOT / "models" / f"{model}.tflite"
    options = CompileOptions(target=target, optimize=optimize)
    try:
        report = bench_model(path, target=target, count=inputs, seed=0, options=options)
    except NN2CError as exc:
        if "does not fit" not in str(exc):
            raise
        with _large_memory_map(target):
            report = bench_model(path, target=target, count=inputs, seed=0, options=options)
    return {"instructions": report.instructions_per_inference, "weights": report.footprint.flash_weights,
            "code": report.footprint.flash_code, "passed": report.passed(), "reference": report.reference,
            "exact": all(c.max_abs_diff == 0 for c in report.comparisons)}


def over(difference: int) -> str:
    """A signed byte difference: above the bar (+) or at / below it."""
    return f"+{difference:,}" if difference > 0 else f"{difference:,}"


def render(rows: list[dict], inputs: int) -> str:
    lines = [
        "## `--optimize`: speed, balanced, size",
        "",
        "Written by `bench/optimize.py`. Each model compiled with `--optimize speed`, `balanced` (the default) and "
        "`size`, cross-built (arm-none-eabi-gcc 12 -O2), run in QEMU on "
        f"{inputs} seeded inputs and checked against TFLM (TFLM column: bit-exact; within tolerance where a float "
        "output differs, as it does at every level of that model on that core). The choice applies on the "
        "Cortex-M targets to int8 FULLY_CONNECTED layers with constant weights: `balanced` runs nn2c_fc_s8_simd "
        "(the filter re-laid out in blocks, per-channel multipliers, shifts and 64-bit rounding constants); "
        "`speed` and `size` run nn2c_fc_s8_rows, the filter as row sums: for `speed` widened to int16 in SMLAD "
        "order on the Arm DSP (17 instructions per 16 MACs, twice the filter's flash; Helium's row sums read int8 "
        "already, so its `speed` is `balanced`), for `size` int8 in exactly the model's bytes (4 rows interleaved "
        "on the DSP), a per-tensor filter's multiplier in the parameter struct and no rounding tables. To the "
        "int8 LSTM and SVDF weights on the Arm DSP: int16 at `speed` and `balanced`, int8 at `size`. And to the "
        "Arm DSP's int8 DEPTHWISE_CONV_2D layers whose output stage is records: their filter int16 at `speed` and "
        "`balanced`, int8 at `size` (2 instructions more a tap); at `speed` those that are 3x3 at stride 1 with "
        "output rows of 12 or more (a multiple of 4) run over channel planes in scratch (nn2c_dw_planes, some "
        "1.3 KB of code), at `balanced` those with rows of 24 or more where the scratch leaves the arena as it is. "
        "At `size` also: an SVDF's feature sums take the "
        "input's zero point at run time (no folded constant per filter), a sparse layout only where smaller than "
        "the int8 rows, the weight arrays aligned to 4 bytes (16 at the other levels). Helium builds have no "
        "64-bit rounding constants at any level (only the Arm DSP's kernels read them). Flash "
        "weights and code as linked; the model's weights = the constant buffers of "
        "its .tflite (filters and biases), then the per-channel quantization arrays of those tensors (float32 "
        "scales, int64 zero points: outside the buffers; TFLM computes its per-channel multipliers from them, nn2c "
        "stores its multipliers and shifts among its weights), then the file's size. TFLM ratio = instructions / TFLM + CMSIS-NN's "
        "(shared/docs/baseline-cortexm.md). QEMU counts instructions; it does not model the M7's dual issue.",
        "",
        "| model | core | instructions speed / balanced / size | TFLM ratio speed / balanced / size "
        "| weights speed / balanced / size (B) | model's weights / per-channel quantization arrays / .tflite (B) "
        "| size weights - model's weights / - (model's weights + quantization arrays) (B) "
        "| code speed / balanced / size (B) "
        "| TFLM |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for target, runs in row["targets"].items():
            if "error" in runs:
                lines.append(f"| {row['model']} | {target} | not measured: {runs['error']} | | | | | | |")
                continue
            levels = [runs[o] for o in OPTIMIZE]
            size = runs["size"]
            tflm = TFLM_CMSIS.get(row["model"])
            column = TFLM_COLUMN.get(target)
            ratio = (" / ".join(f"{r['instructions'] / tflm[column]:.2f}" for r in levels)
                     if tflm is not None and column is not None else "-")
            lines.append(
                f"| {row['model']} | {target} | " + " / ".join(f"{r['instructions']:,.0f}" for r in levels)
                + f" | {ratio} | " + " / ".join(f"{r['weights']:,}" for r in levels)
                + f" | {row['model_weights']:,} / {row['quantization']:,} / {row['file_bytes']:,} | "
                + f"{over(size['weights'] - row['model_weights'])} / "
                + f"{over(size['weights'] - row['model_weights'] - row['quantization'])} | "
                + " / ".join(f"{r['code']:,}" for r in levels) + " | "
                + " / ".join("bit-exact" if r["exact"] else "within tolerance" for r in levels) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="model names (suffix match against the list)")
    parser.add_argument("--targets", nargs="*", default=TARGETS)
    parser.add_argument("--inputs", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/BENCHMARKS.md alone")
    args = parser.parse_args()
    missing = missing_tools()
    if missing:
        sys.exit(f"bench/optimize.py needs {', '.join(missing)} (Debian: gcc-arm-none-eabi binutils-arm-none-eabi "
                 "libnewlib-arm-none-eabi qemu-system-arm)")
    rows = []
    for model in [m for m in MODELS if not args.models or any(m.endswith(s) for s in args.models)]:
        path = ROOT / "models" / f"{model}.tflite"
        buffers, quantization = model_weight_bytes(path)
        row: dict = {"model": model, "model_weights": buffers, "quantization": quantization,
                     "file_bytes": path.stat().st_size,
                     "targets": {}}
        for target in args.targets:
            runs: dict = {}
            started = time.time()
            try:
                for optimize in OPTIMIZE:
                    runs[optimize] = measure(model, target, optimize, args.inputs)
                    if not runs[optimize]["passed"]:
                        raise NN2CError(f"--optimize {optimize}: outputs differ from {runs[optimize]['reference']}")
            except NN2CError as exc:
                runs = {"error": str(exc).splitlines()[0][:160]}
            row["targets"][target] = runs
            print(f"{model} {target}: " + ("; ".join(f"{o} {r['instructions']:,.0f} instr, {r['weights']:,} B"
                                                    for o, r in runs.items()) if "error" not in runs
                                          else runs["error"]) + f" ({time.time() - started:.0f} s)", flush=True)
        rows.append(row)
    table = render(rows, args.inputs)
    print(table)
    if not args.no_write:
        replace_section("optimize", table)


if __name__ == "__main__":
    main()
