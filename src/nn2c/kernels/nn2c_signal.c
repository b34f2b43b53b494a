/* TFLite Micro Signal operators; see nn2c_signal.h. Comments name the tflite-micro function each
 * part follows (signal/src/NAME.cc, kissfft v130 for the FFT). */
#ifndef NN2C_SIG_FFT_SFX /* the file itself; the FFT instantiations include it again, below */
#include <string.h>

#include "nn2c_signal.h"

/* int -> int16 keeping the low 16 bits, as kissfft's and TFLM's stores into int16_t do */
#define NN2C_SIG_S16(v) ((int16_t)(v))

/* MostSignificantBit32 / 64 as TFLM builds them with GCC/Clang: the bit length of x, and 32 / 64
 * for x == 0 (the portable loop of signal/src/msb_32.cc would give 0) */
static int32_t nn2c_sig_msb32(uint32_t x) {
    if (x == 0) {
        return 32;
    }
#if defined(__GNUC__)
    return 32 - __builtin_clz(x);
#else
    int32_t bits = 0;
    while (x) {
        x >>= 1;
        ++bits;
    }
    return bits;
#endif
}

static int32_t nn2c_sig_msb64(uint64_t x) {
    if (x == 0) {
        return 64;
    }
    const uint32_t high = (uint32_t)(x >> 32);
    return high ? 32 + nn2c_sig_msb32(high) : nn2c_sig_msb32((uint32_t)x);
}

void nn2c_signal_window(const int16_t *x, const int16_t *window, int32_t size, int32_t count, int32_t shift,
                        int16_t *y) {
    for (int32_t base = 0; base < count; base += size) {
        for (int32_t i = 0; i < size; ++i) {
            const int32_t raw = ((int32_t)x[base + i] * window[i]) >> shift;
            y[base + i] = (int16_t)(raw < INT16_MIN ? INT16_MIN : raw > INT16_MAX ? INT16_MAX : raw);
        }
    }
}

void nn2c_signal_fft_auto_scale(const int16_t *x, int32_t size, int16_t *y, int32_t *scale_bits_out) {
    /* MaxAbs16, with its int16 result: -(-32768) stores as -32768 and later values compare to it */
    int16_t max = 0;
    for (int32_t i = 0; i < size; ++i) {
        const int16_t value = x[i];
        if (value > max) {
            max = value;
        } else if (-value > max) {
            max = NN2C_SIG_S16(-value);
        }
    }
    int32_t scale_bits = 16 - nn2c_sig_msb32((uint32_t)(int32_t)max) - 1;
    if (scale_bits <= 0) {
        scale_bits = 0;
    }
    for (int32_t i = 0; i < size; ++i) {
        y[i] = NN2C_SIG_S16((int32_t)x[i] * (1 << scale_bits));
    }
    *scale_bits_out = scale_bits;
}

/* --- kissfft v130: kiss_fftr and its radix 2, 3, 4, 5 butterflies ---------------------------------
 * The FFT is written once, below NN2C_SIG_FFT_BODY, and instantiated for int16 (FIXED_POINT 16),
 * int32 (FIXED_POINT 32) and float by including this file into itself with the scalar type and its
 * operations defined (C99 has no templates). The operations reproduce kissfft's macros: sround of a
 * wide product, C_FIXDIV before each butterfly (fixed point only), stores into the scalar type that
 * keep its low bits (TFLM's int16 / int32 sums wrap), HALF_OF of a sum computed wide. */
#define NN2C_SIG_CAT2(a, b) a##_##b
#define NN2C_SIG_CAT(a, b) NN2C_SIG_CAT2(a, b)

/* int32 from the low 32 bits of an int64 (TFLM's int32 arithmetic wraps there) */
static int32_t nn2c_sig_wrap32(int64_t v) {
    const uint32_t low = (uint32_t)((uint64_t)v & 0xFFFFFFFFu);
    return low <= 0x7FFFFFFFu ? (int32_t)low : (int32_t)(low - 0x80000000u) - 0x7FFFFFFF - 1;
}

typedef struct {
    int16_t r, i;
} nn2c_sig_cpx_s16;
typedef struct {
    int32_t r, i;
} nn2c_sig_cpx_s32;
typedef struct {
    float r, i;
} nn2c_sig_cpx_f32;

/* int16: SAMPPROD int32, FRACBITS 15 */
#define NN2C_SIG_FFT_SFX s16
#define NN2C_SIG_T int16_t
#define NN2C_SIG_ADD(a, b) ((int16_t)((int32_t)(a) + (int32_t)(b)))
#define NN2C_SIG_SUB(a, b) ((int16_t)((int32_t)(a) - (int32_t)(b)))
#define NN2C_SIG_NEG(a) ((int16_t)(-(int32_t)(a)))
#define NN2C_SIG_ROUND(x) ((int16_t)(((x) + (1 << 14)) >> 15))
#define NN2C_SIG_SMULR(a, b) NN2C_SIG_ROUND((int32_t)(a) * (int32_t)(b))
#define NN2C_SIG_CMUL_R(a, b) NN2C_SIG_ROUND((int32_t)(a).r * (b).r - (int32_t)(a).i * (b).i)
#define NN2C_SIG_CMUL_I(a, b) NN2C_SIG_ROUND((int32_t)(a).r * (b).i + (int32_t)(a).i * (b).r)
#define NN2C_SIG_DIV(x, k) NN2C_SIG_ROUND((int32_t)(x) * (32767 / (k)))
#define NN2C_SIG_HALF(x) ((int16_t)((x) >> 1))
#define NN2C_SIG_HALF_SUM(a, b) ((int16_t)(((int32_t)(a) + (int32_t)(b)) >> 1))
#define NN2C_SIG_HALF_DIFF(a, b) ((int16_t)(((int32_t)(a) - (int32_t)(b)) >> 1))
#define NN2C_SIG_FIXED 1
#include "nn2c_signal.c"

