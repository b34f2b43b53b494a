/* nn2c element-wise math kernels (see nn2c_math.h for the semantics and TFLite's arithmetic). */
#include "nn2c_math.h"

#include <math.h>

/* one forward loop y[i] = EXPR(v) with v = x[i]; p (the constants) is in scope of EXPR */
#define NN2C_MATH_UNARY_F32(name, EXPR)                                                                 \
    void nn2c_math_##name##_f32(const nn2c_math_f32_params_t *p, const float *input, float *output) {   \
        for (int32_t i = 0; i < p->count; ++i) {                                                        \
            const float v = input[i];                                                                   \
            output[i] = (EXPR);                                                                         \
        }                                                                                               \
    }

/* TFLite's RoundToNearest: half to even, whatever the FPU's rounding mode */
static float nn2c_math_round_half_even(float v) {
    const float floor_v = floorf(v);
    const float diff = v - floor_v;
    if (diff < 0.5f || (diff == 0.5f && fmodf(floor_v, 2.0f) == 0.0f)) {
        return floor_v;
    }
    return floor_v + 1.0f;
}

/* ln(1 + e^v) without overflow for large v */
static float nn2c_math_softplus(float v) {
    return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
}

static float nn2c_math_sign(float v) {
    return v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : v); /* 0 and NaN map to themselves */
}

NN2C_MATH_UNARY_F32(exp, expf(v))
NN2C_MATH_UNARY_F32(log, logf(v))
NN2C_MATH_UNARY_F32(sqrt, sqrtf(v))
NN2C_MATH_UNARY_F32(rsqrt, 1.0f / sqrtf(v))
NN2C_MATH_UNARY_F32(neg, -v)
NN2C_MATH_UNARY_F32(abs, fabsf(v))
NN2C_MATH_UNARY_F32(square, v * v)
NN2C_MATH_UNARY_F32(floor, floorf(v))
NN2C_MATH_UNARY_F32(ceil, ceilf(v))
NN2C_MATH_UNARY_F32(round, nn2c_math_round_half_even(v))
NN2C_MATH_UNARY_F32(sign, nn2c_math_sign(v))
NN2C_MATH_UNARY_F32(sin, sinf(v))
NN2C_MATH_UNARY_F32(cos, cosf(v))
NN2C_MATH_UNARY_F32(tan, tanf(v))
NN2C_MATH_UNARY_F32(asin, asinf(v))
NN2C_MATH_UNARY_F32(acos, acosf(v))
NN2C_MATH_UNARY_F32(atan, atanf(v))
NN2C_MATH_UNARY_F32(sinh, sinhf(v))
NN2C_MATH_UNARY_F32(cosh, coshf(v))
NN2C_MATH_UNARY_F32(asinh, asinhf(v))
NN2C_MATH_UNARY_F32(acosh, acoshf(v))
NN2C_MATH_UNARY_F32(atanh, atanhf(v))
NN2C_MATH_UNARY_F32(erf, erff(v))
/* 1 / 0 is inf here: TFLite's float DIV would clamp it to FLT_MAX */
NN2C_MATH_UNARY_F32(reciprocal, 1.0f / v)
/* x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 */
NN2C_MATH_UNARY_F32(gelu, 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)))
/* x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 */
NN2C_MATH_UNARY_F32(gelu_tanh, 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v))))
NN2C_MATH_UNARY_F32(softplus, nn2c_math_softplus(v))
NN2C_MATH_UNARY_F32(softsign, v / (1.0f + fabsf(v)))
/* TFLite's reference Elu: v < 0 ? expm1(v) : v (alpha 1) */
NN2C_MATH_UNARY_F32(elu, v < 0.0f ? p->alpha * expm1f(v) : v)
NN2C_MATH_UNARY_F32(selu, v > 0.0f ? p->gamma * v : p->gamma * (p->alpha * expm1f(v)))
NN2C_MATH_UNARY_F32(celu, v > 0.0f ? v : p->alpha * expm1f(v / p->alpha))
NN2C_MATH_UNARY_F32(mish, v * tanhf(nn2c_math_softplus(v)))
NN2C_MATH_UNARY_F32(swish, v / (1.0f + expf(-p->alpha * v)))
NN2C_MATH_UNARY_F32(thresholded_relu, v > p->alpha ? v : 0.0f)
NN2C_MATH_UNARY_F32(shrink, v < -p->alpha ? v + p->beta : (v > p->alpha ? v - p->beta : 0.0f))

