/* See nn2c_reduce.h. */
#include "nn2c_reduce.h"

#include <math.h>

/* ---- axis reductions ------------------------------------------------------------------------- */

/* The walk of the input in row-major order, with the offset of the output element each element
 * reduces into (TFLite's NextIndex + ReducedOutputOffset, done incrementally). */
typedef struct {
    int32_t index[NN2C_AXES_MAX_RANK];
    int32_t out;
} nn2c_axes_walk_t;

static int32_t nn2c_axes_begin(const nn2c_axes_params_t *p, nn2c_axes_walk_t *w) {
    int32_t total = 1;
    for (int32_t d = 0; d < p->rank; ++d) {
        w->index[d] = 0;
        total *= p->dims[d];
    }
    w->out = 0;
    return total;
}

NN2C_INLINE void nn2c_axes_next(const nn2c_axes_params_t *p, nn2c_axes_walk_t *w) {
    for (int32_t d = p->rank - 1; d >= 0; --d) {
        w->out += p->out_strides[d];
        if (++w->index[d] < p->dims[d]) {
            return;
        }
        w->out -= p->out_strides[d] * p->dims[d];
        w->index[d] = 0;
    }
}

/* output[o] = INIT, then output[o] = COMBINE(output[o], in) over the elements reducing into o. */
#define NN2C_AXES_REDUCE(INIT, COMBINE)                                                            \
    nn2c_axes_walk_t w;                                                                            \
    int32_t total = nn2c_axes_begin(p, &w);                                                        \
    for (int32_t o = 0; o < p->num_outputs; ++o) {                                                 \
        output[o] = INIT;                                                                          \
    }                                                                                              \
    for (int32_t i = 0; i < total; ++i) {                                                          \
        output[w.out] = COMBINE(output[w.out], input[i]);                                          \
        nn2c_axes_next(p, &w);                                                                     \
    }

#define NN2C_MIN_OF(current, in) ((in) < (current) ? (in) : (current))
#define NN2C_MAX_OF(current, in) ((in) > (current) ? (in) : (current))
#define NN2C_PROD_OF(current, in) ((current) * (in))
#define NN2C_WRAP_PROD_OF(current, in) ((int32_t)((uint32_t)(current) * (uint32_t)(in)))
#define NN2C_WRAP_SUM_OF(current, in) ((int32_t)((uint32_t)(current) + (uint32_t)(in)))
#define NN2C_AND_OF(current, in) ((uint8_t)((current) && (in)))
#define NN2C_OR_OF(current, in) ((uint8_t)((current) || (in)))

void nn2c_reduce_min_f32(const nn2c_axes_params_t *p, const float *input, float *output) {
    NN2C_AXES_REDUCE(FLT_MAX, NN2C_MIN_OF)
}

void nn2c_reduce_min_s8(const nn2c_axes_params_t *p, const int8_t *input, int8_t *output) {
    NN2C_AXES_REDUCE(INT8_MAX, NN2C_MIN_OF)
}

void nn2c_reduce_min_s16(const nn2c_axes_params_t *p, const int16_t *input, int16_t *output) {
    NN2C_AXES_REDUCE(INT16_MAX, NN2C_MIN_OF)
}

void nn2c_reduce_min_s32(const nn2c_axes_params_t *p, const int32_t *input, int32_t *output) {
    NN2C_AXES_REDUCE(INT32_MAX, NN2C_MIN_OF)
}

void nn2c_reduce_max_axes_s32(const nn2c_axes_params_t *p, const int32_t *input, int32_t *output) {
    NN2C_AXES_REDUCE(INT32_MIN, NN2C_MAX_OF)
}

void nn2c_reduce_prod_f32(const nn2c_axes_params_t *p, const float *input, float *output) {
    NN2C_AXES_REDUCE(1.0f, NN2C_PROD_OF)
}

