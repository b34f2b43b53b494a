/* Sparse int8 matrix products: FULLY_CONNECTED and 1x1 CONV_2D whose filters are mostly zero.
 *
 * Only the nonzero weights are stored and multiplied. The filter row of each output channel is cut
 * into segments of 256 inputs; per (channel, segment) the count of its nonzeros, and per nonzero its
 * position inside the segment (one byte) and its value, channel after channel. Each segment's list is
 * padded to a multiple of 4 entries with zero weights (position 0), so the loops run whole blocks of
 * four. The input offset is
 * folded into the bias (bias + input_offset * sum(filter row)), as the dense SIMD kernels do, so a
 * sum runs over the nonzeros alone: the same int32 as TFLite's reference loop, requantised the same
 * way (nn2c_mbqm), hence bit-exact with TFLM. */
#ifndef NN2C_SPARSE_H
#define NN2C_SPARSE_H
#include "nn2c_common.h"
#include "nn2c_conv.h"

#define NN2C_SPARSE_SEGMENT 256 /* inputs per segment: a position fits one byte */
#define NN2C_SPARSE_RECORD 3    /* int32 words of a per-channel filter's channel record (records below) */
#define NN2C_SPARSE_TABLE_INPUTS 128 /* inputs per pair table (nn2c_sparse_s8_t.table): 8 blocks of 16 */
#define NN2C_SPARSE_TABLE_WORDS 512  /* int32 words of a pair table: 64 a block of 16 inputs */
#define NN2C_SPARSE_TABLE_RECORD 4   /* int32 words of a doubled record (nn2c_sparse_s8_t.table 2) */

typedef struct {
    int32_t out_c, depth;
    int32_t segments;        /* ceil(depth / NN2C_SPARSE_SEGMENT) */
    const uint16_t *counts;  /* [out_c][segments] entries (nonzeros + padding, a multiple of 4; pairs: see there) */
    /* each entry's input position inside its segment; packed (--optimize size): instead the step from the
     * previous entry's position (the first: from input 0) in 4 bits, two entries a byte, low half first.
     * Packed rows are one segment however deep; a gap over 15 takes extra zero-weight entries of step 15.
     * nn2c_sparse_row1 reads them one input row at a time, nn2c_sparse_row4_packed four. packed 1: each list
     * padded to a multiple of 4 entries (either loop); 2: to a multiple of 2, for the four-row loop alone (a 1x1
     * convolution: nn2c_conv_s8_sparse runs its last 1-3 pixels as four too). */
    const uint8_t *index;
    int32_t packed;
    const int8_t *values;    /* each nonzero's weight, in the same order */
    const int32_t *bias;     /* bias + input_offset * sum(filter row), per output channel */
    /* output multipliers, shifts and nn2c_mbqm_rounded's rounding pairs: per output channel, or one for
     * the whole filter (per_channel 0, a per-tensor quantised filter: 24 bytes a channel less flash) */
    const int32_t *multipliers;
    const int32_t *shifts;
    const int64_t *rounding;
    int32_t per_channel;
    /* Arm DSP targets when every shift is in [-25, -2], else NULL: what a channel's output stage reads
     * in one place. Per channel its bias, then for a per-channel filter its multiplier and its scale
     * word (-shift - 1) | 2^(-shift - 2) << 8 (nn2c_sparse_record_requant). The rounding pair is built
     * from the scale word at run time: 12 bytes a channel instead of 28, for about one instruction more. */
    const int32_t *records;
    /* Arm DSP, a per-channel layer over at most 256 inputs run four rows at a time: 1 where it sums them in row
     * pairs (nn2c_sparse_row4_pairs: two rows in one 64-bit sum, exact as 128 sum|w| < 2^22 for every channel;
     * its scratch 8 * depth bytes, then 4 * out_c), 2 where it has eight rows or more and runs eight at a time
     * (nn2c_sparse_row8_pairs; 16 * depth bytes, then 8 * out_c; a last 4 rows in the four-row loop, a last 5-7
     * as eight). Its lists are then not padded (at least one entry: the loops enter a list at any entry) and its
     * records pair records: per channel 2 bias - 2^23, the multiplier and 2^(r - 1) + output_offset 2^r,
     * r = -shift in [1, 24] (one more than that word's trailing zeros); only the row-pair loops read them there (a
     * last 1-3 rows run as a block of four) */
    int32_t pairs;
    /* Arm DSP, one input row (FULLY_CONNECTED of batch < 4; --optimize speed, or balanced where the arena allows):
     * 1 or 2 where the filter is in the pair table layout (nn2c_sparse_row1_table). The row's inputs are cut into
     * tables of up to 128 (segments: how many), each into blocks of 16, halves A (inputs 0-7) and B (8-15); the
     * kernel writes into scratch, per block, the 64 words x[A p] + 2^16 x[B q] (int16 halves) at word 64 block +
     * 32 (q / 4) + 4 p + q % 4. A channel's
     * nonzeros of a block are paired A with B (the shorter half padded with zero weights), one word each: in
     * table_words, its word index in the table, then its two weights as int16 halves, so one LDM reads two words
     * and one SMLAD adds two products. counts: words per (table, channel), table after table, each a multiple of 4 and at
     * least 4. table 1: the output stage is records' or the arrays' as above (a per-channel filter's three-word
     * records); table 2: the weights are doubled, so the sums are, and each channel's record is
     * NN2C_SPARSE_TABLE_RECORD words: 2 bias, multiplier, 2^(r - 1) + output_offset 2^r, r (nn2c_requant_doubled;
     * int8's whole output range). */
    int32_t table;
    const int32_t *table_words;
    int32_t output_offset;
    int32_t act_min, act_max;
} nn2c_sparse_s8_t;

/* FULLY_CONNECTED: batches rows of depth int8 values. */
typedef struct {
    nn2c_sparse_s8_t m;
    int32_t batches;
} nn2c_fc_sparse_params_t;

/* CONV_2D with a 1x1 filter and no padding (any stride), one group; g is the layer's geometry. */
typedef struct {
    nn2c_sparse_s8_t m;
    nn2c_conv_geom_t g;
} nn2c_conv_sparse_params_t;

/* scratch: where m.pairs 8 * m.pairs * depth bytes (the rows' inputs as row pairs), then 4 * m.pairs * out_c (a
 * last rows' outputs); where m.table 256 * ceil(min(depth, 128) / 16) bytes (the pair table), then 4 * out_c where depth > 128
 * (the sums between tables); else none (NULL) */
void nn2c_fc_s8_sparse(const nn2c_fc_sparse_params_t *p, const int8_t *input, int8_t *output, void *scratch);
/* scratch: 8 * m.pairs * depth bytes where m.pairs, then 4 * out_c bytes, 8 * out_c where m.pairs 2 (a block's
 * outputs where they overlap their inputs: an in-place plan) */
void nn2c_conv_s8_sparse(const nn2c_conv_sparse_params_t *p, const int8_t *input, int8_t *output, void *scratch);
#endif
