"""Cortex-M benchmark: nn2c's generated C on emulated Cortex-M4F, Cortex-M55 and Cortex-M7, against TFLM.

For every model x core: compile with nn2c, cross-build with arm-none-eabi-gcc -O2, run seeded
inputs in qemu-system-arm, check the outputs against TFLM (bit-exact for integer outputs), and
count instructions, loads and stores per inference with the project's QEMU plugin
(nn2c.targets.cortexm_bench; each LDM/LDRD element counted, as the TFLM baseline was). The cycle
proxy is instructions + memory accesses on Cortex-M4 (a load or store costs at least one more
cycle there); M55 memory accesses are not compared (QEMU's Helium helpers access memory per
element); M7 is reported without a TFLM baseline (and QEMU does not model its dual issue).
TFLM + CMSIS-NN figures are copied from shared/docs/baseline-cortexm.md (tflite-micro 90b983c,
CMSIS-NN 4ab83cc, arm-none-eabi-gcc 12.2 -O2, QEMU 7.2, counted the same way between two marker
functions around one Invoke()). Writes the `cortexm` section of docs/BENCHMARKS.md.

    python bench/cortexm.py [--models ad01_int8 kws_ref_model ...] [--targets cortex-m4 cortex-m55 cortex-m7]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from report_file import replace_section  # noqa: E402

from nn2c.errors import NN2CError  # noqa: E402
from nn2c.target import bench_targets  # noqa: E402
from nn2c.targets import cortexm  # noqa: E402
from nn2c.targets.cortexm_bench import bench_model  # noqa: E402
from nn2c.targets.cortexm_build import large_memory_script, missing_tools  # noqa: E402
from nn2c.targets.cortexm_footprint import ImageFootprint  # noqa: E402

MODELS = [
    "mlcommons_tiny/kws_ref_model", "mlcommons_tiny/vww_96_int8", "mlcommons_tiny/pretrainedResnet_quant",
    "mlcommons_tiny/ad01_int8", "tflite_micro/person_detect", "tflite_micro/micro_speech_quantized",
    "tinyengine/vww", "tinyengine/mcunetv2_large",
    "mlcommons_tiny/str_ww_ref_model", "tflite_micro/hello_world_int8", "tflite_micro/hello_world_float",
    "tflite_micro/keyword_scrambled_8bit", "tflite_micro/trained_lstm_int8", "tinyengine/ptq_mnist_lenet-300-100",
]
TARGETS = ["cortex-m4", "cortex-m55", "cortex-m7"]

# TFLM + CMSIS-NN instructions per inference (M4, M55), TFLM reference kernels on M4, and TFLM +
# CMSIS-NN code bytes (M4, without model data), from shared/docs/baseline-cortexm.md.
TFLM_CMSIS = {
    "mlcommons_tiny/kws_ref_model": (7_697_707, 1_813_505, 43_112_701, 56_234),
    "mlcommons_tiny/vww_96_int8": (24_101_476, 6_557_874, 100_482_078, 56_234),
    "mlcommons_tiny/pretrainedResnet_quant": (29_864_825, 4_913_051, 107_487_721, 53_982),
    "mlcommons_tiny/ad01_int8": (582_878, 149_903, 1_954_058, 30_817),
    "tflite_micro/person_detect": (22_927_983, 6_507_644, 95_891_966, 46_170),
    "tflite_micro/micro_speech_quantized": (1_495_321, 1_008_155, 9_314_561, 46_930),
    "tinyengine/vww": (48_625_983, 11_959_599, 189_310_018, 60_525),
    "tinyengine/mcunetv2_large": (862_751_973, 315_833_729, 2_868_196_025, 65_201),
}
# TFLM + CMSIS-NN loads + stores per inference on Cortex-M4 (each LDM/LDRD element counted), from the
# memory-access table of shared/docs/baseline-cortexm.md
TFLM_CMSIS_MEMORY = {
    "mlcommons_tiny/kws_ref_model": 1_913_139,
    "mlcommons_tiny/vww_96_int8": 6_110_133,
    "mlcommons_tiny/pretrainedResnet_quant": 9_208_339,
    "mlcommons_tiny/ad01_int8": 135_735,
    "tflite_micro/person_detect": 5_815_453,
    "tflite_micro/micro_speech_quantized": 534_238,
    "tinyengine/vww": 13_084_522,
    "tinyengine/mcunetv2_large": 239_824_757,
}
# the models of the acceptance criterion (issue 6): geometric means of the ratios are over these
ACCEPTANCE = ["mlcommons_tiny/kws_ref_model", "mlcommons_tiny/vww_96_int8", "mlcommons_tiny/pretrainedResnet_quant",
              "mlcommons_tiny/ad01_int8", "tflite_micro/person_detect", "tinyengine/vww"]


@contextlib.contextmanager
def _large_memory_map(target: str) -> Iterator[None]:
    """The bench image's linker script with room for big models (tinyengine/vww's 600 KB of weights
    do not fit its 512 KiB of code memory): cortexm_build.large_memory_script, the memory map of
    `nn2c bench --board`. The bench's own script (nn2c.targets.cortexm) stays as it is."""
    original = cortexm.data_text

    def text(name: str) -> str:
        script = original(name)
        return large_memory_script(script, target) if name == cortexm.LINKER_SCRIPT else script

    cortexm.data_text = text
    try:
        yield
    finally:
        cortexm.data_text = original


