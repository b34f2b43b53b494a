"""The `partition` stage of `--npu`: which operators run on the Ethos-U NPU and which on the CPU.

May: Vela decides. Each operator is written alone as a .tflite (nn2c's TFLite writer) and compiled by
Vela; it may go to the NPU when Vela puts it on the NPU (no CPU operator left in its output). An
operator TFLite cannot express (an nn2c-only form of -O2) or that Vela leaves on the CPU stays on the
CPU, with that reason.

Should: a cost model, in CPU clock cycles (the NPU and the CPU are taken to share one clock, as on
Arm's Corstone-300/310 reference systems; Vela's cycles are NPU clock cycles):
- an operator on the NPU costs Vela's estimated total cycles for it alone (compute and memory traffic);
- an operator on the CPU costs nn2c's fitted instruction model for the kernel the target's lowering
  calls (the one `nn2c profile` uses, calibrated against QEMU counts; one instruction taken as one
  cycle); on the host, which has no fitted model, MACs x instructions per MAC plus a per-element cost
  (CPU_INSTRUCTIONS below);
- every switch to the NPU costs SWITCH_CYCLES (the driver call: cache maintenance, register set-up,
  the interrupt on completion).
A dynamic programme over the operators in execution order picks, for each, the unit with the least
total cost including the switches; adjacent NPU operators form one subgraph, which is then compiled by
Vela as a whole for its final estimate, command stream and weights. The baseline for the report is
Vela's own rule, every supported operator on the NPU and the rest on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from nn2c.codegen.context import NodeCode
from nn2c.errors import NN2CError, UnsupportedOpError, UsageError
from nn2c.export.tflite_writer import OperatorOptionsError, _Writer, serialize
from nn2c.ir import Graph
from nn2c.ir.cost import macs
from nn2c.ir.graph import Node, Value
from nn2c.npu.vela import Architecture, NpuConfig, VelaResult, architecture, compile_tflite

# Instructions per MAC and per output element of nn2c's kernels, from docs/BENCHMARKS.md "Cortex-M
# (emulated)": the median instructions/MAC over the MLPerf Tiny and TFLM example models (M4: 2.1, M55:
# 0.6; M7 runs the M4's kernels; the host estimate is the M55's, the CPU of Ethos-U55/U65 systems).
# Per element read or written: data movement and element-wise kernels (an assumption of nn2c).
CPU_INSTRUCTIONS = {  # target -> (instructions per MAC, instructions per output element)
    "cortex-m4": (2.1, 4.0),
    "cortex-m7": (2.1, 4.0),
    "cortex-m55": (0.6, 2.0),
    "host": (0.6, 2.0),
}
# One NPU invocation through the Ethos-U core driver (ethosu_invoke_v3): cache clean/invalidate of the
# arena, programming the base-address registers and the command stream, the completion interrupt.
# An assumption of nn2c (not measured here), stated in the report next to every estimate.
SWITCH_CYCLES = 2000


@dataclass(frozen=True)
class Placement:
    index: int  # the operator's position in execution order
    op: str
    name: str
    unit: str  # "npu" or "cpu"
    reason: str
    cpu_cycles: int  # nn2c's estimate on the CPU
    npu_cycles: int | None  # Vela's estimate for the operator alone; None: it may not run on the NPU


@dataclass(frozen=True)
class NpuSubgraph:
    number: int
    nodes: tuple[int, ...]  # operator indices, consecutive in execution order
    tflite: bytes  # what Vela compiled
    vela: VelaResult

    @property
    def first(self) -> int:
        return self.nodes[0]

    @property
    def last(self) -> int:
        return self.nodes[-1]


@dataclass(frozen=True)
class PlacementEstimate:
    """The end-to-end estimate of one placement, in CPU clock cycles."""

    npu_cycles: int  # Vela's estimates of the subgraphs, compiled whole
    cpu_cycles: int  # nn2c's estimate of the CPU operators
    switches: int
    subgraphs: int

    @property
    def total(self) -> int:
        return self.npu_cycles + self.cpu_cycles + self.switches * SWITCH_CYCLES


@dataclass(frozen=True)
class NpuPlan:
    config: NpuConfig
    arch: Architecture
    placements: tuple[Placement, ...]
    subgraphs: tuple[NpuSubgraph, ...]
    estimate: PlacementEstimate  # the chosen placement
    baseline: PlacementEstimate  # Vela's rule: every supported operator on the NPU
    cpu_target: str

    def unit_of(self, index: int) -> str:
        return self.placements[index].unit

    def lines(self) -> list[str]:
        """The summary printed by `nn2c compile --npu`."""
        on_npu = sum(p.unit == "npu" for p in self.placements)
        out = [f"--npu {self.config.accelerator} ({self.arch.system_config}, {self.arch.memory_mode}): "
               f"{on_npu} operators on the NPU in {len(self.subgraphs)} subgraph(s), "
               f"{len(self.placements) - on_npu} on the CPU ({self.cpu_target}); the default build runs the NPU "
               "subgraphs with nn2c's kernels (simulation), -DNN2C_ETHOSU through the Ethos-U driver"]
        for sg in self.subgraphs:
            v = sg.vela
            out.append(f"  NPU subgraph {sg.number}: ops {sg.first}-{sg.last}, Vela {v.total_cycles:,} cycles "
                       f"(NPU {v.npu_cycles:,}), SRAM {v.sram_peak_bytes:,} B, flash {v.flash_bytes:,} B "
                       f"(command stream + encoded weights)")
        for p in self.placements:
            npu = "-" if p.npu_cycles is None else f"{p.npu_cycles:,}"
            out.append(f"  op {p.index} {p.op}: {p.unit.upper()} ({p.reason}; CPU {p.cpu_cycles:,}, NPU {npu})")
        e, b = self.estimate, self.baseline
        out.append(f"  estimate {e.total:,} cycles (NPU {e.npu_cycles:,} + CPU {e.cpu_cycles:,} + {e.switches} "
                   f"switch(es) x {SWITCH_CYCLES:,}); all Vela-supported operators on the NPU: {b.total:,} cycles")
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "accelerator": self.config.accelerator, "system_config": self.arch.system_config,
            "memory_mode": self.arch.memory_mode, "builds": ["simulation (default)", "driver (-DNN2C_ETHOSU)"],
            "cpu_target": self.cpu_target,
            "switch_cycles": SWITCH_CYCLES,
            "placements": [{"op": p.index, "type": p.op, "unit": p.unit, "reason": p.reason,
                            "cpu_cycles": p.cpu_cycles, "npu_cycles": p.npu_cycles} for p in self.placements],
            "subgraphs": [{"ops": list(sg.nodes), "vela_total_cycles": sg.vela.total_cycles,
                           "vela_npu_cycles": sg.vela.npu_cycles, "sram_peak_bytes": sg.vela.sram_peak_bytes,
                           "offchip_flash_peak_bytes": sg.vela.offchip_flash_peak_bytes,
                           "flash_bytes": sg.vela.flash_bytes,
                           "scratch_bytes": max((u.scratch_bytes for u in sg.vela.ethos_u_ops), default=0)}
                          for sg in self.subgraphs],
            "estimate_cycles": self.estimate.total, "npu_cycles": self.estimate.npu_cycles,
            "cpu_cycles": self.estimate.cpu_cycles, "switches": self.estimate.switches,
            "baseline_cycles": self.baseline.total,
        }


def check_int8(graph: Graph) -> None:
    """--npu takes integer models: a float activation anywhere is refused (quantize it first)."""
    for node in graph.nodes:
        for value in (*node.inputs, *node.outputs):
            if value is not None and not value.is_constant and value.type.dtype in ("float32", "float16"):
                raise UsageError(f"--npu needs an int8 model, and {node.where()} computes in {value.type.dtype}; "
                                 "quantize it with --quantize int8 --calibration SAMPLES")


def subgraph_tflite(graph: Graph, nodes: list[Node]) -> bytes:
    """The operators `nodes` (consecutive in execution order) as a .tflite of their own: its inputs are
    the run-time values they read from outside, its outputs the values read after them."""
    inside = {id(n) for n in nodes}
    produced = {id(v) for n in nodes for v in n.outputs}
    writer = _Writer(graph)
    inputs: list[Value] = []
    for n in nodes:
        for v in n.inputs:
            if v is not None and not v.is_constant and id(v) not in produced and all(v is not x for x in inputs):
                inputs.append(v)
    graph_outputs = {id(v) for v in graph.outputs}
    outputs = [v for n in nodes for v in n.outputs
               if id(v) in graph_outputs or any(id(u) not in inside for u in v.users)]
    input_indices = [writer.tensor(v) for v in inputs]
    for n in nodes:
        writer.node(n)
    output_indices = [writer.tensor(v) for v in outputs]
    try:
        return serialize(writer.tensors, writer.operators, input_indices, output_indices, "nn2c NPU subgraph")
    except OperatorOptionsError as exc:
        raise UnsupportedOpError(f"{writer.origin[exc.operator].where()} has options TFLite cannot hold "
                                 f"({exc.reason})") from None


def cpu_costs(graph: Graph, codes: list[NodeCode], target: str) -> list[int]:
    """nn2c's estimate of each operator on the CPU: the fitted instruction model of the kernel the
    target's lowering calls (codes: the lower stage's, in graph order), or (no fitted model: the host)
    cpu_cycles."""
    from nn2c.profiler import node_instructions

    predicted = node_instructions(target, codes)
    if predicted is None:
        return [cpu_cycles(n, target) for n in graph.nodes]
    return [round(p) for p in predicted]


def cpu_cycles(node: Node, target: str) -> int:
    per_mac, per_element = CPU_INSTRUCTIONS.get(target, CPU_INSTRUCTIONS["host"])
    # data movement reads its inputs and writes its outputs: both counted
    elements = sum(prod(v.type.shape) for v in (*node.inputs, *node.outputs) if v is not None and not v.is_constant)
    return round(macs(node) * per_mac + elements * per_element)


def _may_run_on_npu(graph: Graph, node: Node, arch: Architecture) -> tuple[int | None, str]:
    """Vela's answer for the operator alone: its cycles, or None and why it stays on the CPU."""
    try:
        model = subgraph_tflite(graph, [node])
    except UnsupportedOpError as exc:
        return None, f"no TFLite form for Vela ({str(exc).split(': ', 1)[-1]})"
    try:
        result = compile_tflite(model, arch)
    except NN2CError as exc:
        return None, f"Vela cannot compile it ({exc})"
    if result.cpu_ops:
        return None, f"Vela's supported-operator checks keep {node.op} on the CPU for {arch.accelerator}"
    return result.total_cycles, "Vela supports it"


