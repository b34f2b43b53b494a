"""Greedy-by-size planning, the algorithm of TFLite Micro's GreedyMemoryPlanner.

Buffers are placed largest first, each at the lowest offset where it does not overlap any
already placed buffer that is live at the same time.
"""

from __future__ import annotations

import random

from nn2c.memory.requests import BufferRequest, MemoryPlan, align_up, live_bytes_lower_bound


def plan_greedy(requests: list[BufferRequest]) -> MemoryPlan:
    order = sorted(range(len(requests)), key=lambda i: (-requests[i].size, requests[i].first, i))
    placed: list[tuple[BufferRequest, int]] = []
    offsets: dict[str, int] = {}
    for i in order:
        request = requests[i]
        if request.pinned_offset is not None:
            offset = request.pinned_offset
        else:
            conflicts = sorted(
                (o, o + r.size) for r, o in placed if r.overlaps_in_time(request) and r.size
            )
            offset = 0
            for start, end in conflicts:
                if align_up(offset, request.alignment) + request.size <= start:
                    break
                offset = max(offset, end)
            offset = align_up(offset, request.alignment)
        offsets[request.name] = offset
        placed.append((request, offset))
    arena = max((o + r.size for r, o in placed), default=0)
    return MemoryPlan(offsets, align_up(arena, 16), live_bytes_lower_bound(requests), "greedy")


def plan_greedy_inplace(requests: list[BufferRequest], pairs: list) -> tuple[MemoryPlan, list]:
    """First-fit placement that lets in-place outputs overlap their inputs.

    An in-place pair (input, output, distance D) is safe when the output starts at least D bytes
    below the input, or lies wholly above it. Each placed buffer forbids an open interval of
    offsets to the next one; buffers are placed at the lowest aligned offset outside all
    intervals. Placing in reverse execution order lets each producer's output be placed first, so
    its input can go above it by D: chains drift upward only until a gap opens, then restart at 0.
    Tries reverse and forward execution order and keeps the smaller arena.
    """
    best: MemoryPlan | None = None
    for order in (_reverse_order(requests), sorted(requests, key=lambda r: (r.first, r.last, r.name))):
        plan = _first_fit(requests, order, pairs)
        if best is None or plan.arena_bytes < best.arena_bytes:
            best = plan
    assert best is not None
    return best, list(pairs)


def _reverse_order(requests: list[BufferRequest]) -> list[BufferRequest]:
    return sorted(requests, key=lambda r: (-r.last, -r.first, r.name))


def _forbidden(r: BufferRequest, q: BufferRequest, q_offset: int, rel: dict) -> tuple[int, int]:
    """Open interval of offsets that r may not take, given q placed at q_offset (both live together)."""
    if (q.name, r.name) in rel:  # r is written over its input q
        return q_offset - rel[(q.name, r.name)], q_offset + q.size
    if (r.name, q.name) in rel:  # q is written over its input r
        return q_offset - r.size, q_offset + rel[(r.name, q.name)]
    return q_offset - r.size, q_offset + q.size


def _first_fit(requests: list[BufferRequest], order: list[BufferRequest], pairs: list,
               conflicts: dict[str, list[BufferRequest]] | None = None, lower_bound: int | None = None
               ) -> MemoryPlan:
    """`conflicts` (each buffer's non-empty buffers live with it: _conflicts) and the live-bytes
    `lower_bound`, when the caller places the same buffers many times."""
    rel = {(p.input, p.output): p.distance for p in pairs}
    if conflicts is None:
        conflicts = _conflicts(requests)
    offsets: dict[str, int] = {}
    for r in order:
        # (sorted by their start: once the candidate fits below one, it fits below all later ones; an
        # interval it skipped over can no longer cover it, as the candidate only rises)
        intervals = sorted(_forbidden(r, q, offsets[q.name], rel) for q in conflicts[r.name] if q.name in offsets)
        offset = 0
        for low, high in intervals:
            if offset <= low:
                break
            if offset < high:
                offset = align_up(high, r.alignment)
        offsets[r.name] = offset
    arena = max((offsets[r.name] + r.size for r in order), default=0)
    if lower_bound is None:
        lower_bound = live_bytes_lower_bound(requests, pairs)
    return MemoryPlan(offsets, align_up(arena, 16), lower_bound, "greedy in-place")