/* int32: SAMPPROD int64, FRACBITS 31 */
#define NN2C_SIG_FFT_SFX s32
#define NN2C_SIG_T int32_t
#define NN2C_SIG_ADD(a, b) nn2c_sig_wrap32((int64_t)(a) + (int64_t)(b))
#define NN2C_SIG_SUB(a, b) nn2c_sig_wrap32((int64_t)(a) - (int64_t)(b))
#define NN2C_SIG_NEG(a) nn2c_sig_wrap32(-(int64_t)(a))
#define NN2C_SIG_ROUND(x) nn2c_sig_wrap32(((x) + (1 << 30)) >> 31)
#define NN2C_SIG_SMULR(a, b) NN2C_SIG_ROUND((int64_t)(a) * (int64_t)(b))
#define NN2C_SIG_CMUL_R(a, b) NN2C_SIG_ROUND((int64_t)(a).r * (b).r - (int64_t)(a).i * (b).i)
#define NN2C_SIG_CMUL_I(a, b) NN2C_SIG_ROUND((int64_t)(a).r * (b).i + (int64_t)(a).i * (b).r)
#define NN2C_SIG_DIV(x, k) NN2C_SIG_ROUND((int64_t)(x) * (2147483647 / (k)))
#define NN2C_SIG_HALF(x) ((x) >> 1)
#define NN2C_SIG_HALF_SUM(a, b) (nn2c_sig_wrap32((int64_t)(a) + (int64_t)(b)) >> 1)
#define NN2C_SIG_HALF_DIFF(a, b) (nn2c_sig_wrap32((int64_t)(a) - (int64_t)(b)) >> 1)
#define NN2C_SIG_FIXED 1
#include "nn2c_signal.c"

/* float: no C_FIXDIV, HALF_OF(x) = x * 0.5f */
#define NN2C_SIG_FFT_SFX f32
#define NN2C_SIG_T float
#define NN2C_SIG_ADD(a, b) ((a) + (b))
#define NN2C_SIG_SUB(a, b) ((a) - (b))
#define NN2C_SIG_NEG(a) (-(a))
#define NN2C_SIG_SMULR(a, b) ((a) * (b))
#define NN2C_SIG_CMUL_R(a, b) ((a).r * (b).r - (a).i * (b).i)
#define NN2C_SIG_CMUL_I(a, b) ((a).r * (b).i + (a).i * (b).r)
#define NN2C_SIG_HALF(x) ((x) * 0.5f)
#define NN2C_SIG_HALF_SUM(a, b) (((a) + (b)) * 0.5f)
#define NN2C_SIG_HALF_DIFF(a, b) (((a) - (b)) * 0.5f)
#define NN2C_SIG_FIXED 0
#include "nn2c_signal.c"

/* --- the rest of the front end --------------------------------------------------------------- */
void nn2c_signal_energy(const int16_t *x, int32_t start, int32_t end, int32_t count, uint32_t *y) {
    for (int32_t i = 0; i < count; ++i) {
        if (i < start || i >= end) {
            y[i] = 0;
            continue;
        }
        const int32_t re = x[2 * i], im = x[2 * i + 1];
        y[i] = (uint32_t)(re * re) + (uint32_t)(im * im);
    }
}

void nn2c_signal_filter_bank(const uint32_t *x, const int16_t *weights, const int16_t *unweights,
                             const int16_t *freq_starts, const int16_t *weight_starts, const int16_t *widths,
                             int32_t channels, uint64_t *y) {
    uint64_t weight_acc = 0, unweight_acc = 0;
    for (int32_t i = 0; i < channels + 1; ++i) {
        const int32_t freq_start = freq_starts[i], weight_start = weight_starts[i];
        for (int32_t j = 0; j < widths[i]; ++j) {
            const uint64_t v = x[freq_start + j];
            weight_acc += (uint64_t)(int64_t)weights[weight_start + j] * v;
            unweight_acc += (uint64_t)(int64_t)unweights[weight_start + j] * v;
        }
        if (i > 0) {
            y[i - 1] = weight_acc;
        }
        weight_acc = unweight_acc;
        unweight_acc = 0;
    }
}

static uint32_t nn2c_sig_sqrt32(uint32_t num) {
    if (num == 0) {
        return 0;
    }
    uint32_t res = 0;
    int32_t max_bit_number = 32 - nn2c_sig_msb32(num);
    max_bit_number |= 1;
    uint32_t bit = 1u << (31 - max_bit_number);
    int32_t iterations = (31 - max_bit_number) / 2 + 1;
    while (iterations--) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1u) + bit;
        } else {
            res >>= 1u;
        }
        bit >>= 2u;
    }
    if (num > res && res != 0xFFFF) {
        ++res;
    }
    return res & 0xFFFFu; /* Sqrt32 returns uint16_t */
}

