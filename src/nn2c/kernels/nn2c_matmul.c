/* Run-time-operand matrix products: BATCH_MATMUL, CONV_2D with a run-time filter, TRANSPOSE_CONV.
 * See nn2c_matmul.h for the arithmetic. */
#include "nn2c_matmul.h"

#include <math.h>

/* Element offsets of both operands for output batch b (the batch loop nest as an odometer). */
static void nn2c_mm_batch_offsets(const nn2c_mm_shape_t *s, int32_t b, int32_t *lhs, int32_t *rhs) {
    int32_t l = 0, r = 0;
    for (int32_t d = s->batch_rank - 1; d >= 0; --d) {
        const int32_t i = b % s->batch_dims[d];
        b /= s->batch_dims[d];
        l += i * s->lhs_batch_stride[d];
        r += i * s->rhs_batch_stride[d];
    }
    *lhs = l;
    *rhs = r;
}

static int32_t nn2c_mm_batches(const nn2c_mm_shape_t *s) {
    int32_t total = 1;
    for (int32_t d = 0; d < s->batch_rank; ++d) {
        total *= s->batch_dims[d];
    }
    return total;
}

void nn2c_batch_matmul_f32(const nn2c_batch_matmul_f32_params_t *p, const float *lhs, const float *rhs,
                           float *out) {
    const nn2c_mm_shape_t *s = &p->s;
    const int32_t batches = nn2c_mm_batches(s);
    for (int32_t b = 0; b < batches; ++b) {
        int32_t lo, ro;
        nn2c_mm_batch_offsets(s, b, &lo, &ro);
        float *o = out + b * s->rows * s->cols;
        for (int32_t i = 0; i < s->rows; ++i) {
            const float *a = lhs + lo + i * s->lhs_row_stride;
            for (int32_t j = 0; j < s->cols; ++j) {
                const float *c = rhs + ro + j * s->rhs_col_stride;
                float total = 0.0f;
                for (int32_t k = 0; k < s->depth; ++k) {
                    total += a[k * s->lhs_depth_stride] * c[k * s->rhs_depth_stride];
                }
                o[i * s->cols + j] = nn2c_clamp_f32(total, p->act_min, p->act_max);
            }
        }
    }
}

void nn2c_batch_matmul_s8(const nn2c_batch_matmul_q_params_t *p, const int8_t *lhs, const int8_t *rhs,
                          int8_t *out) {
    const nn2c_mm_shape_t *s = &p->s;
    const int32_t batches = nn2c_mm_batches(s);
    for (int32_t b = 0; b < batches; ++b) {
        int32_t lo, ro;
        nn2c_mm_batch_offsets(s, b, &lo, &ro);
        int8_t *o = out + b * s->rows * s->cols;
        for (int32_t i = 0; i < s->rows; ++i) {
            const int8_t *a = lhs + lo + i * s->lhs_row_stride;
            for (int32_t j = 0; j < s->cols; ++j) {
                const int8_t *c = rhs + ro + j * s->rhs_col_stride;
                int32_t acc = 0;
                for (int32_t k = 0; k < s->depth; ++k) {
                    acc += ((int32_t)a[k * s->lhs_depth_stride] + p->lhs_offset) *
                           ((int32_t)c[k * s->rhs_depth_stride] + p->rhs_offset);
                }
                acc = nn2c_add_offset(nn2c_mbqm(acc, p->multiplier, (int)p->shift), p->output_offset);
                o[i * s->cols + j] = (int8_t)nn2c_clamp_i32(acc, p->act_min, p->act_max);
            }
        }
    }
}

void nn2c_batch_matmul_s16(const nn2c_batch_matmul_q_params_t *p, const int16_t *lhs, const int16_t *rhs,
                           int16_t *out) {
    const nn2c_mm_shape_t *s = &p->s;
    const int32_t batches = nn2c_mm_batches(s);
    for (int32_t b = 0; b < batches; ++b) {
        int32_t lo, ro;
        nn2c_mm_batch_offsets(s, b, &lo, &ro);
        int16_t *o = out + b * s->rows * s->cols;
        for (int32_t i = 0; i < s->rows; ++i) {
            const int16_t *a = lhs + lo + i * s->lhs_row_stride;
            for (int32_t j = 0; j < s->cols; ++j) {
                const int16_t *c = rhs + ro + j * s->rhs_col_stride;
                int64_t acc = 0;
                for (int32_t k = 0; k < s->depth; ++k) {
                    acc += ((int64_t)a[k * s->lhs_depth_stride] + p->lhs_offset) *
                           ((int64_t)c[k * s->rhs_depth_stride] + p->rhs_offset);
                }
                int32_t v = nn2c_add_offset(nn2c_mbqm_i64(acc, p->multiplier, (int)p->shift), p->output_offset);
                o[i * s->cols + j] = (int16_t)nn2c_clamp_i32(v, p->act_min, p->act_max);
            }
        }
    }
}

