"""Lifetime analysis: which arena buffers exist, when they are live, and which may share memory.

Values that alias (zero-copy reshapes) share one buffer; constants live in flash and state
tensors in their own static arrays, so neither is in the arena. Steps are positions in the
execution order; graph inputs are live from step 0 and graph outputs until after the last step.

Relocation: an operator written in place starts its output D bytes below its input, so a chain of
them drifts down the arena by the sum of their distances (kws: 8 layers, 2 kB). With `relocate`,
the output of such an operator whose output is the in-place input of a later one gets two buffers:
`NAME@STEP`, where the step writes it, and NAME, where it lives from the next step on. Apart they
cost nothing; at different offsets the step ends with a memmove (any overlap is safe), which puts
the tensor back where the chain needs it. The planner keeps the two together unless moving saves
arena (memory/exact.py), so models without drift get no moves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from nn2c.ir import Graph, Node, Value
from nn2c.memory.inplace import InPlacePair, overlap_distance
from nn2c.memory.requests import BufferRequest, align_up

if TYPE_CHECKING:
    from nn2c.codegen.stream import RowGroup

Step = Union[Node, "RowGroup"]  # what one position of invoke() runs


@dataclass
class Buffers:
    requests: list[BufferRequest]
    buffer_of: dict[int, str]  # id(value) -> buffer name
    scratch_names: list[list[str]]  # per step, the names of its scratch buffers
    inplace: list[InPlacePair] = field(default_factory=list)
    relocations: list[Relocation] = field(default_factory=list)

    def buffer_at(self, value: Value, step: int | None = None) -> str:
        """The buffer holding `value` while step `step` runs (None: after its producer's step)."""
        name = self.buffer_of[id(value)]
        if step is not None:
            for r in self.relocations:
                if r.buffer == name and step == r.step:
                    return r.before
        return name


@dataclass(frozen=True)
class Relocation:
    """Step `step` writes buffer `buffer` at `before`; from the next step on it lives at its own offset."""

    buffer: str
    before: str
    step: int
    size: int


def analyse(graph: Graph, aliases: dict[int, Value], scratch: list[list[int]], inplace: bool = True,
            steps: Sequence[Step] | None = None, relocate: bool = False) -> Buffers:
    """Buffer requests for the arena. `aliases` maps id(output) -> the value whose memory it reuses;
    `steps` (default: graph.nodes) are what invoke() runs in order: operators, or row groups whose
    intermediate tensors never exist whole (memory/fusion.py); `relocate`: chains of in-place
    operators may move a tensor back after its step (see the module's docstring)."""
    steps = list(graph.nodes) if steps is None else list(steps)

    def root(value: Value) -> Value:
        while id(value) in aliases:
            value = aliases[id(value)]
        return value

    names: dict[int, str] = {}
    spans: dict[str, list[int]] = {}
    sizes: dict[str, int] = {}

    def touch(value: Value, step: int) -> None:
        if value.is_constant or value.is_variable:
            return
        base = root(value)
        name = names.setdefault(id(base), f"t{len(names)}")
        names.setdefault(id(value), name)
        span = spans.setdefault(name, [step, step])
        span[0], span[1] = min(span[0], step), max(span[1], step)
        sizes[name] = max(sizes.get(name, 0), value.type.num_bytes, base.type.num_bytes)

    end = len(steps)
    for value in graph.inputs:
        touch(value, 0)
    for step, node in enumerate(steps):
        for operand in node.inputs:
            if operand is not None:
                touch(operand, step)
        for result in node.outputs:
            touch(result, step)
    for value in graph.outputs:
        touch(value, end)

    requests = [BufferRequest(name, sizes[name], *spans[name]) for name in spans]
    scratch_names = []
    for step, step_scratch in enumerate(scratch):
        step_names = [f"s{step}_{k}" for k in range(len(step_scratch))]
        requests += [BufferRequest(n, b, step, step) for n, b in zip(step_names, step_scratch, strict=True)]
        scratch_names.append(step_names)
    pairs = _inplace_pairs(steps, names, spans) if inplace else []
    buffers = Buffers(requests, names, scratch_names, pairs)
    if relocate:
        _split_drifting(buffers)
    return buffers


def _split_drifting(buffers: Buffers) -> None:
    """Give each in-place output that drifts (distance > 0) and is itself the in-place input of a
    later step a second buffer for its own step (NAME@STEP)."""
    chained = {p.input for p in buffers.inplace}
    index = {r.name: k for k, r in enumerate(buffers.requests)}
    for k, p in enumerate(buffers.inplace):
        request = buffers.requests[index[p.output]]
        if p.distance <= 0 or p.output not in chained or request.last <= p.step or request.first != p.step:
            continue
        before = f"{p.output}@{p.step}"
        buffers.requests[index[p.output]] = BufferRequest(p.output, request.size, p.step + 1, request.last)
        buffers.requests.append(BufferRequest(before, request.size, p.step, p.step))
        buffers.inplace[k] = InPlacePair(p.input, before, p.distance, p.step)
        buffers.relocations.append(Relocation(p.output, before, p.step, request.size))


def _inplace_pairs(steps: list[Step], names: dict[int, str], spans: dict[str, list[int]]) -> list[InPlacePair]:
    pairs: list[InPlacePair] = []
    taken: set[str] = set()
    for step, node in enumerate(steps):
        pair = _best_pair(node, step, names, spans, taken)
        if pair is not None:
            pairs.append(pair)
            taken.add(pair.output)
    return pairs


def _best_pair(node: Step, step: int, names: dict[int, str], spans: dict[str, list[int]],
               taken: set[str]) -> InPlacePair | None:
    if len(node.outputs) != 1:
        return None
    out = node.outputs[0]
    out_name = names.get(id(out))
    if out_name is None or out_name in taken or spans[out_name][0] != step:
        return None
    best: InPlacePair | None = None
    for x in node.inputs:
        if x is None or x.is_constant or x.is_variable:
            continue
        in_name = names[id(x)]
        if in_name == out_name or spans[in_name][1] != step:  # the input must die here
            continue
        if sum(1 for v in node.inputs if v is x) > 1:
            continue
        if isinstance(node, Node):
            distance = overlap_distance(node, x, out)
        else:  # a row group: from its row order (memory/rows.py)
            distance = node.inplace.get(id(x))
        if distance is None:
            continue
        distance = align_up(distance, 16)
        saving = x.type.num_bytes + out.type.num_bytes - max(distance + x.type.num_bytes, out.type.num_bytes)
        if saving > 0 and (best is None or distance < best.distance):
            best = InPlacePair(in_name, out_name, distance, step)
    return best
