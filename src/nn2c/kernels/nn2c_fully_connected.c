/* Fully-connected layers. The int8 loop is TFLite's reference_integer_ops::FullyConnected:
 * acc = sum((w + filter_offset) * (x + input_offset)) + bias, requantised with the
 * double-rounding fixed-point multiplier, offset, clamped. */
#include "nn2c_fully_connected.h"

void nn2c_fully_connected_s8(const nn2c_fc_s8_params_t *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output) {
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *x = input + b * p->accum_depth;
        for (int32_t c = 0; c < p->output_depth; ++c) {
            const int8_t *w = filter + c * p->accum_depth;
            int32_t acc = 0;
            for (int32_t d = 0; d < p->accum_depth; ++d) {
                acc += ((int32_t)w[d] + p->filter_offset) * ((int32_t)x[d] + p->input_offset);
            }
            if (bias) {
                acc += bias[c];
            }
            int32_t k = p->per_channel ? c : 0;
            acc = nn2c_add_offset(nn2c_mbqm(acc, p->multipliers[k], (int)p->shifts[k]), p->output_offset);
            output[b * p->output_depth + c] = (int8_t)nn2c_clamp_i32(acc, p->act_min, p->act_max);
        }
    }
}

/* The products of one input slice with one filter row: sum over d of (w[d] + fo) * (x[d] + io). Integer
 * sums in any order are the same int32, so the SIMD versions match the reference loop exactly. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
/* Helium: sum(w x) + io sum(w) + fo sum(x) + n fo io, 16 bytes a step (the last one predicated) */
static int32_t nn2c_fc_slice_dot(const int8_t *w, const int8_t *x, int32_t n, int32_t fo, int32_t io) {
    int32_t wx = 0, sw = 0, sx = 0;
    for (int32_t d = 0; d < n; d += 16) {
        const mve_pred16_t live = vctp8q((uint32_t)(n - d));
        const int8x16_t vw = vldrbq_z_s8(w + d, live), vx = vldrbq_z_s8(x + d, live);
        wx = vmladavaq_s8(wx, vw, vx);
        sw = vaddvaq_s8(sw, vw);
        sx = vaddvaq_s8(sx, vx);
    }
    return wx + io * sw + fo * sx + n * fo * io;
}
#elif defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#include <string.h>
/* Arm DSP: 4 bytes a step, each word split into its even and odd bytes as int16 pairs (SXTB16) with
 * the offsets added (SADD16: |x + io| <= 255 fits), two SMLADs */
static int32_t nn2c_fc_slice_dot(const int8_t *w, const int8_t *x, int32_t n, int32_t fo, int32_t io) {
    const int16x2_t io2 = (int16x2_t)(((uint32_t)io & 0xFFFFu) | ((uint32_t)io << 16));
    const int16x2_t fo2 = (int16x2_t)(((uint32_t)fo & 0xFFFFu) | ((uint32_t)fo << 16));
    int32_t acc = 0, d = 0;
    for (; d + 4 <= n; d += 4) {
        uint32_t xw, ww;
        memcpy(&xw, x + d, 4); /* one LDR: these cores load unaligned words */
        memcpy(&ww, w + d, 4);
        const int16x2_t x02 = __sadd16(__sxtb16((int8x4_t)xw), io2);
        const int16x2_t x13 = __sadd16(__sxtb16((int8x4_t)((xw >> 8) | (xw << 24))), io2);
        const int16x2_t w02 = __sadd16(__sxtb16((int8x4_t)ww), fo2);
        const int16x2_t w13 = __sadd16(__sxtb16((int8x4_t)((ww >> 8) | (ww << 24))), fo2);
        acc = __smlad(x02, w02, acc);
        acc = __smlad(x13, w13, acc);
    }
    for (; d < n; ++d) {
        acc += ((int32_t)w[d] + fo) * ((int32_t)x[d] + io);
    }
    return acc;
}
#else
static int32_t nn2c_fc_slice_dot(const int8_t *w, const int8_t *x, int32_t n, int32_t fo, int32_t io) {
    int32_t sum = 0;
    for (int32_t d = 0; d < n; ++d) {
        sum += ((int32_t)w[d] + fo) * ((int32_t)x[d] + io);
    }
    return sum;
}
#endif

/* Products alone: filter_offset is 0 and the input offset's terms (input_offset * the row's sum)
 * are in the bias nn2c_fc_s8_finish adds (the SIMD targets use nn2c_fc_s8_sums_simd, nn2c_simd.c). */
void nn2c_fc_s8_accumulate_raw(const nn2c_fc_s8_params_t *p, const int8_t *input, const int8_t *filter,
                               int32_t start, int32_t count, int32_t *acc) {
    for (int32_t c = 0; c < p->output_depth; ++c) {
        const int8_t *w = filter + c * p->accum_depth + start;
        int32_t s = 0;
        for (int32_t d = 0; d < count; ++d) {
            s += w[d] * input[d];
        }
        acc[c] += s;
    }
}

void nn2c_fc_s8_accumulate(const nn2c_fc_s8_params_t *p, const int8_t *input, const int8_t *filter,
                           int32_t start, int32_t count, int32_t *acc) {
    for (int32_t c = 0; c < p->output_depth; ++c) {
        acc[c] += nn2c_fc_slice_dot(filter + c * p->accum_depth + start, input, count, p->filter_offset,
                                    p->input_offset);
    }
}

void nn2c_fc_s8_finish(const nn2c_fc_s8_params_t *p, const int32_t *acc, const int32_t *bias, int8_t *output) {
    for (int32_t c = 0; c < p->output_depth; ++c) {
        int32_t total = acc[c];
        if (bias) {
            total += bias[c];
        }
        int32_t k = p->per_channel ? c : 0;
        total = nn2c_add_offset(nn2c_mbqm(total, p->multipliers[k], (int)p->shifts[k]), p->output_offset);
        output[c] = (int8_t)nn2c_clamp_i32(total, p->act_min, p->act_max);
    }
}

void nn2c_fully_connected_f32(const nn2c_fc_f32_params_t *p, const float *input, const float *filter,
                              const float *bias, float *output) {
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *x = input + b * p->accum_depth;
        for (int32_t c = 0; c < p->output_depth; ++c) {
            const float *w = filter + c * p->accum_depth;
            float total = 0.0f;
            for (int32_t d = 0; d < p->accum_depth; ++d) {
                total += x[d] * w[d];
            }
            float bias_value = bias ? bias[c] : 0.0f;
            output[b * p->output_depth + c] = nn2c_clamp_f32(total + bias_value, p->act_min, p->act_max);
        }
    }
}

void nn2c_fully_connected_f32_i8w(const nn2c_fc_f32_params_t *p, const float *input, const int8_t *filter,
                                  const float *bias, float *output) {
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *x = input + b * p->accum_depth;
        for (int32_t c = 0; c < p->output_depth; ++c) {
            const int8_t *w = filter + c * p->accum_depth;
            float total = 0.0f;
            for (int32_t d = 0; d < p->accum_depth; ++d) {
                total += x[d] * (float)w[d];
            }
            total *= p->filter_scales[p->per_channel ? c : 0];
            float bias_value = bias ? bias[c] : 0.0f;
            output[b * p->output_depth + c] = nn2c_clamp_f32(total + bias_value, p->act_min, p->act_max);
        }
    }
}
