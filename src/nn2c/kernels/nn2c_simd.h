/* int8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED for Cortex-M: Arm DSP (SMLAD) and Helium (MVE).
 *
 * The same results as nn2c_conv / nn2c_fully_connected (TFLite Micro's reference arithmetic, bit
 * for bit), computed differently:
 * - the input offset is folded into the bias at compile time: sum w * (x + off) + b =
 *   sum w * x + (b + off * sum w) (exact in int32 arithmetic modulo 2^32, as the reference's);
 *   padding taps read the input zero point (x = -off), so they still contribute nothing;
 * - CONV_2D and FULLY_CONNECTED are one matrix product: rows of the left operand are input pixels
 *   (copied, im2col-style, two at a time into a scratch row pair) or input vectors, rows of the
 *   right operand are the filters, re-laid out at compile time (nn2c_gemm_s8_t.rows_per_group):
 *   groups of G output channels, each group [depth_padded / KB][G][KB] bytes (channel rows
 *   interleaved block by block, zero-padded to whole blocks and groups). DSP: G = 2, KB = 4
 *   (one word per SMLAD pair); MVE: G = 4, KB = 16 (one vector per VMLADAVA); the portable
 *   fallback (hosts) reads any layout.
 * - DEPTHWISE_CONV_2D (depth multiplier 1) runs 4 (DSP) or 16 (MVE) channels at a time over a table
 *   of tap pointers (padding taps point at a row of zero points), the filter re-laid out per group
 *   of channels (nn2c_dw_simd_params_t).
 * The arithmetic path is chosen by the compiler's feature macros (__ARM_FEATURE_MVE, then
 * __ARM_FEATURE_DSP, else portable C99); the layout by `nn2c compile --target`, which must match.
 * Output order: pixels in raster order, so the in-place window rules (memory/inplace.py: output
 * pixel q ends at or below the first input byte pixels q, q + 1, ... read) hold: DSP expands both
 * pixels of a pair into scratch before writing either; MVE copies the first pixel's row of a 1x1
 * convolution pair when output and input overlap (the second's output may cover it); depthwise
 * writes a pixel after reading all its taps.
 * The inner loops are GCC extended assembly when optimising (register allocation GCC 12 does not
 * find: e.g. VMLADAVA sums in even registers), the same loops in C intrinsics at -O0.
 */
#ifndef NN2C_SIMD_H
#define NN2C_SIMD_H
#include "nn2c_common.h"
#include "nn2c_conv.h"

/* The parameter structs' fields are as narrow as their values allow (a layer's struct is flash read once a call):
 * dimensions nn2c_dim_t (nn2c_conv.h), int8 zero points and activation bounds int16_t, flags and block sizes
 * uint8_t. Kernels read them as int. */
typedef struct {
    nn2c_dim_t out_c;        /* right-operand rows = output channels */
    nn2c_dim_t depth;        /* dot-product length */
    nn2c_dim_t depth_padded; /* depth rounded up to k_block */
    uint8_t rows_per_group;  /* G */
    uint8_t k_block;         /* KB */
    const int32_t *bias;     /* bias + input_offset * sum(filter row), per output channel */
    const int32_t *multipliers;
    const int32_t *shifts;
    /* per channel: 2^30 + 2^(30 - shift), that - 2^31 (shifts < 0; nn2c_simd_requant); Arm DSP only (NULL on Helium) */
    const int64_t *rounding;
    int16_t output_offset;
    int16_t act_min, act_max;
    uint8_t right; /* 1: no shift is positive (the Helium kernels skip the left shift); 2: every shift is negative
                    * (and the rounding's sign fix needs no test of the shift) */
    /* Arm DSP, int8's whole activation range: the output stage as records instead of bias / multipliers /
     * shifts / rounding (NULL then), per group of 2 channels 8 words, the last pair padded: the 2 biases, then
     * per channel either (doubled 1, a convolution: every shift in [-24, -1]) its multiplier, 2^(r - 1) + offset
     * 2^r and r (nn2c_record_requant_doubled), or (a FULLY_CONNECTED of batch 1: shifts in [-24, -2]) its
     * multiplier, its rounding's high word with the output offset folded in and r - 1 (nn2c_record_requant);
     * else NULL */
    const int32_t *records;
    /* Arm DSP, with records (a convolution, a FULLY_CONNECTED of batch 1; codegen/ops/conv.py dual_fits): 1 where
     * the filter holds each channel pair (A, B) as int16 halves A + 256 B, in the G = 2, KB = 4 blocks' bytes:
     * per block the halves of inputs 0, 2 then 1, 3 (the halves of SXTB16 of an input word). SMLAD of the input
     * halves with such a word sums A + 256 B, with its SXTB16 (the low bytes: A) A alone: B's sum is their
     * difference / 256, 3 instructions per 4 MACs instead of 4. B's stored bytes are B - [A < 0] (the borrow of
     * A's low byte). The records' second bias word of each pair holds A's bias + 256 B's; depth_padded is a
     * multiple of 8 (the loops take blocks two at a time). A FULLY_CONNECTED's needs a multiple of 4 channels and
     * of 8 inputs. */
    uint8_t dual;
    /* Arm DSP convolutions with records: 1, their records are doubled (as nn2c_dw_simd_params_t.records, in pairs
     * of channels: 2 biases, then per channel m, 2^(r - 1) + offset 2^r and r; nn2c_record_requant_doubled) and
     * the kernels double each sum before its output stage (a dual filter's B sum by shifting one less) */
    uint8_t doubled;
} nn2c_gemm_s8_t;

