/* SVDF (singular value decomposition filter) layers: int8 input with int16 or int8 state and
 * time weights, and float32. The state tensor lives outside the arena and persists across
 * invocations; each call shifts it one step left and writes the newest column in place. */
#ifndef NN2C_SVDF_H
#define NN2C_SVDF_H
#include "nn2c_common.h"

/* Fused activations of the float kernel (TFLM ActivationValFloat). */
enum {
    NN2C_SVDF_ACT_NONE = 0,
    NN2C_SVDF_ACT_RELU = 1,
    NN2C_SVDF_ACT_RELU_N1_TO_1 = 2,
    NN2C_SVDF_ACT_RELU6 = 3,
    NN2C_SVDF_ACT_TANH = 4,
    NN2C_SVDF_ACT_SIGN_BIT = 5
};

typedef struct {
    int32_t batches;     /* input rows */
    int32_t input_size;  /* input features */
    int32_t filters;     /* num_filters = units * rank */
    int32_t rank;
    int32_t memory;      /* memory_size: columns of the state per filter */
    int32_t input_zero_point;
    int32_t state_zero_point;
    int32_t output_zero_point;
    int32_t multiplier1, shift1; /* input * feature weights -> state */
    int32_t multiplier2, shift2; /* state * time weights -> output */
    /* per filter: -input_zero_point * sum(weights_feature row); NULL (--optimize size): the offset applied at
     * run time (nn2c_sums_s8_offset) */
    const int32_t *feature_offsets;
    int32_t weights_layout;         /* of the feature weights: NN2C_ROWS_* (nn2c_simd.h: nn2c_rows_sums) */
} nn2c_svdf_s8_params_t;

typedef struct {
    int32_t batches, input_size, filters, rank, memory;
    int32_t activation; /* NN2C_SVDF_ACT_* */
} nn2c_svdf_f32_params_t;

/* int8 input, int8 feature weights (in the layout weights_layout), int16 time weights and state, an int32
 * bias folded with the state zero point (bias - state_zero_point * sum of the unit's time weights), int8
 * output. */
void nn2c_svdf_s8_s16(const nn2c_svdf_s8_params_t *p, const int8_t *input, const void *weights_feature,
                      const int16_t *weights_time, const int32_t *bias, int16_t *state, int8_t *output);
/* The TFLite Micro-only variant with int8 time weights and int8 state. */
void nn2c_svdf_s8_s8(const nn2c_svdf_s8_params_t *p, const int8_t *input, const void *weights_feature,
                     const int8_t *weights_time, const int32_t *bias, int8_t *state, int8_t *output);
void nn2c_svdf_f32(const nn2c_svdf_f32_params_t *p, const float *input, const float *weights_feature,
                   const float *weights_time, const float *bias, float *state, float *output);
#endif
