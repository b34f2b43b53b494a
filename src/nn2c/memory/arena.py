"""The `plan_memory` stage: every run-time tensor and scratch buffer of the scheduled graph gets its
offset in one arena.

Input: the graph in execution order, the zero-copy aliases and the per-step scratch requests that
the lowerings made. Output: an ArenaPlan, which the renderer reads to bind pointers to addresses.
A debug build puts a guard zone behind every buffer (and a canary before the arena) and does not
let outputs overlap inputs, so that a kernel writing outside its tensor is caught after its step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from nn2c.ir import Graph, Value
from nn2c.memory.inplace import InPlacePair
from nn2c.memory.lifetimes import Buffers, Step, analyse
from nn2c.memory.planner import plan_memory
from nn2c.memory.requests import BufferRequest, MemoryPlan, align_up, live_bytes_lower_bound

DEBUG_GUARD = 16  # bytes of canary before the arena and behind every buffer in debug builds


@dataclass(frozen=True)
class Move:
    """After step `step`, `size` bytes move from arena offset `source` to `target` (memmove)."""

    step: int
    source: int
    target: int
    size: int


@dataclass
class ArenaPlan:
    plan: MemoryPlan
    buffers: Buffers
    requests: list[BufferRequest]  # as planned (debug builds: each grown by its guard zone)
    honoured: list[InPlacePair]  # in-place pairs whose output really overlaps its input
    base: int  # arena bytes before the first buffer (the debug canary)
    guards: list[tuple[int, int, int]] | None  # debug: (guard offset, first step, last step) per buffer

    @property
    def arena_bytes(self) -> int:
        """Bytes of the arena array: the plan, plus the leading canary in debug builds."""
        return self.plan.arena_bytes + self.base

    def offset(self, value: Value, step: int | None = None) -> int:
        """Where `value` is while step `step` runs (None: after the step that makes it)."""
        return self.base + self.plan.offsets[self.buffers.buffer_at(value, step)]

    @property
    def moves(self) -> list[Move]:
        """The relocations the plan placed apart: a memmove after their step (memory/lifetimes.py)."""
        offsets = self.plan.offsets
        return [Move(r.step, self.base + offsets[r.before], self.base + offsets[r.buffer], r.size)
                for r in self.buffers.relocations if offsets[r.before] != offsets[r.buffer]]

    def scratch_offset(self, step: int, index: int) -> int:
        return self.base + self.plan.offsets[self.buffers.scratch_names[step][index]]

    @property
    def lower_bound_no_inplace(self) -> int:
        """Max live bytes with every buffer (as planned) separate."""
        return live_bytes_lower_bound(self.requests)


def plan_arena(graph: Graph, aliases: dict[int, Value], scratch: list[list[int]], planner: str = "exact",
               inplace: bool = True, time_limit: float = 10.0, debug: bool = False,
               steps: Sequence[Step] | None = None, relocate: bool = True, planned: Planned | None = None
               ) -> ArenaPlan:
    """Offsets for the buffers of `graph` run as `steps` (default: graph.nodes in order); scratch[step]
    lists the bytes of each scratch buffer that step asks for; `relocate`: chains of in-place
    operators may move a tensor back after its step (memory/lifetimes.py). `planned`: plan_buffers'
    result for these very steps with the exact planner and relocation (the schedule stage's, made
    while it chose them), used when it is what this call would compute."""
    relocating = relocate and inplace and planner == "exact"
    if not debug:
        # a plan proven optimal there (not cut by a limit) is what this solve would give again
        if planned is None or not planned[1].proven or not relocating:
            planned = plan_buffers(graph, aliases, scratch, steps, inplace, planner, time_limit, relocating)
        buffers, plan, honoured = planned
        return ArenaPlan(plan, buffers, buffers.requests, honoured, 0, None)
    buffers = analyse(graph, aliases, scratch, inplace=False, steps=steps)
    requests = [replace(r, size=r.size + DEBUG_GUARD) for r in buffers.requests]
    plan, honoured = plan_memory(requests, buffers.inplace, planner, time_limit)
    guards = [(DEBUG_GUARD + plan.offsets[r.name] + r.size, r.first, r.last) for r in buffers.requests]
    return ArenaPlan(plan, buffers, requests, honoured, DEBUG_GUARD, guards)


Planned = tuple[Buffers, MemoryPlan, list[InPlacePair]]  # what plan_buffers returns


def plan_buffers(graph: Graph, aliases: dict[int, Value], scratch: list[list[int]], steps: Sequence[Step] | None,
                 inplace: bool, planner: str, time_limit: float, relocate: bool, full_search: bool = True) -> Planned:
    """The buffers and their plan; with `relocate`, the plan with relocations is kept only when its
    arena is smaller than without (each relocation placed apart costs a memmove per inference).
    `full_search`: plan_memory's."""
    buffers = analyse(graph, aliases, scratch, inplace=inplace, steps=steps)
    plan, honoured = plan_memory(buffers.requests, buffers.inplace, planner, time_limit, full_search=full_search)
    if not relocate or plan.arena_bytes <= align_up(plan.lower_bound, 16):
        return buffers, plan, honoured
    moving = analyse(graph, aliases, scratch, inplace=inplace, steps=steps, relocate=True)
    if not moving.relocations:
        return buffers, plan, honoured
    ties = [(r.before, r.buffer) for r in moving.relocations]
    moved_plan, moved_honoured = plan_memory(moving.requests, moving.inplace, planner, time_limit, ties,
                                             full_search)
    if moved_plan.arena_bytes < plan.arena_bytes:
        return moving, moved_plan, moved_honoured
    return buffers, plan, honoured
