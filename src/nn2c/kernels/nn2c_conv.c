/* CONV_2D and DEPTHWISE_CONV_2D kernels.
 *
 * Integer kernels: acc = sum over in-image taps of w * (x + input_offset) (+ bias), requantised with
 * the per-channel fixed-point multiplier, offset and clamped: TFLite's reference arithmetic. The
 * order of integer additions does not change the result, so the inner loops run over contiguous
 * memory in fixed blocks of 16 (a fixed trip count lets gcc -O2 vectorise them).
 * Float kernels keep each output's reference summation order (filter_y, filter_x, input channel)
 * and vectorise across output channels instead, so results equal reference_ops' bit for bit.
 * Padding taps are skipped by clipping the filter window to the image, as the reference's
 * "is_point_inside_image" test does.
 */
#include "nn2c_conv.h"

/* The geometry's width this build has (nn2c_conv.h): a model reads the symbol of its own once an inference, so
 * that linking it with kernels built for the other width fails, naming it. */
#if defined(NN2C_WIDE_GEOMETRY)
const uint8_t nn2c_kernel_geometry_wide = 1;
#else
const uint8_t nn2c_kernel_geometry_narrow = 1;
#endif

/* Filter taps [*first, *end) whose coordinate origin + dilation * tap lies in [0, size). */
static void nn2c_conv_taps(int32_t origin, int32_t dilation, int32_t size, int32_t taps, int32_t *first,
                           int32_t *end) {
    int32_t f0 = origin < 0 ? (-origin + dilation - 1) / dilation : 0;
    int32_t limit = size - origin;
    int32_t f1 = limit <= 0 ? 0 : (limit - 1) / dilation + 1;
    if (f1 > taps) f1 = taps;
    if (f0 > f1) f0 = f1;
    *first = f0;
    *end = f1;
}

/* sum(w[i] * (x[i] + offset)); x + offset fits int16 for int8 data and |offset| <= 128. */
static int32_t nn2c_conv_dot_s8(const int8_t *w, const int8_t *x, int32_t n, int32_t offset) {
    const int16_t off = (int16_t)offset;
    int32_t acc = 0;
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        int32_t s = 0;
        for (int32_t k = 0; k < 16; ++k) {
            int16_t xv = (int16_t)(x[i + k] + off);
            s += (int32_t)w[i + k] * (int32_t)xv;
        }
        acc += s;
    }
    for (; i < n; ++i) {
        acc += (int32_t)w[i] * ((int32_t)x[i] + offset);
    }
    return acc;
}

/* Four dot products against the same x (1x1 convolutions: x is loaded once for 4 channels). */
static void nn2c_conv_dot4_s8(const int8_t *w, int32_t w_stride, const int8_t *x, int32_t n, int32_t offset,
                              int32_t out[4]) {
    const int16_t off = (int16_t)offset;
    const int8_t *w0 = w, *w1 = w + w_stride, *w2 = w + 2 * w_stride, *w3 = w + 3 * w_stride;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int32_t k = 0; k < 16; ++k) {
            int32_t xv = (int32_t)(int16_t)(x[i + k] + off);
            s0 += (int32_t)w0[i + k] * xv;
            s1 += (int32_t)w1[i + k] * xv;
            s2 += (int32_t)w2[i + k] * xv;
            s3 += (int32_t)w3[i + k] * xv;
        }
        a0 += s0;
        a1 += s1;
        a2 += s2;
        a3 += s3;
    }
    for (; i < n; ++i) {
        int32_t xv = (int32_t)x[i] + offset;
        a0 += (int32_t)w0[i] * xv;
        a1 += (int32_t)w1[i] * xv;
        a2 += (int32_t)w2[i] * xv;
        a3 += (int32_t)w3[i] * xv;
    }
    out[0] = a0;
    out[1] = a1;
    out[2] = a2;
    out[3] = a3;
}

/* sum(w[i] * x[i]) for int16 activations, in int64 (blocks of 16 products fit int32). */
static int64_t nn2c_conv_dot_s16(const int8_t *w, const int16_t *x, int32_t n) {
    int64_t acc = 0;
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        int32_t s = 0;
        for (int32_t k = 0; k < 16; ++k) {
            s += (int32_t)w[i + k] * (int32_t)x[i + k];
        }
        acc += s;
    }
    for (; i < n; ++i) {
        acc += (int32_t)w[i] * (int32_t)x[i];
    }
    return acc;
}

