/* UNIDIRECTIONAL_SEQUENCE_LSTM kernels, step for step as TFLite Micro's lstm_eval.h LstmStep:
 * forget, input and cell gates from the old hidden state; cell update; output gate (still from the
 * old hidden state); hidden update; the new hidden state is copied to the step's output row.
 * Batch-major inputs run one batch row at a time through all time steps; time-major inputs run
 * all batch rows together at each time step (the same arithmetic either way). */
#include <math.h>

#include "nn2c_lstm.h"
#include "nn2c_simd.h"

const uint16_t nn2c_lstm_sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
};

/* A gate's activation: the cell gate (g = 2) uses tanh on Q3.12 (multiplier 3, no shift), the others
 * sigmoid. The gate input is TFLite's saturating int16 add of the two requantised FC results. */
NN2C_INLINE int16_t nn2c_lstm_activate(int g, int32_t from_x, int32_t from_h) {
    const int16_t sum = (int16_t)nn2c_sat_i16(from_x + from_h);
    return g == 2 ? nn2c_lstm_tanh_s16(sum, 3, 0) : nn2c_lstm_sigmoid_s16(sum);
}

/* Gate rows whose sums are computed at a time (stack arrays: no arena scratch). */
#define NN2C_LSTM_CHUNK 16

/* acc[k] = init[k] + sum_d w[first + k][d] v[d] (+ the weight-offset term), k < count: part of one of a
 * gate's two FULLY_CONNECTEDs without its requantisation (nn2c_lstm_s8_params_t); `sums` the row sums of
 * w's layout (nn2c_rows_sums). */
static void nn2c_lstm_s8_sums(nn2c_sums_fn sums, const int8_t *v, int32_t n, int32_t offset, const void *w,
                              int32_t weight_offset, const int32_t *init, int32_t first, int32_t count,
                              int32_t *acc) {
    sums(v, w, n, first, count, init, acc);
    if (weight_offset != 0) { /* weight zero points: TFLite's int8 weights have none, other producers may */
        uint32_t total = (uint32_t)n * (uint32_t)offset;
        for (int32_t d = 0; d < n; ++d) {
            total += (uint32_t)(int32_t)v[d];
        }
        for (int32_t k = 0; k < count; ++k) {
            acc[k] = (int32_t)((uint32_t)acc[k] + (uint32_t)weight_offset * total);
        }
    }
}

/* int8 gate g for each of `rows` batch rows; zeros: NN2C_LSTM_CHUNK of them (the sums of a NULL folded bias). */
static void nn2c_lstm_s8_gate(const nn2c_lstm_s8_params_t *p, int g, int32_t rows, const int8_t *x, const int8_t *h,
                              int16_t *out, const int32_t *zeros) {
    const int32_t *bias = p->bias[g], *recurrent_bias = p->recurrent_bias[g];
    const int32_t n_in = p->input_size;
    const int32_t n = p->state_size;
    const nn2c_rescale_t qx = nn2c_rescale(p->input_multiplier[g], p->input_shift[g]);
    const nn2c_rescale_t qh = nn2c_rescale(p->recurrent_multiplier[g], p->recurrent_shift[g]);
    const nn2c_sums_fn sums = nn2c_rows_sums(p->weights_layout);
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t j0 = 0; j0 < n; j0 += NN2C_LSTM_CHUNK) {
            int32_t from_x[NN2C_LSTM_CHUNK], from_h[NN2C_LSTM_CHUNK];
            const int32_t count = n - j0 < NN2C_LSTM_CHUNK ? n - j0 : NN2C_LSTM_CHUNK;
            nn2c_lstm_s8_sums(sums, x + r * n_in, n_in, p->input_offset, p->input_weights[g],
                              p->input_weight_offset[g], bias != NULL ? bias + j0 : zeros, j0, count, from_x);
            nn2c_lstm_s8_sums(sums, h + r * n, n, p->hidden_offset, p->recurrent_weights[g],
                              p->recurrent_weight_offset[g], recurrent_bias != NULL ? recurrent_bias + j0 : zeros,
                              j0, count, from_h);
            int16_t *o = out + r * n + j0;
            if (g == 2) { /* the activation chosen once per chunk, not per value */
                for (int32_t k = 0; k < count; ++k) {
                    o[k] = nn2c_lstm_activate(2, nn2c_sat_i16(nn2c_rescale_apply(&qx, from_x[k])),
                                              nn2c_sat_i16(nn2c_rescale_apply(&qh, from_h[k])));
                }
            } else {
                for (int32_t k = 0; k < count; ++k) {
                    o[k] = nn2c_lstm_activate(0, nn2c_sat_i16(nn2c_rescale_apply(&qx, from_x[k])),
                                              nn2c_sat_i16(nn2c_rescale_apply(&qh, from_h[k])));
                }
            }
        }
    }
}