def _conflicts(requests: list[BufferRequest]) -> dict[str, list[BufferRequest]]:
    """Per buffer, the other non-empty buffers live at some step with it (none for an empty one)."""
    by_start = sorted((r for r in requests if r.size), key=lambda r: r.first)
    conflicts: dict[str, list[BufferRequest]] = {r.name: [] for r in requests}
    for i, r in enumerate(by_start):
        for q in by_start[i + 1 :]:
            if q.first > r.last:
                break
            conflicts[r.name].append(q)
            conflicts[q.name].append(r)
    return conflicts


ITERATED_ROUNDS = 8  # first-fit rounds per starting order in plan_iterated
PERTURBED_STARTS = 40  # then this many starting orders with neighbours swapped, PERTURBED_ROUNDS rounds each
PERTURBED_ROUNDS = 3
PERTURBED_SWAPS = 5  # one swap of two neighbours per this many buffers


def plan_iterated(requests: list[BufferRequest], pairs: list, target: int,
                  rounds: int = ITERATED_ROUNDS) -> MemoryPlan | None:
    """A first-fit plan within `target` bytes, or None: from six orders (longest-lived, largest, last-dying,
    first-born, largest size x lifetime, last-dying then largest first), each round moves the buffers that
    ended above the target to the front of the order and places everything again; then from those orders
    with random neighbours swapped (a seeded generator: the same plan on every run). With the aligned
    live-bytes bound as the target, a plan found is optimal.

    Measured on the 67 arenas without relocation ties that the integer program's short search met while
    profiling 40 MCUNet-style candidates: the first three orders alone reach the bound on none of them,
    the six on 16, with the swapped orders on 40 (the short search: 39), in 9 ms each where they do, 26 ms
    where they cannot (the short search takes 30-300 ms)."""
    starts = [
        sorted(requests, key=lambda r: (-(r.last - r.first), -r.size, r.name)),
        sorted(requests, key=lambda r: (-r.size, r.first, r.name)),
        _reverse_order(requests),
        sorted(requests, key=lambda r: (r.first, -r.size, r.name)),
        sorted(requests, key=lambda r: (-r.size * (r.last - r.first + 1), r.name)),
        sorted(requests, key=lambda r: (-r.last, -r.size, r.name)),
    ]
    conflicts, bound = _conflicts(requests), live_bytes_lower_bound(requests, pairs)
    rng = random.Random(0)
    for attempt in range(len(starts) + PERTURBED_STARTS):
        order = starts[attempt % len(starts)]
        if attempt >= len(starts):
            order = list(order)
            for _ in range(max(1, len(order) // PERTURBED_SWAPS)):
                i = rng.randrange(max(len(order) - 1, 1))
                order[i : i + 2] = order[i : i + 2][::-1]
        plan = _rounds(requests, order, pairs, conflicts, bound, target,
                       rounds if attempt < len(starts) else PERTURBED_ROUNDS)
        if plan is not None:
            return plan
    return None


def _rounds(requests: list[BufferRequest], order: list[BufferRequest], pairs: list,
            conflicts: dict[str, list[BufferRequest]], bound: int, target: int, rounds: int) -> MemoryPlan | None:
    """plan_iterated's rounds from one starting order: a plan within `target`, or None."""
    seen: set[tuple[str, ...]] = set()  # (first fit places an order it saw again as before)
    for _ in range(rounds):
        plan = _first_fit(requests, order, pairs, conflicts, bound)
        if plan.arena_bytes <= target:
            return plan
        seen.add(tuple(r.name for r in order))
        above = [r for r in order if plan.offsets[r.name] + r.size > target]
        moved = {r.name for r in above}
        order = above + [r for r in order if r.name not in moved]
        if tuple(r.name for r in order) in seen:
            break
    return None