/* FULLY_CONNECTED: batches rows of depth int8 values. */
typedef struct {
    nn2c_gemm_s8_t m;
    int32_t batches;
} nn2c_fc_simd_params_t;

/* CONV_2D (one group): scratch of 2 * depth bytes (a pixel pair of im2col rows). */
typedef struct {
    nn2c_gemm_s8_t m;
    nn2c_conv_geom_t g;
    int16_t pad_value; /* input zero point: what a padding tap reads */
    uint8_t pointwise; /* 1x1, stride 1, no padding: the pixels are the rows themselves (DSP: walked two at a time;
                        * MVE and portable: read in place when output and input are apart) */
    /* Arm DSP, a pointwise layer whose filter is dual: 1, its pixels three at a time (nn2c_gemm_triple16; scratch
     * of 6 * depth_padded bytes) */
    uint8_t triples;
} nn2c_conv_simd_params_t;

/* DEPTHWISE_CONV_2D, depth multiplier 1; scratch of in_c bytes (the zero-point row). Filter, per
 * group of L channels (zero-padded), tap by tap: L = 4 (DSP): [in_c / 4][taps][4] int16 in the order
 * c0 c2 c1 c3 (the halves of SXTB16 of the input word, no extension at run time); L = 16 (MVE):
 * [in_c / 16][taps][16] int8 in channel order, the channels after the last whole 16 as groups of 8
 * ([taps][8], zero-padded). Per-channel arrays zero-padded to whole groups, for L = 16 stored even
 * channels first per 8 (0 2 4 6 1 3 5 7: the VMULLB / VMULLT lanes). */
typedef struct {
    nn2c_conv_geom_t g;
    int16_t pad_value;
    const int32_t *bias; /* folded as above, over all filter taps */
    const int32_t *multipliers;
    const int32_t *shifts;
    const int64_t *rounding;
    int16_t output_offset;
    int16_t act_min, act_max;
    /* DSP, int8's whole activation range, every shift in [-24, -1]: the output stage as doubled records
     * instead of the four arrays above (NULL then), the filter's weights doubled too, so that each sum is twice
     * TFLite's; per group of 4 channels 16 words: the 4 doubled biases, then per channel its multiplier m,
     * 2^(r - 1) + offset 2^r and r (r = -shift; nn2c_record_requant_doubled); a last, partial group padded.
     * Else NULL. */
    const int32_t *records;
    uint8_t lanes; /* L, channels per filter group: 4 (DSP, int16 filter) or 16 (MVE, int8 filter) */
    uint8_t right; /* as nn2c_gemm_s8_t.right: 2 every shift negative, 1 none positive, 0 some left shift */
    /* DSP with records, --optimize size: 1 where the filter is int8, [in_c / 4][taps][4] in channel order (the
     * halves of its words' SXTB16 are the int16 filter's words: 2 instructions more a tap, half the bytes), its
     * weights not doubled and the records' biases neither (the sums are doubled before the output stage) */
    uint8_t filter8;
    /* DSP (and hosts running its layout), --optimize speed (balanced: out_w of 24 or more where the arena allows
     * the scratch), a 3x3 filter at stride 1 and dilation 1, pad_w and
     * pad_h at most 1, one batch, out_w a multiple of 4, doubled records over the int16 filter: output rows a band
     * of nn2c_dw_planes (each channel's input rows transposed into a plane of scratch: C planes of (band + 2) rows
     * of out_w + 4 bytes, after the zero-point row's C bytes rounded up to a word, then 4 out_w bytes of sums a band
     * row); 0: the taps of a pixel four channels at a time */
    uint8_t band;
} nn2c_dw_simd_params_t;

