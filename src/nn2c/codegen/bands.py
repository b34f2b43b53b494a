"""Column bands of a row group: the group's output split into vertical bands, each streamed by rows.

MCUNetV2's patch-based inference splits the output of an initial stage into p x p patches and
computes each from its receptive field, recomputing the overlap. Inside a patch nn2c still streams
rows (codegen/stream.py), so the rows of a patch column are one band: a band is the patch column
with its rows streamed, and the windows of every member shrink to the band's columns plus the
halo its consumers read. The halo columns are computed once per band that needs them (the
recomputed MACs); the rows are never recomputed.

A group bands when every member but the sink is read by exactly one member (a chain, or an
inverted bottleneck whose ADD reads its block input from outside): a member's band is then exactly
the columns its one consumer reads, so its window rows are contiguous and the kernels run
unchanged on them with the band's in_w / out_w / pad_w (element-wise members: the band's
elements). Each read of an outside tensor copies the band's columns of the rows it needs into a
tile of its own, and the sink's rows go through a tile into the output tensor: kernels take rows
of their own width only. No member writes in place over an outside tensor: later bands read its
rows again from the top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nn2c.ir import dtype_bytes
from nn2c.ir.cost import macs
from nn2c.memory.rows import RowMap

if TYPE_CHECKING:
    from nn2c.codegen.stream import StreamOp

# the column fields of each kernel kind's parameters: (input width, output width, left padding)
COLUMN_FIELDS = {"conv": ("g.in_w", "g.out_w", "g.pad_w"), "pool": ("input_w", "output_w", "pad_w")}
ELEMENTWISE = ("bcast", "count")
BAND_COUNTS = (2, 3, 4, 6, 8)  # bands tried per group (MCUNetV2 uses 2x2 .. 4x4 patches)
MIN_BAND_PIXELS = 4  # output columns of the sink per band, at least


@dataclass(frozen=True)
class Read:
    """A member's read of a tensor from outside the group: copied a band at a time into a tile."""

    member: int
    arg: int  # the kernel argument it is
    rows: RowMap
    channels: int
    item_bytes: int
    width: int  # of the whole tensor


@dataclass(frozen=True)
class Band:
    """One band: per member, the first column and width of its output and its left padding inside
    the band; per outside read, the first column and width copied."""

    out_lo: tuple[int, ...]
    out_w: tuple[int, ...]
    pad_w: tuple[int, ...]
    read_lo: tuple[int, ...]
    read_w: tuple[int, ...]


@dataclass(frozen=True)
class Bands:
    bands: tuple[Band, ...]
    reads: tuple[Read, ...]
    channels: tuple[int, ...]  # per member: output channels
    item_bytes: tuple[int, ...]  # per member: bytes of one output element
    recomputed_macs: int  # beyond the layer-by-layer MACs: the halo columns of neighbouring bands

    @property
    def count(self) -> int:
        return len(self.bands)

    def row_bytes(self, j: int) -> int:
        """Bytes of member j's widest band row (its window rows are this long)."""
        return max(b.out_w[j] for b in self.bands) * self.channels[j] * self.item_bytes[j]

    def read_row_bytes(self, r: int) -> int:
        read = self.reads[r]
        return max(b.read_w[r] for b in self.bands) * read.channels * read.item_bytes

    def table(self) -> list[list[int]]:
        """Per band: out_w and pad_w of each member, then the first column and width of each outside
        read, then the sink's first output column (the C table; the indexes below address it)."""
        return [[v for j in range(len(b.out_w)) for v in (b.out_w[j], b.pad_w[j])]
                + [v for r in range(len(b.read_w)) for v in (b.read_lo[r], b.read_w[r])] + [b.out_lo[-1]]
                for b in self.bands]

    def out_w_index(self, j: int) -> int:
        return 2 * j

    def read_index(self, r: int) -> int:
        """Of the read's first column; its width follows."""
        return 2 * len(self.channels) + 2 * r

    def read_number(self, member: int, arg: int) -> int:
        """The outside read of member `member`'s kernel argument `arg` (its tile, its table columns)."""
        return next(r for r, read in enumerate(self.reads) if (read.member, read.arg) == (member, arg))

    @property
    def sink_lo_index(self) -> int:
        return 2 * len(self.channels) + 2 * len(self.reads)


