/* nn2c element-wise math kernels: exponentials, roots, rounding, trigonometry, the smooth
 * activations of ONNX models (ERF, GELU, SOFTPLUS, SELU, CELU, MISH, ...), POW, IS_NAN / IS_INF,
 * and TFLite Micro's int8 / int16 ABS.
 *
 * Float kernels apply the C99 single-precision <math.h> function of each operator, element by
 * element (y[i] = f(x[i]), so they may run in place), as TFLite Micro's float kernels do with
 * std::exp, std::sin, ... on float. Each takes nn2c_math_f32_params_t: the element count and
 * the operator's constants (unused ones are 0):
 *   ELU, CELU (alpha), SELU (alpha, gamma), SWISH (alpha), THRESHOLDED_RELU (alpha: the
 *   threshold), SHRINK (alpha: lambd, beta: bias).
 * ROUND is TFLite's RoundToNearest (half to even, by comparing with the floor, independent of the
 * FPU's rounding mode).
 *
 * Quantized ABS (TFLite Micro's AbsEvalQuantized): v = |x - zp_in|; y = clamp(v + zp_out) when
 * the scales are equal, else clamp(MultiplyByQuantizedMultiplier(v, M, shift) + zp_out) with
 * M = s_in / s_out in double. int8 RSQRT and ELU are 256-entry tables computed at compile time
 * (nn2c_extra_lut_s8).
 *
 * POW broadcasts numpy-style through a compile-time loop nest (nn2c_math_bcast_t, the layout of
 * nn2c_elementwise.h's nn2c_ew_bcast_t). Float results are powf (pow in double for an int32
 * exponent, as C++'s std::pow(float, int)); integer results are pow() in double truncated towards
 * zero, as onnxruntime's static_cast<int32_t>(std::pow(...)); NaN or a result outside int32 gives
 * INT32_MIN (what that cast gives on x86).
 */
#ifndef NN2C_MATH_H
#define NN2C_MATH_H

#include "nn2c_common.h"

#define NN2C_MATH_MAX_DIMS 8

typedef struct {
    int32_t count;
    float alpha, beta, gamma;
} nn2c_math_f32_params_t;

typedef struct {
    int32_t count;
    int32_t input_offset, output_offset; /* zero points */
    int32_t multiplier, shift;           /* s_in / s_out, used when needs_rescale */
    int32_t needs_rescale;
} nn2c_math_abs_q_params_t;

typedef struct {
    int32_t count;
    int32_t detect_negative, detect_positive;
} nn2c_math_isinf_params_t;

typedef struct { /* as nn2c_ew_bcast_t (nn2c_elementwise.h): arrays rank long */
    int32_t rank;
    const int32_t *dims;
    const int32_t *stride1;
    const int32_t *stride2;
} nn2c_math_bcast_t;

typedef struct {
    nn2c_math_bcast_t bc;
} nn2c_math_pow_params_t;

#define NN2C_MATH_DECLARE_F32(name) \
    void nn2c_math_##name##_f32(const nn2c_math_f32_params_t *p, const float *input, float *output);
