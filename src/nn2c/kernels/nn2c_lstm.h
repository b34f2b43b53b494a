/* UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite Micro's lstm_eval (the standard Keras LSTM: no peephole,
 * projection, layer norm or CIFG). Per time step, for gates i, f, g (cell), o:
 *     gate = act(FC(x_t) + FC(h))   act = sigmoid, or tanh for the cell gate
 *     c = f * c + i * g   (clipped to +-cell_clip when cell_clip > 0)
 *     h = o * tanh(c);  output_t = h
 * The hidden state h and cell state c persist across invocations (model state arrays).
 *
 * Quantized variants keep gates in int16: each FC requantises to Q3.12 (scale 2^-12) and the two are
 * added with saturation; sigmoid and tanh map Q3.12 to Q0.15 (scale 2^-15) through TFLite's
 * 256-entry sigmoid table with linear interpolation; products are requantised with fixed-point
 * multipliers. "s8": int8 x/h, int32 bias, int16 c. "s16": int16 x/h, int64 bias, int16 c. */
#ifndef NN2C_LSTM_H
#define NN2C_LSTM_H
#include "nn2c_common.h"

/* sigmoid(i / 24) in unsigned Q0.16, i = 0..255 (TFLite's sigmoid_table_uint16) */
extern const uint16_t nn2c_lstm_sigmoid_table[256];

/* floor(x / 2^n): an arithmetic right shift for either sign, without implementation-defined >> */
NN2C_INLINE int32_t nn2c_lstm_asr(int32_t x, int n) {
    return x >= 0 ? (x >> n) : ~((~x) >> n);
}


/* TFLite reference_integer_ops::Logistic on int16 with input_multiplier 0 and shift 0 (the LSTM's
 * call): input Q3.12 scaled by 3 (range [-8, 8] onto the table's [-10.7, 10.7]), output Q0.15. */
NN2C_INLINE int16_t nn2c_lstm_sigmoid_s16(int16_t x) {
    const int32_t v = (int32_t)x * 3;
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t uh = a >> 9;
    uint32_t r;
    if (uh >= 255u) {
        r = 0x7FFFu << 10;
    } else {
        const uint32_t ua = nn2c_lstm_sigmoid_table[uh];
        const uint32_t ub = nn2c_lstm_sigmoid_table[uh + 1];
        r = (ua << 9) + (a & 0x1FFu) * (ub - ua);
    }
    r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int16_t)(r >> 10);
}

/* TFLite reference_integer_ops::Tanh on int16: tanh(x) = 2 sigmoid(2x) - 1 from the same table.
 * The input is first scaled by (x * multiplier + round) >> shift: multiplier 3, shift 0 for Q3.12
 * gate inputs; for a cell state of scale 2^p, TFLite Micro uses 3 << (12 + p) (or 3 and a right
 * shift of -(12 + p) when that is negative). Output Q0.15. */
NN2C_INLINE int16_t nn2c_lstm_tanh_s16(int16_t x, int32_t multiplier, int shift) {
    const int32_t round = shift > 0 ? (1 << (shift - 1)) : 0;
    const int32_t v = nn2c_lstm_asr((int32_t)x * multiplier + round, shift);
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t uh = a >> 8;
    int32_t r;
    if (uh >= 255u) {
        r = 0xFFFF << 8;
    } else {
        const uint32_t ua = nn2c_lstm_sigmoid_table[uh];
        const uint32_t ub = nn2c_lstm_sigmoid_table[uh + 1];
        r = (int32_t)((ua << 8) + (a & 0xFFu) * (ub - ua));
    }
    r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
    return (int16_t)nn2c_lstm_asr(r, 8);
}

/* Gate order in every array below: input, forget, cell, output (the TFLite tensor order). */
#define NN2C_LSTM_QUANT_FIELDS                                                                      \
    int32_t time_major;       /* input is [time, batch, features] (else [batch, time, features]) */ \
    int32_t batches, time_steps, input_size, state_size;                                            \
    int32_t input_offset, hidden_offset; /* -zero points of x and h */                               \
    int32_t input_weight_offset[4], recurrent_weight_offset[4]; /* -weight zero points */            \
    int32_t input_multiplier[4], input_shift[4];         /* FC(x) -> Q3.12 */                        \
    int32_t recurrent_multiplier[4], recurrent_shift[4]; /* FC(h) -> Q3.12 */                        \
    int32_t forget_cell_multiplier, forget_cell_shift;   /* f (2^-15) * c -> c */                    \
    int32_t input_cell_multiplier, input_cell_shift;     /* i (2^-15) * g (2^-15) -> c */            \
    int32_t hidden_multiplier, hidden_shift, hidden_zero_point; /* tanh(c) * o -> h */               \
    int32_t tanh_multiplier, tanh_shift; /* input scaling of tanh(c) for the cell scale */           \
    int32_t use_cell_clip, cell_clip;    /* clip c to +-cell_clip (quantized) */

/* int8: the activation offsets are folded into per-row constants at compile time, so the gates sum
 * plain int8 products (nn2c_fc_s8_sums_simd: SMLAD on Arm DSP, VMLADAVA on Helium):
 *   sum (w + wo)(x + xo) + b = sum w x + (b + xo sum w) + wo (sum x + n xo)
 * exact in int32 arithmetic modulo 2^32, as TFLite Micro's sums; the last term (non-zero weight
 * zero points only) is summed at run time. */
typedef struct {
    NN2C_LSTM_QUANT_FIELDS
    const void *input_weights[4];     /* [state_size x input_size], in the layout weights_layout */
    const void *recurrent_weights[4]; /* [state_size x state_size], likewise */
    int32_t weights_layout;           /* NN2C_ROWS_* (nn2c_simd.h: nn2c_rows_sums) */
    const int32_t *bias[4];           /* bias + input_offset * sum(input weights row) */
    const int32_t *recurrent_bias[4]; /* hidden_offset * sum(recurrent weights row) */
    /* (either NULL where all its sums are 0: a zero hidden offset, no flash array of zeros) */
} nn2c_lstm_s8_params_t;

typedef struct {
    NN2C_LSTM_QUANT_FIELDS
    const int8_t *input_weights[4];     /* [state_size x input_size] */
    const int8_t *recurrent_weights[4]; /* [state_size x state_size] */
    const int64_t *bias[4];
} nn2c_lstm_s16_params_t;

typedef struct {
    int32_t time_major, batches, time_steps, input_size, state_size;
    const float *input_weights[4];
    const float *recurrent_weights[4];
    const float *bias[4];
    int32_t use_cell_clip;
    float cell_clip;
} nn2c_lstm_f32_params_t;

/* scratch: 3 * rows * state_size elements of the cell type (int16 or float), rows = batches when
 * time_major, else 1. */
void nn2c_lstm_s8(const nn2c_lstm_s8_params_t *p, const int8_t *input, int8_t *hidden_state,
                  int16_t *cell_state, int8_t *output, int16_t *scratch);
void nn2c_lstm_s16(const nn2c_lstm_s16_params_t *p, const int16_t *input, int16_t *hidden_state,
                   int16_t *cell_state, int16_t *output, int16_t *scratch);
void nn2c_lstm_f32(const nn2c_lstm_f32_params_t *p, const float *input, float *hidden_state,
                   float *cell_state, float *output, float *scratch);
#endif
