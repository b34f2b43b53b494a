/* Spectral operators (see nn2c_spectral.h). */
#include "nn2c_spectral.h"

#include <math.h>

#define NN2C_PI 3.14159265358979323846

/* --- window functions ------------------------------------------------------------------------- */

void nn2c_window_f32(const nn2c_window_params_t *p, const int32_t *size, float *out) {
    /* in double: a size near INT32_MIN minus one must not overflow */
    const double n_1 = p->periodic ? (double)size[0] : (double)size[0] - 1.0;
    for (int32_t i = 0; i < p->length; ++i) {
        const double x = (double)i;
        double y;
        if (n_1 == 0.0) {
            y = NAN; /* 0 / 0 in onnx's definition */
        } else if (p->window == 0) {
            const double s = sin(x * NN2C_PI / n_1);
            y = s * s;
        } else if (p->window == 1) {
            const double alpha = 25.0 / 46.0;
            y = alpha - cos(x * NN2C_PI * 2.0 / n_1) * (1.0 - alpha);
        } else {
            y = 0.42 - cos(x * NN2C_PI * 2.0 / n_1) * 0.5 + cos(x * NN2C_PI * 4.0 / n_1) * 0.08;
        }
        out[i] = (float)y;
    }
}

/* --- mel weight matrix ------------------------------------------------------------------------ */

static int32_t nn2c_mel_bin(double hertz, int32_t dft_length, int32_t sample_rate) {
    const double bin = floor(((double)dft_length + 1.0) * hertz / (double)sample_rate);
    if (!(bin >= -2147483648.0)) {
        return INT32_MIN; /* also NaN */
    }
    return bin > 2147483647.0 ? INT32_MAX : (int32_t)bin;
}

static void nn2c_mel_put(const nn2c_mel_params_t *p, float *out, int64_t row, int32_t col, double v) {
    if (row >= 0 && row < p->rows) {
        out[row * p->cols + col] = (float)v;
    }
}

void nn2c_mel_weight_matrix_f32(const nn2c_mel_params_t *p, const int32_t *num_mel_bins,
                                const int32_t *dft_length, const int32_t *sample_rate,
                                const float *lower_edge_hertz, const float *upper_edge_hertz, float *out) {
    const int32_t bins = num_mel_bins[0];
    for (int32_t k = 0; k < p->rows * p->cols; ++k) {
        out[k] = 0.0f;
    }
    if (bins <= 0 || sample_rate[0] == 0) {
        return;
    }
    const double ln10 = log(10.0);
    const double low_mel = 2595.0 * log1p((double)lower_edge_hertz[0] / 700.0) / ln10;
    const double high_mel = 2595.0 * log1p((double)upper_edge_hertz[0] / 700.0) / ln10;
    const double step = (high_mel - low_mel) / ((double)bins + 2.0);
    const int32_t cols = bins < p->cols ? bins : p->cols;
    for (int32_t i = 0; i < cols; ++i) {
        int64_t point[3];
        for (int32_t e = 0; e < 3; ++e) {
            const double mel = (double)(i + e) * step + low_mel;
            point[e] = nn2c_mel_bin(700.0 * expm1(mel / 2595.0 * ln10), dft_length[0], sample_rate[0]);
        }
        const int64_t left = point[0], center = point[1], right = point[2];
        if (center == left) {
            nn2c_mel_put(p, out, center, i, 1.0);
        } else {
            const int64_t first = left > 0 ? left : 0;
            const int64_t last = center < (int64_t)p->rows - 1 ? center : (int64_t)p->rows - 1;
            for (int64_t j = first; j <= last; ++j) {
                nn2c_mel_put(p, out, j, i, (double)(j - left) / (double)(center - left));
            }
        }
        if (right > center) {
            const int64_t first = center > 0 ? center : 0;
            const int64_t end = right < (int64_t)p->rows ? right : (int64_t)p->rows;
            for (int64_t j = first; j < end; ++j) {
                nn2c_mel_put(p, out, j, i, (double)(right - j) / (double)(right - center));
            }
        }
    }
}

/* --- DFT -------------------------------------------------------------------------------------- */

/* The twiddle index k * t mod N, without overflow. */
static int32_t nn2c_dft_index(int32_t k, int32_t t, int32_t n) {
    return (int32_t)(((int64_t)k * (int64_t)t) % (int64_t)n);
}

void nn2c_dft_f32(const nn2c_dft_params_t *p, void *twiddles, const float *in, float *out) {
    const int32_t n = p->length;
    double *cos_table = (double *)twiddles;
    double *sin_table = cos_table + n;
    for (int32_t m = 0; m < n; ++m) {
        const double angle = 2.0 * NN2C_PI * (double)m / (double)n;
        cos_table[m] = cos(angle);
        sin_table[m] = sin(angle);
    }
    const int32_t cin = p->in_complex ? 2 : 1, cout = p->out_complex ? 2 : 1;
    const int32_t taps = p->n_in < n ? p->n_in : n;
    const int32_t half = n / 2 + 1; /* bins of a one-sided spectrum */
    const int32_t bins = p->n_in < half ? p->n_in : half;
    const double sign = p->inverse ? 1.0 : -1.0;
    const double scale = p->inverse ? 1.0 / (double)n : 1.0;
    for (int32_t o = 0; o < p->outer; ++o) {
        const float *x = in + (size_t)o * (size_t)p->n_in * (size_t)p->inner * (size_t)cin;
        float *y = out + (size_t)o * (size_t)p->n_out * (size_t)p->inner * (size_t)cout;
        for (int32_t c = 0; c < p->inner; ++c) {
            for (int32_t k = 0; k < p->n_out; ++k) {
                double re = 0.0, im = 0.0;
                if (p->hermitian) {
                    /* x[k] = (1/N) sum_b w_b Re(X_b e^(2 pi i b k / N)), w = 1 for bins 0 and
                     * N/2, 2 for the others (their mirror images) */
                    for (int32_t b = 0; b < bins; ++b) {
                        const float *v = x + ((size_t)b * (size_t)p->inner + (size_t)c) * (size_t)cin;
                        const int32_t m = nn2c_dft_index(b, k, n);
                        const int edge = b == 0 || 2 * b == n;
                        const double xi = (cin == 2 && !edge) ? (double)v[1] : 0.0;
                        const double term = (double)v[0] * cos_table[m] - xi * sin_table[m];
                        re += edge ? term : 2.0 * term;
                    }
                } else {
                    for (int32_t t = 0; t < taps; ++t) {
                        const float *v = x + ((size_t)t * (size_t)p->inner + (size_t)c) * (size_t)cin;
                        const int32_t m = nn2c_dft_index(k, t, n);
                        const double xr = (double)v[0], xi = cin == 2 ? (double)v[1] : 0.0;
                        const double cs = cos_table[m], sn = sign * sin_table[m];
                        re += xr * cs - xi * sn;
                        im += xr * sn + xi * cs;
                    }
                }
                float *w = y + ((size_t)k * (size_t)p->inner + (size_t)c) * (size_t)cout;
                w[0] = (float)(re * scale);
                if (cout == 2) {
                    w[1] = (float)(im * scale);
                }
            }
        }
    }
}