void nn2c_reduce_prod_s32(const nn2c_axes_params_t *p, const int32_t *input, int32_t *output) {
    NN2C_AXES_REDUCE(1, NN2C_WRAP_PROD_OF)
}

void nn2c_reduce_sum_s32(const nn2c_axes_params_t *p, const int32_t *input, int32_t *output) {
    NN2C_AXES_REDUCE(0, NN2C_WRAP_SUM_OF)
}

void nn2c_reduce_all_b(const nn2c_axes_params_t *p, const uint8_t *input, uint8_t *output) {
    NN2C_AXES_REDUCE(1u, NN2C_AND_OF)
}

void nn2c_reduce_any_b(const nn2c_axes_params_t *p, const uint8_t *input, uint8_t *output) {
    NN2C_AXES_REDUCE(0u, NN2C_OR_OF)
}

/* ---- arg-max / arg-min, hardmax --------------------------------------------------------------- */

/* reference_ops::ArgMinMax: start from element 0 of the row, take element a when BETTER(a, best)
 * (strict: the first extreme wins); with select_last, ties also move to the later element. */
#define NN2C_ARG_BODY(BETTER)                                                                      \
    for (int32_t o = 0; o < p->outer; ++o) {                                                       \
        for (int32_t i = 0; i < p->inner; ++i) {                                                   \
            const int32_t base = o * p->axis_size * p->inner + i;                                  \
            int32_t best = 0;                                                                      \
            for (int32_t a = 1; a < p->axis_size; ++a) {                                           \
                const int32_t cur = base + a * p->inner;                                           \
                const int32_t top = base + best * p->inner;                                        \
                if (BETTER(input[cur], input[top]) ||                                              \
                    (p->select_last && input[cur] == input[top])) {                                \
                    best = a;                                                                      \
                }                                                                                  \
            }                                                                                      \
            output[o * p->inner + i] = best;                                                       \
        }                                                                                          \
    }

#define NN2C_GREATER(a, b) ((a) > (b))
#define NN2C_LESS(a, b) ((a) < (b))

#define NN2C_ARG_DEFINE(IN_SUFFIX, IN_TYPE)                                                        \
    void nn2c_arg_max_##IN_SUFFIX##_i32(const nn2c_arg_params_t *p, const IN_TYPE *input,          \
                                        int32_t *output) {                                         \
        NN2C_ARG_BODY(NN2C_GREATER)                                                                \
    }                                                                                              \
    void nn2c_arg_min_##IN_SUFFIX##_i32(const nn2c_arg_params_t *p, const IN_TYPE *input,          \
                                        int32_t *output) {                                         \
        NN2C_ARG_BODY(NN2C_LESS)                                                                   \
    }                                                                                              \
    void nn2c_arg_max_##IN_SUFFIX##_i64(const nn2c_arg_params_t *p, const IN_TYPE *input,          \
                                        int64_t *output) {                                         \
        NN2C_ARG_BODY(NN2C_GREATER)                                                                \
    }                                                                                              \
    void nn2c_arg_min_##IN_SUFFIX##_i64(const nn2c_arg_params_t *p, const IN_TYPE *input,          \
                                        int64_t *output) {                                         \
        NN2C_ARG_BODY(NN2C_LESS)                                                                   \
    }

NN2C_ARG_DEFINE(f32, float)
NN2C_ARG_DEFINE(s8, int8_t)
NN2C_ARG_DEFINE(u8, uint8_t)
NN2C_ARG_DEFINE(s16, int16_t)
NN2C_ARG_DEFINE(s32, int32_t)

void nn2c_hardmax_f32(const nn2c_arg_params_t *p, const float *input, float *output) {
    for (int32_t o = 0; o < p->outer; ++o) {
        for (int32_t i = 0; i < p->inner; ++i) {
            const int32_t base = o * p->axis_size * p->inner + i;
            int32_t best = 0;
            for (int32_t a = 1; a < p->axis_size; ++a) {
                if (input[base + a * p->inner] > input[base + best * p->inner]) {
                    best = a;
                }
            }
            for (int32_t a = 0; a < p->axis_size; ++a) {
                output[base + a * p->inner] = a == best ? 1.0f : 0.0f;
            }
        }
    }
}

