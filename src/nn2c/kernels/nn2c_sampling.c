/* GridSample and RoiAlign, float32: see nn2c_sampling.h for the semantics (as onnx.reference's). */
#include "nn2c_sampling.h"

#include <math.h>
#include <string.h>

#define GS_MAX_TAPS 4

typedef struct {
    int32_t count;
    int32_t index[GS_MAX_TAPS];  /* -1: a zero tap (zeros padding) */
    float weight[GS_MAX_TAPS];
} gs_taps_t;

/* round half to even, independent of the floating-point rounding mode */
static float gs_round_even(float u) {
    float f = floorf(u);
    float d = u - f;
    if (d > 0.5f || (d == 0.5f && fmodf(f, 2.0f) != 0.0f)) {
        f += 1.0f;
    }
    return f;
}

/* reflect u by the nearer border until it lies within [lo, hi] */
static float gs_reflect(float u, float lo, float hi) {
    float range = hi - lo;
    float dx, n, r;
    if (!(range > 0.0f)) {
        return lo;
    }
    if (u < lo) {
        dx = lo - u;
        n = floorf(dx / range);
        r = dx - n * range;
        return fmodf(n, 2.0f) == 0.0f ? lo + r : hi - r;
    }
    if (u > hi) {
        dx = u - hi;
        n = floorf(dx / range);
        r = dx - n * range;
        return fmodf(n, 2.0f) == 0.0f ? hi - r : lo + r;
    }
    return u;
}

static int32_t gs_clamp_index(int32_t i, int32_t size) {
    return i < 0 ? 0 : (i >= size ? size - 1 : i);
}

/* the index a tap reads, or -1 for a zero (zeros padding) */
static int32_t gs_tap_index(int32_t i, int32_t size, int32_t padding, float lo, float hi) {
    if (i >= 0 && i < size) {
        return i;
    }
    if (padding == 0) {
        return -1;
    }
    if (padding == 1) {
        return gs_clamp_index(i, size);
    }
    return gs_clamp_index((int32_t)gs_reflect((float)i, lo, hi), size);
}

