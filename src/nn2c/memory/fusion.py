"""Which operators run together by rows: the row groups of the schedule, chosen by a cost model.

A candidate is a run of consecutive steps of the execution order whose operators can all run a
row at a time (codegen/stream.py) and whose intermediate tensors are read only inside the run; the
last operator is its sink. Its RAM is what is live while it runs: the tensors alive across it, its
outside inputs, the sink's output (over a dying input where the row order allows, memory/rows.py),
its windows and the kernels' scratch. Tensors that cross a step boundary are the same whichever
groups the other steps form, so the peak of a grouping is the largest peak of its steps, and a
dynamic programme over the run boundaries finds, for every RAM level, the cheapest grouping.

Cost: the multiply-accumulates are unchanged (no row is computed twice); a group adds the bytes
its window slides move and one kernel call per row. Slack rows in a window trade RAM for moves.
A chain may also run in column bands (codegen/bands.py, MCUNetV2's patches with their rows
streamed): its windows shrink to a band's width, for the halo columns' MACs computed again, the
band copies and each band's calls.

Policies (CompileOptions.schedule): "layer" (no groups), "min-ram" (the smallest RAM, then the
cheapest), "auto" (the smallest RAM whose added cost stays within AUTO_OVERHEAD of the model's
cost), and a RAM budget (the cheapest grouping that fits).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from nn2c.codegen.bands import BAND_COUNTS, Bands, copied_bytes, plan_bands
from nn2c.codegen.context import EmitContext, NodeCode
from nn2c.codegen.stream import RowGroup, StreamOp, feed_pixels, feeds_sums, member_of, stream_op
from nn2c.ir import Graph, Node, Value
from nn2c.ir.cost import macs
from nn2c.memory.arena import Planned, plan_buffers
from nn2c.memory.lifetimes import Buffers, analyse
from nn2c.memory.requests import align_up, live_bytes_lower_bound
from nn2c.memory.rows import Member, Trace, inplace_distance, simulate, trace_loop

MAX_GROUP = 16  # operators in one group
AUTO_OVERHEAD = 0.05  # auto: added cost at most this fraction of the model's estimated cost
CALL_COST = 150  # instructions of one kernel call's set-up, in the cost model
MAC_COST = 1.0  # instructions per multiply-accumulate, in the cost model
# extra instructions per MAC of a call's odd last pixel (the DSP kernels run it alone, nn2c_gemm_one16:
# kws_ref_model's whole chain by 5-pixel rows in QEMU, 184,500 instructions less than pairing it
# with itself over 473,600 odd-pixel MACs, so about 0.6 of a paired MAC's 1.0 extra remain)
TAIL_COST = 0.6
# extra instructions per MAC of the row-accumulating FULLY_CONNECTED (its filter as stored, each
# slice's bytes extended in the loop) over the SIMD kernel's re-laid-out filter (micro_speech in QEMU:
# the row group's conv -> FC costs 12,600 Cortex-M4 instructions more than the two layers, about
# 0.35 per FC MAC once the 24 extra calls of each are taken off)
ACCUMULATE_COST = 0.35
# instructions per call of the sums kernel when a convolution feeds the FC a few pixels at a time
# (RowGroup.feed; micro_speech on the Cortex-M4: the group costs 25,800 instructions more than its
# two layers; less its 12 extra convolution calls and the sums' 0.35 per MAC, 150 per call of 4 pixels)
FEED_COST = 150.0
MOVE_COST = 0.25  # instructions per byte a window slide or a relocation (memmove) moves
SLACKS = (0, 1)  # slack rows per window, in multiples of its occupancy
BLOCKS = (1, 2, 4)  # sink rows per iteration tried (and the one giving MIN_PIXELS pixels per call)
NEAR_LEVELS = 12  # levels near the least RAM where the least-offset grouping is also planned
MIN_PIXELS = 16  # output pixels per call below which a row call costs noticeably more than a layer call


@dataclass(frozen=True)
class Option:
    """One way to run a run of steps: its peak live bytes and its added cost."""

    first: int
    last: int
    peak: int
    cost: float
    group: RowGroup | None  # None: the single operator, layer by layer
    drift: int = 0  # bytes an output written in place starts below its input (chains of them add up)
    saving: int = 0  # bytes the output written in place saves


@dataclass
class Choice:
    """The fusion stage's result: the steps in execution order and the trade-off it chose from."""

    steps: list[Node | RowGroup]
    arena_bytes: int  # of these steps, as the exact planner placed them while choosing
    layer_arena_bytes: int  # the same, layer by layer
    added_cost: float
    base_cost: float
    curve: list[tuple[int, float]]  # (arena, added cost) of the groupings planned, the trade-off curve
    policy: str
    considered: list[tuple[int, float]] = field(default_factory=list)  # (lower bound, cost) of every candidate
    # the exact planner's result for `steps` while choosing (buffers, plan, honoured pairs): the plan
    # stage reuses it instead of solving the same program again
    planned: Planned | None = None

    @property
    def groups(self) -> list[RowGroup]:
        return [s for s in self.steps if isinstance(s, RowGroup)]


