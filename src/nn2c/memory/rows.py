"""Row streaming of a group of operators: which rows each step reads, and how big its windows are.

A row group runs several operators together, one output row of its last operator (the sink) per
iteration. In iteration r every member, in execution order, computes the rows of its output that
its consumers in the group will need by the end of the iteration; a member's output (an
intermediate) is never whole in RAM, only a window of consecutive rows. A member reads its
streamed inputs through a RowMap: output row q of a window operator (convolution, pooling) reads
input rows [q*stride - pad, q*stride - pad + span) clipped to the image, an element-wise one reads
row q. The integer arithmetic of each row is the operator's own, so the results are bit-exact.

A window keeps rows [first, done). It is slid (its live rows moved to the front) only when full,
to the lowest row a consumer still needs; its capacity is the most rows ever needed at once plus
optional slack rows, which trade RAM for fewer bytes moved. `simulate` runs exactly the loop the
generated C runs (codegen/stream.py) and checks every read against the window's contents.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RowMap:
    """Output row q of an operator reads rows [lo(q), hi(q)) of one input of `in_rows` rows."""

    in_rows: int
    span: int = 1  # (filter rows - 1) * dilation + 1
    stride: int = 1
    pad: int = 0  # rows of padding above the image

    def lo(self, q: int) -> int:
        return max(0, q * self.stride - self.pad)

    def hi(self, q: int) -> int:
        return min(self.in_rows, q * self.stride - self.pad + self.span)


@dataclass(frozen=True)
class Member:
    """One operator of a row group. reads: (source, map) per streamed input; source >= 0 is the member
    producing it (an intermediate), source < 0 the whole tensor -1 - source from outside the group."""

    out_rows: int
    row_bytes: int  # bytes of one output row
    reads: tuple[tuple[int, RowMap], ...]
    elementwise: bool = False  # reads exactly its own row of each input, element by element


@dataclass
class Simulation:
    occupancy: list[int]  # per member: most rows of its output needed at once (0 for the sink)
    capacity: list[int]  # window rows as planned (occupancy + slack, at most the whole tensor)
    moved_bytes: int  # bytes moved by window slides
    calls: int  # kernel calls (one per computed row)
    # outside reads in call order: (call number, outside tensor, lowest row read, read by the sink element-wise)
    outside_reads: list[tuple[int, int, int, bool]] = field(default_factory=list)
    sink_calls: list[tuple[int, int]] = field(default_factory=list)  # (call number, rows made so far) of the sink
    block: int = 1  # sink rows per iteration
    member_calls: list[int] = field(default_factory=list)  # calls per member

    def window_bytes(self, members: list[Member]) -> list[int]:
        return [self.capacity[j] * m.row_bytes for j, m in enumerate(members)]


def consumers(members: list[Member]) -> list[list[tuple[int, RowMap]]]:
    """For each member, the (member, map) pairs reading its output inside the group."""
    found: list[list[tuple[int, RowMap]]] = [[] for _ in members]
    for c, member in enumerate(members):
        for source, row_map in member.reads:
            if source >= 0:
                found[source].append((c, row_map))
    return found


def steps(members: list[Member], readers: list[list[tuple[int, RowMap]]], block: int) -> list[int]:
    """Rows each member makes per iteration at most: `block` for the sink, and for a member the most its
    consumers' steps read of it (a stride-2 consumer's step in rows is twice its own)."""
    step = [0] * len(members)
    step[-1] = block
    for j in range(len(members) - 2, -1, -1):
        step[j] = max((step[c] * m.stride for c, m in readers[j]), default=block)
    return step


@dataclass
class Trace:
    """The group's loop run once with unbounded windows: everything that does not depend on the
    windows' capacity (the calls, their rows, the outside reads, the occupancy), and per call what a
    window of some capacity needs to slide: (member, first row made, end row, lowest row its
    consumers still read, ((source member, lowest row read of it), ...))."""

    sim: Simulation
    calls: list[tuple[int, int, int, int, tuple[tuple[int, int], ...]]]


def simulate(members: list[Member], slack: int = 0, block: int = 1, trace: Trace | None = None) -> Simulation:
    """Run the group's loop: first with unbounded windows to find the occupancy of each window
    (unless its trace is given, which holds its block: it depends on the block, not the slack), then
    replay its calls with the planned capacities (occupancy times 1 + slack), checking that every read
    finds its rows in the window."""
    if trace is None:
        trace = trace_loop(members, block)
    occupancy = trace.sim.occupancy
    capacity = [0] * len(members)
    for j in range(len(members) - 1):
        capacity[j] = min(members[j].out_rows, occupancy[j] * (1 + slack))
    done = trace.sim
    return Simulation(list(occupancy), capacity, _slide(trace, capacity, members), done.calls, done.outside_reads,
                      done.sink_calls, done.block, done.member_calls)


def _slide(trace: Trace, capacity: list[int], members: list[Member]) -> int:
    """Bytes the windows' slides move with these capacities. A window is slid (its rows still read
    moved to the front) only when the call's rows do not fit behind its first row."""
    first = [0] * len(members)
    last = len(members) - 1
    if all(capacity[j] >= members[j].out_rows for j in range(last)):
        return 0  # every window holds its whole tensor: nothing slides, no row is dropped
    moved = 0
    for j, q0, q1, low, reads in trace.calls:
        if j < last and q1 - first[j] > capacity[j]:
            assert q1 - low <= capacity[j], "window too small to advance"
            moved += (q0 - low) * members[j].row_bytes
            first[j] = low
        for source, lo in reads:
            assert lo >= first[source], f"member {j} row {q0} reads a dropped row"
    return moved