NN2C_MATH_DECLARE_F32(exp)
NN2C_MATH_DECLARE_F32(log)
NN2C_MATH_DECLARE_F32(sqrt)
NN2C_MATH_DECLARE_F32(rsqrt)
NN2C_MATH_DECLARE_F32(neg)
NN2C_MATH_DECLARE_F32(abs)
NN2C_MATH_DECLARE_F32(square)
NN2C_MATH_DECLARE_F32(floor)
NN2C_MATH_DECLARE_F32(ceil)
NN2C_MATH_DECLARE_F32(round)
NN2C_MATH_DECLARE_F32(sign)
NN2C_MATH_DECLARE_F32(sin)
NN2C_MATH_DECLARE_F32(cos)
NN2C_MATH_DECLARE_F32(tan)
NN2C_MATH_DECLARE_F32(asin)
NN2C_MATH_DECLARE_F32(acos)
NN2C_MATH_DECLARE_F32(atan)
NN2C_MATH_DECLARE_F32(sinh)
NN2C_MATH_DECLARE_F32(cosh)
NN2C_MATH_DECLARE_F32(asinh)
NN2C_MATH_DECLARE_F32(acosh)
NN2C_MATH_DECLARE_F32(atanh)
NN2C_MATH_DECLARE_F32(erf)
NN2C_MATH_DECLARE_F32(reciprocal)
NN2C_MATH_DECLARE_F32(gelu)
NN2C_MATH_DECLARE_F32(gelu_tanh)
NN2C_MATH_DECLARE_F32(softplus)
NN2C_MATH_DECLARE_F32(softsign)
NN2C_MATH_DECLARE_F32(elu)
NN2C_MATH_DECLARE_F32(selu)
NN2C_MATH_DECLARE_F32(celu)
NN2C_MATH_DECLARE_F32(mish)
NN2C_MATH_DECLARE_F32(swish)
NN2C_MATH_DECLARE_F32(thresholded_relu)
NN2C_MATH_DECLARE_F32(shrink)
#undef NN2C_MATH_DECLARE_F32

void nn2c_math_abs_s8(const nn2c_math_abs_q_params_t *p, const int8_t *input, int8_t *output);
void nn2c_math_abs_s16(const nn2c_math_abs_q_params_t *p, const int16_t *input, int16_t *output);

/* integers without quantization, two's-complement wrap: abs(INT_MIN) == INT_MIN, -INT_MIN == INT_MIN */
void nn2c_math_abs_i8(int32_t count, const int8_t *input, int8_t *output);
void nn2c_math_abs_i16(int32_t count, const int16_t *input, int16_t *output);
void nn2c_math_abs_i32(int32_t count, const int32_t *input, int32_t *output);
void nn2c_math_neg_i8(int32_t count, const int8_t *input, int8_t *output);
void nn2c_math_neg_i16(int32_t count, const int16_t *input, int16_t *output);
void nn2c_math_neg_i32(int32_t count, const int32_t *input, int32_t *output);
void nn2c_math_sign_i8(int32_t count, const int8_t *input, int8_t *output);
void nn2c_math_sign_i16(int32_t count, const int16_t *input, int16_t *output);
void nn2c_math_sign_i32(int32_t count, const int32_t *input, int32_t *output);

/* bool outputs are bytes, 0 or 1 */
void nn2c_math_isnan_f32(int32_t count, const float *input, uint8_t *output);
void nn2c_math_isinf_f32(const nn2c_math_isinf_params_t *p, const float *input, uint8_t *output);

/* POW(base, exponent): f32 = float base and exponent; f32_i32 = float base, int32 exponent;
 * i32 = int32 base and exponent; i32_f32 = int32 base, float exponent (int32 result). */
void nn2c_math_pow_f32(const nn2c_math_pow_params_t *p, const float *base, const float *exponent, float *output);
void nn2c_math_pow_f32_i32(const nn2c_math_pow_params_t *p, const float *base, const int32_t *exponent,
                           float *output);
void nn2c_math_pow_i32(const nn2c_math_pow_params_t *p, const int32_t *base, const int32_t *exponent,
                       int32_t *output);
void nn2c_math_pow_i32_f32(const nn2c_math_pow_params_t *p, const int32_t *base, const float *exponent,
                           int32_t *output);
/* int64 (ONNX's integer default): f32_i64, i64, i64_f32 as above, an int64 result outside int64 or
 * NaN giving INT64_MIN. */
void nn2c_math_pow_f32_i64(const nn2c_math_pow_params_t *p, const float *base, const int64_t *exponent,
                           float *output);
void nn2c_math_pow_i64(const nn2c_math_pow_params_t *p, const int64_t *base, const int64_t *exponent,
                       int64_t *output);
void nn2c_math_pow_i64_f32(const nn2c_math_pow_params_t *p, const int64_t *base, const float *exponent,
                           int64_t *output);

#endif /* NN2C_MATH_H */