/* The window of one output pixel: origins and the in-image tap ranges. */
typedef struct {
    int32_t iy0, ix0, fy0, fy1, fx0, fx1;
} nn2c_conv_window_t;

static nn2c_conv_window_t nn2c_conv_window(const nn2c_conv_geom_t *g, int32_t oy, int32_t ox) {
    nn2c_conv_window_t win;
    win.iy0 = oy * g->stride_h - g->pad_h;
    win.ix0 = ox * g->stride_w - g->pad_w;
    nn2c_conv_taps(win.iy0, g->dilation_h, g->in_h, g->filter_h, &win.fy0, &win.fy1);
    nn2c_conv_taps(win.ix0, g->dilation_w, g->in_w, g->filter_w, &win.fx0, &win.fx1);
    return win;
}

/* Integer accumulator of one CONV_2D output: in points at the group's first channel of the batch,
 * w at the output channel's filter (OHWI); fic = filter input depth. When the filter's rows are
 * contiguous in the input too (dilation_w 1, one group), a row of taps is one dot product. */
static int32_t nn2c_conv_acc_s8(const nn2c_conv_geom_t *g, int32_t fic, int32_t contiguous, const int8_t *in,
                                const int8_t *w, const nn2c_conv_window_t *win, int32_t offset) {
    int32_t acc = 0;
    for (int32_t fy = win->fy0; fy < win->fy1; ++fy) {
        const int32_t iy = win->iy0 + g->dilation_h * fy;
        const int8_t *row = in + iy * g->in_w * g->in_c;
        const int8_t *wrow = w + fy * g->filter_w * fic;
        if (contiguous) {
            acc += nn2c_conv_dot_s8(wrow + win->fx0 * fic, row + (win->ix0 + win->fx0) * g->in_c,
                                    (win->fx1 - win->fx0) * fic, offset);
        } else {
            for (int32_t fx = win->fx0; fx < win->fx1; ++fx) {
                const int32_t ix = win->ix0 + g->dilation_w * fx;
                acc += nn2c_conv_dot_s8(wrow + fx * fic, row + ix * g->in_c, fic, offset);
            }
        }
    }
    return acc;
}

static int8_t nn2c_conv_requant_s8(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                                   int32_t act_min, int32_t act_max) {
    acc = nn2c_add_offset(nn2c_mbqm(acc, multiplier, (int)shift), output_offset);
    return (int8_t)nn2c_clamp_i32(acc, act_min, act_max);
}

/* 1x1 filter, stride 1, no padding, one group: a matrix product, 4 output channels at a time. */
static int nn2c_conv_is_pointwise(const nn2c_conv_geom_t *g, int32_t groups) {
    return g->filter_h == 1 && g->filter_w == 1 && g->stride_h == 1 && g->stride_w == 1 && g->pad_h == 0 &&
           g->pad_w == 0 && groups == 1 && g->in_h == g->out_h && g->in_w == g->out_w;
}

static void nn2c_conv_s8_pointwise(const nn2c_conv_s8_params_t *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t pixels = g->batches * g->out_h * g->out_w;
    const int32_t depth = g->in_c;
    for (int32_t px = 0; px < pixels; ++px) {
        const int8_t *x = input + px * depth;
        int8_t *out = output + px * g->out_c;
        int32_t oc = 0;
        for (; oc + 4 <= g->out_c; oc += 4) {
            int32_t acc[4];
            nn2c_conv_dot4_s8(filter + oc * depth, depth, x, depth, p->input_offset, acc);
            for (int32_t k = 0; k < 4; ++k) {
                int32_t a = acc[k] + (bias ? bias[oc + k] : 0);
                out[oc + k] = nn2c_conv_requant_s8(a, p->multipliers[oc + k], p->shifts[oc + k], p->output_offset,
                                                   p->act_min, p->act_max);
            }
        }
        for (; oc < g->out_c; ++oc) {
            int32_t a = nn2c_conv_dot_s8(filter + oc * depth, x, depth, p->input_offset) + (bias ? bias[oc] : 0);
            out[oc] = nn2c_conv_requant_s8(a, p->multipliers[oc], p->shifts[oc], p->output_offset, p->act_min,
                                           p->act_max);
        }
    }
}