void nn2c_mm_conv_f32(const nn2c_mm_conv_f32_params_t *p, const float *input, const float *filter,
                      const float *bias, float *output) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t depth = g->in_c / p->groups;
    const int32_t per_group = g->out_c / p->groups;
    for (int32_t b = 0; b < g->batches; ++b) {
        const float *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                float *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t oc = 0; oc < g->out_c; ++oc) {
                    const int32_t first = (oc / per_group) * depth;
                    float total = 0.0f;
                    for (int32_t fy = 0; fy < g->filter_h; ++fy) {
                        const int32_t iy = oy * g->stride_h - g->pad_h + fy * g->dilation_h;
                        if (iy < 0 || iy >= g->in_h) continue;
                        for (int32_t fx = 0; fx < g->filter_w; ++fx) {
                            const int32_t ix = ox * g->stride_w - g->pad_w + fx * g->dilation_w;
                            if (ix < 0 || ix >= g->in_w) continue;
                            const float *x = in_b + (iy * g->in_w + ix) * g->in_c + first;
                            const float *w = filter + ((oc * g->filter_h + fy) * g->filter_w + fx) * depth;
                            for (int32_t ic = 0; ic < depth; ++ic) {
                                total += x[ic] * w[ic];
                            }
                        }
                    }
                    const float bias_value = bias ? bias[oc] : 0.0f;
                    out[oc] = nn2c_clamp_f32(total + bias_value, p->act_min, p->act_max);
                }
            }
        }
    }
}

/* The input row / column that output row / column `o` reads through filter tap `f`, or -1. */
NN2C_INLINE int32_t nn2c_tconv_source(int32_t o, int32_t f, int32_t pad, int32_t stride, int32_t dilation,
                                      int32_t size) {
    const int32_t t = o + pad - f * dilation;
    if (t < 0 || t % stride != 0 || t / stride >= size) {
        return -1;
    }
    return t / stride;
}

/* Taps are visited with the filter index descending, i.e. the input index ascending: the order in
 * which TFLite's scatter loop (input y, x, channel) adds them to an output pixel. */
#define NN2C_TCONV_LOOP(ACC_T, IN_T, OFFSET)                                                           \
    for (int32_t fy = g->filter_h - 1; fy >= 0; --fy) {                                              \
        const int32_t iy = nn2c_tconv_source(oy, fy, g->pad_h, g->stride_h, g->dilation_h, g->in_h);  \
        if (iy < 0) continue;                                                                        \
        for (int32_t fx = g->filter_w - 1; fx >= 0; --fx) {                                          \
            const int32_t ix = nn2c_tconv_source(ox, fx, g->pad_w, g->stride_w, g->dilation_w, g->in_w); \
            if (ix < 0) continue;                                                                    \
            const IN_T *x = in_b + (iy * g->in_w + ix) * g->in_c + first;                            \
            for (int32_t ic = 0; ic < depth; ++ic) {                                                 \
                acc += ((ACC_T)x[ic] + (OFFSET)) *                                                   \
                       (ACC_T)filter[((oc * g->filter_h + fy) * g->filter_w + fx) * depth + ic];      \
            }                                                                                        \
        }                                                                                            \
    }

void nn2c_tconv_f32(const nn2c_tconv_f32_params_t *p, const float *input, const float *filter,
                    const float *bias, float *output) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t depth = g->in_c / p->groups;
    const int32_t per_group = g->out_c / p->groups;
    for (int32_t b = 0; b < g->batches; ++b) {
        const float *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                float *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t oc = 0; oc < g->out_c; ++oc) {
                    const int32_t first = (oc / per_group) * depth;
                    float acc = 0.0f;
                    NN2C_TCONV_LOOP(float, float, 0.0f)
                    if (bias) acc += bias[oc];
                    out[oc] = nn2c_clamp_f32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}

