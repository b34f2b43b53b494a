/* Element-wise operators with TFLite Micro's reference arithmetic (see nn2c_elementwise.h).
 *
 * Each binary operator is an element function f(params, a, b) and the shared broadcast walk
 * NN2C_EW_BINARY, which calls f over contiguous runs of the output. Integer arithmetic that
 * TFLite performs in int32 and lets wrap is done here through uint32 so that it wraps the same
 * way without undefined behaviour. */
#include "nn2c_elementwise.h"

#include <math.h>
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>
#endif

/* --- small helpers -------------------------------------------------------------------------- */

static inline int32_t nn2c_ew_wrap_add(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t nn2c_ew_wrap_sub(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

static inline int32_t nn2c_ew_wrap_mul(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a * (uint32_t)b);
}

/* Number of inner runs: the product of all loop extents but the innermost. */
static int32_t nn2c_ew_runs(const nn2c_ew_bcast_t *bc) {
    int32_t runs = 1;
    for (int32_t d = 0; d < bc->rank - 1; ++d) {
        runs *= bc->dims[d];
    }
    return runs;
}

/* Odometer step over the outer loops, keeping both input offsets in step. */
static void nn2c_ew_advance(const nn2c_ew_bcast_t *bc, int32_t *idx, int32_t *off1, int32_t *off2) {
    for (int32_t d = bc->rank - 2; d >= 0; --d) {
        idx[d] += 1;
        *off1 += bc->stride1[d];
        *off2 += bc->stride2[d];
        if (idx[d] < bc->dims[d]) {
            return;
        }
        *off1 -= bc->stride1[d] * bc->dims[d];
        *off2 -= bc->stride2[d] * bc->dims[d];
        idx[d] = 0;
    }
}

/* The broadcast walk. The innermost strides are 0 or 1; equal shapes (and per-channel
 * broadcasts, whose inner run is contiguous in both inputs) get a plain linear loop. */
#define NN2C_EW_BINARY(name, params_t, T, elem)                                                  \
    static void name##_run(const params_t *p, const T *a, int32_t sa, const T *b, int32_t sb,   \
                           T *o, int32_t n) {                                                   \
        if (sa == 1 && sb == 1) {                                                               \
            for (int32_t i = 0; i < n; ++i) o[i] = elem(p, a[i], b[i]);                         \
        } else {                                                                                \
            for (int32_t i = 0; i < n; ++i) o[i] = elem(p, a[i * sa], b[i * sb]);               \
        }                                                                                       \
    }                                                                                           \
    void name(const params_t *p, const T *in1, const T *in2, T *out) {                          \
        const nn2c_ew_bcast_t *bc = &p->bc;                                                     \
        const int32_t last = bc->rank - 1;                                                      \
        const int32_t n = bc->dims[last];                                                       \
        const int32_t runs = nn2c_ew_runs(bc);                                                  \
        int32_t idx[NN2C_EW_MAX_DIMS] = {0};                                                    \
        int32_t off1 = 0, off2 = 0;                                                             \
        for (int32_t r = 0; r < runs; ++r) {                                                    \
            name##_run(p, in1 + off1, bc->stride1[last], in2 + off2, bc->stride2[last],         \
                       out + (size_t)r * (size_t)n, n);                                         \
            nn2c_ew_advance(bc, idx, &off1, &off2);                                             \
        }                                                                                       \
    }

/* --- ADD ------------------------------------------------------------------------------------- */

/* reference_ops::AddElementwise: rescale both inputs to the common scale, add, rescale out. */
static inline int32_t nn2c_ew_add_q(const nn2c_add_q_params_t *p, int32_t a, int32_t b) {
    const int32_t shifted1 = (int32_t)((uint32_t)(p->input1_offset + a) << p->left_shift);
    const int32_t shifted2 = (int32_t)((uint32_t)(p->input2_offset + b) << p->left_shift);
    const int32_t scaled1 = nn2c_mbqm_smaller_than_one(shifted1, p->input1_multiplier, p->input1_shift);
    const int32_t scaled2 = nn2c_mbqm_smaller_than_one(shifted2, p->input2_multiplier, p->input2_shift);
    const int32_t raw = nn2c_mbqm_smaller_than_one(nn2c_ew_wrap_add(scaled1, scaled2), p->output_multiplier,
                                                   p->output_shift) + p->output_offset;
    return nn2c_clamp_i32(raw, p->act_min, p->act_max);
}

static inline int8_t nn2c_ew_add_s8(const nn2c_add_q_params_t *p, int8_t a, int8_t b) {
    return (int8_t)nn2c_ew_add_q(p, a, b);
}

