/* nn2c kernel library: shared types and TFLite-exact fixed-point arithmetic.
 *
 * The integer helpers reproduce tensorflow/lite/kernels/internal/common.h and gemmlowp's
 * fixedpoint.h bit for bit (the default, double-rounding variant that TFLite Micro uses),
 * so kernels built on them give the same int8 results as TFLite Micro's reference kernels.
 */
#ifndef NN2C_COMMON_H
#define NN2C_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

#include "nn2c_config.h" /* the kernel paths this build leaves out (written for each model) */

/* The SIMD kernels' hot loops are GCC inline assembly needing up to 14 general registers, which GCC
 * finds only when optimising and without a frame pointer; each has a C version computing the same
 * results. Define NN2C_NO_INLINE_ASM to take the C versions (e.g. in a firmware build with
 * -fno-omit-frame-pointer, where the assembly fails with "asm operand has impossible constraints"). */
#if defined(__OPTIMIZE__) && !defined(NN2C_NO_INLINE_ASM)
#define NN2C_INLINE_ASM 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#define NN2C_ALIGNED(n) __attribute__((aligned(n)))
#define NN2C_INLINE static inline __attribute__((always_inline))
typedef uint32_t nn2c_word_t __attribute__((may_alias)); /* a word of any tensor's bytes */
/* stops GCC from turning a copy loop back into a call of the C library's byte-wise memmove */
#define NN2C_LOOP_BARRIER() __asm__ volatile("" ::: "memory")
#else
typedef uint32_t nn2c_word_t;
#define NN2C_LOOP_BARRIER() ((void)0)
#define NN2C_ALIGNED(n)
#define NN2C_INLINE static inline
#endif

/* Run-time index k of an index tensor of 2, 4 or 8 bytes a value (int16, int32, int64), as int64.
 * Read with memcpy: an index tensor's place in the arena need not be aligned to its size. */
NN2C_INLINE int64_t nn2c_read_index(const void *indices, size_t k, int32_t index_bytes) {
    const uint8_t *at = (const uint8_t *)indices + k * (size_t)index_bytes;
    if (index_bytes == 8) {
        int64_t v;
        memcpy(&v, at, 8);
        return v;
    }
    if (index_bytes == 2) {
        int16_t v;
        memcpy(&v, at, 2);
        return v;
    }
    {
        int32_t v;
        memcpy(&v, at, 4);
        return v;
    }
}

#define NN2C_MIN(a, b) ((a) < (b) ? (a) : (b))
#define NN2C_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Armv7E-M (Cortex-M4, M7) with the inline assembly: nn2c_move's whole 32-byte blocks by LDM / STM of eight
 * registers (4 instructions per 32 bytes; the C loop took 8 per 16). Not on the M55, whose Helium copies
 * keep fewer cycles than an eight-register LDM. The registers are named: an LDM's list is a set (the lowest
 * register at the lowest address), so the same list in both keeps the bytes in order. */