def choose_steps(graph: Graph, codes: list[NodeCode], ctx: EmitContext, aliases: dict[int, Value],
                 policy: str = "auto", ram_budget: int | None = None, inplace: bool = True,
                 time_limit: float = 2.0, planner: str = "exact") -> Choice:
    """Steps for graph.nodes (already in execution order) under `policy`.

    The dynamic programme works on per-step estimates; in-place pairs that are each possible may
    not all be possible together, so every grouping on the trade-off curve (estimated with and
    without in-place sharing of single operators) is planned with the fast planner, and the
    policy picks among the measured figures. Layer by layer, the steps are measured with `planner`
    (the compile's): nothing is compared, and the greedy planner takes milliseconds."""
    nodes = list(graph.nodes)
    base_cost = _layer_cost(nodes, codes, ctx)
    layer_steps: list[Node | RowGroup] = list(nodes)
    memo: dict[int, Planned] = {}
    if policy == "layer" or not nodes:
        layer_ram, layer_moved = _measure(graph, codes, aliases, layer_steps, inplace, time_limit, memo, planner)
        return Choice(layer_steps, layer_ram, layer_ram, layer_moved * MOVE_COST, base_cost,
                      [(layer_ram, layer_moved * MOVE_COST)], policy, planned=memo.get(id(layer_steps)))
    # instructions per MAC layer by layer: what a recomputed MAC of a column band's halo costs
    mac_cost = base_cost / max(sum(macs(n) for n in nodes), 1)
    # the layer-by-layer plan (an integer program: HiGHS releases the GIL) is solved on a second thread
    # while this one weighs the groups; neither writes what the other reads. Without a budget, its short
    # search only: the full one runs at the end if layer by layer can still be chosen (_settle_layer)
    with ThreadPoolExecutor(max_workers=1) as pool:
        layer_plan = pool.submit(_measure, graph, codes, aliases, layer_steps, inplace, time_limit, memo, "exact",
                                 ram_budget is not None)
        # each operator alone, with in-place sharing of single operators (where allowed) and without
        singles = {sharing: _single_options(graph, codes, aliases, inplace and sharing) for sharing in (True, False)}
        ops = [stream_op(code, ctx) for code in codes]
        lifetimes = _Lifetimes(graph, aliases)
        spans, floor = _useful_spans(_spans(ops, graph), singles, lifetimes)
        layer_done = False
        if floor >= max(o.peak for o in singles[True]):
            # no grouping's live bytes go below what layer by layer needs at its peak: if its plan reaches
            # that without relocations (which cost), nothing can beat it (a group only adds cost)
            layer_ram, layer_moved = layer_plan.result()
            layer_done = True
            if layer_ram <= floor and not layer_moved:
                spans = []
        groups = _group_options(spans, lifetimes, inplace, mac_cost)
        if not layer_done:
            layer_ram, layer_moved = layer_plan.result()
    layer_cost = layer_moved * MOVE_COST
    if not groups:  # nothing streams or nothing can lower the RAM: layer by layer is the only schedule
        if not memo[id(layer_steps)][1].proven:
            layer_ram, layer_moved = _measure(graph, codes, aliases, layer_steps, inplace, time_limit, memo)
            layer_cost = layer_moved * MOVE_COST
        return Choice(layer_steps, layer_ram, layer_ram, layer_cost, base_cost, [(layer_ram, layer_cost)], policy,
                      planned=memo.get(id(layer_steps)))
    estimated: dict[tuple, tuple[int, float, list[Node | RowGroup]]] = {}
    kept = _undominated(groups)
    for sharing in (True, False):
        options = singles[sharing] + kept
        covers = _Covers(options)
        on_curve = {level for level, _ in _curve(len(nodes), options)}
        least = min(on_curve, default=0)
        # (the dominated options' peaks too: the levels weighed are those of every option)
        near = sorted({o.peak for o in singles[sharing] + groups if least <= o.peak <= least * 1.1})  # where chains of
        near = near[:: max(1, len(near) // NEAR_LEVELS)]  # offsets can decide the least RAM
        levels = sorted(set(near) | on_curve)
        for level in levels:
            # the cheapest grouping at each level of the estimated curve, and at every level the one
            # with the least in-place offsets (chains of them add up in the arena, which the per-step
            # estimate cannot see)
            for drift_cost in ((1e-3, 1e3) if level in on_curve else (1e3,)):
                picked = _cheapest(len(nodes), covers, level, drift_cost)
                if not picked:
                    continue
                key = tuple((o.first, o.last, id(o.group)) for o in picked)
                steps: list[Node | RowGroup] = [o.group if o.group is not None else nodes[o.first] for o in picked]
                if key not in estimated:
                    bound = _bound(graph, codes, aliases, steps, inplace)
                    estimated[key] = (bound, sum(o.cost for o in picked), steps)
    ram, cost, steps, curve = _pick(graph, codes, aliases, inplace, list(estimated.values()), policy, ram_budget,
                                    base_cost, (layer_ram, layer_cost, layer_steps), time_limit, memo)
    if ram_budget is None and not memo[id(layer_steps)][1].proven:
        ram, cost, steps, layer_ram, curve = _settle_layer(graph, codes, aliases, inplace, time_limit, memo,
                                                           layer_steps, (ram, cost, steps), curve)
    considered = sorted({(bound, cost) for bound, cost, _ in estimated.values()})
    chosen_by = policy if ram_budget is None else "ram-budget"  # a budget overrides the policy
    return Choice(steps, ram, layer_ram, cost, base_cost, curve, chosen_by, considered, memo.get(id(steps)))


def _layer_cost(nodes: list[Node], codes: list[NodeCode], ctx: EmitContext) -> float:
    """The model's cost layer by layer, which AUTO_OVERHEAD is a fraction of: the target core's fitted
    instruction model where there is one (the added costs are instructions too), else MACs and calls."""
    # (imported here: the profiler runs the compile stages, which import this module)
    from nn2c.profiler import layer_instructions

    predicted = layer_instructions(ctx.target.name, codes)
    if predicted:
        return predicted
    return float(sum(macs(n) for n in nodes)) * MAC_COST + CALL_COST * len(nodes)


def _pick(graph: Graph, codes: list[NodeCode], aliases: dict[int, Value], inplace: bool,
          candidates: list[tuple[int, float, list]], policy: str, ram_budget: int | None, base_cost: float,
          layer: tuple[int, float, list], time_limit: float, memo: dict[int, Planned]
          ) -> tuple[int, float, list, list[tuple[int, float]]]:
    """Plan candidates in order of their lower bound and stop when no later one can be better: the
    bound (live bytes per step) never exceeds what a planner reaches."""
    allowed = [c for c in candidates if policy == "min-ram" or ram_budget is not None
               or c[1] <= AUTO_OVERHEAD * base_cost]
    order = sorted(allowed, key=lambda c: (c[1], c[0]) if ram_budget is not None else (c[0], c[1]))
    best = layer
    measured = [(layer[0], layer[1])]
    # least RAM first: every candidate gets the planner's short search first, and the full one only
    # while its bound is below the best arena found (a plan at a bound is optimal; a full search that
    # ends at the work limit takes seconds on a small network)
    found: dict[int, tuple[int, int, Planned]] = {}  # id(steps) -> the smallest plan found for them
    for full_search in ((False, True) if ram_budget is None else (True,)):
        for bound, cost, steps in order:
            if ram_budget is not None:
                if best[0] <= ram_budget and cost >= best[1]:
                    break
            elif align_up(bound, 16) >= best[0]:  # (arenas are whole 16-byte units)
                break
            known = found.get(id(steps))
            if known is not None and known[0] <= align_up(bound, 16):
                continue  # already at its bound
            ram, moved = _measure(graph, codes, aliases, steps, inplace, time_limit, memo, full_search=full_search)
            if known is not None and known[0] <= ram:  # the short search had found as small a plan: weighed
                memo[id(steps)] = known[2]
                continue
            found[id(steps)] = (ram, moved, memo[id(steps)])
            total = cost + moved * MOVE_COST  # the relocations the plan chose (memory/lifetimes.py)
            if policy == "auto" and ram_budget is None and total > AUTO_OVERHEAD * base_cost:
                continue
            measured.append((ram, total))
            if ram_budget is None:
                better = (ram, total) < (best[0], best[1])
            else:  # fitting first, then the cheapest; while nothing fits, the smallest
                fits, best_fits = ram <= ram_budget, best[0] <= ram_budget
                better = (fits, -total if fits else -ram) > (best_fits, -best[1] if best_fits else -best[0])
            if better:
                best = (ram, total, steps)
    return best[0], best[1], best[2], _pareto(measured)


def _settle_layer(graph: Graph, codes: list[NodeCode], aliases: dict[int, Value], inplace: bool, time_limit: float,
                  memo: dict[int, Planned], layer_steps: list[Node | RowGroup], best: tuple[int, float, list],
                  curve: list[tuple[int, float]]) -> tuple[int, float, list, int, list[tuple[int, float]]]:
    """The layer-by-layer plan came from the short search: plan it fully where it can still be chosen (it
    was, or the best grouping's arena is not below its live-bytes bound), and weigh it again as _pick
    would (least RAM, then least cost). Elsewhere its short plan stays: a grouping below its bound wins
    whatever its full plan (the layer-by-layer figure reported is then that short plan's arena, and it
    is no point of the trade-off curve). Returns the best (RAM, cost, steps), the layer-by-layer arena
    and the curve."""
    ram, cost, steps = best
    short = memo[id(layer_steps)][1]
    if steps is not layer_steps and ram < align_up(short.lower_bound, 16):
        return ram, cost, steps, short.arena_bytes, [p for p in curve if p[0] != short.arena_bytes]
    layer_ram, layer_moved = _measure(graph, codes, aliases, layer_steps, inplace, time_limit, memo)
    layer_cost = layer_moved * MOVE_COST
    if steps is layer_steps or (layer_ram, layer_cost) < (ram, cost):
        ram, cost, steps = layer_ram, layer_cost, layer_steps
    return ram, cost, steps, layer_ram, _pareto([*curve, (layer_ram, layer_cost)])


def _pareto(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The (RAM, added cost) points no other point beats in both, smallest RAM first."""
    curve: list[tuple[int, float]] = []
    for ram, cost in sorted(set(points)):
        if not curve or cost < curve[-1][1]:
            curve.append((ram, cost))
    return curve


def _bound(graph: Graph, codes: list[NodeCode], aliases: dict[int, Value], steps: list[Node | RowGroup],
           inplace: bool) -> int:
    """The live-bytes lower bound of these steps (what no planner can go below)."""
    buffers = _buffers(graph, codes, aliases, steps, inplace)
    return live_bytes_lower_bound(buffers.requests, buffers.inplace)


def _measure(graph: Graph, codes: list[NodeCode], aliases: dict[int, Value], steps: list[Node | RowGroup],
             inplace: bool, time_limit: float, memo: dict[int, Planned], planner: str = "exact",
             full_search: bool = True) -> tuple[int, int]:
    """Arena bytes of these steps as `planner` places them, and the bytes its relocations move per
    inference; the plan goes into `memo` under id(steps)."""
    buffers, plan, honoured = plan_buffers(graph, aliases, _scratch(codes, steps), steps, inplace, planner,
                                           time_limit, inplace and planner == "exact", full_search)
    memo[id(steps)] = (buffers, plan, honoured)
    moved = sum(r.size for r in buffers.relocations if plan.offsets[r.before] != plan.offsets[r.buffer])
    return plan.arena_bytes, moved


def _buffers(graph: Graph, codes: list[NodeCode], aliases: dict[int, Value], steps: list[Node | RowGroup],
             inplace: bool) -> Buffers:
    return analyse(graph, aliases, _scratch(codes, steps), inplace=inplace, steps=steps)


def _scratch(codes: list[NodeCode], steps: list[Node | RowGroup]) -> list[list[int]]:
    """Each step's scratch buffers: a row group's own, an operator's from its lowering."""
    by_node = {id(c.node): c.scratch for c in codes}
    return [s.scratch if isinstance(s, RowGroup) else by_node[id(s)] for s in steps]


def _curve(count: int, options: list[Option]) -> list[tuple[int, float]]:
    """(peak, cheapest added cost) at the peak levels where the cost changes, smallest peak first
    (the estimated trade-off curve): one pass over the options keeping, for every prefix of the
    steps, the covers no other beats in both peak and cost (their peak is the largest of their
    options', their cost the sum), ranked as _cheapest ranks them (cost plus the in-place offset
    tie-break, then fewer groups)."""
    ending: dict[int, list[Option]] = {}
    for o in options:
        ending.setdefault(o.last, []).append(o)
    # per prefix: (peak, ranking cost, groups, added cost) of its Pareto covers, smallest peak first
    fronts: list[list[tuple[int, float, int, float]]] = [[(0, 0.0, 0, 0.0)]] + [[] for _ in range(count)]
    for end in range(count):
        made = []
        for o in ending.get(end, []):
            grouped = o.group is not None
            rank, peak = o.cost + 1e-3 * o.drift, o.peak
            for p, r, g, c in fronts[o.first]:
                made.append((p if p > peak else peak, r + rank, g + grouped, c + o.cost))
        fronts[end + 1] = _front(made)
    curve: list[tuple[int, float]] = []
    for p, _, _, c in fronts[count]:  # the levels where the added cost drops
        if not curve or c < curve[-1][1]:
            curve.append((p, c))
    return curve


def _front(covers: list[tuple[int, float, int, float]]) -> list[tuple[int, float, int, float]]:
    """The covers no other beats: by peak, each ranked strictly better than every lower-peak one."""
    kept: list[tuple[int, float, int, float]] = []
    for cover in sorted(covers):  # (a later cover of the same peak is ranked no better: dropped here)
        if not kept or cover[1:3] < kept[-1][1:3]:
            kept.append(cover)
    return kept


def _undominated(options: list[Option]) -> list[Option]:
    """The options without those an earlier option of the same steps beats or equals in peak, cost and
    offset: the programmes below never pick them (at any level the earlier one is allowed too, and on
    equal sums the earlier one wins), and there are thousands of options on an MCUNet-size model."""
    kept: list[Option] = []
    by_span: dict[tuple[int, int], list[Option]] = {}
    for o in options:
        earlier = by_span.setdefault((o.first, o.last), [])
        if any(e.peak <= o.peak and e.cost <= o.cost and e.drift <= o.drift for e in earlier):
            continue
        earlier.append(o)
        kept.append(o)
    return kept


def _cheapest(count: int, covers: _Covers, level: int, drift_cost: float = 1e-3) -> list[Option]:
    """The cheapest cover of steps 0..count-1 by options whose peak is at most `level` ([] if none);
    `drift_cost` per byte of in-place offset (1e-3: a tie-break; large: the least offset first)."""
    inf = float("inf")
    best_sum = [0.0] + [inf] * count
    best_groups = [0] * (count + 1)
    best_option: list[Option | None] = [None] * (count + 1)
    for end in range(count):
        at = end + 1
        for peak, first, cost, drift, grouped, o in covers.ending.get(end, ()):
            if peak > level:
                continue
            before = best_sum[first]
            if before == inf:
                continue
            # ties: fewer groups (simpler code), then deterministic by position
            # in-place offsets of consecutive steps add up in the arena (the per-step bound misses it):
            # between equal estimates, prefer the smaller ones
            total, groups = before + cost + drift_cost * drift, best_groups[first] + grouped
            if (total, groups) < (best_sum[at], best_groups[at]):
                best_sum[at], best_groups[at], best_option[at] = total, groups, o
    if best_sum[count] == inf:
        return []
    picked: list[Option] = []
    at = count
    while at > 0:
        chosen = best_option[at]
        assert chosen is not None
        picked.append(chosen)
        at = chosen.first
    return picked[::-1]


class _Covers:
    """The options by the step they end at, in their order, as plain tuples (peak, first, cost, drift,
    grouped, option): _cheapest runs over them at every level weighed."""

    def __init__(self, options: list[Option]) -> None:
        self.ending: dict[int, list[tuple[int, int, float, int, int, Option]]] = {}
        for o in options:
            self.ending.setdefault(o.last, []).append((o.peak, o.first, o.cost, o.drift, int(o.group is not None), o))


def _single_options(graph: Graph, codes: list[NodeCode], aliases: dict[int, Value], inplace: bool) -> list[Option]:
    """Each operator alone: the live bytes of its step, as the planner's lower bound counts them."""
    buffers = analyse(graph, aliases, [c.scratch for c in codes], inplace=inplace)
    size = {r.name: r.size for r in buffers.requests}
    saving: dict[int, int] = {}
    drift: dict[int, int] = {}
    for p in buffers.inplace:
        shared = size[p.input] + size[p.output] - max(p.distance + size[p.input], size[p.output])
        saving[p.step] = saving.get(p.step, 0) + max(shared, 0)
        drift[p.step] = drift.get(p.step, 0) + p.distance
    count = len(graph.nodes)
    change = [0] * (count + 2)  # live bytes by step, as differences: + where a buffer starts, - past its end
    for r in buffers.requests:
        if r.first <= count and r.last >= 0:
            change[max(r.first, 0)] += r.size
            change[min(r.last, count) + 1] -= r.size
    options = []
    live = 0
    for step in range(count):
        live += change[step]
        options.append(Option(step, step, live - saving.get(step, 0), 0.0, None, drift.get(step, 0)))
    return options


class _Lifetimes:
    """Buffer lifetimes of the layer-by-layer order, for the live bytes around a candidate group."""

    def __init__(self, graph: Graph, aliases: dict[int, Value]) -> None:
        buffers = analyse(graph, aliases, [[] for _ in graph.nodes], inplace=False)
        self.buffer_of = buffers.buffer_of
        self.requests = {r.name: r for r in buffers.requests}
        self.produced_at: dict[str, int] = dict.fromkeys(buffers.buffer_of.values(), -1)
        for k, node in enumerate(graph.nodes):
            for v in node.outputs:
                name = buffers.buffer_of.get(id(v))
                if name is not None and self.produced_at.get(name, -1) < 0:
                    self.produced_at[name] = k
        self.outputs = {buffers.buffer_of[id(v)] for v in graph.outputs if id(v) in buffers.buffer_of}
        self._alive: dict[tuple[int, int], int] = {}
        self._live_at: dict[int, list[tuple[int, int]]] = {}

    def alive_entering(self, first: int, last: int) -> int:
        """Bytes of buffers made before step `first` and still read at or after it (asked once per
        option: the options of one run share it)."""
        key = (first, last)
        if key not in self._alive:
            if first not in self._live_at:  # (step made, size) of the buffers live at `first`
                self._live_at[first] = [(self.produced_at[name], r.size) for name, r in self.requests.items()
                                        if r.first <= first <= r.last]
            self._alive[key] = sum(size for made, size in self._live_at[first] if not first <= made <= last)
        return self._alive[key]


def _group_options(spans: list[tuple[int, int, list[StreamOp]]], lifetimes: _Lifetimes, inplace: bool,
                   mac_cost: float = MAC_COST) -> list[Option]:
    """Every row group weighed on these spans: per block of sink rows and slack of the windows, in rows
    and (where the windows outweigh what rows in place save) in column bands."""
    options: list[Option] = []
    for first, last, members_ops in spans:
        sink_rows = members_ops[-1].rows
        # a convolution feeding the sums takes the least RAM, but its calls of a few pixels cost more
        # than row calls on some cores (Helium): both are options, the policy weighs them
        by_rows = _prepare(members_ops)
        variants = ([replace(by_rows, feed=True)] if feeds_sums(members_ops) else []) + [by_rows]
        # column bands: worth weighing only where the windows outweigh what rows in place save (a
        # band never writes in place); planned on the members without the sink alias, on first need
        bandable = not variants[0].feed
        banding: list[Bands] | None = None
        traces: dict[tuple[int, int], Trace | None] = {}  # (a feeding variant has its rows variant's members)
        for prepared in variants:
            blocks = {min(sink_rows, _block_for(members_ops))} | {b for b in BLOCKS if b <= sink_rows}
            for block in sorted(blocks):
                key = (id(prepared.members), block)
                if key not in traces:
                    try:  # the loop's calls whatever the windows' slack: traced once per block
                        traces[key] = trace_loop(prepared.members, block)
                    except AssertionError:
                        traces[key] = None
                trace = traces[key]
                if trace is None:
                    continue
                for slack in SLACKS:
                    group = _build(prepared, slack, trace, lifetimes, last, inplace)
                    if group is None:
                        break
                    option = _option(group, first, last, lifetimes, prepared.facts)
                    if not prepared.bands_only:
                        options.append(option)
                    # a band's windows are at least 1/max(BAND_COUNTS) of the rows' windows
                    if bandable and BAND_COUNTS and \
                            sum(group.window_bytes) * (1 - 1 / max(BAND_COUNTS)) > option.saving:
                        if banding is None:
                            plain = by_rows if by_rows.alias is None else \
                                replace(_prepare(members_ops, alias_allowed=False), bands_only=True)
                            sources = [[source for source, _ in m.reads] for m in plain.members]
                            banding = [b for b in (plan_bands(plain.run, sources, n) for n in BAND_COUNTS)
                                       if b is not None]
                            if banding and plain is not by_rows:
                                variants.append(plain)
                        if prepared.alias is None:
                            banded = (_option(replace(group, bands=b, inplace={}), first, last, lifetimes,
                                              prepared.facts, mac_cost)
                                      for b in banding)
                            # (never in place, never cheaper: only a lower peak makes one worth choosing)
                            options += [o for o in banded if o.peak < option.peak]
                    if all(o >= op.rows for o, op in zip(group.sim.occupancy, members_ops, strict=False)):
                        break  # windows already whole: more slack changes nothing
    return options


def _spans(ops: list[StreamOp | None], graph: Graph) -> list[tuple[int, int, list[StreamOp]]]:
    """(first, last, members) of every run of steps that can form a row group."""
    position = {id(n): k for k, n in enumerate(graph.nodes)}
    graph_outputs = {id(v) for v in graph.outputs}
    # the last step reading each step's output (past the end: a graph output, or one nothing reads): a
    # run is closed when every member but its sink is read only up to its last step
    read_until = [_read_until(op, position, graph_outputs, len(ops)) if op is not None else len(ops) for op in ops]
    spans = []
    for first in range(len(ops)):
        if ops[first] is None:
            continue
        reach = read_until[first]
        for last in range(first + 1, min(first + MAX_GROUP, len(ops))):
            sink, before = ops[last], ops[last - 1]
            if sink is None or before is None or before.kind == "accumulate":
                break  # (an accumulating operator ends its group: its output exists only at the end)
            if reach <= last:
                spans.append((first, last, [op for op in ops[first : last + 1] if op is not None]))
            reach = max(reach, read_until[last])
    return spans


def _useful_spans(spans: list[tuple[int, int, list[StreamOp]]], singles: dict[bool, list[Option]],
                  lifetimes: _Lifetimes) -> tuple[list[tuple[int, int, list[StreamOp]]], int]:
    """The spans whose groups can lower the RAM of some grouping the programmes weigh, and the floor:
    the live bytes no grouping's peak goes below.

    A group helps only at a level below the peak of one of its operators alone; and no grouping goes
    below `floor`: at every step, the least peak any option covering it can have (an operator alone:
    its live bytes; a group: a floor of its own, below). Spans whose operators alone all peak at or
    under that floor are dropped before their loops are simulated (most of an MCUNet-size model's
    spans: its peak sits in the first blocks)."""
    alone = [o.peak for o in singles[False]]
    least = [o.peak for o in singles[True]]  # per step: the least peak of an option covering it
    floors = []
    for first, last, members_ops in spans:
        floor = _group_floor(members_ops, lifetimes, first, last)
        floors.append(floor)
        for step in range(first, last + 1):
            least[step] = min(least[step], floor)
    floor = max(least, default=0)
    useful = [span for span, group_floor in zip(spans, floors, strict=True)
              if group_floor < max(alone[span[0] : span[1] + 1])
              and max(alone[span[0] : span[1] + 1]) > floor]
    return useful, floor


def _group_floor(run: list[StreamOp], lifetimes: _Lifetimes, first: int, last: int) -> int:
    """No option of this run peaks below: what is alive entering it and the sink's output, less the
    most an outside input in place could share with that output (_option's live bytes without the
    windows and scratch, and the largest saving it could subtract)."""
    sink = run[-1].output.type.num_bytes
    made = {id(op.output) for op in run}
    shared = max((min(value.type.num_bytes, sink) for op in run for _, value, _ in op.streamed
                  if id(value) not in made), default=0)
    return lifetimes.alive_entering(first, last) + sink - shared


def _read_until(op: StreamOp, position: dict[int, int], graph_outputs: set[int], end: int) -> int:
    """The last step that reads op's output; `end` if it is a graph output, unread, or read by what is
    not a step."""
    out = op.output
    if id(out) in graph_outputs or not out.users:
        return end
    return max(position.get(id(u), end) for u in out.users)


def _block_for(run: list[StreamOp]) -> int:
    """Sink rows per iteration that give every call at least MIN_PIXELS output pixels."""
    widths = [max(op.row_elements // max(op.output.type.shape[-1], 1), 1) for op in run]
    return max(1, -(-MIN_PIXELS // min(widths)))


def _sink_alias(run: list[StreamOp]) -> int | None:
    """A member whose output only the element-wise sink reads, that reads only other members' rows
    and makes rows of the sink's type and shape: it can write straight into the sink's output rows
    (RowGroup.alias). The sink must read no outside tensor: such a read comes after the member's
    write in the iteration, where the in-place distance does not expect one."""
    sink = run[-1]
    made = {id(op.output) for op in run}
    if sink.kind not in ("bcast", "count") or any(id(v) not in made for _, v, _ in sink.streamed):
        return None
    for j in range(len(run) - 2, -1, -1):
        op = run[j]
        readers = [c for c, other in enumerate(run) if any(v is op.output for _, v, _ in other.streamed)]
        if readers != [len(run) - 1] or op.output.type.shape != sink.output.type.shape:
            continue
        if op.output.type.dtype != sink.output.type.dtype or op.kind == "accumulate":
            continue
        if all(id(v) in made for _, v, _ in op.streamed):
            return j
    return None


@dataclass
class _Prepared:
    """What a group's options share whatever their block and slack: its members in execution order
    (an aliased member moved last before the sink), the tensors they read from outside, the kernels'
    shared scratch."""

    run: list[StreamOp]
    alias: int | None
    members: list[Member]
    outside: list[Value]
    scratch_region: int
    scratch_offsets: list[list[int]]
    facts: list[tuple[int, int]]  # per member: (MACs, output pixels), asked by every option
    feed: bool = False  # the first member hands the accumulating sink a few pixels at a time (RowGroup.feed)
    bands_only: bool = False  # the members without their sink alias: weighed in column bands only


def _prepare(run: list[StreamOp], alias_allowed: bool = True) -> _Prepared:
    alias = _sink_alias(run) if alias_allowed else None
    if alias is not None:  # it runs last before the sink (only the sink reads it: any later slot is valid)
        run = run[:alias] + run[alias + 1 : -1] + [run[alias], run[-1]]
        alias = len(run) - 2
    made = {id(op.output): j for j, op in enumerate(run)}
    outside: list[Value] = []
    sources: dict[int, int] = dict(made)
    for op in run:
        for _, value, _ in op.streamed:
            if id(value) not in sources:
                outside.append(value)
                sources[id(value)] = -1 - (len(outside) - 1)
    region, offsets = _kernel_scratch(run)
    facts = [(macs(op.node), max(op.rows * op.row_elements // max(op.output.type.shape[-1], 1), 1)) for op in run]
    return _Prepared(run, alias, [member_of(op, sources) for op in run], outside, region, offsets, facts)


def _build(prepared: _Prepared, slack: int, trace: Trace, lifetimes: _Lifetimes, last: int,
           inplace: bool) -> RowGroup | None:
    members = prepared.members
    try:
        sim = simulate(members, slack, trace=trace)
    except AssertionError:
        return None
    # the options share the prepared lists: no step of the schedule or the code writes to them
    group = RowGroup(prepared.run, members, prepared.outside, sim, prepared.scratch_offsets,
                     prepared.scratch_region, alias=prepared.alias, feed=prepared.feed)
    if inplace:
        for k, value in enumerate(prepared.outside):
            name = lifetimes.buffer_of.get(id(value))
            if name is None or lifetimes.requests[name].last > last or name in lifetimes.outputs:
                continue
            in_row = value.type.num_bytes // max(value.type.shape[1], 1)
            group.inplace[id(value)] = inplace_distance(members, sim, k, in_row)
    return group


def _kernel_scratch(run: list[StreamOp]) -> tuple[int, list[list[int]]]:
    """One region shared by the members' kernel scratch (they run one after another)."""
    offsets: list[list[int]] = []
    region = 0
    for op in run:
        at = 0
        mine: list[int] = []
        if op.kind == "accumulate":  # its sums live through the whole loop: a buffer of their own
            offsets.append(mine)
            continue
        for nbytes in op.scratch:
            mine.append(at)
            at = align_up(at + nbytes, 16)
        offsets.append(mine)
        region = max(region, at)
    return region, offsets


def _option(group: RowGroup, first: int, last: int, lifetimes: _Lifetimes, facts: list[tuple[int, int]],
            mac_cost: float = MAC_COST) -> Option:
    sink = group.outputs[0]
    live = lifetimes.alive_entering(first, last) + sink.type.num_bytes + sum(group.scratch)
    saving, drift = 0, 0
    for value in group.outside:
        if id(value) in group.inplace:
            d = align_up(group.inplace[id(value)], 16)
            x, y = value.type.num_bytes, sink.type.num_bytes
            if x + y - max(d + x, y) > saving:
                saving, drift = x + y - max(d + x, y), d
    cost = group.sim.moved_bytes * MOVE_COST
    bands = group.bands.count if group.bands is not None else 1
    if group.bands is not None:  # every band runs the loop: its calls, halo MACs and copies
        cost += group.bands.recomputed_macs * mac_cost
        cost += copied_bytes(group.bands, group.ops, group.sim.member_calls) * MOVE_COST
    for op, per_band, (op_macs, pixels) in zip(group.ops, group.sim.member_calls, facts, strict=True):
        calls = per_band * bands
        # each extra call: its set-up, and (an odd number of pixels per call) a last pixel that misses
        # the SIMD kernels' pixel pairs
        odd = round(pixels / max(calls, 1)) % 2
        cost += (calls - 1) * (CALL_COST + odd * TAIL_COST * op_macs / pixels)
        if op.kind == "accumulate" and group.feed:  # no calls of its own: the convolution sums its pixels
            made = group.ops[0].output
            channels = made.type.shape[-1]
            feeds = -(-made.type.num_elements // (feed_pixels(channels) * channels))
            cost += ACCUMULATE_COST * op_macs + FEED_COST * feeds - (calls - 1) * CALL_COST
        elif op.kind == "accumulate" and op.function == "nn2c_fc_s8_simd":
            cost += ACCUMULATE_COST * op_macs  # the sums cannot use the SIMD kernel's filter layout
    return Option(first, last, live - saving, cost, group, drift, saving)