static inline int16_t nn2c_ew_add_s16(const nn2c_add_q_params_t *p, int16_t a, int16_t b) {
    return (int16_t)nn2c_ew_add_q(p, a, b);
}

static inline float nn2c_ew_add_f32(const nn2c_ew_f32_params_t *p, float a, float b) {
    return nn2c_clamp_f32(a + b, p->act_min, p->act_max);
}

/* TFLite Micro applies no activation to int32 ADD; the sum wraps. */
static inline int32_t nn2c_ew_add_i32(const nn2c_ew_i32_params_t *p, int32_t a, int32_t b) {
    (void)p;
    return nn2c_ew_wrap_add(a, b);
}

NN2C_EW_BINARY(nn2c_add_s8, nn2c_add_q_params_t, int8_t, nn2c_ew_add_s8)
NN2C_EW_BINARY(nn2c_add_s16, nn2c_add_q_params_t, int16_t, nn2c_ew_add_s16)
NN2C_EW_BINARY(nn2c_add_f32, nn2c_ew_f32_params_t, float, nn2c_ew_add_f32)
NN2C_EW_BINARY(nn2c_add_i32, nn2c_ew_i32_params_t, int32_t, nn2c_ew_add_i32)

/* --- MUL ------------------------------------------------------------------------------------- */

/* reference_integer_ops::MulElementwise: one requantisation of the product of offset inputs. */
static inline int32_t nn2c_ew_mul_q(const nn2c_mul_q_params_t *p, int32_t a, int32_t b) {
    const int32_t product = (p->input1_offset + a) * (p->input2_offset + b);
    const int32_t raw = p->output_offset + nn2c_mbqm(product, p->output_multiplier, (int)p->output_shift);
    return nn2c_clamp_i32(raw, p->act_min, p->act_max);
}

static inline int8_t nn2c_ew_mul_s8(const nn2c_mul_q_params_t *p, int8_t a, int8_t b) {
    return (int8_t)nn2c_ew_mul_q(p, a, b);
}

static inline int16_t nn2c_ew_mul_s16(const nn2c_mul_q_params_t *p, int16_t a, int16_t b) {
    return (int16_t)nn2c_ew_mul_q(p, a, b);
}

static inline float nn2c_ew_mul_f32(const nn2c_ew_f32_params_t *p, float a, float b) {
    return nn2c_clamp_f32(a * b, p->act_min, p->act_max);
}

static inline int32_t nn2c_ew_mul_i32(const nn2c_ew_i32_params_t *p, int32_t a, int32_t b) {
    return nn2c_clamp_i32(nn2c_ew_wrap_mul(a, b), p->act_min, p->act_max);
}

NN2C_EW_BINARY(nn2c_mul_s8, nn2c_mul_q_params_t, int8_t, nn2c_ew_mul_s8)
NN2C_EW_BINARY(nn2c_mul_s16, nn2c_mul_q_params_t, int16_t, nn2c_ew_mul_s16)
NN2C_EW_BINARY(nn2c_mul_f32, nn2c_ew_f32_params_t, float, nn2c_ew_mul_f32)
NN2C_EW_BINARY(nn2c_mul_i32, nn2c_ew_i32_params_t, int32_t, nn2c_ew_mul_i32)

/* Armv7E-M (Cortex-M4, M7) with the inline assembly: four channels at a time (nn2c_mul_channels4_asm). */
#if defined(NN2C_INLINE_ASM) && defined(__ARM_ARCH_7EM__) && !defined(__cplusplus)
#define NN2C_MUL_CHANNELS_ASM 1

/* One group of four channels over every pixel: the words at x, x + C, ... below end, the outputs d bytes after
 * them; F and G the channels' doubled factors 2 (s - zp_s) as int16 pairs (channels 0, 2 and 1, 3), ox the input
 * offset in both halves; m, h, r the doubled record (nn2c_requant_doubled). */
typedef struct {
    const int8_t *x;
    int32_t d;
    const int8_t *end;
    int32_t C, F, G, ox, m, h, r;
} nn2c_mul_channels_frame_t;

/* nn2c_requant_doubled of the product in lr into register OUT, r2 its scratch */
#define NN2C_MUL_CHANNELS_RQ(OUT) \
    "add    " OUT ", r8, lr, asr #31\n\t" \
    "smmlar " OUT ", lr, r7, " OUT "\n\t" \
    "asr    " OUT ", " OUT ", r9\n\t" \
    "ssat   " OUT ", #8, " OUT "\n\t"

