/* Pooling and reductions, bit-exact with TFLite Micro's reference kernels.
 *
 * Average pooling divides the window sum by the number of window elements inside the input
 * (padding is not counted); integer averages round half away from zero exactly as
 * reference_integer_ops::AveragePool: (sum +- count/2) / count with C's truncating division. */
#include "nn2c_pool.h"

/* int8 average pooling sums a window's channels in int16 lanes (a window of at most 256 pixels
 * cannot overflow them) and divides by a multiply: Helium (MVE) or the Arm DSP extension; other
 * windows, and other cores, take the portable loop. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
#define NN2C_POOL_MVE 1
#elif defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#define NN2C_POOL_DSP 1
#endif

/* the optional path this build keeps (codegen/kernel_config.py: a model whose layers take it reads it) */
#if !defined(NN2C_OMIT_POOL_LANES)
const uint8_t nn2c_kernel_path_pool_lanes = 1;
#endif

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

/* TFLite's integer average of a window: the sum divided by its pixel count (> 0), rounded half away from
 * zero, then clamped to the activation range. */
NN2C_INLINE int32_t nn2c_pool_average(const nn2c_pool_params_t *p, int32_t sum, int32_t count) {
    const int32_t acc = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
    return nn2c_clamp_i32(acc, p->act_min, p->act_max);
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

#if defined(NN2C_POOL_MVE) || defined(NN2C_POOL_DSP)
/* Division of window sums |s| < 2^16 by count in [2, 256] as (|s| * m) >> 32 with m = ceil(2^32 / count):
 * exact for every such sum (32 >= 16 + log2(count)), so equal to C's truncating division. */
NN2C_INLINE uint32_t nn2c_pool_reciprocal(int32_t count) {
    return (uint32_t)(0xFFFFFFFFu / (uint32_t)count) + 1u;
}
#endif

#if defined(NN2C_POOL_MVE)
/* Channels [c, c + n) of one window (n <= 8), the sums in int16 lanes, then (sum +- count/2) / count
 * with the sign of the sum (round half away from zero), clamped, stored. */
NN2C_INLINE void nn2c_avg_pool_s8_lanes(const nn2c_pool_params_t *p, const int8_t *in_b, nn2c_pool_window_t w,
                                        int32_t count, uint32_t m, int32_t c, int32_t n, int8_t *out) {
    const mve_pred16_t pred = vctp16q((uint32_t)n);
    int16x8_t sum = vdupq_n_s16(0);
    for (int32_t fy = w.fy0; fy < w.fy1; ++fy) {
        const int8_t *x = in_b + ((size_t)(w.in_y0 + fy) * p->input_w + (size_t)(w.in_x0 + w.fx0)) * p->depth + c;
        for (int32_t fx = w.fx0; fx < w.fx1; ++fx, x += p->depth) {
            sum = vaddq_s16(sum, vldrbq_z_s16(x, pred));
        }
    }
    int32x4_t half[2] = {vmovlbq_s16(sum), vmovltq_s16(sum)}; /* channels 0 2 4 6, 1 3 5 7 */
    for (int k = 0; k < 2; ++k) {
        const int32x4_t s = half[k], sign = vshrq_n_s32(s, 31);
        int32x4_t q = vaddq_n_s32(vabsq_s32(s), count / 2);
        if (count > 1) {
            q = vreinterpretq_s32_u32(vmulhq_u32(vreinterpretq_u32_s32(q), vdupq_n_u32(m)));
        }
        q = vsubq_s32(veorq_s32(q, sign), sign);
        half[k] = vminq_s32(vmaxq_s32(q, vdupq_n_s32(p->act_min)), vdupq_n_s32(p->act_max));
    }
    vstrbq_p_s16(out + c, vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), half[0]), half[1]), pred);
}
#elif defined(NN2C_POOL_DSP)
/* acc + SXTB16 of the odd bytes of x (GCC 12's arm_acle.h has no __ror to fold into __sxtab16) */
NN2C_INLINE uint32_t nn2c_pool_sxtab16_odd(uint32_t acc, uint32_t x) {
#if defined(__OPTIMIZE__)
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(acc), "r"(x));
    return r;