#define NN2C_DW_SIMD_MAX_TAPS 64

/* CONV_2D on the Arm DSP over narrow filter rows (filter_w * in_c <= 4 * NN2C_CONV_ROWS_MAX_BLOCKS bytes: the
 * first layer over 1-3 input channels), read straight from the image: no im2col row and no int16 pixel pair.
 * A window's filter row is `row_blocks` input words from the row's first byte (the bytes past filter_w * in_c
 * have zero weights); a window over the border, or whose last word would read past the input, is first copied
 * into scratch (filter_h * 4 * row_blocks bytes) with pad_value at the padding. Filter, per group of 4 output
 * channels (out_c a multiple of 4), per filter row, per word, per channel: its int16 weights w0 w2 w1 w3 (the
 * halves of SXTB16 and SXTB16 ROR 8 of the input word, each pair one SMLAD). Dilation 1, one group. */
#define NN2C_CONV_ROWS_MAX_BLOCKS 4
typedef struct {
    nn2c_conv_geom_t g;
    int32_t pad_value;
    int32_t row_blocks;     /* ceil(filter_w * in_c / 4), at most NN2C_CONV_ROWS_MAX_BLOCKS */
    int32_t row_tail;       /* 1 where the row's last word holds one byte of it (filter_w * in_c % 4 == 1): that
                             * byte alone, its 4 channels' weights in order (4 int16) instead of the word's 16 */
    const int32_t *records; /* doubled, as nn2c_dw_simd_params_t.records (the filter's weights doubled too) */
} nn2c_conv_rows_params_t;

/* ADD of two int8 tensors of the same shape (TFLite's AddElementwise, left shift 20): each input
 * (x + offset) << 20 is rescaled by a multiplier < 1, the sum by the output multiplier. */
typedef struct {
    int32_t count;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t multipliers[3]; /* input 1, input 2, output */
    int32_t shifts[3];      /* all <= 0 */
    int64_t rounding[6];    /* as nn2c_gemm_s8_t.rounding, two per multiplier */
    int32_t act_min, act_max;
    /* Arm DSP, a large enough ADD: each input's rescaled value (x + offset) << 20 times its multiplier for
     * x = -128..127, the table's entry for x = 0 (so indexed by x itself; NULL: computed per element) */
    const int32_t *scaled1, *scaled2;
} nn2c_add_simd_params_t;

void nn2c_fc_s8_simd(const nn2c_fc_simd_params_t *p, const int8_t *input, const int8_t *packed_filter,
                     int8_t *output);
void nn2c_conv_s8_simd(const nn2c_conv_simd_params_t *p, const int8_t *input, const int8_t *packed_filter,
                       int8_t *output, void *scratch);
/* A row-streamed FULLY_CONNECTED's slice (filter zero point 0, the input offset's terms folded into its
 * bias): acc[o] += sum over d < count of filter[o * depth + start + d] * x[d], for o < outputs. */
void nn2c_fc_s8_sums_simd(const int8_t *x, const int8_t *filter, int32_t depth, int32_t outputs, int32_t start,
                          int32_t count, int32_t *acc);
/* acc[r] = init[r] + sum over d < depth of w[first + r][d] * x[d], r < rows, first a multiple of 4: a
 * constant int8 matrix times a vector (the gates of LSTM, the features of SVDF), the offsets folded
 * into init by the caller; the sums wrap in int32 as TFLite Micro's. weights in the target's layout
 * (codegen/ops/conv.py pack_rows): Arm DSP: groups of 4 rows (zero rows pad the last), each per 4
 * inputs [4 rows][w0 w2 w1 w3] as int16 (the halves SXTB16 and SXTB16 ROR 8 make of an input word),
 * then the last depth % 4 inputs as [4 rows][depth % 4] int16 (4-byte aligned: LDRD); Helium and the
 * host: [rows][depth] int8. */
void nn2c_sums_s8(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                  const int32_t *init, int32_t *acc);
/* nn2c_sums_s8 over int8 weights as compact as the model's (--optimize size): Arm DSP: each whole group
 * of 4 rows per 4 inputs [4 rows][4 int8], then [4 rows][depth % 4]; the last rows % 4 rows as they are
 * (so a row starts at row * depth whatever the layout); Helium and the host: [rows][depth] int8. */
void nn2c_sums_s8_narrow(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                         const int32_t *init, int32_t *acc);