/* ---- L2_POOL_2D ------------------------------------------------------------------------------- */

void nn2c_l2_pool_f32(const nn2c_l2_pool_params_t *p, const float *input, float *output) {
    for (int32_t b = 0; b < p->batches; ++b) {
        for (int32_t oy = 0; oy < p->output_h; ++oy) {
            for (int32_t ox = 0; ox < p->output_w; ++ox) {
                const int32_t y0 = oy * p->stride_h - p->pad_h;
                const int32_t x0 = ox * p->stride_w - p->pad_w;
                const int32_t fy_start = NN2C_MAX(0, -y0);
                const int32_t fy_end = NN2C_MIN(p->filter_h, p->input_h - y0);
                const int32_t fx_start = NN2C_MAX(0, -x0);
                const int32_t fx_end = NN2C_MIN(p->filter_w, p->input_w - x0);
                for (int32_t c = 0; c < p->depth; ++c) {
                    float sum_squares = 0.0f;
                    int32_t count = 0;
                    for (int32_t fy = fy_start; fy < fy_end; ++fy) {
                        for (int32_t fx = fx_start; fx < fx_end; ++fx) {
                            const float v =
                                input[((b * p->input_h + y0 + fy) * p->input_w + x0 + fx) * p->depth + c];
                            sum_squares += v * v;
                            count++;
                        }
                    }
                    /* TFLite divides by the count even when it is 0 (a window outside the input) */
                    float result = sqrtf(sum_squares / (float)count);
                    result = result < p->act_min ? p->act_min : result;
                    result = result > p->act_max ? p->act_max : result;
                    output[((b * p->output_h + oy) * p->output_w + ox) * p->depth + c] = result;
                }
            }
        }
    }
}

/* ---- channels-first window pooling ------------------------------------------------------------ */

/* The input position of tap t of output o along dim d (may be outside [0, in)). */
NN2C_INLINE int32_t nn2c_window_pos(const nn2c_window_params_t *p, int32_t d, int32_t o, int32_t t) {
    return o * p->stride[d] - p->pad_begin[d] + t * p->dilation[d];
}

NN2C_INLINE int nn2c_window_inside(const nn2c_window_params_t *p, int32_t d, int32_t pos) {
    return pos >= 0 && pos < p->in[d];
}

NN2C_INLINE int nn2c_window_in_padded(const nn2c_window_params_t *p, int32_t d, int32_t pos) {
    return pos >= -p->pad_begin[d] && pos < p->in[d] + p->pad_end[d];
}

/* Visits every inside tap of output (o0, o1, o2) of plane `plane` with the input offset `at`,
 * counting the taps the average divides by in `count`. */