void nn2c_conv_s8(const nn2c_conv_s8_params_t *p, const int8_t *input, const int8_t *filter,
                  const int32_t *bias, int8_t *output) {
    const nn2c_conv_geom_t *g = &p->g;
    if (nn2c_conv_is_pointwise(g, p->groups)) {
        nn2c_conv_s8_pointwise(p, input, filter, bias, output);
        return;
    }
    const int32_t fic = g->in_c / p->groups;
    const int32_t per_group = g->out_c / p->groups;
    const int32_t contiguous = g->dilation_w == 1 && p->groups == 1;
    const int32_t filter_size = g->filter_h * g->filter_w * fic;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int8_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const nn2c_conv_window_t win = nn2c_conv_window(g, oy, ox);
                int8_t *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t grp = 0; grp < p->groups; ++grp) {
                    for (int32_t j = 0; j < per_group; ++j) {
                        const int32_t oc = grp * per_group + j;
                        int32_t acc = nn2c_conv_acc_s8(g, fic, contiguous, in_b + grp * fic, filter + oc * filter_size,
                                                       &win, p->input_offset);
                        if (bias) acc += bias[oc];
                        out[oc] = nn2c_conv_requant_s8(acc, p->multipliers[oc], p->shifts[oc], p->output_offset,
                                                       p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}

/* int16 x int8 CONV_2D accumulator (no offsets: int16 quantization is symmetric). */
static int64_t nn2c_conv_acc_s16(const nn2c_conv_geom_t *g, int32_t fic, int32_t contiguous, const int16_t *in,
                                 const int8_t *w, const nn2c_conv_window_t *win) {
    int64_t acc = 0;
    for (int32_t fy = win->fy0; fy < win->fy1; ++fy) {
        const int32_t iy = win->iy0 + g->dilation_h * fy;
        const int16_t *row = in + iy * g->in_w * g->in_c;
        const int8_t *wrow = w + fy * g->filter_w * fic;
        if (contiguous) {
            acc += nn2c_conv_dot_s16(wrow + win->fx0 * fic, row + (win->ix0 + win->fx0) * g->in_c,
                                     (win->fx1 - win->fx0) * fic);
        } else {
            for (int32_t fx = win->fx0; fx < win->fx1; ++fx) {
                const int32_t ix = win->ix0 + g->dilation_w * fx;
                acc += nn2c_conv_dot_s16(wrow + fx * fic, row + ix * g->in_c, fic);
            }
        }
    }
    return acc;
}

/* TFLite Micro's 16x8 convolution: with an int64 bias or none, a 64-bit accumulator and the
 * 64-bit MultiplyByQuantizedMultiplier; with an int32 bias, the int32 instantiation (32-bit
 * accumulator, 32-bit MultiplyByQuantizedMultiplier). Checked against TFLite Micro. */
static void nn2c_conv_s16(const nn2c_conv_s16_params_t *p, const int16_t *input, const int8_t *filter,
                          const int64_t *bias64, const int32_t *bias32, int16_t *output) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t fic = g->in_c / p->groups;
    const int32_t per_group = g->out_c / p->groups;
    const int32_t contiguous = g->dilation_w == 1 && p->groups == 1;
    const int32_t filter_size = g->filter_h * g->filter_w * fic;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int16_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const nn2c_conv_window_t win = nn2c_conv_window(g, oy, ox);
                int16_t *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t grp = 0; grp < p->groups; ++grp) {
                    for (int32_t j = 0; j < per_group; ++j) {
                        const int32_t oc = grp * per_group + j;
                        int64_t acc = nn2c_conv_acc_s16(g, fic, contiguous, in_b + grp * fic,
                                                        filter + oc * filter_size, &win);
                        int32_t scaled;
                        if (bias32) {
                            /* int32 accumulator: the sum wraps modulo 2^32 as the reference's does */
                            int32_t acc32 = (int32_t)(uint32_t)((uint64_t)acc + (uint64_t)(int64_t)bias32[oc]);
                            scaled = nn2c_mbqm(acc32, p->multipliers[oc], (int)p->shifts[oc]);
                        } else {
                            if (bias64) acc += bias64[oc];
                            scaled = nn2c_mbqm_i64(acc, p->multipliers[oc], (int)p->shifts[oc]);
                        }
                        out[oc] = (int16_t)nn2c_clamp_i32(scaled, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}

void nn2c_conv_s16_b64(const nn2c_conv_s16_params_t *p, const int16_t *input, const int8_t *filter,
                       const int64_t *bias, int16_t *output) {
    nn2c_conv_s16(p, input, filter, bias, NULL, output);
}

void nn2c_conv_s16_b32(const nn2c_conv_s16_params_t *p, const int16_t *input, const int8_t *filter,
                       const int32_t *bias, int16_t *output) {
    nn2c_conv_s16(p, input, filter, NULL, bias, output);
}

#define NN2C_CONV_LANES 8

void nn2c_conv_f32(const nn2c_conv_f32_params_t *p, const float *input, const float *packed_filter,
                   const float *bias, float *output) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t fic = g->in_c / p->groups;
    const int32_t per_group = g->out_c / p->groups;
    const int32_t blocks = (per_group + NN2C_CONV_LANES - 1) / NN2C_CONV_LANES;
    const int32_t block_size = g->filter_h * g->filter_w * fic * NN2C_CONV_LANES;
    for (int32_t b = 0; b < g->batches; ++b) {
        const float *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const nn2c_conv_window_t win = nn2c_conv_window(g, oy, ox);
                float *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t grp = 0; grp < p->groups; ++grp) {
                    for (int32_t blk = 0; blk < blocks; ++blk) {
                        const float *w_blk = packed_filter + (grp * blocks + blk) * block_size;
                        float acc[NN2C_CONV_LANES];
                        for (int32_t k = 0; k < NN2C_CONV_LANES; ++k) acc[k] = 0.0f;
                        /* each lane is one output channel summed in the reference's order */
                        for (int32_t fy = win.fy0; fy < win.fy1; ++fy) {
                            const int32_t iy = win.iy0 + g->dilation_h * fy;
                            for (int32_t fx = win.fx0; fx < win.fx1; ++fx) {
                                const int32_t ix = win.ix0 + g->dilation_w * fx;
                                const float *x = in_b + (iy * g->in_w + ix) * g->in_c + grp * fic;
                                const float *w = w_blk + (fy * g->filter_w + fx) * fic * NN2C_CONV_LANES;
                                for (int32_t ic = 0; ic < fic; ++ic) {
                                    const float xv = x[ic];
                                    for (int32_t k = 0; k < NN2C_CONV_LANES; ++k) {
                                        acc[k] += xv * w[ic * NN2C_CONV_LANES + k];
                                    }
                                }
                            }
                        }
                        const int32_t first = grp * per_group + blk * NN2C_CONV_LANES;
                        const int32_t lanes = NN2C_MIN(NN2C_CONV_LANES, per_group - blk * NN2C_CONV_LANES);
                        for (int32_t k = 0; k < lanes; ++k) {
                            const float bias_value = bias ? bias[first + k] : 0.0f;
                            out[first + k] = nn2c_clamp_f32(acc[k] + bias_value, p->act_min, p->act_max);
                        }
                    }
                }
            }
        }
    }
}

