"""Memory-aware operator ordering: the topological order with the smallest peak of live bytes.

The state of a partial schedule is the set of nodes already run (a downset of the graph); the
bytes live while node n runs depend only on that set and n. best(done) = min over ready n of
max(live(done, n), best(done + n)) is solved exactly with memoisation; chains contribute one state
per node, so branchy graphs (residual blocks, detection heads, SE blocks) stay small. When the
state count passes a limit, a greedy order (run the ready node whose step peaks lowest, preferring
nodes that free memory) is used instead.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

from nn2c.ir import Graph, Node, Value


class _Problem:
    def __init__(self, graph: Graph) -> None:
        self.nodes = graph.nodes
        self.index = {id(n): i for i, n in enumerate(self.nodes)}
        n = len(self.nodes)
        self.preds = [0] * n
        self.values: list[Value] = []
        value_ids: dict[int, int] = {}
        for i, node in enumerate(self.nodes):
            for v in node.inputs:
                if v is not None and v.producer is not None and id(v.producer) in self.index:
                    self.preds[i] |= 1 << self.index[id(v.producer)]
        for node in self.nodes:
            for v in list(node.inputs) + list(node.outputs):
                if v is not None and not v.is_constant and not v.is_variable and id(v) not in value_ids:
                    value_ids[id(v)] = len(self.values)
                    self.values.append(v)
        for v in graph.inputs + graph.outputs:
            if id(v) not in value_ids and not v.is_constant:
                value_ids[id(v)] = len(self.values)
                self.values.append(v)
        self.value_ids = value_ids
        self.size = [v.type.num_bytes for v in self.values]
        outputs = {id(v) for v in graph.outputs}
        # per value: producer node bit (0 for graph inputs) and the mask of its users
        self.producer = [1 << self.index[id(v.producer)] if v.producer is not None and id(v.producer) in self.index
                         else 0 for v in self.values]
        self.users = [sum(1 << self.index[id(u)] for u in v.users if id(u) in self.index) for v in self.values]
        self.forever = [id(v) in outputs for v in self.values]
        self.touch = [
            [value_ids[id(v)] for v in list(node.inputs) + list(node.outputs) if v is not None and id(v) in value_ids]
            for node in self.nodes
        ]
        self.full = (1 << n) - 1

    def live_while(self, done: int, i: int) -> int:
        """Bytes live while node i runs after the nodes in `done`."""
        running = done | (1 << i)
        total = 0
        touched = set(self.touch[i])
        for k, size in enumerate(self.size):
            if k in touched:
                total += size
                continue
            produced = self.producer[k] == 0 or (self.producer[k] & done)
            if produced and (self.forever[k] or (self.users[k] & ~running)):
                total += size
        return total

    def ready(self, done: int) -> list[int]:
        return [i for i in range(len(self.nodes)) if not (done >> i) & 1 and (self.preds[i] & ~done) == 0]


def order_peak(graph: Graph, order: list[Node]) -> int:
    problem = _Problem(graph)
    done, peak = 0, 0
    for node in order:
        i = problem.index[id(node)]
        peak = max(peak, problem.live_while(done, i))
        done |= 1 << i
    return peak


# The exact search stops (and the greedy order is used) after this many states, or after this many
# value visits in live_while: a long unrolled loop (hundreds of nodes in a chain) costs each state
# a visit of every value. The models of models/ need at most about 100,000 visits.
MAX_STATES = 20000
MAX_VISITS = 5_000_000


def memory_aware_order(graph: Graph, max_states: int = MAX_STATES) -> list[Node]:
    """A topological order of graph.nodes with minimal peak live bytes (exact when feasible)."""
    problem = _Problem(graph)
    if len(problem.nodes) <= 1:
        return list(problem.nodes)
    states = visits = 0

    class TooLarge(Exception):
        pass

    @cache
    def best(done: int) -> tuple[int, int]:
        nonlocal states, visits
        states += 1
        if states > max_states or visits > MAX_VISITS:
            raise TooLarge
        if done == problem.full:
            return 0, -1
        choice, value = -1, None
        for i in problem.ready(done):
            visits += len(problem.size)
            step = problem.live_while(done, i)
            if value is not None and step >= value:
                continue
            rest, _ = best(done | (1 << i))
            total = max(step, rest)
            if value is None or total < value:
                value, choice = total, i
        assert value is not None
        return value, choice

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(problem.nodes) + 1000))
    try:
        best(0)
        order, done = [], 0
        while done != problem.full:
            _, i = best(done)
            order.append(problem.nodes[i])
            done |= 1 << i
        return order
    except TooLarge:
        return _greedy_order(problem)
    finally:
        best.cache_clear()
        sys.setrecursionlimit(limit)


def _greedy_order(problem: _Problem) -> list[Node]:
    order, done = [], 0
    while done != problem.full:
        ready = problem.ready(done)
        i = min(ready, key=lambda k: (problem.live_while(done, k), k))
        order.append(problem.nodes[i])
        done |= 1 << i
    return order


@dataclass(frozen=True)
class Schedule:
    """The `schedule` stage's result: the order in which invoke() runs the operators.

    `steps` is filled by the fusion stage: one operator per step (layer by layer), or row groups
    that run several operators a row at a time.
    """

    order: tuple[Node, ...]
    peak_live_bytes: int  # the live-tensor peak of this order (no in-place sharing)
    peak_as_imported: int  # the same for the order the graph had before
    steps: tuple[Any, ...] = ()  # what invoke() runs: operators and row groups (memory/fusion.py)
    fusion: Any = None  # memory/fusion.Choice: the groups and the RAM/cost trade-off considered

    @property
    def reordered(self) -> bool:
        return self.peak_live_bytes < self.peak_as_imported


def schedule(graph: Graph, reorder: bool = True) -> Schedule:
    """Choose the execution order (the memory-aware one when it lowers the peak) and apply it to
    the graph, so that every later stage sees graph.nodes in execution order."""
    as_imported = order_peak(graph, graph.nodes)
    if reorder:
        order = memory_aware_order(graph)
        peak = order_peak(graph, order)
        if peak < as_imported:
            graph.reorder(order)
            return Schedule(tuple(order), peak, as_imported)
    return Schedule(tuple(graph.nodes), as_imported, as_imported)