/* AbsEvalQuantized; T is int8_t / int16_t */
#define NN2C_MATH_ABS_Q(NAME, T, LO, HI)                                                                \
    void NAME(const nn2c_math_abs_q_params_t *p, const T *input, T *output) {                           \
        for (int32_t i = 0; i < p->count; ++i) {                                                        \
            int32_t v = (int32_t)input[i] - p->input_offset;                                            \
            v = v < 0 ? -v : v;                                                                         \
            if (p->needs_rescale) {                                                                     \
                v = nn2c_mbqm(v, p->multiplier, p->shift);                                              \
            }                                                                                           \
            output[i] = (T)nn2c_clamp_i32(v + p->output_offset, LO, HI);                                \
        }                                                                                               \
    }
NN2C_MATH_ABS_Q(nn2c_math_abs_s8, int8_t, INT8_MIN, INT8_MAX)
NN2C_MATH_ABS_Q(nn2c_math_abs_s16, int16_t, INT16_MIN, INT16_MAX)

/* integer ABS / NEG / SIGN in unsigned arithmetic: wraps instead of overflowing */
#define NN2C_MATH_INT_UNARY(NAME, T, U, EXPR)                                                           \
    void NAME(int32_t count, const T *input, T *output) {                                               \
        for (int32_t i = 0; i < count; ++i) {                                                           \
            const T v = input[i];                                                                       \
            output[i] = (T)(EXPR);                                                                      \
        }                                                                                               \
    }
