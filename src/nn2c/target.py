"""What nn2c knows about each `--target`, in one table.

A Target says how to compile for the core (GCC's -mthumb / -mcpu / -mfpu / -mfloat-abi), which
QEMU machine runs it (the bench image's memory map fits it), which SIMD kernels of
kernels/nn2c_simd.c its compiler flags select (the C code picks them from the compiler's feature
macros: __ARM_FEATURE_MVE, then __ARM_FEATURE_DSP) and the data layouts those kernels expect,
which the lowerings must write (codegen/ops/conv.py), plus the alignment of arrays and the
registers a kernel may count on.

A bottom-floor module: it imports nothing of nn2c but nn2c.errors, so codegen/ and targets/ may
import it and it imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from nn2c.errors import UsageError


@dataclass(frozen=True)
class Target:
    name: str  # the --target value
    mcpu: str | None = None  # GCC -mcpu core; None: the host (portable C99, the host's own compiler)
    fpu: str | None = None  # GCC -mfpu, None where -mcpu implies it (Cortex-M55) or on the host
    float_abi: str | None = None  # GCC -mfloat-abi
    qemu_board: str | None = None  # qemu-system-arm -M machine of the bench (nn2c_cortexm.ld fits its memory)
    simd: str | None = None  # kernel family nn2c_simd.c compiles for these flags: None, "dsp" (SMLAD) or "mve"
    # int8 matrix products (CONV_2D, FULLY_CONNECTED): the filter as groups of G output channels,
    # each [depth_padded / KB][G][KB] bytes (nn2c_gemm_s8_t.rows_per_group, .k_block)
    gemm_layout: tuple[int, int] | None = None  # (G, KB)
    dw_lanes: int | None = None  # DEPTHWISE_CONV_2D channels per step (nn2c_dw_simd_params_t.lanes)
    # CONV_2D im2col scratch: True (DSP) = the pixel pair widened to int16 (4 * depth_padded bytes)
    # + one int8 im2col row (unless 1x1 without padding); False (MVE) = two int8 rows (2 * depth)
    conv_pair_int16: bool = False
    # nn2c_sums_s8 (a constant int8 matrix times a vector: LSTM gates, SVDF features): True (DSP) = groups of
    # 4 rows widened to int16 in SMLAD order (codegen/ops/conv.py pack_rows); False = [rows][depth] int8
    row_sums_int16: bool = False
    # the dense SIMD kernels' 64-bit rounding constants (codegen/ops/conv.py requant_rounding, 16 B a channel):
    # read by the Arm DSP's fused high multiply; Helium's VQRDMULH stage needs none (the sparse kernels' scalar
    # output stage reads its own on every target: codegen/ops/sparse.py)
    rounding_tables: bool = False
    alignment: int = 16  # bytes: weight arrays (4 at --optimize size), the arena and every buffer offset in it
    gp_registers: int | None = None  # general-purpose registers a kernel may use (r0-r12); None: unknown
    vector_registers: int = 0  # SIMD vector registers (MVE: Q0-Q7); DSP SIMD works in the general ones
    # sparse int8 kernels (kernels/nn2c_sparse.c) against the dense ones, per layer shape ("row": one input
    # row at a time, a FULLY_CONNECTED of batch < 4; "block": four, 1x1 convolutions): instructions of the
    # dense and of the sparse kernel as coefficients of SPARSE_COST_FEATURES (codegen/ops/sparse.py), fitted
    # to QEMU counts by bench/sparse.py; codegen/ops/sparse.py compares the two predictions per layer
    sparse_row_cost: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    sparse_block_cost: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    # the packed sparse layout (--optimize size): instructions above sparse_row_cost's (one input row) and
    # sparse_block_cost's (four) per stored entry and input row and per output channel and input row, fitted to
    # QEMU counts (see _DSP_PACKED_EXTRA); None: --sparse auto never packs that layer shape
    sparse_packed_extra: tuple[float, float] | None = None
    sparse_packed_block_extra: tuple[float, float] | None = None
    # the four-row loop over row pairs (nn2c_sparse_row4_pairs: Arm DSP, the layers codegen/ops/sparse.py sums
    # so): the sparse kernel's coefficients of SPARSE_COST_FEATURES, fitted as above; nn2c.profile predicts such
    # a layer with them (--sparse auto decides with sparse_block_cost, the slower loop's, as the row pairs are
    # kept only where the arena allows: compile.plan_stages)
    sparse_pairs_cost: tuple[float, ...] | None = None
    # the eight-row loop over row pairs (nn2c_sparse_row8_pairs: a layer of eight rows or more that sums them so), the
    # same, its rows those its blocks compute (codegen/ops/sparse.py pair_rows)
    sparse_pairs8_cost: tuple[float, ...] | None = None
    # the pair table layout of a one-row layer (nn2c_sparse_row1_table: Arm DSP; --optimize speed, and balanced
    # builds where the arena allows): instructions per input row as coefficients of TABLE_COST_FEATURES
    # (codegen/ops/sparse.py), fitted as above; None: --sparse auto never takes it
    sparse_table_cost: tuple[float, ...] | None = None

    @property
    def is_cortex_m(self) -> bool:
        return self.mcpu is not None

    def sparse_cost(self, blocked: bool) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """The fitted dense / sparse instruction model of a layer shape (None: never measured)."""
        return self.sparse_block_cost if blocked else self.sparse_row_cost

    def packed_extra(self, blocked: bool) -> tuple[float, float] | None:
        """The packed layout's extra instructions over sparse_cost's of a layer shape (None: never measured)."""
        return self.sparse_packed_block_extra if blocked else self.sparse_packed_extra

    @property
    def cflags(self) -> tuple[str, ...]:
        """The core's code-generation flags, the same for the footprint, the bench image and its link."""
        if self.mcpu is None:
            return ()
        flags = ["-mthumb", f"-mcpu={self.mcpu}"]
        if self.fpu:
            flags.append(f"-mfpu={self.fpu}")
        if self.float_abi:
            flags.append(f"-mfloat-abi={self.float_abi}")
        return tuple(flags)


