/* Normalisations; see nn2c_norm.h. */
#include <math.h>

#include "nn2c_norm.h"

void nn2c_norm_f32(const nn2c_norm_params_t *p, const float *input, const float *scale, const float *bias,
                   float *output, float *mean_out, float *inv_std_out) {
    const float n = (float)p->count;
    const int per_element = p->scale_div == 1 && p->scale_size == p->count;
    for (int32_t o = 0; o < p->outer; ++o) {
        const float *x = input + o * p->count;
        float *y = output + o * p->count;
        float mean = 0.0f;
        if (p->mode != 1) {
            float sum = 0.0f;
            for (int32_t j = 0; j < p->count; ++j) sum += x[j];
            mean = sum / n;
        }
        float squares = 0.0f;
        for (int32_t j = 0; j < p->count; ++j) {
            const float d = x[j] - mean;
            squares += d * d;
        }
        const float var = squares / n;
        const float inv = p->mode == 2 ? 1.0f / (sqrtf(var) + p->epsilon) : 1.0f / sqrtf(var + p->epsilon);
        if (mean_out) mean_out[o] = mean;
        if (inv_std_out) inv_std_out[o] = inv;
        for (int32_t j = 0; j < p->count; ++j) {
            int32_t k = j;
            if (!per_element) {
                k = ((o * p->count + j) / p->scale_div) % p->scale_size;
            }
            float v = (x[j] - mean) * inv;
            if (scale) v *= scale[k];
            if (bias) v += bias[k];
            y[j] = v;
        }
    }
}

void nn2c_lp_norm_f32(const nn2c_lp_norm_params_t *p, const float *input, float *output) {
    for (int32_t o = 0; o < p->outer; ++o) {
        for (int32_t i = 0; i < p->inner; ++i) {
            const float *x = input + o * p->count * p->inner + i;
            float *y = output + o * p->count * p->inner + i;
            float total = 0.0f;
            for (int32_t j = 0; j < p->count; ++j) {
                const float v = x[j * p->inner];
                total += p->p == 1 ? fabsf(v) : v * v;
            }
            float norm = p->p == 1 ? total : sqrtf(total);
            norm = norm < p->epsilon ? p->epsilon : norm;
            for (int32_t j = 0; j < p->count; ++j) {
                /* an all-zero vector stays zero (ONNX's reference), not 0 / 0 */
                y[j * p->inner] = norm == 0.0f ? 0.0f : x[j * p->inner] / norm;
            }
        }
    }
}

/* --- gemmlowp fixed point, as TFLite's GetInvSqrtQuantizedMultiplierExp uses it -------------- */
static int32_t nn2c_norm_sat_shl(int32_t x, int exponent) {
    const int32_t threshold = (int32_t)(((int64_t)1 << (31 - exponent)) - 1);
    if (x > threshold) return INT32_MAX;
    if (x < -threshold) return INT32_MIN;
    return (int32_t)((uint32_t)x << exponent);
}

static int nn2c_norm_clz(uint32_t x) {
    int n = 0;
    if (x == 0) return 32;
    while (!(x & 0x80000000u)) {
        x <<= 1;
        ++n;
    }
    return n;
}

/* 1 / sqrt(input) as a Q31 multiplier and a left shift (reverse_shift = -1). */
static void nn2c_inv_sqrt_multiplier(int32_t input, int32_t *multiplier, int *shift) {
    if (input <= 1) {
        *multiplier = INT32_MAX;
        *shift = 0;
        return;
    }
    int s = 11;
    while (input >= (1 << 29)) {
        input /= 4;
        ++s;
    }
    const int left_pairs = (nn2c_norm_clz((uint32_t)input) - 1) / 2 - 1;
    s -= left_pairs;
    input <<= 2 * left_pairs;
    const int32_t fp_input = input >> 1;                  /* F3 */
    const int32_t half_input = nn2c_rdbpot(fp_input, 1);  /* F3 */
    const int32_t half_three = (1 << 28) + (1 << 27);     /* 1.5 in F3 */
    int32_t x = 1 << 28;                                  /* 1.0 in F3 */
    for (int i = 0; i < 5; ++i) {
        const int32_t x3 = nn2c_norm_sat_shl(nn2c_srdhm(nn2c_srdhm(x, x), x), 6);
        const int32_t a = nn2c_srdhm(half_three, x);
        const int32_t b = nn2c_srdhm(half_input, x3);
        x = nn2c_norm_sat_shl((int32_t)((uint32_t)a - (uint32_t)b), 3);
    }
    x = nn2c_srdhm(x, 1518500250); /* * sqrt(2) / 2 */
    if (s < 0) {
        x = (int32_t)((uint32_t)x << -s);
        s = 0;
    }
    *multiplier = x;
    *shift = -s;
}

void nn2c_l2_norm_s8(int32_t outer, int32_t depth, int32_t input_zero_point, const int8_t *input,
                     int8_t *output) {
    for (int32_t o = 0; o < outer; ++o) {
        const int8_t *x = input + o * depth;
        int8_t *y = output + o * depth;
        int32_t acc = 0;
        for (int32_t j = 0; j < depth; ++j) {
            const int32_t v = (int32_t)x[j] - input_zero_point;
            acc += v * v;
        }
        int32_t multiplier;
        int shift;
        nn2c_inv_sqrt_multiplier(acc, &multiplier, &shift);
        for (int32_t j = 0; j < depth; ++j) {
            const int32_t v = (int32_t)x[j] - input_zero_point;
            y[j] = (int8_t)nn2c_clamp_i32(nn2c_mbqm(v, multiplier, shift + 7), -128, 127);
        }
    }
}

/* ---- LRN --------------------------------------------------------------------------------------- */

void nn2c_lrn_f32(const nn2c_lrn_params_t *p, const float *input, float *output) {
    const float factor = p->alpha / (float)p->size;
    for (int32_t o = 0; o < p->outer; ++o) {
        const size_t base = (size_t)o * (size_t)p->channels * (size_t)p->inner;
        for (int32_t c = 0; c < p->channels; ++c) {
            const int32_t first = c - p->below > 0 ? c - p->below : 0;
            const int32_t last = c + p->above < p->channels - 1 ? c + p->above : p->channels - 1;
            for (int32_t i = 0; i < p->inner; ++i) {
                float sum = 0.0f;
                for (int32_t k = first; k <= last; ++k) {
                    const float v = input[base + (size_t)k * (size_t)p->inner + (size_t)i];
                    sum += v * v;
                }
                const size_t at = base + (size_t)c * (size_t)p->inner + (size_t)i;
                output[at] = input[at] / powf(p->bias + factor * sum, p->beta);
            }
        }
    }
}