/* int16 gate g: 64-bit sums with the offsets applied per product (TFLite's 16x8 FullyConnected). */
static void nn2c_lstm_s16_gate(const nn2c_lstm_s16_params_t *p, int g, int32_t rows, const int16_t *x,
                               const int16_t *h, int16_t *out) {
    const int32_t n_in = p->input_size;
    const int32_t n = p->state_size;
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t j = 0; j < n; ++j) {
            const int8_t *wx = p->input_weights[g] + j * n_in;
            const int8_t *wh = p->recurrent_weights[g] + j * n;
            int64_t acc = 0;
            for (int32_t d = 0; d < n_in; ++d) {
                acc += ((int32_t)wx[d] + p->input_weight_offset[g]) * ((int32_t)x[r * n_in + d] + p->input_offset);
            }
            if (p->bias[g]) {
                acc += p->bias[g][j];
            }
            const int32_t from_x = nn2c_sat_i16(nn2c_mbqm_i64(acc, p->input_multiplier[g], (int)p->input_shift[g]));
            acc = 0;
            for (int32_t d = 0; d < n; ++d) {
                acc += ((int32_t)wh[d] + p->recurrent_weight_offset[g]) * ((int32_t)h[r * n + d] + p->hidden_offset);
            }
            const int32_t from_h =
                nn2c_sat_i16(nn2c_mbqm_i64(acc, p->recurrent_multiplier[g], (int)p->recurrent_shift[g]));
            out[r * n + j] = nn2c_lstm_activate(g, from_x, from_h);
        }
    }
}

/* The time-step loop of both integer kernels, for activation type TACT and hidden-state range
 * [HMIN, HMAX]; GATE(g, rows, x, h, out) computes gate g. */
#define NN2C_LSTM_INTEGER_BODY(TACT, HMIN, HMAX, GATE)                                                 \
    const int32_t n = p->state_size;                                                                 \
    const int32_t rows = p->time_major ? p->batches : 1;                                             \
    const int32_t outer = p->time_major ? 1 : p->batches;                                            \
    const int32_t count = rows * n;                                                                  \
    int16_t *forget_gate = scratch;                                                                  \
    int16_t *input_gate = scratch + count; /* reused for the output gate */                          \
    int16_t *cell_gate = scratch + 2 * count;                                                        \
    const nn2c_rescale_t forget_cell = nn2c_rescale(p->forget_cell_multiplier, p->forget_cell_shift); \
    const nn2c_rescale_t input_cell = nn2c_rescale(p->input_cell_multiplier, p->input_cell_shift); \
    const nn2c_rescale_t hidden_q = nn2c_rescale(p->hidden_multiplier, p->hidden_shift);   \
    for (int32_t o = 0; o < outer; ++o) {                                                            \
        TACT *h = hidden_state + o * n;                                                              \
        int16_t *c = cell_state + o * n;                                                             \
        for (int32_t t = 0; t < p->time_steps; ++t) {                                                \
            const int32_t step = p->time_major ? t : o * p->time_steps + t;                          \
            const TACT *x = input + step * rows * p->input_size;                                     \
            TACT *y = output + step * count;                                                         \
            GATE(1, rows, x, h, forget_gate);                                                        \
            GATE(0, rows, x, h, input_gate);                                                         \
            GATE(2, rows, x, h, cell_gate);                                                          \
            for (int32_t k = 0; k < count; ++k) {                                                    \
                /* c = sat(f*c requantised + i*g requantised), as two int16 Muls and an add */        \
                int32_t kept = nn2c_sat_i16(nn2c_rescale_apply(&forget_cell, (int32_t)forget_gate[k] * c[k])); \
                int32_t added =                                                                      \
                    nn2c_sat_i16(nn2c_rescale_apply(&input_cell, (int32_t)input_gate[k] * cell_gate[k])); \
                int32_t value = nn2c_sat_i16(kept + added);                                       \
                if (p->use_cell_clip) {                                                              \
                    value = nn2c_clamp_i32(value, -p->cell_clip, p->cell_clip);                      \
                }                                                                                    \
                c[k] = (int16_t)value;                                                               \
            }                                                                                        \
            GATE(3, rows, x, h, input_gate);                                                         \
            for (int32_t k = 0; k < count; ++k) {                                                    \
                const int16_t tanh_c = nn2c_lstm_tanh_s16(c[k], p->tanh_multiplier, (int)p->tanh_shift); \
                int32_t value =                                                                      \
                    nn2c_rescale_apply(&hidden_q, (int32_t)tanh_c * input_gate[k]) + p->hidden_zero_point; \
                h[k] = (TACT)nn2c_clamp_i32(value, (HMIN), (HMAX));                                  \
                y[k] = h[k];                                                                         \
            }                                                                                        \
        }                                                                                            \
    }