/* --- hybrid: on-the-fly input quantization (TFLite tensor_utils) ----------------------------- */

/* std::round on float: halves away from zero (|x| < 2^31). */
static float nn2c_conv_roundf(float x) {
    float t = (float)(int32_t)x;
    float d = x - t; /* exact: the fraction of x */
    if (d >= 0.5f) {
        t += 1.0f;
    } else if (d <= -0.5f) {
        t -= 1.0f;
    }
    return t;
}

static double nn2c_conv_round(double x) {
    double t = (double)(int32_t)x;
    double d = x - t;
    if (d >= 0.5) {
        t += 1.0;
    } else if (d <= -0.5) {
        t -= 1.0;
    }
    return t;
}

static int32_t nn2c_conv_round_clamped(float v, float lo, float hi) {
    if (!(v == v)) return 0; /* NaN */
    v = nn2c_clamp_f32(v, lo, hi);
    return (int32_t)nn2c_conv_roundf(v);
}

static float nn2c_conv_absf(float x) {
    return x < 0.0f ? -x : x;
}

static void nn2c_conv_minmax(const float *x, int32_t n, float *min_value, float *max_value) {
    float lo = x[0], hi = x[0];
    for (int32_t i = 1; i < n; ++i) {
        if (x[i] < lo) lo = x[i];
        if (!(x[i] < hi)) hi = x[i];
    }
    *min_value = lo;
    *max_value = hi;
}