static void gs_cubic_weights(float t, float w[4]) {
    const float a = -0.75f;
    float t1 = t + 1.0f, t2 = 1.0f - t, t3 = 2.0f - t;
    w[0] = ((a * t1 - 5.0f * a) * t1 + 8.0f * a) * t1 - 4.0f * a;
    w[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    w[2] = ((a + 2.0f) * t2 - (a + 3.0f)) * t2 * t2 + 1.0f;
    w[3] = ((a * t3 - 5.0f * a) * t3 + 8.0f * a) * t3 - 4.0f * a;
}

/* the taps of one axis of size `size` for the normalised coordinate g */
static void gs_axis_taps(const nn2c_grid_sample_params_t *p, float g, int32_t size, gs_taps_t *taps) {
    float lo = p->align_corners ? 0.0f : -0.5f;
    float hi = p->align_corners ? (float)size - 1.0f : (float)size - 0.5f;
    float limit = (float)size + 4.0f;  /* beyond it every tap is outside the input */
    float u = p->align_corners ? (g + 1.0f) / 2.0f * ((float)size - 1.0f) : ((g + 1.0f) * (float)size - 1.0f) / 2.0f;
    float f, t;
    int32_t base, k;
    if (p->mode == 0) {
        u = gs_round_even(u);
    }
    if (u < lo || u > hi) {
        if (p->padding == 1 && p->mode != 2) {
            u = u < 0.0f ? 0.0f : ((float)size - 1.0f < u ? (float)size - 1.0f : u);
        } else if (p->padding == 2) {
            u = gs_reflect(u, lo, hi);
        }
    }
    if (!(u >= -limit)) {  /* also NaN */
        u = -limit;
    } else if (u > limit) {
        u = limit;
    }
    if (p->mode == 0) {
        taps->count = 1;
        taps->index[0] = gs_tap_index((int32_t)u, size, p->padding, lo, hi);
        taps->weight[0] = 1.0f;
        return;
    }
    f = floorf(u);
    t = u - f;
    base = (int32_t)f;
    if (p->mode == 1) {
        taps->count = 2;
        taps->weight[0] = 1.0f - t;
        taps->weight[1] = t;
    } else {
        taps->count = 4;
        base -= 1;
        gs_cubic_weights(t, taps->weight);
    }
    for (k = 0; k < taps->count; ++k) {
        taps->index[k] = gs_tap_index(base + k, size, p->padding, lo, hi);
    }
}

void nn2c_grid_sample_f32(const nn2c_grid_sample_params_t *p, const float *x, const float *grid, float *y) {
    const int32_t d0 = p->dims[0], d1 = p->dims[1], d2 = p->dims[2];
    const int32_t plane = d0 * d1 * d2;
    int32_t n, pos, c, axis, i, j, k;
    gs_taps_t taps[3];
    for (n = 0; n < p->batch; ++n) {
        for (pos = 0; pos < p->positions; ++pos) {
            const float *g = grid + ((size_t)n * (size_t)p->positions + (size_t)pos) * (size_t)p->rank;
            for (axis = 0; axis < 3; ++axis) {
                int32_t spatial = axis - (3 - p->rank);  /* -1: a unit axis in front */
                if (spatial < 0) {
                    taps[axis].count = 1;
                    taps[axis].index[0] = 0;
                    taps[axis].weight[0] = 1.0f;
                } else {
                    gs_axis_taps(p, g[p->rank - 1 - spatial], p->dims[axis], &taps[axis]);
                }
            }
            for (c = 0; c < p->channels; ++c) {
                const float *src = x + ((size_t)n * (size_t)p->channels + (size_t)c) * (size_t)plane;
                float s0 = 0.0f;
                for (i = 0; i < taps[0].count; ++i) {
                    float s1 = 0.0f;
                    int32_t i0 = taps[0].index[i];
                    for (j = 0; j < taps[1].count; ++j) {
                        float s2 = 0.0f;
                        int32_t i1 = taps[1].index[j];
                        for (k = 0; k < taps[2].count; ++k) {
                            int32_t i2 = taps[2].index[k];
                            float v = (i0 < 0 || i1 < 0 || i2 < 0) ? 0.0f : src[((size_t)i0 * (size_t)d1 + (size_t)i1) * (size_t)d2 + (size_t)i2];
                            s2 += taps[2].weight[k] * v;
                        }
                        s1 += taps[1].weight[j] * s2;
                    }
                    s0 += taps[0].weight[i] * s1;
                }
                y[((size_t)n * (size_t)p->channels + (size_t)c) * (size_t)p->positions + (size_t)pos] = s0;
            }
        }
    }
}

/* One bilinear sample of RoiAlign: the four corner offsets and weights (onnxruntime's and the ONNX
 * reference's pre_calc_for_bilinear_interpolate); a sample outside [-1, size] weighs nothing. */
typedef struct {
    int32_t pos[4];
    float w[4];
} nn2c_roi_sample_t;

static nn2c_roi_sample_t nn2c_roi_sample(float y, float x, int32_t height, int32_t width) {
    nn2c_roi_sample_t s = {{0, 0, 0, 0}, {0.0f, 0.0f, 0.0f, 0.0f}};
    if (!(y >= -1.0f && y <= (float)height && x >= -1.0f && x <= (float)width)) {
        return s; /* also NaN */
    }
    y = y > 0.0f ? y : 0.0f;
    x = x > 0.0f ? x : 0.0f;
    int32_t y_low = (int32_t)y, x_low = (int32_t)x, y_high, x_high;
    if (y_low >= height - 1) {
        y_high = y_low = height - 1;
        y = (float)y_low;
    } else {
        y_high = y_low + 1;
    }
    if (x_low >= width - 1) {
        x_high = x_low = width - 1;
        x = (float)x_low;
    } else {
        x_high = x_low + 1;
    }
    const float ly = y - (float)y_low, lx = x - (float)x_low, hy = 1.0f - ly, hx = 1.0f - lx;
    s.pos[0] = y_low * width + x_low;
    s.pos[1] = y_low * width + x_high;
    s.pos[2] = y_high * width + x_low;
    s.pos[3] = y_high * width + x_high;
    s.w[0] = hy * hx;
    s.w[1] = hy * lx;
    s.w[2] = ly * hx;
    s.w[3] = ly * lx;
    return s;
}

/* Samples per bin along an axis: the given ratio, or ceil(extent / bins), within [1, limit]. */
static int32_t nn2c_roi_grid(int32_t ratio, float extent, int32_t bins, int32_t limit) {
    if (ratio > 0) {
        return ratio;
    }
    const float n = ceilf(extent / (float)bins);
    return n >= 1.0f ? (n < (float)limit ? (int32_t)n : limit) : 1;
}

void nn2c_roi_align_f32(const nn2c_roi_align_params_t *p, const float *x, const float *rois,
                        const void *batch_indices, float *y) {
    const int32_t plane = p->height * p->width;
    const int32_t bins = p->pooled_h * p->pooled_w;
    const float offset = p->half_pixel ? 0.5f : 0.0f;
    for (int32_t r = 0; r < p->rois; ++r) {
        float *out = y + (size_t)r * (size_t)p->channels * (size_t)bins;
        const int64_t image = nn2c_read_index(batch_indices, (size_t)r, p->index_bytes);
        if (image < 0 || image >= p->batch) {
            memset(out, 0, (size_t)p->channels * (size_t)bins * sizeof(float));
            continue;
        }
        const float *box = rois + (size_t)r * 4u;
        const float start_w = box[0] * p->spatial_scale - offset, start_h = box[1] * p->spatial_scale - offset;
        float roi_w = box[2] * p->spatial_scale - offset - start_w, roi_h = box[3] * p->spatial_scale - offset - start_h;
        if (!p->half_pixel) {
            roi_w = roi_w > 1.0f ? roi_w : 1.0f;
            roi_h = roi_h > 1.0f ? roi_h : 1.0f;
        }
        const float bin_h = roi_h / (float)p->pooled_h, bin_w = roi_w / (float)p->pooled_w;
        const int32_t grid_h = nn2c_roi_grid(p->sampling_ratio, roi_h, p->pooled_h, p->height + 1);
        const int32_t grid_w = nn2c_roi_grid(p->sampling_ratio, roi_w, p->pooled_w, p->width + 1);
        const float count = (float)(grid_h * grid_w);
        for (int32_t c = 0; c < p->channels; ++c) {
            const float *data = x + ((size_t)image * (size_t)p->channels + (size_t)c) * (size_t)plane;
            for (int32_t ph = 0; ph < p->pooled_h; ++ph) {
                for (int32_t pw = 0; pw < p->pooled_w; ++pw) {
                    float value = 0.0f;
                    int first = 1;
                    for (int32_t iy = 0; iy < grid_h; ++iy) {
                        const float yy = start_h + (float)ph * bin_h + ((float)iy + 0.5f) * bin_h / (float)grid_h;
                        for (int32_t ix = 0; ix < grid_w; ++ix) {
                            const float xx =
                                start_w + (float)pw * bin_w + ((float)ix + 0.5f) * bin_w / (float)grid_w;
                            const nn2c_roi_sample_t s = nn2c_roi_sample(yy, xx, p->height, p->width);
                            if (p->mode_max) {
                                float v = s.w[0] * data[s.pos[0]];
                                for (int k = 1; k < 4; ++k) {
                                    const float t = s.w[k] * data[s.pos[k]];
                                    v = t > v ? t : v;
                                }
                                value = first || v > value ? v : value;
                                first = 0;
                            } else {
                                value += s.w[0] * data[s.pos[0]] + s.w[1] * data[s.pos[1]] + s.w[2] * data[s.pos[2]] +
                                         s.w[3] * data[s.pos[3]];
                            }
                        }
                    }
                    out[(size_t)c * (size_t)bins + (size_t)(ph * p->pooled_w + pw)] =
                        p->mode_max ? value : value / count;
                }
            }
        }
    }
}
