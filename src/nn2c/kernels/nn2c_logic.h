/* Comparisons, logical and bitwise operators, selection, and the binary arithmetic beyond
 * ADD/SUB/MUL/DIV (SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD, FMOD, BITSHIFT, ADD_N, PRELU), with
 * TensorFlow Lite Micro's reference arithmetic where TFLM has the operator.
 *
 * Booleans are one byte, 0 or 1 (any non-zero input byte reads as true). Operators with up to
 * three operands broadcast numpy-style through a loop nest the compiler computes
 * (nn2c_logic_bcast_t): dims[] are the extents of the fused loops, outermost first, and
 * stride[k][] the element strides of operand k in each loop (0 where it is broadcast). The output
 * is written contiguously in row-major order.
 *
 * Suffixes: f32, s8, u8, s16, i32, i64, b8 (bool); x8 / x16 / x32 / x64 are raw element copies of
 * that width (SELECT_V2 of any type).
 */
#ifndef NN2C_LOGIC_H
#define NN2C_LOGIC_H

#include "nn2c_common.h"

#define NN2C_LOGIC_MAX_DIMS 8
#define NN2C_LOGIC_MAX_OPERANDS 3

typedef struct { /* arrays rank long, as nn2c_ew_bcast_t (nn2c_elementwise.h); an operand the op lacks NULL */
    int32_t rank; /* fused loops, 1..NN2C_LOGIC_MAX_DIMS */
    const int32_t *dims;
    const int32_t *stride[NN2C_LOGIC_MAX_OPERANDS];
} nn2c_logic_bcast_t;

/* Operators without parameters of their own: comparisons of raw values, logical and bitwise
 * operators, BITSHIFT, SELECT_V2, FLOOR_DIV, FLOOR_MOD, FMOD, float / int32 SQUARED_DIFFERENCE,
 * float PRELU. */
typedef struct {
    nn2c_logic_bcast_t bc;
} nn2c_logic_params_t;

/* int8 comparisons (ComparisonsPrepare): each input is offset, shifted left by 8 and rescaled by
 * its own scale (QuantizeMultiplierSmallerThanOneExp), then the two int32 values are compared. */
typedef struct {
    nn2c_logic_bcast_t bc;
    int32_t left_shift;
    int32_t input1_offset, input1_multiplier, input1_shift;
    int32_t input2_offset, input2_multiplier, input2_shift;
} nn2c_compare_q_params_t;

/* int8 / int16 SQUARED_DIFFERENCE (PrepareQuantized, left_shift 7 / 0): both inputs rescaled to
 * 2 max(s1, s2) / 2^left_shift, the difference squared and rescaled to the output. */
typedef struct {
    nn2c_logic_bcast_t bc;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t left_shift;
    int32_t input1_multiplier, input1_shift;
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
} nn2c_squared_difference_q_params_t;

/* int8 / int16 PRELU (CalculatePreluParams): x >= 0 uses s_in / s_out, x < 0 multiplies by the
 * offset alpha and uses s_in * s_alpha / s_out; the result saturates to the output type. */
typedef struct {
    nn2c_logic_bcast_t bc;
    int32_t input_offset, alpha_offset, output_offset;
    int32_t multiplier_positive, shift_positive;
    int32_t multiplier_negative, shift_negative;
} nn2c_prelu_q_params_t;

/* ADD_N over num_inputs tensors of count elements each (equal shapes). */
typedef struct {
    int32_t count, num_inputs;
} nn2c_add_n_params_t;

/* int8 ADD_N (left_shift 20): every input offset, shifted and rescaled by s / (2 s), summed,
 * then rescaled by 2 s / (2^20 s_out); inputs share one scale and zero point. */
typedef struct {
    int32_t count, num_inputs;
    int32_t input_offset, output_offset, left_shift;
    int32_t input_multiplier, input_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
} nn2c_add_n_q_params_t;

#define NN2C_LOGIC_DECL_BINARY(name, params_t, ta, tb, to) \
    void name(const params_t *p, const ta *in1, const tb *in2, to *out);