#if defined(NN2C_INLINE_ASM) && defined(__ARM_ARCH_7EM__) && !defined(__cplusplus)
#define NN2C_MOVE_LDM 1
/* k steps of 32 bytes from *s to *d, both walked up, or down from where they point (down) */
NN2C_INLINE void nn2c_move_blocks32(nn2c_word_t **d, const nn2c_word_t **s, size_t k, int down) {
    register uint32_t m2 __asm__("r2"), m3 __asm__("r3"), m4 __asm__("r4"), m5 __asm__("r5");
    register uint32_t m6 __asm__("r6"), m8 __asm__("r8"), m9 __asm__("r9"), m12 __asm__("r12");
    nn2c_word_t *dw = *d;
    const nn2c_word_t *sw = *s;
    if (down) {
        __asm__ volatile("1:\n\t"
                         "ldmdb  %[s]!, {r2, r3, r4, r5, r6, r8, r9, r12}\n\t"
                         "stmdb  %[d]!, {r2, r3, r4, r5, r6, r8, r9, r12}\n\t"
                         "subs   %[k], %[k], #1\n\t"
                         "bne    1b"
                         : [s] "+r"(sw), [d] "+r"(dw), [k] "+r"(k), "=&r"(m2), "=&r"(m3), "=&r"(m4), "=&r"(m5),
                           "=&r"(m6), "=&r"(m8), "=&r"(m9), "=&r"(m12)
                         :
                         : "cc", "memory");
    } else {
        __asm__ volatile("1:\n\t"
                         "ldm    %[s]!, {r2, r3, r4, r5, r6, r8, r9, r12}\n\t"
                         "stm    %[d]!, {r2, r3, r4, r5, r6, r8, r9, r12}\n\t"
                         "subs   %[k], %[k], #1\n\t"
                         "bne    1b"
                         : [s] "+r"(sw), [d] "+r"(dw), [k] "+r"(k), "=&r"(m2), "=&r"(m3), "=&r"(m4), "=&r"(m5),
                           "=&r"(m6), "=&r"(m8), "=&r"(m9), "=&r"(m12)
                         :
                         : "cc", "memory");
    }
    *d = dw;
    *s = sw;
}
#endif

/* One output from a doubled record (nn2c_dw_simd_params_t.records, nn2c_conv_rows_params_t.records, the sparse
 * kernels' pair records: the sums
 * twice x, their filters and biases doubled; per channel m, c = 2^(r - 1) + offset 2^r, r = -shift in [1, 24]).
 * TFLite's doubling high multiply of x by m is floor((x m + 2^30) / 2^31) for either sign of x (its nudge
 * 1 - 2^30 below zero and the truncation toward zero cancel), which is SMMLAR's rounding of 2x m; its rounding
 * divide by 2^r adds 2^(r - 1), less 1 below zero (the multiply keeps x's sign, or is 0, which rounds to 0
 * either way). So y = (c - [x < 0] + (2x m + 2^31) / 2^32) >> r: 4 instructions from the record, the high word's
 * sum inside int32 (codegen/ops/conv.py doubled_records_fit). */
NN2C_INLINE int32_t nn2c_requant_doubled(int32_t acc2, int32_t m, int32_t c, int32_t r) {
    const int64_t high = (int64_t)c - (acc2 < 0);
    const int32_t x = (int32_t)((high * 4294967296LL + (int64_t)acc2 * m + 2147483648LL) >> 32);
    const int32_t y = x >> r;
    return y < -128 ? -128 : (y > 127 ? 127 : y);
}

/* nn2c_requant_doubled from a record's three words m, c, r. */
NN2C_INLINE int32_t nn2c_record_requant_doubled(int32_t acc2, const int32_t *r) {
    return nn2c_requant_doubled(acc2, r[0], r[1], r[2]);
}

/* memmove for the arena: a relocated tensor or a row group's sliding window. The C library's
 * memmove is a byte loop on newlib-nano (4 instructions a byte on a Cortex-M4); arena buffers are
 * 16-byte aligned, so whole words move here, forward or backward as the overlap requires. */
