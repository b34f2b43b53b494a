"""`nn2c bench`: compile a model, cross-build it for a Cortex-M core, run it in QEMU, measure it.

Steps: compile (nn2c.api) -> seeded input records (nn2c.verify.inputs) -> bare-metal image with
the records in flash (cortexm_build) -> QEMU + instruction-counting plugin (cortexm_run) ->
compare the outputs with TFLM bit for bit (1e-5 relative for float outputs; when TFLM refuses
the model or is not installed, with nn2c's own host build, and the report says which) ->
instructions, loads and stores per inference, instructions per MAC (MACs = sum of
nn2c.ir.cost.macs over the graph), per-layer profile (instructions, loads, stores, and the
measured / lower-bound ratio of nn2c.targets.bounds), flash and RAM from the map file
(cortexm_footprint) and the measured stack high-water mark.

Loads and stores count every element of LDM/STM/LDRD/STRD/PUSH/POP (one per 32-bit access, the way
shared/docs/baseline-cortexm.md counted TFLM's). On Cortex-M55 QEMU's Helium helpers access memory
per element (a 16-byte VLDRB counts 16): M55 memory figures are not comparable with M4's.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.api import CompileOptions, compile_model
from nn2c.errors import BuildError
from nn2c.ir import Graph, Value, numpy_dtype
from nn2c.ir.cost import macs
from nn2c.report.layers import steps_of
from nn2c.targets.bounds import LayerBound, step_bound
from nn2c.targets.cortexm_build import build_image, check_target, require_tools
from nn2c.targets.cortexm_footprint import ImageFootprint, image_footprint
from nn2c.targets.cortexm_run import (
    LayerCost,
    RunResult,
    function_counts,
    functions,
    layer_profile,
    run_image,
)
from nn2c.verify.compare import IntEdges, OutputComparison, compare_outputs
from nn2c.verify.inputs import random_records

FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6
MEMORY_NOTE = ("QEMU's Helium (MVE) helpers access memory per element (a 16-byte VLDRB counts 16 loads): "
               "these loads and stores are not comparable with Cortex-M4 figures")


@dataclass
class LayerReport:
    index: int
    op: str
    name: str
    instructions: float  # per inference
    macs: int
    calls: list[str]
    loads: float = 0.0  # memory reads per inference
    stores: float = 0.0  # memory writes per inference
    bound: LayerBound | None = None  # lower bound on the instructions (nn2c.targets.bounds); None: no code

    @property
    def instructions_per_mac(self) -> float | None:
        return self.instructions / self.macs if self.macs else None

    @property
    def memory_accesses(self) -> float:
        return self.loads + self.stores

    @property
    def bound_per_mac(self) -> float | None:
        return self.bound.instructions / self.macs if self.bound is not None and self.macs else None

    @property
    def bound_ratio(self) -> float | None:
        """Measured / lower-bound instructions (>= 1; None for a layer without code)."""
        if self.bound is None or self.bound.instructions <= 0:
            return None
        return self.instructions / self.bound.instructions


@dataclass
class BenchReport:
    model: str
    name: str
    target: str
    board: str
    records: int
    seed: int
    macs: int
    instructions: list[int]  # per inference, in record order
    layers: list[LayerReport]
    invoke_overhead: float  # instructions per inference in NAME_invoke outside any layer
    functions: dict[str, float]  # instructions per inference inside each function
    footprint: ImageFootprint
    stack_bytes: int  # measured high-water mark of invoke (max over records)
    reference: str  # what the outputs were compared with: "tflm" or "host"
    comparisons: list[OutputComparison] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # references not installed ("tflm")
    warnings: list[str] = field(default_factory=list)
    repeat_instructions: list[list[int]] = field(default_factory=list)  # further runs, for determinism
    loads: list[int] = field(default_factory=list)  # memory reads per inference, in record order
    stores: list[int] = field(default_factory=list)  # memory writes per inference

    @property
    def instructions_per_inference(self) -> int:
        return round(sum(self.instructions) / len(self.instructions)) if self.instructions else 0

    @property
    def loads_per_inference(self) -> int:
        return round(sum(self.loads) / len(self.loads)) if self.loads else 0

    @property
    def stores_per_inference(self) -> int:
        return round(sum(self.stores) / len(self.stores)) if self.stores else 0

    @property
    def memory_accesses_per_inference(self) -> int:
        """Loads + stores per inference (each LDM/LDRD element counted)."""
        return self.loads_per_inference + self.stores_per_inference

    @property
    def memory_overhead(self) -> float:
        """Loads + stores per inference outside every layer (invoke's prologue and epilogue)."""
        return self.memory_accesses_per_inference - sum(x.memory_accesses for x in self.layers)

    @property
    def bound_instructions(self) -> float:
        """The sum of the layers' lower bounds (nn2c.targets.bounds)."""
        return sum(x.bound.instructions for x in self.layers if x.bound is not None)

    @property
    def instructions_per_mac(self) -> float | None:
        return self.instructions_per_inference / self.macs if self.macs else None

    @property
    def deterministic(self) -> bool | None:
        if not self.repeat_instructions:
            return None
        return all(run == self.instructions for run in self.repeat_instructions)

    def passed(self) -> bool:
        return bool(self.comparisons) and all(c.mismatches == 0 for c in self.comparisons)

    @property
    def reference_note(self) -> str:
        """What the outputs were compared with, and why when it is not TFLM."""
        if self.reference == "tflm":
            return "TFLM"
        if "tflm" in self.missing:
            from nn2c.verify.oracle import INSTALL_ORACLE

            return (f"nn2c's own host build, not TFLM: TFLM is not installed ({INSTALL_ORACLE} adds it), "
                    "so only the Cortex-M build is checked against the host build")
        return "nn2c's own host build (TFLM could not run the model)"

    def as_dict(self, top: int | None = None) -> dict:
        layers = sorted(self.layers, key=lambda x: -x.instructions)[:top] if top else self.layers
        return {
            "model": self.model, "name": self.name, "target": self.target, "qemu_machine": self.board,
            "inputs": self.records, "seed": self.seed, "macs": self.macs,
            "instructions_per_inference": self.instructions_per_inference,
            "instructions": self.instructions,
            "instructions_per_mac": self.instructions_per_mac,
            "loads_per_inference": self.loads_per_inference,
            "stores_per_inference": self.stores_per_inference,
            "memory_accesses_per_inference": self.memory_accesses_per_inference,
            "loads": self.loads, "stores": self.stores,
            "memory_note": MEMORY_NOTE if self.board == "mps3-an547" else None,
            "bound_instructions": self.bound_instructions,
            "deterministic": self.deterministic,
            "invoke_overhead": self.invoke_overhead,
            "memory_overhead": self.memory_overhead,
            "layers": [{
                "index": x.index, "op": x.op, "name": x.name, "instructions": x.instructions, "macs": x.macs,
                "instructions_per_mac": x.instructions_per_mac, "calls": x.calls,
                "loads": x.loads, "stores": x.stores, "memory_accesses": x.memory_accesses,
                "bound": x.bound.as_dict() if x.bound is not None else None,
                "bound_per_mac": x.bound_per_mac, "bound_ratio": x.bound_ratio,
            } for x in layers],
            "functions": dict(sorted(self.functions.items(), key=lambda kv: -kv[1])),
            "footprint": {**self.footprint.as_dict(), "stack_high_water": self.stack_bytes},
            "reference": self.reference, "reference_note": self.reference_note,
            "missing": self.missing, "passed": self.passed(), "skipped": self.skipped,
            "comparisons": [c.__dict__ for c in self.comparisons],
            "warnings": self.warnings,
        }


def bench_model(model: str | Path, target: str = "cortex-m4", count: int = 3, seed: int = 0,
                options: CompileOptions | None = None, workdir: str | Path | None = None,
                repeat: int = 1, timeout: float = 900.0, large_memory: bool | None = False) -> BenchReport:
    """Compile, cross-build, run in QEMU `repeat` times and compare; see the module docstring.
    large_memory: True = the 4 MiB memory map (cortexm_build.large_memory_script), None = the
    standard map, or the large one when the model does not fit it (`nn2c bench --board`)."""
    spec = check_target(target)
    require_tools()  # before compiling: a missing cross toolchain or QEMU is the first thing to say
    # the bench target's SIMD kernels unless the caller chose the options (e.g. target="host")
    result = compile_model(model, options if options is not None else CompileOptions(target=target))
    graph = result.graph
    records = random_records(graph.inputs, count, seed)
    raw = [b"".join(_raw(array, value) for array, value in zip(record, graph.inputs, strict=True))
           for record in records]
    with tempfile.TemporaryDirectory(prefix="nn2c_bench_") as tmp:
        work = Path(workdir) if workdir else Path(tmp)
        model_dir = result.write(work / result.name, force=True)
        try:
            image = build_image(model_dir, result.name, raw, target, work / f"build_{target}",
                                large_memory=bool(large_memory))
        except BuildError as exc:
            if large_memory is not None or "does not fit" not in str(exc):
                raise
            image = build_image(model_dir, result.name, raw, target, work / f"build_{target}_large",
                                large_memory=True)
        runs = [run_image(image, timeout) for _ in range(max(repeat, 1))]
        first = runs[0]
        layers, overhead = layer_profile(image, model_dir, first)
        per_function = function_counts(first, functions(image.elf))
        footprint = image_footprint(image.map_file, result.name, image.model_objects)
        ours = _decode_outputs(first, graph.outputs, count)
        report = BenchReport(
            model=str(model), name=result.name, target=target, board=str(spec.qemu_board), records=count,
            seed=seed, macs=sum(macs(n) for n in graph.nodes), instructions=first.windows,
            layers=_layer_reports(layers, steps_of(result), target), invoke_overhead=overhead,
            functions={k: v / max(len(first.windows), 1) for k, v in per_function.items()},
            footprint=footprint, stack_bytes=max(first.stack_bytes, default=0), reference="tflm",
            warnings=image.warnings, repeat_instructions=[r.windows for r in runs[1:]],
            loads=first.loads, stores=first.stores,
        )
        if len(first.windows) != count:
            raise BuildError(f"the plugin measured {len(first.windows)} inferences, expected {count}")
        theirs = _reference_outputs(model, records, graph, model_dir, Path(tmp), report, result.options)
    _compare(report, graph, ours, theirs)
    return report


def _raw(array: np.ndarray, value: Value) -> bytes:
    return np.ascontiguousarray(array, dtype=numpy_dtype(value.type.dtype)).tobytes()


def _decode_outputs(run: RunResult, outputs: list[Value], count: int) -> list[list[np.ndarray]]:
    decoded = []
    for record in range(count):
        arrays = []
        for k, value in enumerate(outputs):
            data = run.outputs.get((record, k))
            if data is None or len(data) != value.type.num_bytes:
                got = "nothing" if data is None else f"{len(data)} bytes"
                raise BuildError(f"the Cortex-M image sent {got} for output {k} of record {record}, "
                                 f"expected {value.type.num_bytes} bytes")
            arrays.append(np.frombuffer(data, dtype=numpy_dtype(value.type.dtype)).reshape(value.type.shape).copy())
        decoded.append(arrays)
    return decoded


def _reference_outputs(model: str | Path, records: list[list[np.ndarray]], graph: Graph, model_dir: Path,
                       tmp: Path, report: BenchReport, options: CompileOptions | None = None
                       ) -> list[list[np.ndarray]]:
    """TFLM's outputs (--io int8: of the model file's float edges, converted exactly); when TFLM refuses
    the model or is not installed, nn2c's own outputs built for the host (report.reference says which)."""
    from nn2c.verify.oracle import MissingReferenceError, run_tflm

    try:
        edges = IntEdges.of(model, graph, options)
        return edges.outputs_of(run_tflm(model, edges.inputs_of(records), len(graph.outputs)))
    except MissingReferenceError as exc:  # the `oracle` extra is not installed
        report.missing.append("tflm")
        report.skipped["tflm"] = str(exc)
    except Exception as exc:  # TFLM refuses some models (hybrids); keep going against the host build
        report.skipped["tflm"] = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
    from nn2c.verify.build import build, run

    report.reference = "host"
    exe = build(model_dir, tmp / "host_runner")
    return run(exe, records, graph.inputs, graph.outputs)


def _compare(report: BenchReport, graph: Graph, ours: list[list[np.ndarray]],
             theirs: list[list[np.ndarray]]) -> None:
    report.comparisons += compare_outputs(report.reference, graph.outputs, ours, theirs, FLOAT_RTOL, FLOAT_ATOL)


def _layer_reports(layers: list[LayerCost], steps: list[Any], target: str) -> list[LayerReport]:
    """One report per step of invoke(): an operator, or a row group (its members' MACs and bounds)."""
    reports = []
    for layer in layers:
        step = steps[layer.index] if layer.index < len(steps) else None
        group = hasattr(step, "ops")
        if step is not None and group:
            mac = sum(macs(n) for n in step.nodes)
        else:
            mac = macs(step) if step is not None and step.op == layer.op else 0
        known = step is not None and (group or step.op == layer.op)
        # a step that runs no code (an aliased reshape) has no bound
        bound = step_bound(step, target) if known and layer.instructions > 0 else None
        reports.append(LayerReport(layer.index, layer.op, layer.name, layer.instructions, mac, layer.calls,
                                   layer.loads, layer.stores, bound))
    return reports


def _fmt(value: float | None, width: int, digits: int) -> str:
    return f"{value:{width}.{digits}f}" if value is not None else "-".rjust(width)


def format_report(report: BenchReport, top: int = 10) -> str:
    """Human-readable summary (what `nn2c bench` prints)."""
    fp = report.footprint
    ipm = report.instructions_per_mac
    status = "bit-exact" if all(c.max_abs_diff == 0 for c in report.comparisons) else "within tolerance"
    if not report.passed():
        status = "MISMATCH"
    ref = report.reference_note
    lines = [
        f"{Path(report.model).name} on {report.target} (QEMU {report.board}), {report.records} input(s), "
        f"seed {report.seed}: outputs {status} against {ref}",
        f"  instructions per inference: {report.instructions_per_inference:,}"
        + (f" (min {min(report.instructions):,}, max {max(report.instructions):,})"
           if len(set(report.instructions)) > 1 else ""),
        f"  MACs: {report.macs:,}" + (f", {ipm:.2f} instructions/MAC" if ipm is not None else ""),
        f"  memory accesses per inference: {report.loads_per_inference:,} loads + "
        f"{report.stores_per_inference:,} stores = {report.memory_accesses_per_inference:,} "
        f"(each LDM/LDRD element counted)" + (f"; {MEMORY_NOTE}" if report.board == "mps3-an547" else ""),
        f"  lower bound (sum over layers, nn2c.targets.bounds): {report.bound_instructions:,.0f} instructions, "
        f"measured / bound {report.instructions_per_inference / max(report.bound_instructions, 1):.2f}",
        f"  flash: code {fp.flash_code:,} B (instructions and kernel tables {fp.flash_code - fp.flash_layers:,} B, "
        f"the layers' descriptions {fp.flash_layers:,} B), weights {fp.flash_weights:,} B "
        f"(+ libraries {fp.flash_libraries:,} B, bench harness {fp.flash_harness:,} B; image {fp.flash_total:,} B)",
        f"  RAM: {fp.ram_model:,} B static (arena {fp.ram_arena:,} B), stack high-water {report.stack_bytes:,} B",
    ]
    if report.deterministic is not None:
        lines.append(f"  deterministic over {len(report.repeat_instructions) + 1} runs: "
                     f"{'yes' if report.deterministic else 'NO'}")
    total = max(report.instructions_per_inference, 1)
    ranked = sorted(report.layers, key=lambda x: -x.instructions)[:top]
    if ranked:
        lines.append(f"  top layers (of {len(report.layers)}; invoke overhead {report.invoke_overhead:,.0f} "
                     f"instructions, {report.memory_overhead:,.0f} loads+stores):")
        lines.append(f"    {'step':5s} {'op':22s} {'instructions':>14s} {'share':>6s} {'instr/MAC':>9s} "
                     f"{'bound/MAC':>9s} {'x bound':>7s} {'loads':>12s} {'stores':>12s}  calls")
    for layer in ranked:
        per_mac = _fmt(layer.instructions_per_mac, 9, 2)
        bound_mac = _fmt(layer.bound_per_mac, 9, 2)
        ratio = _fmt(layer.bound_ratio, 7, 2)
        lines.append(f"    [{layer.index:3d}] {layer.op:22s} {layer.instructions:14,.0f} "
                     f"{100 * layer.instructions / total:5.1f}% {per_mac} {bound_mac} {ratio} "
                     f"{layer.loads:12,.0f} {layer.stores:12,.0f}  {', '.join(layer.calls)}")
    for comparison in report.comparisons:
        if comparison.mismatches:
            lines.append(f"  output {comparison.output} ({comparison.name}): {comparison.mismatches} of "
                         f"{comparison.elements} values differ, max abs diff {comparison.max_abs_diff:g}")
    for reference, why in report.skipped.items():
        if reference not in report.missing:  # a missing TFLM is said in the first line
            lines.append(f"  TFLM could not run this model: {why}")
    if report.warnings:
        lines.append(f"  {len(report.warnings)} compiler warning(s), first: {report.warnings[0]}")
    return "\n".join(lines)
