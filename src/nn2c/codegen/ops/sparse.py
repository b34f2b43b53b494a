"""Sparse int8 matrix products (kernels/nn2c_sparse.c) for FULLY_CONNECTED and 1x1 CONV_2D.

A layer whose constant int8 filter is mostly zero (a pruned model, or `--prune`) runs a kernel that
stores and multiplies only the nonzero weights. Whether it does is a per-layer choice made here:
with `--sparse auto` (the default) when the target's instruction models of both kernels
(nn2c.target: linear in SPARSE_COST_FEATURES, fitted to QEMU counts by bench/sparse.py) predict the
sparse kernel at most SAFETY times the dense one's instructions; `--sparse off` never, `--sparse
always` whenever the layer allows it (for tests and measurements).

Flash layout (nn2c_sparse.h): per output channel and segment of 256 inputs a uint16 count, then one
byte of position and one int8 value per nonzero, padded to whole blocks of 4. The input offset is
folded into the bias, so only weights with zero point 0 qualify (TFLite's int8 filters have it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nn2c.codegen.context import EmitContext, format_field
from nn2c.codegen.ops.conv import doubled_records_fit, folded_bias, requant_rounding
from nn2c.ir import Node, Value
from nn2c.quant.fixedpoint import quantize_multiplier
from nn2c.target import Target

SEGMENT = 256  # NN2C_SPARSE_SEGMENT: inputs per segment, so a position fits one byte
BLOCK = 4  # entries per segment list come in whole blocks of this many (zero-weight padding)
# a packed list read only by the four-row loop (a 1x1 convolution's whose lists then take fewer bytes: its last 1-3
# pixels run as four, repeated) comes in pairs of entries, one byte of steps: on pruned kws_ref_model (75%) its 1x1
# convolutions' filters take 0.43x the int8 rows' bytes, 0.45x in blocks of 4 (bench/sparse.py --packed)
FOUR_ROWS_BLOCK = 2
PACKED_ROWS, PACKED_FOUR_ROWS = 1, 2  # nn2c_sparse_s8_t.packed: lists in BLOCKs (either loop), in FOUR_ROWS_BLOCKs
PACKED_STEP_MAX = 15  # packed_layout: the largest step between two positions a 4-bit half holds
RECORD_WORDS = 3  # NN2C_SPARSE_RECORD: int32 words of a per-channel filter's output-stage record
TABLE_RECORD_WORDS = 4  # NN2C_SPARSE_TABLE_RECORD: a doubled record of a layer over pair tables (table_records)
# the shifts the records' scale word holds: sh = -shift - 1 >= 1 (the rounding's high word 2^(sh - 1)),
# 2^(sh - 1) << 8 within 32 bits; a real model's are about -5 to -12
RECORD_SHIFTS = (-25, -2)
# nn2c_sparse_row4_pairs: two rows' sums in one 64-bit sum S0 + 2^23 S1, exact while |S0| < 2^22 for any int8
# input, i.e. 128 sum|w| < 2^22 for every channel
PAIR_SUM_LIMIT = 1 << 22
# a row-pair layer whose kernel calls run EIGHT_ROWS rows or more (a 1x1 convolution's pixels a batch, a
# FULLY_CONNECTED's batches) runs eight at a time, nn2c_sparse_s8_t.pairs EIGHT_ROW_PAIRS (nn2c_sparse_row8_pairs:
# counted in their assembly, 11 instructions an entry where two runs of the four-row loop take 12, and about 90 a
# channel outside the entries where they take 118)
EIGHT_ROWS = 8
EIGHT_ROW_PAIRS = 2
# --sparse auto: sparse only where predicted at most this fraction of the dense instructions; at 0.9 one
# measured layer of bench/sparse.py (288 MACs) ran 1% slower sparse, at 0.85 none (docs/BENCHMARKS.md)
SAFETY = 0.85
# --optimize size: the packed layout of a one-row layer where predicted at most this multiple of the dense
# FULLY_CONNECTED kernel of --optimize balanced (what the model predicts). The dense kernel it replaces at size
# (nn2c_fc_s8_rows, the model's int8 rows) measured 1.36x that prediction or more on every layer of pruned ad01
# (bench/sparse.py, magnitude 75%, Cortex-M4: 1.36-1.45x where the balanced filter is dual, 1.36-1.39x where it is
# not, about 2x at depth 8); the packed layout's own prediction is within 2% of its count there. A layer of four
# rows or more (1x1 convolutions) keeps the dense kernels of balanced at size, measured 0.73-1.14x the balanced
# model's prediction (pruned kws_ref_model and vww_96_int8, Cortex-M4): it packs by auto_margin, as at balanced
SIZE_SAFETY = 1.3
# The margin for filters shallower than SHALLOW_DEPTH, whose layers' cost is the per-pixel part the fitted models
# predict worst. Measured on the Cortex-M4 (bench/sparse.py, vww_96_int8 pruned 75% and 90%): the shallow layers
# predicted at most 0.64x dense ran 0.49-0.61x, a 1x1 convolution of depth 1 and 2 channels on 144 pixels was
# predicted 0.77x (19,163 against 23,916, dense measured 17,907) and ran 1.07x.
SHALLOW_DEPTH = 4
SHALLOW_SAFETY = 0.7
# what the instruction models of nn2c.target weigh: the kernel's work (dense: MACs; sparse: stored entries x
# input rows), then outputs, input elements, input rows and one call
SPARSE_COST_FEATURES = ("work", "outputs", "inputs", "rows", "call")
SPARSE_KERNELS = ("nn2c_fc_s8_sparse", "nn2c_conv_s8_sparse")
PACKED_VARIANT = "packed"  # NodeCode.variant of a layer in the packed layout (nn2c.profile predicts it so)
PAIRS_VARIANT = "row-pairs"  # NodeCode.variant of a layer summed in row pairs (Target.sparse_pairs_cost)
TABLE_VARIANT = "pair-table"  # NodeCode.variant of a one-row layer in the pair table layout (Target.sparse_table_cost)
TABLE_INPUTS = 128  # NN2C_SPARSE_TABLE_INPUTS: inputs per pair table
TABLE_BLOCK = 16  # inputs per block of a pair table: halves A and B of 8
TABLE_BLOCK_WORDS = 64  # a block's words in the table: x[A p] + 2^16 x[B q] for every p, q
# what Target.sparse_table_cost weighs: stored words (padding included), (table, channel) lists, table inputs built
# (whole blocks), one call
TABLE_COST_FEATURES = ("words", "lists", "inputs", "call")


def density(rows: np.ndarray) -> float:
    """Nonzero weights / weights of a filter (1.0 for an empty one)."""
    return float(np.count_nonzero(rows)) / rows.size if rows.size else 1.0


def sparse_candidate(w: Value, bias: Value | None) -> bool:
    """A constant int8 filter whose zero points are all 0 (code 0 is the real 0) and a constant bias."""
    quant = w.type.quant
    return (w.is_constant and w.type.dtype == "int8" and (quant is None or not any(int(z) for z in quant.zero_point))
            and (bias is None or bias.is_constant))


def cost_features(out_c: int, depth: int, input_rows: int, entries: int) -> tuple[list[int], list[int]]:
    """The dense and the sparse kernel's features (SPARSE_COST_FEATURES) of a layer: [out_c, depth]
    filter, input_rows rows, `entries` stored sparse entries (all channels)."""
    common = [out_c * input_rows, depth * input_rows, input_rows, 1]
    return [out_c * depth * input_rows, *common], [entries * input_rows, *common]


@dataclass(frozen=True)
class SparseLayout:
    """A filter in the kernels' flash layout: counts [out_c * segments] uint16, then the positions (uint8)
    and values (int8) of the stored entries, channel after channel, segment after segment."""

    out_c: int
    depth: int
    counts: np.ndarray
    positions: np.ndarray
    values: np.ndarray
    # positions as 4-bit steps, two a byte, one segment a channel (packed_layout): PACKED_ROWS or PACKED_FOUR_ROWS
    packed: int = 0

    @property
    def entries(self) -> int:
        """Stored entries, padding included (what the kernels loop over)."""
        return int(self.counts.sum(dtype=np.int64))

    @property
    def segments(self) -> int:
        return self.counts.size // max(self.out_c, 1)

    @property
    def flash_bytes(self) -> int:
        """Bytes of counts, positions and values (the output stage aside)."""
        return self.counts.nbytes + self.positions.nbytes + self.values.nbytes


def _segment_blocks(rows: np.ndarray) -> np.ndarray:
    """[out_c, depth] -> [out_c * segments, SEGMENT]: each channel's segments, zero-padded."""
    out_c, depth = rows.shape
    segments = max(-(-depth // SEGMENT), 1)
    padded = np.zeros((out_c, segments * SEGMENT), dtype=np.int8)
    padded[:, :depth] = rows
    return padded.reshape(out_c * segments, SEGMENT)


def stored_entries(rows: np.ndarray, padded: bool = True) -> int:
    """SparseLayout.entries of these rows without building the layout: each (channel, segment) list's
    nonzeros padded to the block (not padded: a row-pair layer's, at least one a list; sparse_layout)."""
    nonzeros = np.count_nonzero(_segment_blocks(rows), axis=1)
    if not padded:
        return int(np.maximum(nonzeros, 1).sum(dtype=np.int64))
    return int((-(-nonzeros // BLOCK) * BLOCK).sum(dtype=np.int64))


def pair_rows(input_rows: int) -> int:
    """The rows the eight-row pairs loop computes for a layer of input_rows >= EIGHT_ROWS rows (nn2c_sparse_row8_pairs):
    eight at a time, a last 4 in the four-row loop, a last 5-7 as eight and a last 1-3 as four."""
    blocks, rest = divmod(input_rows, EIGHT_ROWS)
    return EIGHT_ROWS * blocks + (0 if rest == 0 else 4 if rest <= 4 else EIGHT_ROWS)


def sparse_layout(rows: np.ndarray, padded: bool = True) -> SparseLayout:
    """[out_c, depth] int8 -> its SparseLayout: the nonzeros channel after channel, segment after segment,
    in increasing input order, each segment's list padded with zero weights at position 0 to a multiple
    of 4 entries (the kernels' block). Not padded (a layer summed in row pairs, whose loops enter a list at any
    entry): the nonzeros alone, an empty list one zero-weight entry (they read no count of 0)."""
    out_c, depth = rows.shape
    blocks = _segment_blocks(rows)
    nonzeros = np.count_nonzero(blocks, axis=1)
    block = BLOCK if padded else 1
    counts = (-(-np.maximum(nonzeros, int(not padded)) // block) * block).astype(np.uint16)
    positions = np.zeros(int(counts.sum()), dtype=np.uint8)
    values = np.zeros(int(counts.sum()), dtype=np.int8)
    starts = np.concatenate([[0], np.cumsum(counts[:-1], dtype=np.int64)])
    block_index, position = np.nonzero(blocks)  # row-major: block after block, positions ascending
    rank = np.arange(block_index.size) - np.concatenate([[0], np.cumsum(nonzeros[:-1])])[block_index]
    slots = starts[block_index] + rank
    positions[slots] = position
    values[slots] = blocks[block_index, position]
    return SparseLayout(out_c, depth, counts, positions, values)


def packed_layout(rows: np.ndarray, four_rows_only: bool = False) -> SparseLayout | None:
    """[out_c, depth] int8 -> its packed SparseLayout (--optimize size, nn2c_sparse_s8_t.packed): per channel
    its nonzeros in increasing input order, each position stored as the 4-bit step from the previous one
    (the first from input 0), two a byte, low half first; a step over 15 first takes zero-weight entries of
    step 15; each channel's list padded with zero steps and weights to a multiple of 4 entries, or of 2 for a layer
    whose rows can all run the four-row loop (four_rows_only) where that takes fewer bytes (PACKED_FOUR_ROWS:
    its last 1-3 rows then run as four). Half the positions' bytes of sparse_layout. None when a channel would hold
    more entries than a uint16 counts."""
    block = FOUR_ROWS_BLOCK if four_rows_only else BLOCK
    out_c, depth = rows.shape
    counts = np.zeros(out_c, dtype=np.int64)
    steps: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for c in range(out_c):
        position = np.flatnonzero(rows[c])
        gap = np.diff(position, prepend=0)
        extra = np.maximum((gap - 1) // PACKED_STEP_MAX, 0)  # the zero-weight entries of step 15 before each
        n = position.size + int(extra.sum())
        padded = -(-n // block) * block
        if padded > np.iinfo(np.uint16).max:
            return None
        step = np.zeros(padded, dtype=np.uint8)
        value = np.zeros(padded, dtype=np.int8)
        slot = np.arange(position.size) + np.cumsum(extra)  # where each nonzero lands after its extras
        step[:n] = PACKED_STEP_MAX
        step[slot] = gap - extra * PACKED_STEP_MAX
        value[slot] = rows[c, position]
        counts[c] = padded
        steps.append(step)
        values.append(value)
    flat = np.concatenate(steps) if steps else np.zeros(0, dtype=np.uint8)
    # lists in pairs whose counts are all multiples of BLOCK are the layout in BLOCKs, which either loop reads
    pairs = bool(np.any(counts % BLOCK))
    return SparseLayout(out_c, depth, counts.astype(np.uint16), (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8),
                        np.concatenate(values) if values else np.zeros(0, dtype=np.int8),
                        packed=PACKED_FOUR_ROWS if pairs else PACKED_ROWS)


def predicted_instructions(target: Target, layout: SparseLayout, input_rows: int) -> tuple[float, float] | None:
    """(dense, sparse) instructions the target's fitted model predicts for this filter applied to
    input_rows rows, or None when the target has no measured model (also nn2c.profile's prediction of
    a sparse step). A packed layout costs its steps' extra (Target.packed_extra), PACKED_FOUR_ROWS its last 1-3
    rows as four; None without it."""
    predicted = predicted_costs(target, layout.out_c, layout.depth, input_rows, layout.entries)
    if predicted is None or not layout.packed:
        return predicted
    extra = target.packed_extra(input_rows >= 4)
    if extra is None:
        return None
    if layout.packed == PACKED_FOUR_ROWS:
        input_rows = -(-input_rows // 4) * 4
        tail = predicted_costs(target, layout.out_c, layout.depth, input_rows, layout.entries)
        assert tail is not None
        predicted = predicted[0], tail[1]
    return predicted[0], predicted[1] + (extra[0] * layout.entries + extra[1] * layout.out_c) * input_rows


def pairs_cost(target: Target, input_rows: int) -> tuple[tuple[float, ...] | None, int]:
    """The sparse coefficients of a layer of input_rows rows summed in row pairs, and the rows they weigh: eight or
    more, Target.sparse_pairs8_cost over pair_rows (the loops' blocks); four to seven, sparse_pairs_cost over the
    rows themselves (None below four, or where the target has no model)."""
    if input_rows >= EIGHT_ROWS and target.sparse_pairs8_cost is not None:
        return target.sparse_pairs8_cost, pair_rows(input_rows)
    return (target.sparse_pairs_cost if 4 <= input_rows < EIGHT_ROWS else None), input_rows


def predicted_costs(target: Target, out_c: int, depth: int, input_rows: int, entries: int, pairs: bool = False
                    ) -> tuple[float, float] | None:
    """predicted_instructions of a [out_c, depth] filter stored as `entries` sparse entries (pairs: the sparse
    kernel summing row pairs, pairs_cost, where the target has it; its entries unpadded, stored_entries)."""
    cost = target.sparse_cost(input_rows >= 4)
    if cost is None:
        return None
    dense, sparse = cost_features(out_c, depth, input_rows, entries)
    paired, rows = pairs_cost(target, input_rows) if pairs else (None, input_rows)
    if paired is not None:
        cost = (cost[0], paired)
        sparse = cost_features(out_c, depth, rows, entries)[1]
    return (float(np.dot(cost[0], dense)), float(np.dot(cost[1], sparse)))


def table_count(depth: int) -> int:
    """Pair tables a one-row layer over `depth` inputs builds (TABLE_INPUTS each, at least one)."""
    return max(-(-depth // TABLE_INPUTS), 1)


def table_features(out_c: int, depth: int, words: float) -> list[float]:
    """TABLE_COST_FEATURES of a one-row [out_c, depth] filter stored as `words` pair table words."""
    return [words, table_count(depth) * out_c, -(-depth // TABLE_BLOCK) * TABLE_BLOCK, 1]


def predicted_table_cost(target: Target, out_c: int, depth: int, words: float) -> float | None:
    """The instructions the target's pair table model (Target.sparse_table_cost) predicts for one input row of an
    [out_c, depth] filter stored as `words` words; None without the model."""
    if target.sparse_table_cost is None:
        return None
    return float(np.dot(target.sparse_table_cost, table_features(out_c, depth, words)))


def auto_margin(depth: int) -> float:
    """The fraction of the dense kernel's predicted instructions below which --sparse auto takes a sparse kernel
    for a filter over `depth` inputs (SAFETY, SHALLOW_SAFETY)."""
    return SAFETY if depth >= SHALLOW_DEPTH else SHALLOW_SAFETY


def expected_table_words(out_c: int, depth: int, density: float) -> float:
    """The pair table words (table_counts' sum) of an [out_c, depth] filter whose nonzeros fall at random with this
    density: per block the expectation of the longer half's count (two binomials of 8), per list 1.5 words of
    padding to a BLOCK on average."""
    k = np.arange(TABLE_BLOCK // 2 + 1)
    half = np.array([math.comb(TABLE_BLOCK // 2, int(n)) * density ** n * (1 - density) ** (TABLE_BLOCK // 2 - n)
                     for n in k])
    at_most = np.cumsum(half)
    longer = float(np.sum(k * (at_most ** 2 - np.concatenate([[0.0], at_most[:-1]]) ** 2)))  # E[max of the two]
    return out_c * (-(-depth // TABLE_BLOCK) * longer + 1.5 * table_count(depth))


def break_even_table_density(target: Target, out_c: int, depth: int) -> float | None:
    """The density below which the target's pair table model (Target.sparse_table_cost) predicts a one-row
    [out_c, depth] filter with random nonzeros faster than the dense kernel; None without the models, 0 where the
    table never wins."""
    dense = target.sparse_cost(False)
    if dense is None or target.sparse_table_cost is None:
        return None
    limit = float(np.dot(dense[0], cost_features(out_c, depth, 1, 0)[0]))

    def predicted(density: float) -> float:
        cost = predicted_table_cost(target, out_c, depth, expected_table_words(out_c, depth, density))
        assert cost is not None
        return cost

    if predicted(0.0) >= limit:
        return 0.0
    low, high = 0.0, 1.0
    for _ in range(40):  # (the prediction grows with the density)
        middle = (low + high) / 2
        low, high = (middle, high) if predicted(middle) < limit else (low, middle)
    return low


def break_even_density(target: Target, out_c: int, depth: int, input_rows: int, pairs: bool = False
                       ) -> float | None:
    """The density (nonzeros / weights) below which the target's fitted models predict the sparse kernel
    faster than the dense one, for an [out_c, depth] filter on input_rows rows; --sparse auto takes it
    only below SAFETY times the dense cost, a lower density. Nonzeros spread evenly: each (channel,
    segment) list pads 1.5 entries on average to its block of 4. None without a model; 0 where sparse
    never wins. pairs: the sparse kernel in row pairs (pairs_cost; four rows or more), whose lists are not padded
    (an empty one takes an entry: neglected)."""
    cost = target.sparse_cost(input_rows >= 4)
    if cost is None:
        return None
    dense = cost_features(out_c, depth, input_rows, 0)[0]
    sparse_rows = input_rows
    if pairs:
        paired, sparse_rows = pairs_cost(target, input_rows)
        if paired is None:
            return None
        cost = (cost[0], paired)
    empty = cost_features(out_c, depth, sparse_rows, 0)[1]
    per_entry = cost[1][0] * sparse_rows
    if per_entry <= 0:
        return None
    entries = (float(np.dot(cost[0], dense)) - float(np.dot(cost[1], empty))) / per_entry
    segments = max(-(-depth // SEGMENT), 1)
    nonzeros = entries - (0.0 if pairs else 1.5 * out_c * segments)
    return min(max(nonzeros / (out_c * depth), 0.0), 1.0)


def sparse_plan(ctx: EmitContext, rows: np.ndarray, input_rows: int, pairs: bool = False,
                four_rows_only: bool = False) -> SparseLayout | None:
    """The sparse layout of this [out_c, depth] int8 filter, applied to input_rows rows (batches or output
    pixels), when it takes the sparse kernel, else None: with --sparse auto when the target's fitted model
    predicts it at most SAFETY times the dense instructions (a margin for the model's error: never slower;
    SHALLOW_SAFETY for filters shallower than SHALLOW_DEPTH).
    With --optimize size the packed layout (half the positions' flash) where it is smaller than the dense filter
    and, with the target's measured cost of its steps (Target.packed_extra), predicted no slower than the dense
    kernel of that level (SIZE_SAFETY for one row, auto_margin for more); else the usual layout, by the usual
    rule. four_rows_only: every row of the layer runs the four-row loop (a 1x1 convolution), so a packed list
    pads to pairs (packed_layout). pairs (row_pairs_fit): the layer would sum its rows in row pairs,
    which an --optimize speed build keeps (compile.plan_stages), so there it is predicted with their model;
    elsewhere with the four-row loop's, as the arena may not allow them."""
    if ctx.sparse == "off" or rows.size == 0:
        return None
    # (a nonzero takes at least a byte of value and half a byte of step: rows no packing can make smaller than
    # their dense bytes are not laid out at all, dense layers of an unpruned model at size among them)
    packed = (packed_layout(rows, four_rows_only) if ctx.optimize == "size"
              and 3 * np.count_nonzero(rows) < 2 * rows.size else None)
    if ctx.sparse == "always":
        return packed or sparse_layout(rows)
    out_c, depth = rows.shape
    if packed is not None and packed.flash_bytes < rows.size:  # smaller than the dense int8 rows
        predicted = predicted_instructions(ctx.target, packed, input_rows)
        margin = SIZE_SAFETY if input_rows < 4 else auto_margin(depth)
        if predicted is not None and predicted[0] > 0 and predicted[1] <= margin * predicted[0]:
            return packed
    # the decision needs only the count of stored entries: the layout is built for the layers it takes
    paired = pairs and ctx.optimize == "speed"
    predicted = predicted_costs(ctx.target, out_c, depth, input_rows, stored_entries(rows, padded=not paired),
                                pairs=paired)
    chosen = predicted is not None and predicted[0] > 0 and predicted[1] <= auto_margin(depth) * predicted[0]
    layout = sparse_layout(rows) if chosen else None
    if layout is not None and ctx.optimize == "size" and layout.flash_bytes >= rows.size:
        return None  # (faster, but larger than the int8 rows the dense kernel reads at size)
    return layout


@dataclass(frozen=True)
class TableLayout:
    """A one-row filter in the pair table layout (nn2c_sparse_s8_t.table): per (table, channel), table after table,
    a count of words (a multiple of BLOCK); per word its index in the table and its two weights as the int16 halves
    of an int32 (A's low, B's high), stored interleaved (table_words: 8 bytes a word)."""

    out_c: int
    depth: int
    counts: np.ndarray
    index: np.ndarray
    weights: np.ndarray

    @property
    def tables(self) -> int:
        return table_count(self.depth)

    @property
    def scratch_bytes(self) -> int:
        """The table (4 bytes a word, 64 words a block of the widest table), then the sums carried between tables."""
        blocks = -(-min(self.depth, TABLE_INPUTS) // TABLE_BLOCK)
        return 4 * TABLE_BLOCK_WORDS * blocks + (4 * self.out_c if self.tables > 1 else 0)


def _table_blocks(rows: np.ndarray) -> np.ndarray:
    """[out_c, depth] -> [out_c, tables, blocks a table, 2 halves, 8 inputs], zero-padded past depth."""
    out_c, depth = rows.shape
    tables = table_count(depth)
    padded = np.zeros((out_c, tables * TABLE_INPUTS), dtype=np.int8)
    padded[:, :depth] = rows
    return padded.reshape(out_c, tables, TABLE_INPUTS // TABLE_BLOCK, 2, TABLE_BLOCK // 2)


def table_counts(rows: np.ndarray) -> np.ndarray:
    """The words of each (table, channel) list of these [out_c, depth] rows in the pair table layout, [tables,
    out_c]: per block the longer half's nonzeros, a list padded to whole BLOCKs, at least one."""
    nonzeros = np.count_nonzero(_table_blocks(rows), axis=-1).max(axis=-1).sum(axis=-1)  # [out_c, tables]
    # (an empty list takes one block of zero words: the kernel's loop does not test for none)
    return np.maximum(-(-nonzeros // BLOCK) * BLOCK, BLOCK).T.astype(np.int64)


def table_layout(rows: np.ndarray) -> TableLayout:
    """[out_c, depth] int8 -> its pair table layout: in each block of 16 inputs a channel's nonzeros of half A
    (inputs 0-7) paired in order with B's (8-15), a missing partner a zero weight at position 0; each word's
    index 64 block + 32 (q / 4) + 4 p + q % 4 (nn2c_sparse_build_table's order). A list holds at most 64 words
    (8 blocks of 8), which its uint16 count holds."""
    out_c, depth = rows.shape
    blocks = _table_blocks(rows)
    counts = table_counts(rows)
    index: list[int] = []
    weights: list[int] = []
    for t in range(counts.shape[0]):
        for c in range(out_c):
            start = len(index)
            for g in range(blocks.shape[2]):
                a, b = blocks[c, t, g]
                pa, pb = np.flatnonzero(a), np.flatnonzero(b)
                for i in range(max(pa.size, pb.size)):
                    p = int(pa[i]) if i < pa.size else 0
                    q = int(pb[i]) if i < pb.size else 0
                    wa = int(a[p]) if i < pa.size else 0
                    wb = int(b[q]) if i < pb.size else 0
                    index.append(TABLE_BLOCK_WORDS * g + 32 * (q >> 2) + 4 * p + (q & 3))
                    weights.append((wa & 0xFFFF) | (wb & 0xFFFF) << 16)
            pad = int(counts[t, c]) - (len(index) - start)
            index += [0] * pad
            weights += [0] * pad
    return TableLayout(out_c, depth, counts.reshape(-1).astype(np.uint16), np.array(index, dtype=np.uint16),
                       np.array(weights, dtype=np.uint32).view(np.int32))


def table_plan(ctx: EmitContext, rows: np.ndarray, input_rows: int) -> TableLayout | None:
    """The pair table layout for a one-row layer (input_rows < 4) on the Arm DSP whose filter the sparse kernels
    take at all. At --optimize speed: with --sparse always; with --sparse auto where the target's fitted model of it
    (Target.sparse_table_cost) predicts at most SAFETY times the dense kernel's instructions. At balanced, where
    more scratch is allowed (EmitContext.extra_scratch: compile.plan_stages keeps the tables only where the arena
    does not grow): with always; with auto where the one-row model takes the layer sparse (the kernel it runs if
    the tables are dropped, so the layer is never slower than dense either way) and the tables are predicted faster
    than it. Never at size (8 bytes a word)."""
    target = ctx.target
    if not (target.simd == "dsp" and input_rows < 4 and ctx.sparse != "off" and rows.size
            and (ctx.optimize == "speed" or (ctx.optimize == "balanced" and ctx.allows_extra_scratch()))):
        return None
    if ctx.sparse == "always":
        return table_layout(rows)
    dense = target.sparse_cost(False)
    out_c, depth = rows.shape
    per_row = predicted_table_cost(target, out_c, depth, int(table_counts(rows).sum()))
    if dense is None or per_row is None:
        return None
    if ctx.optimize == "speed":
        limit = SAFETY * float(np.dot(dense[0], cost_features(out_c, depth, input_rows, 0)[0]))
    else:
        costs = predicted_costs(target, out_c, depth, input_rows, stored_entries(rows))
        if costs is None or costs[0] <= 0 or costs[1] > auto_margin(depth) * costs[0]:
            return None  # (dense by the one-row model's rule: sparse_plan's)
        limit = costs[1]
    return table_layout(rows) if per_row * input_rows <= limit else None


def table_words(layout: TableLayout, doubled: bool) -> np.ndarray:
    """nn2c_sparse_s8_t.table_words: per word its table index, then its weight pair (doubled for doubled records), so
    one LDM reads two words."""
    weights = doubled_pairs(layout.weights) if doubled else layout.weights
    return np.stack([layout.index.astype(np.int32), weights.astype(np.int32)], axis=1).reshape(-1)


def takes_pairs(rows: np.ndarray) -> bool:
    """Whether the four-row loops may sum two rows in one 64-bit sum (nn2c_sparse_s8_t.pairs): PAIR_SUM_LIMIT
    for every channel of these [out_c, depth] int8 rows."""
    return bool(np.all(128 * np.abs(rows.astype(np.int64)).sum(axis=1) < PAIR_SUM_LIMIT))


def row_pairs_fit(ctx: EmitContext, rows: np.ndarray, bias: Value | None, input_offset: int, real: list[float],
                  output_offset: int, act_min: int, act_max: int) -> bool:
    """Whether a layer run four rows at a time, its filter [out_c, depth] int8 rows in the unpacked layout,
    sums them in row pairs (nn2c_sparse_row4_pairs): the Arm DSP, more scratch allowed (EmitContext.extra_scratch),
    a per-channel filter (more than one multiplier) over at most SEGMENT inputs, takes_pairs, and an output
    stage that fits pair records (doubled_records_fit)."""
    if not (ctx.allows_extra_scratch() and ctx.target.simd == "dsp" and rows.shape[1] <= SEGMENT and takes_pairs(rows)):
        return False
    multipliers = [quantize_multiplier(m) for m in real]
    if len(set(multipliers)) == 1:
        return False
    shifts = np.array([s for _, s in multipliers], dtype=np.int32)
    return doubled_records_fit(rows, None if bias is None else np.asarray(bias.data), input_offset, shifts,
                               output_offset, act_min, act_max)


def sparse_fields(ctx: EmitContext, layout: SparseLayout | TableLayout, rows: np.ndarray, bias: Value | None,
                  input_offset: int, real: list[float], output_offset: int, act_min: int, act_max: int,
                  row_pairs: bool, call_rows: int = 0) -> tuple[str, int]:
    """The nn2c_sparse_s8_t initializer of an int8 filter given as [out_c, depth] rows (layout: theirs, or their
    pair table layout) and its real multipliers (one for a per-tensor filter), and the bytes of scratch its row
    pairs or pair table take (0 without). On the Arm DSP each channel's output stage is one record where every
    shift allows (RECORD_SHIFTS); a layer run four rows at a time that row_pairs_fit allows (the caller's
    `row_pairs`) sums them in row pairs, with pair_records, unpadded lists, and eight rows at a time where a call of
    the kernel runs `call_rows` >= EIGHT_ROWS rows (nn2c_sparse_row8_pairs, kernel path SPARSE_ROWS8)."""
    out_c, depth = rows.shape
    row_pairs = row_pairs and isinstance(layout, SparseLayout) and not layout.packed
    eight_rows = row_pairs and call_rows >= EIGHT_ROWS
    if row_pairs:
        layout = sparse_layout(rows, padded=False)  # (the row pairs' loops enter a list at any entry)
    if eight_rows:
        ctx.take_path("SPARSE_ROWS8")
    quantized = [quantize_multiplier(m) for m in real]
    if isinstance(layout, TableLayout) and len(quantized) == 1:
        # (the pair table's assembly reads per-channel records alone: 8 bytes a channel more for a per-tensor filter)
        quantized *= out_c
    if len(set(quantized)) == 1 and not isinstance(layout, TableLayout):
        # a per-tensor filter (or one broadcast to its channels): stored once
        quantized = quantized[:1]
    multipliers = np.array([m for m, _ in quantized], dtype=np.int32)
    shifts = np.array([s for _, s in quantized], dtype=np.int32)
    bias_data = None if bias is None else np.asarray(bias.data)
    folded = folded_bias(bias_data, rows, input_offset, out_c, pad_to=1)  # int32, wrapped as TFLite's sum
    per_channel = len(quantized) > 1
    fields: dict[str, object]
    if isinstance(layout, TableLayout):
        ctx.variant(TABLE_VARIANT)
        fields = {
            "out_c": out_c, "depth": depth, "segments": layout.tables,
            "counts": ctx.const_array(layout.counts, "uint16_t", "sparse filter: words per pair table and channel"),
        }
    else:
        fields = {
            "out_c": out_c, "depth": depth, "segments": layout.segments,
            "counts": ctx.const_array(layout.counts, "uint16_t", "sparse filter: entries per channel" + (
                "" if layout.packed else " and 256 inputs")),
            "index": ctx.const_array(layout.positions, "uint8_t", "sparse filter: 4-bit steps between the positions"
                                     if layout.packed else "sparse filter: position of each nonzero"),
            "packed": int(layout.packed),
            "values": ctx.const_array(layout.values, "int8_t", "sparse filter: the nonzero weights"),
        }
    fields.update({"bias": "NULL", "multipliers": "NULL", "shifts": "NULL", "rounding": "NULL",
                   "per_channel": int(per_channel), "records": "NULL"})
    stage = {"multipliers": ctx.const_array(multipliers, "int32_t", "output multipliers"),
             "shifts": ctx.const_array(shifts, "int32_t", "output shifts")}
    if isinstance(layout, SparseLayout) and layout.packed:
        ctx.variant(PACKED_VARIANT)
    # pair tables whose output stage fits doubled records: the sums doubled by doubled weights (int16 halves: 2 x 127
    # fits), nn2c_requant_doubled's 4 instructions an output where the records' take 7
    doubled_table = (isinstance(layout, TableLayout) and per_channel and doubled_records_fit(
        rows, bias_data, input_offset, shifts, output_offset, act_min, act_max))
    if doubled_table:
        fields["records"] = ctx.const_array(table_records(folded, multipliers, shifts, output_offset), "int32_t",
                                            "sparse output stage per channel (pair tables): 2 bias, multiplier, "
                                            "rounding with the output offset, shift")
    elif row_pairs:  # (nn2c_sparse_row4_pairs)
        ctx.take_extra_scratch()
        ctx.variant(PAIRS_VARIANT)
        fields["records"] = ctx.const_array(pair_records(folded, multipliers, shifts, output_offset), "int32_t",
                                            "sparse output stage per channel (row pairs): 2 bias - 2^23, "
                                            "multiplier, rounding with the output offset")
    elif ctx.target.simd == "dsp" and bool(np.all((shifts >= RECORD_SHIFTS[0]) & (shifts <= RECORD_SHIFTS[1]))):
        # the output stage channel by channel in one record (nn2c_sparse_row1_records, _row4_records) instead of
        # arrays
        if per_channel:
            fields["records"] = ctx.const_array(channel_records(folded, multipliers, shifts), "int32_t",
                                                "sparse output stage per channel: bias, multiplier, scale word")
        else:
            fields.update(stage, records=ctx.const_array(folded[:out_c], "int32_t",
                                                         "bias with the input offset folded in"))
    else:
        fields.update(stage, bias=ctx.const_array(folded, "int32_t", "bias with the input offset folded in"),
                      rounding=ctx.const_array(requant_rounding(shifts), "int64_t", "output rounding constants"))
    fields["pairs"] = (EIGHT_ROW_PAIRS if eight_rows else 1) if row_pairs else 0
    if isinstance(layout, TableLayout):
        fields.update(table=2 if doubled_table else 1,
                      table_words=ctx.const_array(table_words(layout, doubled_table), "int32_t",
                                                  "sparse filter: per word its index in its pair table, then its "
                                                  "two weights (int16 halves" + (", doubled)" if doubled_table
                                                                                 else ")")))
    fields.update(output_offset=output_offset, act_min=act_min, act_max=act_max)
    # the row pairs' scratch: 8 bytes an input position a row pair, then the outputs of a block of rows (where they
    # overlap their inputs, or a block's last rows)
    scratch = (8 * depth + 4 * out_c) * (EIGHT_ROW_PAIRS if eight_rows else 1) if row_pairs else 0
    if isinstance(layout, TableLayout):
        ctx.take_extra_scratch()
        scratch = layout.scratch_bytes
    return "{" + ", ".join(f".{k} = {format_field(v)}" for k, v in fields.items()) + "}", scratch


def pair_records(bias: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, output_offset: int) -> np.ndarray:
    """Per output channel RECORD_WORDS int32 words of a layer summed in row pairs (nn2c_sparse_s8_t.pairs): the
    doubled bias less 2^23 (the sums' two fields start at 2^22), the multiplier, and 2^(r - 1) + output_offset
    2^r, r = -shift (nn2c_record_requant_doubled; doubled_records_fit), from whose trailing zeros the kernel
    reads r."""
    out_c = multipliers.size
    r = -shifts.astype(np.int64)
    records = np.zeros((out_c, RECORD_WORDS), dtype=np.int64)
    records[:, 0] = 2 * np.asarray(bias[:out_c], dtype=np.int64) - (1 << 23)
    records[:, 1] = multipliers
    records[:, 2] = np.left_shift(np.int64(1), r - 1) + int(output_offset) * np.left_shift(np.int64(1), r)
    return (records & 0xFFFFFFFF).astype(np.uint32).view(np.int32).reshape(-1)


def doubled_pairs(weights: np.ndarray) -> np.ndarray:
    """Pair table words (two int16 weights as the halves of an int32) with both weights doubled."""
    w = weights.astype(np.int64)
    low = ((w & 0xFFFF) ^ 0x8000) - 0x8000
    high = w >> 16
    return ((2 * low & 0xFFFF) | (2 * high & 0xFFFF) << 16).astype(np.uint32).view(np.int32)


def table_records(bias: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, output_offset: int) -> np.ndarray:
    """Per output channel TABLE_RECORD_WORDS int32 words of a layer over pair tables with doubled weights
    (nn2c_sparse_s8_t.table 2): the doubled bias, the multiplier, 2^(r - 1) + output_offset 2^r and r, r = -shift
    (nn2c_requant_doubled; doubled_records_fit)."""
    out_c = multipliers.size
    r = -shifts.astype(np.int64)
    records = np.zeros((out_c, TABLE_RECORD_WORDS), dtype=np.int64)
    records[:, 0] = 2 * np.asarray(bias[:out_c], dtype=np.int64)
    records[:, 1] = multipliers
    records[:, 2] = np.left_shift(np.int64(1), r - 1) + int(output_offset) * np.left_shift(np.int64(1), r)
    records[:, 3] = r
    return (records & 0xFFFFFFFF).astype(np.uint32).view(np.int32).reshape(-1)


def channel_records(bias: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """Per output channel RECORD_WORDS int32 words (nn2c_sparse_s8_t.records): bias, multiplier and the scale
    word (-shift - 1) | 2^(-shift - 2) << 8 from which nn2c_sparse_record_requant builds its rounding (every
    shift within RECORD_SHIFTS)."""
    out_c = multipliers.size
    sh = -shifts.astype(np.int64) - 1
    records = np.zeros((out_c, RECORD_WORDS), dtype=np.int64)
    records[:, 0] = bias[:out_c]
    records[:, 1] = multipliers
    records[:, 2] = sh | np.left_shift(np.int64(1), sh + 7)
    return (records & 0xFFFFFFFF).astype(np.uint32).view(np.int32).reshape(-1)


def sparse_instructions(target: Target, node: Node, packed: bool = False, pairs: bool = False, table: bool = False
                        ) -> float | None:
    """The instructions the target's model predicts for a FULLY_CONNECTED / CONV_2D node lowered to a
    sparse kernel, in the packed layout if `packed`, summed in row pairs if `pairs`, over pair tables if `table`
    (None without a model)."""
    w = node.inputs[1]
    if w is None or w.data is None or not node.outputs:
        return None
    rows = np.asarray(w.data).reshape(w.type.shape[0], -1).astype(np.int8)
    input_rows = node.outputs[0].type.num_elements // max(rows.shape[0], 1)
    if table:
        per_row = predicted_table_cost(target, *rows.shape, int(table_counts(rows).sum()))
        return None if per_row is None else max(per_row, 0.0) * input_rows
    paired, pair_input_rows = pairs_cost(target, input_rows) if pairs else (None, input_rows)
    if paired is not None:
        features = cost_features(rows.shape[0], rows.shape[1], pair_input_rows, stored_entries(rows, padded=False))[1]
        return max(float(np.dot(paired, features)), 0.0)
    layout = packed_layout(rows, four_rows_only=node.op == "CONV_2D") if packed else None
    predicted = predicted_instructions(target, layout or sparse_layout(rows), input_rows)
    return None if predicted is None else max(predicted[1], 0.0)
