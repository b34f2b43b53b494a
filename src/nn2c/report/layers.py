"""Per-layer facts of a compiled model: shapes, MACs, weights, arena placement, and the memory peak.

Everything here is read from a CompileResult (graph in execution order, buffer requests, memory
plan, in-place pairs); nothing is recomputed differently from what the generated C does. The
layer table feeds report.html / report.md and `nn2c inspect --json`; `peak()` names the
operator and tensors that set the arena size (used by the budget error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nn2c.ir import Graph, Value
from nn2c.ir.cost import macs, weight_bytes
from nn2c.memory.inplace import InPlacePair
from nn2c.memory.requests import BufferRequest, MemoryPlan

if TYPE_CHECKING:
    from nn2c.result import CompileResult


@dataclass
class Layer:
    step: int  # position in the generated invoke() (execution order)
    index: int  # operator index in the source model (-1: created by a pass)
    op: str
    name: str
    inputs: list[str]  # "int8[1x49x10x1]" per non-constant input
    outputs: list[str]
    macs: int
    weight_bytes: int
    offset: int | None = None  # arena offset of the first output (None: not in the arena, e.g. state)
    size: int = 0  # bytes of that buffer
    scratch_bytes: int = 0
    inplace: bool = False  # the output is written over an input that dies here
    aliased: bool = False  # the output shares its input's memory (zero-copy reshape: no code)
    live_bytes: int = 0  # bytes of arena buffers live during this step
    arena_top: int = 0  # highest arena byte used during this step
    instructions: float | None = None  # per inference, when measured (nn2c bench)
    accesses: float | None = None  # loads + stores per inference, when measured (nn2c bench)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Peak:
    step: int
    op: str
    index: int
    arena_top: int
    live_bytes: int
    tensors: list[str] = field(default_factory=list)  # tensors live at that step, largest first

    def describe(self, limit: int = 4) -> str:
        """`peak at op 12 CONV_2D (tensors a, b)` for error messages."""
        names = self.tensors[:limit] + ([f"{len(self.tensors) - limit} more"] if len(self.tensors) > limit else [])
        where = f"op {self.step} {self.op}" + (f" (model op #{self.index})" if self.index not in (-1, self.step) else "")
        return f"peak at {where} (tensors {', '.join(names) or 'none'})"


def short_name(name: str, limit: int = 48) -> str:
    """A readable tensor name: TFLite joins fused names with ';' (keep the first), then shorten."""
    name = name.split(";")[0]
    return name if len(name) <= limit else name[: limit // 2 - 2] + "..." + name[-(limit // 2 - 1) :]


def _shape(value: Value) -> str:
    dims = "x".join(str(d) for d in value.type.shape) or "scalar"
    return f"{value.type.dtype}[{dims}]"


def buffer_of(result: CompileResult) -> dict[int, str]:
    """id(value) -> arena buffer name, as the memory plan assigned them."""
    return result.code.buffer_of


def layer_table(result: CompileResult, instructions: dict[int, float] | None = None,
                accesses: dict[int, float] | None = None) -> list[Layer]:
    """One Layer per operator of the compiled graph, in execution order."""
    graph, code = result.graph, result.code
    names = buffer_of(result)
    return build_layers(graph, code.buffers, code.plan, code.inplace, names, instructions, steps_of(result),
                        accesses)


def steps_of(result: CompileResult) -> list[Any]:
    """What invoke() runs, in order: operators and row groups (memory/fusion.py)."""
    if result.schedule is not None and result.schedule.steps:
        return list(result.schedule.steps)
    return list(result.graph.nodes)


def _step_macs(step: Any) -> int:
    return sum(macs(n) for n in step.nodes) if hasattr(step, "ops") else macs(step)


def _step_weight_bytes(step: Any) -> int:
    return sum(weight_bytes(n) for n in step.nodes) if hasattr(step, "ops") else weight_bytes(step)


def build_layers(graph: Graph, requests: list[BufferRequest], plan: MemoryPlan, pairs: list[InPlacePair],
                 names: dict[int, str], instructions: dict[int, float] | None = None,
                 steps: list[Any] | None = None, accesses: dict[int, float] | None = None) -> list[Layer]:
    by_name = {r.name: r for r in requests}
    inplace_at = {(p.step, p.output) for p in pairs}
    layers = []
    for step, node in enumerate(graph.nodes if steps is None else steps):
        live = [r for r in requests if r.first <= step <= r.last and r.size]
        layer = Layer(
            step=step, index=node.index, op=node.op, name=node.name,
            inputs=[_shape(v) for v in node.inputs if v is not None and not v.is_constant],
            outputs=[_shape(v) for v in node.outputs],
            macs=_step_macs(node), weight_bytes=_step_weight_bytes(node),
            scratch_bytes=sum(r.size for r in requests if r.name.startswith(f"s{step}_")),
            live_bytes=sum(r.size for r in live),
            arena_top=max((plan.offsets[r.name] + r.size for r in live), default=0),
        )
        out = node.outputs[0] if node.outputs else None
        buffer = names.get(id(out)) if out is not None else None
        if buffer is not None and f"{buffer}@{step}" in by_name:  # written here, relocated after the step
            buffer = f"{buffer}@{step}"
        if buffer is not None and buffer in by_name:
            layer.offset, layer.size = plan.offsets[buffer], by_name[buffer].size
            layer.inplace = (step, buffer) in inplace_at
            inputs = {names.get(id(v)) for v in node.inputs if v is not None}
            layer.aliased = buffer in inputs
        if instructions is not None and step in instructions:
            layer.instructions = instructions[step]
        if accesses is not None and step in accesses:
            layer.accesses = accesses[step]
        layers.append(layer)
    return layers


def peak(result: CompileResult) -> Peak | None:
    """The step whose live buffers reach highest in the arena (ties: most live bytes, then earliest)."""
    graph, code = result.graph, result.code
    return find_peak(graph, code.buffers, code.plan, buffer_of(result), steps_of(result))


def find_peak(graph: Graph, requests: list[BufferRequest], plan: MemoryPlan, names: dict[int, str],
              steps: list[Any] | None = None) -> Peak | None:
    steps = list(graph.nodes) if steps is None else steps
    if not steps or not requests:
        return None
    best: tuple[int, int, int] | None = None
    for step in range(len(steps)):
        live = [r for r in requests if r.first <= step <= r.last and r.size]
        top = max((plan.offsets[r.name] + r.size for r in live), default=0)
        key = (top, sum(r.size for r in live), -step)
        if best is None or key > best:
            best = key
    assert best is not None
    step = -best[2]
    node = steps[step]
    live_names = {r.name: r.size for r in requests if r.first <= step <= r.last and r.size}
    # the first tensor (in graph order) stored in each live buffer names it
    tensor_of: dict[str, str] = {}
    for value in graph.values():
        buffer = names.get(id(value))
        if buffer in live_names and buffer not in tensor_of:
            tensor_of[buffer] = short_name(value.name)
    for buffer in live_names:
        if buffer.startswith("s"):
            tensor_of.setdefault(buffer, _scratch_name(buffer, steps))
    ordered = sorted(live_names, key=lambda b: (-live_names[b], b))
    tensors = [f"{tensor_of.get(b, b)} {live_names[b]:,} B" for b in ordered]
    op = node.op if not hasattr(node, "ops") else f"row group ({', '.join(n.op for n in node.nodes)})"
    return Peak(step, op, node.index, best[0], best[1], tensors)


def _scratch_name(buffer: str, steps: list[Any]) -> str:
    """A step's scratch buffer ("s<step>_<k>") in words: a row group's are its members' row windows,
    then its column bands' tiles, then the kernels' shared scratch, then an accumulating sink's sums
    (codegen/stream.py)."""
    step, k = (int(part) for part in buffer[1:].split("_")[:2])
    group: Any = steps[step] if step < len(steps) else None
    if not hasattr(group, "ops"):
        return f"scratch of op {step}"
    windows = len(group.window_bytes)
    if k < windows:
        return f"rows of {short_name(group.ops[k].output.name)}"
    tiles = group.tile_bytes
    if k < windows + len(tiles):
        reads = group.bands.reads
        if k - windows < len(reads):  # an outside tensor's band columns, copied for the member reading it
            read = reads[k - windows]
            value = next(v for arg, v, _ in group.ops[read.member].streamed if arg == read.arg)
            return f"band tile of {short_name(value.name)}"
        return f"band tile of {short_name(group.ops[-1].output.name)}"
    windows += len(tiles)
    if k == windows and group.scratch_region:
        return f"kernel scratch of op {step}"
    return f"sums of {short_name(group.ops[-1].output.name)}"


def op_counts(graph: Graph) -> dict[str, int]:
    """Operators per type, most frequent first (ties by name)."""
    counts: dict[str, int] = {}
    for node in graph.nodes:
        counts[node.op] = counts.get(node.op, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def schedule_dict(result: CompileResult) -> dict[str, Any]:
    """The row groups the schedule chose (memory/fusion.py), for the summary, --json and the report."""
    fusion = result.schedule.fusion if result.schedule is not None else None
    relocations = [{"after_step": m.step, "bytes": m.size} for m in result.code.moves]
    if fusion is None:
        return {"policy": "layer", "row_groups": [], "relocations": relocations}
    position = {id(n): k for k, n in enumerate(result.graph.nodes)}
    steps = steps_of(result)
    groups = [{
        "step": steps.index(g), "ops": [position[id(n)] for n in g.nodes], "types": [n.op for n in g.nodes],
        "rows_per_iteration": g.sim.block, "window_bytes": g.window_bytes, "moved_bytes": g.sim.moved_bytes,
        "column_bands": g.bands.count if g.bands is not None else 1, "tile_bytes": g.tile_bytes,
        "recomputed_macs": g.recomputed_macs, "slower_kernels": g.slower_paths,
    } for g in fusion.groups]
    return {
        "policy": fusion.policy, "row_groups": groups, "relocations": relocations,
        "layer_by_layer_arena_bytes": fusion.layer_arena_bytes,
        "added_cost_fraction": round(fusion.added_cost / fusion.base_cost, 5) if fusion.base_cost else 0.0,
        # a row group computes every row once; column bands compute their halo columns again
        "recomputed_macs": sum(g.recomputed_macs for g in fusion.groups),
        "tradeoff": [{"arena_bytes": ram, "added_cost_fraction": round(cost / fusion.base_cost, 5)}
                     for ram, cost in fusion.curve] if fusion.base_cost else [],
        "candidates": [{"lower_bound_bytes": ram, "added_cost_fraction": round(cost / fusion.base_cost, 5)}
                       for ram, cost in fusion.considered] if fusion.base_cost else [],
    }
