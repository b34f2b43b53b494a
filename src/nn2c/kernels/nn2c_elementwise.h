/* Element-wise operators: ADD, MUL, DIV, MAXIMUM, MINIMUM (with broadcasting), QUANTIZE,
 * DEQUANTIZE and CAST, with TFLite Micro's reference arithmetic.
 *
 * Binary operators walk the output in row-major order. The compiler folds the broadcast into a
 * loop nest (nn2c_ew_bcast_t): dims[] are the extents of the fused loops, outermost first, and
 * stride1[] / stride2[] the element strides of each input in each loop (0 where it is
 * broadcast). The innermost loop is a contiguous run of the output whose input strides are 0
 * or 1, so equal shapes are one run of all elements and a scalar is a run with stride 0.
 */
#ifndef NN2C_ELEMENTWISE_H
#define NN2C_ELEMENTWISE_H
#include "nn2c_common.h"

#define NN2C_EW_MAX_DIMS 8

/* (the three arrays rank long, each its own constant: 16 bytes and 12 a loop on a 32-bit core, where arrays of
 * NN2C_EW_MAX_DIMS took 100 whatever the rank; mcunetv2_large's 39 ADD and MUL: 2,596 bytes less code as linked) */
typedef struct {
    int32_t rank; /* fused loops, 1..NN2C_EW_MAX_DIMS */
    const int32_t *dims;
    const int32_t *stride1;
    const int32_t *stride2;
} nn2c_ew_bcast_t;

/* Quantized ADD (int8: left_shift 20, int16: left_shift 15): both inputs are rescaled to a
 * common scale 2*max(s1, s2) / 2^left_shift, summed, and rescaled to the output. */
typedef struct {
    nn2c_ew_bcast_t bc;
    int32_t input1_offset, input2_offset, output_offset; /* -zp1, -zp2, +zp_out */
    int32_t left_shift;
    int32_t input1_multiplier, input1_shift;
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
} nn2c_add_q_params_t;

/* Quantized MUL and DIV: one multiplier from the input and output scales. */
typedef struct {
    nn2c_ew_bcast_t bc;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
} nn2c_mul_q_params_t;

typedef struct {
    nn2c_ew_bcast_t bc;
    float act_min, act_max;
} nn2c_ew_f32_params_t;

typedef struct {
    nn2c_ew_bcast_t bc;
    int32_t act_min, act_max;
} nn2c_ew_i32_params_t;

typedef struct {
    nn2c_ew_bcast_t bc;
} nn2c_ew_minmax_params_t;

/* QUANTIZE from float (scale, zero_point of the output) and DEQUANTIZE (of the input). */
typedef struct {
    int32_t count;
    float scale;
    int32_t zero_point;
} nn2c_quantize_params_t;

/* QUANTIZE between integer types: (x - input_zp) * multiplier * 2^(shift - 31) + output_zp. */
typedef struct {
    int32_t count;
    int32_t input_zero_point, output_zero_point;
    int32_t multiplier, shift;
} nn2c_requantize_params_t;

/* int8 MUL of a [pixels, channels] tensor x by a [channels] one s (an SE block's scaling, [N, H, W, C] times
 * [N, 1, 1, C], in either order): TFLite's MulElementwise, y = clamp(zp_out + M((x - zp_x) (s - zp_s))), with
 * its output stage as a doubled record (nn2c_requant_doubled: int8's whole activation range, the shift in
 * [-24, -1]; the codegen's test). Without the broadcast walk's per-element index arithmetic. */
typedef struct {
    int32_t pixels, channels;
    int32_t x_offset, s_offset; /* -zero points */
    int32_t multiplier, high, shift; /* nn2c_requant_doubled's m, 2^(r - 1) + zp_out 2^r, r = -shift */
} nn2c_mul_channels_params_t;

void nn2c_mul_s8_channels(const nn2c_mul_channels_params_t *p, const int8_t *x, const int8_t *s, int8_t *y);

