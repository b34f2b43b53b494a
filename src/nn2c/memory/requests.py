"""Buffer requests: what a planner places in the arena."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BufferRequest:
    """A buffer of `size` bytes live from step `first` to step `last` (inclusive)."""

    name: str
    size: int
    first: int
    last: int
    alignment: int = 16
    pinned_offset: int | None = None

    def overlaps_in_time(self, other: BufferRequest) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class MemoryPlan:
    offsets: dict[str, int]
    arena_bytes: int
    lower_bound: int
    planner: str

    @property
    def proven(self) -> bool:
        """No search can better this plan: the exact planner's full search ended, or the plan sits at the
        live-bytes bound (memory/planner.py labels it "(optimal)")."""
        return self.planner == "exact" or self.planner.endswith("(optimal)")


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def live_bytes_lower_bound(requests: list[BufferRequest], pairs: list | None = None, aligned: bool = False) -> int:
    """Max over steps of the bytes live at that step: no planner of these requests can go below it.

    An in-place pair at its step counts max(distance + input, output) bytes instead of both.
    `aligned`: every size (and distance) rounded up to the alignment, as a buffer at an aligned offset
    keeps the next one at least that far (a tighter bound on small tensors; not the reported one).
    """
    return max(live_bytes_per_step(requests, pairs, aligned).values(), default=0)


def live_bytes_per_step(requests: list[BufferRequest], pairs: list | None = None, aligned: bool = False
                        ) -> dict[int, int]:
    """The bytes live at each step from the first request's to the last one's (live_bytes_lower_bound's terms)."""
    if not requests:
        return {}

    def rounded(n: int) -> int:
        return align_up(n, 16) if aligned else n

    size = {r.name: rounded(r.size) for r in requests}
    saving_at: dict[int, int] = {}
    for p in pairs or []:
        shared = size[p.input] + size[p.output] - max(rounded(p.distance) + size[p.input], size[p.output])
        saving_at[p.step] = saving_at.get(p.step, 0) + max(shared, 0)
    steps = range(min(r.first for r in requests), max(r.last for r in requests) + 1)
    return {s: sum(size[r.name] for r in requests if r.first <= s <= r.last) - saving_at.get(s, 0) for s in steps}


def check_plan(requests: list[BufferRequest], plan: MemoryPlan, pairs: list | None = None) -> None:
    """Raise AssertionError if two buffers live at the same time share a byte, or one leaves the arena.

    An in-place pair (input, output, distance) may share bytes when the output starts at least
    `distance` bytes below the input.
    """
    placed = [(r, plan.offsets[r.name]) for r in requests]
    allowed = set()
    for p in pairs or []:
        if plan.offsets[p.input] - plan.offsets[p.output] >= p.distance:
            allowed.add((p.input, p.output))
            allowed.add((p.output, p.input))
    for r, offset in placed:
        assert offset % r.alignment == 0, f"{r.name} misaligned at {offset}"
        assert offset + r.size <= plan.arena_bytes, f"{r.name} ends past the arena"
    for i, (a, oa) in enumerate(placed):
        for b, ob in placed[i + 1 :]:
            if a.overlaps_in_time(b) and a.size and b.size and (a.name, b.name) not in allowed:
                assert oa + a.size <= ob or ob + b.size <= oa, f"{a.name} overlaps {b.name}"
