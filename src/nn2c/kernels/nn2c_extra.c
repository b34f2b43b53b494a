/* nn2c extra kernels (see nn2c_extra.h for the arithmetic). */
#include "nn2c_extra.h"

void nn2c_extra_clamp_f32(const nn2c_extra_clamp_f32_params_t *p, const float *input, float *output) {
    for (int32_t i = 0; i < p->count; ++i) {
        const float v = input[i];
        /* the comparisons TFLite uses: a NaN input stays NaN */
        output[i] = v > p->act_max ? p->act_max : (v < p->act_min ? p->act_min : v);
    }
}

/* ReluQuantized: requantize (input scale / output scale), then clamp to [zp_out, max]. */
#define NN2C_EXTRA_RELU_Q(NAME, T)                                                                    \
    void NAME(const nn2c_extra_relu_q_params_t *p, const T *input, T *output) {                       \
        for (int32_t i = 0; i < p->count; ++i) {                                                      \
            int32_t v = p->output_zero_point +                                                        \
                        nn2c_mbqm((int32_t)input[i] - p->input_zero_point, p->multiplier, p->shift);  \
            output[i] = (T)nn2c_clamp_i32(v, p->act_min, p->act_max);                                 \
        }                                                                                             \
    }
NN2C_EXTRA_RELU_Q(nn2c_extra_relu_s8, int8_t)
NN2C_EXTRA_RELU_Q(nn2c_extra_relu_s16, int16_t)

/* Relu6Quantized: no requantization, the clamp bounds are in the input's domain. */
#define NN2C_EXTRA_RELU6_Q(NAME, T)                                                                   \
    void NAME(const nn2c_extra_relu_q_params_t *p, const T *input, T *output) {                       \
        for (int32_t i = 0; i < p->count; ++i) {                                                      \
            output[i] = (T)nn2c_clamp_i32((int32_t)input[i], p->act_min, p->act_max);                 \
        }                                                                                             \
    }
NN2C_EXTRA_RELU6_Q(nn2c_extra_relu6_s8, int8_t)
NN2C_EXTRA_RELU6_Q(nn2c_extra_relu6_s16, int16_t)

void nn2c_extra_leaky_relu_f32(const nn2c_extra_leaky_f32_params_t *p, const float *input, float *output) {
    for (int32_t i = 0; i < p->count; ++i) {
        const float v = input[i];
        output[i] = v > 0.0f ? v : v * p->alpha;
    }
}

/* QuantizeLeakyRelu: x - zp_in >= 0 uses the identity multiplier, else the alpha one. */
#define NN2C_EXTRA_LEAKY_Q(NAME, T, LO, HI)                                                           \
    void NAME(const nn2c_extra_leaky_q_params_t *p, const T *input, T *output) {                      \
        for (int32_t i = 0; i < p->count; ++i) {                                                      \
            const int32_t v = (int32_t)input[i] - p->input_zero_point;                                \
            const int32_t scaled = v >= 0 ? nn2c_mbqm(v, p->identity_multiplier, p->identity_shift)   \
                                          : nn2c_mbqm(v, p->alpha_multiplier, p->alpha_shift);        \
            output[i] = (T)nn2c_clamp_i32(p->output_zero_point + scaled, LO, HI);                     \
        }                                                                                             \
    }
NN2C_EXTRA_LEAKY_Q(nn2c_extra_leaky_relu_s8, int8_t, INT8_MIN, INT8_MAX)
NN2C_EXTRA_LEAKY_Q(nn2c_extra_leaky_relu_s16, int16_t, INT16_MIN, INT16_MAX)

void nn2c_extra_lut_s8(int32_t count, const int8_t *table, const int8_t *input, int8_t *output) {
    int32_t i;
    for (i = 0; i < count; ++i) {
        output[i] = table[(int32_t)input[i] + 128];
    }
}

void nn2c_extra_hard_swish_f32(int32_t count, const float *input, float *output) {
    for (int32_t i = 0; i < count; ++i) {
        const float v = input[i];
        const float r = NN2C_MIN(6.0f, NN2C_MAX(0.0f, v + 3.0f));
        output[i] = v * r / 6.0f;
    }
}

/* gemmlowp's int16 SaturatingRoundingDoublingHighMul: (a * b * 2 + 2^15) >> 16, saturating. */
static int16_t nn2c_extra_srdhm16(int16_t a, int16_t b) {
    if (a == b && a == INT16_MIN) {
        return INT16_MAX;
    }
    const int32_t ab = (int32_t)a * (int32_t)b;
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return (int16_t)((ab + nudge) / (1 << 15));
}

/* TFLite's SaturatingDoublingHighMul: as above but rounding toward zero (ARM SQDMULH). */
static int16_t nn2c_extra_sdhm16(int16_t a, int16_t b) {
    if (a == b && a == INT16_MIN) {
        return INT16_MAX;
    }
    return (int16_t)(((int32_t)a * (int32_t)b) / (1 << 15));
}

/* gemmlowp RoundingDivideByPOT on int16: halves away from zero. */
static int16_t nn2c_extra_rdbpot16(int16_t x, int exponent) {
    const int32_t mask = (1 << exponent) - 1;
    const int32_t remainder = (int32_t)x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (int16_t)(((int32_t)x >> exponent) + (remainder > threshold ? 1 : 0));
}

static int16_t nn2c_extra_saturating_shl16(int16_t value, int amount) {
    const int32_t result = (int32_t)value * (1 << amount);
    return (int16_t)(result > INT16_MAX ? INT16_MAX : (result < INT16_MIN ? INT16_MIN : result));
}

