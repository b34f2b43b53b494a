/* nn2c extra kernels: the operators ONNX models bring that no other family covers.
 *
 * RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 (float clamps; int8 and int16 RELU requantize as
 * TFLite Micro's ReluQuantized, RELU6 clamps in the input's domain as Relu6Quantized), LEAKY_RELU
 * (float; int8 / int16 with separate identity and alpha multipliers), HARD_SWISH (float, int8), SUB
 * (float, int32, int8 / int16 with TFLite's 20- / 15-bit left shift), all element by element.
 * SUB broadcasts numpy-style through a loop nest computed at compile time: dims[] outermost
 * first, and per input the element stride of each loop (0 where the input is broadcast).
 */
#ifndef NN2C_EXTRA_H
#define NN2C_EXTRA_H

#include "nn2c_common.h"

#define NN2C_EXTRA_MAX_DIMS 8

typedef struct { /* as nn2c_ew_bcast_t (nn2c_elementwise.h): arrays rank long */
    int32_t rank;
    const int32_t *dims;
    const int32_t *stride1;
    const int32_t *stride2;
} nn2c_extra_bcast_t;

typedef struct {
    int32_t count;
    float act_min, act_max;
} nn2c_extra_clamp_f32_params_t;

typedef struct {
    int32_t count;
    int32_t input_zero_point, output_zero_point;
    int32_t multiplier, shift;          /* input scale / output scale */
    int32_t act_min, act_max;
} nn2c_extra_relu_q_params_t;

typedef struct {
    int32_t count;
    float alpha;
} nn2c_extra_leaky_f32_params_t;

typedef struct {
    int32_t count;
    int32_t input_zero_point, output_zero_point;
    int32_t identity_multiplier, identity_shift;
    int32_t alpha_multiplier, alpha_shift;
} nn2c_extra_leaky_q_params_t;

typedef struct {
    nn2c_extra_bcast_t bc;
    float act_min, act_max;
} nn2c_extra_sub_f32_params_t;

typedef struct {
    nn2c_extra_bcast_t bc;
} nn2c_extra_sub_i32_params_t;

typedef struct {
    nn2c_extra_bcast_t bc;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t left_shift;
    int32_t input1_multiplier, input1_shift;
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
} nn2c_extra_sub_q_params_t;

/* float: out = min(max(x, act_min), act_max) (NaN passes through, as in TFLite). */
void nn2c_extra_clamp_f32(const nn2c_extra_clamp_f32_params_t *p, const float *input, float *output);
void nn2c_extra_relu_s8(const nn2c_extra_relu_q_params_t *p, const int8_t *input, int8_t *output);
void nn2c_extra_relu_s16(const nn2c_extra_relu_q_params_t *p, const int16_t *input, int16_t *output);
/* RELU6 int: clamp to [act_min, act_max] = [zero point, quantized 6] of the input. */
void nn2c_extra_relu6_s8(const nn2c_extra_relu_q_params_t *p, const int8_t *input, int8_t *output);
void nn2c_extra_relu6_s16(const nn2c_extra_relu_q_params_t *p, const int16_t *input, int16_t *output);

void nn2c_extra_leaky_relu_f32(const nn2c_extra_leaky_f32_params_t *p, const float *input, float *output);
void nn2c_extra_leaky_relu_s8(const nn2c_extra_leaky_q_params_t *p, const int8_t *input, int8_t *output);
void nn2c_extra_leaky_relu_s16(const nn2c_extra_leaky_q_params_t *p, const int16_t *input, int16_t *output);

/* x * min(6, max(0, x + 3)) / 6 */
void nn2c_extra_hard_swish_f32(int32_t count, const float *input, float *output);

/* output[i] = table[input[i] + 128]: int8 activations tabulated at compile time. */
void nn2c_extra_lut_s8(int32_t count, const int8_t *table, const int8_t *input, int8_t *output);

/* int8 hard swish in 16-bit fixed point (TFLite's reference HardSwish): the input on a 2^7 finer
 * scale, a "relu-ish" factor in [0, 1] from the input rescaled so that 3.0 is 32768, their product
 * rescaled to the output. Multipliers are 16-bit (DownScaleInt32ToInt16Multiplier). */
typedef struct {
    int32_t count;
    int32_t input_zero_point, output_zero_point;
    int32_t output_multiplier;   /* int16 fixed point */
    int32_t output_exponent;     /* <= 0 */
    int32_t reluish_multiplier;  /* int16 fixed point */
    int32_t reluish_exponent;
} nn2c_extra_hard_swish_q_params_t;

void nn2c_extra_hard_swish_s8(const nn2c_extra_hard_swish_q_params_t *p, const int8_t *input, int8_t *output);

void nn2c_extra_sub_f32(const nn2c_extra_sub_f32_params_t *p, const float *a, const float *b, float *out);
void nn2c_extra_sub_i32(const nn2c_extra_sub_i32_params_t *p, const int32_t *a, const int32_t *b, int32_t *out);
void nn2c_extra_sub_s8(const nn2c_extra_sub_q_params_t *p, const int8_t *a, const int8_t *b, int8_t *out);
void nn2c_extra_sub_s16(const nn2c_extra_sub_q_params_t *p, const int16_t *a, const int16_t *b, int16_t *out);

#endif /* NN2C_EXTRA_H */
