/* TFLite Micro's Signal library operators (the audio front end of micro_speech): window, FFT auto
 * scale, real FFT and its inverse (kissfft v130: fixed point 16 / 32, float), energy, mel filter bank,
 * its square root, spectral subtraction (with its noise-estimate state), PCAN auto gain control, log,
 * and the streaming ones with state: delay, framer, stacker, overlap-add.
 * Each kernel follows tflite-micro signal/src/<op>.cc step for step, including its integer
 * wrap-arounds, without undefined behaviour: arithmetic that overflows in TFLM's C++ (and wraps
 * there on every target TFLM runs on) is done in unsigned types here and converted back. */
#ifndef NN2C_SIGNAL_H
#define NN2C_SIGNAL_H
#include "nn2c_common.h"

/* y[i] = saturate_int16((x[i] * window[i % size]) >> shift), for count elements */
void nn2c_signal_window(const int16_t *x, const int16_t *window, int32_t size, int32_t count, int32_t shift,
                        int16_t *y);

/* y = x << scale_bits, with scale_bits chosen from max |x| (FftAutoScale); *scale_bits_out = that */
void nn2c_signal_fft_auto_scale(const int16_t *x, int32_t size, int16_t *y, int32_t *scale_bits_out);

typedef struct {
    int32_t rows;          /* independent transforms */
    int32_t input_length;  /* real samples per row, zero-padded to fft_length */
    int32_t fft_length;    /* even; the complex FFT has fft_length / 2 points */
    int32_t num_factors;   /* kissfft's radix plan: (radix, remaining length) pairs */
    int32_t factors[64];
} nn2c_signal_rfft_params_t;

/* kissfft's real FFT (kiss_fftr) for int16 (FIXED_POINT 16), int32 (FIXED_POINT 32) and float;
 * radices 2, 3, 4, 5 only (TFLM's kissfft has malloc patched out, so its generic butterfly crashes
 * and nn2c refuses lengths that need it). y holds fft_length / 2 + 1 (re, im) pairs per row.
 * twiddles: fft_length / 2 complex, super_twiddles: fft_length / 4 complex (interleaved re, im), as
 * kiss_fftr_alloc computes them. scratch: 2 * fft_length scalars (the padded input, then the
 * complex FFT's output). */
void nn2c_signal_rfft_s16(const nn2c_signal_rfft_params_t *p, const int16_t *twiddles,
                          const int16_t *super_twiddles, const int16_t *x, int16_t *y, int16_t *scratch);
void nn2c_signal_rfft_s32(const nn2c_signal_rfft_params_t *p, const int32_t *twiddles,
                          const int32_t *super_twiddles, const int32_t *x, int32_t *y, int32_t *scratch);
void nn2c_signal_rfft_f32(const nn2c_signal_rfft_params_t *p, const float *twiddles, const float *super_twiddles,
                          const float *x, float *y, float *scratch);

/* kissfft's inverse real FFT (kiss_fftri) for int16, int32 and float, with the same plan and
 * radices: each row of x holds input_length (re, im) pairs of which the first fft_length / 2 + 1
 * are read; y gets fft_length samples per row (float: divided by fft_length, as TFLM does; the
 * fixed-point ones are scaled down by kissfft's C_FIXDIV instead). twiddles and super_twiddles:
 * kiss_fftr_alloc's with inverse_fft = 1. scratch: fft_length scalars. */
void nn2c_signal_irfft_s16(const nn2c_signal_rfft_params_t *p, const int16_t *twiddles,
                           const int16_t *super_twiddles, const int16_t *x, int16_t *y, int16_t *scratch);
void nn2c_signal_irfft_s32(const nn2c_signal_rfft_params_t *p, const int32_t *twiddles,
                           const int32_t *super_twiddles, const int32_t *x, int32_t *y, int32_t *scratch);
void nn2c_signal_irfft_f32(const nn2c_signal_rfft_params_t *p, const float *twiddles, const float *super_twiddles,
                           const float *x, float *y, float *scratch);

/* y[i] = re[i]^2 + im[i]^2 for start <= i < end (uint32, wrapping as TFLM's int32 sum); the other
 * count - (end - start) outputs are set to 0 (TFLM leaves them unwritten). */
void nn2c_signal_energy(const int16_t *x, int32_t start, int32_t end, int32_t count, uint32_t *y);

/* The triangular mel filter bank (FilterbankAccumulateChannels), channels + 1 accumulations of which
 * the first is scratch; y gets the last `channels`. */