#else
    return __sxtab16(acc, (x >> 8) | (x << 24));
#endif
}

/* Channels [c, c + n) of one window (n <= 8; the rest of a group of 4 read but not stored), the sums
 * in int16 halves (SXTAB16: channels 0 2 and 1 3 of each word), divided and clamped one by one. */
NN2C_INLINE void nn2c_avg_pool_s8_lanes(const nn2c_pool_params_t *p, const int8_t *in_b, nn2c_pool_window_t w,
                                        int32_t count, uint32_t m, int32_t c, int32_t n, int8_t *out) {
    uint32_t even0 = 0, odd0 = 0, even1 = 0, odd1 = 0;
    for (int32_t fy = w.fy0; fy < w.fy1; ++fy) {
        const int8_t *x = in_b + ((size_t)(w.in_y0 + fy) * p->input_w + (size_t)(w.in_x0 + w.fx0)) * p->depth + c;
        for (int32_t fx = w.fx0; fx < w.fx1; ++fx, x += p->depth) {
            uint32_t v;
            memcpy(&v, x, 4); /* (a whole group of 4 inside the row: nn2c_avg_pool_s8 checks) */
            even0 = __sxtab16(even0, v);
            odd0 = nn2c_pool_sxtab16_odd(odd0, v);
            if (n > 4) {
                memcpy(&v, x + 4, 4);
                even1 = __sxtab16(even1, v);
                odd1 = nn2c_pool_sxtab16_odd(odd1, v);
            }
        }
    }
    const uint32_t halves[4] = {even0, odd0, even1, odd1};
    for (int32_t j = 0; j < n; ++j) {
        const uint32_t pair = halves[(j >> 2) * 2 + (j & 1)];
        const int32_t s = (int32_t)(int16_t)((j & 2) ? pair >> 16 : pair);
        uint32_t q = (uint32_t)(s < 0 ? -s : s) + (uint32_t)(count / 2);
        if (count > 1) {
            q = (uint32_t)(((uint64_t)q * m) >> 32);
        }
        const int32_t avg = s < 0 ? -(int32_t)q : (int32_t)q;
        out[c + j] = (int8_t)nn2c_clamp_i32(avg, p->act_min, p->act_max);
    }
}
#endif

void nn2c_avg_pool_s8(const nn2c_pool_params_t *p, const int8_t *input, int8_t *output) {
#if (defined(NN2C_POOL_MVE) || defined(NN2C_POOL_DSP)) && !defined(NN2C_OMIT_POOL_LANES) /* nn2c_config.h */
#if defined(NN2C_POOL_MVE)
    const int32_t lanes = 8;
#else
    const int32_t lanes = p->depth % 4 == 0 ? 8 : 0; /* word reads of whole groups of 4 channels */
#endif
    if (lanes > 0 && p->filter_h * p->filter_w <= 256) {
        for (int32_t b = 0; b < p->batches; ++b) {
            const int8_t *in_b = input + (size_t)b * p->input_h * p->input_w * p->depth;
            for (int32_t oy = 0; oy < p->output_h; ++oy) {
                for (int32_t ox = 0; ox < p->output_w; ++ox, output += p->depth) {
                    const nn2c_pool_window_t w = nn2c_pool_window(p, oy, ox);
                    const int32_t count = (w.fy1 - w.fy0) * (w.fx1 - w.fx0);
                    const uint32_t m = count > 1 ? nn2c_pool_reciprocal(count) : 0u;
                    for (int32_t c = 0; c < p->depth; c += lanes) {
                        const int32_t n = p->depth - c < lanes ? p->depth - c : lanes;
                        if (count > 0) {
                            nn2c_avg_pool_s8_lanes(p, in_b, w, count, m, c, n, output);
                        } else { /* an empty window (a padding-only window): 0, as TFLite */
                            for (int32_t j = 0; j < n; ++j) {
                                output[c + j] = (int8_t)nn2c_clamp_i32(0, p->act_min, p->act_max);
                            }
                        }
                    }
                }
            }
        }
        return;
    }
#endif
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
        output[c] = (int8_t)nn2c_pool_average(p, sums[c], count);
    }
}

