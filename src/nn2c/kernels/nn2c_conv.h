/* 2-D convolutions: CONV_2D and DEPTHWISE_CONV_2D (NHWC).
 *
 * int8 and int16x8 follow TFLite Micro's reference_integer_ops::ConvPerChannel and
 * DepthwiseConvPerChannel bit for bit; float32 keeps reference_ops' summation order per output
 * (filter_y, filter_x, input channel); the hybrids (float activations, int8 weights) reproduce
 * TFLite's reference hybrid arithmetic (per-batch on-the-fly input quantization, integer
 * accumulation, float rescale). Multipliers, padding and ranges are computed at compile time.
 */
#ifndef NN2C_CONV_H
#define NN2C_CONV_H
#include "nn2c_common.h"

/* A convolution's geometry: 16-bit fields (30 bytes instead of 60 in each layer's parameter struct), 32-bit where some dimension of the model is above 65,535 or a field is negative
 * (nn2c_config.h: NN2C_WIDE_GEOMETRY, set by codegen/kernel_config.py). Fields are read as int, so the
 * arithmetic is the same either way. */
#if defined(NN2C_WIDE_GEOMETRY)
typedef int32_t nn2c_dim_t;
#else
typedef uint16_t nn2c_dim_t;
#endif

typedef struct {
    nn2c_dim_t batches;
    nn2c_dim_t in_h, in_w, in_c;
    nn2c_dim_t out_h, out_w, out_c;
    nn2c_dim_t filter_h, filter_w;
    nn2c_dim_t stride_h, stride_w;
    nn2c_dim_t dilation_h, dilation_w;
    nn2c_dim_t pad_h, pad_w; /* top / left padding (TFLite ComputePaddingHeightWidth) */
} nn2c_conv_geom_t;

/* CONV_2D, int8 activations and weights (OHWI), int32 bias. */
typedef struct {
    nn2c_conv_geom_t g;
    int32_t groups;        /* in_c / filter input depth */
    int32_t input_offset;  /* -input zero point */
    int32_t output_offset; /* output zero point */
    const int32_t *multipliers; /* one per output channel */
    const int32_t *shifts;
    int32_t act_min, act_max;
} nn2c_conv_s8_params_t;

/* CONV_2D, int16 activations, int8 weights, int64 / int32 / no bias: 64-bit accumulation. */
typedef struct {
    nn2c_conv_geom_t g;
    int32_t groups;
    const int32_t *multipliers;
    const int32_t *shifts;
    int32_t act_min, act_max;
} nn2c_conv_s16_params_t;

/* CONV_2D, float32; weights re-laid out at compile time as
 * [group][channel block of 8][filter_h][filter_w][filter input depth][8], zero-padded lanes. */
typedef struct {
    nn2c_conv_geom_t g;
    int32_t groups;
    float act_min, act_max;
} nn2c_conv_f32_params_t;

/* Hybrid CONV_2D / DEPTHWISE_CONV_2D: float32 activations, int8 weights (OHWI / 1HWO).
 * asymmetric = 0: TFLite's per-tensor hybrid (symmetric input quantization, one filter scale);
 * asymmetric = 1: TFLite's per-channel hybrid (asymmetric input quantization, per-channel scales). */
typedef struct {
    nn2c_conv_geom_t g;
    int32_t groups;           /* CONV_2D only */
    int32_t depth_multiplier; /* DEPTHWISE_CONV_2D only */
    int32_t asymmetric;
    const float *filter_scales; /* one per output channel */
    float act_min, act_max;
} nn2c_conv_hybrid_params_t;

/* DEPTHWISE_CONV_2D, int8 activations and weights (1HWO), int32 bias. */
typedef struct {
    nn2c_conv_geom_t g;
    int32_t depth_multiplier;
    int32_t input_offset;
    int32_t output_offset;
    const int32_t *multipliers;
    const int32_t *shifts;
    int32_t act_min, act_max;
} nn2c_dwconv_s8_params_t;

typedef struct {
    nn2c_conv_geom_t g;
    int32_t depth_multiplier;
    const int32_t *multipliers;
    const int32_t *shifts;
    int32_t act_min, act_max;
} nn2c_dwconv_s16_params_t;

typedef struct {
    nn2c_conv_geom_t g;
    int32_t depth_multiplier;
    float act_min, act_max;
} nn2c_dwconv_f32_params_t;

void nn2c_conv_s8(const nn2c_conv_s8_params_t *p, const int8_t *input, const int8_t *filter,
                  const int32_t *bias, int8_t *output);
void nn2c_conv_s16_b64(const nn2c_conv_s16_params_t *p, const int16_t *input, const int8_t *filter,
                       const int64_t *bias, int16_t *output);
void nn2c_conv_s16_b32(const nn2c_conv_s16_params_t *p, const int16_t *input, const int8_t *filter,
                       const int32_t *bias, int16_t *output);
void nn2c_conv_f32(const nn2c_conv_f32_params_t *p, const float *input, const float *packed_filter,
                   const float *bias, float *output);
/* scratch: in_h * in_w * in_c bytes (one batch of quantized input) */
void nn2c_conv_hybrid(const nn2c_conv_hybrid_params_t *p, const float *input, const int8_t *filter,
                      const float *bias, float *output, void *scratch);

void nn2c_dwconv_s8(const nn2c_dwconv_s8_params_t *p, const int8_t *input, const int8_t *filter,
                    const int32_t *bias, int8_t *output);
void nn2c_dwconv_s16(const nn2c_dwconv_s16_params_t *p, const int16_t *input, const int8_t *filter,
                     const int64_t *bias, int16_t *output);
void nn2c_dwconv_f32(const nn2c_dwconv_f32_params_t *p, const float *input, const float *filter,
                     const float *bias, float *output);
void nn2c_dwconv_hybrid(const nn2c_conv_hybrid_params_t *p, const float *input, const int8_t *filter,
                        const float *bias, float *output, void *scratch);
#endif