def _choose(may: list[int | None], cpu: list[int]) -> list[str]:
    """Least total cycles over the operators in order, with SWITCH_CYCLES per entry into the NPU."""
    inf = float("inf")
    cost = {"cpu": 0.0, "npu": inf}  # the model's inputs are written by the CPU
    back: list[dict[str, str]] = []
    for npu, c in zip(may, cpu, strict=True):
        step: dict[str, str] = {}
        new: dict[str, float] = {}
        stay_cpu = min(("cpu", "npu"), key=lambda u: (cost[u], u != "cpu"))
        new["cpu"], step["cpu"] = cost[stay_cpu] + c, stay_cpu
        if npu is None:
            new["npu"], step["npu"] = inf, "cpu"
        else:
            from_cpu, from_npu = cost["cpu"] + SWITCH_CYCLES, cost["npu"]
            step["npu"] = "npu" if from_npu <= from_cpu else "cpu"
            new["npu"] = min(from_cpu, from_npu) + npu
        cost = new
        back.append(step)
    unit = "cpu" if cost["cpu"] <= cost["npu"] else "npu"
    units: list[str] = []
    for step in reversed(back):
        units.append(unit)
        unit = step[unit]
    return list(reversed(units))


def _runs(units: list[str]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i, u in enumerate(units):
        if u != "npu":
            continue
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _compile_runs(graph: Graph, runs: list[list[int]], arch: Architecture) -> list[NpuSubgraph]:
    subgraphs = []
    for number, run in enumerate(runs):
        model = subgraph_tflite(graph, [graph.nodes[i] for i in run])
        result = compile_tflite(model, arch)
        if result.cpu_ops or len(result.ethos_u_ops) != 1:
            raise NN2CError(f"Vela split NPU subgraph {number} (ops {run[0]}-{run[-1]}) into "
                            f"{len(result.ethos_u_ops)} NPU parts and {result.cpu_ops} CPU operators, although "
                            "it accepted each operator alone; compile without --npu")
        subgraphs.append(NpuSubgraph(number, tuple(run), model, result))
    return subgraphs


def _estimate(units: list[str], cpu: list[int], subgraphs: list[NpuSubgraph]) -> PlacementEstimate:
    return PlacementEstimate(sum(sg.vela.total_cycles for sg in subgraphs),
                             sum(c for c, u in zip(cpu, units, strict=True) if u == "cpu"),
                             len(subgraphs), len(subgraphs))


def partition(graph: Graph, config: NpuConfig, cpu_target: str, codes: list[NodeCode]) -> NpuPlan:
    """Place every operator of `graph` (in its execution order) on the NPU or the CPU; codes: each
    operator's lowering for cpu_target, in the same order (what the CPU would run)."""
    check_int8(graph)
    arch = architecture(config)
    nodes = graph.nodes
    may: list[int | None] = []
    why: list[str] = []
    for node in nodes:
        cycles, reason = _may_run_on_npu(graph, node, arch)
        may.append(cycles)
        why.append(reason)
    cpu = cpu_costs(graph, codes, cpu_target)
    units = _choose(may, cpu)
    subgraphs = _compile_runs(graph, _runs(units), arch)
    baseline_units = ["cpu" if m is None else "npu" for m in may]
    baseline_subgraphs = subgraphs if baseline_units == units else _compile_runs(graph, _runs(baseline_units), arch)
    placements = []
    for i, node in enumerate(nodes):
        npu = may[i]
        if npu is None:
            reason = why[i]
        elif units[i] == "npu":
            reason = (f"Vela supports it; on the NPU {npu:,} cycles against {cpu[i]:,} on the CPU"
                      + ("" if npu <= cpu[i] else ", kept with its NPU neighbours to save a switch"))
        else:
            reason = (f"Vela supports it, but the CPU is cheaper: {cpu[i]:,} cycles against {npu:,} on the NPU"
                      + ("" if npu > cpu[i] else f" plus a switch of {SWITCH_CYCLES:,}"))
        placements.append(Placement(i, node.op, node.name or "", units[i], reason, cpu[i], may[i]))
    return NpuPlan(config, arch, tuple(placements), tuple(subgraphs), _estimate(units, cpu, subgraphs),
                   _estimate(baseline_units, cpu, baseline_subgraphs), cpu_target)