void nn2c_tconv_s8(const nn2c_tconv_q_params_t *p, const int8_t *input, const int8_t *filter,
                   const int32_t *bias, int8_t *output) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t depth = g->in_c / p->groups;
    const int32_t per_group = g->out_c / p->groups;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int8_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                int8_t *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t oc = 0; oc < g->out_c; ++oc) {
                    const int32_t first = (oc / per_group) * depth;
                    int32_t acc = 0;
                    NN2C_TCONV_LOOP(int32_t, int8_t, p->input_offset)
                    if (bias) acc += bias[oc];
                    acc = nn2c_add_offset(nn2c_mbqm(acc, p->multipliers[oc], (int)p->shifts[oc]), p->output_offset);
                    out[oc] = (int8_t)nn2c_clamp_i32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}

void nn2c_tconv_s16(const nn2c_tconv_q_params_t *p, const int16_t *input, const int8_t *filter,
                    const int64_t *bias, int16_t *output) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t depth = g->in_c / p->groups;
    const int32_t per_group = g->out_c / p->groups;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int16_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                int16_t *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t oc = 0; oc < g->out_c; ++oc) {
                    const int32_t first = (oc / per_group) * depth;
                    int64_t acc = 0;
                    NN2C_TCONV_LOOP(int64_t, int16_t, 0)
                    if (bias) acc += bias[oc];
                    const int32_t v = nn2c_add_offset(nn2c_mbqm_i64(acc, p->multipliers[oc], (int)p->shifts[oc]), p->output_offset);
                    out[oc] = (int16_t)nn2c_clamp_i32(v, p->act_min, p->act_max);
                }
            }
        }
    }
}

/* ---- DET --------------------------------------------------------------------------------------- */

void nn2c_det_f32(int32_t count, int32_t n, void *work, const float *input, float *output) {
    double *a = (double *)work;
    const size_t area = (size_t)n * (size_t)n;
    for (int32_t m = 0; m < count; ++m) {
        for (size_t k = 0; k < area; ++k) {
            a[k] = (double)input[(size_t)m * area + k];
        }
        double det = 1.0;
        for (int32_t col = 0; col < n && det != 0.0; ++col) {
            int32_t pivot = col;
            for (int32_t r = col + 1; r < n; ++r) {
                if (fabs(a[(size_t)r * (size_t)n + (size_t)col]) > fabs(a[(size_t)pivot * (size_t)n + (size_t)col])) {
                    pivot = r;
                }
            }
            if (pivot != col) {
                for (int32_t k = 0; k < n; ++k) {
                    const double t = a[(size_t)col * (size_t)n + (size_t)k];
                    a[(size_t)col * (size_t)n + (size_t)k] = a[(size_t)pivot * (size_t)n + (size_t)k];
                    a[(size_t)pivot * (size_t)n + (size_t)k] = t;
                }
                det = -det;
            }
            const double d = a[(size_t)col * (size_t)n + (size_t)col];
            det *= d;
            if (d == 0.0) {
                break; /* singular (also the NaN-free way out: no division by the zero pivot) */
            }
            for (int32_t r = col + 1; r < n; ++r) {
                const double f = a[(size_t)r * (size_t)n + (size_t)col] / d;
                for (int32_t k = col; k < n; ++k) {
                    a[(size_t)r * (size_t)n + (size_t)k] -= f * a[(size_t)col * (size_t)n + (size_t)k];
                }
            }
        }
        output[m] = (float)det;
    }
}

/* ---- CAUSAL_CONV ------------------------------------------------------------------------------- */

static float nn2c_causal_tap(const float *past, const float *input, int32_t keep, int32_t i) {
    if (i < keep) {
        return past != NULL ? past[i] : 0.0f;
    }
    return input[i - keep];
}