static uint32_t nn2c_sig_sqrt64(uint64_t num) {
    if ((num >> 32) == 0) {
        return nn2c_sig_sqrt32((uint32_t)num);
    }
    uint64_t res = 0;
    int32_t max_bit_number = 64 - nn2c_sig_msb64(num);
    max_bit_number |= 1;
    uint64_t bit = (uint64_t)1 << (63 - max_bit_number);
    int32_t iterations = (63 - max_bit_number) / 2 + 1;
    while (iterations--) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1u) + bit;
        } else {
            res >>= 1u;
        }
        bit >>= 2u;
    }
    if (num > res && res != 0xFFFFFFFFu) {
        ++res;
    }
    return (uint32_t)res;
}

void nn2c_signal_filter_bank_sqrt(const uint64_t *x, const int32_t *scale_bits, int32_t channels, uint32_t *y) {
    const uint32_t shift = (uint32_t)*scale_bits & 31u;
    for (int32_t i = 0; i < channels; ++i) {
        y[i] = nn2c_sig_sqrt64(x[i]) >> shift;
    }
}

void nn2c_signal_spectral_subtraction(const nn2c_signal_spectral_subtraction_params_t *p, const uint32_t *x,
                                      uint32_t *state, uint32_t *y, uint32_t *noise_out) {
    for (int32_t i = 0; i < p->channels; ++i) {
        const uint32_t smoothing = (i & 1) ? p->alternate_smoothing : p->smoothing;
        const uint32_t one_minus = (i & 1) ? p->alternate_one_minus_smoothing : p->one_minus_smoothing;
        const uint32_t signal_scaled_up = x[i] << p->smoothing_bits;
        state[i] = (uint32_t)(((uint64_t)signal_scaled_up * smoothing + (uint64_t)state[i] * one_minus)
                              >> p->spectral_subtraction_bits);
        uint32_t estimate_scaled_up = state[i];
        if (estimate_scaled_up > signal_scaled_up) {
            estimate_scaled_up = signal_scaled_up;
            if (p->clamping) {
                state[i] = estimate_scaled_up;
            }
        }
        const uint32_t floor = (uint32_t)(((uint64_t)x[i] * p->min_signal_remaining) >> p->spectral_subtraction_bits);
        const uint32_t subtracted = (signal_scaled_up - estimate_scaled_up) >> p->smoothing_bits;
        y[i] = subtracted > floor ? subtracted : floor;
    }
    memcpy(noise_out, state, sizeof(uint32_t) * (size_t)p->channels);
}

/* WideDynamicFunction (pcan_argc_fixed.cc) */
static int16_t nn2c_sig_wide_dynamic(uint32_t x, const int16_t *lut) {
    if (x <= 2) {
        return lut[x];
    }
    const int32_t interval = nn2c_sig_msb32(x);
    lut += 4 * interval - 6;
    const int32_t frac =
        (int32_t)(((interval < 11) ? (x << (11 - interval)) : (x >> (interval - 11))) & 0x3FF);
    int32_t result = ((int32_t)lut[2] * frac) >> 5;
    result = nn2c_sig_wrap32((int64_t)result + (int32_t)((uint32_t)(int32_t)lut[1] << 5));
    result = nn2c_sig_wrap32((int64_t)result * frac);
    result = nn2c_sig_wrap32((int64_t)result + (1 << 14)) >> 15;
    result = nn2c_sig_wrap32((int64_t)result + lut[0]);
    return NN2C_SIG_S16(result);
}

/* PcanShrink with kPcanSnrBits 12, kPcanOutputBits 6 */
static uint32_t nn2c_sig_pcan_shrink(uint32_t x) {
    if (x < (2u << 12)) {
        return (x * x) >> (2 + 2 * 12 - 6);
    }
    return (x >> (12 - 6)) - (1u << 6);
}

void nn2c_signal_pcan(const uint32_t *x, const uint32_t *noise, const int16_t *gain_lut, int32_t snr_shift,
                      int32_t channels, uint32_t *y) {
    for (int32_t i = 0; i < channels; ++i) {
        const uint32_t gain = (uint32_t)(int32_t)nn2c_sig_wide_dynamic(noise[i], gain_lut);
        const uint32_t snr = (uint32_t)(((uint64_t)x[i] * gain) >> snr_shift);
        y[i] = nn2c_sig_pcan_shrink(snr);
    }
}

/* log.cc */
static const uint16_t nn2c_sig_log_lut[] = {
    0,    224,  442,  654,  861,  1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944,
    3087, 3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791,
    4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578,
    5595, 5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498,
    5470, 5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697,
    4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575, 3481, 3384, 3286,
    3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207, 2090, 1971, 1851, 1729, 1605, 1480, 1353,
    1224, 1094, 963,  830,  695,  559,  421,  282,  142,  0,    0};

static uint32_t nn2c_sig_log2_fraction(uint32_t x, uint32_t log2x) {
    /* x >= 2^log2x and x < 2^(log2x + 1), so frac fits in int32 and the shifts below keep it < 2^16 */
    int32_t frac = (int32_t)(x - (uint32_t)((uint64_t)1 << log2x));
    if (log2x < 16) {
        frac = (int32_t)((uint32_t)frac << (16 - log2x));
    } else {
        frac >>= log2x - 16;
    }
    const uint32_t base_seg = (uint32_t)frac >> (16 - 7);
    const uint32_t seg_unit = (UINT32_C(1) << 16) >> 7;
    const int32_t c0 = nn2c_sig_log_lut[base_seg];
    const int32_t c1 = nn2c_sig_log_lut[base_seg + 1];
    const int32_t seg_base = (int32_t)(seg_unit * base_seg);
    const int32_t rel_pos = ((c1 - c0) * (frac - seg_base)) >> 16;
    return (uint32_t)(frac + c0 + rel_pos);
}

