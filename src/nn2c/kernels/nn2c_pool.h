/* Pooling (AVERAGE_POOL_2D, MAX_POOL_2D) and reductions (MEAN, SUM, REDUCE_MAX).
 *
 * Pooling follows TFLite's reference_ops / reference_integer_ops AveragePool and MaxPool on NHWC
 * tensors; reductions follow reference_ops::Mean, QuantizedMeanOrSum and ReduceGeneric. All shape
 * facts (padding, reduced strides, multipliers) are computed at compile time. */
#ifndef NN2C_POOL_H
#define NN2C_POOL_H
#include "nn2c_common.h"

typedef struct {
    int32_t batches, input_h, input_w, depth;
    int32_t output_h, output_w;
    int32_t stride_h, stride_w;
    int32_t filter_h, filter_w;
    int32_t pad_h, pad_w;  /* top / left padding (TFLite ComputePaddingHeightWidth) */
    int32_t act_min, act_max;       /* integer kernels */
    float act_min_f, act_max_f;     /* float kernels */
} nn2c_pool_params_t;

void nn2c_avg_pool_s8(const nn2c_pool_params_t *p, const int8_t *input, int8_t *output);
void nn2c_avg_pool_s16(const nn2c_pool_params_t *p, const int16_t *input, int16_t *output);
void nn2c_avg_pool_f32(const nn2c_pool_params_t *p, const float *input, float *output);
/* A global int8 AVERAGE_POOL_2D (one window, the whole input) row by row (codegen/stream.py):
 * sums[c] += channel c of the `count` values' pixels (count = pixels * depth), then finish divides
 * each sum by filter_h * filter_w as nn2c_avg_pool_s8 rounds it and clamps. */
void nn2c_avg_pool_s8_sums(const int8_t *input, int32_t count, int32_t depth, int32_t *sums);
void nn2c_avg_pool_s8_finish(const nn2c_pool_params_t *p, const int32_t *sums, int8_t *output);
/* A global int8 AVERAGE_POOL_2D (its one window the whole input, no padding) channel by channel: the window
 * arithmetic of nn2c_avg_pool_s8 left out (its code where no layer takes the SIMD lanes, POOL_LANES). */
void nn2c_avg_pool_s8_global(const nn2c_pool_params_t *p, const int8_t *input, int8_t *output);
void nn2c_max_pool_s8(const nn2c_pool_params_t *p, const int8_t *input, int8_t *output);
void nn2c_max_pool_s16(const nn2c_pool_params_t *p, const int16_t *input, int16_t *output);
void nn2c_max_pool_f32(const nn2c_pool_params_t *p, const float *input, float *output);

#define NN2C_REDUCE_MAX_RANK 6

/* The input is walked in row-major order; each element lands in the output element whose offset
 * is sum(index[d] * out_strides[d]) (out_strides is 0 on reduced axes), as TFLite's Reduce does. */
typedef struct {
    int32_t rank;
    int32_t dims[NN2C_REDUCE_MAX_RANK];        /* input dims */
    int32_t out_strides[NN2C_REDUCE_MAX_RANK]; /* output stride per input dim, 0 if reduced */
    int32_t num_outputs;
    int32_t num_reduced;   /* input elements per output element */
    int32_t input_zp, output_zp;
    int32_t multiplier, shift;  /* requantisation (already divided by num_reduced for MEAN) */
    /* the integer sums: 0 walks the input (any axes); else the input is [outer][num_reduced][inner] (the reduced
     * axes one run), its rows of inner values added into one row of sums, in the walk's order */
    int32_t inner;
} nn2c_reduce_params_t;

/* Integer MEAN or SUM (they differ only in the multiplier); temp_sum: num_outputs int32 scratch. */
void nn2c_reduce_quantized_s8(const nn2c_reduce_params_t *p, const int8_t *input, int8_t *output,
                              int32_t *temp_sum);
void nn2c_reduce_quantized_s16(const nn2c_reduce_params_t *p, const int16_t *input, int16_t *output,
                               int32_t *temp_sum);
void nn2c_reduce_mean_f32(const nn2c_reduce_params_t *p, const float *input, float *output);
void nn2c_reduce_sum_f32(const nn2c_reduce_params_t *p, const float *input, float *output);
void nn2c_reduce_max_s8(const nn2c_reduce_params_t *p, const int8_t *input, int8_t *output);
void nn2c_reduce_max_s16(const nn2c_reduce_params_t *p, const int16_t *input, int16_t *output);
void nn2c_reduce_max_f32(const nn2c_reduce_params_t *p, const float *input, float *output);
#endif
