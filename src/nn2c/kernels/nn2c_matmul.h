/* Matrix products whose operands are all known only at run time: BATCH_MATMUL, CONV_2D with a
 * run-time filter and TRANSPOSE_CONV (nothing is re-laid out at compile time).
 *
 * BATCH_MATMUL: out[b, i, j] = sum_k lhs[b, i, k] rhs[b, k, j] over broadcast batch axes. The
 * batch loop nest (outermost first) and each operand's element stride per batch axis (0 where it
 * is broadcast) are computed at compile time; adj_x / adj_y only swap an operand's row and depth
 * strides. int8 / int16 are TFLite's reference_ops::BatchMatMul: acc = sum (lhs - zp_l)(rhs - zp_r)
 * in int32 (int8) or int64 (int16), MultiplyByQuantizedMultiplier, + output zero point, clamp.
 *
 * TRANSPOSE_CONV (NHWC input, OHWI filter, groups, dilation): each output pixel gathers the input
 * pixels whose scatter window covers it (oy = iy * stride - pad + fy * dilation); integer sums equal
 * TFLite's scatter into an int32 / int64 scratch exactly. int8: (x - zp_in) * w, + bias,
 * per-channel MultiplyByQuantizedMultiplier, + zp_out, clamp; int16: x * w in int64, + int64 bias.
 */
#ifndef NN2C_MATMUL_H
#define NN2C_MATMUL_H

#include "nn2c_common.h"
#include "nn2c_conv.h"

#define NN2C_MM_MAX_BATCH_DIMS 6

typedef struct {
    int32_t batch_rank;
    int32_t batch_dims[NN2C_MM_MAX_BATCH_DIMS];
    int32_t lhs_batch_stride[NN2C_MM_MAX_BATCH_DIMS]; /* elements, 0 where broadcast */
    int32_t rhs_batch_stride[NN2C_MM_MAX_BATCH_DIMS];
    int32_t rows, cols, depth;                       /* out [rows, cols] per batch */
    int32_t lhs_row_stride, lhs_depth_stride;
    int32_t rhs_depth_stride, rhs_col_stride;
} nn2c_mm_shape_t;

typedef struct {
    nn2c_mm_shape_t s;
    float act_min, act_max;
} nn2c_batch_matmul_f32_params_t;

typedef struct {
    nn2c_mm_shape_t s;
    int32_t lhs_offset, rhs_offset; /* -zero points */
    int32_t output_offset;
    int32_t multiplier, shift;
    int32_t act_min, act_max;
} nn2c_batch_matmul_q_params_t;

/* Determinant of each of `count` row-major n x n matrices (ONNX Det): LU decomposition with
 * partial pivoting in double, in the 8 n^2-byte scratch `work`. */
void nn2c_det_f32(int32_t count, int32_t n, void *work, const float *input, float *output);

/* Causal depthwise 1-D convolution with carried state (ONNX CausalConvWithState): p = past (K - 1
 * positions, zeros when NULL) then input (L positions) per (batch, channel); output[t] = bias +
 * sum_j weight[c, j] p[t + j], then x * sigmoid(x) when silu; present = the last K - 1 of p. */
typedef struct {
    int32_t batch, channels, length, kernel, silu;
} nn2c_causal_conv_params_t;

void nn2c_causal_conv_f32(const nn2c_causal_conv_params_t *p, const float *input, const float *weight,
                          const float *bias, const float *past, float *output, float *present);

/* ONNX DeformConv (2-D, float): every tap of the kernel window is shifted by its offset (per
 * offset group, output position) and read bilinearly, corners outside the image being 0, then
 * scaled by the mask (when given) and the weight. mask and bias may be NULL. */
typedef struct {
    int32_t batch, channels, height, width;
    int32_t out_channels, out_height, out_width, kernel_h, kernel_w;
    int32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
    int32_t group, offset_group;
} nn2c_deform_conv_params_t;

void nn2c_deform_conv_f32(const nn2c_deform_conv_params_t *p, const float *input, const float *weight,
                          const float *offset, const float *bias, const float *mask, float *output);

void nn2c_batch_matmul_f32(const nn2c_batch_matmul_f32_params_t *p, const float *lhs, const float *rhs,
                           float *out);
void nn2c_batch_matmul_s8(const nn2c_batch_matmul_q_params_t *p, const int8_t *lhs, const int8_t *rhs,
                          int8_t *out);
void nn2c_batch_matmul_s16(const nn2c_batch_matmul_q_params_t *p, const int16_t *lhs, const int16_t *rhs,
                           int16_t *out);

/* CONV_2D, float32, plain OHWI filter (e.g. computed at run time), grouped; summation order per
 * output as the reference (filter_y, filter_x, input channel). */
typedef struct {
    nn2c_conv_geom_t g;
    int32_t groups;
    float act_min, act_max;
} nn2c_mm_conv_f32_params_t;

void nn2c_mm_conv_f32(const nn2c_mm_conv_f32_params_t *p, const float *input, const float *filter,
                      const float *bias, float *output);

/* TRANSPOSE_CONV: g.in_* is the (small) input, g.out_* the (large) output; pad_h / pad_w are the
 * output pixels cut at the top / left. */
typedef struct {
    nn2c_conv_geom_t g;
    int32_t groups;
    float act_min, act_max;
} nn2c_tconv_f32_params_t;

typedef struct {
    nn2c_conv_geom_t g;
    int32_t groups;
    int32_t input_offset, output_offset;
    const int32_t *multipliers;
    const int32_t *shifts;
    int32_t act_min, act_max;
} nn2c_tconv_q_params_t;

void nn2c_tconv_f32(const nn2c_tconv_f32_params_t *p, const float *input, const float *filter,
                    const float *bias, float *output);
void nn2c_tconv_s8(const nn2c_tconv_q_params_t *p, const int8_t *input, const int8_t *filter,
                   const int32_t *bias, int8_t *output);
void nn2c_tconv_s16(const nn2c_tconv_q_params_t *p, const int16_t *input, const int8_t *filter,
                    const int64_t *bias, int16_t *output);

#endif /* NN2C_MATMUL_H */