def trace_loop(members: list[Member], block: int = 1) -> Trace:
    """Each iteration the sink asks for `block` more rows; every member makes the rows its consumers
    will need for that, at most its step more than it has (so the pipeline fills a step at a time
    instead of the first iteration making every member's whole halo at once, which would size the
    windows) and only those its inputs already allow, in one call (rows [done, upto)).

    Written on plain integers: the fusion stage runs this loop for every option it weighs (thousands
    on an MCUNet-size model)."""
    readers = consumers(members)
    n = len(members)
    done, occupancy = [0] * n, [0] * n
    calls = 0
    reads: list[tuple[int, int, int, bool]] = []
    sink_calls: list[tuple[int, int]] = []
    made: list[tuple[int, int, int, int, tuple[tuple[int, int], ...]]] = []
    member_calls = [0] * n
    out_rows = [m.out_rows for m in members]
    step = steps(members, readers, block)
    # per member: (consumer, stride, pad, span, in_rows) of each reader; (source, stride, pad, span,
    # in_rows) of each read of another member's rows; (outside tensor, stride, pad) of each outside read
    reader_maps = [[(c, m.stride, m.pad, m.span, m.in_rows) for c, m in readers[j]] for j in range(n)]
    inner_reads = [[(s, m.stride, m.pad, m.span, m.in_rows) for s, m in member.reads if s >= 0] for member in members]
    outer_reads = [[(-1 - s, m.stride, m.pad) for s, m in member.reads if s < 0] for member in members]
    own_row = [j == n - 1 and m.elementwise for j, m in enumerate(members)]
    sink_rows, last = out_rows[-1], n - 1
    need = [0] * n
    for _ in range(sum(out_rows) + 1):  # every iteration makes a row somewhere: a bound, never reached
        if done[last] >= sink_rows:
            break
        q = done[last] + block
        need[last] = q if q < sink_rows else sink_rows
        for j in range(n - 2, -1, -1):
            most = 0
            for c, stride, pad, span, in_rows in reader_maps[j]:
                q = need[c]
                if q > 0:
                    q = (q - 1) * stride - pad + span
                    if q > in_rows:
                        q = in_rows
                    if q > most:
                        most = q
            need[j] = most
        for j in range(n):
            q0 = done[j]
            q1 = need[j]
            if q1 <= q0:  # nothing asked of it this iteration (the reads below only lower q1)
                continue
            if q1 > q0 + step[j]:
                q1 = q0 + step[j]
            for source, stride, pad, span, in_rows in inner_reads[j]:
                d = done[source]
                if d < in_rows:  # rows its input allows so far
                    reach = d + pad - span
                    allowed = 0 if reach < 0 else reach // stride + 1
                    if allowed < q1:
                        q1 = allowed
            if q0 >= q1:
                continue
            low = q0
            if j < last:  # rows a strided consumer skips may still be computed
                for c, stride, pad, _, _ in reader_maps[j]:
                    if done[c] < out_rows[c]:
                        lo = done[c] * stride - pad
                        if lo < low:
                            low = lo if lo > 0 else 0
                if q1 - low > occupancy[j]:
                    occupancy[j] = q1 - low
            lowest: tuple[tuple[int, int], ...] = ()
            for source, stride, pad, span, in_rows in inner_reads[j]:
                hi = (q1 - 1) * stride - pad + span
                assert hi <= done[source] or in_rows <= done[source], \
                    f"member {j} rows {q0}..{q1 - 1} read row {hi - 1} before it exists"
                lo = q0 * stride - pad
                lowest += ((source, lo if lo > 0 else 0),)
            made.append((j, q0, q1, low, lowest))
            for tensor, stride, pad in outer_reads[j]:
                lo = q0 * stride - pad
                reads.append((calls, tensor, lo if lo > 0 else 0, own_row[j]))
            if j == last:
                sink_calls.append((calls, q1))
            calls += 1
            member_calls[j] += 1
            done[j] = q1
    assert done[last] >= sink_rows, "the group's loop does not finish"
    sim = Simulation(occupancy, [0] * n, 0, calls, reads, sink_calls, block, member_calls)
    return Trace(sim, made)


def inplace_distance(members: list[Member], sim: Simulation, outside: int, in_row_bytes: int) -> int:
    """Smallest D >= 0 such that the sink's output may start D bytes below outside tensor `outside`.

    Output row r is written by the sink's call of iteration r; it may cover only bytes of that
    tensor that no later call reads. The sink's own element-wise read of row r is safe when its
    row starts at or below that row (an element is read before it is written)."""
    sink = members[-1]
    log = [(call, lo, own) for call, tensor, lo, own in sim.outside_reads if tensor == outside]
    distance = 0
    if any(own for _, _, own in log):  # the sink reads its own row element-wise: row r at or below it
        distance = max(0, sink.row_bytes - in_row_bytes) * (sink.out_rows - 1)
    lowest = None  # lowest row read by the calls after the one being looked at
    k = len(log)
    for call, end_row in reversed(sim.sink_calls):
        while k > 0 and (log[k - 1][0] > call or (log[k - 1][0] == call and not log[k - 1][2])):
            lo = log[k - 1][1]
            lowest = lo if lowest is None else min(lowest, lo)
            k -= 1
        if lowest is not None:
            distance = max(distance, end_row * sink.row_bytes - lowest * in_row_bytes)
    return distance