void nn2c_add_s8(const nn2c_add_q_params_t *p, const int8_t *in1, const int8_t *in2, int8_t *out);
void nn2c_add_s16(const nn2c_add_q_params_t *p, const int16_t *in1, const int16_t *in2, int16_t *out);
void nn2c_add_f32(const nn2c_ew_f32_params_t *p, const float *in1, const float *in2, float *out);
void nn2c_add_i32(const nn2c_ew_i32_params_t *p, const int32_t *in1, const int32_t *in2, int32_t *out);

void nn2c_mul_s8(const nn2c_mul_q_params_t *p, const int8_t *in1, const int8_t *in2, int8_t *out);
void nn2c_mul_s16(const nn2c_mul_q_params_t *p, const int16_t *in1, const int16_t *in2, int16_t *out);
void nn2c_mul_f32(const nn2c_ew_f32_params_t *p, const float *in1, const float *in2, float *out);
void nn2c_mul_i32(const nn2c_ew_i32_params_t *p, const int32_t *in1, const int32_t *in2, int32_t *out);

void nn2c_div_s8(const nn2c_mul_q_params_t *p, const int8_t *in1, const int8_t *in2, int8_t *out);
void nn2c_div_f32(const nn2c_ew_f32_params_t *p, const float *in1, const float *in2, float *out);
void nn2c_div_i32(const nn2c_ew_i32_params_t *p, const int32_t *in1, const int32_t *in2, int32_t *out);

void nn2c_maximum_s8(const nn2c_ew_minmax_params_t *p, const int8_t *in1, const int8_t *in2, int8_t *out);
void nn2c_maximum_s16(const nn2c_ew_minmax_params_t *p, const int16_t *in1, const int16_t *in2, int16_t *out);
void nn2c_maximum_i32(const nn2c_ew_minmax_params_t *p, const int32_t *in1, const int32_t *in2, int32_t *out);
void nn2c_maximum_i64(const nn2c_ew_minmax_params_t *p, const int64_t *in1, const int64_t *in2, int64_t *out);
void nn2c_maximum_f32(const nn2c_ew_minmax_params_t *p, const float *in1, const float *in2, float *out);
void nn2c_minimum_s8(const nn2c_ew_minmax_params_t *p, const int8_t *in1, const int8_t *in2, int8_t *out);
void nn2c_minimum_s16(const nn2c_ew_minmax_params_t *p, const int16_t *in1, const int16_t *in2, int16_t *out);
void nn2c_minimum_i32(const nn2c_ew_minmax_params_t *p, const int32_t *in1, const int32_t *in2, int32_t *out);
void nn2c_minimum_i64(const nn2c_ew_minmax_params_t *p, const int64_t *in1, const int64_t *in2, int64_t *out);
void nn2c_minimum_f32(const nn2c_ew_minmax_params_t *p, const float *in1, const float *in2, float *out);

/* Integer ADD / SUB / MUL / DIV without quantization (ONNX on plain integer tensors, as
 * onnxruntime computes them): add, subtract and multiply wrap modulo 2^bits; DIV truncates
 * towards zero. A zero divisor gives 0 and MIN / -1 gives MIN (wrapped), so the generated code
 * never traps. nn2c_<op>_wrap_<suffix>, suffixes s8, u8, s16, i64 (int32: the _i32 kernels). */
#define NN2C_EW_WRAP_DECL(suffix, T)                                                                  \
    void nn2c_add_wrap_##suffix(const nn2c_ew_minmax_params_t *p, const T *in1, const T *in2, T *out); \
    void nn2c_sub_wrap_##suffix(const nn2c_ew_minmax_params_t *p, const T *in1, const T *in2, T *out); \
    void nn2c_mul_wrap_##suffix(const nn2c_ew_minmax_params_t *p, const T *in1, const T *in2, T *out); \
    void nn2c_div_wrap_##suffix(const nn2c_ew_minmax_params_t *p, const T *in1, const T *in2, T *out);