static uint32_t nn2c_sig_log32(uint32_t x, uint32_t out_scale) {
    const uint32_t integer = (uint32_t)nn2c_sig_msb32(x) - 1;
    const uint32_t fraction = nn2c_sig_log2_fraction(x, integer);
    const uint32_t log2 = (integer << 16) + fraction;
    const uint32_t round = 65536 / 2;
    const uint32_t loge = (uint32_t)(((uint64_t)45426 * log2 + round) >> 16);
    return (out_scale * loge + round) >> 16;
}

void nn2c_signal_filter_bank_log(const uint32_t *x, int32_t channels, uint32_t output_scale,
                                 int32_t correction_bits, int16_t *y) {
    for (int32_t i = 0; i < channels; ++i) {
        const uint32_t scaled = x[i] << correction_bits;
        if (scaled > 1) {
            const uint32_t log_value = nn2c_sig_log32(scaled, output_scale);
            y[i] = (int16_t)(log_value < (uint32_t)INT16_MAX ? log_value : (uint32_t)INT16_MAX);
        } else {
            y[i] = 0;
        }
    }
}

/* --- streaming operators (state kept across invocations; the all-zero state is TFLM's after
 * Prepare / Reset). TFLM keeps circular buffers (signal/src/circular_buffer.cc); these keep the same
 * samples in plain lines, oldest first, so that a zeroed line is the reset state. ----------------- */
void nn2c_signal_delay(const int16_t *x, int32_t rows, int32_t frame, int32_t delay, int16_t *line, int16_t *y) {
    if (delay == 0) { /* no line (NULL) */
        memcpy(y, x, sizeof(int16_t) * (size_t)rows * (size_t)frame);
        return;
    }
    for (int32_t r = 0; r < rows; ++r) {
        const int16_t *in = x + r * frame;
        int16_t *out = y + r * frame;
        int16_t *held = line + r * delay;
        if (frame <= delay) {
            /* out: the oldest `frame` held samples; the line moves down and takes the input */
            memcpy(out, held, sizeof(int16_t) * (size_t)frame);
            memmove(held, held + frame, sizeof(int16_t) * (size_t)(delay - frame));
            memcpy(held + delay - frame, in, sizeof(int16_t) * (size_t)frame);
        } else {
            memcpy(out, held, sizeof(int16_t) * (size_t)delay);
            memcpy(out + delay, in, sizeof(int16_t) * (size_t)(frame - delay));
            memcpy(held, in + frame - delay, sizeof(int16_t) * (size_t)delay);
        }
    }
}

void nn2c_signal_framer(const nn2c_signal_framer_params_t *p, const int16_t *x, int16_t *pending, int32_t *fill,
                        int16_t *y, uint8_t *valid) {
    const int32_t size = p->frame_size, step = p->frame_step, capacity = p->capacity;
    int32_t available = p->initial + *fill;
    *valid = 1;
    for (int32_t r = 0; r < p->rows; ++r) {
        int16_t *line = pending + r * capacity;
        available = p->initial + *fill; /* every row has the same history */
        for (int32_t f = 0; f < p->n_frames; ++f) {
            const int32_t frame = r * p->n_frames + f;
            /* available <= capacity - step here (TFLM's CircularBufferWrite asserts as much) */
            memmove(line, line + step, sizeof(int16_t) * (size_t)(capacity - step));
            memcpy(line + capacity - step, x + frame * step, sizeof(int16_t) * (size_t)step);
            available += step;
            if (available >= size) {
                memcpy(y + frame * size, line + capacity - available, sizeof(int16_t) * (size_t)size);
                available -= step;
            } else {
                memset(y + frame * size, 0, sizeof(int16_t) * (size_t)size); /* TFLM: left unwritten */
                *valid = 0;
            }
        }
    }
    *fill = available - p->initial;
}

void nn2c_signal_stacker(const nn2c_signal_stacker_params_t *p, const int16_t *x, int16_t *frames,
                         int32_t *counters, int16_t *y, uint8_t *valid) {
    const size_t frame_bytes = sizeof(int16_t) * (size_t)p->channels;
    /* counters[0]: frames held; counters[1]: 0 until the first frame after a reset, which is held
     * left_context + 1 times (CircularBufferExtend) */
    const int32_t copies = counters[1] ? 1 : 1 + p->left_context;
    for (int32_t k = 0; k < copies; ++k) {
        memcpy(frames + counters[0] * p->channels, x, frame_bytes);
        ++counters[0];
    }
    counters[1] = 1;
    if (counters[0] < p->depth) {
        memset(y, 0, frame_bytes * (size_t)p->depth); /* TFLM: left unwritten */
        *valid = 0;
        return;
    }
    memcpy(y, frames, frame_bytes * (size_t)p->depth);
    counters[0] -= p->step;
    memmove(frames, frames + p->step * p->channels, frame_bytes * (size_t)counters[0]);
    *valid = 1;
}