# (dense, sparse) instruction models of the sparse kernels' choice, fitted by bench/sparse.py (QEMU counts on
# ad01_int8, kws_ref_model and vww_96_int8 pruned by magnitude 50/75/90% and 1:8; docs/BENCHMARKS.md "Sparse").
# The one-row, four-row and row-pair models are those fitted before balanced builds kept extra scratch per layer
# (46 and 57 layers on the plain loops; the same kernels): since, fewer layers run the plain loops at balanced
# and the least squares over the 36 one-row ones gives a negative constant, which took a 22 -> 2 classifier
# sparse at 1.8x its dense instructions
_DSP_SPARSE_ROW = ((1.205, 12.53, 1.205, 95.41, 95.41), (4.085, 16.54, 0.1196, 41.76, 41.76))
_DSP_SPARSE_BLOCK = ((0.9463, 9.789, 1.982, 105.5, 526.5), (2.634, 17.45, -0.5037, 55.67, 165.2))
# the row pairs' loops (--optimize speed, and balanced builds where the arena allows): their sparse coefficients.
# Four rows at a time (4-7 rows: FULLY_CONNECTED batches) as fitted to the four-row loop over padded lists when it
# ran every such layer (no layer of bench/sparse.py's models has 4-7 rows since eight rows run eight at a time: not
# measured over the unpadded lists); eight at a time over the rows their blocks compute
# (pair_rows) and the unpadded entries, fitted by bench/sparse.py on its 53 such layers (max error 6%)
_DSP_SPARSE_PAIRS = (1.642, 14.83, 1.756, 29.75, 789.0)
_DSP_SPARSE_PAIRS8 = (1.422, 11.26, 2.256, 23.64, 274.4)
# the one-row pair tables (--optimize speed, and balanced where the arena allows): per input row, coefficients of
# TABLE_COST_FEATURES (per stored word, per (table, channel) list, per table input built, one call)
_DSP_SPARSE_TABLE = (2.727, 15.42, 7.721, 175.5)
# the packed layout on the Arm DSP (--optimize size), over the byte layout's models above: one row (nn2c_sparse_dot_packed,
# 20 instructions per 4 entries against 16, and its one C loop for every output stage some 18 more a channel than the
# byte layout's assembly channel loops) and four rows (nn2c_sparse_row4_packed, 47 per 4 entries for the four rows
# against 40). Fitted by bench/sparse.py --packed (QEMU, relative least squares over the layers --sparse auto may
# pack of pruned ad01_int8, kws_ref_model and vww_96_int8: 40 of one row, max error 0%; 36 of four rows, 5%, the
# rows of one packed for four rows alone rounded up to fours)
_DSP_PACKED_EXTRA = (0.917, 17.7)
_DSP_PACKED_BLOCK_EXTRA = (0.351, 3.3)
# Helium's, as fitted (the four-row dense model refitted on the dense kernels of today: --sparse auto made the
# same choice on every layer of bench/sparse.py's 12 pruned models before and after)
_MVE_SPARSE_ROW = ((0.1907, 14.29, -0.4824, 59.99, 59.99), (1.088, 46.19, 0.3082, 28.89, 28.89))
_MVE_SPARSE_BLOCK = ((0.1373, 3.608, 0.1735, 93.8, 186.7), (0.4133, 47.71, 0.1221, 42.38, 44.47))