/* Per pixel one word of four inputs, SXTAB16 to (x0, x2) and (x1, x3) plus the offset, one SMULxy a channel, its
 * output stage and the four bytes packed into one word: 31 instructions per 4 outputs (counted), against some 24 an
 * output in C (GCC 12 -O2). Every register but sp and pc: r0 x, r1 d, r3 C, r4 F, r5 G, r6 ox, r7 m, r8 h, r9 r,
 * r10 (x0, x2), r11 (x1, x3), r12 the packed word, lr a product, r2 scratch (end on the stack). */
__attribute__((naked, noinline)) static void nn2c_mul_channels4_asm(
    __attribute__((unused)) const nn2c_mul_channels_frame_t *frame) {
    __asm__ volatile(
        "push   {r4-r11, lr}\n\t"
        "ldm    r0, {r0-r9}\n\t"
        "push   {r2}\n"
        "1:\n\t"
        "ldr    r10, [r0]\n\t"
        "sxtab16 r11, r6, r10, ror #8\n\t"
        "sxtab16 r10, r6, r10\n\t"
        "smulbb lr, r10, r4\n\t"
        NN2C_MUL_CHANNELS_RQ("r12")
        "smulbb lr, r11, r5\n\t"
        NN2C_MUL_CHANNELS_RQ("r2")
        "bfi    r12, r2, #8, #8\n\t"
        "smultt lr, r10, r4\n\t"
        NN2C_MUL_CHANNELS_RQ("r2")
        "bfi    r12, r2, #16, #8\n\t"
        "smultt lr, r11, r5\n\t"
        NN2C_MUL_CHANNELS_RQ("r2")
        "bfi    r12, r2, #24, #8\n\t"
        "str    r12, [r0, r1]\n\t"
        "add    r0, r0, r3\n\t"
        "ldr    r2, [sp]\n\t"
        "cmp    r0, r2\n\t"
        "bne    1b\n\t"
        "add    sp, sp, #4\n\t"
        "pop    {r4-r11, pc}\n\t");
}
#undef NN2C_MUL_CHANNELS_RQ

/* two int16 halves into a word: lo, then hi */
static inline int32_t nn2c_mul_channels_pack(int32_t lo, int32_t hi) {
    return (int32_t)(((uint32_t)hi << 16) | ((uint32_t)lo & 0xFFFFu));
}
#endif

/* Channel by channel over every pixel, the channel's factor 2 (s - zp_s) in a register (the pixels are C bytes
 * apart); with the assembly, four channels at a time where C is a multiple of 4 and both tensors word-aligned (each
 * pixel's group then one aligned word). x and y may be the same tensor. */
void nn2c_mul_s8_channels(const nn2c_mul_channels_params_t *p, const int8_t *x, const int8_t *s, int8_t *y) {
    const int32_t C = p->channels, m = p->multiplier, h = p->high, r = p->shift, ox = p->x_offset, os = p->s_offset;
    const int8_t *const x_end = x + (intptr_t)p->pixels * C;
    int32_t c = 0;
#if defined(NN2C_MUL_CHANNELS_ASM)
    if ((C & 3) == 0 && ((((uintptr_t)x | (uintptr_t)y) & 3u) == 0u)) {
        nn2c_mul_channels_frame_t f;
        f.d = (int32_t)((uintptr_t)y - (uintptr_t)x); /* (as addresses: x and y need not be one array) */
        f.C = C;
        f.ox = nn2c_mul_channels_pack(ox, ox);
        f.m = m;
        f.h = h;
        f.r = r;
        for (; c < C; c += 4) {
            f.x = x + c;
            f.end = x_end + c;
            f.F = nn2c_mul_channels_pack(2 * (s[c] + os), 2 * (s[c + 2] + os));
            f.G = nn2c_mul_channels_pack(2 * (s[c + 1] + os), 2 * (s[c + 3] + os));
            nn2c_mul_channels4_asm(&f);
        }
    }
#endif
    for (; c < C; ++c) {
        const int32_t f2 = 2 * (s[c] + os);
        int8_t *q = y + c;
        for (const int8_t *v = x + c; v < x_end; v += C, q += C) {
            *q = (int8_t)nn2c_requant_doubled((*v + ox) * f2, m, h, r);
        }
    }
}

/* --- DIV ------------------------------------------------------------------------------------- */

static inline int nn2c_ew_clz32(uint32_t x) {
    int n = 0;
    if (x == 0) {
        return 32;
    }
    while (!(x & 0x80000000u)) {
        x <<= 1;
        ++n;
    }
    return n;
}