void nn2c_lstm_s8(const nn2c_lstm_s8_params_t *p, const int8_t *input, int8_t *hidden_state, int16_t *cell_state,
                  int8_t *output, int16_t *scratch) {
    const int32_t zeros[NN2C_LSTM_CHUNK] = {0};
#define NN2C_LSTM_S8_GATE(g, rows_, x_, h_, out_) nn2c_lstm_s8_gate(p, g, rows_, x_, h_, out_, zeros)
    NN2C_LSTM_INTEGER_BODY(int8_t, -128, 127, NN2C_LSTM_S8_GATE)
#undef NN2C_LSTM_S8_GATE
}

void nn2c_lstm_s16(const nn2c_lstm_s16_params_t *p, const int16_t *input, int16_t *hidden_state,
                   int16_t *cell_state, int16_t *output, int16_t *scratch) {
#define NN2C_LSTM_S16_GATE(g, rows_, x_, h_, out_) nn2c_lstm_s16_gate(p, g, rows_, x_, h_, out_)
    NN2C_LSTM_INTEGER_BODY(int16_t, -32768, 32767, NN2C_LSTM_S16_GATE)
#undef NN2C_LSTM_S16_GATE
}

/* TFLite's reference float Logistic: cut-offs instead of exp overflow. */
static float nn2c_lstm_sigmoid_f32(float x) {
    if (x > 16.619047164916992188f) {
        return 1.0f;
    }
    if (x < -9.0f) {
        return expf(x);
    }
    return 1.0f / (1.0f + expf(-x));
}

/* The float FullyConnected and Mul clamp to the finite float range (activation NONE). */
NN2C_INLINE float nn2c_lstm_finite(float x) {
    return nn2c_clamp_f32(x, -FLT_MAX, FLT_MAX);
}

static void nn2c_lstm_f32_gate(const nn2c_lstm_f32_params_t *p, int g, int32_t rows, const float *x,
                               const float *h, float *out) {
    const int32_t n_in = p->input_size;
    const int32_t n = p->state_size;
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t j = 0; j < n; ++j) {
            const float *wx = p->input_weights[g] + j * n_in;
            const float *wh = p->recurrent_weights[g] + j * n;
            float total = 0.0f;
            for (int32_t d = 0; d < n_in; ++d) {
                total += x[r * n_in + d] * wx[d];
            }
            const float from_x = nn2c_lstm_finite(total + (p->bias[g] ? p->bias[g][j] : 0.0f));
            total = 0.0f;
            for (int32_t d = 0; d < n; ++d) {
                total += h[r * n + d] * wh[d];
            }
            const float from_h = nn2c_lstm_finite(total + 0.0f);
            const float sum = from_x + from_h;
            out[r * n + j] = g == 2 ? tanhf(sum) : nn2c_lstm_sigmoid_f32(sum);
        }
    }
}

void nn2c_lstm_f32(const nn2c_lstm_f32_params_t *p, const float *input, float *hidden_state,
                   float *cell_state, float *output, float *scratch) {
    const int32_t n = p->state_size;
    const int32_t rows = p->time_major ? p->batches : 1;
    const int32_t outer = p->time_major ? 1 : p->batches;
    const int32_t count = rows * n;
    float *forget_gate = scratch;
    float *input_gate = scratch + count; /* reused for the output gate */
    float *cell_gate = scratch + 2 * count;
    for (int32_t o = 0; o < outer; ++o) {
        float *h = hidden_state + o * n;
        float *c = cell_state + o * n;
        for (int32_t t = 0; t < p->time_steps; ++t) {
            const int32_t step = p->time_major ? t : o * p->time_steps + t;
            const float *x = input + step * rows * p->input_size;
            float *y = output + step * count;
            nn2c_lstm_f32_gate(p, 1, rows, x, h, forget_gate);
            nn2c_lstm_f32_gate(p, 0, rows, x, h, input_gate);
            nn2c_lstm_f32_gate(p, 2, rows, x, h, cell_gate);
            for (int32_t k = 0; k < count; ++k) {
                float value = nn2c_lstm_finite(forget_gate[k] * c[k]);
                value = value + nn2c_lstm_finite(input_gate[k] * cell_gate[k]);
                if (p->use_cell_clip) {
                    /* TFLite: max(min(clip, c), -clip) */
                    value = value < p->cell_clip ? value : p->cell_clip;
                    value = value < -p->cell_clip ? -p->cell_clip : value;
                }
                c[k] = value;
            }
            nn2c_lstm_f32_gate(p, 3, rows, x, h, input_gate);
            for (int32_t k = 0; k < count; ++k) {
                h[k] = nn2c_lstm_finite(tanhf(c[k]) * input_gate[k]);
                y[k] = h[k];
            }
        }
    }
}