/* The layouts of a matrix for row sums (codegen/ops/conv.py pack_rows): PLAIN [rows][depth] int8 (Helium,
 * the host), NARROW nn2c_sums_s8_narrow's Arm DSP layout, WIDE nn2c_sums_s8's (int16). */
#define NN2C_ROWS_PLAIN 0
#define NN2C_ROWS_NARROW 1
#define NN2C_ROWS_WIDE 2

/* The host's readers of the Arm DSP layouts (tests of a Cortex-M compile built for the host). */
void nn2c_sums_s8_narrow_any(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                             const int32_t *init, int32_t *acc);
void nn2c_sums_s8_wide_any(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                           const int32_t *init, int32_t *acc);

typedef void (*nn2c_sums_fn)(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                             const int32_t *init, int32_t *acc);

/* The row sums of weights in this layout (chosen once per call of a kernel, not per sum). */
NN2C_INLINE nn2c_sums_fn nn2c_rows_sums(int32_t layout) {
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
    (void)layout;
    return nn2c_sums_s8;
#elif defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
    return layout == NN2C_ROWS_WIDE ? nn2c_sums_s8 : nn2c_sums_s8_narrow;
#else
    return layout == NN2C_ROWS_PLAIN ? nn2c_sums_s8 : layout == NN2C_ROWS_NARROW ? nn2c_sums_s8_narrow_any
                                                                                  : nn2c_sums_s8_wide_any;
#endif
}

/* FULLY_CONNECTED as row sums of its filter (--optimize speed: nn2c_sums_s8's int16 layout on the Arm
 * DSP; --optimize size: nn2c_sums_s8_narrow), the input offset folded into the bias; a multiplier and a
 * shift per output channel, or (multipliers NULL) one for all in the struct; no rounding tables. */
typedef struct {
    int32_t batches, depth, out_c;
    const void *filter;
    /* NN2C_ROWS_PLAIN: [out_c][depth] int8; NN2C_ROWS_NARROW: the Arm DSP's nn2c_sums_s8_narrow layout;
     * NN2C_ROWS_WIDE: its nn2c_sums_s8 layout (int16) */
    int32_t layout;
    const int32_t *bias;
    const int32_t *multipliers, *shifts;
    int32_t multiplier, shift;
    int32_t output_offset, act_min, act_max;
} nn2c_fc_rows_params_t;

void nn2c_fc_s8_rows(const nn2c_fc_rows_params_t *p, const int8_t *input, int8_t *output);

/* acc[k] = sum_d w[first + k][d] (x[d] + offset), k < rows, wrapping in int32, for a matrix in the int8 layout of
 * nn2c_rows_sums (Arm DSP: NN2C_ROWS_NARROW, Helium: NN2C_ROWS_PLAIN; the host reads any): the input offset
 * applied at run time instead of folded into per-row constants (an SVDF's features at --optimize size). */
void nn2c_sums_s8_offset(const int8_t *x, int32_t offset, const void *weights, int32_t layout, int32_t depth,
                         int32_t first, int32_t rows, int32_t *acc);

/* acc[k] = init[k] + a_k . b_k, k < count, for consecutive int8 rows a_k = a + k n, b_k = b + k n (wrapping
 * in int32): an SVDF's time sums. */
void nn2c_dots_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t count, const int32_t *init, int32_t *acc);
/* dst[i] = src[i], i < n, in increasing order (src may overlap dst from above). */
void nn2c_copy_down(int8_t *dst, const int8_t *src, int32_t n);
/* The convolution feeding such a FULLY_CONNECTED (codegen/stream.py): its output is never stored whole.
 * Its pixels go to `pixels` (room for `batch` pixels, an even number), and each full batch (and the
 * last, partial one) is summed into acc with nn2c_fc_s8_sums_simd, from input feature `start` on. */
void nn2c_conv_s8_simd_fc(const nn2c_conv_simd_params_t *p, const int8_t *input, const int8_t *packed_filter,
                          void *scratch, const int8_t *fc_filter, int32_t fc_depth, int32_t fc_outputs,
                          int32_t start, int32_t *acc, int8_t *pixels, int32_t batch);
void nn2c_conv_s8_rows(const nn2c_conv_rows_params_t *p, const int8_t *input, const int16_t *filter,
                       int8_t *output, void *scratch);
void nn2c_dw_s8_simd(const nn2c_dw_simd_params_t *p, const int8_t *input, const int8_t *filter, int8_t *output,
                     void *scratch);
void nn2c_add_s8_simd(const nn2c_add_simd_params_t *p, const int8_t *input1, const int8_t *input2, int8_t *output);
#endif