/* TFLite CountLeadingSignBits: redundant sign bits, 31 for 0 and -1. */
static inline int nn2c_ew_clrsb32(int32_t x) {
    const uint32_t magnitude = x < 0 ? ~(uint32_t)x : (uint32_t)x;
    return nn2c_ew_clz32(magnitude) - 1;
}

/* gemmlowp SaturatingRoundingMultiplyByPOT for a positive exponent: x * 2^e, saturated. */
static inline int32_t nn2c_ew_sat_shl(int32_t x, int e) {
    const int32_t threshold = (int32_t)(((uint32_t)1 << (31 - e)) - 1);
    if (x > threshold) return INT32_MAX;
    if (x < -threshold) return INT32_MIN;
    return (int32_t)((uint32_t)x << e);
}

/* gemmlowp RoundingHalfSum: (a + b) / 2 rounded half away from zero. */
static inline int32_t nn2c_ew_rounding_half_sum(int32_t a, int32_t b) {
    const int64_t sum = (int64_t)a + (int64_t)b;
    return (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
}

/* gemmlowp one_over_one_plus_x_for_x_in_0_1 (Q0.31 in, Q0.31 out): three Newton-Raphson steps
 * in Q2.29 from the initial guess 48/17 - 32/17 * d, where d = (1 + x) / 2. */
static inline int32_t nn2c_ew_one_over_one_plus_x(int32_t a) {
    const int32_t one_q2 = (int32_t)1 << 29;
    const int32_t half_denominator = nn2c_ew_rounding_half_sum(a, INT32_MAX);
    int32_t x = nn2c_ew_wrap_add(1515870810, nn2c_srdhm(half_denominator, -1010580540));
    for (int i = 0; i < 3; ++i) {
        const int32_t half_denominator_times_x = nn2c_srdhm(half_denominator, x);
        const int32_t one_minus = nn2c_ew_wrap_sub(one_q2, half_denominator_times_x);
        x = nn2c_ew_wrap_add(x, nn2c_ew_sat_shl(nn2c_srdhm(x, one_minus), 2));
    }
    return nn2c_ew_sat_shl(x, 1);
}

/* TFLite GetReciprocal(x, 31, &shift) for x > 0: 1/x as a Q0.31 mantissa and a power of two. */
static inline int32_t nn2c_ew_reciprocal(int32_t x, int *num_bits_over_unit) {
    const int headroom_plus_one = nn2c_ew_clz32((uint32_t)x);
    const uint32_t shifted = headroom_plus_one < 32 ? (uint32_t)x << headroom_plus_one : 0u;
    *num_bits_over_unit = 31 - headroom_plus_one;
    return nn2c_ew_one_over_one_plus_x((int32_t)(shifted - 0x80000000u));
}

/* gemmlowp RoundingDivideByPOT for any exponent. TFLite Micro's int8 DIV can hand it exponents
 * outside [0, 31] (a tiny numerator or a zero divisor), where the C++ is undefined; this returns
 * what TFLite Micro's x86 build computes there: shift counts taken modulo the register width. */
static inline int32_t nn2c_ew_rdbpot_any(int32_t x, int exponent) {
    if (exponent >= 0 && exponent <= 31) {
        return nn2c_rdbpot(x, exponent);
    }
    const int32_t mask = (int32_t)(uint32_t)(((uint64_t)1 << (exponent & 63)) - 1u);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return nn2c_ew_wrap_add(x >> (exponent & 31), remainder > threshold ? 1 : 0);
}

/* The quotient num * 2^(headroom + recip_shift) / den rounded half away from zero: the value
 * TFLite Micro's reciprocal-and-multiply produces for a nonzero divisor (checked against it on
 * every int8 pair; the reciprocal's last-bit error never shows). |num| << headroom < 2^31 and
 * recip_shift <= 8, so the product fits in 64 bits. */
static inline int32_t nn2c_ew_div_quotient(int32_t num, int32_t den, int headroom, int recip_shift) {
    const int64_t n = (int64_t)num * ((int64_t)1 << (headroom + recip_shift));
    const int64_t magnitude = n < 0 ? -n : n;
    const int64_t q = (2 * magnitude + den) / (2 * (int64_t)den);
    const int64_t signed_q = n < 0 ? -q : q;
    return (int32_t)(signed_q > INT32_MAX ? INT32_MAX : (signed_q < INT32_MIN ? INT32_MIN : signed_q));
}

/* reference_ops::DivElementwise (int8): the numerator is normalised by its headroom, divided by
 * the denominator (as reciprocal mantissa 2^recip_shift / den), then rescaled once by the output
 * multiplier. A zero divisor goes through TFLite's reciprocal of 0 (1 / (1 + -1.0) in Q0.31). */
static inline int8_t nn2c_ew_div_s8(const nn2c_mul_q_params_t *p, int8_t a, int8_t b) {
    int32_t num = p->input1_offset + a;
    int32_t den = p->input2_offset + b;
    if (den < 0) {
        num = -num;
        den = -den;
    }
    const int headroom = nn2c_ew_clrsb32(num);
    int recip_shift;
    int32_t unscaled;
    if (den != 0) {
        recip_shift = 31 - nn2c_ew_clz32((uint32_t)den);
        unscaled = nn2c_ew_div_quotient(num, den, headroom, recip_shift);
    } else {
        const int32_t den_inv = nn2c_ew_reciprocal(den, &recip_shift);
        unscaled = nn2c_srdhm((int32_t)((uint32_t)num << headroom), den_inv);
    }
    const int total_shift = (int)p->output_shift - recip_shift - headroom;
    const int32_t raw = p->output_offset + nn2c_ew_rdbpot_any(nn2c_srdhm(unscaled, p->output_multiplier),
                                                             -total_shift);
    return (int8_t)nn2c_clamp_i32(raw, p->act_min, p->act_max);
}

static inline float nn2c_ew_div_f32(const nn2c_ew_f32_params_t *p, float a, float b) {
    return nn2c_clamp_f32(a / b, p->act_min, p->act_max);
}

/* Integer division truncates. TFLite Micro traps on a zero divisor and on INT32_MIN / -1;
 * here those give 0 and INT32_MIN, so that the generated code never traps. */
static inline int32_t nn2c_ew_div_i32(const nn2c_ew_i32_params_t *p, int32_t a, int32_t b) {
    int32_t q;
    if (b == 0) {
        q = 0;
    } else if (b == -1) {
        q = nn2c_ew_wrap_sub(0, a);
    } else {
        q = a / b;
    }
    return nn2c_clamp_i32(q, p->act_min, p->act_max);
}

NN2C_EW_BINARY(nn2c_div_s8, nn2c_mul_q_params_t, int8_t, nn2c_ew_div_s8)
NN2C_EW_BINARY(nn2c_div_f32, nn2c_ew_f32_params_t, float, nn2c_ew_div_f32)
NN2C_EW_BINARY(nn2c_div_i32, nn2c_ew_i32_params_t, int32_t, nn2c_ew_div_i32)

/* --- MAXIMUM / MINIMUM ------------------------------------------------------------------------ */

/* Raw values are compared (TFLite Micro ignores quantization here): a > b ? a : b, so a NaN in
 * the first input yields the second, as in TFLite. */
#define NN2C_EW_MINMAX(suffix, T)                                                                \
    NN2C_INLINE T nn2c_ew_max_##suffix(const nn2c_ew_minmax_params_t *p, T a, T b) {             \
        (void)p;                                                                                \
        return a > b ? a : b;                                                                   \
    }                                                                                           \
    NN2C_INLINE T nn2c_ew_min_##suffix(const nn2c_ew_minmax_params_t *p, T a, T b) {             \
        (void)p;                                                                                \
        return a < b ? a : b;                                                                   \
    }                                                                                           \
    NN2C_EW_BINARY(nn2c_maximum_##suffix, nn2c_ew_minmax_params_t, T, nn2c_ew_max_##suffix)     \
    NN2C_EW_BINARY(nn2c_minimum_##suffix, nn2c_ew_minmax_params_t, T, nn2c_ew_min_##suffix)

NN2C_EW_MINMAX(s8, int8_t)
NN2C_EW_MINMAX(u8, uint8_t)
NN2C_EW_MINMAX(s16, int16_t)
NN2C_EW_MINMAX(i32, int32_t)
NN2C_EW_MINMAX(i64, int64_t)
NN2C_EW_MINMAX(f32, float)

/* --- integer arithmetic without quantization ------------------------------------------------- */

/* Narrow types compute in uint32 (wrapping, no undefined behaviour) and keep the low bits, as
 * onnxruntime's arithmetic in the element type does; int64 computes in uint64. The quotient of
 * two narrow values always fits int32; only MIN / -1 of int64 overflows, and a zero divisor
 * (a trap in onnxruntime) gives 0 here. */
#define NN2C_EW_WRAP(suffix, T, W)                                                                \
    NN2C_INLINE T nn2c_ew_add_wrap_##suffix(const nn2c_ew_minmax_params_t *p, T a, T b) {        \
        (void)p;                                                                                \
        return (T)((W)a + (W)b);                                                                \
    }                                                                                           \
    NN2C_INLINE T nn2c_ew_sub_wrap_##suffix(const nn2c_ew_minmax_params_t *p, T a, T b) {        \
        (void)p;                                                                                \
        return (T)((W)a - (W)b);                                                                \
    }                                                                                           \
    NN2C_INLINE T nn2c_ew_mul_wrap_##suffix(const nn2c_ew_minmax_params_t *p, T a, T b) {        \
        (void)p;                                                                                \
        return (T)((W)a * (W)b);                                                                \
    }                                                                                           \
    NN2C_EW_BINARY(nn2c_add_wrap_##suffix, nn2c_ew_minmax_params_t, T, nn2c_ew_add_wrap_##suffix) \
    NN2C_EW_BINARY(nn2c_sub_wrap_##suffix, nn2c_ew_minmax_params_t, T, nn2c_ew_sub_wrap_##suffix) \
    NN2C_EW_BINARY(nn2c_mul_wrap_##suffix, nn2c_ew_minmax_params_t, T, nn2c_ew_mul_wrap_##suffix)

NN2C_EW_WRAP(s8, int8_t, uint32_t)
NN2C_EW_WRAP(u8, uint8_t, uint32_t)
NN2C_EW_WRAP(s16, int16_t, uint32_t)
NN2C_EW_WRAP(i64, int64_t, uint64_t)

#define NN2C_EW_DIV_NARROW(suffix, T)                                                             \
    NN2C_INLINE T nn2c_ew_div_wrap_##suffix(const nn2c_ew_minmax_params_t *p, T a, T b) {        \
        (void)p;                                                                                \
        return b == 0 ? (T)0 : (T)((uint32_t)((int32_t)a / (int32_t)b));                        \
    }                                                                                           \
    NN2C_EW_BINARY(nn2c_div_wrap_##suffix, nn2c_ew_minmax_params_t, T, nn2c_ew_div_wrap_##suffix)

NN2C_EW_DIV_NARROW(s8, int8_t)
NN2C_EW_DIV_NARROW(u8, uint8_t)
NN2C_EW_DIV_NARROW(s16, int16_t)

NN2C_INLINE int64_t nn2c_ew_div_wrap_i64(const nn2c_ew_minmax_params_t *p, int64_t a, int64_t b) {
    (void)p;
    if (b == 0) {
        return 0;
    }
    if (b == -1) {
        return (int64_t)(0u - (uint64_t)a);
    }
    return a / b;
}
NN2C_EW_BINARY(nn2c_div_wrap_i64, nn2c_ew_minmax_params_t, int64_t, nn2c_ew_div_wrap_i64)

/* --- QUANTIZE / DEQUANTIZE ------------------------------------------------------------------- */

/* static_cast<int32_t>(roundf(r)) as TFLite Micro behaves on the x86 hosts it is checked on (INT32_MIN
 * for NaN and values outside the int32 range), without the C library's roundf (a call per element on
 * cores without VRINTA, e.g. the Cortex-M4): floats of magnitude 2^24 and more are integers already,
 * and below that r - trunc(r) is exact, so comparing it with 1/2 rounds half away from zero as roundf
 * (equal to it on all 2^32 floats, checked on the host). */
static inline int32_t nn2c_ew_f32_round_to_i32(float r) {
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 2)
    /* a Cortex-M FPv5 (GCC 12 sets __ARM_FP to 14 for the M7 with fpv5-d16 and for the M55, 4 for the
     * M4's fpv4-sp-d16): VRINTA, roundf is one instruction */
    r = roundf(r);
    return r >= -2147483648.0f && r < 2147483648.0f ? (int32_t)r : INT32_MIN; /* out of range, NaN */
#else
    if (!(r >= -2147483648.0f && r < 2147483648.0f)) {
        return INT32_MIN; /* out of range, NaN */
    }
    const int32_t i = (int32_t)r;
    const float frac = r - (float)i;
    /* frac in (-1, 1), doubled exactly: truncated, -1, 0 or 1 as frac <= -1/2, is between, or >= 1/2 (one
     * multiply and one conversion; two compares took some 10 instructions on the Cortex-M4) */
    return i + (int32_t)(frac * 2.0f);
#endif
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2) && defined(NN2C_INLINE_ASM)
/* Helium with floating point (Cortex-M55): four elements a step. The quotients stay scalar VDIVs (a
 * multiply by 1 / scale would round differently), into the lanes of q0; VCVTA rounds half away from
 * zero as roundf and saturates, and a lane that saturated high (no float rounds to INT32_MAX) or held a
 * NaN becomes INT32_MIN, as the portable version; the zero point is added wrapping, and two saturating
 * narrowings clamp to int8. tinyengine/vww's input (19,200 floats) took 403,216 instructions in the
 * portable loop (21 an element), 72,017 here (QEMU). Returns the elements done (a multiple of 4). */
static int32_t nn2c_ew_quantize4_f32_s8(const float *in, int8_t *out, int32_t count, float scale,
                                        int32_t zero_point) {
    const int32x4_t int_min = vdupq_n_s32(INT32_MIN);
    const int32_t int_max = INT32_MAX;
    int32_t steps = count >> 2;
    for (int32_t k = 0; k < steps; ++k) {
        __asm__ volatile("vldrw.32      q0, [%[in]], #16\n\t"
                         "vdiv.f32      s0, s0, %[scale]\n\t"
                         "vdiv.f32      s1, s1, %[scale]\n\t"
                         "vdiv.f32      s2, s2, %[scale]\n\t"
                         "vdiv.f32      s3, s3, %[scale]\n\t"
                         "vcvta.s32.f32 q1, q0\n\t"
                         "vcmp.f32      eq, q0, q0\n\t"
                         "vpst\n\t"
                         "vcmpt.i32     ne, q1, %[imax]\n\t"
                         "vpsel         q1, q1, %q[imin]\n\t"
                         "vadd.i32      q1, q1, %[zp]\n\t"
                         "vqmovnb.s32   q1, q1\n\t"
                         "vqmovnb.s16   q1, q1\n\t"
                         "vstrb.32      q1, [%[out]], #4\n\t"
                         : [in] "+r"(in), [out] "+r"(out)
                         : [scale] "t"(scale), [imax] "r"(int_max), [imin] "w"(int_min), [zp] "r"(zero_point)
                         : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "memory");
    }
    return steps << 2;
}
#define NN2C_EW_QUANTIZE_S8_VECTOR(count, scale, zero_point) \
    nn2c_ew_quantize4_f32_s8(in, (int8_t *)(void *)out, count, scale, zero_point)
#else
#define NN2C_EW_QUANTIZE_S8_VECTOR(count, scale, zero_point) 0
#endif

/* reference_ops::AffineQuantize: round(x / scale) + zero_point, in float, clamped (the parameters in
 * locals: the stores could alias the struct). VECTOR: the elements a vector loop did first (0: none). */
#define NN2C_EW_QUANTIZE(name, T, lo, hi, VECTOR)                                                \
    void name(const nn2c_quantize_params_t *p, const float *in, T *out) {                       \
        const int32_t count = p->count, zero_point = p->zero_point;                             \
        const float scale = p->scale;                                                           \
        for (int32_t i = VECTOR(count, scale, zero_point); i < count; ++i) {                    \
            const int32_t q = nn2c_ew_f32_round_to_i32(in[i] / scale);                          \
            const int32_t y = nn2c_ew_wrap_add(q, zero_point);                                  \
            out[i] = (T)((lo) == -128 && (hi) == 127 ? nn2c_sat_i8(y) : nn2c_clamp_i32(y, lo, hi)); \
        }                                                                                       \
    }

#define NN2C_EW_QUANTIZE_SCALAR(count, scale, zero_point) 0
NN2C_EW_QUANTIZE(nn2c_quantize_f32_s8, int8_t, -128, 127, NN2C_EW_QUANTIZE_S8_VECTOR)
NN2C_EW_QUANTIZE(nn2c_quantize_f32_s16, int16_t, -32768, 32767, NN2C_EW_QUANTIZE_SCALAR)

/* reference_ops::Requantize: (x - input_zp) rescaled by the multiplier, + output_zp, clamped (the
 * parameters in locals: the stores could alias the struct). */
#define NN2C_EW_REQUANTIZE(name, TIN, TOUT, lo, hi)                                              \
    void name(const nn2c_requantize_params_t *p, const TIN *in, TOUT *out) {                    \
        const int32_t count = p->count, in_zp = p->input_zero_point, out_zp = p->output_zero_point; \
        const nn2c_rescale_t q = nn2c_rescale(p->multiplier, p->shift);                         \
        for (int32_t i = 0; i < count; ++i) {                                                   \
            const int32_t x = nn2c_ew_wrap_sub((int32_t)in[i], in_zp);                          \
            const int32_t y = nn2c_ew_wrap_add(nn2c_rescale_apply(&q, x), out_zp);              \
            out[i] = (TOUT)((lo) == -128 && (hi) == 127 ? nn2c_sat_i8(y) : nn2c_clamp_i32(y, lo, hi)); \
        }                                                                                       \
    }

NN2C_EW_REQUANTIZE(nn2c_requantize_s8_s8, int8_t, int8_t, -128, 127)
NN2C_EW_REQUANTIZE(nn2c_requantize_s8_s16, int8_t, int16_t, -32768, 32767)
NN2C_EW_REQUANTIZE(nn2c_requantize_s8_u8, int8_t, uint8_t, 0, 255)
NN2C_EW_REQUANTIZE(nn2c_requantize_s8_i32, int8_t, int32_t, INT32_MIN, INT32_MAX)
NN2C_EW_REQUANTIZE(nn2c_requantize_s16_s8, int16_t, int8_t, -128, 127)
NN2C_EW_REQUANTIZE(nn2c_requantize_s16_s16, int16_t, int16_t, -32768, 32767)
NN2C_EW_REQUANTIZE(nn2c_requantize_s16_i32, int16_t, int32_t, INT32_MIN, INT32_MAX)
NN2C_EW_REQUANTIZE(nn2c_requantize_u8_s8, uint8_t, int8_t, -128, 127)
NN2C_EW_REQUANTIZE(nn2c_requantize_i32_s8, int32_t, int8_t, -128, 127)
NN2C_EW_REQUANTIZE(nn2c_requantize_i32_s16, int32_t, int16_t, -32768, 32767)

/* reference_ops::Dequantize computes (float)(double scale * (x - zp)). The double product of a
 * float scale and an integer below 2^24 is exact, so one float multiply rounds it identically. */
#define NN2C_EW_DEQUANTIZE(name, T)                                                              \
    void name(const nn2c_quantize_params_t *p, const T *in, float *out) {                       \
        for (int32_t i = 0; i < p->count; ++i) {                                                \
            out[i] = p->scale * (float)((int32_t)in[i] - p->zero_point);                        \
        }                                                                                       \
    }

NN2C_EW_DEQUANTIZE(nn2c_dequantize_s8_f32, int8_t)
NN2C_EW_DEQUANTIZE(nn2c_dequantize_s16_f32, int16_t)
NN2C_EW_DEQUANTIZE(nn2c_dequantize_u8_f32, uint8_t)

/* --- CAST ------------------------------------------------------------------------------------ */

/* float -> integer as TFLite Micro's CAST: truncate, saturate to the type's range, NaN -> 0. */
static inline int32_t nn2c_ew_f32_saturate(float x, int32_t lo, int32_t hi) {
    if (x != x) return 0;
    if (x <= (float)lo) return lo;
    if (x >= (float)hi) return hi;
    return (int32_t)x;
}

#define NN2C_EW_CAST(from, to, TIN, TOUT, expr)                                                  \
    void nn2c_cast_##from##_##to(int32_t count, const TIN *in, TOUT *out) {                     \
        for (int32_t i = 0; i < count; ++i) {                                                   \
            const TIN x = in[i];                                                                \
            out[i] = (TOUT)(expr);                                                              \
        }                                                                                       \
    }

/* integer (and bool) sources: C conversions, which narrow by wrapping */
#define NN2C_EW_CAST_FROM_INT(from, TIN)                                                         \
    NN2C_EW_CAST(from, s8, TIN, int8_t, x)                                                      \
    NN2C_EW_CAST(from, u8, TIN, uint8_t, x)                                                     \
    NN2C_EW_CAST(from, s16, TIN, int16_t, x)                                                    \
    NN2C_EW_CAST(from, i32, TIN, int32_t, x)                                                    \
    NN2C_EW_CAST(from, f32, TIN, float, x)                                                      \
    NN2C_EW_CAST(from, b8, TIN, uint8_t, x != 0)

NN2C_EW_CAST_FROM_INT(s8, int8_t)
NN2C_EW_CAST_FROM_INT(s16, int16_t)
NN2C_EW_CAST_FROM_INT(i32, int32_t)
NN2C_EW_CAST_FROM_INT(b8, uint8_t)
NN2C_EW_CAST_FROM_INT(u8, uint8_t)

NN2C_EW_CAST(f32, s8, float, int8_t, nn2c_ew_f32_saturate(x, -128, 127))
NN2C_EW_CAST(f32, u8, float, uint8_t, nn2c_ew_f32_saturate(x, 0, 255))
NN2C_EW_CAST(f32, s16, float, int16_t, nn2c_ew_f32_saturate(x, -32768, 32767))
NN2C_EW_CAST(f32, i32, float, int32_t, nn2c_ew_f32_saturate(x, INT32_MIN, INT32_MAX))
NN2C_EW_CAST(f32, f32, float, float, x)
NN2C_EW_CAST(f32, b8, float, uint8_t, x != 0.0f)