void nn2c_causal_conv_f32(const nn2c_causal_conv_params_t *p, const float *input, const float *weight,
                          const float *bias, const float *past, float *output, float *present) {
    const int32_t keep = p->kernel - 1;
    for (int32_t b = 0; b < p->batch; ++b) {
        for (int32_t c = 0; c < p->channels; ++c) {
            const size_t row = (size_t)b * (size_t)p->channels + (size_t)c;
            const float *x = input + row * (size_t)p->length;
            const float *s = past != NULL ? past + row * (size_t)keep : NULL;
            const float *w = weight + (size_t)c * (size_t)p->kernel;
            float *y = output + row * (size_t)p->length;
            for (int32_t t = 0; t < p->length; ++t) {
                float acc = bias != NULL ? bias[c] : 0.0f;
                for (int32_t j = 0; j < p->kernel; ++j) {
                    acc += w[j] * nn2c_causal_tap(s, x, keep, t + j);
                }
                y[t] = p->silu ? acc / (1.0f + expf(-acc)) : acc;
            }
            for (int32_t i = 0; i < keep; ++i) {
                present[row * (size_t)keep + (size_t)i] = nn2c_causal_tap(s, x, keep, p->length + i);
            }
        }
    }
}

/* ---- DEFORM_CONV ------------------------------------------------------------------------------- */

/* Bilinear read of an H x W plane at (h, w); each corner outside the plane reads 0. NaN and far
 * coordinates read 0 (no conversion of an out-of-range double to an integer). */
static float nn2c_deform_sample(const float *plane, int32_t height, int32_t width, double h, double w) {
    if (!(h > -1.0 && h < (double)height && w > -1.0 && w < (double)width)) {
        return 0.0f;
    }
    const double h0 = floor(h), w0 = floor(w);
    const int32_t r0 = (int32_t)h0, c0 = (int32_t)w0;
    double acc = 0.0;
    for (int32_t dr = 0; dr < 2; ++dr) {
        for (int32_t dc = 0; dc < 2; ++dc) {
            const int32_t r = r0 + dr, c = c0 + dc;
            if (r >= 0 && r < height && c >= 0 && c < width) {
                const double weight = (1.0 - fabs(h - (h0 + dr))) * (1.0 - fabs(w - (w0 + dc)));
                acc += weight * (double)plane[(size_t)r * (size_t)width + (size_t)c];
            }
        }
    }
    return (float)acc;
}

void nn2c_deform_conv_f32(const nn2c_deform_conv_params_t *p, const float *input, const float *weight,
                          const float *offset, const float *bias, const float *mask, float *output) {
    const int32_t cpg = p->channels / p->group, opg = p->out_channels / p->group;
    const int32_t per_offset_group = p->channels / p->offset_group;
    const int32_t taps = p->kernel_h * p->kernel_w;
    const size_t positions = (size_t)p->out_height * (size_t)p->out_width;
    for (int32_t n = 0; n < p->batch; ++n) {
        for (int32_t o = 0; o < p->out_channels; ++o) {
            float *y = output + ((size_t)n * (size_t)p->out_channels + (size_t)o) * positions;
            const int32_t g = o / opg;
            for (size_t at = 0; at < positions; ++at) {
                const int32_t i = (int32_t)(at / (size_t)p->out_width), j = (int32_t)(at % (size_t)p->out_width);
                float acc = bias != NULL ? bias[o] : 0.0f;
                for (int32_t cg = 0; cg < cpg; ++cg) {
                    const int32_t c = g * cpg + cg;
                    const int32_t og = c / per_offset_group;
                    const float *plane = input + ((size_t)n * (size_t)p->channels + (size_t)c) * (size_t)p->height *
                                                     (size_t)p->width;
                    for (int32_t t = 0; t < taps; ++t) {
                        const int32_t a = t / p->kernel_w, b = t % p->kernel_w;
                        const size_t base = (size_t)n * (size_t)p->offset_group + (size_t)og;
                        const size_t off = ((base * (size_t)taps + (size_t)t) * 2u) * positions + at;
                        const double h = (double)(i * p->stride_h - p->pad_top + a * p->dilation_h) + (double)offset[off];
                        const double w = (double)(j * p->stride_w - p->pad_left + b * p->dilation_w) +
                                         (double)offset[off + positions];
                        float v = nn2c_deform_sample(plane, p->height, p->width, h, w);
                        if (mask != NULL) {
                            v *= mask[(base * (size_t)taps + (size_t)t) * positions + at];
                        }
                        acc += weight[(((size_t)o * (size_t)cpg + (size_t)cg) * (size_t)taps) + (size_t)t] * v;
                    }
                }
                y[at] = acc;
            }
        }
    }
}
