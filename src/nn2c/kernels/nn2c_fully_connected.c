/* Fully-connected layers. The int8 loop is TFLite's reference_integer_ops::FullyConnected:
 * acc = sum((w + filter_offset) * (x + input_offset)) + bias, requantised with the
 * double-rounding fixed-point multiplier, offset, clamped. */
#include "nn2c_fully_connected.h"

void nn2c_fully_connected_s8(const nn2c_fc_s8_params_t *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output) {
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *x = input + b * p->accum_depth;
        for (int32_t c = 0; c < p->output_depth; ++c) {
            const int8_t *w = filter + c * p->accum_depth;
            int32_t acc = 0;
            for (int32_t d = 0; d < p->accum_depth; ++d) {
                acc += ((int32_t)w[d] + p->filter_offset) * ((int32_t)x[d] + p->input_offset);
            }
            if (bias) {
                acc += bias[c];
            }
            int32_t k = p->per_channel ? c : 0;
            acc = nn2c_mbqm(acc, p->multipliers[k], (int)p->shifts[k]) + p->output_offset;
            output[b * p->output_depth + c] = (int8_t)nn2c_clamp_i32(acc, p->act_min, p->act_max);
        }
    }
}

void nn2c_fc_s8_accumulate(const nn2c_fc_s8_params_t *p, const int8_t *input, const int8_t *filter,
                           int32_t start, int32_t count, int32_t *acc) {
    for (int32_t c = 0; c < p->output_depth; ++c) {
        const int8_t *w = filter + c * p->accum_depth + start;
        int32_t sum = 0;
        for (int32_t d = 0; d < count; ++d) {
            sum += ((int32_t)w[d] + p->filter_offset) * ((int32_t)input[d] + p->input_offset);
        }
        acc[c] += sum;
    }
}

void nn2c_fc_s8_finish(const nn2c_fc_s8_params_t *p, const int32_t *acc, const int32_t *bias, int8_t *output) {
    for (int32_t c = 0; c < p->output_depth; ++c) {
        int32_t total = acc[c];
        if (bias) {
            total += bias[c];
        }
        int32_t k = p->per_channel ? c : 0;
        total = nn2c_mbqm(total, p->multipliers[k], (int)p->shifts[k]) + p->output_offset;
        output[c] = (int8_t)nn2c_clamp_i32(total, p->act_min, p->act_max);
    }
}

void nn2c_fully_connected_f32(const nn2c_fc_f32_params_t *p, const float *input, const float *filter,
                              const float *bias, float *output) {
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *x = input + b * p->accum_depth;
        for (int32_t c = 0; c < p->output_depth; ++c) {
            const float *w = filter + c * p->accum_depth;
            float total = 0.0f;
            for (int32_t d = 0; d < p->accum_depth; ++d) {
                total += x[d] * w[d];
            }
            float bias_value = bias ? bias[c] : 0.0f;
            output[b * p->output_depth + c] = nn2c_clamp_f32(total + bias_value, p->act_min, p->act_max);
        }
    }
}

void nn2c_fully_connected_f32_i8w(const nn2c_fc_f32_params_t *p, const float *input, const int8_t *filter,
                                  const float *bias, float *output) {
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *x = input + b * p->accum_depth;
        for (int32_t c = 0; c < p->output_depth; ++c) {
            const int8_t *w = filter + c * p->accum_depth;
            float total = 0.0f;
            for (int32_t d = 0; d < p->accum_depth; ++d) {
                total += x[d] * (float)w[d];
            }
            total *= p->filter_scales[p->per_channel ? c : 0];
            float bias_value = bias ? bias[c] : 0.0f;
            output[b * p->output_depth + c] = nn2c_clamp_f32(total + bias_value, p->act_min, p->act_max);
        }
    }
}