void nn2c_signal_overlap_add_s16(const int16_t *x, int32_t rows, int32_t n_frames, int32_t frame_size,
                                 int32_t frame_step, int16_t *sums, int16_t *y) {
    for (int32_t r = 0; r < rows; ++r) {
        int16_t *line = sums + r * frame_size;
        for (int32_t f = 0; f < n_frames; ++f) {
            const int16_t *in = x + (r * n_frames + f) * frame_size;
            for (int32_t i = 0; i < frame_size; ++i) {
                const int32_t sum = (int32_t)in[i] + line[i];
                line[i] = (int16_t)(sum < INT16_MIN ? INT16_MIN : sum > INT16_MAX ? INT16_MAX : sum);
            }
            memcpy(y + (r * n_frames + f) * frame_step, line, sizeof(int16_t) * (size_t)frame_step);
            memmove(line, line + frame_step, sizeof(int16_t) * (size_t)(frame_size - frame_step));
            memset(line + frame_size - frame_step, 0, sizeof(int16_t) * (size_t)frame_step);
        }
    }
}

void nn2c_signal_overlap_add_f32(const float *x, int32_t rows, int32_t n_frames, int32_t frame_size,
                                 int32_t frame_step, float *sums, float *y) {
    for (int32_t r = 0; r < rows; ++r) {
        float *line = sums + r * frame_size;
        for (int32_t f = 0; f < n_frames; ++f) {
            const float *in = x + (r * n_frames + f) * frame_size;
            for (int32_t i = 0; i < frame_size; ++i) {
                line[i] += in[i];
            }
            memcpy(y + (r * n_frames + f) * frame_step, line, sizeof(float) * (size_t)frame_step);
            memmove(line, line + frame_step, sizeof(float) * (size_t)(frame_size - frame_step));
            for (int32_t i = frame_size - frame_step; i < frame_size; ++i) {
                line[i] = 0.0f;
            }
        }
    }
}

#else /* NN2C_SIG_FFT_SFX: one instantiation of the FFT (see above) */
#define NN2C_SIG_CPX NN2C_SIG_CAT(nn2c_sig_cpx, NN2C_SIG_FFT_SFX)
#define NN2C_SIG_FN(name) NN2C_SIG_CAT(name, NN2C_SIG_FFT_SFX)

static NN2C_SIG_CPX NN2C_SIG_FN(nn2c_sig_cmul)(NN2C_SIG_CPX a, NN2C_SIG_CPX b) {
    NN2C_SIG_CPX m;
    m.r = NN2C_SIG_CMUL_R(a, b);
    m.i = NN2C_SIG_CMUL_I(a, b);
    return m;
}

static void NN2C_SIG_FN(nn2c_sig_fixdiv)(NN2C_SIG_CPX *c, int32_t div) {
#if NN2C_SIG_FIXED
    c->r = NN2C_SIG_DIV(c->r, div);
    c->i = NN2C_SIG_DIV(c->i, div);
#else
    (void)c;
    (void)div;
#endif
}

static NN2C_SIG_CPX NN2C_SIG_FN(nn2c_sig_add)(NN2C_SIG_CPX a, NN2C_SIG_CPX b) {
    NN2C_SIG_CPX s;
    s.r = NN2C_SIG_ADD(a.r, b.r);
    s.i = NN2C_SIG_ADD(a.i, b.i);
    return s;
}

static NN2C_SIG_CPX NN2C_SIG_FN(nn2c_sig_sub)(NN2C_SIG_CPX a, NN2C_SIG_CPX b) {
    NN2C_SIG_CPX s;
    s.r = NN2C_SIG_SUB(a.r, b.r);
    s.i = NN2C_SIG_SUB(a.i, b.i);
    return s;
}

static void NN2C_SIG_FN(nn2c_sig_bfly2)(NN2C_SIG_CPX *fout, int32_t fstride, const NN2C_SIG_CPX *tw, int32_t m) {
    NN2C_SIG_CPX *fout2 = fout + m;
    const NN2C_SIG_CPX *tw1 = tw;
    for (int32_t k = 0; k < m; ++k) {
        NN2C_SIG_FN(nn2c_sig_fixdiv)(fout, 2);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(fout2, 2);
        const NN2C_SIG_CPX t = NN2C_SIG_FN(nn2c_sig_cmul)(*fout2, *tw1);
        tw1 += fstride;
        *fout2 = NN2C_SIG_FN(nn2c_sig_sub)(*fout, t);
        *fout = NN2C_SIG_FN(nn2c_sig_add)(*fout, t);
        ++fout2;
        ++fout;
    }
}