NN2C_INLINE void nn2c_move(void *dst, const void *src, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    const int aligned = ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0u);
    size_t blocks = aligned ? n / 16u : 0u;     /* 4 words each */
    size_t words = aligned ? n / 4u % 4u : 0u;  /* then single words */
    size_t bytes = n - 16u * blocks - 4u * words;
    if (d == s || n == 0) {
        return;
    }
    if (d < s) { /* forward: every byte is read before a lower write can reach it */
        nn2c_word_t *dw = (nn2c_word_t *)dst;
        const nn2c_word_t *sw = (const nn2c_word_t *)src;
#if defined(NN2C_MOVE_LDM)
        if (blocks >= 2) {
            nn2c_move_blocks32(&dw, &sw, blocks / 2, 0);
            blocks &= 1;
        }
#endif
        for (; blocks > 0; --blocks, dw += 4, sw += 4) {
            const uint32_t a = sw[0], b = sw[1], c = sw[2], e = sw[3];
            dw[0] = a; dw[1] = b; dw[2] = c; dw[3] = e;
            NN2C_LOOP_BARRIER();
        }
        for (; words > 0; --words) { *dw++ = *sw++; NN2C_LOOP_BARRIER(); }
        d = (uint8_t *)dw;
        s = (const uint8_t *)sw;
        for (; bytes > 0; --bytes) { *d++ = *s++; NN2C_LOOP_BARRIER(); }
    } else { /* backward, from the top: the tail bytes first, then the words */
        nn2c_word_t *dw;
        const nn2c_word_t *sw;
        d += n;
        s += n;
        for (; bytes > 0; --bytes) { *--d = *--s; NN2C_LOOP_BARRIER(); }
        dw = (nn2c_word_t *)(void *)d;
        sw = (const nn2c_word_t *)(const void *)s;
        for (; words > 0; --words) { *--dw = *--sw; NN2C_LOOP_BARRIER(); }
#if defined(NN2C_MOVE_LDM)
        if (blocks >= 2) {
            nn2c_move_blocks32(&dw, &sw, blocks / 2, 1);
            blocks &= 1;
        }
#endif
        for (; blocks > 0; --blocks) {
            const uint32_t a = sw[-1], b = sw[-2], c = sw[-3], e = sw[-4];
            dw[-1] = a; dw[-2] = b; dw[-3] = c; dw[-4] = e;
            dw -= 4;
            sw -= 4;
            NN2C_LOOP_BARRIER();
        }
    }
}

/* `rows` rows of `row_bytes` bytes between images of different row strides: a column band of a row
 * group (codegen/bands.py) copied into or out of its tile; whole words where both are aligned. */
NN2C_INLINE void nn2c_copy_rows(void *dst, size_t dst_stride, const void *src, size_t src_stride, int32_t rows,
                                size_t row_bytes) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    for (int32_t r = 0; r < rows; ++r) {
        nn2c_move(d, s, row_bytes);
        d += dst_stride;
        s += src_stride;
    }
}

