/* Spectral operators of audio front ends: window functions, the mel weight matrix, and the
 * discrete Fourier transform (ONNX HannWindow / HammingWindow / BlackmanWindow, MelWeightMatrix,
 * DFT). Semantics in nn2c's reference/spectral.py. Everything is computed in double: the
 * operators are small next to a model, and the ONNX results they must match are float64
 * computations rounded once. */
#ifndef NN2C_SPECTRAL_H
#define NN2C_SPECTRAL_H
#include "nn2c_common.h"

/* window: 0 hann, 1 hamming, 2 blackman; the size is read at run time, `length` values written. */
typedef struct {
    int32_t window;
    int32_t periodic;
    int32_t length;
} nn2c_window_params_t;

void nn2c_window_f32(const nn2c_window_params_t *p, const int32_t *size, float *out);

/* The [rows, cols] mel matrix (rows = dft_length / 2 + 1, cols = num_mel_bins, static); the
 * operands are read at run time and no write leaves the matrix. */
typedef struct {
    int32_t rows, cols;
} nn2c_mel_params_t;

void nn2c_mel_weight_matrix_f32(const nn2c_mel_params_t *p, const int32_t *num_mel_bins,
                                const int32_t *dft_length, const int32_t *sample_rate,
                                const float *lower_edge_hertz, const float *upper_edge_hertz, float *out);

/* DFT along one axis. The input is [outer, n_in, inner, in_complex ? 2 : 1], the output
 * [outer, n_out, inner, out_complex ? 2 : 1]; `length` is N. hermitian: the inverse real
 * transform of a one-sided spectrum (output real, n_out = N). `twiddles` is scratch for 2 N
 * doubles (the kernel fills it with cos and sin of 2 pi m / N, m in [0, N)). */
typedef struct {
    int32_t outer, inner;
    int32_t n_in, n_out, length;
    int32_t in_complex, out_complex;
    int32_t inverse, hermitian;
} nn2c_dft_params_t;

void nn2c_dft_f32(const nn2c_dft_params_t *p, void *twiddles, const float *in, float *out);

#endif