/* comparisons of raw values: out = in1 OP in2 */
#define NN2C_LOGIC_DECL_COMPARE(sfx, t)                                                   \
    NN2C_LOGIC_DECL_BINARY(nn2c_equal_##sfx, nn2c_logic_params_t, t, t, uint8_t)         \
    NN2C_LOGIC_DECL_BINARY(nn2c_not_equal_##sfx, nn2c_logic_params_t, t, t, uint8_t)     \
    NN2C_LOGIC_DECL_BINARY(nn2c_less_##sfx, nn2c_logic_params_t, t, t, uint8_t)          \
    NN2C_LOGIC_DECL_BINARY(nn2c_less_equal_##sfx, nn2c_logic_params_t, t, t, uint8_t)    \
    NN2C_LOGIC_DECL_BINARY(nn2c_greater_##sfx, nn2c_logic_params_t, t, t, uint8_t)       \
    NN2C_LOGIC_DECL_BINARY(nn2c_greater_equal_##sfx, nn2c_logic_params_t, t, t, uint8_t)
NN2C_LOGIC_DECL_COMPARE(f32, float)
NN2C_LOGIC_DECL_COMPARE(s8, int8_t)
NN2C_LOGIC_DECL_COMPARE(u8, uint8_t)
NN2C_LOGIC_DECL_COMPARE(s16, int16_t)
NN2C_LOGIC_DECL_COMPARE(i32, int32_t)
NN2C_LOGIC_DECL_COMPARE(i64, int64_t)
NN2C_LOGIC_DECL_COMPARE(b8, uint8_t)

/* int8 comparisons of rescaled values (TFLM's ...WithScaling) */
NN2C_LOGIC_DECL_BINARY(nn2c_equal_q_s8, nn2c_compare_q_params_t, int8_t, int8_t, uint8_t)
NN2C_LOGIC_DECL_BINARY(nn2c_not_equal_q_s8, nn2c_compare_q_params_t, int8_t, int8_t, uint8_t)
NN2C_LOGIC_DECL_BINARY(nn2c_less_q_s8, nn2c_compare_q_params_t, int8_t, int8_t, uint8_t)
NN2C_LOGIC_DECL_BINARY(nn2c_less_equal_q_s8, nn2c_compare_q_params_t, int8_t, int8_t, uint8_t)
NN2C_LOGIC_DECL_BINARY(nn2c_greater_q_s8, nn2c_compare_q_params_t, int8_t, int8_t, uint8_t)
NN2C_LOGIC_DECL_BINARY(nn2c_greater_equal_q_s8, nn2c_compare_q_params_t, int8_t, int8_t, uint8_t)

/* logical operators on bools */
NN2C_LOGIC_DECL_BINARY(nn2c_logical_and_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t)
NN2C_LOGIC_DECL_BINARY(nn2c_logical_or_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t)
void nn2c_logical_not_b8(int32_t count, const uint8_t *in, uint8_t *out);

/* bitwise operators; BITSHIFT as ONNX defines it: a shift amount outside [0, bits) gives 0
 * (left) or the sign fill (right); signed values shift right arithmetically, left by wrapping */
#define NN2C_LOGIC_DECL_BITS(sfx, t)                                                     \
    NN2C_LOGIC_DECL_BINARY(nn2c_bitwise_and_##sfx, nn2c_logic_params_t, t, t, t)        \
    NN2C_LOGIC_DECL_BINARY(nn2c_bitwise_or_##sfx, nn2c_logic_params_t, t, t, t)         \
    NN2C_LOGIC_DECL_BINARY(nn2c_bitwise_xor_##sfx, nn2c_logic_params_t, t, t, t)        \
    NN2C_LOGIC_DECL_BINARY(nn2c_shift_left_##sfx, nn2c_logic_params_t, t, t, t)         \
    NN2C_LOGIC_DECL_BINARY(nn2c_shift_right_##sfx, nn2c_logic_params_t, t, t, t)        \
    void nn2c_bitwise_not_##sfx(int32_t count, const t *in, t *out);
NN2C_LOGIC_DECL_BITS(s8, int8_t)
NN2C_LOGIC_DECL_BITS(u8, uint8_t)
NN2C_LOGIC_DECL_BITS(s16, int16_t)
NN2C_LOGIC_DECL_BITS(i32, int32_t)
NN2C_LOGIC_DECL_BITS(i64, int64_t)

/* SELECT_V2: out = cond ? in1 : in2, elements of 1, 2, 4 or 8 bytes copied as they are stored */
#define NN2C_LOGIC_DECL_SELECT(sfx) \
    void nn2c_select_##sfx(const nn2c_logic_params_t *p, const uint8_t *cond, const void *in1, const void *in2, \
                           void *out);
NN2C_LOGIC_DECL_SELECT(x8)
NN2C_LOGIC_DECL_SELECT(x16)
NN2C_LOGIC_DECL_SELECT(x32)
NN2C_LOGIC_DECL_SELECT(x64)

/* SQUARED_DIFFERENCE: (in1 - in2)^2; int32 wraps */
NN2C_LOGIC_DECL_BINARY(nn2c_squared_difference_f32, nn2c_logic_params_t, float, float, float)
NN2C_LOGIC_DECL_BINARY(nn2c_squared_difference_i32, nn2c_logic_params_t, int32_t, int32_t, int32_t)
NN2C_LOGIC_DECL_BINARY(nn2c_squared_difference_s8, nn2c_squared_difference_q_params_t, int8_t, int8_t, int8_t)
NN2C_LOGIC_DECL_BINARY(nn2c_squared_difference_s16, nn2c_squared_difference_q_params_t, int16_t, int16_t, int16_t)

/* FLOOR_DIV (float: floor of the double quotient, as TFLM), FLOOR_MOD (the remainder takes the
 * divisor's sign), FMOD (C's fmod / %: the dividend's sign). Integer division by 0 gives 0. */
NN2C_LOGIC_DECL_BINARY(nn2c_floor_div_f32, nn2c_logic_params_t, float, float, float)
NN2C_LOGIC_DECL_BINARY(nn2c_floor_div_i32, nn2c_logic_params_t, int32_t, int32_t, int32_t)
#define NN2C_LOGIC_DECL_MOD(sfx, t)                                              \
    NN2C_LOGIC_DECL_BINARY(nn2c_floor_mod_##sfx, nn2c_logic_params_t, t, t, t)  \
    NN2C_LOGIC_DECL_BINARY(nn2c_fmod_##sfx, nn2c_logic_params_t, t, t, t)
NN2C_LOGIC_DECL_MOD(f32, float)
NN2C_LOGIC_DECL_MOD(s8, int8_t)
NN2C_LOGIC_DECL_MOD(u8, uint8_t)
NN2C_LOGIC_DECL_MOD(s16, int16_t)
NN2C_LOGIC_DECL_MOD(i32, int32_t)
NN2C_LOGIC_DECL_MOD(i64, int64_t)

/* ADD_N: inputs[k] points at the k-th operand */
void nn2c_add_n_f32(const nn2c_add_n_params_t *p, const float *const *inputs, float *out);
void nn2c_add_n_s8(const nn2c_add_n_q_params_t *p, const int8_t *const *inputs, int8_t *out);

/* PRELU: in >= 0 ? in : in * alpha (alpha broadcast); int8 and int16 inputs take int8 alphas */
NN2C_LOGIC_DECL_BINARY(nn2c_prelu_f32, nn2c_logic_params_t, float, float, float)
NN2C_LOGIC_DECL_BINARY(nn2c_prelu_s8, nn2c_prelu_q_params_t, int8_t, int8_t, int8_t)
NN2C_LOGIC_DECL_BINARY(nn2c_prelu_s16, nn2c_prelu_q_params_t, int16_t, int8_t, int16_t)

#undef NN2C_LOGIC_DECL_MOD
#undef NN2C_LOGIC_DECL_SELECT
#undef NN2C_LOGIC_DECL_BITS
#undef NN2C_LOGIC_DECL_COMPARE
#undef NN2C_LOGIC_DECL_BINARY

#endif /* NN2C_LOGIC_H */