NN2C_INLINE int32_t nn2c_clamp_i32(int32_t x, int32_t lo, int32_t hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

/* nn2c_clamp_i32 to int8 / int16: one SSAT where the core has it (GCC 12 does not find it). */
NN2C_INLINE int32_t nn2c_sat_i8(int32_t x) {
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
    int32_t y;
    __asm__("ssat %0, #8, %1" : "=r"(y) : "r"(x));
    return y;
#else
    return nn2c_clamp_i32(x, -128, 127);
#endif
}

NN2C_INLINE int32_t nn2c_sat_i16(int32_t x) {
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
    int32_t y;
    __asm__("ssat %0, #16, %1" : "=r"(y) : "r"(x));
    return y;
#else
    return nn2c_clamp_i32(x, -32768, 32767);
#endif
}

NN2C_INLINE float nn2c_clamp_f32(float x, float lo, float hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

/* gemmlowp SaturatingRoundingDoublingHighMul: (a * b * 2 + 2^31) >> 32, saturating. */
NN2C_INLINE int32_t nn2c_srdhm(int32_t a, int32_t b) {
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    int64_t ab = (int64_t)a * (int64_t)b;
    int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp RoundingDivideByPOT: x / 2^exponent, rounding half away from zero. */
NN2C_INLINE int32_t nn2c_rdbpot(int32_t x, int exponent) {
    int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* TFLite MultiplyByQuantizedMultiplier (double rounding): x * multiplier * 2^(shift - 31). */
NN2C_INLINE int32_t nn2c_mbqm(int32_t x, int32_t multiplier, int shift) {
    int left_shift = shift > 0 ? shift : 0;
    int right_shift = shift > 0 ? 0 : -shift;
    /* TFLite computes x * (1 << left_shift) in int32; wrap the same way without UB */
    int32_t shifted = (int32_t)((uint32_t)x << left_shift);
    return nn2c_rdbpot(nn2c_srdhm(shifted, multiplier), right_shift);
}

/* A requantised value plus the output zero point, wrapping as TFLM's int32 sum does in practice: a
 * huge multiplier (a malformed or fuzzed scale) must not make it undefined behaviour. */
NN2C_INLINE int32_t nn2c_add_offset(int32_t value, int32_t offset) {
    return (int32_t)((uint32_t)value + (uint32_t)offset);
}

/* nn2c_mbqm with, for shift = -r < 0, both roundings folded into one 64-bit sum:
 * floor((floor((x m + 2^30) / 2^31) + 2^(r-1) - [x < 0]) / 2^r)
 *   = (x m + rounding - [x < 0] 2^31) >> (31 + r), rounding = 2^30 + 2^(30+r) (compile time);
 * [x < 0] equals RoundingDivideByPOT's [high < 0] except when high = 0, where both give 0
 * (multipliers are >= 2^30). rounding[[x < 0]] holds the constant minus [x < 0] 2^31
 * (codegen/ops/conv.py requant_rounding: a pair per channel). */
NN2C_INLINE int32_t nn2c_mbqm_rounded(int32_t x, int32_t multiplier, int32_t shift, const int64_t *rounding) {
    if (shift < 0) {
        const int64_t v = rounding[(uint32_t)x >> 31] + (int64_t)x * multiplier;
        return (int32_t)(v >> 32) >> (-shift - 1);
    }
    return nn2c_mbqm(x, multiplier, shift);
}

/* One multiplier of MultiplyByQuantizedMultiplier applied to many values (a recurrent kernel's gates,
 * an SVDF's filters): the roundings of nn2c_mbqm_rounded prepared once per call, so that a negative
 * shift (every such multiplier of a real model's) costs one 64-bit multiply-add and two shifts. */
typedef struct {
    int32_t multiplier, shift;
    int64_t rounding[2];
} nn2c_rescale_t;

NN2C_INLINE nn2c_rescale_t nn2c_rescale(int32_t multiplier, int32_t shift) {
    nn2c_rescale_t q = {multiplier, shift, {0, 0}};
    if (shift < 0) {
        q.rounding[0] = ((int64_t)1 << 30) + ((int64_t)1 << (30 - shift));
        q.rounding[1] = q.rounding[0] - ((int64_t)1 << 31);
    }
    return q;
}

NN2C_INLINE int32_t nn2c_rescale_apply(const nn2c_rescale_t *q, int32_t x) {
    return nn2c_mbqm_rounded(x, q->multiplier, q->shift, q->rounding);
}

/* TFLite MultiplyByQuantizedMultiplier for int64 accumulators (16x8 kernels). */
NN2C_INLINE int32_t nn2c_mbqm_i64(int64_t x, int32_t multiplier, int shift) {
    /* reduce the multiplier to 16 bits, as TFLite does, so the product fits in 64 bits */
    int32_t reduced = (multiplier < 0x7FFF0000) ? ((multiplier + (1 << 15)) >> 16) : 0x7FFF;
    int total_shift = 15 - shift;
    int64_t rounding = (int64_t)1 << (total_shift - 1);
    int64_t result = x * (int64_t)reduced + rounding;
    result = result >> total_shift;
    if (result < INT32_MIN) result = INT32_MIN;
    if (result > INT32_MAX) result = INT32_MAX;
    return (int32_t)result;
}

/* MultiplyByQuantizedMultiplierSmallerThanOneExp: shift <= 0. */
NN2C_INLINE int32_t nn2c_mbqm_smaller_than_one(int32_t x, int32_t multiplier, int shift) {
    return nn2c_rdbpot(nn2c_srdhm(x, multiplier), -shift);
}

/* MultiplyByQuantizedMultiplierGreaterThanOne: shift >= 0. */
NN2C_INLINE int32_t nn2c_mbqm_greater_than_one(int32_t x, int32_t multiplier, int shift) {
    return nn2c_srdhm((int32_t)((int64_t)x * ((int64_t)1 << shift)), multiplier);
}

#endif /* NN2C_COMMON_H */
