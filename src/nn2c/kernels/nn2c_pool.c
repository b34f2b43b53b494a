/* Pooling and reductions, bit-exact with TFLite Micro's reference kernels.
 *
 * Average pooling divides the window sum by the number of window elements inside the input
 * (padding is not counted); integer averages round half away from zero exactly as
 * reference_integer_ops::AveragePool: (sum +- count/2) / count with C's truncating division. */
#include "nn2c_pool.h"

/* The window of output (out_y, out_x) clipped to the input, as TFLite computes it. */
typedef struct {
    int32_t in_y0, in_x0;  /* input coordinates of the window origin (may be negative) */
    int32_t fy0, fy1, fx0, fx1;  /* filter rows / columns that fall inside the input */
} nn2c_pool_window_t;

static nn2c_pool_window_t nn2c_pool_window(const nn2c_pool_params_t *p, int32_t out_y, int32_t out_x) {
    nn2c_pool_window_t w;
    w.in_x0 = out_x * p->stride_w - p->pad_w;
    w.in_y0 = out_y * p->stride_h - p->pad_h;
    w.fx0 = NN2C_MAX(0, -w.in_x0);
    w.fx1 = NN2C_MIN(p->filter_w, p->input_w - w.in_x0);
    w.fy0 = NN2C_MAX(0, -w.in_y0);
    w.fy1 = NN2C_MIN(p->filter_h, p->input_h - w.in_y0);
    return w;
}

