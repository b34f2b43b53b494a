"""Exact arena planning as an integer program, solved by HiGHS (scipy.optimize.milp).

Variables: the offset of every buffer (in units of its alignment) and the arena size A.
For every two buffers live at the same step, a binary chooses which one lies below the other
(big-M disjunction); for an in-place pair the choice is "the output starts at least `distance`
below the input" or "the output lies wholly above the input". Minimise A; with `ties` (two
buffers of one tensor before and after a relocation, memory/lifetimes.py), also the number of ties
placed apart, each weighing less than a byte of arena together.
The solve has a time limit; the best plan found by then is kept, and the caller falls back to
greedy when no plan was found or greedy is better.

HiGHS accepts a binary within 1e-6 of 0 or 1 (its feasibility tolerance): times a big M of
megabytes that relaxes a disjunction by bytes, and rounded offsets could overlap by that much.
The offsets are therefore not read from the solution but recomputed from its choices (which buffer
lies below which): the lowest aligned offsets that honour every choice exactly (a longest path).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp
from scipy.sparse import lil_matrix

from nn2c.memory.inplace import InPlacePair
from nn2c.memory.requests import BufferRequest, MemoryPlan, align_up

# Branch-and-bound nodes the solver may explore: a work limit, unlike the time limit, stops at the
# same plan on every run and machine, so the generated code stays byte-identical (the time limit
# remains as a safety net for a very slow machine).
NODE_LIMIT = 20_000
QUICK_NODE_LIMIT = 200  # the short search's work limit (a plan at the bound is kept, else the full search runs)


class _SolverStdout:
    """The HiGHS that scipy 1.17 bundles prints a debug line ("HighsMipSolverData::
    transformNewIntegerFeasibleSolution tmpSolver.run();") with C's printf whenever it repairs an
    incumbent, whatever its output options: in a compile's or a sweep's output that line is noise. While
    any solve runs (two threads may solve at once: a reference count), file descriptor 1 points to
    /dev/null; C's buffers are flushed before it is given back, so nothing the solver buffered comes out
    later. Python's own stdout is flushed before. Where C's stdio cannot be reached (no libc by that
    name), nothing is redirected."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved: int | None = None
        self._libc: ctypes.CDLL | None = None
        try:
            libc = ctypes.CDLL(None)
            if hasattr(libc, "fflush"):
                self._libc = libc
        except (OSError, TypeError):  # (Windows: no process-wide C library by that name)
            pass

    @contextmanager
    def silenced(self) -> Iterator[None]:
        self._enter()
        try:
            yield
        finally:
            self._leave()

    def _enter(self) -> None:
        with self._lock:
            self._depth += 1
            if self._depth > 1 or self._libc is None:
                return
            try:
                if sys.stdout is not None:
                    sys.stdout.flush()
                self._libc.fflush(None)
                saved = os.dup(1)
            except (OSError, ValueError):  # no file descriptor 1 (a daemon), or a closed stream
                return
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
            self._saved = saved

    def _leave(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth or self._saved is None or self._libc is None:
                return
            self._libc.fflush(None)
            os.dup2(self._saved, 1)
            os.close(self._saved)
            self._saved = None


_SOLVER_STDOUT = _SolverStdout()


def _solve(cost: np.ndarray, integrality: np.ndarray, bounds: Bounds, constraints: LinearConstraint,
           options: dict) -> OptimizeResult:
    """scipy's milp with the solver's debug printf kept out of stdout (_SolverStdout)."""
    with _SOLVER_STDOUT.silenced():
        return milp(cost, integrality=integrality, bounds=bounds, constraints=constraints,
                    options={"disp": False, **options})


def plan_exact(requests: list[BufferRequest], pairs: list[InPlacePair], lower_bound: int,
               time_limit: float = 10.0, upper_bound: int | None = None,
               node_limit: int = NODE_LIMIT, ties: list[tuple[str, str]] | None = None,
               optimal_at: int | None = None, full_search: bool = True) -> MemoryPlan | None:
    """The plan of least arena (see the module's docstring); `optimal_at`: an arena no plan can go
    below (the aligned live-bytes bound), which lets a short search stop early when it reaches it.
    Without `full_search`, the short search's plan is returned wherever it ends."""
    live = [r for r in requests if r.size > 0]
    if not live:
        return MemoryPlan({r.name: 0 for r in requests}, 0, lower_bound, "exact")
    index = {r.name: i for i, r in enumerate(live)}
    distance = {(index[p.input], index[p.output]): p.distance for p in pairs
                if p.input in index and p.output in index}
    conflicts = [  # (lower candidate i, j, the gap i needs below j when i is below j)
        (i, j)
        for i in range(len(live))
        for j in range(i + 1, len(live))
        if live[i].overlaps_in_time(live[j])
    ]
    tied = [(index[a], index[b]) for a, b in ties or [] if a in index and b in index]
    n, m, t = len(live), len(conflicts), len(tied)
    big_m = sum(align_up(r.size, r.alignment) for r in live) + sum(abs(p.distance) for p in pairs)
    # the arena never needs more than big_m; an upper bound from another planner prunes the search, and
    # makes every disjunction's M as small as a plan within it allows (a far tighter relaxation)
    arena_cap = big_m if upper_bound is None else min(upper_bound, big_m)
    # x = [k_0..k_{n-1}, z_0..z_{m-1}, A, u_0..u_{t-1}]; offset_i = alignment_i * k_i; u = 1: a tie apart
    num_vars = n + m + 1 + t
    a_col = n + m
    rows = 2 * m + n + 2 * t
    matrix = lil_matrix((rows, num_vars))
    lower = np.full(rows, -np.inf)
    upper = np.zeros(rows)
    row = 0
    # z = 0: i below j, needing gap_ij = off_j - off_i; z = 1: j below i, needing gap_ji.
    # Apart, the lower one's size is the gap; an in-place output may go `distance` below its input.
    gaps = [(distance.get((j, i), live[i].size), distance.get((i, j), live[j].size)) for i, j in conflicts]
    for c, ((i, j), (gap_ij, gap_ji)) in enumerate(zip(conflicts, gaps, strict=True)):
        ai, aj = live[i].alignment, live[j].alignment
        # off_i + gap_ij <= off_j + M z, where M is the most off_i + gap_ij - off_j can be in the arena
        m_ij = arena_cap - live[i].size + gap_ij
        matrix[row, i], matrix[row, j], matrix[row, n + c] = ai, -aj, -m_ij
        upper[row] = -gap_ij
        row += 1
        # off_j + gap_ji <= off_i + M (1 - z)
        m_ji = arena_cap - live[j].size + gap_ji
        matrix[row, j], matrix[row, i], matrix[row, n + c] = aj, -ai, m_ji
        upper[row] = m_ji - gap_ji
        row += 1
    for i, r in enumerate(live):  # off_i + s_i <= A
        matrix[row, i], matrix[row, a_col] = r.alignment, -1
        upper[row] = -r.size
        row += 1
    for c, (i, j) in enumerate(tied):  # |off_i - off_j| <= M u
        for sign in (1, -1):
            matrix[row, i], matrix[row, j], matrix[row, a_col + 1 + c] = sign * live[i].alignment, \
                -sign * live[j].alignment, -arena_cap
            row += 1
    cost = np.zeros(num_vars)
    cost[a_col] = 1.0
    cost[a_col + 1:] = 0.5 / (t + 1)  # all ties apart weigh less than one byte of arena
    integrality = np.ones(num_vars)
    integrality[a_col] = 0
    upper_k = [max(arena_cap - r.size, 0) // r.alignment for r in live]
    # and no plan goes below the live-bytes bound: with it, the solver stops at the first plan that reaches
    # it (the usual case) instead of proving the bound itself
    floor = np.zeros(num_vars)
    floor[a_col] = min(lower_bound, arena_cap)
    bounds = Bounds(floor, np.array(upper_k + [1] * m + [arena_cap] + [1] * t, dtype=float))
    constraints = LinearConstraint(matrix.tocsr(), lower, upper)
    result = quick = quick_found = None
    if optimal_at is not None:
        # first a short search without presolve: on most arenas it reaches the live-bytes bound (the plan
        # is then optimal) in a tenth of the time presolve alone takes on an MCUNet-size model
        quick = _solve(cost, integrality, bounds, constraints,
                       {"time_limit": time_limit, "node_limit": QUICK_NODE_LIMIT, "presolve": False})
        if quick.x is not None and quick.fun <= optimal_at:  # (every tie joined as well)
            result = quick_found = quick
        elif not full_search:
            result = quick
    if result is None:
        result = _solve(cost, integrality, bounds, constraints, {"time_limit": time_limit, "node_limit": node_limit})
    if result.x is None:
        return None
    # (lower, upper, the gap the upper needs above the lower) as the solution chose
    below = [(i, j, gap_ij) if result.x[n + c] < 0.5 else (j, i, gap_ji)
             for c, ((i, j), (gap_ij, gap_ji)) in enumerate(zip(conflicts, gaps, strict=True))]
    below.sort(key=lambda b: result.x[b[0]] * live[b[0]].alignment)  # bottom up: one pass nearly always does
    placed = offsets_from_order([r.alignment for r in live], below)
    if placed is None:
        return None
    offsets = {r.name: placed[i] for i, r in enumerate(live)}
    for r in requests:
        offsets.setdefault(r.name, 0)
    arena = max(offsets[r.name] + r.size for r in live)
    # (a short search kept short of the bound counts as unproven: its status may say optimal within
    # HiGHS's relative gap, which is wider than the ties' weight)
    proven = result is quick_found or (result.status == 0 and result is not quick)
    status = "exact" if proven else "exact (work or time limit: best found)"
    return MemoryPlan(offsets, align_up(arena, 16), lower_bound, status)


def offsets_from_order(alignments: list[int], below: list[tuple[int, int, int]]) -> list[int] | None:
    """The lowest offsets (each a multiple of its alignment, >= 0) with offset[upper] >= offset[lower] +
    gap for every (lower, upper, gap), by Bellman-Ford relaxation for the longest path; None when the
    choices contradict each other (a cycle that keeps raising an offset)."""
    offsets = [0] * len(alignments)
    for _ in range(len(alignments) + 1):
        changed = False
        for lower, upper, gap in below:
            need = offsets[lower] + gap
            if offsets[upper] < need:
                offsets[upper] = align_up(need, alignments[upper])
                changed = True
        if not changed:
            return offsets
    return None
