"""NPU benchmark: `--npu ethos-u55-128` on the MLPerf Tiny int8 models, person_detect and tinyengine/vww.

For every model, in one run:
- compile with `--target cortex-m55 --npu ethos-u55-128` (tinyengine/vww with `--io int8`): where each
  operator runs, the NPU subgraphs, nn2c's estimate end to end (Vela's cycles for the NPU subgraphs,
  nn2c's fitted instruction model for the CPU operators, SWITCH_CYCLES per switch);
- the anchor, Vela's default placement (every operator Vela supports on the NPU) with the CPU operators
  run by TFLM + CMSIS-NN: Vela's cycles for its subgraphs, and per CPU operator its MACs at TFLM +
  CMSIS-NN's instructions per MAC on Cortex-M55 for that model (shared/docs/baseline-cortexm.md; an
  estimate per operator, nn2c's own estimate where that is higher, e.g. operators without MACs);
- RAM: nn2c's arena (CPU tensors and NPU scratch, one plan) against Vela's `--optimise Size` SRAM peak
  for the whole model plus TFLM's minimum arena on Cortex-M4 (baseline-cortexm.md);
- the simulation build (NPU subgraphs run by nn2c's kernels) against TFLM, on the host and in QEMU on
  Cortex-M55, bit for bit.
Writes the `npu` section of docs/BENCHMARKS.md.

    python bench/npu.py [--models kws_ref_model ...] [--no-qemu]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from cortexm import TFLM_CMSIS  # noqa: E402
from memory import TFLM_M4  # noqa: E402
from report_file import replace_section  # noqa: E402

from nn2c import CompileOptions, compile_model  # noqa: E402
from nn2c.compile import load_model  # noqa: E402
from nn2c.ir.cost import macs  # noqa: E402
from nn2c.npu.partition import SWITCH_CYCLES  # noqa: E402
from nn2c.npu.vela import NpuConfig, architecture, compile_tflite, vela_version  # noqa: E402
from nn2c.targets.cortexm_build import missing_tools  # noqa: E402
from nn2c.verify.compare import verify_model  # noqa: E402

NPU = "ethos-u55-128"
CPU = "cortex-m55"
MODELS = ["mlcommons_tiny/kws_ref_model", "mlcommons_tiny/vww_96_int8", "mlcommons_tiny/pretrainedResnet_quant",
          "mlcommons_tiny/ad01_int8", "tflite_micro/person_detect", "tinyengine/vww"]
INT8_IO = {"tinyengine/vww"}  # float input only quantized, output only dequantized: --io int8


def measure(model: str, qemu: bool) -> dict:
    path = ROOT / "models" / f"{model}.tflite"
    options = CompileOptions(target=CPU, npu=NPU, io="int8" if model in INT8_IO else "float")
    started = time.perf_counter()
    result = compile_model(path, options)
    row: dict = {"model": model, "io": options.io, "compile_s": time.perf_counter() - started}
    plan = result.graph.metadata["npu"]
    row["ops"], row["npu_ops"] = len(plan.placements), sum(p.unit == "npu" for p in plan.placements)
    row["subgraphs"] = len(plan.subgraphs)
    row["estimate"] = plan.estimate.total
    row["kept_on_cpu"] = [f"op {p.index} {p.op}: {p.reason}" for p in plan.placements
                          if p.unit == "cpu" and p.npu_cycles is not None]
    # Vela's placement with TFLM + CMSIS-NN on the CPU: the model's TFLM instructions per MAC on M55
    original = load_model(path)
    per_mac = TFLM_CMSIS[model][1] / max(sum(macs(n) for n in original.nodes), 1)
    nodes = result.graph.nodes
    tflm_cpu = sum(max(p.cpu_cycles, round(per_mac * macs(nodes[p.index])))
                   for p in plan.placements if p.npu_cycles is None)
    row["vela_tflm"] = plan.baseline.npu_cycles + tflm_cpu + plan.baseline.switches * SWITCH_CYCLES
    row["vela_cpu_ops"] = sum(p.npu_cycles is None for p in plan.placements)
    row["arena"] = result.ram_bytes
    size = compile_tflite(path.read_bytes(), architecture(NpuConfig(NPU), optimise="Size"))
    row["vela_size_sram"] = size.sram_peak_bytes
    row["tflm_arena"] = TFLM_M4[model]
    with tempfile.TemporaryDirectory() as tmp:
        report = verify_model(path, count=2, seed=0, references=("tflm",), workdir=Path(tmp), options=options)
    row["host"] = "skipped: " + report.skipped["tflm"] if "tflm" in report.skipped else \
        ("bit-exact" if all(c.mismatches == 0 for c in report.comparisons) else "MISMATCH")
    row["qemu"] = "not run"
    if qemu:
        from nn2c.targets.cortexm_bench import bench_model

        with tempfile.TemporaryDirectory() as tmp:
            # (the larger memory map where the model does not fit the bench image: tinyengine/vww)
            bench = bench_model(path, target=CPU, count=2, seed=3, options=options, workdir=Path(tmp),
                                large_memory=None)
        row["qemu"] = ("bit-exact" if bench.reference == "tflm" and bench.passed()
                       and all(c.max_abs_diff == 0 for c in bench.comparisons) else f"MISMATCH ({bench.reference})")
    return row


def render(rows: list[dict], seconds: float) -> str:
    lines = [
        "## NPU: Ethos-U55-128 with the CPU operators in nn2c's C",
        "",
        f"Written by `bench/npu.py` (Vela {vela_version()}, its default system configuration for {NPU}; CPU "
        f"{CPU}). nn2c: `--target {CPU} --npu {NPU}` (tinyengine/vww with `--io int8`); the operators Vela "
        "supports go where the cost model says (Vela's cycles for an operator alone on the NPU against nn2c's "
        "fitted instruction model on the CPU, one instruction taken as one cycle, and an assumed "
        f"{SWITCH_CYCLES:,} cycles per switch to the NPU); consecutive NPU operators form one subgraph, "
        "compiled by Vela as a whole. Vela + TFLM = Vela's default placement (every supported operator on the "
        "NPU), its subgraphs' cycles, plus each operator it leaves on the CPU at TFLM + CMSIS-NN's "
        "instructions per MAC on Cortex-M55 for that model (shared/docs/baseline-cortexm.md; nn2c's estimate "
        "where that is higher). Every cycle figure is an estimate (Vela's performance model, nn2c's cost "
        "model), not a measurement: no Ethos-U hardware or FVP here.",
        "",
        "RAM: nn2c's arena (CPU tensors and NPU scratch in one plan) against Vela's SRAM peak for the whole "
        "model with `--optimise Size` plus TFLM's minimum arena on Cortex-M4. Bit-exact: the simulation "
        "build (each NPU subgraph run by nn2c's kernels, the same partition, arena and data flow) against "
        "TFLM on 2 seeded inputs, on the host and in QEMU (Cortex-M55).",
        "",
        "| model | operators on the NPU | subgraphs | estimate, cycles | Vela + TFLM, cycles | ratio | "
        "nn2c arena | Vela Size SRAM + TFLM arena | host | QEMU M55 | compile |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | not compiled: {r['error']} |" + " |" * 9)
            continue
        bound = r["vela_size_sram"] + r["tflm_arena"]
        lines.append(
            f"| {r['model']}{' (--io int8)' if r['io'] == 'int8' else ''} | {r['npu_ops']} / {r['ops']} | "
            f"{r['subgraphs']} | {r['estimate']:,} | {r['vela_tflm']:,} | {r['estimate'] / r['vela_tflm']:.3f} | "
            f"{r['arena']:,} | {r['vela_size_sram']:,} + {r['tflm_arena']:,} = {bound:,} | {r['host']} | "
            f"{r['qemu']} | {r['compile_s']:.1f} s |")
    kept = [(r["model"], k) for r in rows if "error" not in r for k in r["kept_on_cpu"]]
    if kept:
        lines += ["", "Operators Vela supports that the cost model keeps on the CPU:", ""]
        lines += [f"- {model}: {why}" for model, why in kept]
    lines += ["", f"({len(rows)} models in {seconds:.0f} s.)"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="model names (default: all of MODELS)")
    parser.add_argument("--no-qemu", action="store_true", help="skip the QEMU runs")
    args = parser.parse_args()
    models = [m for m in MODELS if not args.models or m.split("/")[-1] in args.models]
    qemu = not args.no_qemu and not missing_tools()
    started = time.perf_counter()
    rows = []
    for model in models:
        try:
            row = measure(model, qemu)
        except Exception as exc:  # one line in the table, the bench goes on
            row = {"model": model, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        print(row, flush=True)
        rows.append(row)
    replace_section("npu", render(rows, time.perf_counter() - started))


if __name__ == "__main__":
    main()
