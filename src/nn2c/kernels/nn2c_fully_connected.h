/* Fully-connected (dense) layers: int8 (TFLite reference arithmetic) and float32. */
#ifndef NN2C_FULLY_CONNECTED_H
#define NN2C_FULLY_CONNECTED_H
#include "nn2c_common.h"

typedef struct {
    int32_t batches;      /* rows of the input (product of all output dims but the last) */
    int32_t accum_depth;  /* input features = last filter dimension */
    int32_t output_depth; /* output features */
    int32_t input_offset; /* -input zero point */
    int32_t filter_offset;/* -filter zero point */
    int32_t output_offset;/* output zero point */
    const int32_t *multipliers; /* Q31 mantissas: one, or one per output channel */
    const int32_t *shifts;
    int32_t per_channel;
    int32_t act_min, act_max;
} nn2c_fc_s8_params_t;

typedef struct {
    int32_t batches, accum_depth, output_depth;
    float act_min, act_max;
    /* int8 weights with per-channel (or one) float scales: dequantised on the fly (hybrid models) */
    const float *filter_scales;
    int32_t per_channel;
} nn2c_fc_f32_params_t;

void nn2c_fully_connected_s8(const nn2c_fc_s8_params_t *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output);
/* Row-streamed int8 FULLY_CONNECTED (batches 1): acc[c] += the products of input features
 * [start, start + count) (the `count` values at `input`); then finish adds the bias and requantizes.
 * Integer sums: the result equals nn2c_fully_connected_s8's. */
void nn2c_fc_s8_accumulate(const nn2c_fc_s8_params_t *p, const int8_t *input, const int8_t *filter,
                           int32_t start, int32_t count, int32_t *acc);
/* The same with the products alone, when the filter's zero point is 0: the input offset's terms
 * (input_offset * sum of each filter row) are folded into the bias given to nn2c_fc_s8_finish. */
void nn2c_fc_s8_accumulate_raw(const nn2c_fc_s8_params_t *p, const int8_t *input, const int8_t *filter,
                               int32_t start, int32_t count, int32_t *acc);
void nn2c_fc_s8_finish(const nn2c_fc_s8_params_t *p, const int32_t *acc, const int32_t *bias, int8_t *output);
void nn2c_fully_connected_f32(const nn2c_fc_f32_params_t *p, const float *input, const float *filter,
                              const float *bias, float *output);
void nn2c_fully_connected_f32_i8w(const nn2c_fc_f32_params_t *p, const float *input, const int8_t *filter,
                                  const float *bias, float *output);
#endif
