"""One entry point for arena planning: choose the planner, check the result."""

from __future__ import annotations

from nn2c.memory.exact import plan_exact
from nn2c.memory.greedy import plan_greedy, plan_greedy_inplace, plan_iterated
from nn2c.memory.inplace import InPlacePair
from nn2c.memory.requests import (
    BufferRequest,
    MemoryPlan,
    align_up,
    check_plan,
    live_bytes_lower_bound,
)

PLANNERS = ("exact", "greedy")


def plan_memory(requests: list[BufferRequest], pairs: list[InPlacePair], planner: str = "exact",
                time_limit: float = 10.0, ties: list[tuple[str, str]] | None = None, full_search: bool = True
                ) -> tuple[MemoryPlan, list[InPlacePair]]:
    """Returns the plan and the in-place pairs it honours (TFLM's greedy honours none).

    "exact": the better of greedy-by-size with and without in-place groups; when that is above the
    lower bound, an ILP bounded by it, which keeps the best plan found within the time limit.
    `ties`: pairs of buffers (one tensor before and after a relocation) put at one offset wherever
    the plan allows it, since apart they cost a copy. Without `full_search`, the ILP stops after its
    short search (the fusion stage's first look at many candidate schedules).
    """
    plan, honoured = _plan(requests, pairs, planner, time_limit, ties or [], full_search)
    if ties:
        plan = _join_ties(plan, requests, pairs if planner == "exact" else [], ties)
    return plan, honoured


def _plan(requests: list[BufferRequest], pairs: list[InPlacePair], planner: str, time_limit: float,
          ties: list[tuple[str, str]], full_search: bool) -> tuple[MemoryPlan, list[InPlacePair]]:
    greedy = plan_greedy(requests)
    check_plan(requests, greedy)
    if planner == "greedy":
        return greedy, []
    lower_bound = live_bytes_lower_bound(requests, pairs)
    best, honoured = MemoryPlan(greedy.offsets, greedy.arena_bytes, lower_bound, "greedy"), []
    if pairs:
        grouped, kept = plan_greedy_inplace(requests, pairs)
        check_plan(requests, grouped, kept)
        if grouped.arena_bytes <= best.arena_bytes:
            best, honoured = grouped, _used(grouped, kept, requests)
    # buffers sit at 16-byte offsets: the bound on rounded sizes proves the greedy plan optimal on small
    # tensors (a WHILE's condition), where the solver would only confirm it at length
    aligned = align_up(live_bytes_lower_bound(requests, pairs, aligned=True), 16)
    optimal_at = max(align_up(lower_bound, 16), aligned)
    if best.arena_bytes <= optimal_at:
        return MemoryPlan(best.offsets, best.arena_bytes, lower_bound, best.planner + " (optimal)"), honoured
    # first fit again from other orders, the buffers above the bound first (not where ties are: the
    # integer program also keeps them together)
    iterated = plan_iterated(requests, pairs, optimal_at) if not ties else None
    if iterated is not None:
        check_plan(requests, iterated, pairs)
        return (MemoryPlan(iterated.offsets, iterated.arena_bytes, lower_bound, "greedy in-place, iterated (optimal)"),
                _used(iterated, pairs, requests))
    exact = plan_exact(requests, pairs, lower_bound, time_limit=time_limit, upper_bound=best.arena_bytes,
                       ties=ties, optimal_at=optimal_at, full_search=full_search)
    if exact is not None and exact.arena_bytes < best.arena_bytes:
        try:
            check_plan(requests, exact, pairs)
        except AssertionError:  # a guard: plan_exact recomputes exact offsets from the solver's choices
            return best, honoured
        return exact, _used(exact, pairs, requests)
    return best, honoured


def _join_ties(plan: MemoryPlan, requests: list[BufferRequest], pairs: list[InPlacePair],
               ties: list[tuple[str, str]]) -> MemoryPlan:
    """Move one buffer of each tie placed apart onto the other's offset where nothing else is in the
    way (greedy plans place them independently; a move costs a copy at run time)."""
    offsets = dict(plan.offsets)
    by_name = {r.name: r for r in requests}
    for a, b in ties:
        for moving, target in ((b, a), (a, b)):
            if offsets[moving] == offsets[target]:
                break
            if _fits(by_name[moving], offsets[target], requests, offsets, pairs, plan.arena_bytes):
                offsets[moving] = offsets[target]
                break
    return MemoryPlan(offsets, plan.arena_bytes, plan.lower_bound, plan.planner)


def _fits(r: BufferRequest, offset: int, requests: list[BufferRequest], offsets: dict[str, int],
          pairs: list[InPlacePair], arena: int) -> bool:
    """Buffer r at `offset` stays in the arena and clear of every buffer live with it (in-place
    pairs may overlap as far as their distance allows)."""
    if offset + r.size > arena or offset % r.alignment:
        return False
    distance = {(p.input, p.output): p.distance for p in pairs if r.name in (p.input, p.output)}
    for q in requests:
        if q.name == r.name or not q.size or not r.size or not q.overlaps_in_time(r):
            continue
        if (q.name, r.name) in distance and offsets[q.name] - offset >= distance[(q.name, r.name)]:
            continue  # r written over its input q
        if (r.name, q.name) in distance and offset - offsets[q.name] >= distance[(r.name, q.name)]:
            continue  # q written over its input r
        if not (offset + r.size <= offsets[q.name] or offsets[q.name] + q.size <= offset):
            return False
    return True


def _used(plan: MemoryPlan, pairs: list[InPlacePair], requests: list[BufferRequest]) -> list[InPlacePair]:
    """The pairs whose output really shares bytes with its input in this plan (for reports)."""
    size = {r.name: r.size for r in requests}
    return [p for p in pairs
            if plan.offsets[p.output] < plan.offsets[p.input] + size[p.input]
            and plan.offsets[p.input] < plan.offsets[p.output] + size[p.output]]