/* Integer average pooling for one element type (int8 and int16 share the arithmetic). */
#define NN2C_AVG_POOL_INT(TYPE)                                                                    \
    for (int32_t b = 0; b < p->batches; ++b) {                                                     \
        const TYPE *in_b = input + (size_t)b * p->input_h * p->input_w * p->depth;                 \
        for (int32_t oy = 0; oy < p->output_h; ++oy) {                                             \
            for (int32_t ox = 0; ox < p->output_w; ++ox) {                                         \
                nn2c_pool_window_t w = nn2c_pool_window(p, oy, ox);                                \
                for (int32_t c = 0; c < p->depth; ++c) {                                           \
                    int32_t acc = 0;                                                               \
                    int32_t count = 0;                                                             \
                    for (int32_t fy = w.fy0; fy < w.fy1; ++fy) {                                   \
                        const TYPE *row = in_b + ((size_t)(w.in_y0 + fy) * p->input_w) * p->depth; \
                        for (int32_t fx = w.fx0; fx < w.fx1; ++fx) {                               \
                            acc += row[(size_t)(w.in_x0 + fx) * p->depth + c];                     \
                            ++count;                                                               \
                        }                                                                          \
                    }                                                                              \
                    if (count > 0) {                                                               \
                        acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;     \
                    }                                                                              \
                    *output++ = (TYPE)nn2c_clamp_i32(acc, p->act_min, p->act_max);                 \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* Max pooling for one element type; `LOWEST` starts the running maximum. */
#define NN2C_MAX_POOL(TYPE, LOWEST, CLAMP)                                                         \
    for (int32_t b = 0; b < p->batches; ++b) {                                                     \
        const TYPE *in_b = input + (size_t)b * p->input_h * p->input_w * p->depth;                 \
        for (int32_t oy = 0; oy < p->output_h; ++oy) {                                             \
            for (int32_t ox = 0; ox < p->output_w; ++ox) {                                         \
                nn2c_pool_window_t w = nn2c_pool_window(p, oy, ox);                                \
                for (int32_t c = 0; c < p->depth; ++c) {                                           \
                    TYPE best = LOWEST;                                                            \
                    for (int32_t fy = w.fy0; fy < w.fy1; ++fy) {                                   \
                        const TYPE *row = in_b + ((size_t)(w.in_y0 + fy) * p->input_w) * p->depth; \
                        for (int32_t fx = w.fx0; fx < w.fx1; ++fx) {                               \
                            TYPE v = row[(size_t)(w.in_x0 + fx) * p->depth + c];                   \
                            best = best < v ? v : best; /* std::max(best, v) */                    \
                        }                                                                          \
                    }                                                                              \
                    *output++ = CLAMP;                                                             \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

void nn2c_avg_pool_s8(const nn2c_pool_params_t *p, const int8_t *input, int8_t *output) {
    NN2C_AVG_POOL_INT(int8_t)
}

void nn2c_avg_pool_s8_sums(const int8_t *input, int32_t count, int32_t depth, int32_t *sums) {
    for (int32_t i = 0; i < count; i += depth) {
        for (int32_t c = 0; c < depth; ++c) {
            sums[c] += input[i + c];
        }
    }
}

void nn2c_avg_pool_s8_finish(const nn2c_pool_params_t *p, const int32_t *sums, int8_t *output) {
    const int32_t count = p->filter_h * p->filter_w;
    for (int32_t c = 0; c < p->depth; ++c) {
        const int32_t acc = sums[c] > 0 ? (sums[c] + count / 2) / count : (sums[c] - count / 2) / count;
        output[c] = (int8_t)nn2c_clamp_i32(acc, p->act_min, p->act_max);
    }
}

void nn2c_avg_pool_s16(const nn2c_pool_params_t *p, const int16_t *input, int16_t *output) {
    NN2C_AVG_POOL_INT(int16_t)
}

void nn2c_avg_pool_f32(const nn2c_pool_params_t *p, const float *input, float *output) {
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *in_b = input + (size_t)b * p->input_h * p->input_w * p->depth;
        for (int32_t oy = 0; oy < p->output_h; ++oy) {
            for (int32_t ox = 0; ox < p->output_w; ++ox) {
                nn2c_pool_window_t w = nn2c_pool_window(p, oy, ox);
                for (int32_t c = 0; c < p->depth; ++c) {
                    float total = 0.0f;
                    float count = 0.0f; /* TFLite counts in float */
                    for (int32_t fy = w.fy0; fy < w.fy1; ++fy) {
                        const float *row = in_b + ((size_t)(w.in_y0 + fy) * p->input_w) * p->depth;
                        for (int32_t fx = w.fx0; fx < w.fx1; ++fx) {
                            total += row[(size_t)(w.in_x0 + fx) * p->depth + c];
                            count += 1.0f;
                        }
                    }
                    *output++ = nn2c_clamp_f32(total / count, p->act_min_f, p->act_max_f);
                }
            }
        }
    }
}

void nn2c_max_pool_s8(const nn2c_pool_params_t *p, const int8_t *input, int8_t *output) {
    NN2C_MAX_POOL(int8_t, INT8_MIN, (int8_t)nn2c_clamp_i32(best, p->act_min, p->act_max))
}

void nn2c_max_pool_s16(const nn2c_pool_params_t *p, const int16_t *input, int16_t *output) {
    NN2C_MAX_POOL(int16_t, INT16_MIN, (int16_t)nn2c_clamp_i32(best, p->act_min, p->act_max))
}

void nn2c_max_pool_f32(const nn2c_pool_params_t *p, const float *input, float *output) {
    NN2C_MAX_POOL(float, -FLT_MAX, nn2c_clamp_f32(best, p->act_min_f, p->act_max_f))
}

/* ---- reductions ------------------------------------------------------------------------------ */

/* Row-major walk over the input that tracks the offset of the output element each input element
 * reduces into (TFLite's NextIndex + ReducedOutputOffset, done incrementally). */
typedef struct {
    int32_t index[NN2C_REDUCE_MAX_RANK];
    int32_t out;
} nn2c_reduce_walk_t;

static int32_t nn2c_reduce_begin(const nn2c_reduce_params_t *p, nn2c_reduce_walk_t *w) {
    int32_t total = 1;
    for (int32_t d = 0; d < p->rank; ++d) {
        w->index[d] = 0;
        total *= p->dims[d];
    }
    w->out = 0;
    return total;
}

NN2C_INLINE void nn2c_reduce_next(const nn2c_reduce_params_t *p, nn2c_reduce_walk_t *w) {
    for (int32_t d = p->rank - 1; d >= 0; --d) {
        w->out += p->out_strides[d];
        if (++w->index[d] < p->dims[d]) {
            return;
        }
        w->out -= p->out_strides[d] * p->dims[d];
        w->index[d] = 0;
    }
}

/* temp_sum[o] = sum of the raw input values reducing into o. */
#define NN2C_REDUCE_SUM_INT                                                                        \
    nn2c_reduce_walk_t w;                                                                          \
    int32_t total = nn2c_reduce_begin(p, &w);                                                      \
    for (int32_t o = 0; o < p->num_outputs; ++o) {                                                 \
        temp_sum[o] = 0;                                                                           \
    }                                                                                              \
    for (int32_t i = 0; i < total; ++i) {                                                          \
        temp_sum[w.out] += input[i];                                                               \
        nn2c_reduce_next(p, &w);                                                                   \
    }

/* QuantizedMeanOrSum: subtract the input zero point from the sum (in 64 bits, then narrowed as
 * TFLite does), requantize, add the output zero point, saturate. */
#define NN2C_REDUCE_QUANTIZED(TYPE, QMIN, QMAX)                                                    \
    NN2C_REDUCE_SUM_INT                                                                            \
    for (int32_t o = 0; o < p->num_outputs; ++o) {                                                 \
        int64_t centred = (int64_t)temp_sum[o] - (int64_t)p->input_zp * p->num_reduced;          \
        int32_t acc = nn2c_add_offset(nn2c_mbqm((int32_t)centred, p->multiplier, (int)p->shift), p->output_zp);   \
        output[o] = (TYPE)nn2c_clamp_i32(acc, QMIN, QMAX);                                         \
    }

void nn2c_reduce_quantized_s8(const nn2c_reduce_params_t *p, const int8_t *input, int8_t *output,
                              int32_t *temp_sum) {
    NN2C_REDUCE_QUANTIZED(int8_t, INT8_MIN, INT8_MAX)
}

void nn2c_reduce_quantized_s16(const nn2c_reduce_params_t *p, const int16_t *input, int16_t *output,
                               int32_t *temp_sum) {
    NN2C_REDUCE_QUANTIZED(int16_t, INT16_MIN, INT16_MAX)
}

void nn2c_reduce_sum_f32(const nn2c_reduce_params_t *p, const float *input, float *output) {
    nn2c_reduce_walk_t w;
    int32_t total = nn2c_reduce_begin(p, &w);
    for (int32_t o = 0; o < p->num_outputs; ++o) {
        output[o] = 0.0f;
    }
    for (int32_t i = 0; i < total; ++i) {
        output[w.out] += input[i];
        nn2c_reduce_next(p, &w);
    }
}

void nn2c_reduce_mean_f32(const nn2c_reduce_params_t *p, const float *input, float *output) {
    nn2c_reduce_sum_f32(p, input, output);
    if (p->num_reduced > 0) {
        for (int32_t o = 0; o < p->num_outputs; ++o) {
            output[o] = output[o] / (float)p->num_reduced;
        }
    }
}

/* REDUCE_MAX: a running maximum from the type's lowest value, (in > current) ? in : current. */
#define NN2C_REDUCE_MAX(LOWEST)                                                                    \
    nn2c_reduce_walk_t w;                                                                          \
    int32_t total = nn2c_reduce_begin(p, &w);                                                      \
    for (int32_t o = 0; o < p->num_outputs; ++o) {                                                 \
        output[o] = LOWEST;                                                                        \
    }                                                                                              \
    for (int32_t i = 0; i < total; ++i) {                                                          \
        output[w.out] = input[i] > output[w.out] ? input[i] : output[w.out];                       \
        nn2c_reduce_next(p, &w);                                                                   \
    }

void nn2c_reduce_max_s8(const nn2c_reduce_params_t *p, const int8_t *input, int8_t *output) {
    NN2C_REDUCE_MAX(INT8_MIN)
}

void nn2c_reduce_max_s16(const nn2c_reduce_params_t *p, const int16_t *input, int16_t *output) {
    NN2C_REDUCE_MAX(INT16_MIN)
}

void nn2c_reduce_max_f32(const nn2c_reduce_params_t *p, const float *input, float *output) {
    NN2C_REDUCE_MAX(-FLT_MAX)
}