/* PortableSymmetricQuantizeFloats: q = round(x * 127 / max|x|) in [-127, 127]. */
static float nn2c_conv_quantize_symmetric(const float *x, int32_t n, int8_t *q) {
    float lo, hi;
    nn2c_conv_minmax(x, n, &lo, &hi);
    const float a = nn2c_conv_absf(lo), c = nn2c_conv_absf(hi);
    const float range = a < c ? c : a;
    if (range == 0.0f) {
        for (int32_t i = 0; i < n; ++i) q[i] = 0;
        return 1.0f;
    }
    const float inv = 127.0f / range;
    for (int32_t i = 0; i < n; ++i) {
        int32_t v = nn2c_conv_round_clamped(x[i] * inv, -128.0f, 128.0f);
        q[i] = (int8_t)nn2c_clamp_i32(v, -127, 127);
    }
    return range / 127.0f;
}

/* TFLite's AsymmetricQuantizeFloats: scale and nudged zero point from [min(0, x), max(0, x)],
 * q = round(zero_point + x / scale) in [-128, 127]. Returns the scale, *zero_point set. */
static float nn2c_conv_quantize_asymmetric(const float *x, int32_t n, int8_t *q, int32_t *zero_point) {
    float lo, hi;
    nn2c_conv_minmax(x, n, &lo, &hi);
    const float rmin_f = lo < 0.0f ? lo : 0.0f;
    const float rmax_f = hi > 0.0f ? hi : 0.0f;
    const double rmin = (double)rmin_f, rmax = (double)rmax_f;
    if (rmin_f == rmax_f) {
        for (int32_t i = 0; i < n; ++i) q[i] = 0;
        *zero_point = 0;
        return 1.0f;
    }
    const double qmin = -128.0, qmax = 127.0;
    /* the range is subtracted in float, then divided in double (checked against LiteRT) */
    const double scale = (double)(rmax_f - rmin_f) / (qmax - qmin);
    const double zp_from_min = qmin - rmin / scale;
    const double zp_from_max = qmax - rmax / scale;
    const double err_min = 128.0 + (rmin / scale < 0.0 ? -(rmin / scale) : rmin / scale);
    const double err_max = 127.0 + (rmax / scale < 0.0 ? -(rmax / scale) : rmax / scale);
    const double zp = err_min < err_max ? zp_from_min : zp_from_max;
    int32_t nudged;
    if (zp <= qmin) {
        nudged = -128;
    } else if (zp >= qmax) {
        nudged = 127;
    } else {
        nudged = (int32_t)nn2c_conv_round(zp);
    }
    const float scaling_factor = (float)scale;
    const float inv = 1.0f / scaling_factor;
    const float offset = (float)nudged;
    for (int32_t i = 0; i < n; ++i) {
        int32_t v = nn2c_conv_round_clamped(offset + x[i] * inv, -129.0f, 128.0f);
        q[i] = (int8_t)nn2c_clamp_i32(v, -128, 127);
    }
    *zero_point = nudged;
    return scaling_factor;
}

/* Quantize one batch; returns the input scale and sets the offset to add to q (-zero point). */
static float nn2c_conv_hybrid_quantize(const nn2c_conv_hybrid_params_t *p, const float *x, int32_t n, int8_t *q,
                                       int32_t *input_offset) {
    if (p->asymmetric) {
        int32_t zp;
        float s = nn2c_conv_quantize_asymmetric(x, n, q, &zp);
        *input_offset = -zp;
        return s;
    }
    *input_offset = 0;
    return nn2c_conv_quantize_symmetric(x, n, q);
}