static void NN2C_SIG_FN(nn2c_sig_bfly4)(NN2C_SIG_CPX *fout, int32_t fstride, const NN2C_SIG_CPX *tw, int32_t m,
                                        int32_t inverse) {
    const NN2C_SIG_CPX *tw1 = tw, *tw2 = tw, *tw3 = tw;
    NN2C_SIG_CPX s[6];
    const int32_t m2 = 2 * m, m3 = 3 * m;
    for (int32_t k = 0; k < m; ++k) {
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&fout[0], 4);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&fout[m], 4);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&fout[m2], 4);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&fout[m3], 4);
        s[0] = NN2C_SIG_FN(nn2c_sig_cmul)(fout[m], *tw1);
        s[1] = NN2C_SIG_FN(nn2c_sig_cmul)(fout[m2], *tw2);
        s[2] = NN2C_SIG_FN(nn2c_sig_cmul)(fout[m3], *tw3);
        s[5] = NN2C_SIG_FN(nn2c_sig_sub)(fout[0], s[1]);
        fout[0] = NN2C_SIG_FN(nn2c_sig_add)(fout[0], s[1]);
        s[3] = NN2C_SIG_FN(nn2c_sig_add)(s[0], s[2]);
        s[4] = NN2C_SIG_FN(nn2c_sig_sub)(s[0], s[2]);
        fout[m2] = NN2C_SIG_FN(nn2c_sig_sub)(fout[0], s[3]);
        tw1 += fstride;
        tw2 += fstride * 2;
        tw3 += fstride * 3;
        fout[0] = NN2C_SIG_FN(nn2c_sig_add)(fout[0], s[3]);
        if (inverse) { /* kissfft's only butterfly that branches on st->inverse */
            fout[m].r = NN2C_SIG_SUB(s[5].r, s[4].i);
            fout[m].i = NN2C_SIG_ADD(s[5].i, s[4].r);
            fout[m3].r = NN2C_SIG_ADD(s[5].r, s[4].i);
            fout[m3].i = NN2C_SIG_SUB(s[5].i, s[4].r);
        } else {
            fout[m].r = NN2C_SIG_ADD(s[5].r, s[4].i);
            fout[m].i = NN2C_SIG_SUB(s[5].i, s[4].r);
            fout[m3].r = NN2C_SIG_SUB(s[5].r, s[4].i);
            fout[m3].i = NN2C_SIG_ADD(s[5].i, s[4].r);
        }
        ++fout;
    }
}

static void NN2C_SIG_FN(nn2c_sig_bfly3)(NN2C_SIG_CPX *fout, int32_t fstride, const NN2C_SIG_CPX *tw, int32_t m) {
    const int32_t m2 = 2 * m;
    const NN2C_SIG_CPX *tw1 = tw, *tw2 = tw;
    const NN2C_SIG_CPX epi3 = tw[fstride * m];
    NN2C_SIG_CPX s[5];
    for (int32_t k = 0; k < m; ++k) {
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&fout[0], 3);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&fout[m], 3);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&fout[m2], 3);
        s[1] = NN2C_SIG_FN(nn2c_sig_cmul)(fout[m], *tw1);
        s[2] = NN2C_SIG_FN(nn2c_sig_cmul)(fout[m2], *tw2);
        s[3] = NN2C_SIG_FN(nn2c_sig_add)(s[1], s[2]);
        s[0] = NN2C_SIG_FN(nn2c_sig_sub)(s[1], s[2]);
        tw1 += fstride;
        tw2 += fstride * 2;
        fout[m].r = NN2C_SIG_SUB(fout[0].r, NN2C_SIG_HALF(s[3].r));
        fout[m].i = NN2C_SIG_SUB(fout[0].i, NN2C_SIG_HALF(s[3].i));
        s[0].r = NN2C_SIG_SMULR(s[0].r, epi3.i);
        s[0].i = NN2C_SIG_SMULR(s[0].i, epi3.i);
        fout[0] = NN2C_SIG_FN(nn2c_sig_add)(fout[0], s[3]);
        fout[m2].r = NN2C_SIG_ADD(fout[m].r, s[0].i);
        fout[m2].i = NN2C_SIG_SUB(fout[m].i, s[0].r);
        fout[m].r = NN2C_SIG_SUB(fout[m].r, s[0].i);
        fout[m].i = NN2C_SIG_ADD(fout[m].i, s[0].r);
        ++fout;
    }
}

