/* Normalisations: NORMALIZE (ONNX LayerNormalization, RMSNormalization, InstanceNormalization,
 * GroupNormalization, MeanVarianceNormalization as one fused kernel), LP_NORMALIZATION (ONNX
 * LpNormalization) and L2_NORMALIZATION (TFLite: float, int8).
 *
 * NORMALIZE: the input is `outer` groups of `count` contiguous elements. Per group, in float:
 *   mode 0 (layer):  y = (x - mean) / sqrt(var + eps)       var = mean((x - mean)^2)
 *   mode 1 (rms):    y = x / sqrt(mean(x^2) + eps)
 *   mode 2 (mvn):    y = (x - mean) / (sqrt(var) + eps)
 * then y = y * scale[k] + bias[k] (each optional) with k = (flat index / scale_div) % scale_size:
 * per element of the group (LayerNorm), per channel (Instance / GroupNorm) or per group.
 * mean / inv_std (optional outputs, one per group) are ONNX LayerNormalization's Mean and
 * InvStdDev.
 *
 * LP_NORMALIZATION: y = x / max(||x||_p, eps) along an axis of `count` elements with stride
 * `inner` (p = 1 or 2; eps 0 for ONNX, 1e-6 for TFLite's float L2_NORMALIZATION); a zero norm
 * gives zeros.
 * L2_NORMALIZATION int8: TFLite's reference_integer_ops::L2Normalization (GetInvSqrtQuantizedMultiplierExp
 * of the sum of squares, output scale 1/128, zero point 0).
 */
#ifndef NN2C_NORM_H
#define NN2C_NORM_H

#include "nn2c_common.h"

typedef struct {
    int32_t outer, count;
    int32_t mode;
    float epsilon;
    int32_t scale_div, scale_size;
} nn2c_norm_params_t;

void nn2c_norm_f32(const nn2c_norm_params_t *p, const float *input, const float *scale, const float *bias,
                   float *output, float *mean_out, float *inv_std_out);

typedef struct {
    int32_t outer, count, inner;
    int32_t p;
    float epsilon;
} nn2c_lp_norm_params_t;

void nn2c_lp_norm_f32(const nn2c_lp_norm_params_t *p, const float *input, float *output);

/* Local response normalisation (ONNX LRN) of [outer, channels, inner]: y = x / (bias + alpha /
 * size * sum of x^2 over channels [c - below, c + above]) ^ beta. */
typedef struct {
    int32_t outer, channels, inner;
    int32_t below, above, size;
    float alpha, beta, bias;
} nn2c_lrn_params_t;

void nn2c_lrn_f32(const nn2c_lrn_params_t *p, const float *input, float *output);

void nn2c_l2_norm_s8(int32_t outer, int32_t depth, int32_t input_zero_point, const int8_t *input,
                     int8_t *output);

#endif /* NN2C_NORM_H */