void nn2c_conv_hybrid(const nn2c_conv_hybrid_params_t *p, const float *input, const int8_t *filter,
                      const float *bias, float *output, void *scratch) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t fic = g->in_c / p->groups;
    const int32_t per_group = g->out_c / p->groups;
    const int32_t contiguous = g->dilation_w == 1 && p->groups == 1;
    const int32_t filter_size = g->filter_h * g->filter_w * fic;
    const int32_t input_size = g->in_h * g->in_w * g->in_c;
    int8_t *q = (int8_t *)scratch;
    for (int32_t b = 0; b < g->batches; ++b) {
        int32_t offset;
        const float input_scale = nn2c_conv_hybrid_quantize(p, input + b * input_size, input_size, q, &offset);
        /* per-tensor path (optimized_ops::HybridConv): one factor input_scale * filter_scale */
        const float batch_factor = input_scale * p->filter_scales[0];
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const nn2c_conv_window_t win = nn2c_conv_window(g, oy, ox);
                float *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t grp = 0; grp < p->groups; ++grp) {
                    for (int32_t j = 0; j < per_group; ++j) {
                        const int32_t oc = grp * per_group + j;
                        const int32_t acc = nn2c_conv_acc_s8(g, fic, contiguous, q + grp * fic,
                                                             filter + oc * filter_size, &win, offset);
                        float value;
                        if (p->asymmetric) {
                            /* reference_ops::HybridConvPerChannel: acc * channel scale * input scale */
                            value = (float)acc * p->filter_scales[oc] * input_scale;
                        } else {
                            /* the gemm result is accumulated into a zeroed output */
                            value = 0.0f + (float)acc * batch_factor;
                        }
                        if (bias) value += bias[oc];
                        out[oc] = nn2c_clamp_f32(value, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}

/* --- depthwise ------------------------------------------------------------------------------- */

#define NN2C_DW_LANES 16

/* Accumulators of 16 consecutive channels (depth multiplier 1) at one output pixel;
 * in and w point at the block's first channel (of the batch / of the 1HWO filter). */
static void nn2c_dwconv_acc16_s8(int32_t out[NN2C_DW_LANES], const nn2c_conv_geom_t *g, const int8_t *in,
                                 const int8_t *w, const nn2c_conv_window_t *win, int32_t offset) {
    const int16_t off = (int16_t)offset;
    int32_t acc[NN2C_DW_LANES];
    for (int32_t k = 0; k < NN2C_DW_LANES; ++k) acc[k] = 0;
    for (int32_t fy = win->fy0; fy < win->fy1; ++fy) {
        const int32_t iy = win->iy0 + g->dilation_h * fy;
        for (int32_t fx = win->fx0; fx < win->fx1; ++fx) {
            const int32_t ix = win->ix0 + g->dilation_w * fx;
            const int8_t *x = in + (iy * g->in_w + ix) * g->in_c;
            const int8_t *wp = w + (fy * g->filter_w + fx) * g->out_c;
            for (int32_t k = 0; k < NN2C_DW_LANES; ++k) {
                int16_t xv = (int16_t)(x[k] + off);
                acc[k] += (int32_t)wp[k] * (int32_t)xv;
            }
        }
    }
    for (int32_t k = 0; k < NN2C_DW_LANES; ++k) out[k] = acc[k];
}

/* One depthwise accumulator: in points at the input channel, w at the output channel. */
static int32_t nn2c_dwconv_acc1_s8(const nn2c_conv_geom_t *g, const int8_t *in, const int8_t *w,
                                   const nn2c_conv_window_t *win, int32_t offset) {
    int32_t acc = 0;
    for (int32_t fy = win->fy0; fy < win->fy1; ++fy) {
        const int32_t iy = win->iy0 + g->dilation_h * fy;
        for (int32_t fx = win->fx0; fx < win->fx1; ++fx) {
            const int32_t ix = win->ix0 + g->dilation_w * fx;
            const int32_t xv = (int32_t)in[(iy * g->in_w + ix) * g->in_c] + offset;
            acc += (int32_t)w[(fy * g->filter_w + fx) * g->out_c] * xv;
        }
    }
    return acc;
}

/* Calls emit(ctx, oc, acc) for every output channel of one pixel, with integer accumulators. */
typedef void (*nn2c_dwconv_emit_fn)(const void *ctx, int32_t oc, int32_t acc);

NN2C_INLINE void nn2c_dwconv_pixel_s8(const nn2c_conv_geom_t *g, int32_t depth_multiplier, const int8_t *in_b,
                                 const int8_t *filter, const nn2c_conv_window_t *win, int32_t offset,
                                 nn2c_dwconv_emit_fn emit, const void *ctx) {
    if (depth_multiplier == 1) {
        int32_t c = 0;
        for (; c + NN2C_DW_LANES <= g->out_c; c += NN2C_DW_LANES) {
            int32_t acc[NN2C_DW_LANES];
            nn2c_dwconv_acc16_s8(acc, g, in_b + c, filter + c, win, offset);
            for (int32_t k = 0; k < NN2C_DW_LANES; ++k) emit(ctx, c + k, acc[k]);
        }
        for (; c < g->out_c; ++c) {
            emit(ctx, c, nn2c_dwconv_acc1_s8(g, in_b + c, filter + c, win, offset));
        }
        return;
    }
    for (int32_t ic = 0; ic < g->in_c; ++ic) {
        for (int32_t m = 0; m < depth_multiplier; ++m) {
            const int32_t oc = ic * depth_multiplier + m;
            emit(ctx, oc, nn2c_dwconv_acc1_s8(g, in_b + ic, filter + oc, win, offset));
        }
    }
}

typedef struct {
    const nn2c_dwconv_s8_params_t *p;
    const int32_t *bias;
    int8_t *out;
} nn2c_dwconv_s8_emit_t;

static void nn2c_dwconv_s8_emit(const void *ctx, int32_t oc, int32_t acc) {
    const nn2c_dwconv_s8_emit_t *e = (const nn2c_dwconv_s8_emit_t *)ctx;
    const nn2c_dwconv_s8_params_t *p = e->p;
    if (e->bias) acc += e->bias[oc];
    e->out[oc] = nn2c_conv_requant_s8(acc, p->multipliers[oc], p->shifts[oc], p->output_offset, p->act_min,
                                      p->act_max);
}

void nn2c_dwconv_s8(const nn2c_dwconv_s8_params_t *p, const int8_t *input, const int8_t *filter,
                    const int32_t *bias, int8_t *output) {
    const nn2c_conv_geom_t *g = &p->g;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int8_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const nn2c_conv_window_t win = nn2c_conv_window(g, oy, ox);
                nn2c_dwconv_s8_emit_t e;
                e.p = p;
                e.bias = bias;
                e.out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                nn2c_dwconv_pixel_s8(g, p->depth_multiplier, in_b, filter, &win, p->input_offset,
                                     nn2c_dwconv_s8_emit, &e);
            }
        }
    }
}