#define NN2C_MATH_INT_FAMILY(SUFFIX, T, U)                                                              \
    NN2C_MATH_INT_UNARY(nn2c_math_abs_##SUFFIX, T, U, v < 0 ? (U)(0u - (U)v) : (U)v)                    \
    NN2C_MATH_INT_UNARY(nn2c_math_neg_##SUFFIX, T, U, (U)(0u - (U)v))                                   \
    NN2C_MATH_INT_UNARY(nn2c_math_sign_##SUFFIX, T, U, v > 0 ? 1 : (v < 0 ? -1 : 0))
NN2C_MATH_INT_FAMILY(i8, int8_t, uint8_t)
NN2C_MATH_INT_FAMILY(i16, int16_t, uint16_t)
NN2C_MATH_INT_FAMILY(i32, int32_t, uint32_t)

void nn2c_math_isnan_f32(int32_t count, const float *input, uint8_t *output) {
    for (int32_t i = 0; i < count; ++i) {
        output[i] = (uint8_t)(isnan(input[i]) ? 1 : 0);
    }
}

void nn2c_math_isinf_f32(const nn2c_math_isinf_params_t *p, const float *input, uint8_t *output) {
    for (int32_t i = 0; i < p->count; ++i) {
        const float v = input[i];
        const int hit = isinf(v) && (v > 0.0f ? p->detect_positive : p->detect_negative);
        output[i] = (uint8_t)(hit ? 1 : 0);
    }
}

/* Walk the output in row-major order; o1 / o2 are the inputs' element offsets (see nn2c_math.h). */
#define NN2C_MATH_BROADCAST(bc, BODY)                                                                   \
    do {                                                                                                \
        int32_t idx_[NN2C_MATH_MAX_DIMS] = {0};                                                         \
        const int32_t last_ = (bc)->rank - 1;                                                           \
        const int32_t inner_ = (bc)->dims[last_];                                                       \
        const int32_t s1_ = (bc)->stride1[last_], s2_ = (bc)->stride2[last_];                           \
        int32_t outer_ = 1, base1_ = 0, base2_ = 0, o = 0;                                              \
        for (int32_t d_ = 0; d_ < last_; ++d_) outer_ *= (bc)->dims[d_];                                \
        for (int32_t r_ = 0; r_ < outer_; ++r_) {                                                       \
            for (int32_t i_ = 0; i_ < inner_; ++i_, ++o) {                                              \
                const int32_t o1 = base1_ + i_ * s1_, o2 = base2_ + i_ * s2_;                           \
                BODY                                                                                    \
            }                                                                                           \
            for (int32_t d_ = last_ - 1; d_ >= 0; --d_) {                                               \
                base1_ += (bc)->stride1[d_];                                                            \
                base2_ += (bc)->stride2[d_];                                                            \
                if (++idx_[d_] < (bc)->dims[d_]) break;                                                 \
                base1_ -= (bc)->stride1[d_] * (bc)->dims[d_];                                           \
                base2_ -= (bc)->stride2[d_] * (bc)->dims[d_];                                           \
                idx_[d_] = 0;                                                                           \
            }                                                                                           \
        }                                                                                               \
    } while (0)

/* a double truncated towards zero into int32; NaN and values out of range give INT32_MIN, the
 * "integer indefinite" of x86's conversion, which is what onnxruntime's static_cast yields there */
static int32_t nn2c_math_to_i32(double v) {
    if (v >= -2147483648.0 && v < 2147483648.0) {
        return (int32_t)v;
    }
    return INT32_MIN;
}

void nn2c_math_pow_f32(const nn2c_math_pow_params_t *p, const float *base, const float *exponent, float *output) {
    NN2C_MATH_BROADCAST(&p->bc, { output[o] = powf(base[o1], exponent[o2]); });
}

void nn2c_math_pow_f32_i32(const nn2c_math_pow_params_t *p, const float *base, const int32_t *exponent,
                           float *output) {
    NN2C_MATH_BROADCAST(&p->bc, { output[o] = (float)pow((double)base[o1], (double)exponent[o2]); });
}

void nn2c_math_pow_i32(const nn2c_math_pow_params_t *p, const int32_t *base, const int32_t *exponent,
                       int32_t *output) {
    NN2C_MATH_BROADCAST(&p->bc, { output[o] = nn2c_math_to_i32(pow((double)base[o1], (double)exponent[o2])); });
}

/* a double truncated towards zero into int64; NaN and values out of range give INT64_MIN (x86's
 * cvttsd2si "integer indefinite", as for int32) */
static int64_t nn2c_math_to_i64(double v) {
    if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
        return (int64_t)v;
    }
    return INT64_MIN;
}

void nn2c_math_pow_f32_i64(const nn2c_math_pow_params_t *p, const float *base, const int64_t *exponent,
                           float *output) {
    NN2C_MATH_BROADCAST(&p->bc, { output[o] = (float)pow((double)base[o1], (double)exponent[o2]); });
}

void nn2c_math_pow_i64(const nn2c_math_pow_params_t *p, const int64_t *base, const int64_t *exponent,
                       int64_t *output) {
    NN2C_MATH_BROADCAST(&p->bc, { output[o] = nn2c_math_to_i64(pow((double)base[o1], (double)exponent[o2])); });
}

void nn2c_math_pow_i64_f32(const nn2c_math_pow_params_t *p, const int64_t *base, const float *exponent,
                           int64_t *output) {
    NN2C_MATH_BROADCAST(&p->bc, { output[o] = nn2c_math_to_i64(pow((double)base[o1], (double)exponent[o2])); });
}

void nn2c_math_pow_i32_f32(const nn2c_math_pow_params_t *p, const int32_t *base, const float *exponent,
                           int32_t *output) {
    NN2C_MATH_BROADCAST(&p->bc, { output[o] = nn2c_math_to_i32(pow((double)base[o1], (double)exponent[o2])); });
}