TARGETS: dict[str, Target] = {t.name: t for t in (
    # no sparse model: the host target's instructions depend on the machine its C is built for (bench/sparse.py
    # measures its kernels on the M4 only to show them); --sparse always uses the sparse kernels there
    Target("host"),
    Target("cortex-m4", mcpu="cortex-m4", fpu="fpv4-sp-d16", float_abi="hard", qemu_board="mps2-an386",
           simd="dsp", gemm_layout=(2, 4), dw_lanes=4, conv_pair_int16=True, row_sums_int16=True, rounding_tables=True,
           gp_registers=13,
           sparse_row_cost=_DSP_SPARSE_ROW, sparse_block_cost=_DSP_SPARSE_BLOCK,
           sparse_packed_extra=_DSP_PACKED_EXTRA, sparse_packed_block_extra=_DSP_PACKED_BLOCK_EXTRA,
           sparse_pairs_cost=_DSP_SPARSE_PAIRS, sparse_pairs8_cost=_DSP_SPARSE_PAIRS8,
           sparse_table_cost=_DSP_SPARSE_TABLE),
    # the same DSP kernels and instructions as the M4 (the M7 differs in cycles, which no model here counts)
    Target("cortex-m7", mcpu="cortex-m7", fpu="fpv5-d16", float_abi="hard", qemu_board="mps2-an500",
           simd="dsp", gemm_layout=(2, 4), dw_lanes=4, conv_pair_int16=True, row_sums_int16=True, rounding_tables=True,
           gp_registers=13,
           sparse_row_cost=_DSP_SPARSE_ROW, sparse_block_cost=_DSP_SPARSE_BLOCK,
           sparse_packed_extra=_DSP_PACKED_EXTRA, sparse_packed_block_extra=_DSP_PACKED_BLOCK_EXTRA,
           sparse_pairs_cost=_DSP_SPARSE_PAIRS, sparse_pairs8_cost=_DSP_SPARSE_PAIRS8,
           sparse_table_cost=_DSP_SPARSE_TABLE),
    Target("cortex-m55", mcpu="cortex-m55", float_abi="hard", qemu_board="mps3-an547",
           simd="mve", gemm_layout=(4, 16), dw_lanes=16, conv_pair_int16=False, gp_registers=13,
           vector_registers=8, sparse_row_cost=_MVE_SPARSE_ROW, sparse_block_cost=_MVE_SPARSE_BLOCK),
)}


def get_target(name: str | Target) -> Target:
    """The table entry of a --target name (a Target is returned as it is); UsageError naming the choices."""
    if isinstance(name, Target):
        return name
    try:
        return TARGETS[name]
    except (KeyError, TypeError):
        raise UsageError(f"unknown target {name!r}; choose one of {', '.join(TARGETS)}") from None


def bench_targets() -> list[str]:
    """Names of the targets the QEMU bench can run (`nn2c bench --target`)."""
    return [name for name, target in TARGETS.items() if target.qemu_board is not None]