typedef struct {
    const nn2c_conv_hybrid_params_t *p;
    const float *bias;
    float *out;
    float input_scale;
} nn2c_dwconv_hybrid_emit_t;

static void nn2c_dwconv_hybrid_emit(const void *ctx, int32_t oc, int32_t acc) {
    const nn2c_dwconv_hybrid_emit_t *e = (const nn2c_dwconv_hybrid_emit_t *)ctx;
    /* reference_integer_ops::DepthwiseConvHybridPerChannel: acc * (channel scale * input scale) */
    float value = (float)acc * (e->p->filter_scales[oc] * e->input_scale);
    if (e->bias) value += e->bias[oc];
    e->out[oc] = nn2c_clamp_f32(value, e->p->act_min, e->p->act_max);
}

void nn2c_dwconv_hybrid(const nn2c_conv_hybrid_params_t *p, const float *input, const int8_t *filter,
                        const float *bias, float *output, void *scratch) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t input_size = g->in_h * g->in_w * g->in_c;
    int8_t *q = (int8_t *)scratch;
    for (int32_t b = 0; b < g->batches; ++b) {
        int32_t offset;
        const float input_scale = nn2c_conv_hybrid_quantize(p, input + b * input_size, input_size, q, &offset);
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const nn2c_conv_window_t win = nn2c_conv_window(g, oy, ox);
                nn2c_dwconv_hybrid_emit_t e;
                e.p = p;
                e.bias = bias;
                e.out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                e.input_scale = input_scale;
                nn2c_dwconv_pixel_s8(g, p->depth_multiplier, q, filter, &win, offset, nn2c_dwconv_hybrid_emit, &e);
            }
        }
    }
}