#define NN2C_WINDOW_TAPS(VISIT)                                                                    \
    for (int32_t t0 = 0; t0 < p->kernel[0]; ++t0) {                                                \
        const int32_t i0 = nn2c_window_pos(p, 0, o0, t0);                                          \
        for (int32_t t1 = 0; t1 < p->kernel[1]; ++t1) {                                            \
            const int32_t i1 = nn2c_window_pos(p, 1, o1, t1);                                      \
            for (int32_t t2 = 0; t2 < p->kernel[2]; ++t2) {                                        \
                const int32_t i2 = nn2c_window_pos(p, 2, o2, t2);                                  \
                const int inside = nn2c_window_inside(p, 0, i0) && nn2c_window_inside(p, 1, i1) && \
                                   nn2c_window_inside(p, 2, i2);                                   \
                if (p->count_include_pad ? (nn2c_window_in_padded(p, 0, i0) &&                     \
                                            nn2c_window_in_padded(p, 1, i1) &&                     \
                                            nn2c_window_in_padded(p, 2, i2))                       \
                                         : inside) {                                               \
                    count++;                                                                       \
                }                                                                                  \
                if (inside) {                                                                      \
                    const int32_t at = ((plane * p->in[0] + i0) * p->in[1] + i1) * p->in[2] + i2;  \
                    VISIT;                                                                         \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define NN2C_WINDOW_OUTPUTS(BODY)                                                                  \
    int32_t out_index = 0;                                                                         \
    for (int32_t plane = 0; plane < p->planes; ++plane) {                                          \
        for (int32_t o0 = 0; o0 < p->out[0]; ++o0) {                                               \
            for (int32_t o1 = 0; o1 < p->out[1]; ++o1) {                                           \
                for (int32_t o2 = 0; o2 < p->out[2]; ++o2) {                                       \
                    int32_t count = 0;                                                             \
                    BODY                                                                           \
                    (void)count;                                                                   \
                    out_index++;                                                                   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

static float nn2c_lp_root(float sum, float order) {
    if (order == 2.0f) {
        return sqrtf(sum);
    }
    if (order == 1.0f) {
        return sum;
    }
    return powf(sum, 1.0f / order);
}

NN2C_INLINE float nn2c_lp_term(float v, float order) {
    if (order == 2.0f) {
        return v * v;
    }
    if (order == 1.0f) {
        return fabsf(v);
    }
    return powf(fabsf(v), order);
}

void nn2c_window_pool_f32(const nn2c_window_params_t *p, const float *input, float *output) {
    if (p->mode == NN2C_WINDOW_MAX) {
        NN2C_WINDOW_OUTPUTS(
            float best = -FLT_MAX;
            NN2C_WINDOW_TAPS(best = input[at] > best ? input[at] : best)
            output[out_index] = best;)
    } else if (p->mode == NN2C_WINDOW_AVG) {
        NN2C_WINDOW_OUTPUTS(
            float sum = 0.0f;
            NN2C_WINDOW_TAPS(sum += input[at])
            output[out_index] = count > 0 ? sum / (float)count : 0.0f;)
    } else {
        NN2C_WINDOW_OUTPUTS(
            float sum = 0.0f;
            NN2C_WINDOW_TAPS(sum += nn2c_lp_term(input[at], p->p))
            output[out_index] = nn2c_lp_root(sum, p->p);)
    }
}

void nn2c_window_argmax_f32(const nn2c_window_params_t *p, const float *input, float *output, int64_t *indices,
                            int32_t column_major) {
    const int64_t plane_size = (int64_t)p->in[0] * p->in[1] * p->in[2];
    NN2C_WINDOW_OUTPUTS(
        float best = -FLT_MAX;
        int64_t best_at = -1;
        NN2C_WINDOW_TAPS(
            if (best_at < 0 || input[at] > best) {
                best = input[at];
                best_at = column_major ? plane * plane_size + ((int64_t)i2 * p->in[1] + i1) * p->in[0] + i0
                                       : (int64_t)at;
            })
        output[out_index] = best;
        indices[out_index] = best_at;)
}

#define NN2C_WINDOW_MAX_INT(TYPE, LOWEST)                                                          \
    NN2C_WINDOW_OUTPUTS(                                                                           \
        TYPE best = LOWEST;                                                                        \
        NN2C_WINDOW_TAPS(best = input[at] > best ? input[at] : best)                               \
        output[out_index] = best;)

void nn2c_window_max_s8(const nn2c_window_params_t *p, const int8_t *input, int8_t *output) {
    NN2C_WINDOW_MAX_INT(int8_t, INT8_MIN)
}

void nn2c_window_max_u8(const nn2c_window_params_t *p, const uint8_t *input, uint8_t *output) {
    NN2C_WINDOW_MAX_INT(uint8_t, 0)
}

void nn2c_window_max_s16(const nn2c_window_params_t *p, const int16_t *input, int16_t *output) {
    NN2C_WINDOW_MAX_INT(int16_t, INT16_MIN)
}