def column_map(op: StreamOp) -> RowMap | None:
    """How output column x of a convolution or pooling reads its input's columns (element-wise: its own)."""
    from nn2c.codegen.stream import geometry

    if op.kind not in (*COLUMN_FIELDS, *ELEMENTWISE):
        return None
    g = geometry(op.params)
    if op.kind == "conv":
        return RowMap(g["in_w"], (g["filter_w"] - 1) * g["dilation_w"] + 1, g["stride_w"], g["pad_w"])
    if op.kind == "pool":
        return RowMap(g["input_w"], g["filter_w"], g["stride_w"], g["pad_w"])
    return RowMap(op.output.type.shape[2])  # element-wise: column x reads column x


def bandable(run: list[StreamOp], sources: list[list[int]]) -> bool:
    """Every member a convolution, pooling or same-shape element-wise operator, each but the sink read
    by exactly one member (sources: per member, the source of each streamed input as in Member.reads)."""
    if any(op.kind not in (*COLUMN_FIELDS, *ELEMENTWISE) for op in run):
        return False
    if any(op.kind in COLUMN_FIELDS and len(op.streamed) != 1 for op in run):
        return False
    reads = [s for member in sources for s in member if s >= 0]
    return sorted(reads) == list(range(len(run) - 1))


def plan_bands(run: list[StreamOp], sources: list[list[int]], count: int) -> Bands | None:
    """The sink's output columns split into `count` bands of near-equal width, each traced back
    through the group to the columns every member makes and every outside read copies; None if the
    group cannot band this way."""
    maps = [op.column_map for op in run]
    if any(m is None for m in maps) or not bandable(run, sources):
        return None
    widths = [op.output.type.shape[2] for op in run]
    n = len(run)
    reads = tuple(Read(j, k, m, v.type.shape[3], dtype_bytes(v.type.dtype), v.type.shape[2])
                  for j, op in enumerate(run) for (k, v, m), s in zip(op.streamed, sources[j], strict=True) if s < 0)
    if count < 2 or widths[-1] < count * MIN_BAND_PIXELS:
        return None
    bands = []
    for b in range(count):
        out = [(0, 0)] * n
        out[-1] = (b * widths[-1] // count, (b + 1) * widths[-1] // count)
        pad_w = [0] * n
        read_cols: dict[tuple[int, int], tuple[int, int]] = {}
        for j in range(n - 1, -1, -1):
            lo, hi = out[j]
            cmap = maps[j]
            assert cmap is not None
            in_lo, in_hi = cmap.lo(lo), cmap.hi(hi - 1)
            if in_hi <= in_lo:
                return None
            pad_w[j] = in_lo - (lo * cmap.stride - cmap.pad)
            for (k, _, _), s in zip(run[j].streamed, sources[j], strict=True):
                if s >= 0:
                    out[s] = (in_lo, in_hi)
                else:
                    read_cols[(j, k)] = (in_lo, in_hi)
        copied = [read_cols[(r.member, r.arg)] for r in reads]
        bands.append(Band(tuple(lo for lo, _ in out), tuple(hi - lo for lo, hi in out), tuple(pad_w),
                          tuple(lo for lo, _ in copied), tuple(hi - lo for lo, hi in copied)))
    recomputed = 0
    for j, op in enumerate(run):
        made = sum(b.out_w[j] for b in bands)
        recomputed += macs(op.node) * (made - widths[j]) // max(widths[j], 1)
    return Bands(tuple(bands), reads, tuple(op.output.type.shape[-1] for op in run),
                 tuple(dtype_bytes(op.output.type.dtype) for op in run), recomputed)


def copied_bytes(bands: Bands, run: list[StreamOp], calls: list[int]) -> int:
    """Bytes the band copies move per inference: each outside read's rows (each call copies the rows it
    reads: a window's rows overlapping the previous call's again) and the sink's output."""
    total = run[-1].output.type.num_bytes
    for r, read in enumerate(bands.reads):
        rows = read.rows.in_rows + max(calls[read.member] - 1, 0) * max(read.rows.span - read.rows.stride, 0)
        total += rows * sum(b.read_w[r] for b in bands.bands) * read.channels * read.item_bytes
    return total