def measure(model: str, targets: list[str], inputs: int) -> dict:
    row: dict = {"model": model, "runs": {}, "error": None, "large_memory": []}
    started = time.time()
    for target in targets:
        path = ROOT / "models" / f"{model}.tflite"
        try:
            try:
                # compiled for the bench target: its DSP / MVE kernels
                report = bench_model(path, target=target, count=inputs, seed=0)
            except NN2CError as exc:
                if "does not fit" not in str(exc):
                    raise
                with _large_memory_map(target):
                    report = bench_model(path, target=target, count=inputs, seed=0)
                row["large_memory"].append(target)
        except NN2CError as exc:
            row["error"] = str(exc).splitlines()[0].split(" (first at")[0][:200]
            break
        if not report.passed():
            row["error"] = f"outputs differ from {report.reference} on {target}"
            break
        row["runs"][target] = report
        print(f"  {target}: {report.instructions_per_inference:,} instructions, "
              f"{report.memory_accesses_per_inference:,} loads+stores, "
              f"{report.reference} {'bit-exact' if all(c.max_abs_diff == 0 for c in report.comparisons) else 'ok'}",
              flush=True)
    row["seconds"] = time.time() - started
    return row


def _n(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def render(rows: list[dict], targets: list[str], inputs: int) -> str:
    lines = [
        "## Cortex-M (emulated): instructions, memory accesses per inference and footprint",
        "",
        "Written by `bench/cortexm.py`: each model compiled with `--target cortex-m4` (Arm DSP kernels: SMLAD) "
        "and `--target cortex-m55` (Helium MVE kernels: VMLADAVA), kernels/nn2c_simd.c; arm-none-eabi-gcc 12 -O2, "
        f"run in qemu-system-arm 7.2 (Cortex-M4F = mps2-an386, Cortex-M55 = mps3-an547, Cortex-M7 = mps2-an500) on {inputs} seeded "
        "inputs, outputs checked against TFLM (bit-exact for integer outputs). Instructions are counted by the "
        "project's QEMU plugin from the first instruction of `bench_begin()` to the first of `bench_end()` around "
        "one `NAME_invoke()` (mean over the inputs). Instruction counts, not cycles. MACs are those of the "
        "compiled graph: -O2's prune-channels removes the all-zero filters vww_96_int8 ships with (7,489,664 MACs "
        "as published, 3,733,073 compiled), so its instructions per MAC count only the MACs that remain.",
        "",
        "TFLM + CMSIS-NN columns: shared/docs/baseline-cortexm.md (tflite-micro 90b983c, CMSIS-NN 4ab83cc, same "
        "compiler, QEMU and counting method). Ratio = nn2c / TFLM+CMSIS-NN (below 1 = nn2c needs fewer "
        "instructions). Flash code = the model's code and parameter structs (NAME.c + kernels) after "
        "--gc-sections on Cortex-M4, without libc helpers (memcpy/memset/libm, shared with the harness), split "
        "into the instructions with the kernels' constant tables, and the layers' descriptions (NAME.c's read-only "
        "data: parameter structs, loop and band tables; what TFLM reads from the flatbuffer and computes into its "
        "arena at start-up). "
        "TFLM code = its runtime, kernels, CMSIS-NN and libc, without the model (the flatbuffer). Code ratio = nn2c's "
        "code on the same terms, instructions and kernel tables + the libc helpers in the image, over TFLM's. Weights = NAME_weights.c "
        "(re-laid-out filters, folded biases, per-channel constants); RAM = .data + .bss of the model (arena + "
        "state) on Cortex-M4.",
        "",
        "| model | MACs | M4 instructions | M4 instr/MAC | M55 instructions | M55 instr/MAC | flash code | "
        "of which instructions / layers | flash weights | RAM | TFLM+CMSIS-NN M4 / M55 | ratio M4 / M55 | "
        "TFLM+CMSIS-NN code | code ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    skipped = []
    large: list[str] = []
    ratios: dict[str, list[float]] = {"cortex-m4": [], "cortex-m55": []}
    code_ratios: dict[str, float] = {}
    for row in rows:
        runs = row["runs"]
        if not runs:
            skipped.append(f"- {row['model']}: {row['error']}")
            continue
        base = TFLM_CMSIS.get(row["model"], (None, None, None, None))
        r4, r55 = runs.get("cortex-m4"), runs.get("cortex-m55")
        any_run = r4 or r55
        fp = any_run.footprint
        i4 = r4.instructions_per_inference if r4 else None
        i55 = r55.instructions_per_inference if r55 else None
        q4 = i4 / base[0] if i4 and base[0] else None
        q55 = i55 / base[1] if i55 and base[1] else None
        if row["model"] in ACCEPTANCE:
            for target, q in (("cortex-m4", q4), ("cortex-m55", q55)):
                if q is not None:
                    ratios[target].append(q)
        q_code = code_ratio(fp, base[3])
        if q_code is not None:
            code_ratios[row["model"]] = q_code
        lines.append(" | ".join([
            f"| {row['model']}", _n(any_run.macs), _n(i4), _n(r4.instructions_per_mac if r4 else None, 2),
            _n(i55), _n(r55.instructions_per_mac if r55 else None, 2), _n(fp.flash_code),
            f"{_n(fp.flash_code - fp.flash_layers)} / {_n(fp.flash_layers)}", _n(fp.flash_weights),
            _n(fp.ram_model), f"{_n(base[0])} / {_n(base[1])}", f"{_n(q4, 2)} / {_n(q55, 2)}",
            _n(base[3]), _n(q_code, 3) + " |",
        ]))
        if row["error"]:
            skipped.append(f"- {row['model']} (partly): {row['error']}")
        if row.get("large_memory"):
            large.append(f"{row['model']} ({', '.join(row['large_memory'])})")
    g4, g55 = _geomean(ratios["cortex-m4"]), _geomean(ratios["cortex-m55"])
    lines += ["", f"Geometric mean of the ratios over the measured acceptance models "
              f"({len(ratios['cortex-m4'])} on M4, {len(ratios['cortex-m55'])} on M55): "
              f"M4 {_n(g4, 3)}, M55 {_n(g55, 3)}."]
    if code_ratios:
        worst = max(code_ratios, key=code_ratios.__getitem__)
        lines += ["", f"Code ratio over the {len(code_ratios)} models with a TFLM figure: at most "
                  f"{_n(code_ratios[worst], 3)} ({worst}); the layers' descriptions count as the model's data, as "
                  "the flatbuffer does on TFLM's side."]
    if large:
        lines += ["", "Too big for the bench image (512 KiB of code memory, 512 KiB of RAM), measured with a larger "
                  "memory map (Cortex-M4: the board's 4 MiB of code memory and of RAM; Cortex-M55: weights and "
                  "inputs in DDR at 0x60000000, RAM in the 4 MiB SRAM at 0x21000000; bench/cortexm.py "
                  f"`_large_memory_map`): {', '.join(large)}."]
    lines += _memory_table(rows)
    if "cortex-m7" in targets:
        lines += _m7_table(rows)
    if skipped:
        lines += ["", "Not measured:", *skipped]
    return "\n".join(lines)


def code_ratio(fp: ImageFootprint, tflm_code: int | None) -> float | None:
    """nn2c's code on TFLM's terms (its instructions and kernel tables, and the libc helpers in the image; the
    layers' descriptions are the model's, as the flatbuffer is TFLM's) over TFLM + CMSIS-NN's runtime code."""
    if not tflm_code:
        return None
    return (fp.flash_code - fp.flash_layers + fp.flash_libraries) / tflm_code


def _memory_table(rows: list[dict]) -> list[str]:
    """Cortex-M4 loads + stores and the cycle proxy against TFLM + CMSIS-NN, and where the layers stand."""
    lines = [
        "",
        "### Cortex-M4 memory traffic, cycle proxy and lower bound",
        "",
        "Loads and stores per inference on Cortex-M4, counted by the same plugin in the same window (each element of "
        "LDM/STM/LDRD/STRD/PUSH/POP counted, as shared/docs/baseline-cortexm.md counted TFLM + CMSIS-NN). Cycle proxy = "
        "instructions + loads + stores (on a real M4 a load or store costs at least one more cycle than its issue); "
        "proxy ratio = nn2c's proxy / TFLM + CMSIS-NN's. Bound = the sum over layers of nn2c.targets.bounds' lower "
        "bound (MACs / 2 for SMLAD + one load per 8 bytes read + one store per 8 bytes written + 2 instructions of "
        "requantisation per output; docs/user-guide.md, `nn2c bench`); x bound = measured / bound. Cortex-M55 "
        "accesses are not compared: QEMU's Helium helpers access memory per element (a 16-byte VLDRB counts 16 loads).",
        "",
        "| model | M4 loads | M4 stores | M4 loads+stores | TFLM+CMSIS-NN M4 loads+stores | ratio | "
        "M4 instr + loads+stores | TFLM+CMSIS-NN instr + loads+stores | proxy ratio | M4 bound/MAC | x bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    memory_ratios, proxy_ratios = [], []
    for row in rows:
        r4 = row["runs"].get("cortex-m4")
        if r4 is None:
            continue
        memory = r4.memory_accesses_per_inference
        base_memory = TFLM_CMSIS_MEMORY.get(row["model"])
        base_instructions = TFLM_CMSIS.get(row["model"], (None,))[0]
        proxy = r4.instructions_per_inference + memory
        base_proxy = base_instructions + base_memory if base_memory and base_instructions else None
        q_memory = memory / base_memory if base_memory else None
        q_proxy = proxy / base_proxy if base_proxy else None
        if row["model"] in ACCEPTANCE and q_memory is not None and q_proxy is not None:
            memory_ratios.append(q_memory)
            proxy_ratios.append(q_proxy)
        bound = r4.bound_instructions
        lines.append(" | ".join([
            f"| {row['model']}", _n(r4.loads_per_inference), _n(r4.stores_per_inference), _n(memory),
            _n(base_memory), _n(q_memory, 2), _n(proxy), _n(base_proxy), _n(q_proxy, 2),
            _n(bound / r4.macs if r4.macs else None, 2),
            _n(r4.instructions_per_inference / bound if bound else None, 2) + " |",
        ]))
    lines += ["", f"Geometric mean over the measured acceptance models ({len(memory_ratios)}): loads+stores ratio "
              f"{_n(_geomean(memory_ratios), 3)}, cycle-proxy ratio {_n(_geomean(proxy_ratios), 3)}."]
    return lines


def _m7_table(rows: list[dict]) -> list[str]:
    lines = [
        "",
        "### Cortex-M7",
        "",
        "`--target cortex-m7` (Arm DSP kernels, -mcpu=cortex-m7 -mfpu=fpv5-d16) in QEMU mps2-an500, outputs checked "
        "against TFLM like the others. QEMU does not model the M7's dual issue (nor its caches or branch "
        "prediction): these are instruction counts, and on a real M7 many instruction pairs issue in one cycle. No "
        "TFLM + CMSIS-NN figures for M7 in shared/docs/baseline-cortexm.md, so no ratio.",
        "",
        "| model | M7 instructions | M7 instr/MAC | M7 loads+stores | M7 / M4 instructions |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        r7, r4 = row["runs"].get("cortex-m7"), row["runs"].get("cortex-m4")
        if r7 is None:
            continue
        i7 = r7.instructions_per_inference
        lines.append(" | ".join([
            f"| {row['model']}", _n(i7), _n(r7.instructions_per_mac, 2), _n(r7.memory_accesses_per_inference),
            _n(i7 / r4.instructions_per_inference if r4 else None, 2) + " |",
        ]))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="model names (suffix match against the list)")
    parser.add_argument("--targets", nargs="*", default=TARGETS, choices=bench_targets())
    parser.add_argument("--inputs", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/BENCHMARKS.md alone")
    args = parser.parse_args()
    missing = missing_tools()
    if missing:
        sys.exit(f"bench/cortexm.py needs {', '.join(missing)} (Debian: gcc-arm-none-eabi binutils-arm-none-eabi "
                 "libnewlib-arm-none-eabi qemu-system-arm)")
    models = [m for m in MODELS if not args.models or any(m.endswith(s) for s in args.models)]
    rows = []
    for model in models:
        print(model, flush=True)
        rows.append(measure(model, args.targets, args.inputs))
        if rows[-1]["error"]:
            print(f"  not measured: {rows[-1]['error']}", flush=True)
    table = render(rows, args.targets, args.inputs)
    print(table)
    if not args.no_write:
        replace_section("cortexm", table)


if __name__ == "__main__":
    main()