void nn2c_dwconv_s16(const nn2c_dwconv_s16_params_t *p, const int16_t *input, const int8_t *filter,
                     const int64_t *bias, int16_t *output) {
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t mult = p->depth_multiplier;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int16_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const nn2c_conv_window_t win = nn2c_conv_window(g, oy, ox);
                int16_t *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                for (int32_t oc = 0; oc < g->out_c; ++oc) {
                    const int32_t ic = oc / mult;
                    int64_t acc = 0;
                    for (int32_t fy = win.fy0; fy < win.fy1; ++fy) {
                        const int32_t iy = win.iy0 + g->dilation_h * fy;
                        for (int32_t fx = win.fx0; fx < win.fx1; ++fx) {
                            const int32_t ix = win.ix0 + g->dilation_w * fx;
                            acc += (int64_t)filter[(fy * g->filter_w + fx) * g->out_c + oc] *
                                   (int64_t)in_b[(iy * g->in_w + ix) * g->in_c + ic];
                        }
                    }
                    if (bias) acc += bias[oc];
                    int32_t scaled = nn2c_mbqm_i64(acc, p->multipliers[oc], (int)p->shifts[oc]);
                    out[oc] = (int16_t)nn2c_clamp_i32(scaled, p->act_min, p->act_max);
                }
            }
        }
    }
}

/* One float depthwise output in the reference's order (filter_y, filter_x). */
static float nn2c_dwconv_acc1_f32(const nn2c_conv_geom_t *g, const float *in, const float *w,
                                  const nn2c_conv_window_t *win) {
    float total = 0.0f;
    for (int32_t fy = win->fy0; fy < win->fy1; ++fy) {
        const int32_t iy = win->iy0 + g->dilation_h * fy;
        for (int32_t fx = win->fx0; fx < win->fx1; ++fx) {
            const int32_t ix = win->ix0 + g->dilation_w * fx;
            total += in[(iy * g->in_w + ix) * g->in_c] * w[(fy * g->filter_w + fx) * g->out_c];
        }
    }
    return total;
}

void nn2c_dwconv_f32(const nn2c_dwconv_f32_params_t *p, const float *input, const float *filter,
                     const float *bias, float *output) {
    const nn2c_conv_geom_t *g = &p->g;
    for (int32_t b = 0; b < g->batches; ++b) {
        const float *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const nn2c_conv_window_t win = nn2c_conv_window(g, oy, ox);
                float *out = output + ((b * g->out_h + oy) * g->out_w + ox) * g->out_c;
                int32_t c = 0;
                if (p->depth_multiplier == 1) {
                    /* lanes are channels; each lane sums its taps in the reference's order */
                    for (; c + NN2C_CONV_LANES <= g->out_c; c += NN2C_CONV_LANES) {
                        float acc[NN2C_CONV_LANES];
                        for (int32_t k = 0; k < NN2C_CONV_LANES; ++k) acc[k] = 0.0f;
                        for (int32_t fy = win.fy0; fy < win.fy1; ++fy) {
                            const int32_t iy = win.iy0 + g->dilation_h * fy;
                            for (int32_t fx = win.fx0; fx < win.fx1; ++fx) {
                                const int32_t ix = win.ix0 + g->dilation_w * fx;
                                const float *x = in_b + (iy * g->in_w + ix) * g->in_c + c;
                                const float *w = filter + (fy * g->filter_w + fx) * g->out_c + c;
                                for (int32_t k = 0; k < NN2C_CONV_LANES; ++k) acc[k] += x[k] * w[k];
                            }
                        }
                        for (int32_t k = 0; k < NN2C_CONV_LANES; ++k) {
                            const float bias_value = bias ? bias[c + k] : 0.0f;
                            out[c + k] = nn2c_clamp_f32(acc[k] + bias_value, p->act_min, p->act_max);
                        }
                    }
                }
                for (; c < g->out_c; ++c) {
                    const int32_t ic = c / p->depth_multiplier;
                    const float total = nn2c_dwconv_acc1_f32(g, in_b + ic, filter + c, &win);
                    const float bias_value = bias ? bias[c] : 0.0f;
                    out[c] = nn2c_clamp_f32(total + bias_value, p->act_min, p->act_max);
                }
            }
        }
    }
}
