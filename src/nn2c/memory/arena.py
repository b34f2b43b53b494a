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
from nn2c.memory.requests import BufferRequest, MemoryPlan, live_bytes_lower_bound

DEBUG_GUARD = 16  # bytes of canary before the arena and behind every buffer in debug builds


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

    def offset(self, value: Value) -> int:
        return self.base + self.plan.offsets[self.buffers.buffer_of[id(value)]]

    def scratch_offset(self, step: int, index: int) -> int:
        return self.base + self.plan.offsets[self.buffers.scratch_names[step][index]]

    @property
    def lower_bound_no_inplace(self) -> int:
        """Max live bytes with every buffer (as planned) separate."""
        return live_bytes_lower_bound(self.requests)


def plan_arena(graph: Graph, aliases: dict[int, Value], scratch: list[list[int]], planner: str = "exact",
               inplace: bool = True, time_limit: float = 10.0, debug: bool = False,
               steps: Sequence[Step] | None = None) -> ArenaPlan:
    """Offsets for the buffers of `graph` run as `steps` (default: graph.nodes in order); scratch[step]
    lists the bytes of each scratch buffer that step asks for."""
    buffers = analyse(graph, aliases, scratch, inplace=inplace and not debug, steps=steps)
    requests = buffers.requests
    if debug:
        requests = [replace(r, size=r.size + DEBUG_GUARD) for r in buffers.requests]
    plan, honoured = plan_memory(requests, buffers.inplace, planner, time_limit)
    guards = None
    if debug:
        guards = [(DEBUG_GUARD + plan.offsets[r.name] + r.size, r.first, r.last) for r in buffers.requests]
    return ArenaPlan(plan, buffers, requests, honoured, DEBUG_GUARD if debug else 0, guards)