void nn2c_signal_filter_bank(const uint32_t *x, const int16_t *weights, const int16_t *unweights,
                             const int16_t *freq_starts, const int16_t *weight_starts, const int16_t *widths,
                             int32_t channels, uint64_t *y);

/* y[i] = Sqrt64(x[i]) >> (*scale_bits & 31) (x86's shift count, the only behaviour TFLM has) */
void nn2c_signal_filter_bank_sqrt(const uint64_t *x, const int32_t *scale_bits, int32_t channels, uint32_t *y);

typedef struct {
    int32_t channels;
    uint32_t smoothing, one_minus_smoothing;
    uint32_t alternate_smoothing, alternate_one_minus_smoothing;
    uint32_t min_signal_remaining;
    int32_t smoothing_bits;
    int32_t spectral_subtraction_bits;
    int32_t clamping;
} nn2c_signal_spectral_subtraction_params_t;

/* FilterbankSpectralSubtraction; `state` is the noise estimate kept across invocations (zero after
 * reset), copied to noise_out after the update. */
void nn2c_signal_spectral_subtraction(const nn2c_signal_spectral_subtraction_params_t *p, const uint32_t *x,
                                      uint32_t *state, uint32_t *y, uint32_t *noise_out);

/* ApplyPcanAutoGainControlFixed: y[i] = PcanShrink((x[i] * gain(noise[i])) >> snr_shift); gain_lut has
 * at least 125 entries (WideDynamicFunction reads lut[4 * msb - 4] for msb up to 32). */
void nn2c_signal_pcan(const uint32_t *x, const uint32_t *noise, const int16_t *gain_lut, int32_t snr_shift,
                      int32_t channels, uint32_t *y);

/* FilterbankLog: y[i] = min(Log32(x[i] << correction_bits, output_scale), 32767), 0 where the
 * shifted input is <= 1. */
void nn2c_signal_filter_bank_log(const uint32_t *x, int32_t channels, uint32_t output_scale,
                                 int32_t correction_bits, int16_t *y);

/* --- streaming operators: `state` arguments persist across invocations, all zero after reset --- */

/* Each of `rows` rows of `frame` samples, delayed by `delay` samples: line (rows x delay) holds each
 * row's last `delay` samples, oldest first (NULL when delay is 0). */
void nn2c_signal_delay(const int16_t *x, int32_t rows, int32_t frame, int32_t delay, int16_t *line, int16_t *y);

typedef struct {
    int32_t rows;       /* independent streams (the input's outer dimensions) */
    int32_t n_frames;   /* frames per row and invocation: the row's length / frame_step */
    int32_t frame_size;
    int32_t frame_step;
    int32_t capacity;   /* TFLM's circular buffer: frame_size rounded up to a multiple of frame_step */
    int32_t initial;    /* samples available after reset: frame_size - frame_step with prefill, else 0 */
} nn2c_signal_framer_params_t;

/* SignalFramer: pending (rows x capacity) ends with the samples not yet framed; *fill = available
 * samples - initial. Frames not produced (before the buffer first fills) are zeros and clear *valid. */
void nn2c_signal_framer(const nn2c_signal_framer_params_t *p, const int16_t *x, int16_t *pending, int32_t *fill,
                        int16_t *y, uint8_t *valid);

typedef struct {
    int32_t channels;      /* values per input frame */
    int32_t depth;         /* frames per output: left_context + right_context + 1 */
    int32_t left_context;
    int32_t step;          /* frames dropped after each output, 1..depth */
} nn2c_signal_stacker_params_t;

/* SignalStacker: frames (depth x channels) holds counters[0] frames, oldest first; counters[1] is
 * set once the first frame since reset arrived. y (depth x channels) is zeros while not *valid. */
void nn2c_signal_stacker(const nn2c_signal_stacker_params_t *p, const int16_t *x, int16_t *frames,
                         int32_t *counters, int16_t *y, uint8_t *valid);

/* SignalOverlapAdd: each of rows x n_frames frames is added into its row's running sums (rows x
 * frame_size; int16 saturating, as TFLM's), whose first frame_step values go out. */
void nn2c_signal_overlap_add_s16(const int16_t *x, int32_t rows, int32_t n_frames, int32_t frame_size,
                                 int32_t frame_step, int16_t *sums, int16_t *y);
void nn2c_signal_overlap_add_f32(const float *x, int32_t rows, int32_t n_frames, int32_t frame_size,
                                 int32_t frame_step, float *sums, float *y);

#endif /* NN2C_SIGNAL_H */
