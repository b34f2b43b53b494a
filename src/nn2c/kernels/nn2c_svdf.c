/* SVDF, following TFLite Micro's EvalIntegerSvdfReference / EvalFloatSvdfReference:
 *   1. shift the whole state buffer one element left (each filter row is `memory` long and its
 *      last element is overwritten next, so this is a per-row shift);
 *   2. feature matmul: state[b][f][memory-1] = requantised(weights_feature[f] . input[b]);
 *   3. time matmul: per filter, weights_time[f] . state[b][f][:];
 *   4. per unit, bias + sum over its `rank` filters, requantised to the output.
 * The integer kernels sum plain products: the input and state zero points are folded into per-filter
 * and per-unit constants at compile time (exact modulo 2^32, as TFLite Micro's wrapping sums), and the
 * feature weights are in the layout p->weights_layout says (nn2c_rows_sums: SMLAD / VMLADAVA on Cortex-M).
 * The integer kernel ignores the fused activation, as TFLite Micro does (it only clamps to int8). */
#include <math.h>
#include <string.h>

#include "nn2c_svdf.h"
#include "nn2c_simd.h"

/* the optional path this build keeps (codegen/kernel_config.py: a model whose layers take it reads it) */
#if !defined(NN2C_OMIT_SVDF_INPUT_OFFSET)
const uint8_t nn2c_kernel_path_svdf_input_offset = 1;
#endif

/* int32 addition that wraps as TFLite Micro's sums do on overflow, without UB: the time sums of
 * keyword_scrambled overflow int32 for full-range random inputs. */