void nn2c_avg_pool_s8_global(const nn2c_pool_params_t *p, const int8_t *input, int8_t *output) {
    const int32_t pixels = p->input_h * p->input_w, depth = p->depth;
    for (int32_t b = 0; b < p->batches; ++b, input += pixels * depth, output += depth) {
        for (int32_t c = 0; c < depth; ++c) {
            int32_t sum = 0;
            for (int32_t k = 0; k < pixels; ++k) {
                sum += input[k * depth + c];
            }
            output[c] = (int8_t)nn2c_pool_average(p, sum, pixels);
        }
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

/* n int8 values added into n sums, four at a time from one word where n allows (the walk took some 25
 * instructions an element on the Cortex-M4; this some 3: an SE block's MEAN in mcunetv2_large) */
static void nn2c_reduce_add_row_s8(int32_t *acc, const int8_t *x, int32_t n) {
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t w;
        memcpy(&w, x + i, 4); /* (one LDR where unaligned loads are allowed) */
        acc[i] += (int8_t)(uint8_t)w;
        acc[i + 1] += (int8_t)(uint8_t)(w >> 8);
        acc[i + 2] += (int8_t)(uint8_t)(w >> 16);
        acc[i + 3] += (int8_t)(uint8_t)(w >> 24);
    }
    for (; i < n; ++i) {
        acc[i] += x[i];
    }
}

static void nn2c_reduce_add_row_s16(int32_t *acc, const int16_t *x, int32_t n) {
    for (int32_t i = 0; i < n; ++i) {
        acc[i] += x[i];
    }
}

/* temp_sum[o] = sum of the raw input values reducing into o (ADD_ROW: the rows' adder where p->inner is set). */
#define NN2C_REDUCE_SUM_INT(ADD_ROW)                                                               \
    for (int32_t o = 0; o < p->num_outputs; ++o) {                                                 \
        temp_sum[o] = 0;                                                                           \
    }                                                                                              \
    if (p->inner > 0) {                                                                            \
        for (int32_t o = 0; o < p->num_outputs; o += p->inner) {                                   \
            for (int32_t r = 0; r < p->num_reduced; ++r, input += p->inner) {                      \
                ADD_ROW(temp_sum + o, input, p->inner);                                            \
            }                                                                                      \
        }                                                                                          \
    } else {                                                                                       \
        nn2c_reduce_walk_t w;                                                                      \
        int32_t total = nn2c_reduce_begin(p, &w);                                                  \
        for (int32_t i = 0; i < total; ++i) {                                                      \
            temp_sum[w.out] += input[i];                                                           \
            nn2c_reduce_next(p, &w);                                                               \
        }                                                                                          \
    }

/* QuantizedMeanOrSum: subtract the input zero point from the sum (in 64 bits, then narrowed as
 * TFLite does), requantize, add the output zero point, saturate. */
#define NN2C_REDUCE_QUANTIZED(TYPE, QMIN, QMAX, ADD_ROW)                                           \
    NN2C_REDUCE_SUM_INT(ADD_ROW)                                                                   \
    for (int32_t o = 0; o < p->num_outputs; ++o) {                                                 \
        int64_t centred = (int64_t)temp_sum[o] - (int64_t)p->input_zp * p->num_reduced;          \
        int32_t acc = nn2c_add_offset(nn2c_mbqm((int32_t)centred, p->multiplier, (int)p->shift), p->output_zp);   \
        output[o] = (TYPE)nn2c_clamp_i32(acc, QMIN, QMAX);                                         \
    }

void nn2c_reduce_quantized_s8(const nn2c_reduce_params_t *p, const int8_t *input, int8_t *output,
                              int32_t *temp_sum) {
    NN2C_REDUCE_QUANTIZED(int8_t, INT8_MIN, INT8_MAX, nn2c_reduce_add_row_s8)
}

void nn2c_reduce_quantized_s16(const nn2c_reduce_params_t *p, const int16_t *input, int16_t *output,
                               int32_t *temp_sum) {
    NN2C_REDUCE_QUANTIZED(int16_t, INT16_MIN, INT16_MAX, nn2c_reduce_add_row_s16)
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