static void NN2C_SIG_FN(nn2c_sig_bfly5)(NN2C_SIG_CPX *fout, int32_t fstride, const NN2C_SIG_CPX *tw, int32_t m) {
    const NN2C_SIG_CPX ya = tw[fstride * m], yb = tw[fstride * 2 * m];
    NN2C_SIG_CPX *f0 = fout, *f1 = fout + m, *f2 = fout + 2 * m, *f3 = fout + 3 * m, *f4 = fout + 4 * m;
    NN2C_SIG_CPX s[13];
    for (int32_t u = 0; u < m; ++u) {
        NN2C_SIG_FN(nn2c_sig_fixdiv)(f0, 5);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(f1, 5);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(f2, 5);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(f3, 5);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(f4, 5);
        s[0] = *f0;
        s[1] = NN2C_SIG_FN(nn2c_sig_cmul)(*f1, tw[u * fstride]);
        s[2] = NN2C_SIG_FN(nn2c_sig_cmul)(*f2, tw[2 * u * fstride]);
        s[3] = NN2C_SIG_FN(nn2c_sig_cmul)(*f3, tw[3 * u * fstride]);
        s[4] = NN2C_SIG_FN(nn2c_sig_cmul)(*f4, tw[4 * u * fstride]);
        s[7] = NN2C_SIG_FN(nn2c_sig_add)(s[1], s[4]);
        s[10] = NN2C_SIG_FN(nn2c_sig_sub)(s[1], s[4]);
        s[8] = NN2C_SIG_FN(nn2c_sig_add)(s[2], s[3]);
        s[9] = NN2C_SIG_FN(nn2c_sig_sub)(s[2], s[3]);
        f0->r = NN2C_SIG_ADD(f0->r, NN2C_SIG_ADD(s[7].r, s[8].r));
        f0->i = NN2C_SIG_ADD(f0->i, NN2C_SIG_ADD(s[7].i, s[8].i));
        s[5].r = NN2C_SIG_ADD(NN2C_SIG_ADD(s[0].r, NN2C_SIG_SMULR(s[7].r, ya.r)), NN2C_SIG_SMULR(s[8].r, yb.r));
        s[5].i = NN2C_SIG_ADD(NN2C_SIG_ADD(s[0].i, NN2C_SIG_SMULR(s[7].i, ya.r)), NN2C_SIG_SMULR(s[8].i, yb.r));
        s[6].r = NN2C_SIG_ADD(NN2C_SIG_SMULR(s[10].i, ya.i), NN2C_SIG_SMULR(s[9].i, yb.i));
        s[6].i = NN2C_SIG_SUB(NN2C_SIG_NEG(NN2C_SIG_SMULR(s[10].r, ya.i)), NN2C_SIG_SMULR(s[9].r, yb.i));
        *f1 = NN2C_SIG_FN(nn2c_sig_sub)(s[5], s[6]);
        *f4 = NN2C_SIG_FN(nn2c_sig_add)(s[5], s[6]);
        s[11].r = NN2C_SIG_ADD(NN2C_SIG_ADD(s[0].r, NN2C_SIG_SMULR(s[7].r, yb.r)), NN2C_SIG_SMULR(s[8].r, ya.r));
        s[11].i = NN2C_SIG_ADD(NN2C_SIG_ADD(s[0].i, NN2C_SIG_SMULR(s[7].i, yb.r)), NN2C_SIG_SMULR(s[8].i, ya.r));
        s[12].r = NN2C_SIG_ADD(NN2C_SIG_NEG(NN2C_SIG_SMULR(s[10].i, yb.i)), NN2C_SIG_SMULR(s[9].i, ya.i));
        s[12].i = NN2C_SIG_SUB(NN2C_SIG_SMULR(s[10].r, yb.i), NN2C_SIG_SMULR(s[9].r, ya.i));
        *f2 = NN2C_SIG_FN(nn2c_sig_add)(s[11], s[12]);
        *f3 = NN2C_SIG_FN(nn2c_sig_sub)(s[11], s[12]);
        ++f0;
        ++f1;
        ++f2;
        ++f3;
        ++f4;
    }
}

static void NN2C_SIG_FN(nn2c_sig_work)(NN2C_SIG_CPX *fout, const NN2C_SIG_CPX *f, int32_t fstride,
                                       const int32_t *factors, const NN2C_SIG_CPX *tw, int32_t inverse) {
    const int32_t p = factors[0], m = factors[1];
    if (m == 1) {
        for (int32_t j = 0; j < p; ++j) {
            fout[j] = *f;
            f += fstride;
        }
    } else {
        for (int32_t j = 0; j < p; ++j) {
            NN2C_SIG_FN(nn2c_sig_work)(fout + j * m, f, fstride * p, factors + 2, tw, inverse);
            f += fstride;
        }
    }
    switch (p) {
    case 2:
        NN2C_SIG_FN(nn2c_sig_bfly2)(fout, fstride, tw, m);
        break;
    case 3:
        NN2C_SIG_FN(nn2c_sig_bfly3)(fout, fstride, tw, m);
        break;
    case 4:
        NN2C_SIG_FN(nn2c_sig_bfly4)(fout, fstride, tw, m, inverse);
        break;
    default: /* radix 5; the lowering refuses larger primes (TFLM's kissfft crashes on them) */
        NN2C_SIG_FN(nn2c_sig_bfly5)(fout, fstride, tw, m);
        break;
    }
}

void NN2C_SIG_FN(nn2c_signal_rfft)(const nn2c_signal_rfft_params_t *p, const NN2C_SIG_T *twiddles,
                                   const NN2C_SIG_T *super_twiddles, const NN2C_SIG_T *x, NN2C_SIG_T *y,
                                   NN2C_SIG_T *scratch) {
    const int32_t ncfft = p->fft_length / 2;
    NN2C_SIG_T *work = scratch;
    NN2C_SIG_CPX *tmp = (NN2C_SIG_CPX *)(void *)(scratch + p->fft_length);
    const NN2C_SIG_CPX *tw = (const NN2C_SIG_CPX *)(const void *)twiddles;
    const NN2C_SIG_CPX *super_tw = (const NN2C_SIG_CPX *)(const void *)super_twiddles;
    for (int32_t row = 0; row < p->rows; ++row) {
        const NN2C_SIG_T *in = x + row * p->input_length;
        NN2C_SIG_CPX *out = (NN2C_SIG_CPX *)(void *)(y + row * 2 * (ncfft + 1));
        memcpy(work, in, sizeof(NN2C_SIG_T) * (size_t)p->input_length);
        for (int32_t i = p->input_length; i < p->fft_length; ++i) {
            work[i] = 0;
        }
        /* kiss_fft of the packed (even, odd) samples into tmp */
        NN2C_SIG_FN(nn2c_sig_work)(tmp, (const NN2C_SIG_CPX *)(const void *)work, 1, p->factors, tw, 0);
        /* kiss_fftr's split of the two interleaved real transforms */
        NN2C_SIG_CPX tdc = tmp[0];
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&tdc, 2);
        out[0].r = NN2C_SIG_ADD(tdc.r, tdc.i);
        out[ncfft].r = NN2C_SIG_SUB(tdc.r, tdc.i);
        out[0].i = 0;
        out[ncfft].i = 0;
        for (int32_t k = 1; k <= ncfft / 2; ++k) {
            NN2C_SIG_CPX fpk = tmp[k], fpnk;
            fpnk.r = tmp[ncfft - k].r;
            fpnk.i = NN2C_SIG_NEG(tmp[ncfft - k].i);
            NN2C_SIG_FN(nn2c_sig_fixdiv)(&fpk, 2);
            NN2C_SIG_FN(nn2c_sig_fixdiv)(&fpnk, 2);
            const NN2C_SIG_CPX f1k = NN2C_SIG_FN(nn2c_sig_add)(fpk, fpnk);
            const NN2C_SIG_CPX f2k = NN2C_SIG_FN(nn2c_sig_sub)(fpk, fpnk);
            const NN2C_SIG_CPX t = NN2C_SIG_FN(nn2c_sig_cmul)(f2k, super_tw[k - 1]);
            out[k].r = NN2C_SIG_HALF_SUM(f1k.r, t.r);
            out[k].i = NN2C_SIG_HALF_SUM(f1k.i, t.i);
            out[ncfft - k].r = NN2C_SIG_HALF_DIFF(f1k.r, t.r);
            out[ncfft - k].i = NN2C_SIG_HALF_DIFF(t.i, f1k.i);
        }
    }
}