static inline int32_t nn2c_svdf_wrap_add(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* int16 time weights . state, per unit (nn2c_dots_s8's int16 twin) */
static void nn2c_svdf_dots_s16(const int16_t *a, const int16_t *b, int32_t n, int32_t count, const int32_t *init,
                               int32_t *acc) {
    for (int32_t k = 0; k < count; ++k, a += n, b += n) {
        int32_t sum = init[k];
        for (int32_t d = 0; d < n; ++d) {
            sum = nn2c_svdf_wrap_add(sum, (int32_t)a[d] * b[d]);
        }
        acc[k] = sum;
    }
}

/* Filters (or units) whose sums are computed at a time (a stack array: no arena scratch). */
#define NN2C_SVDF_CHUNK 8

/* A chunk's feature sums: from the folded offsets, or (--optimize size) with the input offset at run time. */
#if !defined(NN2C_OMIT_SVDF_INPUT_OFFSET)
#define NN2C_SVDF_FEATURE_SUMS(x, f0, n, dots)                                                            \
    if (p->feature_offsets != NULL) {                                                                     \
        sums(x, weights_feature, p->input_size, f0, n, p->feature_offsets + f0, dots);                    \
    } else {                                                                                              \
        nn2c_sums_s8_offset(x, -p->input_zero_point, weights_feature, p->weights_layout, p->input_size, f0, \
                            n, dots);                                                                     \
    }
#else
#define NN2C_SVDF_FEATURE_SUMS(x, f0, n, dots)                                                            \
    sums(x, weights_feature, p->input_size, f0, n, p->feature_offsets + f0, dots);
#endif

/* One integer SVDF step for state/time-weight element type T with range [TMIN, TMAX]; DOTS(a, b, n,
 * count, init, acc): acc[k] = init[k] + a_k . b_k over consecutive rows of n elements of T. A unit's
 * `rank` filters are consecutive rows of the time weights and of the state, so a unit's time sum is
 * one dot product of rank * memory elements. */
#define NN2C_SVDF_INTEGER_BODY(T, TMIN, TMAX, DOTS)                                                  \
    const int32_t memory = p->memory;                                                                \
    const int32_t filters = p->filters;                                                              \
    const int32_t units = filters / p->rank;                                                         \
    const int32_t total = p->batches * filters * memory;                                             \
    const nn2c_rescale_t to_state = nn2c_rescale(p->multiplier1, p->shift1);                         \
    const nn2c_rescale_t to_output = nn2c_rescale(p->multiplier2, p->shift2);                        \
    const nn2c_sums_fn sums = nn2c_rows_sums(p->weights_layout);                                     \
    if (total > 1) {                                                                                 \
        nn2c_copy_down((int8_t *)state, (const int8_t *)(state + 1), (total - 1) * (int32_t)sizeof(T)); \
    }                                                                                                \
    for (int32_t b = 0; b < p->batches; ++b) {                                                       \
        const int8_t *x = input + b * p->input_size;                                                 \
        T *newest = state + b * filters * memory + (memory - 1);                                     \
        for (int32_t f0 = 0; f0 < filters; f0 += NN2C_SVDF_CHUNK) {                           \
            int32_t dots[NN2C_SVDF_CHUNK];                                                    \
            const int32_t n = filters - f0 < NN2C_SVDF_CHUNK ? filters - f0 : NN2C_SVDF_CHUNK; \
            NN2C_SVDF_FEATURE_SUMS(x, f0, n, dots)                                                   \
            for (int32_t k = 0; k < n; ++k) {                                                        \
                int32_t dot = nn2c_rescale_apply(&to_state, dots[k]);                                \
                /* TFLite Micro clamps, then adds the zero point and narrows with wrap-around */     \
                dot = nn2c_clamp_i32(dot, (TMIN), (TMAX)) + p->state_zero_point;                     \
                dot = (int32_t)(((uint32_t)(dot - (TMIN)) & (uint32_t)((TMAX) - (TMIN)))) + (TMIN);   \
                newest[(f0 + k) * memory] = (T)dot;                                                  \
            }                                                                                        \
        }                                                                                            \
    }                                                                                                \
    const int32_t per_unit = p->rank * memory;                                                       \
    for (int32_t b = 0; b < p->batches; ++b) {                                                       \
        const T *s = state + b * filters * memory;                                                   \
        for (int32_t u0 = 0; u0 < units; u0 += NN2C_SVDF_CHUNK) {                                    \
            int32_t sums[NN2C_SVDF_CHUNK];                                                           \
            const int32_t n = units - u0 < NN2C_SVDF_CHUNK ? units - u0 : NN2C_SVDF_CHUNK;           \
            DOTS(weights_time + u0 * per_unit, s + u0 * per_unit, per_unit, n, bias + u0, sums);     \
            for (int32_t k = 0; k < n; ++k) {                                                        \
                const int32_t y = nn2c_add_offset(nn2c_rescale_apply(&to_output, sums[k]), p->output_zero_point); \
                output[b * units + u0 + k] = (int8_t)nn2c_sat_i8(y);                                 \
            }                                                                                        \
        }                                                                                            \
    }

void nn2c_svdf_s8_s16(const nn2c_svdf_s8_params_t *p, const int8_t *input, const void *weights_feature,
                      const int16_t *weights_time, const int32_t *bias, int16_t *state, int8_t *output) {
    NN2C_SVDF_INTEGER_BODY(int16_t, -32768, 32767, nn2c_svdf_dots_s16)
}

void nn2c_svdf_s8_s8(const nn2c_svdf_s8_params_t *p, const int8_t *input, const void *weights_feature,
                     const int8_t *weights_time, const int32_t *bias, int8_t *state, int8_t *output) {
    NN2C_SVDF_INTEGER_BODY(int8_t, -128, 127, nn2c_dots_s8)
}

static float nn2c_svdf_activation(int32_t activation, float x) {
    switch (activation) {
    case NN2C_SVDF_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case NN2C_SVDF_ACT_RELU_N1_TO_1:
        return nn2c_clamp_f32(x, -1.0f, 1.0f);
    case NN2C_SVDF_ACT_RELU6:
        return nn2c_clamp_f32(x, 0.0f, 6.0f);
    case NN2C_SVDF_ACT_TANH:
        return tanhf(x);
    case NN2C_SVDF_ACT_SIGN_BIT:
        return signbit(x) ? 1.0f : 0.0f;
    default:
        return x;
    }
}

void nn2c_svdf_f32(const nn2c_svdf_f32_params_t *p, const float *input, const float *weights_feature,
                   const float *weights_time, const float *bias, float *state, float *output) {
    const int32_t memory = p->memory;
    const int32_t filters = p->filters;
    const int32_t units = filters / p->rank;
    const int32_t total = p->batches * filters * memory;
    if (total > 1) {
        memmove(state, state + 1, (size_t)(total - 1) * sizeof(float));
    }
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *x = input + b * p->input_size;
        float *newest = state + b * filters * memory + (memory - 1);
        for (int32_t f = 0; f < filters; ++f) {
            const float *w = weights_feature + f * p->input_size;
            float dot = 0.0f;
            for (int32_t i = 0; i < p->input_size; ++i) {
                dot += w[i] * x[i];
            }
            newest[f * memory] = dot;
        }
    }
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *s = state + b * filters * memory;
        for (int32_t u = 0; u < units; ++u) {
            /* bias first, then each rank's dot product in order, as TFLite Micro sums them */
            float acc = bias[u];
            for (int32_t r = 0; r < p->rank; ++r) {
                const int32_t f = u * p->rank + r;
                const float *wt = weights_time + f * memory;
                const float *sf = s + f * memory;
                float dot = 0.0f;
                for (int32_t m = 0; m < memory; ++m) {
                    dot += wt[m] * sf[m];
                }
                acc += dot;
            }
            output[b * units + u] = nn2c_svdf_activation(p->activation, acc);
        }
    }
}