NN2C_EW_WRAP_DECL(s8, int8_t)
NN2C_EW_WRAP_DECL(u8, uint8_t)
NN2C_EW_WRAP_DECL(s16, int16_t)
NN2C_EW_WRAP_DECL(i64, int64_t)
#undef NN2C_EW_WRAP_DECL

void nn2c_maximum_u8(const nn2c_ew_minmax_params_t *p, const uint8_t *in1, const uint8_t *in2, uint8_t *out);
void nn2c_minimum_u8(const nn2c_ew_minmax_params_t *p, const uint8_t *in1, const uint8_t *in2, uint8_t *out);

void nn2c_quantize_f32_s8(const nn2c_quantize_params_t *p, const float *in, int8_t *out);
void nn2c_quantize_f32_s16(const nn2c_quantize_params_t *p, const float *in, int16_t *out);

void nn2c_requantize_s8_s8(const nn2c_requantize_params_t *p, const int8_t *in, int8_t *out);
void nn2c_requantize_s8_s16(const nn2c_requantize_params_t *p, const int8_t *in, int16_t *out);
void nn2c_requantize_s8_u8(const nn2c_requantize_params_t *p, const int8_t *in, uint8_t *out);
void nn2c_requantize_s8_i32(const nn2c_requantize_params_t *p, const int8_t *in, int32_t *out);
void nn2c_requantize_s16_s8(const nn2c_requantize_params_t *p, const int16_t *in, int8_t *out);
void nn2c_requantize_s16_s16(const nn2c_requantize_params_t *p, const int16_t *in, int16_t *out);
void nn2c_requantize_s16_i32(const nn2c_requantize_params_t *p, const int16_t *in, int32_t *out);
void nn2c_requantize_u8_s8(const nn2c_requantize_params_t *p, const uint8_t *in, int8_t *out);
void nn2c_requantize_i32_s8(const nn2c_requantize_params_t *p, const int32_t *in, int8_t *out);
void nn2c_requantize_i32_s16(const nn2c_requantize_params_t *p, const int32_t *in, int16_t *out);

void nn2c_dequantize_s8_f32(const nn2c_quantize_params_t *p, const int8_t *in, float *out);
void nn2c_dequantize_s16_f32(const nn2c_quantize_params_t *p, const int16_t *in, float *out);
void nn2c_dequantize_u8_f32(const nn2c_quantize_params_t *p, const uint8_t *in, float *out);

/* CAST: nn2c_cast_<from>_<to>(count, in, out). Suffixes: s8, u8, s16, i32, f32 and b8 (bool stored
 * as one byte, 0 or 1). Integers narrow by wrapping, floats to integers truncate and saturate
 * (NaN gives 0), anything to bool is `x != 0`. */
#define NN2C_EW_CAST_DECL(from, to, tin, tout) \
    void nn2c_cast_##from##_##to(int32_t count, const tin *in, tout *out);
#define NN2C_EW_CAST_DECL_FROM(from, tin)               \
    NN2C_EW_CAST_DECL(from, s8, tin, int8_t)            \
    NN2C_EW_CAST_DECL(from, u8, tin, uint8_t)           \
    NN2C_EW_CAST_DECL(from, s16, tin, int16_t)          \
    NN2C_EW_CAST_DECL(from, i32, tin, int32_t)          \
    NN2C_EW_CAST_DECL(from, f32, tin, float)            \
    NN2C_EW_CAST_DECL(from, b8, tin, uint8_t)
NN2C_EW_CAST_DECL_FROM(s8, int8_t)
NN2C_EW_CAST_DECL_FROM(s16, int16_t)
NN2C_EW_CAST_DECL_FROM(i32, int32_t)
NN2C_EW_CAST_DECL_FROM(f32, float)
NN2C_EW_CAST_DECL_FROM(b8, uint8_t)
NN2C_EW_CAST_DECL_FROM(u8, uint8_t)
#undef NN2C_EW_CAST_DECL_FROM
#undef NN2C_EW_CAST_DECL

#endif