/* kiss_fftri (kiss_fftr_alloc with inverse_fft = 1: the twiddles are the conjugate ones) */
void NN2C_SIG_FN(nn2c_signal_irfft)(const nn2c_signal_rfft_params_t *p, const NN2C_SIG_T *twiddles,
                                    const NN2C_SIG_T *super_twiddles, const NN2C_SIG_T *x, NN2C_SIG_T *y,
                                    NN2C_SIG_T *scratch) {
    const int32_t ncfft = p->fft_length / 2;
    NN2C_SIG_CPX *tmp = (NN2C_SIG_CPX *)(void *)scratch;
    const NN2C_SIG_CPX *tw = (const NN2C_SIG_CPX *)(const void *)twiddles;
    const NN2C_SIG_CPX *super_tw = (const NN2C_SIG_CPX *)(const void *)super_twiddles;
    for (int32_t row = 0; row < p->rows; ++row) {
        const NN2C_SIG_CPX *in = (const NN2C_SIG_CPX *)(const void *)(x + row * 2 * p->input_length);
        NN2C_SIG_T *out = y + row * p->fft_length;
        tmp[0].r = NN2C_SIG_ADD(in[0].r, in[ncfft].r);
        tmp[0].i = NN2C_SIG_SUB(in[0].r, in[ncfft].r);
        NN2C_SIG_FN(nn2c_sig_fixdiv)(&tmp[0], 2);
        for (int32_t k = 1; k <= ncfft / 2; ++k) {
            NN2C_SIG_CPX fk = in[k], fnkc;
            fnkc.r = in[ncfft - k].r;
            fnkc.i = NN2C_SIG_NEG(in[ncfft - k].i);
            NN2C_SIG_FN(nn2c_sig_fixdiv)(&fk, 2);
            NN2C_SIG_FN(nn2c_sig_fixdiv)(&fnkc, 2);
            const NN2C_SIG_CPX fek = NN2C_SIG_FN(nn2c_sig_add)(fk, fnkc);
            const NN2C_SIG_CPX diff = NN2C_SIG_FN(nn2c_sig_sub)(fk, fnkc);
            const NN2C_SIG_CPX fok = NN2C_SIG_FN(nn2c_sig_cmul)(diff, super_tw[k - 1]);
            tmp[k] = NN2C_SIG_FN(nn2c_sig_add)(fek, fok);
            tmp[ncfft - k] = NN2C_SIG_FN(nn2c_sig_sub)(fek, fok);
            tmp[ncfft - k].i = NN2C_SIG_NEG(tmp[ncfft - k].i); /* tmpbuf[ncfft - k].i *= -1 */
        }
        NN2C_SIG_FN(nn2c_sig_work)((NN2C_SIG_CPX *)(void *)out, tmp, 1, p->factors, tw, 1);
#if !NN2C_SIG_FIXED
        /* irfft_float.cc: kissfft leaves the inverse scaled by fft_length */
        for (int32_t i = 0; i < p->fft_length; ++i) {
            out[i] /= (float)p->fft_length;
        }
#endif
    }
}

#undef NN2C_SIG_CPX
#undef NN2C_SIG_FN
#undef NN2C_SIG_FFT_SFX
#undef NN2C_SIG_T
#undef NN2C_SIG_ADD
#undef NN2C_SIG_SUB
#undef NN2C_SIG_NEG
#undef NN2C_SIG_ROUND
#undef NN2C_SIG_SMULR
#undef NN2C_SIG_CMUL_R
#undef NN2C_SIG_CMUL_I
#undef NN2C_SIG_DIV
#undef NN2C_SIG_HALF
#undef NN2C_SIG_HALF_SUM
#undef NN2C_SIG_HALF_DIFF
#undef NN2C_SIG_FIXED
#endif /* NN2C_SIG_FFT_SFX */