void nn2c_extra_hard_swish_s8(const nn2c_extra_hard_swish_q_params_t *p, const int8_t *input, int8_t *output) {
    const int16_t out_m = (int16_t)p->output_multiplier, relu_m = (int16_t)p->reluish_multiplier;
    for (int32_t i = 0; i < p->count; ++i) {
        const int16_t value = (int16_t)((int32_t)input[i] - p->input_zero_point);
        const int16_t hires = (int16_t)(value * (1 << 7));
        const int16_t preshift_out = nn2c_extra_srdhm16(hires, out_m);
        int16_t reluish = hires;
        if (p->reluish_exponent > 0) {
            reluish = nn2c_extra_saturating_shl16(reluish, p->reluish_exponent - 1);
        }
        reluish = nn2c_extra_srdhm16(reluish, relu_m);
        if (p->reluish_exponent > 0) {
            reluish = nn2c_extra_saturating_shl16(reluish, 1);
        }
        if (p->reluish_exponent < 0) {
            reluish = nn2c_extra_rdbpot16(reluish, -p->reluish_exponent);
        }
        /* [-1, 1] -> [0, 1] in Q0.15 */
        reluish = (int16_t)(((int32_t)reluish + (1 << 15)) >> 1);
        const int16_t preshift = nn2c_extra_sdhm16(reluish, preshift_out);
        int32_t out = (int32_t)nn2c_extra_rdbpot16(preshift, -p->output_exponent) + p->output_zero_point;
        output[i] = (int8_t)nn2c_clamp_i32(out, INT8_MIN, INT8_MAX);
    }
}

/* Walk the broadcast loop nest: BODY sees the element offsets o1, o2 of the inputs and o of the
 * output. The innermost loop is dims[rank - 1]; the outer ones advance like an odometer. */
#define NN2C_EXTRA_BROADCAST(bc, BODY)                                                                \
    do {                                                                                              \
        int32_t idx_[NN2C_EXTRA_MAX_DIMS] = {0};                                                      \
        const int32_t last_ = (bc)->rank - 1;                                                         \
        const int32_t inner_ = (bc)->dims[last_];                                                     \
        const int32_t s1_ = (bc)->stride1[last_], s2_ = (bc)->stride2[last_];                         \
        int32_t outer_ = 1, base1_ = 0, base2_ = 0, o = 0;                                            \
        for (int32_t d_ = 0; d_ < last_; ++d_) outer_ *= (bc)->dims[d_];                              \
        for (int32_t r_ = 0; r_ < outer_; ++r_) {                                                     \
            for (int32_t i_ = 0; i_ < inner_; ++i_, ++o) {                                            \
                const int32_t o1 = base1_ + i_ * s1_, o2 = base2_ + i_ * s2_;                         \
                BODY                                                                                  \
            }                                                                                         \
            for (int32_t d_ = last_ - 1; d_ >= 0; --d_) {                                             \
                base1_ += (bc)->stride1[d_];                                                          \
                base2_ += (bc)->stride2[d_];                                                          \
                if (++idx_[d_] < (bc)->dims[d_]) break;                                               \
                base1_ -= (bc)->stride1[d_] * (bc)->dims[d_];                                         \
                base2_ -= (bc)->stride2[d_] * (bc)->dims[d_];                                         \
                idx_[d_] = 0;                                                                         \
            }                                                                                         \
        }                                                                                             \
    } while (0)

void nn2c_extra_sub_f32(const nn2c_extra_sub_f32_params_t *p, const float *a, const float *b, float *out) {
    NN2C_EXTRA_BROADCAST(&p->bc, { out[o] = nn2c_clamp_f32(a[o1] - b[o2], p->act_min, p->act_max); });
}

void nn2c_extra_sub_i32(const nn2c_extra_sub_i32_params_t *p, const int32_t *a, const int32_t *b, int32_t *out) {
    /* two's-complement wrap instead of signed overflow */
    NN2C_EXTRA_BROADCAST(&p->bc, { out[o] = (int32_t)((uint32_t)a[o1] - (uint32_t)b[o2]); });
}

/* SubElementwise: both inputs shifted left, scaled to a common scale, subtracted, rescaled. */
#define NN2C_EXTRA_SUB_Q(NAME, T)                                                                     \
    void NAME(const nn2c_extra_sub_q_params_t *p, const T *a, const T *b, T *out) {                   \
        NN2C_EXTRA_BROADCAST(&p->bc, {                                                                \
            const int32_t x1 = (p->input1_offset + (int32_t)a[o1]) * (1 << p->left_shift);            \
            const int32_t x2 = (p->input2_offset + (int32_t)b[o2]) * (1 << p->left_shift);            \
            const int32_t s1 = nn2c_mbqm_smaller_than_one(x1, p->input1_multiplier, p->input1_shift); \
            const int32_t s2 = nn2c_mbqm_smaller_than_one(x2, p->input2_multiplier, p->input2_shift); \
            const int32_t raw = nn2c_mbqm_smaller_than_one(s1 - s2, p->output_multiplier,             \
                                                           p->output_shift) + p->output_offset;       \
            out[o] = (T)nn2c_clamp_i32(raw, p->act_min, p->act_max);                                  \
        });                                                                                           \
    }
NN2C_EXTRA_SUB_Q(nn2c_extra_sub_s8, int8_t)
NN2C_EXTRA_SUB_Q(nn2c_extra_sub_s16, int16_t)
