"""Memory benchmark: nn2c's static RAM against TensorFlow Lite Micro's minimum arena.

For every model in models/ that TFLM runs, in one run:
- TFLM's minimum arena on this (64-bit) host, by bisection with tflite-micro;
- TFLM's minimum arena on Cortex-M4 (32-bit), from shared/docs/baseline-cortexm.md (measured by the
  CEO's harness with arm-none-eabi-gcc + QEMU; the host figure where that table has none);
- nn2c's arena with TFLM's greedy planner and no in-place rules, with the exact planner and no
  in-place rules, and with everything on layer by layer (--schedule layer); the live-bytes lower
  bound (no in-place);
- the arena of the row-group schedules (memory/fusion.py): the default (--schedule auto) and
  --schedule min-ram, with the estimated extra cost and the number of groups;
- nn2c's static RAM of the default compile for --target cortex-m4: .data + .bss of the generated
  objects cross-compiled for Cortex-M4 (main.c excluded), when arm-none-eabi-gcc is installed;
- for the models that only convert float I/O: --io int8 --schedule min-ram;
- what the schedules cost, measured: the five models of the fused-execution issue built for
  Cortex-M4 with --schedule layer, auto and min-ram, run in QEMU (instructions per inference,
  outputs checked against TFLM), when the Arm toolchain and QEMU are installed.
Writes the `memory` section of docs/BENCHMARKS.md.

    python bench/memory.py [--models kws_ref_model vww_96_int8 ...] [--skip-tflm] [--no-qemu]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from report_file import replace_section  # noqa: E402
from tflm_arena import tflm_min_arena  # noqa: E402

from nn2c import CompileOptions, compile_model  # noqa: E402
from nn2c.errors import NN2CError  # noqa: E402
from nn2c.targets.footprint import arm_toolchain, measure  # noqa: E402

MODELS = [
    "mlcommons_tiny/kws_ref_model", "mlcommons_tiny/vww_96_int8", "mlcommons_tiny/pretrainedResnet_quant",
    "tflite_micro/person_detect", "tflite_micro/micro_speech_quantized", "tinyengine/vww", "tinyengine/detection",
    "mlcommons_tiny/ad01_int8", "mlcommons_tiny/str_ww_ref_model", "tflite_micro/hello_world_int8",
    "tflite_micro/keyword_scrambled", "tflite_micro/keyword_scrambled_8bit", "tflite_micro/trained_lstm_int8",
    "tflite_micro/dtln_noise_suppression", "tflite_micro/simple_add_model", "tflite_micro/micro_speech_lstm",
    "tinyengine/ptq_mnist_lenet-300-100", "tflite_micro/mobilenet_v2_quantized_1x3x224x224",
    "tinyengine/mcunetv2_large",
    "mlcommons_tiny/vww_96_float", "mlcommons_tiny/pretrainedResnet", "mlcommons_tiny/ad01_fp32",
    "tflite_micro/hello_world_float", "tflite_micro/trained_lstm",
]
# The models the acceptance geometric mean is taken over (issue: memory planner).
KEY_MODELS = MODELS[:7]
# The five models of the fused-execution issue (its geometric mean, and its goals).
FUSION_MODELS = ["mlcommons_tiny/kws_ref_model", "mlcommons_tiny/vww_96_int8", "mlcommons_tiny/pretrainedResnet_quant",
                 "tflite_micro/person_detect", "tflite_micro/micro_speech_quantized"]
# Models whose float inputs only feed a QUANTIZE (and outputs come from a DEQUANTIZE): --io int8 applies.
INT8_IO_MODELS = ["tinyengine/vww", "tinyengine/mcunetv2_large", "tinyengine/detection",
                  "tflite_micro/mobilenet_v2_quantized_1x3x224x224"]
# TFLM minimum arena on Cortex-M4, from shared/docs/baseline-cortexm.md.
TFLM_M4 = {
    "mlcommons_tiny/kws_ref_model": 22_832, "mlcommons_tiny/vww_96_int8": 100_720,
    "mlcommons_tiny/pretrainedResnet_quant": 55_008, "mlcommons_tiny/ad01_int8": 3_024,
    "tflite_micro/person_detect": 82_320, "tflite_micro/micro_speech_quantized": 6_848,
    "tinyengine/vww": 219_808, "tinyengine/mcunetv2_large": 2_602_112,
}


def measure_model(model: str, skip_tflm: bool) -> dict:
    path = ROOT / "models" / f"{model}.tflite"
    row: dict = {"model": model}
    started = time.time()
    m4 = "cortex-m4"
    greedy = compile_model(path, CompileOptions(planner="greedy", inplace=False, schedule="layer", target=m4))
    exact = compile_model(path, CompileOptions(planner="exact", inplace=False, schedule="layer", target=m4))
    layer = compile_model(path, CompileOptions(schedule="layer", target=m4))
    best = compile_model(path, CompileOptions(target=m4))  # the default: --schedule auto
    least = compile_model(path, CompileOptions(schedule="min-ram", target=m4))
    row["greedy"] = greedy.arena_bytes
    row["exact"] = exact.arena_bytes
    row["lower_bound"] = exact.code.lower_bound_no_inplace
    row["layer"] = layer.arena_bytes
    row["arena"] = best.arena_bytes
    row["groups"] = len(best.schedule.fusion.groups)
    row["cost"] = best.schedule.fusion.added_cost / best.schedule.fusion.base_cost
    row["min_ram"] = least.arena_bytes
    row["min_ram_cost"] = least.schedule.fusion.added_cost / least.schedule.fusion.base_cost
    row["state"] = best.code.state_bytes
    row["inplace_ops"] = len(best.code.inplace)
    row["ram"] = best.ram_bytes
    if model in INT8_IO_MODELS:
        int8 = compile_model(path, CompileOptions(schedule="min-ram", target=m4, io="int8"))
        row["int8_io_min_ram"] = int8.ram_bytes
        row["int8_io_cost"] = int8.schedule.fusion.added_cost / int8.schedule.fusion.base_cost
    else:
        int8 = None
    # column bands (codegen/bands.py) chosen by any of these schedules, and the MACs their halos recompute
    banded = [g for r in (best, least, int8) if r is not None for g in r.schedule.fusion.groups if g.bands]
    row["banded_groups"] = len(banded)
    row["recomputed_macs"] = sum(g.recomputed_macs for g in banded)
    row["ram_measured"] = None
    if arm_toolchain():
        with tempfile.TemporaryDirectory() as tmp:
            out = best.write(Path(tmp) / "out")
            row["ram_measured"] = measure(out, "cortex-m4").ram_bytes
    row["tflm_host"] = None if skip_tflm else tflm_min_arena(path)
    row["tflm_m4"] = TFLM_M4.get(model)
    reference = row["tflm_m4"] or row["tflm_host"]
    ram = row["ram_measured"] or row["ram"]
    row["ratio"] = ram / reference if reference else None
    row["seconds"] = time.time() - started
    return row


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return f"{value:,}"


SCHEDULES = ("layer", "auto", "min-ram")


def measure_schedules(model: str) -> dict:
    """Cortex-M4 instructions per inference of each schedule in QEMU (bit-exact with TFLM or an error)."""
    from nn2c.targets.cortexm_bench import bench_model

    row: dict = {"model": model}
    for schedule in SCHEDULES:
        options = CompileOptions(target="cortex-m4", schedule=schedule)
        report = bench_model(ROOT / "models" / f"{model}.tflite", "cortex-m4", count=2, seed=0, options=options)
        exact = report.passed() and report.reference == "tflm" and all(c.max_abs_diff == 0 for c in report.comparisons)
        row[schedule] = sum(report.instructions) / len(report.instructions)
        row[f"{schedule}_ram"] = compile_model(ROOT / "models" / f"{model}.tflite", options).arena_bytes
        row["exact"] = row.get("exact", True) and exact
    return row


def render_schedules(rows: list[dict]) -> list[str]:
    lines = ["", "### What the schedules cost, measured", "",
             "The five models above built for Cortex-M4 with each schedule and run in QEMU (instructions per "
             "inference, mean of 2 seeded inputs; outputs compared with TFLM's). The default (auto) may add at most "
             "5% to the estimated cost; the issue's bound on the measured cost is 1.10x layer by layer.", "",
             "| model | layer: arena | instructions | auto: arena | instructions | x layer | min-ram: arena | "
             "instructions | x layer | TFLM |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['layer_ram']:,} | {r['layer']:,.0f} | {r['auto_ram']:,} | {r['auto']:,.0f} | "
                     f"{r['auto'] / r['layer']:.3f} | {r['min-ram_ram']:,} | {r['min-ram']:,.0f} | "
                     f"{r['min-ram'] / r['layer']:.3f} | {'bit-exact' if r['exact'] else 'MISMATCH'} |")
    return lines


def render(rows: list[dict], schedule_rows: list[dict] | None = None) -> str:
    lines = [
        "## Memory: static RAM against TFLite Micro",
        "",
        "Written by `bench/memory.py`. nn2c RAM = .data + .bss of the generated objects built with",
        "arm-none-eabi-gcc -O2 for Cortex-M4 (arena + state tensors + any other static buffer; main.c",
        "excluded). TFLM M4 = TFLM's minimum arena on Cortex-M4 from shared/docs/baseline-cortexm.md;",
        "TFLM host = minimum arena found by bisection with the tflite-micro Python package on this",
        "x86-64 host (bigger: 64-bit pointers). The ratio divides nn2c RAM by TFLM M4 where known, else",
        "by TFLM host. Greedy / exact = nn2c's arena with TFLM's greedy-by-size planner / the exact ILP",
        "planner, both without in-place rules; LB = max live bytes without in-place rules.",
        "",
        "Every nn2c figure is for --target cortex-m4 (its SIMD kernels' scratch included). Layer = arena",
        "layer by layer (--schedule layer); arena = the default, --schedule auto: row groups (several",
        "layers run a few rows at a time, intermediates never whole) where the estimated extra cost",
        "stays within 5%; min-ram = --schedule min-ram; cost = the estimated extra instructions of that",
        "schedule (a row group recomputes no MAC; column bands, which recompute their halo columns, are",
        "weighed too: see the line under the table).",
        "",
        "| model | TFLM host | TFLM M4 | nn2c RAM (M4) | ratio | layer | arena (auto) | groups | cost | "
        "min-ram | cost | state | in-place ops | greedy | exact | LB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | not compiled: {r['error']} |" + " |" * 14)
            continue
        lines.append(
            f"| {r['model']} | {_fmt(r['tflm_host'])} | {_fmt(r['tflm_m4'])} | {_fmt(r['ram_measured'])} | "
            f"{_fmt(r['ratio'])} | {_fmt(r['layer'])} | {_fmt(r['arena'])} | {r['groups']} | "
            f"{100 * r['cost']:.1f}% | {_fmt(r['min_ram'])} | {100 * r['min_ram_cost']:.1f}% | {_fmt(r['state'])} | "
            f"{r['inplace_ops']} | {_fmt(r['greedy'])} | {_fmt(r['exact'])} | {_fmt(r['lower_bound'])} |"
        )
    banded = [r for r in rows if r.get("banded_groups")]
    lines += ["", "Column bands (a group's output split into vertical bands, each streamed by rows, the halo "
              "columns recomputed; MCUNetV2's patches with their rows streamed) chosen by the default, min-ram "
              "or --io int8 min-ram schedules above: "
              + (", ".join(f"{r['model']} ({r['banded_groups']} groups, {r['recomputed_macs']:,} MACs recomputed)"
                           for r in banded) if banded else
                 "none: on these models rows written in place over their dying input save more than narrower "
                 "windows (a band never writes in place), so every MAC is that of layer-by-layer execution.")]
    fused = [r for r in rows if r["model"] in FUSION_MODELS and r.get("ratio")]
    if len(fused) == len(FUSION_MODELS):
        geomean = math.exp(sum(math.log(r["ratio"]) for r in fused) / len(fused))
        lines += ["", f"Geometric mean of the ratio over {', '.join(m.split('/')[1] for m in FUSION_MODELS)} "
                  f"(the default schedule): **{geomean:.3f}**."]
    int8_rows = [r for r in rows if "int8_io_min_ram" in r]
    if int8_rows:
        lines += ["", "Models that only quantize their float input (and dequantize their output), compiled with "
                  "`--io int8 --schedule min-ram` (the int8 tensors exposed, see docs/user-guide.md):", "",
                  "| model | static RAM (arena + state), bytes | estimated extra cost | float I/O, layer by layer |",
                  "|---|---|---|---|"]
        lines += [f"| {r['model']} | {_fmt(r['int8_io_min_ram'])} | {100 * r['int8_io_cost']:.1f}% | "
                  f"{_fmt(r['layer'])} |" for r in int8_rows]
    key = [r["ratio"] for r in rows if r["model"] in KEY_MODELS and r["ratio"]]
    if len(key) == len(KEY_MODELS):
        geomean = math.exp(sum(math.log(x) for x in key) / len(key))
        lines += ["", f"Geometric mean of the ratio over {', '.join(m.split('/')[1] for m in KEY_MODELS)}: "
                  f"**{geomean:.3f}** (worst {max(key):.3f})."]
    compiled = [r for r in rows if "error" not in r]
    exact_at_lb = sum(1 for r in compiled if r["exact"] <= r["lower_bound"] + 15)
    lines += [f"The exact planner (no in-place) reaches the lower bound (to 16-byte alignment) on "
              f"{exact_at_lb} of {len(compiled)} compiled models."]
    if schedule_rows:
        lines += render_schedules(schedule_rows)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", help="model names (substring match); default: all")
    parser.add_argument("--skip-tflm", action="store_true", help="do not bisect TFLM's arena (fast)")
    parser.add_argument("--no-write", action="store_true", help="print only, leave docs/BENCHMARKS.md")
    parser.add_argument("--no-qemu", action="store_true", help="do not measure the schedules' cost in QEMU")
    args = parser.parse_args()
    models = [m for m in MODELS if not args.models or any(s in m for s in args.models)]
    rows = []
    for model in models:
        try:
            row = measure_model(model, args.skip_tflm)
        except NN2CError as exc:
            print(f"{model}: not compiled: {exc}", flush=True)
            rows.append({"model": model, "error": str(exc).split(": ")[-1][:80]})
            continue
        rows.append(row)
        print(f"{model}: arena {row['arena']:,} (greedy {row['greedy']:,}, exact {row['exact']:,}, "
              f"LB {row['lower_bound']:,}), RAM M4 {_fmt(row['ram_measured'])}, TFLM host "
              f"{_fmt(row['tflm_host'])}, ratio {_fmt(row['ratio'])} [{row['seconds']:.0f} s]", flush=True)
    schedule_rows = []
    from nn2c.targets.cortexm_build import missing_tools

    if not args.no_qemu and not missing_tools():
        for model in [m for m in FUSION_MODELS if m in models]:
            schedule_rows.append(measure_schedules(model))
            r = schedule_rows[-1]
            print(f"{model}: M4 instructions layer {r['layer']:,.0f}, auto {r['auto']:,.0f}, min-ram "
                  f"{r['min-ram']:,.0f}", flush=True)
    text = render(rows, schedule_rows)
    print(text)
    if not args.no_write:
        replace_section("memory", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
