/* Cortex-M int8 kernels: see nn2c_simd.h for the folded bias, the filter layout and the order. */
#include "nn2c_simd.h"

#include <string.h>

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define NN2C_SIMD_MVE 1
#include <arm_mve.h>
#elif defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#define NN2C_SIMD_DSP 1
#include <arm_acle.h>
#endif

/* One symbol per optional path this build keeps (nn2c_config.h). A model whose layers take a path reads its
 * symbol once an inference (NAME.c), so that linking it with kernels built without the path (another
 * model's nn2c_config.h) fails, naming the path, instead of running without it. */
#if !defined(NN2C_OMIT_DSP_DW_ARRAYS)
const uint8_t nn2c_kernel_path_dsp_dw_arrays = 1;
#endif
#if !defined(NN2C_OMIT_DSP_DW_PARTIAL)
const uint8_t nn2c_kernel_path_dsp_dw_partial = 1;
#endif
#if !defined(NN2C_OMIT_DSP_DW_INT8)
const uint8_t nn2c_kernel_path_dsp_dw_int8 = 1;
#endif
#if !defined(NN2C_OMIT_DSP_DW_INT16)
const uint8_t nn2c_kernel_path_dsp_dw_int16 = 1;
#endif
#if !defined(NN2C_OMIT_DSP_DW_PLANES)
const uint8_t nn2c_kernel_path_dsp_dw_planes = 1;
#endif
#if !defined(NN2C_OMIT_DSP_GEMM_ARRAYS)
const uint8_t nn2c_kernel_path_dsp_gemm_arrays = 1;
#endif
#if !defined(NN2C_OMIT_DSP_IM2COL)
const uint8_t nn2c_kernel_path_dsp_im2col = 1;
#endif
#if !defined(NN2C_OMIT_DSP_EXPAND_WINDOW)
const uint8_t nn2c_kernel_path_dsp_expand_window = 1;
#endif
#if !defined(NN2C_OMIT_DSP_FC_BATCH_PAIRS)
const uint8_t nn2c_kernel_path_dsp_fc_batch_pairs = 1;
#endif
#if !defined(NN2C_OMIT_DSP_FC_ARRAYS)
const uint8_t nn2c_kernel_path_dsp_fc_arrays = 1;
#endif
#if !defined(NN2C_OMIT_DSP_FC_GROUPS)
const uint8_t nn2c_kernel_path_dsp_fc_groups = 1;
#endif
#if !defined(NN2C_OMIT_DSP_FC_DUAL)
const uint8_t nn2c_kernel_path_dsp_fc_dual = 1;
#endif
#if !defined(NN2C_OMIT_DSP_GEMM_DUAL)
const uint8_t nn2c_kernel_path_dsp_gemm_dual = 1;
#endif
#if !defined(NN2C_OMIT_DSP_GEMM_PLAIN)
const uint8_t nn2c_kernel_path_dsp_gemm_plain = 1;
#endif
#if !defined(NN2C_OMIT_DSP_GEMM_TRIPLES)
const uint8_t nn2c_kernel_path_dsp_gemm_triples = 1;
#endif
#if !defined(NN2C_OMIT_DSP_GEMM_PAIRS)
const uint8_t nn2c_kernel_path_dsp_gemm_pairs = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_1)
const uint8_t nn2c_kernel_path_dsp_conv_rows_1 = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_1_BYTE)
const uint8_t nn2c_kernel_path_dsp_conv_rows_1_byte = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_2)
const uint8_t nn2c_kernel_path_dsp_conv_rows_2 = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_2_BYTE)
const uint8_t nn2c_kernel_path_dsp_conv_rows_2_byte = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_3)
const uint8_t nn2c_kernel_path_dsp_conv_rows_3 = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_3_BYTE)
const uint8_t nn2c_kernel_path_dsp_conv_rows_3_byte = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_4)
const uint8_t nn2c_kernel_path_dsp_conv_rows_4 = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_4_BYTE)
const uint8_t nn2c_kernel_path_dsp_conv_rows_4_byte = 1;
#endif
#if !defined(NN2C_OMIT_MVE_DW_ANY)
const uint8_t nn2c_kernel_path_mve_dw_any = 1;
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS8_3X9)
const uint8_t nn2c_kernel_path_dsp_conv_rows8_3x9 = 1;
#endif
#if !defined(NN2C_OMIT_DSP_GEMM_ODD)
const uint8_t nn2c_kernel_path_dsp_gemm_odd = 1;
#endif

/* --- shared helpers ---------------------------------------------------------------------------- */

NN2C_INLINE int32_t nn2c_simd_ld32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4); /* one LDR: Cortex-M4/M7/M55 load unaligned words */
    return v;
}

NN2C_INLINE void nn2c_simd_st32(int8_t *p, int32_t v) {
    memcpy(p, &v, 4);
}

/* Copy / fill n bytes a vector (MVE: 16 bytes, the last one predicated) or a word at a time
 * (newlib-nano's memcpy and memset go byte by byte). */
#if defined(NN2C_SIMD_MVE)
/* Tail-predicated loops (WLSTP / LETP: 2 instructions per 16 bytes, the last vector predicated);
 * GCC 12 does not emit them and spent 11 instructions per vector on the explicit predicates. */
static void nn2c_simd_copy(int8_t *dst, const int8_t *src, int32_t n) {
    int8x16_t v;
    __asm__ volatile("wlstp.8 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrb.8 %q[v], [%[src]], #16\n\t"
                     "vstrb.8 %q[v], [%[dst]], #16\n\t"
                     "letp    lr, 1b\n"
                     "2:\n\t"
                     : [dst] "+r"(dst), [src] "+r"(src), [v] "=&w"(v)
                     : [n] "r"(n)
                     : "lr", "memory");
}

/* The rows of a window inside the image into one im2col row: `rows` rows of n bytes, src_step apart.
 * (Helium) The tail-predicated loop steps its pointers by whole vectors, so a row of n bytes that is not a
 * whole number of vectors starts from copies of the row pointers (2 instructions more a row).
 * resnet's 3x3 convolutions took about 105 instructions a window through nn2c_simd_im2col (its
 * parameters reloaded from the struct after each copy), 45 here (QEMU). */
NN2C_INLINE void nn2c_simd_copy_rows(int8_t *dst, const int8_t *src, int32_t rows, int32_t n, int32_t src_step) {
    int8x16_t v;
    if ((n & 15) == 0) {
        const int32_t gap = src_step - n;
        __asm__ volatile("1:\n\t"
                         "wlstp.8 lr, %[n], 3f\n"
                         "2:\n\t"
                         "vldrb.8 %q[v], [%[src]], #16\n\t"
                         "vstrb.8 %q[v], [%[dst]], #16\n\t"
                         "letp    lr, 2b\n"
                         "3:\n\t"
                         "add     %[src], %[src], %[gap]\n\t"
                         "subs    %[rows], %[rows], #1\n\t"
                         "bne     1b\n\t"
                         : [dst] "+r"(dst), [src] "+r"(src), [rows] "+r"(rows), [v] "=&w"(v)
                         : [n] "r"(n), [gap] "r"(gap)
                         : "lr", "cc", "memory");
    } else {
        const int8_t *s;
        int8_t *d;
        __asm__ volatile("1:\n\t"
                         "mov     %[s], %[src]\n\t"
                         "mov     %[d], %[dst]\n\t"
                         "wlstp.8 lr, %[n], 3f\n"
                         "2:\n\t"
                         "vldrb.8 %q[v], [%[s]], #16\n\t"
                         "vstrb.8 %q[v], [%[d]], #16\n\t"
                         "letp    lr, 2b\n"
                         "3:\n\t"
                         "add     %[src], %[src], %[step]\n\t"
                         "add     %[dst], %[dst], %[n]\n\t"
                         "subs    %[rows], %[rows], #1\n\t"
                         "bne     1b\n\t"
                         : [dst] "+r"(dst), [src] "+r"(src), [rows] "+r"(rows), [v] "=&w"(v), [s] "=&r"(s),
                           [d] "=&r"(d)
                         : [n] "r"(n), [step] "r"(src_step)
                         : "lr", "cc", "memory");
    }
}

static void nn2c_simd_fill(int8_t *dst, int32_t word, int32_t n) {
    const int8x16_t v = vdupq_n_s8((int8_t)word);
    __asm__ volatile("wlstp.8 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vstrb.8 %q[v], [%[dst]], #16\n\t"
                     "letp    lr, 1b\n"
                     "2:\n\t"
                     : [dst] "+r"(dst)
                     : [n] "r"(n), [v] "w"(v)
                     : "lr", "memory");
}
#else
/* (the barriers keep GCC from making the loops calls of newlib-nano's byte-wise memcpy / memset: it had
 * made the fill one, on every padded row of an im2col) */
static void nn2c_simd_copy(int8_t *dst, const int8_t *src, int32_t n) {
    for (; n >= 4; n -= 4, dst += 4, src += 4) {
        nn2c_simd_st32(dst, nn2c_simd_ld32(src));
        NN2C_LOOP_BARRIER();
    }
    for (; n > 0; --n) {
        *dst++ = *src++;
        NN2C_LOOP_BARRIER();
    }
}

NN2C_INLINE void nn2c_simd_copy_rows(int8_t *dst, const int8_t *src, int32_t rows, int32_t n, int32_t src_step) {
    for (; rows > 0; --rows, dst += n, src += src_step) {
        nn2c_simd_copy(dst, src, n);
    }
}

static void nn2c_simd_fill(int8_t *dst, int32_t word, int32_t n) {
    for (; n >= 4; n -= 4, dst += 4) {
        nn2c_simd_st32(dst, word);
        NN2C_LOOP_BARRIER();
    }
    for (; n > 0; --n) {
        *dst++ = (int8_t)word;
        NN2C_LOOP_BARRIER();
    }
}
#endif

NN2C_INLINE int32_t nn2c_simd_splat(int32_t value) {
    return (int32_t)(((uint32_t)value & 0xFFu) * 0x01010101u);
}

/* The output stage of one layer, kept in locals (int8 stores could alias the parameter struct). */
typedef struct {
    const int32_t *multipliers;
    const int32_t *shifts;
    const int64_t *rounding;
    int32_t offset, lo, hi;
    int32_t full; /* [lo, hi] is int8's whole range: saturating to int8 is the clamp */
} nn2c_simd_out_t;

/* Requantise, offset, clamp: on the Arm DSP both roundings in one 64-bit sum (nn2c_mbqm_rounded); elsewhere
 * the layer has no rounding constants (Target.rounding_tables: Helium's code has them NULL). */
NN2C_INLINE int32_t nn2c_simd_requant(const nn2c_simd_out_t *o, int32_t acc, int32_t c) {
#if defined(NN2C_SIMD_DSP)
    int32_t y = nn2c_mbqm_rounded(acc, o->multipliers[c], o->shifts[c], o->rounding + 2 * c);
#else
    int32_t y = nn2c_mbqm(acc, o->multipliers[c], (int)o->shifts[c]);
#endif
    return nn2c_clamp_i32(nn2c_add_offset(y, o->offset), o->lo, o->hi);
}

NN2C_INLINE nn2c_simd_out_t nn2c_simd_out(const int32_t *multipliers, const int32_t *shifts, const int64_t *rounding,
                                          int32_t offset, int32_t lo, int32_t hi) {
    nn2c_simd_out_t o;
    o.multipliers = multipliers;
    o.shifts = shifts;
    o.rounding = rounding;
    o.offset = offset;
    o.lo = lo;
    o.hi = hi;
    o.full = lo == -128 && hi == 127;
    return o;
}

/* One output from an output-stage record (nn2c_gemm_s8_t.records of a FULLY_CONNECTED: doubled is 0; r: the
 * channel's multiplier, high word, r - 1): nn2c_mbqm_rounded's 64-bit sum with the output offset in
 * its high word, (x m + 2^30 + h 2^32 - [x < 0] 2^31) >> (32 + r - 1), saturated to int8. Adding offset 2^(31 + r) before
 * the floor adds exactly the offset after it, and |x m| < 2^62, |h 2^32| <= 2^62 (r <= 24) cannot
 * overflow. */
NN2C_INLINE int32_t nn2c_record_requant(int32_t acc, const int32_t *r) {
    const int64_t rounding = (int64_t)r[1] * 4294967296LL + (1LL << 30) - (acc < 0 ? (1LL << 31) : 0);
    const int32_t y = (int32_t)(((int64_t)acc * r[0] + rounding) >> 32) >> r[2];
    return y < -128 ? -128 : (y > 127 ? 127 : y);
}

#define NN2C_GEMM_OUT(m) \
    nn2c_simd_out((m)->multipliers, (m)->shifts, (m)->rounding, (m)->output_offset, (m)->act_min, (m)->act_max)

#if defined(NN2C_SIMD_MVE)
/* The same requantisation on 4 lanes: VQRDMULH is SaturatingRoundingDoublingHighMul; VRSHL by a
 * negative amount rounds half up, one less for negative values (and non-zero shifts) makes it
 * round half away from zero as RoundingDivideByPOT does. */
NN2C_INLINE int32x4_t nn2c_mve_requant(int32x4_t acc, const int32_t *multipliers, const int32_t *shifts,
                                       int32_t output_offset, int32_t act_min, int32_t act_max) {
    const int32x4_t zero = vdupq_n_s32(0);
    const int32x4_t shift = vldrwq_s32(shifts);
    const int32x4_t right = vminq_s32(shift, zero);
    acc = vshlq_s32(acc, vmaxq_s32(shift, zero));
    acc = vqrdmulhq_s32(acc, vldrwq_s32(multipliers));
    acc = vqaddq_s32(acc, vshrq_n_s32(vandq_s32(acc, right), 31));
    acc = vrshlq_s32(acc, right);
    acc = vaddq_n_s32(acc, output_offset);
    acc = vmaxq_s32(acc, vdupq_n_s32(act_min));
    return vminq_s32(acc, vdupq_n_s32(act_max));
}

/* nn2c_mve_requant before the clamp to [act_min, act_max]. */
NN2C_INLINE int32x4_t nn2c_mve_requant_unclamped(int32x4_t acc, const int32_t *multipliers, const int32_t *shifts,
                                                 int32_t output_offset, int32x4_t zero) {
    const int32x4_t shift = vldrwq_s32(shifts);
    const int32x4_t right = vminq_s32(shift, zero);
    acc = vshlq_s32(acc, vmaxq_s32(shift, zero));
    acc = vqrdmulhq_s32(acc, vldrwq_s32(multipliers));
    acc = vqaddq_s32(acc, vshrq_n_s32(vandq_s32(acc, right), 31));
    acc = vrshlq_s32(acc, right);
    return vaddq_n_s32(acc, output_offset);
}

NN2C_INLINE int32x4_t nn2c_mve_lanes(int32_t a, int32_t b, int32_t c, int32_t d) {
    int32x4_t v = vdupq_n_s32(a);
    v = vsetq_lane_s32(b, v, 1);
    v = vsetq_lane_s32(c, v, 2);
    return vsetq_lane_s32(d, v, 3);
}

NN2C_INLINE void nn2c_mve_store4(int8_t *out, int32x4_t v, int32_t count) {
    if (count >= 4) {
        vstrbq_s32(out, v);
    } else if (count > 0) {
        vstrbq_p_s32(out, v, vctp32q((uint32_t)count));
    }
}
#endif

#if defined(NN2C_SIMD_DSP)
/* SXTB16 of the odd bytes (GCC 12's arm_acle.h has no __ror to fold into it). */
NN2C_INLINE int32_t nn2c_sxtb16_ror8(int32_t x) {
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

/* The low n (1..3) bytes of a word, zero above: the last, partial block of a left-operand row. */
NN2C_INLINE int32_t nn2c_simd_ld_partial(const int8_t *p, int32_t n) {
    uint32_t v = 0;
    for (int32_t i = 0; i < n; ++i) v |= (uint32_t)(uint8_t)p[i] << (8 * i);
    return (int32_t)v;
}

/* The high word of rounding[acc < 0] + acc * multiplier (nn2c_simd_requant's 64-bit sum for negative
 * shifts): 4 instructions (GCC 12 computes the 64-bit index and loads the halves apart). */
NN2C_INLINE int32_t nn2c_dsp_fused_high(int32_t acc, int32_t multiplier, const int64_t *rounding) {
    int32_t lo, hi;
    __asm__("lsr    %[lo], %[acc], #31\n\t"
            "add    %[lo], %[r], %[lo], lsl #3\n\t"
            "ldrd   %[lo], %[hi], [%[lo]]\n\t"
            "smlal  %[lo], %[hi], %[acc], %[m]\n\t"
            : [lo] "=&r"(lo), [hi] "=&r"(hi)
            : [acc] "r"(acc), [m] "r"(multiplier), [r] "r"(rounding), "m"(*(const int64_t(*)[2])rounding));
    (void)lo;
    return hi;
}

/* nn2c_mbqm_rounded plus the output offset, with the fused 64-bit step in assembly (nn2c_dsp_fused_high),
 * and without the clamp to [act_min, act_max]: SSAT to int8 instead (the caller clamps further only
 * when the activation range is narrower, nn2c_dsp_clamp). */
NN2C_INLINE int32_t nn2c_dsp_requant_sat(int32_t acc, int32_t multiplier, int32_t shift, const int64_t *rounding,
                                         int32_t offset) {
    int32_t y;
    if (shift < 0) {
        y = nn2c_dsp_fused_high(acc, multiplier, rounding) >> (-shift - 1);
    } else {
        y = nn2c_mbqm(acc, multiplier, shift);
    }
    return __ssat(nn2c_add_offset(y, offset), 8);
}

/* Two accumulators of channel c (the two pixels of a pair), the channel's constants loaded once. */
NN2C_INLINE void nn2c_dsp_requant2(const nn2c_simd_out_t *o, int32_t c, int32_t a, int32_t b, int32_t *ya,
                                   int32_t *yb) {
    const int32_t multiplier = o->multipliers[c], shift = o->shifts[c];
    const int64_t *rounding = o->rounding + 2 * c;
    *ya = nn2c_dsp_requant_sat(a, multiplier, shift, rounding, o->offset);
    *yb = nn2c_dsp_requant_sat(b, multiplier, shift, rounding, o->offset);
}

NN2C_INLINE int32_t nn2c_dsp_requant1(const nn2c_simd_out_t *o, int32_t c, int32_t a) {
    return nn2c_dsp_requant_sat(a, o->multipliers[c], o->shifts[c], o->rounding + 2 * c, o->offset);
}

/* Requantisation in assembly for channels whose shift is negative (the codegen's flag,
 * nn2c_gemm_s8_t.right 2): nn2c_dsp_requant_sat without its branch, where GCC 12 spent 15-17
 * instructions per output on the C (register spills around the 64-bit sums). mp / sp_ / rp: the
 * group's multipliers, shifts and rounding pairs; channel I of the group. First the channel's
 * multiplier and -shift - 1 (= ~shift): */
#define NN2C_DSP_RQ_CHANNEL(I) \
    "ldr    %[m], [%[mp], #" #I "*4]\n\t" \
    "ldr    %[sh], [%[sp_], #" #I "*4]\n\t" \
    "mvn    %[sh], %[sh]\n\t"
/* then each sum S of that channel: the fused 64-bit sum (nn2c_dsp_fused_high), the shift, the
 * offset, SSAT to int8 in S: 7 instructions. */
#define NN2C_DSP_RQ_SUM(S, I) \
    "lsr    %[lo], %[" S "], #31\n\t" \
    "add    %[lo], %[rp], %[lo], lsl #3\n\t" \
    "ldrd   %[lo], %[hi], [%[lo], #" #I "*16]\n\t" \
    "smlal  %[lo], %[hi], %[" S "], %[m]\n\t" \
    "asr    %[hi], %[hi], %[sh]\n\t" \
    "add    %[hi], %[hi], %[off]\n\t" \
    "ssat   %[" S "], #8, %[hi]\n\t"
#define NN2C_DSP_RQ_OPERANDS(NCH) \
    : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [m] "=&r"(m), [sh] "=&r"(sh), [lo] "=&r"(lo), \
      [hi] "=&r"(hi) \
    : [mp] "r"(mp), [sp_] "r"(sp_), [rp] "r"(rp), [off] "r"(off), "m"(*(const int32_t(*)[NCH])mp), \
      "m"(*(const int32_t(*)[NCH])sp_), "m"(*(const int64_t(*)[2 * (NCH)])rp)

/* Four channels of one pixel (sums s0..s3), packed into a word, lowest channel in the lowest
 * byte: 43 instructions. */
NN2C_INLINE int32_t nn2c_dsp_requant4_right(int32_t s0, int32_t s1, int32_t s2, int32_t s3, const int32_t *mp,
                                            const int32_t *sp_, const int64_t *rp, int32_t off) {
#if defined(NN2C_INLINE_ASM)
    int32_t m, sh, lo, hi;
    __asm__(NN2C_DSP_RQ_CHANNEL(0) NN2C_DSP_RQ_SUM("s0", 0) NN2C_DSP_RQ_CHANNEL(1) NN2C_DSP_RQ_SUM("s1", 1)
            NN2C_DSP_RQ_CHANNEL(2) NN2C_DSP_RQ_SUM("s2", 2) NN2C_DSP_RQ_CHANNEL(3) NN2C_DSP_RQ_SUM("s3", 3)
            "bfi    %[s0], %[s1], #8, #8\n\t"
            "bfi    %[s0], %[s2], #16, #8\n\t"
            "bfi    %[s0], %[s3], #24, #8\n\t" NN2C_DSP_RQ_OPERANDS(4));
    return s0;
#else /* -O0, or NN2C_NO_INLINE_ASM (nn2c_common.h) */
    const int32_t s[4] = {s0, s1, s2, s3};
    uint32_t word = 0;
    for (int32_t i = 0; i < 4; ++i) {
        const int32_t y = nn2c_dsp_requant_sat(s[i], mp[i], sp_[i], rp + 2 * i, off);
        word |= ((uint32_t)y & 0xFFu) << (8 * i);
    }
    return (int32_t)word;
#endif
}

NN2C_INLINE int32_t nn2c_dsp_clamp(int32_t y, int32_t lo, int32_t hi) {
    y = y < lo ? lo : y;
    return y > hi ? hi : y;
}
#endif

/* --- matrix product: rows of the left operand x all output channels ----------------------------- */

#if !defined(NN2C_SIMD_MVE) && !defined(NN2C_SIMD_DSP)
/* The weight of channel c at input k in the packed filter w (any G x KB layout; G = 2, KB = 4 when dual). */
static int32_t nn2c_gemm_weight(const nn2c_gemm_s8_t *m, const int8_t *w, int32_t c, int32_t k) {
    const int32_t G = m->rows_per_group, KB = m->k_block;
    const int8_t *block = w + (c / G) * G * m->depth_padded + (k / KB) * G * KB;
    if (!m->dual) {
        return block[(c % G) * KB + k % KB];
    }
    /* the int16 half A + 256 B of inputs k (0 2 | 1 3 in the block's two words): A its low byte, B the rest */
    const int8_t *half = block + 4 * (k % 2) + 2 * ((k % 4) / 2);
    const int32_t a = half[0], h = (int32_t)(uint8_t)half[0] + 256 * (int32_t)half[1];
    return c % 2 == 0 ? a : (h - a) / 256;
}

/* Portable: any layout (hosts run the Cortex-M layouts through it). Wrapping uint32 sums: the
 * folded bias may take intermediate sums where the reference's do not go. */
static void nn2c_gemm_rows(const nn2c_gemm_s8_t *m, const int8_t *lhs, int32_t rows, int32_t lhs_stride,
                           const int8_t *w, int8_t *out, int32_t out_stride) {
    const nn2c_simd_out_t o = NN2C_GEMM_OUT(m);
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *x = lhs + r * lhs_stride;
        for (int32_t c = 0; c < m->out_c; ++c) {
            const int32_t *record = m->records ? m->records + 8 * (c / 2) : NULL; /* (G = 2) */
            uint32_t acc = (uint32_t)(record ? record[c % 2] : m->bias[c]);
            if (record && m->dual && c % 2) { /* (a dual filter's second bias word: A's bias + 256 B's) */
                acc = (uint32_t)((int32_t)(acc - (uint32_t)record[0]) >> 8);
            }
            for (int32_t k = 0; k < m->depth; ++k) {
                acc += (uint32_t)((int32_t)x[k] * nn2c_gemm_weight(m, w, c, k));
            }
            const int32_t *stage = record ? record + 2 + 3 * (c % 2) : NULL;
            out[r * out_stride + c] = (int8_t)(!stage       ? nn2c_simd_requant(&o, (int32_t)acc, c)
                                               : m->doubled ? nn2c_record_requant_doubled((int32_t)(2 * acc), stage)
                                                            : nn2c_record_requant((int32_t)acc, stage));
        }
    }
}
#endif

#if defined(NN2C_SIMD_DSP)
/* G = 2, KB = 4. Two rows x two channels per step: 4 words in, 8 SXTB16, 8 SMLAD (16 MACs). */
#define NN2C_DSP_EXT(v, e, o) \
    const int32_t e = __sxtb16(v); \
    const int32_t o = nn2c_sxtb16_ror8(v)

static void nn2c_gemm_rows2(const nn2c_gemm_s8_t *m, const int8_t *a0, const int8_t *a1, const int8_t *w,
                            int8_t *o0, int8_t *o1) {
    const int32_t blocks = m->depth >> 2, tail = m->depth & 3;
    const int32_t group_bytes = 2 * m->depth_padded, out_c = m->out_c;
    const nn2c_simd_out_t o = NN2C_GEMM_OUT(m);
    for (int32_t c = 0; c < out_c; c += 2, w += group_bytes) {
        int32_t s00 = m->bias[c], s01 = m->bias[c + 1];
        int32_t s10 = s00, s11 = s01;
        const int8_t *x0 = a0, *x1 = a1, *wp = w;
        const int8_t *const x0_end = a0 + 4 * blocks; /* no counter: one register less in the loop */
        while (x0 != x0_end) {
            const int32_t v0 = nn2c_simd_ld32(x0), v1 = nn2c_simd_ld32(x1);
            const int32_t w0 = nn2c_simd_ld32(wp), w1 = nn2c_simd_ld32(wp + 4);
            x0 += 4;
            x1 += 4;
            wp += 8;
            NN2C_DSP_EXT(v0, v0e, v0o);
            NN2C_DSP_EXT(v1, v1e, v1o);
            NN2C_DSP_EXT(w0, w0e, w0o);
            s00 = __smlad(v0e, w0e, s00);
            s00 = __smlad(v0o, w0o, s00);
            s10 = __smlad(v1e, w0e, s10);
            s10 = __smlad(v1o, w0o, s10);
            NN2C_DSP_EXT(w1, w1e, w1o);
            s01 = __smlad(v0e, w1e, s01);
            s01 = __smlad(v0o, w1o, s01);
            s11 = __smlad(v1e, w1e, s11);
            s11 = __smlad(v1o, w1o, s11);
        }
        if (tail) {
            const int32_t v0 = nn2c_simd_ld_partial(x0, tail), v1 = nn2c_simd_ld_partial(x1, tail);
            const int32_t w0 = nn2c_simd_ld32(wp), w1 = nn2c_simd_ld32(wp + 4);
            NN2C_DSP_EXT(v0, v0e, v0o);
            NN2C_DSP_EXT(v1, v1e, v1o);
            NN2C_DSP_EXT(w0, w0e, w0o);
            NN2C_DSP_EXT(w1, w1e, w1o);
            s00 = __smlad(v0o, w0o, __smlad(v0e, w0e, s00));
            s10 = __smlad(v1o, w0o, __smlad(v1e, w0e, s10));
            s01 = __smlad(v0o, w1o, __smlad(v0e, w1e, s01));
            s11 = __smlad(v1o, w1o, __smlad(v1e, w1e, s11));
        }
        o0[c] = (int8_t)nn2c_simd_requant(&o, s00, c);
        o1[c] = (int8_t)nn2c_simd_requant(&o, s10, c);
        if (c + 1 < out_c) {
            o0[c + 1] = (int8_t)nn2c_simd_requant(&o, s01, c + 1);
            o1[c + 1] = (int8_t)nn2c_simd_requant(&o, s11, c + 1);
        }
    }
}

/* Four int8 of one row (v) against the next filter words of two groups (wp, wq): 16 MACs into
 * the four channel sums. The tail step, and the whole loop when not optimising. */
static inline void nn2c_dsp_row1_step(int32_t v, const int8_t *wp, const int8_t *wq, int32_t *s0, int32_t *s1,
                                      int32_t *s2, int32_t *s3) {
    NN2C_DSP_EXT(v, ve, vo);
    const int32_t w0 = nn2c_simd_ld32(wp), w1 = nn2c_simd_ld32(wp + 4);
    const int32_t w2 = nn2c_simd_ld32(wq), w3 = nn2c_simd_ld32(wq + 4);
    NN2C_DSP_EXT(w0, w0e, w0o);
    NN2C_DSP_EXT(w1, w1e, w1o);
    NN2C_DSP_EXT(w2, w2e, w2o);
    NN2C_DSP_EXT(w3, w3e, w3o);
    *s0 = __smlad(vo, w0o, __smlad(ve, w0e, *s0));
    *s1 = __smlad(vo, w1o, __smlad(ve, w1e, *s1));
    *s2 = __smlad(vo, w2o, __smlad(ve, w2e, *s2));
    *s3 = __smlad(vo, w3o, __smlad(ve, w3e, *s3));
}

/* nn2c_dsp_row1_step of a dual filter (nn2c_gemm_s8_t.dual): s0 / s2 the sums of each pair's channel A, s1 / s3
 * of A + 256 B (wrapping: only their difference, 256 times B's sum, is read). */
static inline void nn2c_dsp_row1_step_dual(int32_t v, const int8_t *wp, const int8_t *wq, int32_t *s0, int32_t *s1,
                                           int32_t *s2, int32_t *s3) {
    NN2C_DSP_EXT(v, ve, vo);
    const int32_t w0 = nn2c_simd_ld32(wp), w1 = nn2c_simd_ld32(wp + 4);
    const int32_t w2 = nn2c_simd_ld32(wq), w3 = nn2c_simd_ld32(wq + 4);
    *s0 = __smlad(vo, __sxtb16(w1), __smlad(ve, __sxtb16(w0), *s0));
    *s1 = __smlad(vo, w1, __smlad(ve, w0, *s1));
    *s2 = __smlad(vo, __sxtb16(w3), __smlad(ve, __sxtb16(w2), *s2));
    *s3 = __smlad(vo, w3, __smlad(ve, w2, *s3));
}

/* One step of nn2c_gemm_rows1's loop: one input word against two filter words of each of two groups
 * (4 channels x 4 values, 16 MACs): 10 SXTB16, 8 SMLAD, 21 instructions. */
#define NN2C_DSP_ROW1_STEP_AS(XE, XO, W0, W1, T) \
    "ldr    %[" XO "], [%[x]], #4\n\t" \
    "ldrd   %[" W0 "], %[" W1 "], [%[wp]], #8\n\t" \
    "sxtb16 %[" XE "], %[" XO "]\n\t" \
    "sxtb16 %[" XO "], %[" XO "], ror #8\n\t" \
    "sxtb16 %[" T "], %[" W0 "]\n\t" \
    "smlad  %[s0], %[" XE "], %[" T "], %[s0]\n\t" \
    "sxtb16 %[" W0 "], %[" W0 "], ror #8\n\t" \
    "smlad  %[s0], %[" XO "], %[" W0 "], %[s0]\n\t" \
    "sxtb16 %[" T "], %[" W1 "]\n\t" \
    "smlad  %[s1], %[" XE "], %[" T "], %[s1]\n\t" \
    "sxtb16 %[" W1 "], %[" W1 "], ror #8\n\t" \
    "smlad  %[s1], %[" XO "], %[" W1 "], %[s1]\n\t" \
    "ldrd   %[" W0 "], %[" W1 "], [%[wq]], #8\n\t" \
    "sxtb16 %[" T "], %[" W0 "]\n\t" \
    "smlad  %[s2], %[" XE "], %[" T "], %[s2]\n\t" \
    "sxtb16 %[" W0 "], %[" W0 "], ror #8\n\t" \
    "smlad  %[s2], %[" XO "], %[" W0 "], %[s2]\n\t" \
    "sxtb16 %[" T "], %[" W1 "]\n\t" \
    "smlad  %[s3], %[" XE "], %[" T "], %[s3]\n\t" \
    "sxtb16 %[" W1 "], %[" W1 "], ror #8\n\t" \
    "smlad  %[s3], %[" XO "], %[" W1 "], %[s3]\n\t"
#define NN2C_DSP_ROW1_STEP NN2C_DSP_ROW1_STEP_AS("xe", "xo", "w0", "w1", "t")
/* NN2C_DSP_ROW1_STEP of a dual filter (nn2c_dsp_row1_step_dual): 6 SXTB16, 8 SMLAD, 17 instructions per 16 MACs. */
#define NN2C_DSP_ROW1_DUAL_AS(XE, XO, W0, W1, T) \
    "ldr    %[" XO "], [%[x]], #4\n\t" \
    "ldrd   %[" W0 "], %[" W1 "], [%[wp]], #8\n\t" \
    "sxtb16 %[" XE "], %[" XO "]\n\t" \
    "sxtb16 %[" XO "], %[" XO "], ror #8\n\t" \
    "smlad  %[s1], %[" XE "], %[" W0 "], %[s1]\n\t" \
    "sxtb16 %[" T "], %[" W0 "]\n\t" \
    "smlad  %[s0], %[" XE "], %[" T "], %[s0]\n\t" \
    "smlad  %[s1], %[" XO "], %[" W1 "], %[s1]\n\t" \
    "sxtb16 %[" T "], %[" W1 "]\n\t" \
    "smlad  %[s0], %[" XO "], %[" T "], %[s0]\n\t" \
    "ldrd   %[" W0 "], %[" W1 "], [%[wq]], #8\n\t" \
    "smlad  %[s3], %[" XE "], %[" W0 "], %[s3]\n\t" \
    "sxtb16 %[" T "], %[" W0 "]\n\t" \
    "smlad  %[s2], %[" XE "], %[" T "], %[s2]\n\t" \
    "smlad  %[s3], %[" XO "], %[" W1 "], %[s3]\n\t" \
    "sxtb16 %[" T "], %[" W1 "]\n\t" \
    "smlad  %[s2], %[" XO "], %[" T "], %[s2]\n\t"

/* The four channel sums s[0..3] of one row a0 over two filter groups (*wp, *wq, advanced past them),
 * the whole blocks in assembly, two steps a loop iteration (22 instructions per 16 MACs; GCC 12: 29). */
NN2C_INLINE void nn2c_dsp_row1_dot(const int8_t *a0, int32_t blocks, int32_t tail, const int8_t **wp_,
                                   const int8_t **wq_, int32_t s[4]) {
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    const int8_t *x0 = a0, *wp = *wp_, *wq = *wq_;
#if defined(NN2C_INLINE_ASM)
    if (blocks > 0) {
        /* one step first when the count is odd, then two a loop iteration: in one assembly block, so
         * that the count need not stay in a register around it */
        const int8_t *const x0_end = a0 + 4 * blocks;
        int32_t xe, xo, w0, w1, t;
        __asm__ volatile("sub    %[xe], %[x_end], %[x]\n\t"
                         "tst    %[xe], #4\n\t"
                         "beq    1f\n\t" NN2C_DSP_ROW1_STEP
                         "1:\n\t"
                         "cmp    %[x], %[x_end]\n\t"
                         "beq    3f\n"
                         "2:\n\t" NN2C_DSP_ROW1_STEP NN2C_DSP_ROW1_STEP
                         "cmp    %[x], %[x_end]\n\t"
                         "bne    2b\n"
                         "3:\n\t"
                         : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [x] "+r"(x0), [wp] "+r"(wp),
                           [wq] "+r"(wq), [xe] "=&r"(xe), [xo] "=&r"(xo), [w0] "=&r"(w0), [w1] "=&r"(w1),
                           [t] "=&r"(t)
                         : [x_end] "r"(x0_end)
                         : "cc", "memory");
    }
#else /* without optimisation (-O0) GCC keeps too few registers free for the assembly */
    for (const int8_t *const x0_end = a0 + 4 * blocks; x0 != x0_end; x0 += 4, wp += 8, wq += 8) {
        nn2c_dsp_row1_step(nn2c_simd_ld32(x0), wp, wq, &s0, &s1, &s2, &s3);
    }
#endif
    if (tail) {
        nn2c_dsp_row1_step(nn2c_simd_ld_partial(x0, tail), wp, wq, &s0, &s1, &s2, &s3);
    }
    *wp_ = wp;
    *wq_ = wq;
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

/* One row x four channels (two groups) per step: one input word, two filter words per group,
 * 10 SXTB16, 8 SMLAD (nn2c_dsp_row1_dot). Where every shift is negative and the activation range is
 * int8's (the usual layer), a whole group's four channels are requantised in assembly
 * (nn2c_dsp_requant4_right, 11 instructions an output; GCC 12's output stage took some 22) and stored
 * as one word. One copy of the dot product for both output stages: the unrolled assembly is some 300
 * bytes of code, and a loop of its own for the assembly stage saved only 1.5% more. */
/* The output of sum S from a channel's record loaded into m (multiplier), h (rounding high word with the
 * output offset) and sh (shift): nn2c_record_requant in 6 instructions, the high word built in HI (h itself
 * where the channel has one sum, another register where h serves a second one), SSAT to int8 in S. */
#define NN2C_DSP_RECORD_OUT(S, HI) \
    "and    %[lo], %[" S "], #0x80000000\n\t" \
    "add    %[" HI "], %[h], %[" S "], asr #31\n\t" \
    "orr    %[lo], %[lo], #0x40000000\n\t" \
    "smlal  %[lo], %[" HI "], %[" S "], %[m]\n\t" \
    "asr    %[" HI "], %[" HI "], %[sh]\n\t" \
    "ssat   %[" S "], #8, %[" HI "]\n\t"
/* A channel's record in one LDM (its registers in ascending order: m r10, h r11, sh r12), then its sum S
 * requantised (NN2C_DSP_RECORD_OUT). */
#define NN2C_DSP_RECORD_RQ(S) "ldm    %[r]!, {%[m], %[h], %[sh]}\n\t" NN2C_DSP_RECORD_OUT(S, "h")
/* The same from a doubled record (m, h = 2^(r - 1) + offset 2^r, sh = r) and a doubled sum S:
 * nn2c_record_requant_doubled in 4 instructions. */
#define NN2C_DSP_DOUBLED_OUT(S, HI) \
    "add    %[" HI "], %[h], %[" S "], asr #31\n\t" \
    "smmlar %[" HI "], %[" S "], %[m], %[" HI "]\n\t" \
    "asr    %[" HI "], %[" HI "], %[sh]\n\t" \
    "ssat   %[" S "], #8, %[" HI "]\n\t"
#define NN2C_DSP_DOUBLED_RQ(S) "ldm    %[r]!, {%[m], %[h], %[sh]}\n\t" NN2C_DSP_DOUBLED_OUT(S, "h")
/* NN2C_DSP_DOUBLED_OUT in the naked assembly functions' fixed registers: an output from its doubled sum S (in
 * place), its record's m r8, h r9, r r10, r11 the high word (nn2c_record_requant_doubled) */
#define NN2C_DSP_R8_RQ(S) \
    "add    r11, r9, " S ", asr #31\n\t" \
    "smmlar r11, " S ", r8, r11\n\t" \
    "asr    r11, r11, r10\n\t" \
    "ssat   " S ", #8, r11\n\t"
/* The sums s0-s3 from four records at r, packed into s0's bytes, the lowest channel in the lowest byte; MID
 * runs between the second and the third (a FULLY_CONNECTED's second channel pair begins with its biases). */
#define NN2C_DSP_RECORD4(MID) \
    NN2C_DSP_RECORD_RQ("s0") NN2C_DSP_RECORD_RQ("s1") MID NN2C_DSP_RECORD_RQ("s2") NN2C_DSP_RECORD_RQ("s3") \
    "bfi    %[s0], %[s1], #8, #8\n\t" \
    "bfi    %[s0], %[s2], #16, #8\n\t" \
    "bfi    %[s0], %[s3], #24, #8\n\t"

/* Four channels of one row from their records (two channel pairs, nn2c_gemm_s8_t.records: *rec at the first
 * pair's multiplier, advanced past the second pair's shift), packed into one word at y: 8 instructions a
 * channel, as nn2c_dsp_dw_record_out. */
NN2C_INLINE void nn2c_dsp_row1_record_out(int32_t s0, int32_t s1, int32_t s2, int32_t s3, const int32_t *rec,
                                          int8_t *y) {
#if defined(NN2C_INLINE_ASM)
    register int32_t m __asm__("r10"), h __asm__("r11"), sh __asm__("r12");
    int32_t lo;
    __asm__ volatile(NN2C_DSP_RECORD4("add    %[r], %[r], #8\n\t") /* (the second pair's biases) */
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [r] "+r"(rec), [m] "=&r"(m),
                       [h] "=&r"(h), [sh] "=&r"(sh), [lo] "=&r"(lo)
                     :
                     : "memory");
    nn2c_simd_st32(y, s0);
#else
    y[0] = (int8_t)nn2c_record_requant(s0, rec);
    y[1] = (int8_t)nn2c_record_requant(s1, rec + 3);
    y[2] = (int8_t)nn2c_record_requant(s2, rec + 8);
    y[3] = (int8_t)nn2c_record_requant(s3, rec + 11);
#endif
}

#if defined(NN2C_INLINE_ASM) && !(defined(NN2C_OMIT_DSP_FC_GROUPS) && defined(NN2C_OMIT_DSP_FC_DUAL))
/* (nn2c_config.h: a layer takes one of the paths) What nn2c_gemm_rows1_groups walks, in memory (32-bit fields:
 * the assembly reads them at fixed offsets) */
typedef struct {
    const int8_t *a0;   /* 0: the row */
    const int32_t *rec; /* 4: the next group's records */
    int8_t *y;          /* 8: its outputs */
    int32_t gb;         /* 12: a channel pair's filter bytes */
    int32_t count;      /* 16: groups of 4 channels left */
} nn2c_dsp_rows1_walk_t;

/* The whole groups of 4 channels of nn2c_gemm_rows1_records for an even, non-zero count of input words and no
 * tail, in one assembly loop: the sums from the records' biases, STEP two a step (then FIX), the
 * records' output stage and the word stored, the walk in *st. 14 registers: the sums, the row and filter
 * pointers and the step's five temporaries (the last three the records' multiplier, rounding word and shift,
 * r10 - r12), the row's end and st. GCC 12 spent some 90 instructions a group around the dot product's assembly
 * (the walk reloaded from the stack), 50 here (QEMU, ad01_int8). */
#define NN2C_DSP_ROWS1_GROUPS(STEP, FIX) \
    do { \
        register int32_t m __asm__("r10"), h __asm__("r11"), sh __asm__("r12"); \
        int32_t s0, s1, s2, s3, lo; \
        const int32_t *r; \
        const int8_t *x, *wq; \
        const int8_t *wp = w; \
        __asm__ volatile("1:\n\t" \
                         "ldr    %[r], [%[st], #4]\n\t" \
                         "ldrd   %[s0], %[s1], [%[r]]\n\t" \
                         "ldrd   %[s2], %[s3], [%[r], #32]\n\t" \
                         "ldr    %[x], [%[st]]\n\t" \
                         "ldr    %[wq], [%[st], #12]\n\t" \
                         "add    %[wq], %[wq], %[wp]\n" \
                         "2:\n\t" STEP STEP \
                         "cmp    %[x], %[x_end]\n\t" \
                         "bne    2b\n\t" FIX \
                         "ldr    %[r], [%[st], #4]\n\t" \
                         "add    %[r], %[r], #8\n\t" \
                         NN2C_DSP_RECORD4("add    %[r], %[r], #8\n\t") /* (the second pair's biases) */ \
                         "str    %[r], [%[st], #4]\n\t" \
                         "ldr    %[x], [%[st], #8]\n\t" \
                         "str    %[s0], [%[x]], #4\n\t" \
                         "str    %[x], [%[st], #8]\n\t" \
                         "mov    %[wp], %[wq]\n\t" \
                         "ldr    %[x], [%[st], #16]\n\t" \
                         "subs   %[x], %[x], #1\n\t" \
                         "str    %[x], [%[st], #16]\n\t" \
                         "bne    1b\n\t" \
                         : [s0] "=&r"(s0), [s1] "=&r"(s1), [s2] "=&r"(s2), [s3] "=&r"(s3), [x] "=&r"(x), \
                           [wp] "+r"(wp), [wq] "=&r"(wq), [lo] "=&r"(lo), [r] "=&r"(r), [m] "=&r"(m), [h] "=&r"(h), \
                           [sh] "=&r"(sh) \
                         : [x_end] "r"(x_end), [st] "r"(st) \
                         : "cc", "memory"); \
    } while (0)

#if !defined(NN2C_OMIT_DSP_FC_GROUPS)
static void nn2c_gemm_rows1_groups(nn2c_dsp_rows1_walk_t *st, const int8_t *x_end, const int8_t *w) {
/* the step's temporaries named as the records' output stage uses them: lo r (the input word's halves), m h
 * (the filter words), sh */
    NN2C_DSP_ROWS1_GROUPS(NN2C_DSP_ROW1_STEP_AS("lo", "r", "m", "h", "sh"), "");
}
#endif

#if !defined(NN2C_OMIT_DSP_FC_DUAL)
/* The same over a dual filter (nn2c_gemm_s8_t.dual): s1 and s3 start at A's bias + 256 B's (the records' second
 * bias word of a dual filter), and after the dot product B's sum is their difference to A's / 256 (exact: the
 * codegen checks that B's bias and sum stay within 2^23 in magnitude). */
static void nn2c_gemm_rows1_groups_dual(nn2c_dsp_rows1_walk_t *st, const int8_t *x_end, const int8_t *w) {
    NN2C_DSP_ROWS1_GROUPS(NN2C_DSP_ROW1_DUAL_AS("lo", "r", "m", "h", "sh"),
                          "sub    %[s1], %[s1], %[s0]\n\t"
                          "asr    %[s1], %[s1], #8\n\t"
                          "sub    %[s3], %[s3], %[s2]\n\t"
                          "asr    %[s3], %[s3], #8\n\t");
}
#endif
#endif

/* nn2c_gemm_rows1 of a layer whose output stage is records (a FULLY_CONNECTED of batch 1 with every shift in
 * [-24, -2] and int8's range: the codegen's test), two channel pairs a step; the array output stage and its
 * set-up took some 108 instructions per four channels on ad01_int8 (QEMU). */
static void nn2c_gemm_rows1_records(const nn2c_gemm_s8_t *m, const int8_t *a0, const int8_t *w, int8_t *o0) {
    const int32_t blocks = m->depth >> 2, tail = m->depth & 3;
    const int32_t group_bytes = 2 * m->depth_padded, out_c = m->out_c;
    const int32_t *rec = m->records; /* pairs of channels, the last one padded */
    int32_t c = 0;
#if !defined(NN2C_OMIT_DSP_FC_DUAL) /* nn2c_config.h: some layer's filter is dual (a multiple of 4 channels) */
    if (m->dual) { /* (codegen: a multiple of 4 channels, of 8 inputs: whole groups, an even count of words) */
#if defined(NN2C_INLINE_ASM)
        nn2c_dsp_rows1_walk_t walk = {a0, rec, o0, group_bytes, out_c >> 2};
        nn2c_gemm_rows1_groups_dual(&walk, a0 + 4 * blocks, w);
#else
        for (; c < out_c; c += 4, rec += 16, w += 2 * group_bytes) {
            const int8_t *x = a0, *wp = w, *wq = w + group_bytes;
            int32_t s0 = rec[0], s1 = rec[1], s2 = rec[8], s3 = rec[9]; /* (s1, s3: A's bias + 256 B's) */
            for (int32_t b = 0; b < blocks; ++b, x += 4, wp += 8, wq += 8) { /* (no tail: whole words) */
                nn2c_dsp_row1_step_dual(nn2c_simd_ld32(x), wp, wq, &s0, &s1, &s2, &s3);
            }
            s1 = (int32_t)((uint32_t)s1 - (uint32_t)s0) >> 8; /* B's bias and sum (2^8 times them before) */
            s3 = (int32_t)((uint32_t)s3 - (uint32_t)s2) >> 8;
            nn2c_dsp_row1_record_out(s0, s1, s2, s3, rec + 2, o0 + c);
        }
#endif
        return;
    }
#endif
#if defined(NN2C_INLINE_ASM) && !defined(NN2C_OMIT_DSP_FC_GROUPS)
    if (blocks >= 2 && (blocks & 1) == 0 && tail == 0 && out_c >= 16) { /* (codegen: takes_fc_groups) */
        nn2c_dsp_rows1_walk_t walk = {a0, rec, o0, group_bytes, out_c >> 2};
        nn2c_gemm_rows1_groups(&walk, a0 + 4 * blocks, w);
        c = out_c & ~3;
        rec += 4 * c;
        w += c * m->depth_padded;
    }
#endif
    for (; c < out_c; c += 4, rec += 16) {
        const int two = c + 2 < out_c; /* a second pair */
        const int8_t *wp = w, *wq = w + (two ? group_bytes : 0); /* the second group, or the first again */
        w += 2 * group_bytes;
        int32_t s[4] = {rec[0], rec[1], two ? rec[8] : 0, two ? rec[9] : 0};
        nn2c_dsp_row1_dot(a0, blocks, tail, &wp, &wq, s);
        if (c + 4 <= out_c) {
            nn2c_dsp_row1_record_out(s[0], s[1], s[2], s[3], rec + 2, o0 + c);
            continue;
        }
        for (int32_t k = 0; c + k < out_c; ++k) { /* the last 1-3 channels */
            o0[c + k] = (int8_t)nn2c_record_requant(s[k], rec + 2 + 8 * (k >> 1) + 3 * (k & 1));
        }
    }
}

static void nn2c_gemm_rows1(const nn2c_gemm_s8_t *m, const int8_t *a0, const int8_t *w, int8_t *o0) {
    if (m->records) {
        nn2c_gemm_rows1_records(m, a0, w, o0);
        return;
    }
#if !defined(NN2C_OMIT_DSP_FC_ARRAYS) /* nn2c_config.h: some FULLY_CONNECTED reads the output stage from arrays */
    const int32_t blocks = m->depth >> 2, tail = m->depth & 3;
    const int32_t group_bytes = 2 * m->depth_padded, out_c = m->out_c;
    const nn2c_simd_out_t o = NN2C_GEMM_OUT(m);
    const int narrow = o.lo > -128 || o.hi < 127;
    const int right = !narrow && m->right == 2; /* (every shift negative: the codegen's flag) */
    for (int32_t c = 0; c < out_c; c += 4) {
        const int32_t groups = c + 2 < out_c ? 2 : 1;
        const int8_t *wp = w, *wq = w + (groups - 1) * group_bytes; /* the second group, or the first again */
        w += 2 * group_bytes;
        int32_t s[4] = {m->bias[c], m->bias[c + 1], m->bias[c + 2], m->bias[c + 3]};
        nn2c_dsp_row1_dot(a0, blocks, tail, &wp, &wq, s);
        const int32_t n = out_c - c < 4 ? out_c - c : 4;
        if (right && n == 4) {
            nn2c_simd_st32(o0 + c, nn2c_dsp_requant4_right(s[0], s[1], s[2], s[3], m->multipliers + c,
                                                           m->shifts + c, m->rounding + 2 * c, o.offset));
            continue;
        }
        for (int32_t k = 0; k < n; ++k) {
            const int32_t y = nn2c_dsp_requant1(&o, c + k, s[k]);
            o0[c + k] = (int8_t)(narrow ? nn2c_dsp_clamp(y, o.lo, o.hi) : y);
        }
    }
#endif
}
#endif

#if defined(NN2C_SIMD_DSP)
/* Aligned words of the filter and of the expanded pixel pair (16-byte aligned arrays). */
typedef int32_t nn2c_simd_word_t __attribute__((may_alias, aligned(4)));

/* A row of n int8 values as SMLAD operands: per 4 values the even and the odd ones sign-extended
 * to int16 pairs (SXTB16, SXTB16 ROR 8), written to dst[0], dst[1] of every 4-word block (the
 * other two words hold the pair's other pixel); a partial last block is zero-filled. */
/* `words` (>= 0) input words at src expanded to their even / odd int16 pairs at dst[0], dst[1], then `pitch` words
 * on (a constant: 4 in a pixel pair's layout, 6 in a pixel triple's, the other pixels' words between); returns the
 * next dst. In assembly two words a step (one STRD each, the loop's test once per two): 5 instructions a word, GCC
 * 12's loop took 8 (QEMU). */
NN2C_INLINE nn2c_simd_word_t *nn2c_dsp_expand_words(const int8_t *src, int32_t words, nn2c_simd_word_t *dst,
                                                    int32_t pitch) {
#if defined(NN2C_INLINE_ASM)
    const int8_t *const end = src + 4 * words;
    int32_t v, e, v2;
    __asm__ volatile("tst     %[words], #1\n\t"
                     "beq     2f\n\t"
                     "ldr     %[v], [%[src]], #4\n\t"
                     "sxtb16  %[e], %[v]\n\t"
                     "sxtb16  %[v], %[v], ror #8\n\t"
                     "strd    %[e], %[v], [%[dst]], %[step]\n"
                     "2:\n\t"
                     "cmp     %[src], %[end]\n\t"
                     "beq     3f\n"
                     "1:\n\t"
                     "ldr     %[v], [%[src]], #4\n\t"
                     "ldr     %[v2], [%[src]], #4\n\t"
                     "sxtb16  %[e], %[v]\n\t"
                     "sxtb16  %[v], %[v], ror #8\n\t"
                     "strd    %[e], %[v], [%[dst]], %[step]\n\t"
                     "sxtb16  %[e], %[v2]\n\t"
                     "sxtb16  %[v2], %[v2], ror #8\n\t"
                     "strd    %[e], %[v2], [%[dst]], %[step]\n\t"
                     "cmp     %[src], %[end]\n\t"
                     "bne     1b\n"
                     "3:\n\t"
                     : [src] "+r"(src), [dst] "+r"(dst), [v] "=&r"(v), [e] "=&r"(e), [v2] "=&r"(v2)
                     : [words] "r"(words), [end] "r"(end), [step] "i"(4 * pitch)
                     : "cc", "memory");
#else /* -O0, or NN2C_NO_INLINE_ASM (nn2c_common.h) */
    for (; words > 0; --words, src += 4, dst += pitch) {
        const int32_t v = nn2c_simd_ld32(src);
        dst[0] = __sxtb16(v);
        dst[1] = nn2c_sxtb16_ror8(v);
    }
#endif
    return dst;
}

/* n bytes at src expanded to int16 pairs at dst[0], dst[1] of blocks `pitch` words apart (a partial last word
 * zero-filled). */
NN2C_INLINE void nn2c_dsp_expand_pitch(const int8_t *src, int32_t n, nn2c_simd_word_t *dst, int32_t pitch) {
    dst = nn2c_dsp_expand_words(src, n >> 2, dst, pitch);
    src += n & ~3;
    n &= 3;
    if (n > 0) {
        const int32_t v = nn2c_simd_ld_partial(src, n);
        dst[0] = __sxtb16(v);
        dst[1] = nn2c_sxtb16_ror8(v);
    }
}

#if !defined(NN2C_OMIT_DSP_GEMM_PAIRS) /* nn2c_config.h: some convolution runs over pixel pairs */
/* a pixel pair's layout: 4 words a block */
static void nn2c_dsp_expand(const int8_t *src, int32_t n, nn2c_simd_word_t *dst) {
    nn2c_dsp_expand_pitch(src, n, dst, 4);
}
#endif

/* Two expanded pixels x two channels per step: 6 words in (3 LDRD), 4 SXTB16, 8 SMLAD. The loop is
 * written in assembly because GCC 12 adds 4-5 register copies and pointer updates per step around
 * the intrinsics (22 instructions per 16 MACs measured, 16 here: two steps per loop iteration).
 * 13 registers: 4 sums, 3 pointers, the two filter words and their SXTB16 halves, one pixel's
 * even / odd words. */
#define NN2C_DSP_PAIR_STEP \
    "ldrd   %[w0], %[w1], [%[wp]], #8\n\t" \
    "ldrd   %[xe], %[xo], [%[x]], #8\n\t"   /* pixel 0: even, odd values as int16 pairs */ \
    "sxtb16 %[w0e], %[w0]\n\t" \
    "sxtb16 %[w0], %[w0], ror #8\n\t" \
    "sxtb16 %[w1e], %[w1]\n\t" \
    "sxtb16 %[w1], %[w1], ror #8\n\t" \
    "smlad  %[s00], %[xe], %[w0e], %[s00]\n\t" \
    "smlad  %[s00], %[xo], %[w0], %[s00]\n\t" \
    "smlad  %[s01], %[xe], %[w1e], %[s01]\n\t" \
    "smlad  %[s01], %[xo], %[w1], %[s01]\n\t" \
    "ldrd   %[xe], %[xo], [%[x]], #8\n\t"   /* pixel 1 */ \
    "smlad  %[s10], %[xe], %[w0e], %[s10]\n\t" \
    "smlad  %[s10], %[xo], %[w0], %[s10]\n\t" \
    "smlad  %[s11], %[xe], %[w1e], %[s11]\n\t" \
    "smlad  %[s11], %[xo], %[w1], %[s11]\n\t"

/* NN2C_DSP_PAIR_STEP over a dual filter (nn2c_gemm_s8_t.dual): the pair's two words (the int16 halves A + 256 B
 * of inputs 0 2 and 1 3) and their SXTB16 (A alone); s00 / s10 sum A, s01 / s11 A + 256 B: 2 SXTB16, 13
 * instructions per 16 MACs against 15. */
#define NN2C_DSP_PAIR_DUAL_STEP \
    "ldrd   %[w0], %[w1], [%[wp]], #8\n\t" \
    "ldrd   %[xe], %[xo], [%[x]], #8\n\t" \
    "sxtb16 %[w0e], %[w0]\n\t" \
    "sxtb16 %[w1e], %[w1]\n\t" \
    "smlad  %[s01], %[xe], %[w0], %[s01]\n\t" \
    "smlad  %[s00], %[xe], %[w0e], %[s00]\n\t" \
    "smlad  %[s01], %[xo], %[w1], %[s01]\n\t" \
    "smlad  %[s00], %[xo], %[w1e], %[s00]\n\t" \
    "ldrd   %[xe], %[xo], [%[x]], #8\n\t" \
    "smlad  %[s11], %[xe], %[w0], %[s11]\n\t" \
    "smlad  %[s10], %[xe], %[w0e], %[s10]\n\t" \
    "smlad  %[s11], %[xo], %[w1], %[s11]\n\t" \
    "smlad  %[s10], %[xo], %[w1e], %[s10]\n\t"

#define NN2C_DSP_PAIR_OPERANDS \
    : [s00] "+r"(s00), [s01] "+r"(s01), [s10] "+r"(s10), [s11] "+r"(s11), [x] "+r"(x), [wp] "+r"(wp), \
      [w0] "=&r"(w0), [w1] "=&r"(w1), [w0e] "=&r"(w0e), [w1e] "=&r"(w1e), [xe] "=&r"(xe), [xo] "=&r"(xo) \
    : [x_end] "r"(x_end) \
    : "cc", "memory"

/* one block first when their count is odd (x_end - x = 16 bytes a block), then two a step: in one assembly
 * block, so that the count need not stay in a register (or on the stack) around it */
#define NN2C_DSP_PAIR_LOOP(STEP) \
    "sub    %[xe], %[x_end], %[x]\n\t" \
    "tst    %[xe], #16\n\t" \
    "beq    1f\n\t" STEP \
    "1:\n\t" \
    "cmp    %[x], %[x_end]\n\t" \
    "beq    3f\n" \
    "2:\n\t" STEP STEP \
    "cmp    %[x], %[x_end]\n\t" \
    "bne    2b\n" \
    "3:\n\t"

/* The pair's four sums over the expanded pixel pair x .. x_end and the filter words at *w (advanced past them);
 * `dual` a constant of the caller: the filter dual, s[1] / s[3] then summing A + 256 B (NN2C_DSP_PAIR_DUAL_STEP). */
NN2C_INLINE void nn2c_dsp_pair_dot(const nn2c_simd_word_t *x, const nn2c_simd_word_t *x_end, int32_t blocks,
                                   const nn2c_simd_word_t **w, int32_t s[4], int dual) {
    int32_t s00 = s[0], s01 = s[1], s10 = s[2], s11 = s[3];
    int32_t w0, w1, w0e, w1e, xe, xo;
    const nn2c_simd_word_t *wp = *w;
    (void)blocks;
#if defined(NN2C_INLINE_ASM)
    if (dual) { /* (a dual filter's blocks come in pairs: no odd one to enter for) */
        __asm__ volatile("2:\n\t" NN2C_DSP_PAIR_DUAL_STEP NN2C_DSP_PAIR_DUAL_STEP
                         "cmp    %[x], %[x_end]\n\t"
                         "bne    2b\n\t" NN2C_DSP_PAIR_OPERANDS);
    } else {
        __asm__ volatile(NN2C_DSP_PAIR_LOOP(NN2C_DSP_PAIR_STEP) NN2C_DSP_PAIR_OPERANDS);
    }
#else /* without optimisation (-O0) GCC keeps too few registers free for the assembly */
    for (; dual && x != x_end; x += 4, wp += 2) {
        w0 = wp[0];
        w1 = wp[1];
        w0e = __sxtb16(w0);
        w1e = __sxtb16(w1);
        s00 = __smlad(x[1], w1e, __smlad(x[0], w0e, s00));
        s01 = __smlad(x[1], w1, __smlad(x[0], w0, s01));
        s10 = __smlad(x[3], w1e, __smlad(x[2], w0e, s10));
        s11 = __smlad(x[3], w1, __smlad(x[2], w0, s11));
    }
    for (; x != x_end; x += 4, wp += 2) {
        w0 = wp[0];
        w1 = wp[1];
        w0e = __sxtb16(w0);
        w0 = nn2c_sxtb16_ror8(w0);
        w1e = __sxtb16(w1);
        w1 = nn2c_sxtb16_ror8(w1);
        xe = x[0];
        xo = x[1];
        s00 = __smlad(xo, w0, __smlad(xe, w0e, s00));
        s01 = __smlad(xo, w1, __smlad(xe, w1e, s01));
        xe = x[2];
        xo = x[3];
        s10 = __smlad(xo, w0, __smlad(xe, w0e, s10));
        s11 = __smlad(xo, w1, __smlad(xe, w1e, s11));
    }
#endif
    *w = wp;
    s[0] = s00;
    s[1] = s01;
    s[2] = s10;
    s[3] = s11;
}

/* Two channels of a pixel pair (sums s0 / s1: channels 0 / 1 of pixel 0, s2 / s3 of pixel 1), every shift
 * negative and int8's whole range (nn2c_gemm_pair16's usual case): requantised in assembly
 * (NN2C_DSP_RQ_SUM, each channel's constants loaded once for both pixels), each pixel's two bytes
 * packed into one halfword (*y0: pixel 0, *y1: pixel 1, lower channel in the lower byte). */
NN2C_INLINE void nn2c_dsp_requant2x2_right(int32_t s0, int32_t s1, int32_t s2, int32_t s3, const int32_t *mp,
                                           const int32_t *sp_, const int64_t *rp, int32_t off, int32_t *y0,
                                           int32_t *y1) {
#if defined(NN2C_INLINE_ASM)
    int32_t m, sh, lo, hi;
    __asm__(NN2C_DSP_RQ_CHANNEL(0) NN2C_DSP_RQ_SUM("s0", 0) NN2C_DSP_RQ_SUM("s2", 0)
            NN2C_DSP_RQ_CHANNEL(1) NN2C_DSP_RQ_SUM("s1", 1) NN2C_DSP_RQ_SUM("s3", 1)
            "bfi    %[s0], %[s1], #8, #8\n\t"
            "bfi    %[s2], %[s3], #8, #8\n\t" NN2C_DSP_RQ_OPERANDS(2));
    *y0 = s0;
    *y1 = s2;
#else /* -O0, or NN2C_NO_INLINE_ASM (nn2c_common.h) */
    const int32_t a = nn2c_dsp_requant_sat(s0, mp[0], sp_[0], rp, off);
    const int32_t b = nn2c_dsp_requant_sat(s1, mp[1], sp_[1], rp + 2, off);
    const int32_t c = nn2c_dsp_requant_sat(s2, mp[0], sp_[0], rp, off);
    const int32_t d = nn2c_dsp_requant_sat(s3, mp[1], sp_[1], rp + 2, off);
    *y0 = (int32_t)(((uint32_t)a & 0xFFu) | ((uint32_t)b & 0xFFu) << 8);
    *y1 = (int32_t)(((uint32_t)c & 0xFFu) | ((uint32_t)d & 0xFFu) << 8);
#endif
}

/* The whole channel pairs of nn2c_gemm_pair16 when `right` (every shift negative) and the activation
 * range is int8's: the requantisation in assembly and one halfword stored per pixel, so that fewer
 * values live across the dot product's assembly (GCC 12 reloaded some 26 spilled values per channel
 * pair from the stack around it). Returns the channels done. */

/* Two channels of a pixel pair from their doubled records (nn2c_record_requant_doubled: the sums doubled by the
 * caller; *rec at the group's first multiplier, advanced past the group): each pixel's two bytes packed into one
 * halfword as nn2c_dsp_requant2x2_right, 9 instructions a channel (13 with nn2c_record_requant's records, 17 from
 * the arrays). */
NN2C_INLINE void nn2c_dsp_record2x2(int32_t s0, int32_t s1, int32_t s2, int32_t s3, const int32_t **rec, int32_t *y0,
                                    int32_t *y1) {
    const int32_t *r = *rec;
#if defined(NN2C_INLINE_ASM)
    /* a channel's three words in one LDM: its registers in ascending order */
    register int32_t m __asm__("r10"), h __asm__("r11"), sh __asm__("r12");
    int32_t hi; /* (h kept for the other pixel) */
    __asm__ volatile("ldm    %[r]!, {%[m], %[h], %[sh]}\n\t"
                     NN2C_DSP_DOUBLED_OUT("s0", "hi") NN2C_DSP_DOUBLED_OUT("s2", "hi")
                     "ldm    %[r]!, {%[m], %[h], %[sh]}\n\t"
                     NN2C_DSP_DOUBLED_OUT("s1", "hi") NN2C_DSP_DOUBLED_OUT("s3", "hi")
                     "bfi    %[s0], %[s1], #8, #8\n\t"
                     "bfi    %[s2], %[s3], #8, #8\n\t"
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [r] "+r"(r), [m] "=&r"(m),
                       [h] "=&r"(h), [sh] "=&r"(sh), [hi] "=&r"(hi)
                     :
                     : "memory");
    *y0 = s0;
    *y1 = s2;
#else
    const int32_t a = nn2c_record_requant_doubled(s0, r), b = nn2c_record_requant_doubled(s1, r + 3);
    const int32_t c = nn2c_record_requant_doubled(s2, r), d = nn2c_record_requant_doubled(s3, r + 3);
    *y0 = (int32_t)(((uint32_t)a & 0xFFu) | ((uint32_t)b & 0xFFu) << 8);
    *y1 = (int32_t)(((uint32_t)c & 0xFFu) | ((uint32_t)d & 0xFFu) << 8);
    r += 6;
#endif
    *rec = r;
}

/* The last channel of an odd count for the pixels of a pair or triple (`pixels` of them expanded at px, 2 * pixels
 * words a block; records padded to whole pairs: rec at the pair's biases; the filter's last pair of channels at wp,
 * the padding channel B zero: in the int8 layout its words skipped, in a dual filter's the halves A + 256 B are A's
 * int16 themselves) into out[p], p < pixels: plain C, as it runs once a pixel pair or triple and only in pruned
 * layers, where the pair's assembly inlined once more cost 350 bytes. */
#if !defined(NN2C_OMIT_DSP_GEMM_ODD) /* nn2c_config.h: some convolution's channel count is odd */
static void nn2c_dsp_last_channel(const nn2c_simd_word_t *px, int32_t pixels, int32_t blocks,
                                  const nn2c_simd_word_t *wp, int dual, const int32_t *rec, int8_t *const out[3]) {
    int32_t s[3] = {rec[0], rec[0], rec[0]};
    for (int32_t k = 0; k < blocks; ++k, wp += 2, px += 2 * pixels) {
        const int32_t we = dual ? wp[0] : __sxtb16(wp[0]), wo = dual ? wp[1] : nn2c_sxtb16_ror8(wp[0]);
        for (int32_t q = 0; q < pixels; ++q) s[q] = __smlad(px[2 * q + 1], wo, __smlad(px[2 * q], we, s[q]));
    }
    for (int32_t q = 0; q < pixels; ++q) *out[q] = (int8_t)nn2c_record_requant_doubled(2 * s[q], rec + 2);
}
#endif

/* The whole channel pairs of a pixel pair from records (nn2c_dsp_record2x2), each pixel's two outputs stored as
 * one halfword; `dual` a constant of the caller (nn2c_gemm_s8_t.dual: the pair's second sum is A + 256 B, from
 * the records' second bias word, B's taken out after the dot product). */
NN2C_INLINE void nn2c_dsp_pair_records(const nn2c_simd_word_t *pair, const nn2c_simd_word_t *x_end, int32_t blocks,
                                       const nn2c_simd_word_t **wp, const int32_t *rec, int8_t *o0, int8_t *o1,
                                       int32_t channels, int dual) {
    for (int8_t *const end = o0 + channels; o0 != end; o0 += 2, o1 += 2) { /* (channels even) */
        int32_t s[4] = {rec[0], rec[1], rec[0], rec[1]};
        rec += 2;
        nn2c_dsp_pair_dot(pair, x_end, blocks, wp, s, dual);
        /* the sums doubled for the doubled records: B's of a dual filter, 2^8 times them before, shifted by one less */
        if (dual) {
            s[1] = (int32_t)((uint32_t)s[1] - (uint32_t)s[0]) >> 7;
            s[3] = (int32_t)((uint32_t)s[3] - (uint32_t)s[2]) >> 7;
        } else {
            s[1] *= 2;
            s[3] *= 2;
        }
        s[0] *= 2;
        s[2] *= 2;
        int32_t y0, y1;
        nn2c_dsp_record2x2(s[0], s[1], s[2], s[3], &rec, &y0, &y1);
        const uint16_t h0 = (uint16_t)y0, h1 = (uint16_t)y1;
        memcpy(o0, &h0, 2); /* one STRH each (unaligned halfwords are allowed) */
        memcpy(o1, &h1, 2);
    }
}

#if !defined(NN2C_OMIT_DSP_GEMM_TRIPLES) /* nn2c_config.h: some 1x1 convolution runs over pixel triples */
/* --- 1x1 convolutions over pixel triples (nn2c_conv_simd_params_t.triples) ------------------------------------
 * Three expanded pixels (per block of 4 of the depth 6 words: each pixel's even / odd int16 pairs) x the two
 * channels of a dual filter (records: an even channel count). A step of 4 of the depth: 1 LDRD and 2 SXTB16 of the
 * filter, 3 LDRD and 12 SMLAD of the pixels, 18 instructions per 24 MACs where a pixel pair takes 13 per 16; one
 * output stage per 6 outputs. */
#if defined(NN2C_INLINE_ASM)
/* What nn2c_gemm_triple16_asm copies onto its stack (its offsets there are the words' here; wp stays in r7). */
typedef struct {
    const nn2c_simd_word_t *px;    /* word 0: the triple's blocks */
    const nn2c_simd_word_t *x_end; /* 1: past them */
    const int32_t *rec;            /* 2: the next channel pair's records */
    int8_t *out;                   /* 3: pixel 0's outputs of that pair */
    int32_t off1, off2;            /* 4, 5: pixel 1's and 2's outputs from pixel 0's (one LDRD) */
    int8_t *out_end;               /* 6: pixel 0's outputs past the last pair */
    uintptr_t entry;               /* 7: where the loop of four steps is entered (filled in by the assembly) */
    const nn2c_simd_word_t *wp;    /* 8: the first pair's filter words */
    int32_t half;                  /* 9: 1 where the block count is not a multiple of 4 (two steps first) */
} nn2c_gemm_triple_frame_t;
typedef char nn2c_gemm_triple_frame_check[offsetof(nn2c_gemm_triple_frame_t, half) == 36 ? 1 : -1];

/* A step of 4 of the depth: the filter words r8 r9 (A + 256 B) and their SXTB16 r10 r11 (A), each pixel's words
 * r12 lr, its sums A / A + 256 B in r0 r1, r2 r3, r4 r5 */
#define NN2C_DSP_TRIPLE_PIXEL(A, AB) \
    "ldrd   r12, lr, [r6], #8\n\t" \
    "smlad  " AB ", r12, r8, " AB "\n\t" \
    "smlad  " A ", r12, r10, " A "\n\t" \
    "smlad  " AB ", lr, r9, " AB "\n\t" \
    "smlad  " A ", lr, r11, " A "\n\t"
#define NN2C_DSP_TRIPLE_STEP \
    "ldrd   r8, r9, [r7], #8\n\t" \
    "sxtb16 r10, r8\n\t" \
    "sxtb16 r11, r9\n\t" \
    NN2C_DSP_TRIPLE_PIXEL("r0", "r1") NN2C_DSP_TRIPLE_PIXEL("r2", "r3") NN2C_DSP_TRIPLE_PIXEL("r4", "r5")
/* B's doubled sum from A + 256 B's (2^8 B shifted by one less), A's doubled */
#define NN2C_DSP_TRIPLE_DOUBLE(A, AB) \
    "sub    " AB ", " AB ", " A "\n\t" \
    "asr    " AB ", " AB ", #7\n\t" \
    "lsl    " A ", " A ", #1\n\t"
#define NN2C_DSP_TRIPLE_RQ NN2C_DSP_R8_RQ

/* Every channel pair of a pixel triple, all in assembly with every register but sp and pc (the six sums r0-r5,
 * the pixels r6, the filter r7, its words r8-r11, a pixel's words r12 lr), the rest in a frame on the stack
 * (nn2c_gemm_triple_frame_t). Per channel pair, counted below: 75 instructions a loop of four steps (entered at its
 * third where the block count is 2 mod 4: the address in the frame, one LDR to pc), 58 outside. In C around an
 * assembly loop of the sums, GCC spilled the pointers around it: vww_96_int8 took 6,339,184 instructions on the
 * Cortex-M4 against 6,210,227 with this (QEMU, before the four-step loop). */
__attribute__((naked, noinline)) static void nn2c_gemm_triple16_asm(
    __attribute__((unused)) const nn2c_gemm_triple_frame_t *frame) {
    __asm__ volatile(
        "push   {r3-r11, lr}\n\t" /* (r3 too: sp stays 8-byte aligned) */
        "sub    sp, sp, #32\n\t"
        "ldm    r0, {r1-r7}\n\t"
        "stm    sp, {r1-r7}\n\t"
        "ldrd   r7, r1, [r0, #32]\n\t"
        "adr    r2, 2f\n\t"
        "adr    r3, 3f\n\t"
        "cmp    r1, #0\n\t"
        "it     ne\n\t"
        "movne  r2, r3\n\t"
        "orr    r2, r2, #1\n\t" /* (a Thumb address) */
        "str    r2, [sp, #28]\n"
        "1:\n\t"
        "ldr    r12, [sp, #8]\n\t"
        "ldrd   r0, r1, [r12], #8\n\t" /* the pair's biases: A's, A's + 256 B's */
        "str    r12, [sp, #8]\n\t"
        "mov    r2, r0\n\t"
        "mov    r3, r1\n\t"
        "mov    r4, r0\n\t"
        "mov    r5, r1\n\t"
        "ldr    r6, [sp]\n\t"
        "ldr    pc, [sp, #28]\n\t"
        ".p2align 2\n" /* (ADR's targets) */
        "2:\n\t" NN2C_DSP_TRIPLE_STEP NN2C_DSP_TRIPLE_STEP /* (a dual filter's blocks come in pairs) */
        ".p2align 2\n"
        "3:\n\t" NN2C_DSP_TRIPLE_STEP NN2C_DSP_TRIPLE_STEP
        "ldr    r12, [sp, #4]\n\t"
        "cmp    r6, r12\n\t"
        "bne    2b\n\t"
        NN2C_DSP_TRIPLE_DOUBLE("r0", "r1") NN2C_DSP_TRIPLE_DOUBLE("r2", "r3") NN2C_DSP_TRIPLE_DOUBLE("r4", "r5")
        "ldr    r12, [sp, #8]\n\t"
        "ldm    r12!, {r8-r10}\n\t"
        NN2C_DSP_TRIPLE_RQ("r0") NN2C_DSP_TRIPLE_RQ("r2") NN2C_DSP_TRIPLE_RQ("r4")
        "ldm    r12!, {r8-r10}\n\t"
        NN2C_DSP_TRIPLE_RQ("r1") NN2C_DSP_TRIPLE_RQ("r3") NN2C_DSP_TRIPLE_RQ("r5")
        "str    r12, [sp, #8]\n\t"
        "bfi    r0, r1, #8, #8\n\t"
        "bfi    r2, r3, #8, #8\n\t"
        "bfi    r4, r5, #8, #8\n\t"
        "ldr    lr, [sp, #12]\n\t"
        "ldrd   r6, r8, [sp, #16]\n\t"
        "strh   r2, [lr, r6]\n\t" /* (a repeated pixel's outputs: the same bytes at the same address) */
        "strh   r4, [lr, r8]\n\t"
        "strh   r0, [lr], #2\n\t"
        "str    lr, [sp, #12]\n\t"
        "ldr    r6, [sp, #24]\n\t"
        "cmp    lr, r6\n\t"
        "bne    1b\n\t"
        "add    sp, sp, #32\n\t"
        "pop    {r3-r11, pc}\n\t");
}
#undef NN2C_DSP_TRIPLE_PIXEL
#undef NN2C_DSP_TRIPLE_STEP
#undef NN2C_DSP_TRIPLE_DOUBLE
#undef NN2C_DSP_TRIPLE_RQ
#endif

/* Every channel pair of a pixel triple expanded at px (records, a dual filter: an even channel count), pixel p's
 * outputs at o0 / o1 / o2 (a repeated pixel's the same address: the same bytes written twice). */
static void nn2c_gemm_triple16(const nn2c_gemm_s8_t *m, const nn2c_simd_word_t *px, const int8_t *w, int8_t *o0,
                               int8_t *o1, int8_t *o2) {
    const nn2c_simd_word_t *wp = (const nn2c_simd_word_t *)(const void *)w;
    const nn2c_simd_word_t *const x_end = px + 6 * (m->depth_padded >> 2);
#if defined(NN2C_INLINE_ASM)
    const nn2c_gemm_triple_frame_t frame = {px, x_end, m->records, o0, (int32_t)(o1 - o0), (int32_t)(o2 - o0),
                                            o0 + (m->out_c & ~1), 0, wp, (m->depth_padded >> 3) & 1};
    if (m->out_c > 1) {
        nn2c_gemm_triple16_asm(&frame);
    }
#else /* -O0, or NN2C_NO_INLINE_ASM (nn2c_common.h): the same in C */
    const int32_t *rec = m->records;
    for (int8_t *const end = o0 + (m->out_c & ~1); o0 != end; o0 += 2, o1 += 2, o2 += 2) {
        int32_t a0 = rec[0], b0 = rec[1], a1 = rec[0], b1 = rec[1], a2 = rec[0], b2 = rec[1];
        rec += 2;
        for (const nn2c_simd_word_t *x = px; x != x_end; x += 6, wp += 2) {
            const int32_t w0 = wp[0], w1 = wp[1], w0e = __sxtb16(w0), w1e = __sxtb16(w1);
            a0 = __smlad(x[1], w1e, __smlad(x[0], w0e, a0));
            b0 = __smlad(x[1], w1, __smlad(x[0], w0, b0));
            a1 = __smlad(x[3], w1e, __smlad(x[2], w0e, a1));
            b1 = __smlad(x[3], w1, __smlad(x[2], w0, b1));
            a2 = __smlad(x[5], w1e, __smlad(x[4], w0e, a2));
            b2 = __smlad(x[5], w1, __smlad(x[4], w0, b2));
        }
        /* doubled for the doubled records: B's sum, 2^8 times B before, shifted by one less */
        b0 = (int32_t)((uint32_t)b0 - (uint32_t)a0) >> 7;
        b1 = (int32_t)((uint32_t)b1 - (uint32_t)a1) >> 7;
        b2 = (int32_t)((uint32_t)b2 - (uint32_t)a2) >> 7;
        o0[0] = (int8_t)nn2c_record_requant_doubled((int32_t)((uint32_t)a0 << 1), rec);
        o1[0] = (int8_t)nn2c_record_requant_doubled((int32_t)((uint32_t)a1 << 1), rec);
        o2[0] = (int8_t)nn2c_record_requant_doubled((int32_t)((uint32_t)a2 << 1), rec);
        o0[1] = (int8_t)nn2c_record_requant_doubled(b0, rec + 3);
        o1[1] = (int8_t)nn2c_record_requant_doubled(b1, rec + 3);
        o2[1] = (int8_t)nn2c_record_requant_doubled(b2, rec + 3);
        rec += 6;
    }
#endif
}

/* The n bytes of three pixels (at x0, x1, x2) expanded into a pixel triple's blocks from px (pixel p's even / odd
 * int16 pairs at px[6 k + 2 p], px[6 k + 2 p + 1]; a partial last word zero-filled). In assembly 14 instructions a
 * block for the three (a call of nn2c_dsp_expand_pitch per pixel: vww_96_int8 took 44,908 more instructions on the
 * Cortex-M4, QEMU). */
__attribute__((noinline)) static void nn2c_dsp_expand3(const int8_t *x0, const int8_t *x1, const int8_t *x2,
                                                       int32_t n, nn2c_simd_word_t *px) {
#if defined(NN2C_INLINE_ASM)
    if (n >= 4) {
        const int8_t *const end = x0 + (n & ~3);
        int32_t a, b, c, e;
        __asm__ volatile("1:\n\t"
                         "ldr    %[a], [%[x0]], #4\n\t"
                         "ldr    %[b], [%[x1]], #4\n\t"
                         "ldr    %[c], [%[x2]], #4\n\t"
                         "sxtb16 %[e], %[a]\n\t"
                         "sxtb16 %[a], %[a], ror #8\n\t"
                         "strd   %[e], %[a], [%[px]], #8\n\t"
                         "sxtb16 %[e], %[b]\n\t"
                         "sxtb16 %[b], %[b], ror #8\n\t"
                         "strd   %[e], %[b], [%[px]], #8\n\t"
                         "sxtb16 %[e], %[c]\n\t"
                         "sxtb16 %[c], %[c], ror #8\n\t"
                         "strd   %[e], %[c], [%[px]], #8\n\t"
                         "cmp    %[x0], %[end]\n\t"
                         "bne    1b\n\t"
                         : [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [px] "+r"(px), [a] "=&r"(a), [b] "=&r"(b),
                           [c] "=&r"(c), [e] "=&r"(e)
                         : [end] "r"(end)
                         : "cc", "memory");
    }
    if (n & 3) {
        const int32_t a = nn2c_simd_ld_partial(x0, n & 3), b = nn2c_simd_ld_partial(x1, n & 3);
        const int32_t c = nn2c_simd_ld_partial(x2, n & 3);
        px[0] = __sxtb16(a);
        px[1] = nn2c_sxtb16_ror8(a);
        px[2] = __sxtb16(b);
        px[3] = nn2c_sxtb16_ror8(b);
        px[4] = __sxtb16(c);
        px[5] = nn2c_sxtb16_ror8(c);
    }
#else
    nn2c_dsp_expand_pitch(x0, n, px, 6);
    nn2c_dsp_expand_pitch(x1, n, px + 2, 6);
    nn2c_dsp_expand_pitch(x2, n, px + 4, 6);
#endif
}

/* A 1x1 convolution's pixels three at a time (nn2c_conv_s8_run's pointwise case with triples): each triple expanded
 * before any of its outputs is written (the in-place rule); a last one or two pixels with the last repeated. */
static void nn2c_conv_s8_triples(const nn2c_gemm_s8_t *m, int32_t pixels, const int8_t *input,
                                 const int8_t *packed_filter, int8_t *output, nn2c_simd_word_t *px) {
    const int32_t depth = m->depth, out_c = m->out_c;
    const nn2c_simd_word_t *const last_w =
        (const nn2c_simd_word_t *)(const void *)(packed_filter + (out_c - 1) * m->depth_padded);
    (void)last_w; /* (nn2c_config.h: no odd channel count) */
    for (int32_t q = 0; q < pixels; q += 3) {
        const int32_t last = NN2C_MIN(pixels - q, 3) - 1, mid = NN2C_MIN(last, 1);
        const int8_t *const x = input + q * depth;
        int8_t *const y = output + q * out_c;
        nn2c_dsp_expand3(x, x + mid * depth, x + last * depth, depth, px);
        nn2c_gemm_triple16(m, px, packed_filter, y, y + mid * out_c, y + last * out_c);
#if !defined(NN2C_OMIT_DSP_GEMM_ODD)
        if (out_c & 1) { /* (a pruned layer's last channel: its pair padded, B zero) */
            int8_t *const out[3] = {y + out_c - 1, y + (mid + 1) * out_c - 1, y + (last + 1) * out_c - 1};
            nn2c_dsp_last_channel(px, 3, m->depth_padded >> 2, last_w, 1, m->records + 4 * (out_c - 1), out);
        }
#endif
    }
}
#endif

#if !defined(NN2C_OMIT_DSP_GEMM_PAIRS)
static int32_t nn2c_gemm_pair16_right(const nn2c_gemm_s8_t *m, const nn2c_simd_word_t *pair,
                                      const nn2c_simd_word_t **w, int8_t *o0, int8_t *o1) {
    const int32_t blocks = m->depth_padded >> 2; /* >= 1 */
    const nn2c_simd_word_t *wp = *w;
    const nn2c_simd_word_t *const x_end = pair + 4 * blocks;
    if (m->records) { /* (whole pairs: an odd count's last channel is nn2c_conv_s8_run's) */
#if !defined(NN2C_OMIT_DSP_GEMM_DUAL) /* nn2c_config.h: some convolution's filter is dual */
        if (m->dual) { /* (whole pairs: an odd count's last channel is nn2c_conv_s8_run's) */
            nn2c_dsp_pair_records(pair, x_end, blocks, &wp, m->records, o0, o1, m->out_c & ~1, 1);
            *w = wp;
            return m->out_c;
        }
#endif
#if !defined(NN2C_OMIT_DSP_GEMM_PLAIN) /* nn2c_config.h: some convolution's filter with records is not dual */
        nn2c_dsp_pair_records(pair, x_end, blocks, &wp, m->records, o0, o1, m->out_c & ~1, 0);
#endif
        (void)x_end; /* (read by neither where nn2c_config.h leaves both out) */
        (void)o0;
        (void)o1;
        *w = wp;
        return m->out_c;
    }
#if defined(NN2C_OMIT_DSP_GEMM_ARRAYS) /* nn2c_config.h: every convolution of this model has records */
    (void)o1;
    return 0;
#else
    const int32_t *bias = m->bias, *mp = m->multipliers, *sp_ = m->shifts;
    const int64_t *rp = m->rounding;
    const int32_t off = m->output_offset, end = m->out_c & ~1;
    /* (one index rather than a pointer per array: GCC spills either way, an index costs one store) */
    for (int32_t c = 0; c != end; c += 2) {
        int32_t s[4] = {bias[c], bias[c + 1], bias[c], bias[c + 1]};
        nn2c_dsp_pair_dot(pair, x_end, blocks, &wp, s, 0);
        int32_t y0, y1;
        nn2c_dsp_requant2x2_right(s[0], s[1], s[2], s[3], mp + c, sp_ + c, rp + 2 * c, off, &y0, &y1);
        const uint16_t h0 = (uint16_t)y0, h1 = (uint16_t)y1;
        memcpy(o0 + c, &h0, 2); /* one STRH each (unaligned halfwords are allowed) */
        memcpy(o1 + c, &h1, 2);
    }
    *w = wp;
    return m->out_c & ~1;
#endif
}

static void nn2c_gemm_pair16(const nn2c_gemm_s8_t *m, const nn2c_simd_word_t *pair, const int8_t *w, int8_t *o0,
                             int8_t *o1, int right) {
    const nn2c_simd_word_t *wp = (const nn2c_simd_word_t *)(const void *)w;
#if defined(NN2C_OMIT_DSP_GEMM_ARRAYS) /* nn2c_config.h: every convolution of this model has records */
    (void)right;
    nn2c_gemm_pair16_right(m, pair, &wp, o0, o1);
#else
    const int32_t blocks = m->depth_padded >> 2; /* >= 1 */
    const int32_t out_c = m->out_c;
    const nn2c_simd_out_t o = NN2C_GEMM_OUT(m);
    const nn2c_simd_word_t *const x_end = pair + 4 * blocks;
    const int narrow = o.lo > -128 || o.hi < 127;
    int32_t first = 0;
    if (right && !narrow) {
        first = nn2c_gemm_pair16_right(m, pair, &wp, o0, o1);
    }
    for (int32_t c = first; c < out_c; c += 2) {
        int32_t s[4] = {m->bias[c], m->bias[c + 1], m->bias[c], m->bias[c + 1]};
        nn2c_dsp_pair_dot(pair, x_end, blocks, &wp, s, 0);
        /* all four requantised before any store: int8 stores may alias the per-channel arrays,
         * so GCC would reload them after each */
        int32_t y00, y10, y01, y11;
        nn2c_dsp_requant2(&o, c, s[0], s[2], &y00, &y10);
        nn2c_dsp_requant2(&o, c + 1, s[1], s[3], &y01, &y11);
        if (narrow) { /* an activation range inside int8 (most layers: SSAT was the whole clamp) */
            y00 = nn2c_dsp_clamp(y00, o.lo, o.hi);
            y10 = nn2c_dsp_clamp(y10, o.lo, o.hi);
            y01 = nn2c_dsp_clamp(y01, o.lo, o.hi);
            y11 = nn2c_dsp_clamp(y11, o.lo, o.hi);
        }
        o0[c] = (int8_t)y00;
        o1[c] = (int8_t)y10;
        if (c + 1 < out_c) {
            o0[c + 1] = (int8_t)y01;
            o1[c + 1] = (int8_t)y11;
        }
    }
#endif
}
#endif

#if defined(NN2C_SIMD_DSP) && !defined(NN2C_OMIT_DSP_GEMM_PAIRS)
/* One expanded pixel (slots 0 and 1 of each 4-word block) x two channels per block: the odd last
 * pixel of a call. 10 instructions per 8 MACs against the pair kernel's 16 per 16, but half the work
 * of pairing the pixel with itself (row groups call the kernel once per row: odd rows are common). */
static void nn2c_gemm_one16(const nn2c_gemm_s8_t *m, const nn2c_simd_word_t *pair, const int8_t *w, int8_t *o0) {
    const int32_t blocks = m->depth_padded >> 2; /* >= 1 */
    const nn2c_simd_word_t *wp = (const nn2c_simd_word_t *)(const void *)w;
#if !defined(NN2C_OMIT_DSP_GEMM_ARRAYS) /* nn2c_config.h: some convolution reads the output stage from arrays */
    const nn2c_simd_out_t o = NN2C_GEMM_OUT(m);
    const int narrow = o.lo > -128 || o.hi < 127;
#endif
    const int32_t *record = m->records; /* (when not NULL: an even channel count, int8's range) */
    const int dual = m->dual; /* (records too) */
    for (int32_t c = 0; c < m->out_c; c += 2) {
        int32_t s0 = record ? record[0] : m->bias[c], s1 = record ? record[1] : m->bias[c + 1];
        if (dual) { /* s1: A + 256 B (nn2c_dsp_pair_dot; the record's A's bias + 256 B's) */
            for (int32_t k = 0; k < 4 * blocks; k += 4, wp += 2) {
                const int32_t xe = pair[k], xo = pair[k + 1], w0 = wp[0], w1 = wp[1];
                s0 = __smlad(xo, __sxtb16(w1), __smlad(xe, __sxtb16(w0), s0));
                s1 = __smlad(xo, w1, __smlad(xe, w0, s1));
            }
            s1 = (int32_t)((uint32_t)s1 - (uint32_t)s0) >> 8;
        }
        for (int32_t k = 0; !dual && k < 4 * blocks; k += 4, wp += 2) {
            const int32_t xe = pair[k], xo = pair[k + 1], w0 = wp[0], w1 = wp[1];
            s0 = __smlad(xo, nn2c_sxtb16_ror8(w0), __smlad(xe, __sxtb16(w0), s0));
            s1 = __smlad(xo, nn2c_sxtb16_ror8(w1), __smlad(xe, __sxtb16(w1), s1));
        }
        if (record) {
            o0[c] = (int8_t)nn2c_record_requant_doubled(2 * s0, record + 2);
            if (c + 1 < m->out_c) { /* (records padded to whole channel pairs) */
                o0[c + 1] = (int8_t)nn2c_record_requant_doubled(2 * s1, record + 5);
            }
            record += 8;
            continue;
        }
#if !defined(NN2C_OMIT_DSP_GEMM_ARRAYS)
        int32_t y0 = nn2c_dsp_requant1(&o, c, s0), y1 = nn2c_dsp_requant1(&o, c + 1, s1);
        if (narrow) {
            y0 = nn2c_dsp_clamp(y0, o.lo, o.hi);
            y1 = nn2c_dsp_clamp(y1, o.lo, o.hi);
        }
        o0[c] = (int8_t)y0;
        if (c + 1 < m->out_c) {
            o0[c + 1] = (int8_t)y1;
        }
#endif
    }
}
#endif
#endif

#if defined(NN2C_SIMD_MVE)
/* The output stage of 4 channels of two rows (r0, r1: their sums, bias not yet added): nn2c_mve_requant's
 * arithmetic with the per-channel constants loaded once for both rows; right (a constant of the caller's
 * instance): no shift is positive, no left shift. */
NN2C_INLINE void nn2c_mve_requant_rows(int32x4_t *r0, int32x4_t *r1, int32x4_t bias, int32x4_t mult, int32x4_t shift,
                                       int32x4_t offset, int32x4_t lo, int32x4_t hi, int right) {
    int32x4_t a = vaddq_s32(*r0, bias), b = vaddq_s32(*r1, bias);
    if (!right) {
        const int32x4_t left = vmaxq_s32(shift, vdupq_n_s32(0));
        a = vshlq_s32(a, left);
        b = vshlq_s32(b, left);
    }
    const int32x4_t down = right ? shift : vminq_s32(shift, vdupq_n_s32(0));
    a = vqrdmulhq_s32(a, mult);
    b = vqrdmulhq_s32(b, mult);
    a = vrshlq_s32(vqaddq_s32(a, vshrq_n_s32(vandq_s32(a, down), 31)), down);
    b = vrshlq_s32(vqaddq_s32(b, vshrq_n_s32(vandq_s32(b, down), 31)), down);
    *r0 = vminq_s32(vmaxq_s32(vaddq_s32(a, offset), lo), hi);
    *r1 = vminq_s32(vmaxq_s32(vaddq_s32(b, offset), lo), hi);
}

/* One input block (v0, v1: the two rows) against the next 4 filter vectors at w: the 8 sums of 4 channels x
 * 2 rows by OP (VMLADAV sets them, VMLADAVA adds to them); operands named as in nn2c_gemm_rows2_mve. */
#define NN2C_MVE_DOT4(OP) \
    "vldrb.8 %q[b], [%[w]], #16\n\t" OP " %[s00], %q[v0], %q[b]\n\t" OP " %[s10], %q[v1], %q[b]\n\t" \
    "vldrb.8 %q[b], [%[w]], #16\n\t" OP " %[s01], %q[v0], %q[b]\n\t" OP " %[s11], %q[v1], %q[b]\n\t" \
    "vldrb.8 %q[b], [%[w]], #16\n\t" OP " %[s02], %q[v0], %q[b]\n\t" OP " %[s12], %q[v1], %q[b]\n\t" \
    "vldrb.8 %q[b], [%[w]], #16\n\t" OP " %[s03], %q[v0], %q[b]\n\t" OP " %[s13], %q[v1], %q[b]\n\t"
#endif

#if defined(NN2C_SIMD_MVE) && defined(NN2C_INLINE_ASM)
/* What nn2c_gemm_rows2_groups walks, in memory (32-bit fields: the assembly reads them at fixed offsets) */
typedef struct {
    const int8_t *a0, *a1; /* 0, 4: the two rows */
    int32_t blocks;        /* 8: whole blocks of 16 */
    int32_t groups;        /* 12: groups of 4 channels left */
    int8_t *o0, *o1;       /* 16, 20: where the next group's outputs go */
    int32_t mp_at, sp_at;  /* 24, 28: the multipliers' and shifts' byte offsets from the bias */
    int32_t tail;          /* 32: depth % 16 */
} nn2c_mve_rows2_walk_t;

/* The whole groups of 4 channels of two rows for a layer without left shifts (nn2c_gemm_s8_t.right), in
 * one assembly loop: the sums start at the bias (two LDM into the eight even registers VMLADAVA needs),
 * the blocks of 16 (a last, partial one with predicated, zeroing input loads: P0 = VCTP.8 of the tail,
 * set once), then the output stage and the stores, the loop's state in *walk and the limits in vectors.
 * GCC 12 spent some 75 instructions per group around the C version's sums (pointers and limits reloaded
 * from the stack, the bias and per-channel pointers recomputed), 37 here. */
#define NN2C_MVE_ROWS2_BLOCKS \
    "1:\n\t" \
    "ldm          %[bias], {%[s00], %[s01], %[s02], %[s03]}\n\t" \
    "ldm          %[bias]!, {%[s10], %[s11], %[s12], %[s13]}\n\t" \
    "ldrd         %[x0], %[x1], [%[st]]\n\t" \
    "ldr          %[n], [%[st], #8]\n" \
    "2:\n\t" \
    "vldrb.8      %q[v0], [%[x0]], #16\n\t" \
    "vldrb.8      %q[v1], [%[x1]], #16\n\t" \
    NN2C_MVE_DOT4("vmladava.s8") \
    "subs         %[n], %[n], #1\n\t" \
    "bne          2b\n\t"
#define NN2C_MVE_ROWS2_TAIL \
    "vpstt\n\t" \
    "vldrbt.8     %q[v0], [%[x0]]\n\t" \
    "vldrbt.8     %q[v1], [%[x1]]\n\t" \
    NN2C_MVE_DOT4("vmladava.s8")
#define NN2C_MVE_ROWS2_OUT(FIX) \
    "vmov         %q[v0][2], %q[v0][0], %[s00], %[s02]\n\t" \
    "vmov         %q[v0][3], %q[v0][1], %[s01], %[s03]\n\t" \
    "vmov         %q[v1][2], %q[v1][0], %[s10], %[s12]\n\t" \
    "vmov         %q[v1][3], %q[v1][1], %[s11], %[s13]\n\t" \
    "ldrd         %[s00], %[s01], [%[st], #24]\n\t" \
    "add          %[s00], %[s00], %[bias]\n\t" \
    "add          %[s01], %[s01], %[bias]\n\t" \
    "vldrw.u32    %q[b], [%[s00], #-16]\n\t" \
    "vldrw.u32    %q[s], [%[s01], #-16]\n\t" \
    "vqrdmulh.s32 %q[v0], %q[v0], %q[b]\n\t" \
    "vqrdmulh.s32 %q[v1], %q[v1], %q[b]\n\t" \
    FIX("v0") \
    "vqadd.s32    %q[v0], %q[v0], %q[t]\n\t" \
    FIX("v1") \
    "vqadd.s32    %q[v1], %q[v1], %q[t]\n\t" \
    "vrshl.s32    %q[v0], %q[v0], %q[s]\n\t" \
    "vrshl.s32    %q[v1], %q[v1], %q[s]\n\t" \
    "vadd.i32     %q[v0], %q[v0], %q[off]\n\t" \
    "vadd.i32     %q[v1], %q[v1], %q[off]\n\t" \
    "vmax.s32     %q[v0], %q[v0], %q[lo]\n\t" \
    "vmax.s32     %q[v1], %q[v1], %q[lo]\n\t" \
    "vmin.s32     %q[v0], %q[v0], %q[hi]\n\t" \
    "vmin.s32     %q[v1], %q[v1], %q[hi]\n\t" \
    "ldrd         %[s00], %[s01], [%[st], #16]\n\t" \
    "vstrb.32     %q[v0], [%[s00]], #4\n\t" \
    "vstrb.32     %q[v1], [%[s01]], #4\n\t" \
    "strd         %[s00], %[s01], [%[st], #16]\n\t" \
    "ldr          %[s00], [%[st], #12]\n\t" \
    "subs         %[s00], %[s00], #1\n\t" \
    "str          %[s00], [%[st], #12]\n\t" \
    "bne          1b\n\t"
/* t = -1 in the lanes of V below 0 whose shift is a right shift (VRSHL rounds half up, TFLite away from zero);
 * when every shift is negative (nn2c_gemm_s8_t.right 2) the sign of V alone */
#define NN2C_MVE_ROWS2_FIX_ANY(V) "vand %q[t], %q[" V "], %q[s]\n\t" "vshr.s32 %q[t], %q[t], #31\n\t"
#define NN2C_MVE_ROWS2_FIX_NEG(V) "vshr.s32 %q[t], %q[" V "], #31\n\t"
#define NN2C_MVE_ROWS2_OPERANDS \
    [s00] "=&r"(s00), [s01] "=&r"(s01), [s02] "=&r"(s02), [s03] "=&r"(s03), [s10] "=&r"(s10), \
    [s11] "=&r"(s11), [s12] "=&r"(s12), [s13] "=&r"(s13), [x0] "=&r"(x0), [x1] "=&r"(x1), [n] "=&r"(n), \
    [w] "+r"(w), [bias] "+r"(bias), [v0] "=&w"(v0), [v1] "=&w"(v1), [b] "=&w"(b), [s] "=&w"(sh), [t] "=&w"(t)
__attribute__((noinline)) static void nn2c_gemm_rows2_groups(const nn2c_gemm_s8_t *m, nn2c_mve_rows2_walk_t *walk,
                                                             const int8_t *w) {
    register int32_t s00 __asm__("r0"), s01 __asm__("r2"), s02 __asm__("r4"), s03 __asm__("r6");
    register int32_t s10 __asm__("r8"), s11 __asm__("r10"), s12 __asm__("r12"), s13 __asm__("lr");
    const int8_t *x0, *x1;
    const int32_t *bias = m->bias;
    int32_t n;
    int8x16_t v0, v1, b, sh, t;
    const int32x4_t off = vdupq_n_s32(m->output_offset), lo = vdupq_n_s32(m->act_min), hi = vdupq_n_s32(m->act_max);
#define NN2C_MVE_ROWS2_TAILED(FIX) \
    __asm__ volatile("ldr          %[n], [%[st], #32]\n\t" \
                     "vctp.8       %[n]\n\t" \
                     NN2C_MVE_ROWS2_BLOCKS NN2C_MVE_ROWS2_TAIL NN2C_MVE_ROWS2_OUT(FIX) \
                     : NN2C_MVE_ROWS2_OPERANDS \
                     : [st] "r"(walk), [off] "w"(off), [lo] "w"(lo), [hi] "w"(hi) \
                     : "cc", "memory")
#define NN2C_MVE_ROWS2_WHOLE(FIX) \
    __asm__ volatile(NN2C_MVE_ROWS2_BLOCKS NN2C_MVE_ROWS2_OUT(FIX) \
                     : NN2C_MVE_ROWS2_OPERANDS \
                     : [st] "r"(walk), [off] "w"(off), [lo] "w"(lo), [hi] "w"(hi) \
                     : "cc", "memory")
    if (m->right == 2) {
        if (walk->tail) {
            NN2C_MVE_ROWS2_TAILED(NN2C_MVE_ROWS2_FIX_NEG);
        } else {
            NN2C_MVE_ROWS2_WHOLE(NN2C_MVE_ROWS2_FIX_NEG);
        }
    } else if (walk->tail) {
        NN2C_MVE_ROWS2_TAILED(NN2C_MVE_ROWS2_FIX_ANY);
    } else {
        NN2C_MVE_ROWS2_WHOLE(NN2C_MVE_ROWS2_FIX_ANY);
    }
#undef NN2C_MVE_ROWS2_WHOLE
#undef NN2C_MVE_ROWS2_TAILED
}
#undef NN2C_MVE_ROWS2_OPERANDS
#undef NN2C_MVE_ROWS2_FIX_NEG
#undef NN2C_MVE_ROWS2_FIX_ANY
#undef NN2C_MVE_ROWS2_OUT
#undef NN2C_MVE_ROWS2_TAIL
#undef NN2C_MVE_ROWS2_BLOCKS
#endif

#if defined(NN2C_SIMD_MVE)
/* Four int32 lanes from four general registers: two VMOV (two lanes each). */
NN2C_INLINE int32x4_t nn2c_mve_from4(int32_t a, int32_t b, int32_t c, int32_t d) {
    int32x4_t v;
    __asm__("vmov %q[v][2], %q[v][0], %[a], %[c]\n\t"
            "vmov %q[v][3], %q[v][1], %[b], %[d]"
            : [v] "=w"(v)
            : [a] "r"(a), [b] "r"(b), [c] "r"(c), [d] "r"(d));
    return v;
}


/* G = 4, KB = 16. Two rows x four channels per step: 6 vector loads, 8 VMLADAVA (128 MACs);
 * the last partial block of a row is a predicated (zeroing) load, the filter is zero-padded.
 * The full blocks run in assembly: VMLADAVA accumulates into even registers only, and GCC 12
 * spends 5 register moves per step to satisfy that (21 instructions per step measured, 16 here
 * with the eight sums pinned to the eight even registers). right: no shift is positive (nn2c_gemm_s8_t.right),
 * the requantisation without its left shift. */
NN2C_INLINE void nn2c_gemm_rows2_mve(const nn2c_gemm_s8_t *m, const int8_t *a0, const int8_t *a1, const int8_t *w,
                                     int8_t *o0, int8_t *o1, int right) {
    const int32_t blocks = m->depth >> 4, tail = m->depth & 15;
    const int32_t out_c = m->out_c;
    const int32x4_t offset = vdupq_n_s32(m->output_offset);
    const int32x4_t lo = vdupq_n_s32(m->act_min), hi = vdupq_n_s32(m->act_max);
    const mve_pred16_t tail_pred = vctp8q((uint32_t)tail);
    int32_t c = 0;
#if defined(NN2C_INLINE_ASM)
    if (right && out_c >= 4) { /* the whole groups in assembly (nn2c_gemm_rows2_groups) */
        nn2c_mve_rows2_walk_t walk = {a0, a1, blocks, out_c >> 2, o0, o1,
                                      (int32_t)((const char *)m->multipliers - (const char *)m->bias),
                                      (int32_t)((const char *)m->shifts - (const char *)m->bias), tail};
        nn2c_gemm_rows2_groups(m, &walk, w);
        c = out_c & ~3;
        w += c * m->depth_padded;
    }
#endif
    for (; c < out_c; c += 4) {
#if defined(NN2C_INLINE_ASM)
        register int32_t s00 __asm__("r0"), s01 __asm__("r2"), s02 __asm__("r4"), s03 __asm__("r6");
        register int32_t s10 __asm__("r8"), s11 __asm__("r10"), s12 __asm__("r12"), s13 __asm__("lr");
        const int8_t *x0 = a0, *x1 = a1;
        if (blocks > 0) {
            /* the first block with VMLADAV (sets the sums: no zeroing), the others with VMLADAVA */
            int32_t n = blocks;
            int8x16_t v0, v1, b;
            __asm__ volatile(
                "vldrb.8 %q[v0], [%[x0]], #16\n\t"
                "vldrb.8 %q[v1], [%[x1]], #16\n\t"
                NN2C_MVE_DOT4("vmladav.s8")
                "subs    %[n], %[n], #1\n\t"
                "beq     2f\n"
                "1:\n\t"
                "vldrb.8 %q[v0], [%[x0]], #16\n\t"
                "vldrb.8 %q[v1], [%[x1]], #16\n\t"
                NN2C_MVE_DOT4("vmladava.s8")
                "subs    %[n], %[n], #1\n\t"
                "bne     1b\n"
                "2:\n\t"
                : [s00] "=&r"(s00), [s01] "=&r"(s01), [s02] "=&r"(s02), [s03] "=&r"(s03), [s10] "=&r"(s10),
                  [s11] "=&r"(s11), [s12] "=&r"(s12), [s13] "=&r"(s13), [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(w),
                  [n] "+r"(n), [v0] "=&w"(v0), [v1] "=&w"(v1), [b] "=&w"(b)
                :
                : "cc", "memory");
        } else {
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = 0;
        }
#else /* without optimisation (-O0) GCC keeps too few registers free for the assembly */
        int32_t s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
        const int8_t *x0 = a0, *x1 = a1;
        for (int32_t k = 0; k < blocks; ++k, x0 += 16, x1 += 16, w += 64) {
            const int8x16_t v0 = vldrbq_s8(x0), v1 = vldrbq_s8(x1);
            s00 = vmladavaq_s8(s00, v0, vldrbq_s8(w));
            s10 = vmladavaq_s8(s10, v1, vldrbq_s8(w));
            s01 = vmladavaq_s8(s01, v0, vldrbq_s8(w + 16));
            s11 = vmladavaq_s8(s11, v1, vldrbq_s8(w + 16));
            s02 = vmladavaq_s8(s02, v0, vldrbq_s8(w + 32));
            s12 = vmladavaq_s8(s12, v1, vldrbq_s8(w + 32));
            s03 = vmladavaq_s8(s03, v0, vldrbq_s8(w + 48));
            s13 = vmladavaq_s8(s13, v1, vldrbq_s8(w + 48));
        }
#endif
        if (tail) {
            const int8x16_t v0 = vldrbq_z_s8(x0, tail_pred), v1 = vldrbq_z_s8(x1, tail_pred);
            int8x16_t b = vldrbq_s8(w);
            s00 = vmladavaq_s8(s00, v0, b);
            s10 = vmladavaq_s8(s10, v1, b);
            b = vldrbq_s8(w + 16);
            s01 = vmladavaq_s8(s01, v0, b);
            s11 = vmladavaq_s8(s11, v1, b);
            b = vldrbq_s8(w + 32);
            s02 = vmladavaq_s8(s02, v0, b);
            s12 = vmladavaq_s8(s12, v1, b);
            b = vldrbq_s8(w + 48);
            s03 = vmladavaq_s8(s03, v0, b);
            s13 = vmladavaq_s8(s13, v1, b);
            w += 64;
        }
        int32x4_t r0 = nn2c_mve_from4(s00, s01, s02, s03), r1 = nn2c_mve_from4(s10, s11, s12, s13);
        nn2c_mve_requant_rows(&r0, &r1, vldrwq_s32(m->bias + c), vldrwq_s32(m->multipliers + c),
                              vldrwq_s32(m->shifts + c), offset, lo, hi, right);
        if (out_c - c >= 4) {
            vstrbq_s32(o0 + c, r0);
            vstrbq_s32(o1 + c, r1);
        } else {
            const mve_pred16_t pred = vctp32q((uint32_t)(out_c - c));
            vstrbq_p_s32(o0 + c, r0, pred);
            vstrbq_p_s32(o1 + c, r1, pred);
        }
    }
}

/* both instances in the one function its callers call (two called functions cost kws's pointwise layers
 * about 2,000 instructions more each, 125,347 against 123,361, in saved registers; measured in QEMU) */
/* Channels whose sums wait on the stack in nn2c_gemm_rows2_short (2 x 64 int32). */
#define NN2C_MVE_SHORT_CHUNK 64

/* nn2c_gemm_rows2_mve for a depth below 16 (one predicated block: the input vectors the same for every
 * channel), in two passes over up to NN2C_MVE_SHORT_CHUNK channels: the sums (4 filter vectors, 8
 * VMLADAV and 2 STM per 4 channels in assembly, the sums pinned to even registers), then the output
 * stage of 4 channels x 2 rows a step from them. tinyengine/vww's layers of depth 8 and 14 took 962,640
 * instructions in the one pass of nn2c_gemm_rows2_mve (about 80 per 4 channels x 2 rows: the output
 * stage's pointers and limits reloaded from the stack around the sums' registers, the inputs reloaded
 * per group), 794,400 here (QEMU). Not inlined: its own registers and stack (512 B of sums), not the
 * deep layers' function's. */
/* A layer's output stage in locals (int8 stores could alias the parameter struct). */
typedef struct {
    const int32_t *bias, *multipliers, *shifts;
    int32x4_t offset, lo, hi;
    int32_t right; /* nn2c_gemm_s8_t.right */
} nn2c_mve_stage_t;

/* The output stage of channels [c, end) of two rows from their sums (row 0's at sums, row 1's
 * NN2C_MVE_SHORT_CHUNK further): nn2c_mve_requant's arithmetic, its per-channel constants shared by
 * both rows; right (a constant of the caller's instance): no shift is positive. */
NN2C_INLINE void nn2c_mve_rows2_out(const int32_t *sums, int32_t c, int32_t end, const nn2c_mve_stage_t *stage,
                                    int8_t *o0, int8_t *o1, int right) {
    const int32_t *bias = stage->bias + c, *mp = stage->multipliers + c, *sp = stage->shifts + c;
    const int32x4_t offset = stage->offset, lo = stage->lo, hi = stage->hi;
    const int32_t *s = sums;
    o0 += c;
    o1 += c;
#if defined(NN2C_INLINE_ASM)
    int32_t k = (end - c) >> 2;
    if (right && k > 0) {
        /* the whole groups in assembly: pointers walked by the loads and stores, the offset a scalar
         * (27 instructions per 4 channels x 2 rows; GCC 12's loop around the same arithmetic took 38) */
        const int32_t *s1 = s + NN2C_MVE_SHORT_CHUNK;
        const int32_t off = vgetq_lane_s32(offset, 0);
        int32x4_t a, b, m, sh, t;
        c += 4 * k;
#define NN2C_MVE_ROWS2_OUT_ASM(FIX) \
    __asm__ volatile("1:\n\t" \
                     "vldrw.u32    %q[a], [%[s0]], #16\n\t" \
                     "vldrw.u32    %q[b], [%[s1]], #16\n\t" \
                     "vldrw.u32    %q[m], [%[bias]], #16\n\t" \
                     "vadd.i32     %q[a], %q[a], %q[m]\n\t" \
                     "vadd.i32     %q[b], %q[b], %q[m]\n\t" \
                     "vldrw.u32    %q[m], [%[mp]], #16\n\t" \
                     "vldrw.u32    %q[sh], [%[sp]], #16\n\t" \
                     "vqrdmulh.s32 %q[a], %q[a], %q[m]\n\t" \
                     "vqrdmulh.s32 %q[b], %q[b], %q[m]\n\t" \
                     FIX("a") \
                     "vqadd.s32    %q[a], %q[a], %q[t]\n\t" \
                     FIX("b") \
                     "vqadd.s32    %q[b], %q[b], %q[t]\n\t" \
                     "vrshl.s32    %q[a], %q[a], %q[sh]\n\t" \
                     "vrshl.s32    %q[b], %q[b], %q[sh]\n\t" \
                     "vadd.i32     %q[a], %q[a], %[off]\n\t" \
                     "vadd.i32     %q[b], %q[b], %[off]\n\t" \
                     "vmax.s32     %q[a], %q[a], %q[lo]\n\t" \
                     "vmax.s32     %q[b], %q[b], %q[lo]\n\t" \
                     "vmin.s32     %q[a], %q[a], %q[hi]\n\t" \
                     "vmin.s32     %q[b], %q[b], %q[hi]\n\t" \
                     "vstrb.32     %q[a], [%[o0]], #4\n\t" \
                     "vstrb.32     %q[b], [%[o1]], #4\n\t" \
                     "subs         %[k], %[k], #1\n\t" \
                     "bne          1b\n\t" \
                     : [s0] "+r"(s), [s1] "+r"(s1), [bias] "+r"(bias), [mp] "+r"(mp), [sp] "+r"(sp), \
                       [o0] "+l"(o0), [o1] "+l"(o1), [k] "+r"(k), [a] "=&w"(a), [b] "=&w"(b), [m] "=&w"(m), \
                       [sh] "=&w"(sh), [t] "=&w"(t) \
                     : [off] "r"(off), [lo] "w"(lo), [hi] "w"(hi) \
                     : "cc", "memory")
/* t = -1 in the lanes of V below 0 whose shift is a right shift (VRSHL rounds half up, TFLite away from zero);
 * every shift negative (right 2): the sign of V alone */
#define NN2C_MVE_OUT_FIX_ANY(V) "vand %q[t], %q[" V "], %q[sh]\n\t" "vshr.s32 %q[t], %q[t], #31\n\t"
#define NN2C_MVE_OUT_FIX_NEG(V) "vshr.s32 %q[t], %q[" V "], #31\n\t"
        if (stage->right == 2) {
            NN2C_MVE_ROWS2_OUT_ASM(NN2C_MVE_OUT_FIX_NEG);
        } else {
            NN2C_MVE_ROWS2_OUT_ASM(NN2C_MVE_OUT_FIX_ANY);
        }
#undef NN2C_MVE_OUT_FIX_NEG
#undef NN2C_MVE_OUT_FIX_ANY
#undef NN2C_MVE_ROWS2_OUT_ASM
    }
#endif
    for (; c < end; c += 4, s += 4, bias += 4, mp += 4, sp += 4, o0 += 4, o1 += 4) {
        int32x4_t r0 = vldrwq_s32(s), r1 = vldrwq_s32(s + NN2C_MVE_SHORT_CHUNK);
        nn2c_mve_requant_rows(&r0, &r1, vldrwq_s32(bias), vldrwq_s32(mp), vldrwq_s32(sp), offset, lo, hi, right);
        if (end - c >= 4) {
            vstrbq_s32(o0, r0);
            vstrbq_s32(o1, r1);
        } else {
            const mve_pred16_t store = vctp32q((uint32_t)(end - c));
            vstrbq_p_s32(o0, r0, store);
            vstrbq_p_s32(o1, r1, store);
        }
    }
}

__attribute__((noinline)) static void nn2c_gemm_rows2_short(const nn2c_gemm_s8_t *m, const int8_t *a0,
                                                            const int8_t *a1, const int8_t *w, int8_t *o0,
                                                            int8_t *o1) {
    const mve_pred16_t live = vctp8q((uint32_t)m->depth);
    const int8x16_t v0 = vldrbq_z_s8(a0, live), v1 = vldrbq_z_s8(a1, live);
    const int32_t out_c = m->out_c, right = m->right;
    const nn2c_mve_stage_t stage = {m->bias, m->multipliers, m->shifts, vdupq_n_s32(m->output_offset),
                                    vdupq_n_s32(m->act_min), vdupq_n_s32(m->act_max), m->right};
    int32_t sums[2 * NN2C_MVE_SHORT_CHUNK] NN2C_ALIGNED(16); /* row 0's, then row 1's */
    for (int32_t start = 0; start < out_c; start += NN2C_MVE_SHORT_CHUNK) {
        const int32_t end = out_c - start < NN2C_MVE_SHORT_CHUNK ? out_c : start + NN2C_MVE_SHORT_CHUNK;
        int32_t groups = (end - start + 3) >> 2; /* >= 1 */
#if defined(NN2C_INLINE_ASM)
        register int32_t s00 __asm__("r0"), s01 __asm__("r2"), s02 __asm__("r4"), s03 __asm__("r6");
        register int32_t s10 __asm__("r8"), s11 __asm__("r10"), s12 __asm__("r12"), s13 __asm__("lr");
        int32_t *p0 = sums, *p1 = sums + NN2C_MVE_SHORT_CHUNK;
        int8x16_t b;
        __asm__ volatile("1:\n\t"
                         NN2C_MVE_DOT4("vmladav.s8")
                         "stm        %[p0]!, {%[s00], %[s01], %[s02], %[s03]}\n\t"
                         "stm        %[p1]!, {%[s10], %[s11], %[s12], %[s13]}\n\t"
                         "subs       %[n], %[n], #1\n\t"
                         "bne        1b\n\t"
                         : [s00] "=&r"(s00), [s01] "=&r"(s01), [s02] "=&r"(s02), [s03] "=&r"(s03),
                           [s10] "=&r"(s10), [s11] "=&r"(s11), [s12] "=&r"(s12), [s13] "=&r"(s13), [w] "+r"(w),
                           [p0] "+r"(p0), [p1] "+r"(p1), [n] "+r"(groups), [b] "=&w"(b)
                         : [v0] "w"(v0), [v1] "w"(v1)
                         : "cc", "memory");
#else
        for (int32_t k = 0; k < 4 * groups; ++k, w += 16) {
            const int8x16_t b = vldrbq_s8(w);
            sums[k] = vmladavq_s8(v0, b);
            sums[NN2C_MVE_SHORT_CHUNK + k] = vmladavq_s8(v1, b);
        }
#endif
        if (right) {
            nn2c_mve_rows2_out(sums, start, end, &stage, o0, o1, 1);
        } else {
            nn2c_mve_rows2_out(sums, start, end, &stage, o0, o1, 0);
        }
    }
}

static void nn2c_gemm_rows2(const nn2c_gemm_s8_t *m, const int8_t *a0, const int8_t *a1, const int8_t *w,
                            int8_t *o0, int8_t *o1) {
    if (m->right) {
        nn2c_gemm_rows2_mve(m, a0, a1, w, o0, o1, 1);
    } else {
        nn2c_gemm_rows2_mve(m, a0, a1, w, o0, o1, 0);
    }
}

static void nn2c_gemm_rows1(const nn2c_gemm_s8_t *m, const int8_t *a0, const int8_t *w, int8_t *o0) {
    const int32_t blocks = m->depth >> 4, tail = m->depth & 15;
    const int32_t group_bytes = 4 * m->depth_padded;
    for (int32_t c = 0; c < m->out_c; c += 4, w += group_bytes) {
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        const int8_t *x0 = a0, *wp = w;
        for (int32_t k = blocks; k > 0; --k) {
            const int8x16_t v0 = vldrbq_s8(x0);
            x0 += 16;
            s0 = vmladavaq_s8(s0, v0, vldrbq_s8(wp));
            s1 = vmladavaq_s8(s1, v0, vldrbq_s8(wp + 16));
            s2 = vmladavaq_s8(s2, v0, vldrbq_s8(wp + 32));
            s3 = vmladavaq_s8(s3, v0, vldrbq_s8(wp + 48));
            wp += 64;
        }
        if (tail) {
            const int8x16_t v0 = vldrbq_z_s8(x0, vctp8q((uint32_t)tail));
            s0 = vmladavaq_s8(s0, v0, vldrbq_s8(wp));
            s1 = vmladavaq_s8(s1, v0, vldrbq_s8(wp + 16));
            s2 = vmladavaq_s8(s2, v0, vldrbq_s8(wp + 32));
            s3 = vmladavaq_s8(s3, v0, vldrbq_s8(wp + 48));
        }
        int32x4_t r = vaddq_s32(nn2c_mve_lanes(s0, s1, s2, s3), vldrwq_s32(m->bias + c));
        r = nn2c_mve_requant(r, m->multipliers + c, m->shifts + c, m->output_offset, m->act_min, m->act_max);
        nn2c_mve_store4(o0 + c, r, m->out_c - c);
    }
}
#endif

#if !defined(NN2C_SIMD_MVE) && !defined(NN2C_SIMD_DSP)
static void nn2c_gemm_rows2(const nn2c_gemm_s8_t *m, const int8_t *a0, const int8_t *a1, const int8_t *w,
                            int8_t *o0, int8_t *o1) {
    nn2c_gemm_rows(m, a0, 1, 0, w, o0, 0);
    nn2c_gemm_rows(m, a1, 1, 0, w, o1, 0);
}

static void nn2c_gemm_rows1(const nn2c_gemm_s8_t *m, const int8_t *a0, const int8_t *w, int8_t *o0) {
    nn2c_gemm_rows(m, a0, 1, 0, w, o0, 0);
}
#endif

/* The two-row matrix product a layer calls (chosen once per call of its kernel: a test inside
 * nn2c_gemm_rows2 cost kws's pointwise layers on Cortex-M55 some 25 instructions a call in saved
 * registers). */
typedef void (*nn2c_gemm_rows2_fn)(const nn2c_gemm_s8_t *, const int8_t *, const int8_t *, const int8_t *, int8_t *,
                                   int8_t *);

NN2C_INLINE nn2c_gemm_rows2_fn nn2c_gemm_rows2_for(const nn2c_gemm_s8_t *m) {
#if defined(NN2C_SIMD_MVE)
    if (m->depth < 16) return nn2c_gemm_rows2_short;
#else
    (void)m;
#endif
    return nn2c_gemm_rows2;
}

/* --- FULLY_CONNECTED ----------------------------------------------------------------------------- */

void nn2c_fc_s8_simd(const nn2c_fc_simd_params_t *p, const int8_t *input, const int8_t *packed_filter,
                     int8_t *output) {
    const nn2c_gemm_s8_t *m = &p->m;
    int32_t b = 0;
#if !(defined(NN2C_SIMD_DSP) && defined(NN2C_OMIT_DSP_FC_BATCH_PAIRS)) /* nn2c_config.h: every batch is 1 */
    const nn2c_gemm_rows2_fn rows2 = nn2c_gemm_rows2_for(m);
    for (; b + 2 <= p->batches; b += 2) {
        rows2(m, input + b * m->depth, input + (b + 1) * m->depth, packed_filter, output + b * m->out_c,
                        output + (b + 1) * m->out_c);
    }
#endif
    if (b < p->batches) {
        nn2c_gemm_rows1(m, input + b * m->depth, packed_filter, output + b * m->out_c);
    }
}

/* --- CONV_2D ------------------------------------------------------------------------------------- */

#if !(defined(NN2C_SIMD_DSP) && defined(NN2C_OMIT_DSP_IM2COL)) /* nn2c_config.h: no Arm DSP convolution copies */
/* The im2col row of output pixel (oy, ox): filter_h x filter_w x in_c bytes, padding taps = pad. */
static void nn2c_simd_im2col(const nn2c_conv_geom_t *g, int32_t pad, const int8_t *in_b, int32_t oy, int32_t ox,
                             int8_t *row) {
    const int32_t C = g->in_c;
    const int32_t iy0 = oy * g->stride_h - g->pad_h, ix0 = ox * g->stride_w - g->pad_w;
    const int32_t row_bytes = g->filter_w * C;
    if (g->dilation_w == 1 && iy0 >= 0 && iy0 + (g->filter_h - 1) * g->dilation_h < g->in_h && ix0 >= 0 &&
        ix0 + g->filter_w <= g->in_w) { /* a window inside the image: one copy per filter row */
        const int8_t *src = in_b + (iy0 * g->in_w + ix0) * C;
        const int32_t src_step = g->dilation_h * g->in_w * C;
        for (int32_t fy = 0; fy < g->filter_h; ++fy, row += row_bytes, src += src_step) {
            nn2c_simd_copy(row, src, row_bytes);
        }
        return;
    }
    for (int32_t fy = 0; fy < g->filter_h; ++fy, row += row_bytes) {
        const int32_t iy = iy0 + fy * g->dilation_h;
        if (iy < 0 || iy >= g->in_h) {
            nn2c_simd_fill(row, pad, row_bytes);
            continue;
        }
        const int8_t *src = in_b + iy * g->in_w * C;
        if (g->dilation_w == 1) {
            int32_t fx0 = ix0 < 0 ? -ix0 : 0;
            int32_t fx1 = g->in_w - ix0 < g->filter_w ? g->in_w - ix0 : g->filter_w;
            if (fx1 < fx0) fx1 = fx0;
            nn2c_simd_fill(row, pad, fx0 * C);
            nn2c_simd_copy(row + fx0 * C, src + (ix0 + fx0) * C, (fx1 - fx0) * C);
            nn2c_simd_fill(row + fx1 * C, pad, (g->filter_w - fx1) * C);
        } else {
            for (int32_t fx = 0; fx < g->filter_w; ++fx) {
                const int32_t ix = ix0 + fx * g->dilation_w;
                if (ix < 0 || ix >= g->in_w) {
                    nn2c_simd_fill(row + fx * C, pad, C);
                } else {
                    nn2c_simd_copy(row + fx * C, src + ix * C, C);
                }
            }
        }
    }
}
#endif

/* --- row-streamed FULLY_CONNECTED sums ------------------------------------------------------------ */

#if defined(NN2C_SIMD_MVE)
/* Helium: one input vector, four VMLADAVA a step of 16 bytes (the last one predicated). */
void nn2c_fc_s8_sums_simd(const int8_t *x, const int8_t *filter, int32_t depth, int32_t outputs, int32_t start,
                          int32_t count, int32_t *acc) {
    int32_t o = 0;
    for (; o + 4 <= outputs; o += 4) {
        const int8_t *w = filter + o * depth + start;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int32_t d = 0; d < count; d += 16) {
            const mve_pred16_t live = vctp8q((uint32_t)(count - d));
            const int8x16_t vx = vldrbq_z_s8(x + d, live);
            s0 = vmladavaq_s8(s0, vldrbq_z_s8(w + d, live), vx);
            s1 = vmladavaq_s8(s1, vldrbq_z_s8(w + depth + d, live), vx);
            s2 = vmladavaq_s8(s2, vldrbq_z_s8(w + 2 * depth + d, live), vx);
            s3 = vmladavaq_s8(s3, vldrbq_z_s8(w + 3 * depth + d, live), vx);
        }
        acc[o] += s0;
        acc[o + 1] += s1;
        acc[o + 2] += s2;
        acc[o + 3] += s3;
    }
    for (; o < outputs; ++o) {
        const int8_t *w = filter + o * depth + start;
        int32_t sum = 0;
        for (int32_t d = 0; d < count; d += 16) {
            const mve_pred16_t live = vctp8q((uint32_t)(count - d));
            sum = vmladavaq_s8(sum, vldrbq_z_s8(w + d, live), vldrbq_z_s8(x + d, live));
        }
        acc[o] += sum;
    }
}
#elif defined(NN2C_SIMD_DSP)
/* Arm DSP: two filter rows at a time; per input word one LDR and two SXTB16, per row one LDR, two
 * SXTB16 and two SMLADs (15 instructions per 8 MACs: more rows at a time spill registers). */
void nn2c_fc_s8_sums_simd(const int8_t *x, const int8_t *filter, int32_t depth, int32_t outputs, int32_t start,
                          int32_t count, int32_t *acc) {
    const int8_t *const words_end = x + (count & ~3);
    for (int32_t o = 0; o < outputs; o += 2) {
        const int8_t *w0 = filter + o * depth + start;
        const int8_t *w1 = o + 1 < outputs ? w0 + depth : w0; /* an odd last row: summed twice, kept once */
        int32_t s0 = 0, s1 = 0;
        const int8_t *xp = x;
        for (; xp != words_end; xp += 4, w0 += 4, w1 += 4) {
            const int32_t xv = nn2c_simd_ld32(xp), xe = __sxtb16(xv), xo = nn2c_sxtb16_ror8(xv);
            int32_t v = nn2c_simd_ld32(w0);
            s0 = __smlad(xo, nn2c_sxtb16_ror8(v), __smlad(xe, __sxtb16(v), s0));
            v = nn2c_simd_ld32(w1);
            s1 = __smlad(xo, nn2c_sxtb16_ror8(v), __smlad(xe, __sxtb16(v), s1));
        }
        for (; xp != x + count; ++xp, ++w0, ++w1) {
            s0 += *w0 * *xp;
            s1 += *w1 * *xp;
        }
        acc[o] += s0;
        if (o + 1 < outputs) {
            acc[o + 1] += s1;
        }
    }
}
#else /* these kernels built for the host (tests): plain C */
void nn2c_fc_s8_sums_simd(const int8_t *x, const int8_t *filter, int32_t depth, int32_t outputs, int32_t start,
                          int32_t count, int32_t *acc) {
    for (int32_t o = 0; o < outputs; ++o) {
        const int8_t *w = filter + o * depth + start;
        int32_t sum = 0;
        for (int32_t d = 0; d < count; ++d) {
            sum += w[d] * x[d];
        }
        acc[o] += sum;
    }
}
#endif

/* --- row sums of a constant matrix (the recurrent operators' gates and features) ------------------ */

/* int32 sums wrap as TFLite Micro's do (the folded constants may sit anywhere in int32) */
NN2C_INLINE int32_t nn2c_sums_wrap(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

#if defined(NN2C_SIMD_DSP)
/* Two int8 vectors: per 4 values two LDRs, four SXTB16 and two SMLADs. */
NN2C_INLINE int32_t nn2c_simd_dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t sum) {
    int32_t d = 0;
    for (; d + 4 <= n; d += 4) {
        const int32_t va = nn2c_simd_ld32(a + d), vb = nn2c_simd_ld32(b + d);
        sum = __smlad(nn2c_sxtb16_ror8(va), nn2c_sxtb16_ror8(vb), __smlad(__sxtb16(va), __sxtb16(vb), sum));
    }
    for (; d < n; ++d) {
        sum = nn2c_sums_wrap(sum, a[d] * b[d]);
    }
    return sum;
}

/* Four rows at a time, the weights widened to int16 at compile time in SMLAD order (nn2c_simd.h):
 * per 4 inputs one LDR and two SXTB16, per row one LDRD and two SMLADs. In assembly: 17 instructions
 * per 16 MACs (GCC 12 loads the words one by one: 22). */
void nn2c_sums_s8(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                  const int32_t *init, int32_t *acc) {
    const int32_t words = depth >> 2, rem = depth & 3;
    const int16_t *w = (const int16_t *)weights + first * depth;
    for (int32_t r = 0; r < rows; r += 4, w += 4 * depth) {
        const nn2c_simd_word_t *wp = (const nn2c_simd_word_t *)w;
        const int32_t left = rows - r;
        int32_t s0 = init[r], s1 = left > 1 ? init[r + 1] : 0, s2 = left > 2 ? init[r + 2] : 0;
        int32_t s3 = left > 3 ? init[r + 3] : 0;
#if defined(NN2C_INLINE_ASM)
        if (words > 0) {
            const int8_t *xp = x;
            const int8_t *const x_end = x + 4 * words;
            int32_t xe, xo, a, b;
            __asm__ volatile(
                "1:\n\t"
                "ldr    %[xo], [%[xp]], #4\n\t"
                "ldrd   %[a], %[b], [%[wp]], #8\n\t"
                "sxtb16 %[xe], %[xo]\n\t"
                "sxtb16 %[xo], %[xo], ror #8\n\t"
                "smlad  %[s0], %[xe], %[a], %[s0]\n\t"
                "smlad  %[s0], %[xo], %[b], %[s0]\n\t"
                "ldrd   %[a], %[b], [%[wp]], #8\n\t"
                "smlad  %[s1], %[xe], %[a], %[s1]\n\t"
                "smlad  %[s1], %[xo], %[b], %[s1]\n\t"
                "ldrd   %[a], %[b], [%[wp]], #8\n\t"
                "smlad  %[s2], %[xe], %[a], %[s2]\n\t"
                "smlad  %[s2], %[xo], %[b], %[s2]\n\t"
                "ldrd   %[a], %[b], [%[wp]], #8\n\t"
                "smlad  %[s3], %[xe], %[a], %[s3]\n\t"
                "smlad  %[s3], %[xo], %[b], %[s3]\n\t"
                "cmp    %[xp], %[x_end]\n\t"
                "bne    1b\n\t"
                : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [xp] "+r"(xp), [wp] "+r"(wp),
                  [xe] "=&r"(xe), [xo] "=&r"(xo), [a] "=&r"(a), [b] "=&r"(b)
                : [x_end] "r"(x_end)
                : "cc", "memory");
        }
#else /* without optimisation (-O0) GCC keeps too few registers free for the assembly */
        for (int32_t k = 0; k < words; ++k, wp += 8) {
            const int32_t xv = nn2c_simd_ld32(x + 4 * k), xe = __sxtb16(xv), xo = nn2c_sxtb16_ror8(xv);
            s0 = __smlad(xo, wp[1], __smlad(xe, wp[0], s0));
            s1 = __smlad(xo, wp[3], __smlad(xe, wp[2], s1));
            s2 = __smlad(xo, wp[5], __smlad(xe, wp[4], s2));
            s3 = __smlad(xo, wp[7], __smlad(xe, wp[6], s3));
        }
#endif
        const int16_t *tail = w + 16 * words;
        for (int32_t t = 0; t < rem; ++t) {
            const int32_t v = x[4 * words + t];
            s0 = nn2c_sums_wrap(s0, v * tail[t]);
            s1 = nn2c_sums_wrap(s1, v * tail[rem + t]);
            s2 = nn2c_sums_wrap(s2, v * tail[2 * rem + t]);
            s3 = nn2c_sums_wrap(s3, v * tail[3 * rem + t]);
        }
        acc[r] = s0;
        if (left > 1) acc[r + 1] = s1;
        if (left > 2) acc[r + 2] = s2;
        if (left > 3) acc[r + 3] = s3;
    }
}
#elif defined(NN2C_SIMD_MVE)
NN2C_INLINE int32_t nn2c_simd_dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t sum) {
    for (int32_t d = 0; d < n; d += 16) {
        const mve_pred16_t live = vctp8q((uint32_t)(n - d));
        sum = vmladavaq_s8(sum, vldrbq_z_s8(a + d, live), vldrbq_z_s8(b + d, live));
    }
    return sum;
}

/* Four rows at a time, one input vector per 16 values (VMLADAVA, the last vector predicated): the loop
 * of nn2c_fc_s8_sums_simd started from init (a shared inline helper changed GCC 12's code for that
 * kernel, which row-streamed models count on). */
void nn2c_sums_s8(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                  const int32_t *init, int32_t *acc) {
    const int8_t *w = (const int8_t *)weights + first * depth;
    int32_t r = 0;
    const int32_t whole = depth & ~15;
    for (; r + 4 <= rows; r += 4, w += 4 * depth) {
        int32_t s0 = init[r], s1 = init[r + 1], s2 = init[r + 2], s3 = init[r + 3];
        const int8_t *w1 = w + depth, *w2 = w1 + depth, *w3 = w2 + depth;
        int32_t d = 0;
        for (; d < whole; d += 16) { /* whole vectors unpredicated: GCC 12 keeps the loop free of VPR moves */
            const int8x16_t vx = vld1q_s8(x + d);
            s0 = vmladavaq_s8(s0, vld1q_s8(w + d), vx);
            s1 = vmladavaq_s8(s1, vld1q_s8(w1 + d), vx);
            s2 = vmladavaq_s8(s2, vld1q_s8(w2 + d), vx);
            s3 = vmladavaq_s8(s3, vld1q_s8(w3 + d), vx);
        }
        if (d < depth) {
            const mve_pred16_t live = vctp8q((uint32_t)(depth - d));
            const int8x16_t vx = vldrbq_z_s8(x + d, live);
            s0 = vmladavaq_s8(s0, vldrbq_z_s8(w + d, live), vx);
            s1 = vmladavaq_s8(s1, vldrbq_z_s8(w1 + d, live), vx);
            s2 = vmladavaq_s8(s2, vldrbq_z_s8(w2 + d, live), vx);
            s3 = vmladavaq_s8(s3, vldrbq_z_s8(w3 + d, live), vx);
        }
        acc[r] = s0;
        acc[r + 1] = s1;
        acc[r + 2] = s2;
        acc[r + 3] = s3;
    }
    for (; r < rows; ++r, w += depth) {
        acc[r] = nn2c_simd_dot_s8(x, w, depth, init[r]);
    }
}
#else /* the host: rows of int8 as they are, plain C */
NN2C_INLINE int32_t nn2c_simd_dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t sum) {
    for (int32_t d = 0; d < n; ++d) {
        sum = nn2c_sums_wrap(sum, a[d] * b[d]);
    }
    return sum;
}

void nn2c_sums_s8(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                  const int32_t *init, int32_t *acc) {
    const int8_t *w = (const int8_t *)weights + first * depth;
    for (int32_t r = 0; r < rows; ++r) {
        acc[r] = nn2c_simd_dot_s8(x, w + r * depth, depth, init[r]);
    }
}
#endif

#if defined(NN2C_SIMD_DSP)
/* Four rows at a time from their interleaved int8 words: per 4 inputs one LDR and two SXTB16 for the
 * input, two LDRDs for the four rows' words, and per row two SXTB16 and two SMLADs (21 instructions
 * per 16 MACs, besides the loop's). with_offset (a constant of each caller): the sums of x + offset from 0
 * (x + offset in [-255, 255]: both int16 halves of an input pair offset by one SADD16), else of x from init. */
NN2C_INLINE void nn2c_sums_narrow_rows(const int8_t *x, const void *weights, int32_t depth, int32_t first,
                                       int32_t rows, const int32_t *init, int32_t offset, int with_offset,
                                       int32_t *acc) {
    const int32_t words = depth >> 2, rem = depth & 3;
    const int32_t pair = (int32_t)(((uint32_t)offset & 0xFFFFu) * 0x10001u);
    const int8_t *w = (const int8_t *)weights + first * depth;
    int32_t r = 0;
    for (; r + 4 <= rows; r += 4, w += 4 * depth) {
        const nn2c_simd_word_t *wp = (const nn2c_simd_word_t *)(const void *)w;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        if (!with_offset) {
            s0 = init[r], s1 = init[r + 1], s2 = init[r + 2], s3 = init[r + 3];
        }
        for (int32_t k = 0; k < words; ++k, wp += 4) {
            const int32_t xv = nn2c_simd_ld32(x + 4 * k);
            int32_t xe = __sxtb16(xv), xo = nn2c_sxtb16_ror8(xv);
            if (with_offset) {
                xe = __sadd16(xe, pair);
                xo = __sadd16(xo, pair);
            }
            const int32_t a = wp[0], b = wp[1], c = wp[2], d = wp[3];
            s0 = __smlad(xo, nn2c_sxtb16_ror8(a), __smlad(xe, __sxtb16(a), s0));
            s1 = __smlad(xo, nn2c_sxtb16_ror8(b), __smlad(xe, __sxtb16(b), s1));
            s2 = __smlad(xo, nn2c_sxtb16_ror8(c), __smlad(xe, __sxtb16(c), s2));
            s3 = __smlad(xo, nn2c_sxtb16_ror8(d), __smlad(xe, __sxtb16(d), s3));
        }
        const int8_t *tail = w + 16 * words;
        for (int32_t t = 0; t < rem; ++t) {
            const int32_t v = x[4 * words + t] + (with_offset ? offset : 0);
            s0 = nn2c_sums_wrap(s0, v * tail[t]);
            s1 = nn2c_sums_wrap(s1, v * tail[rem + t]);
            s2 = nn2c_sums_wrap(s2, v * tail[2 * rem + t]);
            s3 = nn2c_sums_wrap(s3, v * tail[3 * rem + t]);
        }
        acc[r] = s0;
        acc[r + 1] = s1;
        acc[r + 2] = s2;
        acc[r + 3] = s3;
    }
    for (; r < rows; ++r, w += depth) { /* the last rows % 4 rows as they are */
        if (with_offset) {
            int32_t sum = 0;
            for (int32_t d = 0; d < depth; ++d) {
                sum = nn2c_sums_wrap(sum, (x[d] + offset) * w[d]);
            }
            acc[r] = sum;
        } else {
            acc[r] = nn2c_simd_dot_s8(x, w, depth, init[r]);
        }
    }
}

void nn2c_sums_s8_narrow(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                         const int32_t *init, int32_t *acc) {
    nn2c_sums_narrow_rows(x, weights, depth, first, rows, init, 0, 0, acc);
}

void nn2c_sums_s8_offset(const int8_t *x, int32_t offset, const void *weights, int32_t layout, int32_t depth,
                         int32_t first, int32_t rows, int32_t *acc) {
    (void)layout; /* NN2C_ROWS_NARROW */
    nn2c_sums_narrow_rows(x, weights, depth, first, rows, NULL, offset, 1, acc);
}
#else /* Helium and the host read the rows as they are */
void nn2c_sums_s8_narrow(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                         const int32_t *init, int32_t *acc) {
    nn2c_sums_s8(x, weights, depth, first, rows, init, acc);
}
#endif

#define NN2C_FC_ROWS_CHUNK 16 /* output channels summed at a time (stack sums; a multiple of 4) */

/* out[k] = clamp(MultiplyByQuantizedMultiplier(acc[k]) + offset), one multiplier for all: on Helium 4
 * values a step (nn2c_mve_requant), elsewhere its roundings prepared once (nn2c_rescale). */
#if defined(NN2C_SIMD_MVE)
static void nn2c_fc_rows_out(const int32_t *acc, int32_t n, nn2c_rescale_t q, int32_t offset, int32_t lo, int32_t hi,
                             int8_t *out) {
    const int32_t multipliers[4] = {q.multiplier, q.multiplier, q.multiplier, q.multiplier};
    const int32_t shifts[4] = {q.shift, q.shift, q.shift, q.shift};
    for (int32_t k = 0; k < n; k += 4) {
        const int32x4_t a = vldrwq_z_s32(acc + k, vctp32q((uint32_t)(n - k)));
        nn2c_mve_store4(out + k, nn2c_mve_requant(a, multipliers, shifts, offset, lo, hi), n - k);
    }
}
#else
static void nn2c_fc_rows_out(const int32_t *acc, int32_t n, nn2c_rescale_t q, int32_t offset, int32_t lo, int32_t hi,
                             int8_t *out) {
    for (int32_t k = 0; k < n; ++k) {
        out[k] = (int8_t)nn2c_clamp_i32(nn2c_add_offset(nn2c_rescale_apply(&q, acc[k]), offset), lo, hi);
    }
}
#endif

#if !defined(NN2C_SIMD_DSP) && !defined(NN2C_SIMD_MVE)
/* The host (tests of a Cortex-M compile): weight (r, d) of a filter in any of the layouts, rows
 * [first, end) summed by one call (a group of 4 rows past end is the narrow layout's plain tail). */
static int32_t nn2c_rows_weight(const void *w, int32_t layout, int32_t depth, int32_t r, int32_t d, int32_t end) {
    const int32_t g = r & ~3, i = r & 3, words = depth >> 2, rem = depth & 3;
    if (layout == NN2C_ROWS_PLAIN || (layout == NN2C_ROWS_NARROW && g + 4 > end)) {
        return ((const int8_t *)w)[(size_t)r * (size_t)depth + (size_t)d];
    }
    static const int32_t slot[2][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}}; /* input d % 4 -> its place (SMLAD order) */
    const size_t base = (size_t)g * (size_t)depth;
    const size_t at = d < 4 * words ? base + (size_t)(16 * (d >> 2) + 4 * i + slot[layout == NN2C_ROWS_WIDE][d & 3])
                                    : base + (size_t)(16 * words + i * rem + d - 4 * words);
    return layout == NN2C_ROWS_WIDE ? ((const int16_t *)w)[at] : ((const int8_t *)w)[at];
}

static void nn2c_sums_s8_any(const int8_t *x, const void *weights, int32_t layout, int32_t depth, int32_t first,
                             int32_t rows, const int32_t *init, int32_t *acc) {
    for (int32_t k = 0; k < rows; ++k) {
        int32_t sum = init[k];
        for (int32_t d = 0; d < depth; ++d) {
            sum = nn2c_sums_wrap(sum, x[d] * nn2c_rows_weight(weights, layout, depth, first + k, d, first + rows));
        }
        acc[k] = sum;
    }
}

void nn2c_sums_s8_narrow_any(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                             const int32_t *init, int32_t *acc) {
    nn2c_sums_s8_any(x, weights, NN2C_ROWS_NARROW, depth, first, rows, init, acc);
}

void nn2c_sums_s8_wide_any(const int8_t *x, const void *weights, int32_t depth, int32_t first, int32_t rows,
                           const int32_t *init, int32_t *acc) {
    nn2c_sums_s8_any(x, weights, NN2C_ROWS_WIDE, depth, first, rows, init, acc);
}
#endif

void nn2c_fc_s8_rows(const nn2c_fc_rows_params_t *p, const int8_t *input, int8_t *output) {
    const int32_t depth = p->depth, out_c = p->out_c, offset = p->output_offset, lo = p->act_min, hi = p->act_max;
    const nn2c_sums_fn sums = nn2c_rows_sums(p->layout);
    for (int32_t b = 0; b < p->batches; ++b, input += depth, output += out_c) {
        for (int32_t c = 0; c < out_c; c += NN2C_FC_ROWS_CHUNK) {
            const int32_t n = out_c - c < NN2C_FC_ROWS_CHUNK ? out_c - c : NN2C_FC_ROWS_CHUNK;
            int32_t acc[NN2C_FC_ROWS_CHUNK];
            sums(input, p->filter, depth, c, n, p->bias + c, acc);
            if (p->multipliers == NULL) {
                nn2c_fc_rows_out(acc, n, nn2c_rescale(p->multiplier, p->shift), offset, lo, hi, output + c);
                continue;
            }
            for (int32_t k = 0; k < n; ++k) { /* a multiplier per channel: used once, no rounding to prepare */
                const int32_t y = nn2c_mbqm(acc[k], p->multipliers[c + k], p->shifts[c + k]);
                output[c + k] = (int8_t)nn2c_clamp_i32(nn2c_add_offset(y, offset), lo, hi);
            }
        }
    }
}

/* acc[k] = sum_d w[first + k][d] (x[d] + offset) for a matrix in the layout codegen/ops/conv.py pack_rows
 * writes without widening (Arm DSP: NN2C_ROWS_NARROW, elsewhere NN2C_ROWS_PLAIN; the host reads any): the
 * input offset applied at run time, so no folded per-row constants sit in flash (--optimize size). */
#if defined(NN2C_SIMD_MVE) /* (the Arm DSP's: nn2c_sums_narrow_rows) */
void nn2c_sums_s8_offset(const int8_t *x, int32_t offset, const void *weights, int32_t layout, int32_t depth,
                         int32_t first, int32_t rows, int32_t *acc) {
    (void)layout; /* NN2C_ROWS_PLAIN */
    /* sum w x (VMLADAVA) + offset sum w (VADDVA), two rows at a time sharing the input vector (four took
     * more instructions: GCC 12 spills) */
    const int8_t *w = (const int8_t *)weights + first * depth;
    const int32_t whole = depth & ~15;
    for (int32_t r = 0; r < rows; r += 2, w += 2 * depth) {
        const int8_t *w1 = r + 1 < rows ? w + depth : w; /* (a last odd row computed twice) */
        int32_t s0 = 0, s1 = 0, t0 = 0, t1 = 0, d = 0;
        for (; d < whole; d += 16) { /* whole vectors unpredicated (no VPR moves in GCC 12's loop) */
            const int8x16_t vx = vld1q_s8(x + d), a = vld1q_s8(w + d), b = vld1q_s8(w1 + d);
            s0 = vmladavaq_s8(s0, a, vx);
            t0 = vaddvaq_s8(t0, a);
            s1 = vmladavaq_s8(s1, b, vx);
            t1 = vaddvaq_s8(t1, b);
        }
        if (d < depth) {
            const mve_pred16_t live = vctp8q((uint32_t)(depth - d));
            const int8x16_t vx = vldrbq_z_s8(x + d, live);
            const int8x16_t a = vldrbq_z_s8(w + d, live), b = vldrbq_z_s8(w1 + d, live);
            s0 = vmladavaq_s8(s0, a, vx);
            t0 = vaddvaq_s8(t0, a);
            s1 = vmladavaq_s8(s1, b, vx);
            t1 = vaddvaq_s8(t1, b);
        }
        acc[r] = (int32_t)((uint32_t)s0 + (uint32_t)offset * (uint32_t)t0);
        if (r + 1 < rows) acc[r + 1] = (int32_t)((uint32_t)s1 + (uint32_t)offset * (uint32_t)t1);
    }
}
#elif !defined(NN2C_SIMD_DSP)
void nn2c_sums_s8_offset(const int8_t *x, int32_t offset, const void *weights, int32_t layout, int32_t depth,
                         int32_t first, int32_t rows, int32_t *acc) {
    for (int32_t k = 0; k < rows; ++k) {
        int32_t sum = 0;
        for (int32_t d = 0; d < depth; ++d) {
            const int32_t v = layout == NN2C_ROWS_PLAIN
                                  ? ((const int8_t *)weights)[(size_t)(first + k) * (size_t)depth + (size_t)d]
                                  : nn2c_rows_weight(weights, layout, depth, first + k, d, first + rows);
            sum = nn2c_sums_wrap(sum, (x[d] + offset) * v);
        }
        acc[k] = sum;
    }
}
#endif

void nn2c_dots_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t count, const int32_t *init, int32_t *acc) {
    for (int32_t k = 0; k < count; ++k, a += n, b += n) {
        acc[k] = nn2c_simd_dot_s8(a, b, n, init[k]);
    }
}

/* dst[i] = src[i] for i < n, in increasing order: dst below an overlapping src is allowed (a state
 * buffer shifted down), a word or a vector at a time (nn2c_simd_copy). */
void nn2c_copy_down(int8_t *dst, const int8_t *src, int32_t n) {
#if defined(NN2C_SIMD_DSP)
    /* 16 bytes a step: each word read before the store that may overwrite its source */
    for (; n >= 16; n -= 16, dst += 16, src += 16) {
        const int32_t a = nn2c_simd_ld32(src), b = nn2c_simd_ld32(src + 4);
        const int32_t c = nn2c_simd_ld32(src + 8), d = nn2c_simd_ld32(src + 12);
        nn2c_simd_st32(dst, a);
        nn2c_simd_st32(dst + 4, b);
        nn2c_simd_st32(dst + 8, c);
        nn2c_simd_st32(dst + 12, d);
    }
#endif
    nn2c_simd_copy(dst, src, n);
}

/* Where a convolution's output pixels go: the output tensor (NULL), or a few at a time into a
 * FULLY_CONNECTED's sums (nn2c_conv_s8_simd_fc). */
typedef struct {
    const int8_t *filter; /* the FC filter, rows of `depth` bytes */
    int32_t depth, outputs, start;
    int32_t *acc;
    int8_t *pixels; /* room for `batch` output pixels */
    int32_t batch;
} nn2c_conv_sink_t;

/* Output pixel q's bytes: in the tensor, or in the sink's buffer. */
NN2C_INLINE int8_t *nn2c_conv_out(int8_t *output, const nn2c_conv_sink_t *sink, int32_t q, int32_t out_c) {
    return sink ? sink->pixels + (q % sink->batch) * out_c : output + q * out_c;
}

/* Pixels [0, done) are computed: sum the buffered ones when the buffer is full or all are done. */
NN2C_INLINE void nn2c_conv_feed(const nn2c_conv_sink_t *sink, int32_t done, int32_t all, int32_t out_c) {
    if (sink && (done % sink->batch == 0 || done == all)) {
        const int32_t first = (done - 1) - (done - 1) % sink->batch;
        nn2c_fc_s8_sums_simd(sink->pixels, sink->filter, sink->depth, sink->outputs, sink->start + first * out_c,
                             (done - first) * out_c, sink->acc);
    }
}

#if defined(NN2C_SIMD_DSP)
/* The window of output pixel (oy, ox) expanded straight from the image, without an im2col copy:
 * filter rows of a multiple of 4 bytes are whole blocks of nn2c_dsp_expand. Padding taps read
 * `pad` (the input zero point in every byte); a block cut by the image's left or right edge is put
 * together byte by byte. */
NN2C_INLINE void nn2c_dsp_expand_window(const nn2c_conv_geom_t *g, int32_t pad, const int8_t *in_b, int32_t oy,
                                        int32_t ox, nn2c_simd_word_t *dst) {
    const int32_t C = g->in_c, row_bytes = g->filter_w * C;
    const int32_t iy0 = oy * g->stride_h - g->pad_h, ix0 = ox * g->stride_w - g->pad_w;
    const int32_t pad_even = __sxtb16(pad), pad_odd = nn2c_sxtb16_ror8(pad);
    const int inside_w = g->dilation_w == 1 && ix0 >= 0 && ix0 + g->filter_w <= g->in_w;
    for (int32_t fy = 0; fy < g->filter_h; ++fy) {
        const int32_t iy = iy0 + fy * g->dilation_h;
        if (iy < 0 || iy >= g->in_h) {
            for (int32_t k = 0; k < row_bytes; k += 4, dst += 4) {
                dst[0] = pad_even;
                dst[1] = pad_odd;
            }
            continue;
        }
        const int8_t *src = in_b + iy * g->in_w * C;
        if (inside_w) {
            dst = nn2c_dsp_expand_words(src + ix0 * C, row_bytes >> 2, dst, 4);
            continue;
        }
        if (g->dilation_w != 1) { /* rare: byte by byte */
            for (int32_t k = 0; k < row_bytes; k += 4, dst += 4) {
                uint32_t v = 0;
                for (int32_t j = 3; j >= 0; --j) {
                    const int32_t ix = ix0 + ((k + j) / C) * g->dilation_w;
                    const int8_t byte = ix >= 0 && ix < g->in_w ? src[ix * C + (k + j) % C] : (int8_t)pad;
                    v = (v << 8) | (uint8_t)byte;
                }
                dst[0] = __sxtb16((int32_t)v);
                dst[1] = nn2c_sxtb16_ror8((int32_t)v);
            }
            continue;
        }
        /* bytes [lo, hi) of the window's row are in the image, byte b at src[base + b] */
        const int32_t lo = (ix0 < 0 ? -ix0 : 0) * C;
        const int32_t hi = (g->in_w - ix0 < g->filter_w ? g->in_w - ix0 : g->filter_w) * C;
        const int32_t base = ix0 * C;
        for (int32_t k = 0; k < row_bytes; k += 4, dst += 4) {
            int32_t v = pad;
            if (k >= lo && k + 4 <= hi) {
                v = nn2c_simd_ld32(src + base + k);
            } else if (k + 4 > lo && k < hi) {
                uint32_t u = 0;
                for (int32_t j = 3; j >= 0; --j) {
                    u = (u << 8) | (uint8_t)(k + j >= lo && k + j < hi ? src[base + k + j] : (int8_t)pad);
                }
                v = (int32_t)u;
            }
            dst[0] = __sxtb16(v);
            dst[1] = nn2c_sxtb16_ror8(v);
        }
    }
}

/* DSP: pixel pairs expanded to int16 once (scratch: 16 bytes per block of 4 of the depth, + depth bytes of
 * im2col staging unless the filter is 1x1 without padding or its rows are whole words, expanded straight
 * from the image; at least 4 * depth_padded bytes), so the inner loop extends only the filter. */
NN2C_INLINE void nn2c_conv_s8_run(const nn2c_conv_simd_params_t *p, const int8_t *input, const int8_t *packed_filter,
                                  int8_t *output, void *scratch, const nn2c_conv_sink_t *sink) {
    const nn2c_conv_geom_t *g = &p->g;
    const nn2c_gemm_s8_t *m = &p->m;
    nn2c_simd_word_t *pair = (nn2c_simd_word_t *)scratch;
    /* (after the expanded blocks of the depth: a dual filter's padding block, whose weights are zero, reads the
     * staging row's bytes instead of 16 more of scratch) */
    int8_t *stage = (int8_t *)scratch + 16 * ((m->depth + 3) >> 2);
    const int32_t pad = nn2c_simd_splat(p->pad_value);
    (void)pad; /* (read by neither copy where nn2c_config.h leaves both out) */
    const int direct = g->filter_h == 1 && g->filter_w == 1 && g->pad_h == 0 && g->pad_w == 0;
    const int word_rows = !direct && (g->filter_w * g->in_c) % 4 == 0;
    const int right = m->records ? 1 : m->right == 2; /* (every shift negative: the codegen's flag) */
    /* records padded to whole channel pairs: an odd count's last channel, its filter words and record */
    const int odd_records = m->records && (m->out_c & 1);
    const nn2c_simd_word_t *const last_w =
        (const nn2c_simd_word_t *)(const void *)(packed_filter + (m->out_c - 1) * m->depth_padded);
    const int32_t *const last_rec = odd_records ? m->records + 4 * (m->out_c - 1) : NULL;
    (void)odd_records, (void)last_w, (void)last_rec; /* (nn2c_config.h: no odd channel count) */
#if !defined(NN2C_OMIT_DSP_GEMM_TRIPLES)
    if (p->triples && !sink) { /* (a 1x1 convolution whose filter is dual: codegen/ops/conv.py) */
        nn2c_conv_s8_triples(m, g->batches * g->out_h * g->out_w, input, packed_filter, output, pair);
        return;
    }
#endif
#if defined(NN2C_OMIT_DSP_GEMM_PAIRS) /* nn2c_config.h: every convolution of this model runs over triples */
    (void)stage, (void)direct, (void)word_rows, (void)right, (void)sink, (void)input, (void)output, (void)pair;
#else
    if (p->pointwise && !sink) {
        /* 1x1, stride 1, no padding (a FULLY_CONNECTED sink takes the loop below): the pixels are consecutive rows
         * of depth bytes, each pair expanded straight from the image before either output is written (the in-place
         * rule above), without the window arithmetic of a pixel */
        const int32_t pixels = g->batches * g->out_h * g->out_w, depth = m->depth, out_c = m->out_c;
        const int8_t *x = input;
        int8_t *out = output;
        for (const int8_t *const end = input + (pixels & ~1) * depth; x != end; x += 2 * depth, out += 2 * out_c) {
            nn2c_dsp_expand(x, depth, pair);
            nn2c_dsp_expand(x + depth, depth, pair + 2);
            nn2c_gemm_pair16(m, pair, packed_filter, out, out + out_c, right);
#if !defined(NN2C_OMIT_DSP_GEMM_ODD)
            if (odd_records) {
                int8_t *const last[3] = {out + out_c - 1, out + 2 * out_c - 1, NULL};
                nn2c_dsp_last_channel(pair, 2, m->depth_padded >> 2, last_w, m->dual, last_rec, last);
            }
#endif
        }
        if (pixels & 1) {
            nn2c_dsp_expand(x, depth, pair);
            nn2c_gemm_one16(m, pair, packed_filter, out);
        }
        return;
    }
    int8_t *pending = NULL;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int8_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const int32_t q = (b * g->out_h + oy) * g->out_w + ox;
                int8_t *out = nn2c_conv_out(output, sink, q, g->out_c);
                /* (nn2c_config.h leaves out the ways no convolution of this model takes) */
                if (word_rows) {
#if !defined(NN2C_OMIT_DSP_EXPAND_WINDOW)
                    nn2c_dsp_expand_window(g, pad, in_b, oy, ox, pair + (pending ? 2 : 0));
#endif
                } else {
                    const int8_t *row = stage;
                    if (direct) {
                        row = in_b + (oy * g->stride_h * g->in_w + ox * g->stride_w) * g->in_c;
                    } else {
#if !defined(NN2C_OMIT_DSP_IM2COL)
                        nn2c_simd_im2col(g, pad, in_b, oy, ox, stage);
#endif
                    }
                    nn2c_dsp_expand(row, m->depth, pair + (pending ? 2 : 0));
                }
                if (pending) {
                    nn2c_gemm_pair16(m, pair, packed_filter, pending, out, right);
#if !defined(NN2C_OMIT_DSP_GEMM_ODD)
                    if (odd_records) { /* the last channel (a pruned layer's): not in the pair kernel's loop */
                        int8_t *const last[3] = {pending + m->out_c - 1, out + m->out_c - 1, NULL};
                        nn2c_dsp_last_channel(pair, 2, m->depth_padded >> 2, last_w, m->dual, last_rec, last);
                    }
#endif
                    nn2c_conv_feed(sink, q + 1, g->batches * g->out_h * g->out_w, g->out_c);
                    pending = NULL;
                } else {
                    pending = out;
                }
            }
        }
    }
    if (pending) { /* an odd pixel out */
        nn2c_gemm_one16(m, pair, packed_filter, pending);
        nn2c_conv_feed(sink, g->batches * g->out_h * g->out_w, g->batches * g->out_h * g->out_w, g->out_c);
    }
#endif
}
#else
NN2C_INLINE void nn2c_conv_s8_run(const nn2c_conv_simd_params_t *p, const int8_t *input, const int8_t *packed_filter,
                                  int8_t *output, void *scratch, const nn2c_conv_sink_t *sink) {
    const nn2c_conv_geom_t *g = &p->g;
    const nn2c_gemm_s8_t *m = &p->m;
    const int32_t pad = nn2c_simd_splat(p->pad_value);
    int8_t *rows[2];
    rows[0] = (int8_t *)scratch;
    rows[1] = rows[0] + m->depth;
    int8_t *pending = NULL; /* output of the pixel waiting in rows[0] */
    const int32_t pixels = g->batches * g->out_h * g->out_w;
    const uintptr_t in_lo = (uintptr_t)input, in_hi = in_lo + (uintptr_t)(pixels * g->in_c);
    const uintptr_t out_lo = (uintptr_t)output, out_hi = out_lo + (uintptr_t)(pixels * g->out_c);
    const nn2c_gemm_rows2_fn rows2 = nn2c_gemm_rows2_for(m);
    if (p->pointwise) {
        /* 1x1, stride 1, no padding: the pixels are the rows themselves. In place (memory/inplace.py:
         * output pixel q ends at or below input pixel q's start), the second pixel's output may still
         * cover the first's input, written while the first is read: that row is copied first. */
        const int apart = sink || out_hi <= in_lo || in_hi <= out_lo;
        int32_t q = 0;
        for (; q + 2 <= pixels; q += 2) {
            const int8_t *x = input + q * g->in_c;
            if (!apart) {
                nn2c_simd_copy(rows[0], x, g->in_c);
            }
            rows2(m, apart ? x : rows[0], x + g->in_c, packed_filter,
                            nn2c_conv_out(output, sink, q, g->out_c), nn2c_conv_out(output, sink, q + 1, g->out_c));
            nn2c_conv_feed(sink, q + 2, pixels, g->out_c);
        }
        if (q < pixels) {
            nn2c_gemm_rows1(m, input + q * g->in_c, packed_filter, nn2c_conv_out(output, sink, q, g->out_c));
            nn2c_conv_feed(sink, pixels, pixels, g->out_c);
        }
        return;
    }
    /* a window inside the image (whole filter rows: dilation_w 1) is copied by nn2c_simd_copy_rows from
     * these locals (the struct's fields would be reloaded after every copy); the others by im2col */
    const int32_t C = g->in_c, in_row = g->in_w * C, row_bytes = g->filter_w * C, filter_h = g->filter_h;
    const int32_t row_step = g->dilation_h * in_row, span_h = (filter_h - 1) * g->dilation_h;
    const int32_t in_h = g->in_h, in_w = g->in_w, filter_w = g->filter_w;
    const int32_t stride_h = g->stride_h, stride_w = g->stride_w, pad_h = g->pad_h, pad_w = g->pad_w;
    const int whole_rows = g->dilation_w == 1;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int8_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            const int32_t iy0 = oy * stride_h - pad_h;
            const int rows_inside = whole_rows && iy0 >= 0 && iy0 + span_h < in_h;
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const int32_t q = (b * g->out_h + oy) * g->out_w + ox;
                int8_t *out = nn2c_conv_out(output, sink, q, g->out_c);
                const int32_t ix0 = ox * stride_w - pad_w;
                if (rows_inside && ix0 >= 0 && ix0 + filter_w <= in_w) {
                    nn2c_simd_copy_rows(rows[pending != NULL], in_b + iy0 * in_row + ix0 * C, filter_h, row_bytes,
                                       row_step);
                } else {
                    nn2c_simd_im2col(g, pad, in_b, oy, ox, rows[pending != NULL]);
                }
                if (pending) {
                    rows2(m, rows[0], rows[1], packed_filter, pending, out);
                    nn2c_conv_feed(sink, q + 1, pixels, g->out_c);
                    pending = NULL;
                } else {
                    pending = out;
                }
            }
        }
    }
    if (pending) {
        nn2c_gemm_rows1(m, rows[0], packed_filter, pending);
        nn2c_conv_feed(sink, pixels, pixels, g->out_c);
    }
}
#endif

void nn2c_conv_s8_simd(const nn2c_conv_simd_params_t *p, const int8_t *input, const int8_t *packed_filter,
                       int8_t *output, void *scratch) {
    nn2c_conv_s8_run(p, input, packed_filter, output, scratch, NULL);
}

void nn2c_conv_s8_simd_fc(const nn2c_conv_simd_params_t *p, const int8_t *input, const int8_t *packed_filter,
                          void *scratch, const int8_t *fc_filter, int32_t fc_depth, int32_t fc_outputs,
                          int32_t start, int32_t *acc, int8_t *pixels, int32_t batch) {
    const nn2c_conv_sink_t sink = {fc_filter, fc_depth, fc_outputs, start, acc, pixels, batch};
    nn2c_conv_s8_run(p, input, packed_filter, NULL, scratch, &sink);
}

/* --- DEPTHWISE_CONV_2D --------------------------------------------------------------------------- */

/* How a pixel's window is read (nn2c_dw_s8_simd): `right`: every shift negative (DSP) or none
 * positive (MVE), the kernels' requantisation in assembly; col / row: the column and row steps of a
 * 3x3 window inside the image (col 0: the tap-offset table). */
typedef struct {
    int right;
    int32_t col, row;
} nn2c_dw_window_t;

/* The input pixel of a tap: byte offsets from the pixel at the window's top-left corner (which may
 * lie outside the image: it is kept as an integer), padding taps lead to the zero-point row. */
NN2C_INLINE const int8_t *nn2c_dw_tap(uintptr_t base, intptr_t offset) {
    return (const int8_t *)(base + (uintptr_t)offset);
}

/* All channels of one output pixel: taps[t] is the offset of tap t's input pixel (or of the
 * zero-point row) from base. Filter layouts (nn2c_simd.h): DSP [C / 4][taps][4] int16 in the order
 * c0 c2 c1 c3 (the halves SXTB16 gives the input word, so the filter needs no extension at run
 * time); MVE [C / 16][taps][16] int8 in channel order, then groups of 8. */
#if defined(NN2C_SIMD_DSP)
/* One tap of four channels once LOAD has put the tap pixel's input word in x: SXTB16 to c0 c2 /
 * c1 c3, times the int16 filter words (the same order), SMLABB / SMLATT into the four sums. */
#define NN2C_DSP_DW_MAC(LOAD) \
    LOAD \
    "ldrd   %[we], %[wo], [%[wp]], #8\n\t" \
    "sxtb16 %[xe], %[x]\n\t" \
    "sxtb16 %[x], %[x], ror #8\n\t" \
    "smlabb %[s0], %[xe], %[we], %[s0]\n\t" \
    "smlatt %[s2], %[xe], %[we], %[s2]\n\t" \
    "smlabb %[s1], %[x], %[wo], %[s1]\n\t" \
    "smlatt %[s3], %[x], %[wo], %[s3]\n\t"
/* The same from an int8 filter word (--optimize size: nn2c_dw_simd_params_t.filter8, channels in order): its
 * SXTB16 halves are the int16 filter's two words, c0 c2 and c1 c3; 2 instructions more a tap. */
#define NN2C_DSP_DW_MAC8(LOAD) \
    LOAD \
    "ldr    %[we], [%[wp]], #4\n\t" \
    "sxtb16 %[xe], %[x]\n\t" \
    "sxtb16 %[x], %[x], ror #8\n\t" \
    "sxtb16 %[wo], %[we], ror #8\n\t" \
    "sxtb16 %[we], %[we]\n\t" \
    "smlabb %[s0], %[xe], %[we], %[s0]\n\t" \
    "smlatt %[s2], %[xe], %[we], %[s2]\n\t" \
    "smlabb %[s1], %[x], %[wo], %[s1]\n\t" \
    "smlatt %[s3], %[x], %[wo], %[s3]\n\t"
/* A tap through the table of tap offsets (tp): 9 instructions (11 from an int8 filter). */
#define NN2C_DSP_DW_TAP NN2C_DSP_DW_MAC("ldr    %[x], [%[tp]], #4\n\tldr    %[x], [%[bc], %[x]]\n\t")
#define NN2C_DSP_DW_TAP8 NN2C_DSP_DW_MAC8("ldr    %[x], [%[tp]], #4\n\tldr    %[x], [%[bc], %[x]]\n\t")

/* One tap of four channels in C (the assembly loops' fallback): the input word's SXTB16 halves times
 * the filter's int16 pairs we (c0 c2) and wo (c1 c3), as NN2C_DSP_DW_TAP. */
NN2C_INLINE void nn2c_dsp_dw_tap_c(int32_t x, int32_t we, int32_t wo, int32_t *s0, int32_t *s1, int32_t *s2,
                                   int32_t *s3) {
    const int32_t xe = __sxtb16(x), xo = nn2c_sxtb16_ror8(x);
    *s0 = __smlabb(xe, we, *s0);
    *s2 = __smlatt(xe, we, *s2);
    *s1 = __smlabb(xo, wo, *s1);
    *s3 = __smlatt(xo, wo, *s3);
}

/* The filter's int16 pairs of one tap at *wp, advanced past them: two words, or one int8 word (filter8). */
NN2C_INLINE void nn2c_dsp_dw_weights(const nn2c_simd_word_t **wp, int filter8, int32_t *we, int32_t *wo) {
    const nn2c_simd_word_t *w = *wp;
    if (filter8) {
        *we = __sxtb16(w[0]);
        *wo = nn2c_sxtb16_ror8(w[0]);
        *wp = w + 1;
    } else {
        *we = w[0];
        *wo = w[1];
        *wp = w + 2;
    }
}

/* The taps of channels [c, c + 4): in assembly, three taps per loop step when the count allows
 * (3x3 filters); GCC 12 spent 12 instructions per tap on the same intrinsics (register copies of
 * the filter pointer), this 9 to 11. */
NN2C_INLINE void nn2c_dsp_dw_taps(uintptr_t bc, const intptr_t *tp, int32_t n_taps, const nn2c_simd_word_t **w,
                                  int32_t s[4], int filter8) {
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    const nn2c_simd_word_t *wp = *w;
#if !defined(NN2C_INLINE_ASM) /* -O0, or NN2C_NO_INLINE_ASM (nn2c_common.h) */
    for (int32_t t = 0; t < n_taps; ++t) {
        int32_t we, wo;
        nn2c_dsp_dw_weights(&wp, filter8, &we, &wo);
        nn2c_dsp_dw_tap_c(nn2c_simd_ld32(nn2c_dw_tap(bc, tp[t])), we, wo, &s0, &s1, &s2, &s3);
    }
#else
    int32_t x, xe, we, wo;
/* the loop over the taps, STEP a loop iteration (k of them) */
#define NN2C_DSP_DW_TAPS_LOOP(STEP, K) \
    do { \
        int32_t k = (K); \
        __asm__ volatile("1:\n\t" STEP \
                         "subs   %[k], %[k], #1\n\t" \
                         "bne    1b\n\t" \
                         : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [tp] "+r"(tp), \
                           [wp] "+r"(wp), [k] "+r"(k), [x] "=&r"(x), [xe] "=&r"(xe), [we] "=&r"(we), [wo] "=&r"(wo) \
                         : [bc] "r"(bc) \
                         : "cc", "memory"); \
    } while (0)
    if (filter8 && n_taps % 3 == 0) {
        NN2C_DSP_DW_TAPS_LOOP(NN2C_DSP_DW_TAP8 NN2C_DSP_DW_TAP8 NN2C_DSP_DW_TAP8, n_taps / 3);
    } else if (filter8) {
        NN2C_DSP_DW_TAPS_LOOP(NN2C_DSP_DW_TAP8, n_taps);
    } else if (n_taps % 3 == 0) {
        NN2C_DSP_DW_TAPS_LOOP(NN2C_DSP_DW_TAP NN2C_DSP_DW_TAP NN2C_DSP_DW_TAP, n_taps / 3);
    } else {
        NN2C_DSP_DW_TAPS_LOOP(NN2C_DSP_DW_TAP, n_taps);
    }
#undef NN2C_DSP_DW_TAPS_LOOP
#endif
    *w = wp;
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

/* The nine taps of a 3x3 window inside the image, channels [c, c + 4): the input words addressed
 * from the window's row start (b) by the column step (the third from b + col), the row start
 * advanced by the row step: 26 instructions per row, no tap-offset table and no loop counter
 * (NN2C_DSP_DW_TAP: 27 plus the loop's 2 per row). 12 registers, as the table's loop. */
#define NN2C_DSP_DW_ROW3 \
    NN2C_DSP_DW_MAC("ldr    %[x], [%[b]]\n\t") NN2C_DSP_DW_MAC("ldr    %[x], [%[b], %[col]]\n\t") \
    NN2C_DSP_DW_MAC("add    %[x], %[b], %[col]\n\tldr    %[x], [%[x], %[col]]\n\t")
#define NN2C_DSP_DW_ROW3_8 \
    NN2C_DSP_DW_MAC8("ldr    %[x], [%[b]]\n\t") NN2C_DSP_DW_MAC8("ldr    %[x], [%[b], %[col]]\n\t") \
    NN2C_DSP_DW_MAC8("add    %[x], %[b], %[col]\n\tldr    %[x], [%[x], %[col]]\n\t")

NN2C_INLINE void nn2c_dsp_dw_taps3x3(uintptr_t b, int32_t col, int32_t row, const nn2c_simd_word_t **w,
                                     int32_t s[4], int filter8) {
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    const nn2c_simd_word_t *wp = *w;
#if !defined(NN2C_INLINE_ASM) /* -O0, or NN2C_NO_INLINE_ASM (nn2c_common.h) */
    for (int32_t fy = 0; fy < 3; ++fy, b += (uintptr_t)row) {
        for (int32_t fx = 0; fx < 3; ++fx) {
            int32_t we, wo;
            nn2c_dsp_dw_weights(&wp, filter8, &we, &wo);
            nn2c_dsp_dw_tap_c(nn2c_simd_ld32((const int8_t *)(b + (uintptr_t)(fx * col))), we, wo, &s0, &s1, &s2,
                              &s3);
        }
    }
#else
    int32_t x, xe, we, wo;
/* the three rows of ROW's taps */
#define NN2C_DSP_DW_WINDOW3X3(ROW) \
    __asm__ volatile(ROW "add    %[b], %[b], %[row]\n\t" ROW "add    %[b], %[b], %[row]\n\t" ROW \
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [b] "+r"(b), [wp] "+r"(wp), \
                       [x] "=&r"(x), [xe] "=&r"(xe), [we] "=&r"(we), [wo] "=&r"(wo) \
                     : [col] "r"(col), [row] "r"(row) \
                     : "memory")
    if (filter8) {
        NN2C_DSP_DW_WINDOW3X3(NN2C_DSP_DW_ROW3_8);
    } else {
        NN2C_DSP_DW_WINDOW3X3(NN2C_DSP_DW_ROW3);
    }
#undef NN2C_DSP_DW_WINDOW3X3
#endif
    *w = wp;
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

/* The output stage of four channels from their doubled records (nn2c_record_requant_doubled; the sums doubled
 * by the filter), packed into one word at *y: 5 instructions a channel with its LDM (the earlier records' took
 * 7, building the rounding's low word from the sum's sign). With the four arrays (nn2c_dsp_requant4_right) and
 * their pointers, which GCC kept on the stack around the taps' 12 registers, a group of 4 channels spent about
 * 80 instructions outside its taps on kws_ref_model's layers (QEMU). */
NN2C_INLINE void nn2c_dsp_dw_record_out(int32_t s0, int32_t s1, int32_t s2, int32_t s3, const int32_t **rec,
                                        int8_t **y) {
    const int32_t *r = *rec;
    int8_t *q = *y;
#if defined(NN2C_INLINE_ASM)
    register int32_t m __asm__("r10"), h __asm__("r11"), sh __asm__("r12");
    __asm__ volatile(NN2C_DSP_DOUBLED_RQ("s0") NN2C_DSP_DOUBLED_RQ("s1") NN2C_DSP_DOUBLED_RQ("s2")
                     NN2C_DSP_DOUBLED_RQ("s3")
                     "bfi    %[s0], %[s1], #8, #8\n\t"
                     "bfi    %[s0], %[s2], #16, #8\n\t"
                     "bfi    %[s0], %[s3], #24, #8\n\t"
                     "str    %[s0], [%[q]], #4\n\t"
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [r] "+r"(r), [q] "+r"(q),
                       [m] "=&r"(m), [h] "=&r"(h), [sh] "=&r"(sh)
                     :
                     : "memory");
#else
    const int32_t s[4] = {s0, s1, s2, s3};
    for (int32_t k = 0; k < 4; ++k, r += 3) {
        *q++ = (int8_t)nn2c_record_requant_doubled(s[k], r);
    }
#endif
    *rec = r;
    *y = q;
}

/* Channel j of a last, partial group of 4 (filter w: int16 in the order c0 c2 c1 c3, or int8 in channel order
 * where filter8), at byte `at` of each tap's pixel (base plus the tap's offset): acc plus its taps, one byte at a
 * time. */
NN2C_INLINE int32_t nn2c_dsp_dw_partial_sum(const void *w, int filter8, uintptr_t base, const intptr_t *taps,
                                            int32_t n_taps, int32_t at, int32_t j, int32_t acc) {
    static const int8_t slot[4] = {0, 2, 1, 3};
    uint32_t sum = (uint32_t)acc;
    for (int32_t t = 0; t < n_taps; ++t) {
        const int32_t weight = filter8 ? ((const int8_t *)w)[4 * t + j] : ((const int16_t *)w)[4 * t + slot[j]];
        sum += (uint32_t)((int32_t)nn2c_dw_tap(base, taps[t])[at] * weight);
    }
    return (int32_t)sum;
}

/* A sum of an int8 filter (filter8) doubled for the doubled records (doubled_records_fit: twice it fits int32),
 * in a register (a loop over the sums' array kept them in memory: 24 instructions a group of 4). */
NN2C_INLINE int32_t nn2c_dsp_dw_doubled(int32_t sum, int filter8) {
    return (int32_t)((uint32_t)sum << filter8);
}

#if !defined(NN2C_OMIT_DSP_DW_PARTIAL) /* nn2c_config.h: some depthwise layer from records has C % 4 != 0 */
/* The last n < 4 channels of a pixel whose output stage is records (records and filter padded to a group of
 * 4). */
static void nn2c_dsp_dw_partial_records(const int32_t *rec, const void *w, int filter8, uintptr_t base,
                                        const intptr_t *taps, int32_t n_taps, int8_t *out, int32_t n) {
    for (int32_t j = 0; j < n; ++j) {
        const int32_t sum = nn2c_dsp_dw_partial_sum(w, filter8, base, taps, n_taps, j, j, rec[j]);
        out[j] = (int8_t)nn2c_record_requant_doubled(nn2c_dsp_dw_doubled(sum, filter8), rec + 4 + 3 * j);
    }
}
#endif

/* The channels of one pixel whose output stage is doubled records (the codegen's test; padded to whole groups
 * of 4); filter8 a constant of the instances below. An int8 filter's sums are TFLite's, doubled before the
 * output stage (its records hold the biases undoubled). */
NN2C_INLINE void nn2c_dw_pixel_records_any(const nn2c_dw_simd_params_t *p, int32_t C, uintptr_t base,
                                           const intptr_t *taps, int32_t n_taps, const nn2c_simd_word_t *wp,
                                           int8_t *out, const nn2c_dw_window_t *window, int filter8) {
    const int32_t *rec = p->records;
    int8_t *const end = out + (C & ~3);
    if (window->col) { /* a 3x3 window inside the image */
        const int32_t col = window->col, row = window->row;
        for (int8_t *y = out; y != end; base += 4) {
            int32_t s[4] = {rec[0], rec[1], rec[2], rec[3]};
            rec += 4;
            nn2c_dsp_dw_taps3x3(base, col, row, &wp, s, filter8);
            nn2c_dsp_dw_record_out(nn2c_dsp_dw_doubled(s[0], filter8), nn2c_dsp_dw_doubled(s[1], filter8),
                                   nn2c_dsp_dw_doubled(s[2], filter8), nn2c_dsp_dw_doubled(s[3], filter8), &rec, &y);
        }
    } else {
        for (int8_t *y = out; y != end; base += 4) {
            int32_t s[4] = {rec[0], rec[1], rec[2], rec[3]};
            rec += 4;
            nn2c_dsp_dw_taps(base, taps, n_taps, &wp, s, filter8);
            nn2c_dsp_dw_record_out(nn2c_dsp_dw_doubled(s[0], filter8), nn2c_dsp_dw_doubled(s[1], filter8),
                                   nn2c_dsp_dw_doubled(s[2], filter8), nn2c_dsp_dw_doubled(s[3], filter8), &rec, &y);
        }
    }
#if !defined(NN2C_OMIT_DSP_DW_PARTIAL)
    if (C & 3) { /* the last 1-3 channels (a pruned layer's), byte by byte */
        nn2c_dsp_dw_partial_records(rec, wp, filter8, base, taps, n_taps, end, C & 3);
    }
#endif
}

/* One copy of its code for nn2c_dw_pixel and nn2c_dw_run_records, per kind of filter (nn2c_config.h leaves out
 * the kinds no layer has). */
#if !defined(NN2C_OMIT_DSP_DW_INT16)
__attribute__((noinline)) static void nn2c_dw_pixel_records(const nn2c_dw_simd_params_t *p, int32_t C, uintptr_t base,
                                                            const intptr_t *taps, int32_t n_taps,
                                                            const nn2c_simd_word_t *wp, int8_t *out,
                                                            const nn2c_dw_window_t *window) {
    nn2c_dw_pixel_records_any(p, C, base, taps, n_taps, wp, out, window, 0);
}
#endif

#if !defined(NN2C_OMIT_DSP_DW_INT8) /* nn2c_config.h: some depthwise layer has an int8 filter (--optimize size) */
__attribute__((noinline)) static void nn2c_dw_pixel_records8(const nn2c_dw_simd_params_t *p, int32_t C,
                                                             uintptr_t base, const intptr_t *taps, int32_t n_taps,
                                                             const nn2c_simd_word_t *wp, int8_t *out,
                                                             const nn2c_dw_window_t *window) {
    nn2c_dw_pixel_records_any(p, C, base, taps, n_taps, wp, out, window, 1);
}
#endif

/* count neighbouring output pixels of a layer with records (windows `step` bytes apart, inner: their tap offsets;
 * nn2c_dw_pixel runs one over the border with its own table) in a loop of their own: the pixel loop of nn2c_dw_s8_simd spent about 70
 * instructions a pixel outside its channel groups on 8-channel layers (vww_96_int8's 48x48 one, QEMU), its
 * border tests and some 25 values reloaded around the assembly. */
NN2C_INLINE void nn2c_dw_run_records(const nn2c_dw_simd_params_t *p, int32_t C, uintptr_t base, int32_t step,
                                     int32_t count, const intptr_t *inner, int32_t n_taps,
                                     const nn2c_dw_window_t *window, const int8_t *filter, int8_t *out) {
    const nn2c_simd_word_t *wp = (const nn2c_simd_word_t *)(const void *)filter;
    (void)p, (void)C, (void)base, (void)step, (void)count, (void)inner, (void)n_taps, (void)window, (void)wp;
    (void)out; /* (nn2c_config.h may leave out both kinds of filter: no layer of the model has records) */
#if !defined(NN2C_OMIT_DSP_DW_INT8)
    if (p->filter8) {
        for (; count > 0; --count, base += (uintptr_t)(intptr_t)step, out += C) {
            nn2c_dw_pixel_records8(p, C, base, inner, n_taps, wp, out, window);
        }
        return;
    }
#endif
#if !defined(NN2C_OMIT_DSP_DW_INT16)
    for (; count > 0; --count, base += (uintptr_t)(intptr_t)step, out += C) {
        nn2c_dw_pixel_records(p, C, base, inner, n_taps, wp, out, window);
    }
#endif
}
NN2C_INLINE void nn2c_dw_pixel(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o,
                               int32_t C, uintptr_t base, const intptr_t *taps, int32_t n_taps, const int8_t *filter,
                               int8_t *out, const nn2c_dw_window_t *window) {
    if (p->records) {
        nn2c_dw_run_records(p, C, base, 0, 1, taps, n_taps, window, filter, out);
        return;
    }
    const nn2c_simd_word_t *wp = (const nn2c_simd_word_t *)(const void *)filter;
    (void)wp; /* (every path left out) */
#if !defined(NN2C_OMIT_DSP_DW_ARRAYS) /* nn2c_config.h: some layer reads the output stage from arrays */
    const int narrow = o->lo > -128 || o->hi < 127;
    int32_t c = 0;
    if (window->right && !narrow) { /* the usual case: straight-line requantisation, one word stored per group */
        const int32_t groups = C >> 2;
        const int32_t *bias = p->bias, *mp = o->multipliers, *shp = o->shifts;
        const int64_t *rp = o->rounding;
        int8_t *const end = out + 4 * groups;
        /* pointers that walk the channels: fewer values for GCC to keep around the assembly */
        for (int8_t *y = out; y != end; y += 4, bias += 4, mp += 4, shp += 4, rp += 8, base += 4) {
            int32_t s[4] = {bias[0], bias[1], bias[2], bias[3]};
            if (window->col) {
                nn2c_dsp_dw_taps3x3(base, window->col, window->row, &wp, s, 0);
            } else {
                nn2c_dsp_dw_taps(base, taps, n_taps, &wp, s, 0);
            }
            nn2c_simd_st32(y, nn2c_dsp_requant4_right(s[0], s[1], s[2], s[3], mp, shp, rp, o->offset));
        }
        c = 4 * groups;
        base -= (uintptr_t)c;
    }
    for (; c + 4 <= C; c += 4) {
        int32_t s[4] = {p->bias[c], p->bias[c + 1], p->bias[c + 2], p->bias[c + 3]};
        nn2c_dsp_dw_taps(base + (uintptr_t)c, taps, n_taps, &wp, s, 0);
        int32_t y0 = nn2c_dsp_requant1(o, c, s[0]), y1 = nn2c_dsp_requant1(o, c + 1, s[1]);
        int32_t y2 = nn2c_dsp_requant1(o, c + 2, s[2]), y3 = nn2c_dsp_requant1(o, c + 3, s[3]);
        if (narrow) {
            y0 = nn2c_dsp_clamp(y0, o->lo, o->hi);
            y1 = nn2c_dsp_clamp(y1, o->lo, o->hi);
            y2 = nn2c_dsp_clamp(y2, o->lo, o->hi);
            y3 = nn2c_dsp_clamp(y3, o->lo, o->hi);
        }
        out[c] = (int8_t)y0;
        out[c + 1] = (int8_t)y1;
        out[c + 2] = (int8_t)y2;
        out[c + 3] = (int8_t)y3;
    }
    if (c < C) { /* the last, partial group */
        const int16_t *w16 = (const int16_t *)(const void *)wp;
        for (int32_t j = 0; c + j < C; ++j) {
            const int32_t acc = nn2c_dsp_dw_partial_sum(w16, 0, base, taps, n_taps, c + j, j, p->bias[c + j]);
            out[c + j] = (int8_t)nn2c_simd_requant(o, acc, c + j);
        }
    }
#else
    (void)o; /* the records hold the output stage */
#endif
}

#elif defined(NN2C_SIMD_MVE)
/* Eight channels [c, c + 8) as int16 lanes: VMULLB / VMULLT multiply the even / odd ones into
 * int32 lanes (per-channel arrays are stored in that order per group of 8: 0 2 4 6 1 3 5 7). */
NN2C_INLINE void nn2c_dw_out8(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o, int32_t c, int32x4_t even,
                              int32x4_t odd, int8_t *out, int32_t n) {
    const int32x4_t zero = vdupq_n_s32(0);
    int16x8_t y;
    if (o->lo == -128 && o->hi == 127) {
        /* the activation range is int8's: saturating narrowing (int32 -> int16 -> int8, the int8
         * values in the low bytes of the int16 lanes VSTRB.16 stores) is the clamp, and the two
         * vectors of limits need no registers (they were spilled to the stack) */
        even = nn2c_mve_requant_unclamped(even, p->multipliers + c, p->shifts + c, o->offset, zero);
        odd = nn2c_mve_requant_unclamped(odd, p->multipliers + c + 4, p->shifts + c + 4, o->offset, zero);
        y = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), even), odd);
        y = vreinterpretq_s16_s8(vqmovnbq_s16(vreinterpretq_s8_s16(y), y));
    } else {
        even = nn2c_mve_requant(even, p->multipliers + c, p->shifts + c, o->offset, o->lo, o->hi);
        odd = nn2c_mve_requant(odd, p->multipliers + c + 4, p->shifts + c + 4, o->offset, o->lo, o->hi);
        y = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), even), odd);
    }
    if (n >= 8) {
        vstrbq_s16(out + c, y);
    } else if (n > 0) {
        vstrbq_p_s16(out + c, y, vctp16q((uint32_t)n));
    }
}

#if defined(NN2C_INLINE_ASM)
/* nn2c_dw_out8 of 8 whole channels for a layer without left shifts (every shift <= 0, checked once
 * per call: window->right), in assembly: the shift is the right shift itself (no VMAX / VSHL / VMIN
 * to split it), the limits are duplicated where they are used. GCC 12 kept the limits and a zero
 * vector on the stack around the C version: 55 instructions per 8 channels measured, 20-25 here. */
NN2C_INLINE void nn2c_dw_out8_right(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o, int32_t c,
                                    int32x4_t even, int32x4_t odd, int8_t *out) {
    const int32_t *mp = p->multipliers + c, *sp = p->shifts + c;
    int8_t *dst = out + c;
    int32x4_t m, s, t;
/* requantise the sums in E by the 4 channels at byte offset OFF of mp / sp: SaturatingRoundingDoubling-
 * HighMul, then RoundingDivideByPOT (VRSHL rounds half up: one less for negative sums), + offset */
#define NN2C_MVE_RQ_RIGHT(E, OFF) \
    "vldrw.u32    %q[m], [%[mp], #" OFF "]\n\t" \
    "vldrw.u32    %q[s], [%[sp], #" OFF "]\n\t" \
    "vqrdmulh.s32 %q[" E "], %q[" E "], %q[m]\n\t" \
    "vand         %q[t], %q[" E "], %q[s]\n\t" \
    "vshr.s32     %q[t], %q[t], #31\n\t" \
    "vqadd.s32    %q[" E "], %q[" E "], %q[t]\n\t" \
    "vrshl.s32    %q[" E "], %q[" E "], %q[s]\n\t" \
    "vadd.i32     %q[" E "], %q[" E "], %[off]\n\t"
    if (o->lo == -128 && o->hi == 127) { /* int8's range: the saturating narrowing clamps */
        __asm__ volatile(
            NN2C_MVE_RQ_RIGHT("e", "0") NN2C_MVE_RQ_RIGHT("o", "16")
            "vqmovnb.s32  %q[t], %q[e]\n\t"
            "vqmovnt.s32  %q[t], %q[o]\n\t"
            "vqmovnb.s16  %q[t], %q[t]\n\t"
            "vstrb.16     %q[t], [%[dst]]\n\t"
            : [e] "+w"(even), [o] "+w"(odd), [m] "=&w"(m), [s] "=&w"(s), [t] "=&w"(t)
            : [mp] "r"(mp), [sp] "r"(sp), [off] "r"(o->offset), [dst] "l"(dst)
            : "memory");
    } else {
        __asm__ volatile(
            NN2C_MVE_RQ_RIGHT("e", "0") NN2C_MVE_RQ_RIGHT("o", "16")
            "vdup.32      %q[t], %[lo]\n\t"
            "vmax.s32     %q[e], %q[e], %q[t]\n\t"
            "vmax.s32     %q[o], %q[o], %q[t]\n\t"
            "vdup.32      %q[t], %[hi]\n\t"
            "vmin.s32     %q[e], %q[e], %q[t]\n\t"
            "vmin.s32     %q[o], %q[o], %q[t]\n\t"
            "vmovnb.i32   %q[t], %q[e]\n\t"
            "vmovnt.i32   %q[t], %q[o]\n\t"
            "vstrb.16     %q[t], [%[dst]]\n\t"
            : [e] "+w"(even), [o] "+w"(odd), [m] "=&w"(m), [s] "=&w"(s), [t] "=&w"(t)
            : [mp] "r"(mp), [sp] "r"(sp), [off] "r"(o->offset), [lo] "r"(o->lo), [hi] "r"(o->hi),
              [dst] "l"(dst)
            : "memory");
    }
#undef NN2C_MVE_RQ_RIGHT
}
#else /* -O0, or NN2C_NO_INLINE_ASM: the C version */
NN2C_INLINE void nn2c_dw_out8_right(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o, int32_t c,
                                    int32x4_t even, int32x4_t odd, int8_t *out) {
    nn2c_dw_out8(p, o, c, even, odd, out, 8);
}
#endif

#if defined(NN2C_INLINE_ASM)
/* The whole groups of 16 channels of a 3x3 window, for a layer without left shifts, in one assembly
 * loop (nn2c_dw_3x3_right): per group the bias, the nine taps unrolled, the requantisation as
 * nn2c_dw_out8_right with the limits always applied. GCC 12, short of vector registers, kept sums
 * and the loop's pointers on the stack around the C (about 290 instructions per group). */
/* a tap of 16 channels at x: 12 instructions */
#define NN2C_MVE_DW_TAP16 \
    "vldrb.s16  %q[a], [%[x]]\n\t" \
    "vldrb.s16  %q[b], [%[wt]], #8\n\t" \
    "vmullb.s16 %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32   %q[e0], %q[e0], %q[t]\n\t" \
    "vmullt.s16 %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32   %q[o0], %q[o0], %q[t]\n\t" \
    "vldrb.s16  %q[a], [%[x], #8]\n\t" \
    "vldrb.s16  %q[b], [%[wt]], #8\n\t" \
    "vmullb.s16 %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32   %q[e1], %q[e1], %q[t]\n\t" \
    "vmullt.s16 %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32   %q[o1], %q[o1], %q[t]\n\t"
#define NN2C_MVE_DW_BIAS16 \
    "vldrw.u32    %q[e0], [%[bias]], #16\n\t" \
    "vldrw.u32    %q[o0], [%[bias]], #16\n\t" \
    "vldrw.u32    %q[e1], [%[bias]], #16\n\t" \
    "vldrw.u32    %q[o1], [%[bias]], #16\n\t"
/* requantise the sums in E by the 4 channels' multipliers in a and shifts in b: SaturatingRounding-
 * DoublingHighMul, then RoundingDivideByPOT (VRSHL rounds half up: one less for negative sums), + the
 * output offset in r */
/* t = -1 in the lanes of E below 0 whose shift (in b) is a right shift; a layer whose every shift is negative
 * (nn2c_dw_window_t.right 2) needs only E's sign: NN2C_MVE_DW_FIX is redefined around its copies */
#define NN2C_MVE_DW_FIX_ANY(E) "vand %q[t], %q[" E "], %q[b]\n\t" "vshr.s32 %q[t], %q[t], #31\n\t"
#define NN2C_MVE_DW_FIX_NEG(E) "vshr.s32 %q[t], %q[" E "], #31\n\t"
#define NN2C_MVE_DW_FIX NN2C_MVE_DW_FIX_ANY
#define NN2C_MVE_DW_RQ(E) \
    "vqrdmulh.s32 %q[" E "], %q[" E "], %q[a]\n\t" \
    NN2C_MVE_DW_FIX(E) \
    "vqadd.s32    %q[" E "], %q[" E "], %q[t]\n\t" \
    "vrshl.s32    %q[" E "], %q[" E "], %q[b]\n\t" \
    "vadd.i32     %q[" E "], %q[" E "], %[r]\n\t"
/* the four sums clamped to the limits of o (a nn2c_simd_out_t), narrowed and stored at the low register
 * P: pixel A's channels 0-7 (e0 / o0), then the next 8 (e1 / o1) */
#define NN2C_MVE_DW_CLAMP4 \
    "ldr          %[r], [%[o], %[lo_at]]\n\t" \
    "vdup.32      %q[t], %[r]\n\t" \
    "vmax.s32     %q[e0], %q[e0], %q[t]\n\t" \
    "vmax.s32     %q[o0], %q[o0], %q[t]\n\t" \
    "vmax.s32     %q[e1], %q[e1], %q[t]\n\t" \
    "vmax.s32     %q[o1], %q[o1], %q[t]\n\t" \
    "ldr          %[r], [%[o], %[hi_at]]\n\t" \
    "vdup.32      %q[t], %[r]\n\t" \
    "vmin.s32     %q[e0], %q[e0], %q[t]\n\t" \
    "vmin.s32     %q[o0], %q[o0], %q[t]\n\t" \
    "vmin.s32     %q[e1], %q[e1], %q[t]\n\t" \
    "vmin.s32     %q[o1], %q[o1], %q[t]\n\t"
#define NN2C_MVE_DW_CLAMP_STORE(P) \
    NN2C_MVE_DW_CLAMP4 \
    "vmovnb.i32   %q[a], %q[e0]\n\t" \
    "vmovnt.i32   %q[a], %q[o0]\n\t" \
    "vstrb.16     %q[a], [%[" P "]], #8\n\t" \
    "vmovnb.i32   %q[b], %q[e1]\n\t" \
    "vmovnt.i32   %q[b], %q[o1]\n\t" \
    "vstrb.16     %q[b], [%[" P "]], #8\n\t"
/* the four sums saturated to int8 (int32 -> int16 -> int8: the whole clamp when o's range is int8's),
 * stored as NN2C_MVE_DW_CLAMP_STORE does: 8 instructions instead of 18 */
#define NN2C_MVE_DW_SAT_STORE(P) \
    "vqmovnb.s32  %q[a], %q[e0]\n\t" \
    "vqmovnt.s32  %q[a], %q[o0]\n\t" \
    "vqmovnb.s16  %q[a], %q[a]\n\t" \
    "vstrb.16     %q[a], [%[" P "]], #8\n\t" \
    "vqmovnb.s32  %q[b], %q[e1]\n\t" \
    "vqmovnt.s32  %q[b], %q[o1]\n\t" \
    "vqmovnb.s16  %q[b], %q[b]\n\t" \
    "vstrb.16     %q[b], [%[" P "]], #8\n\t"
/* o and the offsets of its output offset, limits and full-range flag (asm takes at most 30 operands: the
 * arrays' offsets are only where they are read from o) */
#define NN2C_MVE_DW_OUT_FIELDS \
    [o] "r"(o), [off_at] "i"(offsetof(nn2c_simd_out_t, offset)), [lo_at] "i"(offsetof(nn2c_simd_out_t, lo)), \
    [hi_at] "i"(offsetof(nn2c_simd_out_t, hi)), [full_at] "i"(offsetof(nn2c_simd_out_t, full))
/* requantise the group's 16 sums (multipliers and shifts walked by mp / sp), clamp, store, next group; the
 * usual full range falls through to the loop's end, the clamp is out of line (2 instructions a group fewer
 * than an if-else) */
#define NN2C_MVE_DW_OUT16 \
    "ldr          %[r], [%[o], %[off_at]]\n\t" \
    NN2C_MVE_DW_RQ_NEXT("e0") NN2C_MVE_DW_RQ_NEXT("o0") NN2C_MVE_DW_RQ_NEXT("e1") NN2C_MVE_DW_RQ_NEXT("o1") \
    "ldr          %[r], [%[o], %[full_at]]\n\t" \
    "cbz          %[r], 5f\n\t" \
    NN2C_MVE_DW_SAT_STORE("dst") \
    "6:\n\t" \
    "subs         %[k], %[k], #1\n\t" \
    "bne          1b\n\t" \
    "b            7f\n" \
    "5:\n\t" \
    NN2C_MVE_DW_CLAMP_STORE("dst") \
    "b            6b\n" \
    "7:\n\t"
#define NN2C_MVE_DW_RQ_NEXT(E) \
    "vldrw.u32    %q[a], [%[mp]], #16\n\t" \
    "vldrw.u32    %q[b], [%[sp]], #16\n\t" \
    NN2C_MVE_DW_RQ(E)
#define NN2C_MVE_DW_OPERANDS \
    [e0] "=&w"(e0), [o0] "=&w"(o0), [e1] "=&w"(e1), [o1] "=&w"(o1), [a] "=&w"(a), [b] "=&w"(b), \
    [t] "=&w"(t), [wt] "+l"(wt), [x] "=&l"(x), [xg] "+r"(xg), [dst] "+l"(dst), [bias] "+r"(bias), \
    [mp] "+r"(mp), [sp] "+r"(sp), [k] "+r"(k), [r] "=&l"(r)

/* The whole groups of 16 channels of one window. Inside the image (window->col != 0, a square 3x3, 5x5 or
 * 7x7 filter) each tap is a column step from the last, or a row step from a row's last tap: a 3x3 window
 * unrolled (13 instructions per tap), 5x5 and 7x7 a loop over the rows (a row's taps unrolled: 13 per tap,
 * 3 more per row). Over the border (or another filter size) each tap's offset comes from the table: 9 taps
 * unrolled (14 per tap), other counts a loop (16 per tap). One copy, called: the calls cost kws's depthwise
 * layers 0.4% more instructions than inlined copies (measured in QEMU), and each loop is a kilobyte of code. */
__attribute__((noinline)) static void nn2c_dw_groups_right(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o,
                                                           int32_t groups, uintptr_t base, const intptr_t *taps,
                                                           int32_t n_taps, const nn2c_dw_window_t *window,
                                                           const int8_t *wt, int8_t *out) {
    const int8_t *xg = (const int8_t *)base, *x;
    const int32_t *bias = p->bias, *mp = p->multipliers, *sp = p->shifts;
    int8_t *dst = out;
    int32_t k = groups, r;
    int32x4_t e0, o0, e1, o1, a, b, t;
#define NN2C_MVE_DW_COL "add %[x], %[x], %[col]\n\t"
#define NN2C_MVE_DW_ROW3 NN2C_MVE_DW_TAP16 NN2C_MVE_DW_COL NN2C_MVE_DW_TAP16 NN2C_MVE_DW_COL NN2C_MVE_DW_TAP16
#define NN2C_MVE_DW_ROW5 NN2C_MVE_DW_ROW3 NN2C_MVE_DW_COL NN2C_MVE_DW_TAP16 NN2C_MVE_DW_COL NN2C_MVE_DW_TAP16
#define NN2C_MVE_DW_ROW7 NN2C_MVE_DW_ROW5 NN2C_MVE_DW_COL NN2C_MVE_DW_TAP16 NN2C_MVE_DW_COL NN2C_MVE_DW_TAP16
/* the rows of a window inside the image, a loop (the row count in r, free until the output stage) */
#define NN2C_MVE_DW_ROWS(N, ROW) \
    "1:\n\t" \
    NN2C_MVE_DW_BIAS16 \
    "mov          %[x], %[xg]\n\t" \
    "movs         %[r], #" N "\n" \
    "2:\n\t" \
    ROW "add %[x], %[x], %[back]\n\t" \
    "subs         %[r], %[r], #1\n\t" \
    "bne          2b\n\t" \
    "add          %[xg], %[xg], #16\n\t" \
    NN2C_MVE_DW_OUT16
#define NN2C_MVE_DW_ASM_3X3_STEPS \
    __asm__ volatile( \
        "1:\n\t" \
        NN2C_MVE_DW_BIAS16 \
        "mov          %[x], %[xg]\n\t" \
        NN2C_MVE_DW_ROW3 "add %[x], %[x], %[back]\n\t" \
        NN2C_MVE_DW_ROW3 "add %[x], %[x], %[back]\n\t" \
        NN2C_MVE_DW_ROW3 \
        "add          %[xg], %[xg], #16\n\t" \
        NN2C_MVE_DW_OUT16 \
        : NN2C_MVE_DW_OPERANDS \
        : [col] "r"(col), [back] "r"(back), NN2C_MVE_DW_OUT_FIELDS \
        : "cc", "memory")
    if (window->col != 0 && n_taps == 9) {
        const int32_t col = window->col, back = window->row - 2 * window->col;
        if (window->right == 2) { /* every shift negative: the rounding's fix from the sum's sign alone */
#undef NN2C_MVE_DW_FIX
#define NN2C_MVE_DW_FIX NN2C_MVE_DW_FIX_NEG
            NN2C_MVE_DW_ASM_3X3_STEPS;
#undef NN2C_MVE_DW_FIX
#define NN2C_MVE_DW_FIX NN2C_MVE_DW_FIX_ANY
        } else {
            NN2C_MVE_DW_ASM_3X3_STEPS;
        }
#undef NN2C_MVE_DW_ASM_3X3_STEPS
#if !defined(NN2C_OMIT_MVE_DW_ANY) /* nn2c_config.h: some layer's filter is not 3x3 */
    } else if (window->col != 0 && n_taps == 25) {
        const int32_t col = window->col, back = window->row - 4 * window->col;
        __asm__ volatile(NN2C_MVE_DW_ROWS("5", NN2C_MVE_DW_ROW5)
                         : NN2C_MVE_DW_OPERANDS
                         : [col] "r"(col), [back] "r"(back), NN2C_MVE_DW_OUT_FIELDS
                         : "cc", "memory");
    } else if (window->col != 0) { /* 7x7 (nn2c_dw_s8_simd sets col only for these three) */
        const int32_t col = window->col, back = window->row - 6 * window->col;
        __asm__ volatile(NN2C_MVE_DW_ROWS("7", NN2C_MVE_DW_ROW7)
                         : NN2C_MVE_DW_OPERANDS
                         : [col] "r"(col), [back] "r"(back), NN2C_MVE_DW_OUT_FIELDS
                         : "cc", "memory");
#endif
    } else if (n_taps == 9) {
        const intptr_t *tp = taps;
#define NN2C_MVE_DW_TABLE_TAP "ldr %[x], [%[tp]], #4\n\t" "add %[x], %[x], %[xg]\n\t" NN2C_MVE_DW_TAP16
#define NN2C_MVE_DW_TABLE_ROW3 NN2C_MVE_DW_TABLE_TAP NN2C_MVE_DW_TABLE_TAP NN2C_MVE_DW_TABLE_TAP
#define NN2C_MVE_DW_ASM_3X3_TABLE \
    __asm__ volatile( \
        "1:\n\t" \
        NN2C_MVE_DW_BIAS16 \
        NN2C_MVE_DW_TABLE_ROW3 NN2C_MVE_DW_TABLE_ROW3 NN2C_MVE_DW_TABLE_ROW3 \
        "sub          %[tp], %[tp], #36\n\t" \
        "add          %[xg], %[xg], #16\n\t" \
        NN2C_MVE_DW_OUT16 \
        : NN2C_MVE_DW_OPERANDS, [tp] "+r"(tp) \
        : NN2C_MVE_DW_OUT_FIELDS \
        : "cc", "memory")
        if (window->right == 2) {
#undef NN2C_MVE_DW_FIX
#define NN2C_MVE_DW_FIX NN2C_MVE_DW_FIX_NEG
            NN2C_MVE_DW_ASM_3X3_TABLE;
#undef NN2C_MVE_DW_FIX
#define NN2C_MVE_DW_FIX NN2C_MVE_DW_FIX_ANY
        } else {
            NN2C_MVE_DW_ASM_3X3_TABLE;
        }
#undef NN2C_MVE_DW_ASM_3X3_TABLE
#undef NN2C_MVE_DW_TABLE_ROW3
#if !defined(NN2C_OMIT_MVE_DW_ANY)
    } else { /* any tap count: a loop over the table (the count in r, free until the output stage); always
              * clamped (asm takes at most 30 operands: no room for the full-range flag's offset) */
        const intptr_t *tp = taps;
        __asm__ volatile(
            "1:\n\t"
            NN2C_MVE_DW_BIAS16
            "mov          %[r], %[nt]\n"
            "2:\n\t"
            NN2C_MVE_DW_TABLE_TAP
            "subs         %[r], %[r], #1\n\t"
            "bne          2b\n\t"
            "sub.w        %[tp], %[tp], %[nt], lsl #2\n\t"
            "add          %[xg], %[xg], #16\n\t"
            "ldr          %[r], [%[o], %[off_at]]\n\t"
            NN2C_MVE_DW_RQ_NEXT("e0") NN2C_MVE_DW_RQ_NEXT("o0") NN2C_MVE_DW_RQ_NEXT("e1") NN2C_MVE_DW_RQ_NEXT("o1")
            NN2C_MVE_DW_CLAMP_STORE("dst")
            "subs         %[k], %[k], #1\n\t"
            "bne          1b\n\t"
            : NN2C_MVE_DW_OPERANDS, [tp] "+r"(tp)
            : [nt] "r"(n_taps), [o] "r"(o), [off_at] "i"(offsetof(nn2c_simd_out_t, offset)),
              [lo_at] "i"(offsetof(nn2c_simd_out_t, lo)), [hi_at] "i"(offsetof(nn2c_simd_out_t, hi))
            : "cc", "memory");
#endif
    }
#undef NN2C_MVE_DW_TABLE_TAP
#undef NN2C_MVE_DW_ROWS
#undef NN2C_MVE_DW_ROW7
#undef NN2C_MVE_DW_ROW5
#undef NN2C_MVE_DW_ROW3
#undef NN2C_MVE_DW_COL
}

#if !defined(NN2C_OMIT_MVE_DW_ANY) /* nn2c_config.h: some layer has a last, partial group of 16 */
/* The last, partial group of n (1 to 15) channels at channel c of one window (a pruned layer's; filter and
 * per-channel arrays zero-padded to the whole group): the input loads and the stores predicated to the n
 * channels, so that nothing past the pixel's channels is read or written. Above 8 channels the first half is
 * whole and only the second half's loads and stores are predicated (VPST, P0 = VCTP.16 n - 8); up to 8, only
 * the first half is computed. The taps of a 3x3 window inside the image by column and row steps (window->col),
 * else from the table in a loop. A 14-channel 3x3 layer took 407 instructions per pixel in the C path's
 * groups of 8 (QEMU). */
/* a tap at x, above 8 channels (13 instructions) and up to 8 (7) */
#define NN2C_MVE_DW_LAST_TAP_HI \
    "vldrb.s16    %q[a], [%[x]]\n\t" \
    "vldrb.s16    %q[b], [%[wt]], #8\n\t" \
    "vmullb.s16   %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32     %q[e0], %q[e0], %q[t]\n\t" \
    "vmullt.s16   %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32     %q[o0], %q[o0], %q[t]\n\t" \
    "vpst\n\t" \
    "vldrbt.s16   %q[a], [%[x], #8]\n\t" \
    "vldrb.s16    %q[b], [%[wt]], #8\n\t" \
    "vmullb.s16   %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32     %q[e1], %q[e1], %q[t]\n\t" \
    "vmullt.s16   %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32     %q[o1], %q[o1], %q[t]\n\t"
#define NN2C_MVE_DW_LAST_TAP_LO \
    "vpst\n\t" \
    "vldrbt.s16   %q[a], [%[x]]\n\t" \
    "vldrb.s16    %q[b], [%[wt]], #16\n\t" /* (the group's second half: zero) */ \
    "vmullb.s16   %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32     %q[e0], %q[e0], %q[t]\n\t" \
    "vmullt.s16   %q[t], %q[a], %q[b]\n\t" \
    "vadd.i32     %q[o0], %q[o0], %q[t]\n\t"
/* the taps from the table (the count in k), or the nine of a 3x3 window inside the image */
#define NN2C_MVE_DW_LAST_TABLE(TAP) \
    "1:\n\t" \
    "ldr          %[x], [%[tp]], #4\n\t" \
    "add          %[x], %[x], %[xg]\n\t" \
    TAP \
    "subs         %[k], %[k], #1\n\t" \
    "bne          1b\n\t"
#define NN2C_MVE_DW_LAST_ROW3(TAP) TAP "add %[x], %[x], %[col]\n\t" TAP "add %[x], %[x], %[col]\n\t" TAP
#define NN2C_MVE_DW_LAST_STEPS(TAP) \
    "mov          %[x], %[xg]\n\t" \
    NN2C_MVE_DW_LAST_ROW3(TAP) "add %[x], %[x], %[back]\n\t" \
    NN2C_MVE_DW_LAST_ROW3(TAP) "add %[x], %[x], %[back]\n\t" \
    NN2C_MVE_DW_LAST_ROW3(TAP)
/* above 8 channels: the bias, TAPS, the 16 sums' output stage and the predicated store of the second half */
#define NN2C_MVE_DW_LAST_HI(TAPS) \
    "vctp.16      %[n]\n\t" \
    NN2C_MVE_DW_BIAS16 \
    TAPS \
    "ldr          %[r], [%[o], %[off_at]]\n\t" \
    NN2C_MVE_DW_RQ_NEXT("e0") NN2C_MVE_DW_RQ_NEXT("o0") NN2C_MVE_DW_RQ_NEXT("e1") NN2C_MVE_DW_RQ_NEXT("o1") \
    "ldr          %[r], [%[o], %[full_at]]\n\t" \
    "cbz          %[r], 5f\n\t" \
    "vqmovnb.s32  %q[a], %q[e0]\n\t" \
    "vqmovnt.s32  %q[a], %q[o0]\n\t" \
    "vqmovnb.s16  %q[a], %q[a]\n\t" \
    "vqmovnb.s32  %q[b], %q[e1]\n\t" \
    "vqmovnt.s32  %q[b], %q[o1]\n\t" \
    "vqmovnb.s16  %q[b], %q[b]\n\t" \
    "b            6f\n" \
    "5:\n\t" \
    NN2C_MVE_DW_CLAMP4 \
    "vmovnb.i32   %q[a], %q[e0]\n\t" \
    "vmovnt.i32   %q[a], %q[o0]\n\t" \
    "vmovnb.i32   %q[b], %q[e1]\n\t" \
    "vmovnt.i32   %q[b], %q[o1]\n" \
    "6:\n\t" \
    "vstrb.16     %q[a], [%[dst]]\n\t" \
    "vpst\n\t" \
    "vstrbt.16    %q[b], [%[dst], #8]\n\t"
/* up to 8 channels: the first half's bias, TAPS, its output stage and predicated store */
#define NN2C_MVE_DW_LAST_LO(TAPS) \
    "vctp.16      %[n]\n\t" \
    "vldrw.u32    %q[e0], [%[bias]]\n\t" \
    "vldrw.u32    %q[o0], [%[bias], #16]\n\t" \
    TAPS \
    "ldr          %[r], [%[o], %[off_at]]\n\t" \
    NN2C_MVE_DW_RQ_NEXT("e0") NN2C_MVE_DW_RQ_NEXT("o0") \
    "ldr          %[r], [%[o], %[full_at]]\n\t" \
    "cbz          %[r], 5f\n\t" \
    "vqmovnb.s32  %q[a], %q[e0]\n\t" \
    "vqmovnt.s32  %q[a], %q[o0]\n\t" \
    "vqmovnb.s16  %q[a], %q[a]\n\t" \
    "b            6f\n" \
    "5:\n\t" \
    "ldr          %[r], [%[o], %[lo_at]]\n\t" \
    "vdup.32      %q[t], %[r]\n\t" \
    "vmax.s32     %q[e0], %q[e0], %q[t]\n\t" \
    "vmax.s32     %q[o0], %q[o0], %q[t]\n\t" \
    "ldr          %[r], [%[o], %[hi_at]]\n\t" \
    "vdup.32      %q[t], %[r]\n\t" \
    "vmin.s32     %q[e0], %q[e0], %q[t]\n\t" \
    "vmin.s32     %q[o0], %q[o0], %q[t]\n\t" \
    "vmovnb.i32   %q[a], %q[e0]\n\t" \
    "vmovnt.i32   %q[a], %q[o0]\n" \
    "6:\n\t" \
    "vpst\n\t" \
    "vstrbt.16    %q[a], [%[dst]]\n\t"
__attribute__((noinline)) static void nn2c_dw_last_right(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o,
                                                         int32_t c, int32_t n, uintptr_t base, const intptr_t *taps,
                                                         int32_t n_taps, const nn2c_dw_window_t *window,
                                                         const int8_t *wt, int8_t *out) {
    const int8_t *xg = (const int8_t *)(base + (uintptr_t)c), *x;
    const int32_t *bias = p->bias + c, *mp = p->multipliers + c, *sp = p->shifts + c;
    int8_t *const dst = out + c;
    int32_t r;
    int32x4_t e0, o0, e1, o1, a, b, t;
/* (the pointers that stay put are inputs: asm takes at most 30 operands, an in-out one counts twice) */
#define NN2C_MVE_DW_LAST_OPERANDS \
    [e0] "=&w"(e0), [o0] "=&w"(o0), [e1] "=&w"(e1), [o1] "=&w"(o1), [a] "=&w"(a), [b] "=&w"(b), [t] "=&w"(t), \
    [wt] "+l"(wt), [x] "=&l"(x), [bias] "+r"(bias), [mp] "+r"(mp), [sp] "+r"(sp), [r] "=&l"(r)
#define NN2C_MVE_DW_LAST_INPUTS [xg] "r"(xg), [dst] "l"(dst)
    if (window->col != 0 && n_taps == 9) {
        const int32_t col = window->col, back = window->row - 2 * window->col;
        if (n > 8) {
            __asm__ volatile(NN2C_MVE_DW_LAST_HI(NN2C_MVE_DW_LAST_STEPS(NN2C_MVE_DW_LAST_TAP_HI))
                             : NN2C_MVE_DW_LAST_OPERANDS
                             : [n] "r"(n - 8), [col] "r"(col), [back] "r"(back), NN2C_MVE_DW_LAST_INPUTS,
                               NN2C_MVE_DW_OUT_FIELDS
                             : "cc", "memory");
        } else {
            __asm__ volatile(NN2C_MVE_DW_LAST_LO(NN2C_MVE_DW_LAST_STEPS(NN2C_MVE_DW_LAST_TAP_LO))
                             : NN2C_MVE_DW_LAST_OPERANDS
                             : [n] "r"(n), [col] "r"(col), [back] "r"(back), NN2C_MVE_DW_LAST_INPUTS,
                               NN2C_MVE_DW_OUT_FIELDS
                             : "cc", "memory");
        }
        return;
    }
    const intptr_t *tp = taps;
    int32_t k = n_taps;
    if (n > 8) {
        __asm__ volatile(NN2C_MVE_DW_LAST_HI(NN2C_MVE_DW_LAST_TABLE(NN2C_MVE_DW_LAST_TAP_HI))
                         : NN2C_MVE_DW_LAST_OPERANDS, [tp] "+r"(tp), [k] "+r"(k)
                         : [n] "r"(n - 8), NN2C_MVE_DW_LAST_INPUTS, NN2C_MVE_DW_OUT_FIELDS
                         : "cc", "memory");
    } else {
        __asm__ volatile(NN2C_MVE_DW_LAST_LO(NN2C_MVE_DW_LAST_TABLE(NN2C_MVE_DW_LAST_TAP_LO))
                         : NN2C_MVE_DW_LAST_OPERANDS, [tp] "+r"(tp), [k] "+r"(k)
                         : [n] "r"(n), NN2C_MVE_DW_LAST_INPUTS, NN2C_MVE_DW_OUT_FIELDS
                         : "cc", "memory");
    }
#undef NN2C_MVE_DW_LAST_INPUTS
#undef NN2C_MVE_DW_LAST_OPERANDS
}
#undef NN2C_MVE_DW_LAST_LO
#undef NN2C_MVE_DW_LAST_HI
#undef NN2C_MVE_DW_LAST_STEPS
#undef NN2C_MVE_DW_LAST_ROW3
#undef NN2C_MVE_DW_LAST_TABLE
#undef NN2C_MVE_DW_LAST_TAP_LO
#undef NN2C_MVE_DW_LAST_TAP_HI

#endif

/* All channels of one window of a layer without left shifts: the whole groups, then a partial one. */
NN2C_INLINE void nn2c_dw_window_right(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o, int32_t C,
                                      uintptr_t base, const intptr_t *taps, int32_t n_taps,
                                      const nn2c_dw_window_t *window, const int8_t *filter, int8_t *out) {
    const int32_t groups = C >> 4, last = C & 15;
    if (groups > 0) nn2c_dw_groups_right(p, o, groups, base, taps, n_taps, window, filter, out);
#if !defined(NN2C_OMIT_MVE_DW_ANY)
    if (last > 0) {
        nn2c_dw_last_right(p, o, C - last, last, base, taps, n_taps, window, filter + (C - last) * n_taps, out);
    }
#else
    (void)last; /* (nn2c_dw_s8_simd's assembly route takes only whole groups then) */
#endif
}

/* count neighbouring output pixels (windows `step` bytes apart, all inside the image; inner: their tap
 * offsets) by nn2c_dw_window_right, in a loop of their own: the pixel loop of nn2c_dw_s8_simd keeps some
 * 25 values and spent about 90 instructions a pixel reloading them around the assembly (a window over
 * the border is one call of nn2c_dw_window_right from that loop). */
__attribute__((noinline)) static void nn2c_dw_run_right(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o,
                                                        int32_t C, uintptr_t base, int32_t step, int32_t count,
                                                        const intptr_t *inner, int32_t n_taps,
                                                        const nn2c_dw_window_t *window, const int8_t *filter,
                                                        int8_t *out) {
    for (; count > 0; --count, base += (uintptr_t)(intptr_t)step, out += C) {
        nn2c_dw_window_right(p, o, C, base, inner, n_taps, window, filter, out);
    }
}

/* Two neighbouring output pixels of a layer of exactly 8 channels, both 3x3 windows inside the image,
 * without left shifts: the 16 lanes of nn2c_dw_3x3_right are the 8 channels of each pixel (the second
 * window `step` bytes after the first), a tap's 8 weights loaded once for both; the bias, multipliers
 * and shifts too (13 instructions per tap; a 7x6 VALID layer took 450 instructions per pixel pair
 * one pixel at a time in C, 260 so, measured in QEMU). */
NN2C_INLINE void nn2c_dw_3x3_pair8_right(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o, uintptr_t base,
                                         int32_t step, const nn2c_dw_window_t *window, const int8_t *wt,
                                         int8_t *out) {
    const int8_t *xa = (const int8_t *)base, *xb = (const int8_t *)(base + (uintptr_t)(intptr_t)step);
    const int32_t col = window->col, back = window->row - 2 * window->col;
    int32x4_t e0, o0, e1, o1, a, b, t, w;
    int32_t r;
/* pixel A's sums in e0 / o0, pixel B's in e1 / o1 (channels 0 2 4 6 / 1 3 5 7) */
#define NN2C_MVE_DW_PAIR_TAP \
    "vldrb.s16  %q[w], [%[wt]], #16\n\t" /* (the group's second half: zero) */ \
    "vldrb.s16  %q[a], [%[xa]]\n\t" \
    "vmullb.s16 %q[t], %q[a], %q[w]\n\t" \
    "vadd.i32   %q[e0], %q[e0], %q[t]\n\t" \
    "vmullt.s16 %q[t], %q[a], %q[w]\n\t" \
    "vadd.i32   %q[o0], %q[o0], %q[t]\n\t" \
    "vldrb.s16  %q[b], [%[xb]]\n\t" \
    "vmullb.s16 %q[t], %q[b], %q[w]\n\t" \
    "vadd.i32   %q[e1], %q[e1], %q[t]\n\t" \
    "vmullt.s16 %q[t], %q[b], %q[w]\n\t" \
    "vadd.i32   %q[o1], %q[o1], %q[t]\n\t"
#define NN2C_MVE_DW_PAIR_NEXT(STEP) "add %[xa], %[xa], %[" STEP "]\n\t" "add %[xb], %[xb], %[" STEP "]\n\t"
#define NN2C_MVE_DW_PAIR_ROW3 \
    NN2C_MVE_DW_PAIR_TAP NN2C_MVE_DW_PAIR_NEXT("col") NN2C_MVE_DW_PAIR_TAP NN2C_MVE_DW_PAIR_NEXT("col") \
    NN2C_MVE_DW_PAIR_TAP
/* the multipliers (in a) and shifts (in b) of the 4 channels at byte offset OFF, from o's arrays, and
 * the output offset (in r) */
#define NN2C_MVE_DW_PAIR_LOAD(OFF) \
    "ldr          %[r], [%[o], %[mp_at]]\n\t" \
    "vldrw.u32    %q[a], [%[r], #" OFF "]\n\t" \
    "ldr          %[r], [%[o], %[sp_at]]\n\t" \
    "vldrw.u32    %q[b], [%[r], #" OFF "]\n\t" \
    "ldr          %[r], [%[o], %[off_at]]\n\t"
    __asm__ volatile(
        "vldrw.u32    %q[e0], [%[bias]]\n\t"
        "vldrw.u32    %q[o0], [%[bias], #16]\n\t"
        "vmov         %q[e1], %q[e0]\n\t"
        "vmov         %q[o1], %q[o0]\n\t"
        NN2C_MVE_DW_PAIR_ROW3 NN2C_MVE_DW_PAIR_NEXT("back")
        NN2C_MVE_DW_PAIR_ROW3 NN2C_MVE_DW_PAIR_NEXT("back")
        NN2C_MVE_DW_PAIR_ROW3
        NN2C_MVE_DW_PAIR_LOAD("0") NN2C_MVE_DW_RQ("e0") NN2C_MVE_DW_RQ("e1")
        NN2C_MVE_DW_PAIR_LOAD("16") NN2C_MVE_DW_RQ("o0") NN2C_MVE_DW_RQ("o1")
        "mov          %[xa], %[dst]\n\t" /* (the narrowing store needs a low register) */
        NN2C_MVE_DW_CLAMP_STORE("xa")
        : [e0] "=&w"(e0), [o0] "=&w"(o0), [e1] "=&w"(e1), [o1] "=&w"(o1), [a] "=&w"(a), [b] "=&w"(b),
          [t] "=&w"(t), [w] "=&w"(w), [wt] "+l"(wt), [xa] "+l"(xa), [xb] "+l"(xb), [r] "=&r"(r)
        : [bias] "r"(p->bias), [col] "r"(col), [back] "r"(back), [dst] "r"(out), NN2C_MVE_DW_OUT_FIELDS,
          [mp_at] "i"(offsetof(nn2c_simd_out_t, multipliers)), [sp_at] "i"(offsetof(nn2c_simd_out_t, shifts))
        : "memory");
#undef NN2C_MVE_DW_PAIR_ROW3
#undef NN2C_MVE_DW_PAIR_NEXT
#undef NN2C_MVE_DW_PAIR_TAP
}
#undef NN2C_MVE_DW_OPERANDS
#undef NN2C_MVE_DW_RQ_NEXT
#undef NN2C_MVE_DW_OUT16
#undef NN2C_MVE_DW_OUT_FIELDS
#undef NN2C_MVE_DW_CLAMP_STORE
#undef NN2C_MVE_DW_CLAMP4
#undef NN2C_MVE_DW_SAT_STORE
#undef NN2C_MVE_DW_RQ
#undef NN2C_MVE_DW_FIX
#undef NN2C_MVE_DW_FIX_NEG
#undef NN2C_MVE_DW_FIX_ANY
#undef NN2C_MVE_DW_BIAS16
#undef NN2C_MVE_DW_TAP16
#endif

/* A layer with left shifts (or built without the inline assembly): 16 channels per step (in assembly, one
 * tap pointer load per 16 channels: 16 instructions per tap), the output stage in C; the last, partial
 * group with predicated (zeroing) loads and stores. */
NN2C_INLINE void nn2c_dw_pixel(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o,
                               int32_t C, uintptr_t base, const intptr_t *taps, int32_t n_taps, const int8_t *filter,
                               int8_t *out, const nn2c_dw_window_t *window) {
    int32_t c = 0;
    for (; c + 16 <= C; c += 16, filter += 16 * n_taps) {
        int32x4_t e0 = vldrwq_s32(p->bias + c), o0 = vldrwq_s32(p->bias + c + 4);
        int32x4_t e1 = vldrwq_s32(p->bias + c + 8), o1 = vldrwq_s32(p->bias + c + 12);
#if defined(NN2C_INLINE_ASM)
        {
            /* in assembly: GCC 12 loads both halves first and, short of vector registers, keeps one
             * sum on the stack (18 instructions per tap measured, 16 here) */
            const int8_t *wt = filter;
            const intptr_t *tp = taps;
            const uintptr_t bc = base + (uintptr_t)c;
            const int8_t *x;
            int32_t k = n_taps;
            int16x8_t xv, wv;
            int32x4_t prod;
            __asm__ volatile(
                "1:\n\t"
                "ldr        %[x], [%[tp]], #4\n\t"
                "add        %[x], %[x], %[bc]\n\t"
                "vldrb.s16  %q[xv], [%[x]]\n\t"
                "vldrb.s16  %q[wv], [%[wt]], #8\n\t"
                "vmullb.s16 %q[prod], %q[xv], %q[wv]\n\t"
                "vadd.i32   %q[e0], %q[e0], %q[prod]\n\t"
                "vmullt.s16 %q[prod], %q[xv], %q[wv]\n\t"
                "vadd.i32   %q[o0], %q[o0], %q[prod]\n\t"
                "vldrb.s16  %q[xv], [%[x], #8]\n\t"
                "vldrb.s16  %q[wv], [%[wt]], #8\n\t"
                "vmullb.s16 %q[prod], %q[xv], %q[wv]\n\t"
                "vadd.i32   %q[e1], %q[e1], %q[prod]\n\t"
                "vmullt.s16 %q[prod], %q[xv], %q[wv]\n\t"
                "vadd.i32   %q[o1], %q[o1], %q[prod]\n\t"
                "subs       %[k], %[k], #1\n\t"
                "bne        1b\n\t"
                : [e0] "+w"(e0), [o0] "+w"(o0), [e1] "+w"(e1), [o1] "+w"(o1), [tp] "+r"(tp), [wt] "+l"(wt),
                  [k] "+r"(k), [x] "=&l"(x), [xv] "=&w"(xv), [wv] "=&w"(wv), [prod] "=&w"(prod)
                : [bc] "r"(bc)
                : "cc", "memory");
        }
#else
        for (int32_t t = 0; t < n_taps; ++t) {
            const int8_t *x = nn2c_dw_tap(base, taps[t]) + c, *w = filter + 16 * t;
            int16x8_t xv = vldrbq_s16(x), wv = vldrbq_s16(w);
            e0 = vaddq_s32(e0, vmullbq_int_s16(xv, wv));
            o0 = vaddq_s32(o0, vmulltq_int_s16(xv, wv));
            xv = vldrbq_s16(x + 8);
            wv = vldrbq_s16(w + 8);
            e1 = vaddq_s32(e1, vmullbq_int_s16(xv, wv));
            o1 = vaddq_s32(o1, vmulltq_int_s16(xv, wv));
        }
#endif
        if (window->right) {
            nn2c_dw_out8_right(p, o, c, e0, o0, out);
            nn2c_dw_out8_right(p, o, c + 8, e1, o1, out);
        } else {
            nn2c_dw_out8(p, o, c, e0, o0, out, 8);
            nn2c_dw_out8(p, o, c + 8, e1, o1, out, 8);
        }
    }
    if (c < C) { /* the last, partial group: its filter and per-channel arrays are zero-padded to 16 */
        const int32_t n = C - c;
        const mve_pred16_t first = vctp16q((uint32_t)(n < 8 ? n : 8)), second = vctp16q((uint32_t)(n > 8 ? n - 8 : 0));
        int32x4_t e0 = vldrwq_s32(p->bias + c), o0 = vldrwq_s32(p->bias + c + 4);
        int32x4_t e1 = vldrwq_s32(p->bias + c + 8), o1 = vldrwq_s32(p->bias + c + 12);
        for (int32_t t = 0; t < n_taps; ++t) {
            const int8_t *x = nn2c_dw_tap(base, taps[t]) + c, *w = filter + 16 * t;
            int16x8_t xv = vldrbq_z_s16(x, first), wv = vldrbq_s16(w);
            e0 = vaddq_s32(e0, vmullbq_int_s16(xv, wv));
            o0 = vaddq_s32(o0, vmulltq_int_s16(xv, wv));
            if (n > 8) {
                xv = vldrbq_z_s16(x + 8, second);
                wv = vldrbq_s16(w + 8);
                e1 = vaddq_s32(e1, vmullbq_int_s16(xv, wv));
                o1 = vaddq_s32(o1, vmulltq_int_s16(xv, wv));
            }
        }
        nn2c_dw_out8(p, o, c, e0, o0, out, n);
        nn2c_dw_out8(p, o, c + 8, e1, o1, out, n - 8);
    }
}
#else
/* Portable: either layout (hosts run the Cortex-M layouts through it). */
NN2C_INLINE void nn2c_dw_pixel(const nn2c_dw_simd_params_t *p, const nn2c_simd_out_t *o,
                               int32_t C, uintptr_t base, const intptr_t *taps, int32_t n_taps, const int8_t *filter,
                               int8_t *out, const nn2c_dw_window_t *window) {
    (void)window; /* (the DSP kernel's requantisation and 3x3 reads) */
    const int32_t L = p->lanes;
    for (int32_t c = 0; c < C; ++c) {
        const int32_t j = c % L, group = c / L;
        /* per-channel arrays: channel order for L = 4, even channels first per 8 for L = 16 */
        const int32_t at = L == 16 ? c - (c & 7) + (c & 1) * 4 + ((c & 7) >> 1) : c;
        const int32_t *record = p->records ? p->records + 16 * (c / 4) : NULL; /* L = 4 */
        uint32_t acc = (uint32_t)(record ? record[c % 4] : p->bias[at]);
        for (int32_t t = 0; t < n_taps; ++t) {
            int32_t w;
            if (L == 4 && p->filter8) { /* int8 in channel order (--optimize size) */
                w = filter[(group * n_taps + t) * 4 + j];
            } else if (L == 4) { /* int16, c0 c2 c1 c3 */
                const int16_t *w16 = (const int16_t *)(const void *)filter;
                w = w16[(group * n_taps + t) * 4 + (j >> 1) + 2 * (j & 1)];
            } else { /* L = 16: groups of 16, the last one zero-padded */
                w = filter[(group * n_taps + t) * 16 + j];
            }
            acc += (uint32_t)((int32_t)nn2c_dw_tap(base, taps[t])[c] * w);
        }
        /* (an int8 filter's sums doubled for the doubled records, as its int16 filter's weights double them) */
        out[c] = (int8_t)(record ? nn2c_record_requant_doubled((int32_t)(acc << (L == 4 && p->filter8)),
                                                               record + 4 + 3 * (c % 4))
                                 : nn2c_simd_requant(o, (int32_t)acc, at));
    }
}
#endif

#if defined(NN2C_SIMD_MVE)
/* The first filter tap (row or column) of a window starting at input coordinate i0 that is inside the
 * image (i0 + k * dilation >= 0), and one past the last (i0 + k * dilation < size, k < taps). */
NN2C_INLINE int32_t nn2c_dw_first_tap(int32_t i0, int32_t dilation) {
    return i0 >= 0 ? 0 : (-i0 + dilation - 1) / dilation;
}

NN2C_INLINE int32_t nn2c_dw_end_tap(int32_t i0, int32_t dilation, int32_t size, int32_t taps) {
    if (i0 >= size) return 0;
    const int32_t end = (size - i0 + dilation - 1) / dilation; /* size - i0 > 0 */
    return end < taps ? end : taps;
}
#endif

#if !defined(NN2C_SIMD_MVE) && !defined(NN2C_OMIT_DSP_DW_PLANES)
/* --- DEPTHWISE_CONV_2D 3x3 at stride 1 over channel planes (nn2c_dw_simd_params_t.band) ---------------------- */

/* A plane row's bytes: the output row's columns (a multiple of 4: the codegen's test) and the window's two more,
 * in whole words (the codegen's dw_plane_pitch computes the same). */
NN2C_INLINE int32_t nn2c_dw_plane_pitch(int32_t out_w) {
    return out_w + 4;
}

/* n bytes (a multiple of 4) at the word-aligned dst set to the 4 bytes of word. (The planes' fill and their halo
 * move are word loops of their own, not nn2c_simd_fill / nn2c_simd_copy with their byte tails: 12,537 fewer
 * instructions on vww_96_int8 at --optimize speed and 136 bytes less code on the Cortex-M4, QEMU.) */
NN2C_INLINE void nn2c_dw_plane_fill(int8_t *dst, int32_t word, int32_t n) {
    int32_t *const d = (int32_t *)(void *)dst;
    for (int32_t k = 0; k < n / 4; ++k) {
        d[k] = word;
        NN2C_LOOP_BARRIER();
    }
}

/* Pixels [0, n) (n a multiple of 4) of four channels at s (pixels C bytes apart) into the rows at d, d + pb,
 * d + 2 pb and d + 3 pb: per four pixels four word loads, a 4 x 4 byte transpose, four word stores. In assembly
 * 30 instructions for the 16 bytes (GCC's loop of the C below kept its pointers on the stack: 55). */
NN2C_INLINE void nn2c_dw_plane_quads(const int8_t *s, int32_t C, int8_t *d, int32_t pb, int32_t n) {
#if defined(NN2C_SIMD_DSP) && defined(NN2C_INLINE_ASM)
    if (n > 0) {
        const int8_t *const end = d + n;
        int32_t a, b, e, f, t, u;
        /* t0 = a0 b0 a2 b2 and t1 = a1 b1 a3 b3 (UXTB16, the odd bytes by a mask), u0 u1 the same of e f, then
         * PKHBT / PKHTB of their halves: channel 0 a0 b0 e0 f0, 2, 1, 3 */
        __asm__ volatile("1:\n\t"
                         "ldr    %[a], [%[s]]\n\t"
                         "ldr    %[b], [%[s], %[c]]\n\t"
                         "add    %[s], %[s], %[c], lsl #1\n\t"
                         "ldr    %[e], [%[s]]\n\t"
                         "ldr    %[f], [%[s], %[c]]\n\t"
                         "add    %[s], %[s], %[c], lsl #1\n\t"
                         "uxtb16 %[t], %[a]\n\t"
                         "uxtb16 %[u], %[b]\n\t"
                         "orr    %[t], %[t], %[u], lsl #8\n\t"
                         "uxtb16 %[a], %[a], ror #8\n\t"
                         "and    %[b], %[b], #0xFF00FF00\n\t"
                         "orr    %[a], %[a], %[b]\n\t"
                         "uxtb16 %[u], %[e]\n\t"
                         "uxtb16 %[b], %[f]\n\t"
                         "orr    %[u], %[u], %[b], lsl #8\n\t"
                         "uxtb16 %[e], %[e], ror #8\n\t"
                         "and    %[f], %[f], #0xFF00FF00\n\t"
                         "orr    %[e], %[e], %[f]\n\t"
                         "pkhbt  %[b], %[t], %[u], lsl #16\n\t"
                         "pkhtb  %[t], %[u], %[t], asr #16\n\t"
                         "pkhbt  %[f], %[a], %[e], lsl #16\n\t"
                         "pkhtb  %[a], %[e], %[a], asr #16\n\t"
                         "str    %[b], [%[d]]\n\t"
                         "str    %[f], [%[d], %[pb]]\n\t"
                         "add    %[u], %[d], %[pb], lsl #1\n\t"
                         "str    %[t], [%[u]]\n\t"
                         "str    %[a], [%[u], %[pb]]\n\t"
                         "add    %[d], %[d], #4\n\t"
                         "cmp    %[d], %[end]\n\t"
                         "bne    1b\n\t"
                         : [s] "+r"(s), [d] "+r"(d), [a] "=&r"(a), [b] "=&r"(b), [e] "=&r"(e), [f] "=&r"(f),
                           [t] "=&r"(t), [u] "=&r"(u)
                         : [c] "r"(C), [pb] "r"(pb), [end] "r"(end)
                         : "cc", "memory");
    }
#else
    for (int32_t x = 0; x < n; x += 4, s += 4 * C, d += 4) {
        const uint32_t a = (uint32_t)nn2c_simd_ld32(s), b = (uint32_t)nn2c_simd_ld32(s + C);
        const uint32_t e = (uint32_t)nn2c_simd_ld32(s + 2 * C), f = (uint32_t)nn2c_simd_ld32(s + 3 * C);
        const uint32_t t0 = (a & 0x00FF00FFu) | (b & 0x00FF00FFu) << 8, t1 = (a >> 8 & 0x00FF00FFu) | (b & 0xFF00FF00u);
        const uint32_t u0 = (e & 0x00FF00FFu) | (f & 0x00FF00FFu) << 8, u1 = (e >> 8 & 0x00FF00FFu) | (f & 0xFF00FF00u);
        nn2c_simd_st32(d, (int32_t)((t0 & 0xFFFFu) | u0 << 16));
        nn2c_simd_st32(d + pb, (int32_t)((t1 & 0xFFFFu) | u1 << 16));
        nn2c_simd_st32(d + 2 * pb, (int32_t)(t0 >> 16 | (u0 & 0xFFFF0000u)));
        nn2c_simd_st32(d + 3 * pb, (int32_t)(t1 >> 16 | (u1 & 0xFFFF0000u)));
    }
#endif
}

/* Input row iy of every channel into row `slot` of its plane (channel c's plane at planes + c * plane_bytes, its
 * column k the input's column k - pad_w): the input's columns only, the padding columns holding pad_value since
 * nn2c_dw_planes filled the planes; a row outside the image all pad_value. */
__attribute__((noinline)) static void nn2c_dw_plane_row(const nn2c_conv_geom_t *g, const int8_t *in_b, int32_t iy,
                                                        int8_t *planes, int32_t plane_bytes, int32_t pitch,
                                                        int32_t slot, int32_t pad) {
    const int32_t C = g->in_c, W = g->in_w;
    int8_t *const row = planes + slot * pitch;
    if (iy < 0 || iy >= g->in_h) { /* (a row below the image: one above is the planes' first fill) */
        for (int8_t *r = row; r != row + C * plane_bytes; r += plane_bytes) nn2c_dw_plane_fill(r, pad, pitch);
        return;
    }
    const int8_t *const src = in_b + (intptr_t)iy * W * C;
    const int32_t quads = W & ~3, groups = C & ~3;
    for (int32_t c = 0; c < groups; c += 4) {
        nn2c_dw_plane_quads(src + c, C, row + c * plane_bytes + g->pad_w, plane_bytes, quads);
    }
    /* the rest byte by byte: the last W % 4 pixels of those channels, every pixel of the last C % 4 */
    for (int32_t c = 0; c < C; ++c) {
        for (int32_t x = c < groups ? quads : 0; x < W; ++x) row[c * plane_bytes + g->pad_w + x] = src[x * C + c];
    }
}

/* Channel c's filter (the int16 layout, doubled: nn2c_dw_simd_params_t) as the sums' five words: per filter row
 * its outer taps (w0, w2) as int16 halves, then the middle taps (w01, w11) and (w21, 0). */
static void nn2c_dw_plane_weights(const int16_t *w16, int32_t c, int32_t w[5]) {
    const int16_t *const t = w16 + (c / 4) * 36 + ((c & 3) >> 1) + 2 * (c & 1); /* tap k at t[4 k] */
    for (int32_t r = 0; r < 3; ++r) {
        w[r] = (int32_t)((uint32_t)(uint16_t)t[4 * 3 * r] | (uint32_t)(uint16_t)t[4 * (3 * r + 2)] << 16);
    }
    w[3] = (int32_t)((uint32_t)(uint16_t)t[4 * 1] | (uint32_t)(uint16_t)t[4 * 4] << 16);
    w[4] = (int32_t)(uint32_t)(uint16_t)t[4 * 7];
}

/* The doubled sums of one output row of one channel, `pairs` output pairs, from the plane rows at x, pitch bytes
 * apart, each from the channel's doubled bias. Per pair and filter row one word of 4 input bytes, SXTB16 to (x0,
 * x2) and (x1, x3), and 4 multiplies: SMLAD by (w0, w2) for both outputs (the first row's from the bias, which the
 * output stage then need not add: 4 instructions fewer per 4 outputs), SMLAxy of the middle tap for each. In
 * assembly 26 instructions a pair (18 MACs, 14 registers). */
NN2C_INLINE void nn2c_dw_plane_sums(const int8_t *x, int32_t pitch, int32_t pairs, const int32_t w[5], int32_t bias,
                                    int32_t *sums) {
#if defined(NN2C_SIMD_DSP) && defined(NN2C_INLINE_ASM)
    const int32_t *const end = sums + 2 * pairs;
    int32_t t0, t1, s0, s1;
    __asm__ volatile("1:\n\t"
                     "ldr    %[t0], [%[x]]\n\t"
                     "sxtb16 %[t1], %[t0]\n\t"
                     "sxtb16 %[t0], %[t0], ror #8\n\t"
                     "smlad  %[s0], %[t1], %[w0], %[b]\n\t"
                     "smlabb %[s0], %[t0], %[v01], %[s0]\n\t"
                     "smlad  %[s1], %[t0], %[w0], %[b]\n\t"
                     "smlatb %[s1], %[t1], %[v01], %[s1]\n\t"
                     "ldr    %[t0], [%[x], %[pitch]]\n\t"
                     "sxtb16 %[t1], %[t0]\n\t"
                     "sxtb16 %[t0], %[t0], ror #8\n\t"
                     "smlad  %[s0], %[t1], %[w1], %[s0]\n\t"
                     "smlabt %[s0], %[t0], %[v01], %[s0]\n\t"
                     "smlad  %[s1], %[t0], %[w1], %[s1]\n\t"
                     "smlatt %[s1], %[t1], %[v01], %[s1]\n\t"
                     "add    %[t1], %[x], %[pitch], lsl #1\n\t"
                     "ldr    %[t0], [%[t1]]\n\t"
                     "sxtb16 %[t1], %[t0]\n\t"
                     "sxtb16 %[t0], %[t0], ror #8\n\t"
                     "smlad  %[s0], %[t1], %[w2], %[s0]\n\t"
                     "smlabb %[s0], %[t0], %[v2], %[s0]\n\t"
                     "smlad  %[s1], %[t0], %[w2], %[s1]\n\t"
                     "smlatb %[s1], %[t1], %[v2], %[s1]\n\t"
                     "add    %[x], %[x], #2\n\t"
                     "strd   %[s0], %[s1], [%[q]], #8\n\t"
                     "cmp    %[q], %[end]\n\t"
                     "bne    1b\n\t"
                     : [x] "+r"(x), [q] "+r"(sums), [t0] "=&r"(t0), [t1] "=&r"(t1), [s0] "=&r"(s0), [s1] "=&r"(s1)
                     : [w0] "r"(w[0]), [w1] "r"(w[1]), [w2] "r"(w[2]), [v01] "r"(w[3]), [v2] "r"(w[4]),
                       [pitch] "r"(pitch), [end] "r"(end), [b] "r"(bias)
                     : "cc", "memory");
#else
    for (int32_t k = 0; k < pairs; ++k, x += 2, sums += 2) {
        uint32_t s0 = (uint32_t)bias, s1 = (uint32_t)bias;
        for (int32_t r = 0; r < 3; ++r) {
            const int8_t *const v = x + r * pitch;
            const int32_t w0 = (int16_t)(uint16_t)(uint32_t)w[r], w2 = (int16_t)(uint16_t)((uint32_t)w[r] >> 16);
            const int32_t w1 = r == 2 ? (int16_t)(uint16_t)(uint32_t)w[4]
                                      : (int16_t)(uint16_t)((uint32_t)w[3] >> (16 * r));
            s0 += (uint32_t)(v[0] * w0 + v[1] * w1 + v[2] * w2);
            s1 += (uint32_t)(v[1] * w0 + v[2] * w1 + v[3] * w2);
        }
        sums[0] = (int32_t)s0;
        sums[1] = (int32_t)s1;
    }
#endif
}

/* The sums of `rows` output rows of channel c (its plane rows from x; its filter from the int16 layout w16; its
 * doubled bias), row after row from sums (not inlined: the sums' 14 registers are all there are). */
__attribute__((noinline)) static void nn2c_dw_plane_band_sums(const int8_t *x, int32_t pitch, int32_t pairs,
                                                              int32_t rows, const int16_t *w16, int32_t c,
                                                              int32_t bias, int32_t *sums) {
    int32_t w[5];
    nn2c_dw_plane_weights(w16, c, w);
    for (; rows > 0; --rows, x += pitch, sums += 2 * pairs) {
        nn2c_dw_plane_sums(x, pitch, pairs, w, bias, sums);
    }
}

/* 4 quads outputs of one channel, C bytes apart from y, from their doubled sums (the doubled bias in them) and the
 * channel's doubled record r (m, 2^(r - 1) + offset 2^r, r: nn2c_record_requant_doubled), four at a time, their
 * sums in one LDM (fixed registers r0-r3, as its list must ascend): 25 instructions (two at a time took 34).
 */
NN2C_INLINE void nn2c_dw_plane_out(const int32_t *sums, int32_t quads, const int32_t *r, int8_t *y, int32_t C) {
#if defined(NN2C_SIMD_DSP) && defined(NN2C_INLINE_ASM)
    const int32_t *const end = sums + 4 * quads;
    register int32_t s0 __asm__("r0"), s1 __asm__("r1"), s2 __asm__("r2"), s3 __asm__("r3");
    int32_t hi;
#define NN2C_DW_PLANE_RQ(S) \
    "add    %[hi], %[h], %[" S "], asr #31\n\t" \
    "smmlar %[hi], %[" S "], %[m], %[hi]\n\t" \
    "asr    %[hi], %[hi], %[sh]\n\t" \
    "ssat   %[" S "], #8, %[hi]\n\t"
    __asm__ volatile("1:\n\t"
                     "ldm    %[q]!, {%[s0], %[s1], %[s2], %[s3]}\n\t"
                     NN2C_DW_PLANE_RQ("s0") NN2C_DW_PLANE_RQ("s1") NN2C_DW_PLANE_RQ("s2") NN2C_DW_PLANE_RQ("s3")
                     "strb   %[s0], [%[y]]\n\t"
                     "strb   %[s1], [%[y], %[c]]\n\t"
                     "add    %[y], %[y], %[c], lsl #1\n\t"
                     "strb   %[s2], [%[y]]\n\t"
                     "strb   %[s3], [%[y], %[c]]\n\t"
                     "add    %[y], %[y], %[c], lsl #1\n\t"
                     "cmp    %[q], %[end]\n\t"
                     "bne    1b\n\t"
                     : [q] "+r"(sums), [y] "+r"(y), [s0] "=&r"(s0), [s1] "=&r"(s1), [s2] "=&r"(s2), [s3] "=&r"(s3),
                       [hi] "=&r"(hi)
                     : [m] "r"(r[0]), [h] "r"(r[1]), [sh] "r"(r[2]), [c] "r"(C), [end] "r"(end)
                     : "cc", "memory");
#undef NN2C_DW_PLANE_RQ
#else
    for (int32_t k = 0; k < 4 * quads; ++k, y += C) {
        *y = (int8_t)nn2c_record_requant_doubled(sums[k], r);
    }
#endif
}

/* A 3x3, stride 1 layer (pad_w, pad_h at most 1, one batch, out_w a multiple of 4) with doubled records over the int16
 * filter, `band` output rows at a time: per band, the band's input rows (and the two the window adds) transposed into
 * one plane per channel in scratch (nn2c_dw_plane_row; the last two rows of a band moved up for the next, so each
 * input row is read once), then channel by channel, row by row, the sums of output pairs (nn2c_dw_plane_sums: a word
 * of one channel's consecutive inputs serves two outputs) and their output stage. An output row is written after its
 * band's inputs are read: the in-place rule holds (memory/inplace.py). Scratch: the zero-point row's C bytes rounded
 * up to a word, C planes of (band + 2) x pitch bytes, the band's sums (4 out_w bytes a row). 2.7-2.9 instructions a
 * MAC on the Cortex-M4 where a pixel's taps four channels at a time take 3.4-4 (vww_96_int8's 48- and 24-wide layers,
 * QEMU); some 1.3 KB of code (--optimize speed; balanced from rows of 24 where the arena allows). */
__attribute__((noinline)) static void nn2c_dw_planes(const nn2c_dw_simd_params_t *p, const int8_t *input,
                                                     const int16_t *w16, int8_t *output, int8_t *scratch) {
    /* the geometry in locals: int8 stores may alias the parameter struct, GCC would reload it */
    const nn2c_conv_geom_t geom = p->g;
    const nn2c_conv_geom_t *const g = &geom;
    const int32_t *const records = p->records;
    const int32_t C = g->in_c, out_w = g->out_w, band = p->band, pitch = nn2c_dw_plane_pitch(out_w);
    const int32_t plane_bytes = (band + 2) * pitch, pairs = out_w / 2, row_step = out_w * C;
    int8_t *const planes = scratch + ((C + 3) & ~3);
    int32_t *const sums = (int32_t *)(void *)(planes + C * plane_bytes);
    const int32_t pad = nn2c_simd_splat(p->pad_value);
    nn2c_dw_plane_fill(planes, pad, C * plane_bytes); /* (the padding columns keep it: rows write the input's only) */
    for (int32_t y0 = 0; y0 < g->out_h; y0 += band) { /* (one batch: the codegen's test) */
        const int32_t rows = NN2C_MIN(band, g->out_h - y0);
        int32_t slot = 0;
        if (y0 > 0) { /* the previous band's last two rows are this one's first two (band >= 2: apart) */
            for (int32_t *to = (int32_t *)(void *)planes; to != (int32_t *)(void *)(planes + C * plane_bytes);
                 to += plane_bytes / 4) {
                for (int32_t k = 0; k < pitch / 2; ++k) {
                    to[k] = to[band * pitch / 4 + k];
                    NN2C_LOOP_BARRIER();
                }
            }
            slot = 2;
        }
        for (; slot < rows + 2; ++slot) {
            nn2c_dw_plane_row(g, input, y0 - g->pad_h + slot, planes, plane_bytes, pitch, slot, pad);
        }
        for (int32_t c = 0; c < C; ++c) {
            const int32_t *const group = records + 16 * (c / 4);
            int8_t *y = output + (intptr_t)y0 * row_step + c;
            nn2c_dw_plane_band_sums(planes + c * plane_bytes, pitch, pairs, rows, w16, c, group[c & 3], sums);
            for (int32_t r = 0; r < rows; ++r, y += row_step) {
                nn2c_dw_plane_out(sums + out_w * r, out_w / 4, group + 4 + 3 * (c & 3), y, C);
            }
        }
    }
}

#endif

void nn2c_dw_s8_simd(const nn2c_dw_simd_params_t *p, const int8_t *input, const int8_t *filter, int8_t *output,
                     void *scratch) {
#if !defined(NN2C_SIMD_MVE) && !defined(NN2C_OMIT_DSP_DW_PLANES)
    if (p->band) { /* (only a layer that runs on its own has one: a row group's copy of its parameters resets it) */
        nn2c_dw_planes(p, input, (const int16_t *)(const void *)filter, output, (int8_t *)scratch);
        return;
    }
#endif
    /* the geometry in a local: int8 stores may alias the parameter struct, GCC would reload it */
    const nn2c_conv_geom_t geom = p->g;
    const nn2c_conv_geom_t *g = &geom;
    const int32_t C = g->in_c;
    int8_t *zero_row = (int8_t *)scratch;
    intptr_t inner[NN2C_DW_SIMD_MAX_TAPS]; /* tap offsets of a window inside the image */
    intptr_t border[NN2C_DW_SIMD_MAX_TAPS];
    const int32_t n_taps = g->filter_h * g->filter_w;
    const int32_t span_h = (g->filter_h - 1) * g->dilation_h, span_w = (g->filter_w - 1) * g->dilation_w;
    const nn2c_simd_out_t o =
        nn2c_simd_out(p->multipliers, p->shifts, p->rounding, p->output_offset, p->act_min, p->act_max);
#if defined(NN2C_SIMD_DSP)
    const int right = p->records ? 1 : p->right == 2; /* (every shift negative: the codegen's flag) */
#elif defined(NN2C_SIMD_MVE)
    const int right = p->right; /* 2: every shift negative, 1: none positive (the codegen's flag) */
#else
    const int right = 0;
#endif
    const int grid3 = g->filter_h == 3 && g->filter_w == 3;
#if defined(NN2C_SIMD_MVE) && defined(NN2C_INLINE_ASM)
    const int pairs8 = grid3 && right && C == 8; /* two pixels' 8 channels as one group of 16 */
#if defined(NN2C_OMIT_MVE_DW_ANY) /* nn2c_config.h: only 3x3 layers of whole groups of 16 in assembly */
    const int assembly = right && grid3 && C % 16 == 0;
#else
    const int assembly = right; /* any filter, a last partial group of channels */
#endif
#endif
    const nn2c_dw_window_t by_table = {right, 0, 0};
#if defined(NN2C_SIMD_MVE)
    /* the square filters whose windows inside the image the assembly walks by column and row steps */
#if defined(NN2C_OMIT_MVE_DW_ANY)
    const int stepped = grid3;
#else
    const int stepped = grid3 || (g->filter_h == g->filter_w && (g->filter_w == 5 || g->filter_w == 7));
#endif
    const nn2c_dw_window_t by_steps = {right, stepped ? g->dilation_w * C : 0, g->dilation_h * g->in_w * C};
#else
    const nn2c_dw_window_t by_steps = {right, grid3 ? g->dilation_w * C : 0, g->dilation_h * g->in_w * C};
#endif
    nn2c_simd_fill(zero_row, nn2c_simd_splat(p->pad_value), C);
    const intptr_t row_step = (intptr_t)g->dilation_h * g->in_w * C, col_step = (intptr_t)g->dilation_w * C;
    for (int32_t fy = 0, t = 0; fy < g->filter_h; ++fy) {
        for (int32_t fx = 0; fx < g->filter_w; ++fx, ++t) {
            inner[t] = fy * row_step + fx * col_step;
        }
    }
    for (int32_t b = 0; b < g->batches; ++b) {
        const int8_t *in_b = input + b * g->in_h * g->in_w * C;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            const int32_t iy0 = oy * g->stride_h - g->pad_h;
            const int rows_inside = iy0 >= 0 && iy0 + span_h < g->in_h;
#if defined(NN2C_SIMD_MVE)
            const int32_t fy_lo = nn2c_dw_first_tap(iy0, g->dilation_h), fy_hi = nn2c_dw_end_tap(iy0, g->dilation_h,
                                                                                               g->in_h, g->filter_h);
#endif
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                const int32_t ix0 = ox * g->stride_w - g->pad_w;
                const uintptr_t base = (uintptr_t)in_b + (uintptr_t)(intptr_t)((iy0 * g->in_w + ix0) * C);
                const intptr_t *taps = inner;
                const nn2c_dw_window_t *window = &by_steps;
                if (!rows_inside || ix0 < 0 || ix0 + span_w >= g->in_w) { /* a window over the border */
                    const intptr_t to_zero = (intptr_t)((uintptr_t)zero_row - base);
#if defined(NN2C_SIMD_MVE)
                    /* every tap at the zero-point row, then the taps inside the image (a rectangle of the
                     * window) at their input: 2% fewer instructions on kws's depthwise layers than a test per
                     * tap (below), which keeps fewer loads and stores on the Arm DSP cores (person_detect:
                     * 20,000 fewer, 5,000 more instructions), measured in QEMU */
                    const int32_t fx_lo = nn2c_dw_first_tap(ix0, g->dilation_w);
                    const int32_t fx_hi = nn2c_dw_end_tap(ix0, g->dilation_w, g->in_w, g->filter_w);
                    for (int32_t t = 0; t < n_taps; ++t) border[t] = to_zero;
                    for (int32_t fy = fy_lo; fy < fy_hi; ++fy) {
                        /* (each offset computed, not copied from inner[]: GCC makes a copy loop a call of
                         * newlib's byte-wise memcpy) */
                        intptr_t offset = fy * row_step + fx_lo * col_step;
                        for (int32_t fx = fx_lo, t = fy * g->filter_w + fx_lo; fx < fx_hi; ++fx, ++t) {
                            border[t] = offset;
                            offset += col_step;
                        }
                    }
#else
                    for (int32_t fy = 0, t = 0; fy < g->filter_h; ++fy) {
                        const int32_t iy = iy0 + fy * g->dilation_h;
                        const int row_inside = iy >= 0 && iy < g->in_h;
                        for (int32_t fx = 0; fx < g->filter_w; ++fx, ++t) {
                            const int32_t ix = ix0 + fx * g->dilation_w;
                            border[t] = row_inside && ix >= 0 && ix < g->in_w ? inner[t] : to_zero;
                        }
                    }
#endif
                    taps = border;
                    window = &by_table;
                }
                int8_t *out = output + ((b * g->out_h + oy) * g->out_w + ox) * C;
#if defined(NN2C_SIMD_DSP)
                if (p->records && taps == inner) {
                    /* this window and the next ones of the row inside the image: one call for the run */
                    int32_t n = 1;
                    while (ox + n < g->out_w && ix0 + n * g->stride_w + span_w < g->in_w) ++n;
                    nn2c_dw_run_records(p, C, base, g->stride_w * C, n, inner, n_taps, window, filter, out);
                    ox += n - 1;
                    continue;
                }
#endif
#if defined(NN2C_SIMD_MVE) && defined(NN2C_INLINE_ASM)
                if (pairs8 && taps == inner && ox + 1 < g->out_w && ix0 + g->stride_w + span_w < g->in_w) {
                    /* this window and the next inside the image */
                    nn2c_dw_3x3_pair8_right(p, &o, base, g->stride_w * C, window, filter, out);
                    ++ox;
                    continue;
                }
                if (assembly && taps != inner) {
                    nn2c_dw_window_right(p, &o, C, base, taps, n_taps, window, filter, out);
                    continue;
                }
                if (assembly) {
                    /* this window and the next ones of the row inside the image: one call for the run */
                    int32_t n = 1;
                    while (ox + n < g->out_w && ix0 + n * g->stride_w + span_w < g->in_w) ++n;
                    nn2c_dw_run_right(p, &o, C, base, g->stride_w * C, n, inner, n_taps, window, filter, out);
                    ox += n - 1;
                    continue;
                }
#endif
                nn2c_dw_pixel(p, &o, C, base, taps, n_taps, filter, out, window);
            }
        }
    }
}

/* --- CONV_2D over narrow filter rows (nn2c_conv_s8_rows) -------------------------------------------- */

/* The sums of one group of 4 output channels over a window whose filter rows start `stride` bytes apart at
 * x: per row `blocks` input words, each split by SXTB16 into the halves of bytes 0 2 and 1 3, one SMLAD per
 * half and channel with the filter's int16 pairs (w at the group's weights, advanced past them). In
 * assembly 15 instructions a word (the input word loaded once for the 4 channels), 3 a row. */
#if defined(NN2C_SIMD_DSP) && defined(NN2C_INLINE_ASM)
#define NN2C_DSP_ROWS_WORD \
    "ldr    %[x], [%[b]], #4\n\t" \
    "sxtb16 %[xe], %[x]\n\t" \
    "sxtb16 %[x], %[x], ror #8\n\t" \
    "ldrd   %[we], %[wo], [%[wp]], #8\n\t" \
    "smlad  %[s0], %[xe], %[we], %[s0]\n\t" \
    "smlad  %[s0], %[x], %[wo], %[s0]\n\t" \
    "ldrd   %[we], %[wo], [%[wp]], #8\n\t" \
    "smlad  %[s1], %[xe], %[we], %[s1]\n\t" \
    "smlad  %[s1], %[x], %[wo], %[s1]\n\t" \
    "ldrd   %[we], %[wo], [%[wp]], #8\n\t" \
    "smlad  %[s2], %[xe], %[we], %[s2]\n\t" \
    "smlad  %[s2], %[x], %[wo], %[s2]\n\t" \
    "ldrd   %[we], %[wo], [%[wp]], #8\n\t" \
    "smlad  %[s3], %[xe], %[we], %[s3]\n\t" \
    "smlad  %[s3], %[x], %[wo], %[s3]\n\t"
/* a row's last word when only its first byte is the filter's (nn2c_conv_rows_params_t.row_tail): the byte, one
 * SMLABB / SMLABT a channel with the channels' int16 weights in order, 6 instructions instead of 15 */
#define NN2C_DSP_ROWS_BYTE \
    "ldrsb  %[x], [%[b]], #4\n\t" \
    "ldrd   %[we], %[wo], [%[wp]], #8\n\t" \
    "smlabb %[s0], %[x], %[we], %[s0]\n\t" \
    "smlabt %[s1], %[x], %[we], %[s1]\n\t" \
    "smlabb %[s2], %[x], %[wo], %[s2]\n\t" \
    "smlabt %[s3], %[x], %[wo], %[s3]\n\t"
/* The row shapes (2 x row_blocks + row_tail) this build keeps (nn2c_config.h), each as X(shape, the assembly of
 * its filter row's words): one list for the sums' and the runs' switches. */
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_1)
#define NN2C_CONV_ROWS_2(X) X(2, NN2C_DSP_ROWS_WORD)
#else
#define NN2C_CONV_ROWS_2(X)
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_1_BYTE)
#define NN2C_CONV_ROWS_3(X) X(3, NN2C_DSP_ROWS_BYTE)
#else
#define NN2C_CONV_ROWS_3(X)
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_2)
#define NN2C_CONV_ROWS_4(X) X(4, NN2C_DSP_ROWS_W2)
#else
#define NN2C_CONV_ROWS_4(X)
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_2_BYTE)
#define NN2C_CONV_ROWS_5(X) X(5, NN2C_DSP_ROWS_WORD NN2C_DSP_ROWS_BYTE)
#else
#define NN2C_CONV_ROWS_5(X)
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_3)
#define NN2C_CONV_ROWS_6(X) X(6, NN2C_DSP_ROWS_W3)
#else
#define NN2C_CONV_ROWS_6(X)
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_3_BYTE)
#define NN2C_CONV_ROWS_7(X) X(7, NN2C_DSP_ROWS_W2 NN2C_DSP_ROWS_BYTE)
#else
#define NN2C_CONV_ROWS_7(X)
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_4)
#define NN2C_CONV_ROWS_8(X) X(8, NN2C_DSP_ROWS_W3 NN2C_DSP_ROWS_WORD)
#else
#define NN2C_CONV_ROWS_8(X)
#endif
#if !defined(NN2C_OMIT_DSP_CONV_ROWS_4_BYTE)
#define NN2C_CONV_ROWS_9(X) X(9, NN2C_DSP_ROWS_W3 NN2C_DSP_ROWS_BYTE)
#else
#define NN2C_CONV_ROWS_9(X)
#endif
#define NN2C_CONV_ROWS_SHAPES(X) \
    NN2C_CONV_ROWS_2(X) NN2C_CONV_ROWS_3(X) NN2C_CONV_ROWS_4(X) NN2C_CONV_ROWS_5(X) NN2C_CONV_ROWS_6(X) \
    NN2C_CONV_ROWS_7(X) NN2C_CONV_ROWS_8(X) NN2C_CONV_ROWS_9(X)
#define NN2C_DSP_ROWS_LOOP(WORDS) \
    __asm__ volatile("1:\n\t" WORDS \
                     "add    %[b], %[b], %[skip]\n\t" \
                     "subs   %[k], %[k], #1\n\t" \
                     "bne    1b\n\t" \
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [b] "+r"(b), [wp] "+r"(wp), \
                       [k] "+r"(k), [x] "=&r"(xv), [xe] "=&r"(xe), [we] "=&r"(we), [wo] "=&r"(wo) \
                     : [skip] "r"(skip) \
                     : "cc", "memory")
#endif

NN2C_INLINE void nn2c_conv_rows_sums(const int8_t *x, int32_t stride, int32_t rows, int32_t blocks, int32_t tail,
                                     const int16_t **w, int32_t s[4]) {
#if defined(NN2C_SIMD_DSP) && defined(NN2C_INLINE_ASM)
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    const int16_t *wp = *w;
    const int8_t *b = x;
    const int32_t skip = stride - 4 * blocks;
    int32_t k = rows, xv, xe, we, wo;
    (void)xv, (void)xe, (void)we, (void)wo, (void)skip, (void)k, (void)b; /* (a build without any row width) */
#define NN2C_DSP_ROWS_W2 NN2C_DSP_ROWS_WORD NN2C_DSP_ROWS_WORD
#define NN2C_DSP_ROWS_W3 NN2C_DSP_ROWS_W2 NN2C_DSP_ROWS_WORD
#define NN2C_DSP_ROWS_CASE(SHAPE, WORDS) \
    case SHAPE: NN2C_DSP_ROWS_LOOP(WORDS); break;
    switch (2 * blocks + tail) { /* the row shapes this model's layers take (nn2c_config.h) */
        NN2C_CONV_ROWS_SHAPES(NN2C_DSP_ROWS_CASE)
    default: break;
    }
#undef NN2C_DSP_ROWS_CASE
#undef NN2C_DSP_ROWS_W3
#undef NN2C_DSP_ROWS_W2
    *w = wp;
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
#else
    /* any core: the same sums in C (int32 products summed in any order: the same int32, wrapping as unsigned) */
    const int16_t *wp = *w;
    uint32_t u[4] = {(uint32_t)s[0], (uint32_t)s[1], (uint32_t)s[2], (uint32_t)s[3]};
    for (int32_t r = 0; r < rows; ++r, x += stride) {
        for (int32_t j = 0; j < blocks - tail; ++j) {
            const int8_t *v = x + 4 * j;
            for (int32_t c = 0; c < 4; ++c, wp += 4) {
                u[c] += (uint32_t)(v[0] * wp[0] + v[2] * wp[1]) + (uint32_t)(v[1] * wp[2] + v[3] * wp[3]);
            }
        }
        if (tail) { /* the last word's first byte, the channels' weights in order */
            for (int32_t c = 0; c < 4; ++c) u[c] += (uint32_t)(x[4 * (blocks - 1)] * wp[c]);
            wp += 4;
        }
    }
    *w = wp;
    for (int32_t c = 0; c < 4; ++c) s[c] = (int32_t)u[c];
#endif
}
#if defined(NN2C_SIMD_DSP) && defined(NN2C_INLINE_ASM)
#undef NN2C_DSP_ROWS_LOOP
#undef NN2C_DSP_ROWS_BYTE
#undef NN2C_DSP_ROWS_WORD
#endif

/* All output channels of one window (`rows` filter rows `stride` bytes apart from x), 4 at a time, the
 * channels' records from rec until out reaches end. */
NN2C_INLINE void nn2c_conv_rows_window(const int32_t *rec, const int8_t *x, int32_t stride, int32_t rows,
                                       int32_t blocks, int32_t tail, const int16_t *filter, int8_t *out,
                                       const int8_t *end) {
    while (out != end) {
        int32_t s[4] = {rec[0], rec[1], rec[2], rec[3]};
        rec += 4;
        nn2c_conv_rows_sums(x, stride, rows, blocks, tail, &filter, s);
#if defined(NN2C_SIMD_DSP)
        nn2c_dsp_dw_record_out(s[0], s[1], s[2], s[3], &rec, &out);
#else
        for (int32_t k = 0; k < 4; ++k, rec += 3) *out++ = (int8_t)nn2c_record_requant_doubled(s[k], rec);
#endif
    }
}

/* A window of nn2c_conv_s8_rows that reaches past the image (or whose last row's last word would), its rows
 * copied `span` bytes apart into window: a pixel at a time (C bytes), pad_value for the padding pixels and the
 * bytes past the filter's width. Byte by byte, dividing for the pixel, the 95 such windows of vww_96_int8's
 * first layer (3 channels) took 7,415 instructions more (QEMU, Cortex-M4). */
static void nn2c_conv_rows_copy(const nn2c_conv_geom_t *g, const int8_t *in_b, int32_t iy0, int32_t ix0, int32_t span,
                                int8_t pad_value, int8_t *window) {
    const int32_t C = g->in_c, row_bytes = g->in_w * C, used = g->filter_w * C;
    for (int32_t fy = 0; fy < g->filter_h; ++fy, window += span) {
        const int32_t iy = iy0 + fy;
        memset(window + used, pad_value, (size_t)(span - used));
        if (iy < 0 || iy >= g->in_h) {
            memset(window, pad_value, (size_t)used);
            continue;
        }
        const int8_t *row = in_b + iy * row_bytes;
        for (int32_t fx = 0; fx < g->filter_w; ++fx) {
            const int32_t ix = ix0 + fx;
            if (ix >= 0 && ix < g->in_w) {
                memcpy(window + fx * C, row + ix * C, (size_t)C);
            } else {
                memset(window + fx * C, pad_value, (size_t)C);
            }
        }
    }
}

/* count neighbouring windows of an output row inside the image (their rows `stride` bytes apart from x, `step`
 * bytes from one window to the next; out_c outputs each): the pixel loop on its own, with the row shape (2 x
 * blocks + tail) a constant of each instance, so that neither the shape's switch nor the image's border tests
 * run per window. In one loop with the border windows, GCC kept a stack frame of some 200 bytes and spent 89
 * instructions a window outside the sums and the output stage (vww_96_int8's first layer, QEMU). */
NN2C_INLINE void nn2c_conv_rows_run_shape(const int32_t *records, const int8_t *x, int32_t step, int32_t count,
                                          int32_t stride, int32_t rows, int32_t shape, const int16_t *filter,
                                          int8_t *out, int32_t out_c) {
    for (; count > 0; --count, x += step, out += out_c) {
        nn2c_conv_rows_window(records, x, stride, rows, shape >> 1, shape & 1, filter, out, out + out_c);
    }
}

#if defined(NN2C_SIMD_DSP) && defined(NN2C_INLINE_ASM) && !defined(NN2C_OMIT_DSP_CONV_ROWS8_3X9)
/* --- 3x3 windows over 3 channels (rows of 9 bytes: two words and a byte), 8 output channels at a time ------------
 * What nn2c_conv_rows8_3x9_asm copies onto its stack (its offsets there are the words' here). */
typedef struct {
    const int8_t *x;        /* 0: the window's first filter row */
    int32_t step;           /* 4: bytes to the next window */
    int32_t count;          /* 8: windows left */
    int32_t stride;         /* 12: bytes from a filter row to the next */
    const int32_t *records; /* 16: the first group of 4 channels' records */
    const int16_t *filter;  /* 20 */
    int8_t *out;            /* 24: the next outputs */
    int32_t out_c;          /* 28 (a multiple of 8); words 8 and 9 the assembly's: the window's outputs' end, the
                             * next group's records */
} nn2c_conv_rows8_frame_t;
typedef char nn2c_conv_rows8_frame_check[offsetof(nn2c_conv_rows8_frame_t, out_c) == 28 ? 1 : -1];

/* A word of a filter row (at OFF from the row in r12) for 8 channels: its SXTB16 halves r9 / r8, per channel
 * (sums r0-r7) one LDRD of its int16 weights (r10 r11) and 2 SMLAD; the second group of 4's weights 216 bytes on
 * (a group's filter: 3 rows of 72 bytes), read before the first group's post-increment */
#define NN2C_ROWS8_MAC(S, ADDR) \
    "ldrd   r10, r11, " ADDR "\n\t" \
    "smlad  " S ", r9, r10, " S "\n\t" \
    "smlad  " S ", r8, r11, " S "\n\t"
#define NN2C_ROWS8_WORD(OFF) \
    "ldr    r8, [r12, #" OFF "]\n\t" \
    "sxtb16 r9, r8\n\t" \
    "sxtb16 r8, r8, ror #8\n\t" \
    NN2C_ROWS8_MAC("r4", "[lr, #216]") NN2C_ROWS8_MAC("r5", "[lr, #224]") NN2C_ROWS8_MAC("r6", "[lr, #232]") \
    NN2C_ROWS8_MAC("r7", "[lr, #240]") NN2C_ROWS8_MAC("r0", "[lr], #8") NN2C_ROWS8_MAC("r1", "[lr], #8") \
    NN2C_ROWS8_MAC("r2", "[lr], #8") NN2C_ROWS8_MAC("r3", "[lr], #8")
/* the row's ninth byte: the 4 channels' weights in order (nn2c_conv_rows_params_t.row_tail) */
#define NN2C_ROWS8_BYTE(A, B, C, D, ADDR) \
    "ldrd   r10, r11, " ADDR "\n\t" \
    "smlabb " A ", r8, r10, " A "\n\t" \
    "smlabt " B ", r8, r10, " B "\n\t" \
    "smlabb " C ", r8, r11, " C "\n\t" \
    "smlabt " D ", r8, r11, " D "\n\t"
#define NN2C_ROWS8_ROW \
    NN2C_ROWS8_WORD("0") NN2C_ROWS8_WORD("4") \
    "ldrsb  r8, [r12, #8]\n\t" \
    NN2C_ROWS8_BYTE("r4", "r5", "r6", "r7", "[lr, #216]") NN2C_ROWS8_BYTE("r0", "r1", "r2", "r3", "[lr], #8")
/* a channel's output from its doubled sum S (in place), its record loaded */
#define NN2C_ROWS8_RQ(S) "ldm    r12!, {r8-r10}\n\t" NN2C_DSP_R8_RQ(S)

/* nn2c_conv_rows_run's windows of 3 rows of 9 bytes (a 3x3 filter over 3 channels: the first layer of an RGB
 * model), all in assembly with every register but sp and pc (the 8 sums r0-r7, the input word and its halves
 * r8 r9, the weights r10 r11, the row r12, the filter lr), the rest in a frame on the stack; the three rows
 * unrolled. Per 8 channels of a window, counted below: 204 instructions for the rows, 58 for the output stage and
 * the channels' loop; 12 more a window. vww_96_int8's first layer (to 8 channels) took 778,607 instructions on the
 * Cortex-M4 as two groups of 4 through the row loop, 686,415 with this (QEMU). */
__attribute__((naked, noinline)) static void nn2c_conv_rows8_3x9_asm(
    __attribute__((unused)) const nn2c_conv_rows8_frame_t *frame) {
    __asm__ volatile(
        "push   {r3-r11, lr}\n\t" /* (r3 too: sp stays 8-byte aligned) */
        "sub    sp, sp, #40\n\t"
        "ldm    r0, {r1-r8}\n\t"
        "stm    sp, {r1-r8}\n"
        "1:\n\t"
        "ldrd   r8, r9, [sp, #24]\n\t"
        "add    r9, r8, r9\n\t"
        "ldr    r12, [sp, #16]\n\t"
        "strd   r9, r12, [sp, #32]\n\t"
        "ldr    lr, [sp, #20]\n"
        "2:\n\t"
        "ldr    r12, [sp, #36]\n\t"
        "ldm    r12, {r0-r3}\n\t"
        "add    r12, r12, #64\n\t"
        "ldm    r12, {r4-r7}\n\t"
        "ldr    r12, [sp]\n\t"
        NN2C_ROWS8_ROW
        "ldr    r8, [sp, #12]\n\t"
        "add    r12, r12, r8\n\t"
        NN2C_ROWS8_ROW
        "ldr    r8, [sp, #12]\n\t"
        "add    r12, r12, r8\n\t"
        NN2C_ROWS8_ROW
        "add    lr, lr, #216\n\t" /* (past the second group of 4's filter) */
        "ldr    r12, [sp, #36]\n\t"
        "add    r12, r12, #16\n\t"
        NN2C_ROWS8_RQ("r0") NN2C_ROWS8_RQ("r1") NN2C_ROWS8_RQ("r2") NN2C_ROWS8_RQ("r3")
        "add    r12, r12, #16\n\t"
        NN2C_ROWS8_RQ("r4") NN2C_ROWS8_RQ("r5") NN2C_ROWS8_RQ("r6") NN2C_ROWS8_RQ("r7")
        "str    r12, [sp, #36]\n\t"
        "bfi    r0, r1, #8, #8\n\t"
        "bfi    r0, r2, #16, #8\n\t"
        "bfi    r0, r3, #24, #8\n\t"
        "bfi    r4, r5, #8, #8\n\t"
        "bfi    r4, r6, #16, #8\n\t"
        "bfi    r4, r7, #24, #8\n\t"
        "ldr    r8, [sp, #24]\n\t"
        "str    r0, [r8], #4\n\t"
        "str    r4, [r8], #4\n\t"
        "str    r8, [sp, #24]\n\t"
        "ldr    r9, [sp, #32]\n\t"
        "cmp    r8, r9\n\t"
        "bne    2b\n\t"
        "ldrd   r12, r9, [sp]\n\t"
        "add    r12, r12, r9\n\t"
        "str    r12, [sp]\n\t"
        "ldr    r9, [sp, #8]\n\t"
        "subs   r9, r9, #1\n\t"
        "str    r9, [sp, #8]\n\t"
        "bne    1b\n\t"
        "add    sp, sp, #40\n\t"
        "pop    {r3-r11, pc}\n\t");
}
#undef NN2C_ROWS8_MAC
#undef NN2C_ROWS8_WORD
#undef NN2C_ROWS8_BYTE
#undef NN2C_ROWS8_ROW
#undef NN2C_ROWS8_RQ
#endif

__attribute__((noinline)) static void nn2c_conv_rows_run(const int32_t *records, const int8_t *x, int32_t step,
                                                         int32_t count, int32_t stride, int32_t rows, int32_t shape,
                                                         const int16_t *filter, int8_t *out, int32_t out_c) {
#if defined(NN2C_SIMD_DSP) && defined(NN2C_INLINE_ASM)
    (void)records, (void)x, (void)step, (void)count, (void)stride, (void)rows, (void)filter, (void)out, (void)out_c;
    /* (nn2c_config.h may leave out every shape) */
#if !defined(NN2C_OMIT_DSP_CONV_ROWS8_3X9)
    if (shape == 7 && rows == 3 && (out_c & 7) == 0) { /* 3x3 over 3 channels: 8 channels at a time */
        const nn2c_conv_rows8_frame_t frame = {x, step, count, stride, records, filter, out, out_c};
        nn2c_conv_rows8_3x9_asm(&frame);
        return;
    }
#endif
#define NN2C_CONV_ROWS_RUN(SHAPE, WORDS) \
    case SHAPE: nn2c_conv_rows_run_shape(records, x, step, count, stride, rows, SHAPE, filter, out, out_c); break;
    switch (shape) { /* (the shapes nn2c_config.h keeps: nn2c_conv_rows_sums' cases) */
        NN2C_CONV_ROWS_SHAPES(NN2C_CONV_ROWS_RUN)
    default: break;
    }
#undef NN2C_CONV_ROWS_RUN
#else /* the sums in C: any shape */
    nn2c_conv_rows_run_shape(records, x, step, count, stride, rows, shape, filter, out, out_c);
#endif
}

/* The first and the end output column of a row whose windows lie inside the image: ix0 >= 0, ix0 + filter_w <=
 * in_w and the last row's last word read inside it, ix0 C <= last (the bytes from the row's first window row to
 * the image's end, less the words of the last filter row); *lo = *hi where none does. */
NN2C_INLINE void nn2c_conv_rows_inside(const nn2c_conv_geom_t *g, int32_t last, int32_t *lo, int32_t *hi) {
    const int32_t sw = g->stride_w, pw = g->pad_w;
    const int32_t by_width = g->in_w - g->filter_w + pw, by_bytes = last < 0 ? -1 : last / g->in_c + pw;
    const int32_t right = by_width < by_bytes ? by_width : by_bytes; /* ix0 + pw <= right */
    *lo = pw > 0 ? (pw + sw - 1) / sw : 0;
    *hi = right < 0 ? 0 : right / sw + 1;
    *hi = *hi > g->out_w ? g->out_w : *hi;
    *lo = *lo > *hi ? *hi : *lo;
}

void nn2c_conv_s8_rows(const nn2c_conv_rows_params_t *p, const int8_t *input, const int16_t *filter,
                       int8_t *output, void *scratch) {
    const nn2c_conv_geom_t geom = p->g; /* (int8 stores may alias the parameter struct) */
    const nn2c_conv_geom_t *g = &geom;
    const int32_t C = g->in_c, row_bytes = g->in_w * C, blocks = p->row_blocks;
    const int32_t span = 4 * blocks, shape = 2 * blocks + p->row_tail;
    const int32_t image = g->in_h * row_bytes;
    const int32_t *const records = p->records;
    const int32_t pad_value = p->pad_value;
    int8_t *const window = (int8_t *)scratch;
    for (int32_t b = 0; b < g->batches; ++b) {
        const int8_t *in_b = input + b * image;
        for (int32_t oy = 0; oy < g->out_h; ++oy) {
            const int32_t iy0 = oy * g->stride_h - g->pad_h;
            int8_t *const row_out = output + (b * g->out_h + oy) * g->out_w * g->out_c;
            int32_t lo = 0, hi = 0; /* the run of windows inside the image */
            if (iy0 >= 0 && iy0 + g->filter_h <= g->in_h) {
                nn2c_conv_rows_inside(g, image - span - (iy0 + g->filter_h - 1) * row_bytes, &lo, &hi);
            }
            if (lo < hi) {
                nn2c_conv_rows_run(records, in_b + iy0 * row_bytes + (lo * g->stride_w - g->pad_w) * C,
                                   g->stride_w * C, hi - lo, row_bytes, g->filter_h, shape, filter,
                                   row_out + lo * g->out_c, g->out_c);
            }
            for (int32_t ox = 0; ox < g->out_w; ++ox) {
                if (ox == lo && lo < hi) { /* (the run above) */
                    ox = hi - 1;
                    continue;
                }
                /* a window over the border: its rows copied, padding taps pad_value, then the run's code */
                nn2c_conv_rows_copy(g, in_b, iy0, ox * g->stride_w - g->pad_w, span, (int8_t)pad_value, window);
                nn2c_conv_rows_run(records, window, 0, 1, span, g->filter_h, shape, filter, row_out + ox * g->out_c,
                                   g->out_c);
            }
        }
    }
}

/* --- ADD ----------------------------------------------------------------------------------------- */

/* MultiplyByQuantizedMultiplierSmallerThanOneExp (shift <= 0), as nn2c_simd_requant. */
NN2C_INLINE int32_t nn2c_simd_scale_down(int32_t x, int32_t multiplier, int32_t shift, const int64_t *rounding) {
    if (shift < 0) {
        const int64_t v = rounding[(uint32_t)x >> 31] + (int64_t)x * multiplier;
        return (int32_t)(v >> 32) >> (-shift - 1);
    }
    return (int32_t)(((int64_t)x * multiplier + ((int64_t)1 << 30)) >> 31);
}

void nn2c_add_s8_simd(const nn2c_add_simd_params_t *p, const int8_t *input1, const int8_t *input2, int8_t *output) {
    const int32_t n = p->count;
    int32_t i = 0;
#if defined(NN2C_SIMD_MVE)
    /* The input with the larger scale has the multiplier 2^30 and shift 0 (its real multiplier is 1/2):
     * SaturatingRoundingDoublingHighMul((x + offset) << 20, 2^30) is then exactly (x + offset) << 19. */
    const int exact1 = p->multipliers[0] == (1 << 30) && p->shifts[0] == 0;
    const int exact2 = p->multipliers[1] == (1 << 30) && p->shifts[1] == 0;
    if (exact1 || exact2) {
        /* a: the exact input, b: the other (ADD's sum is symmetric); parameters in locals (the int8
         * stores could alias the struct), the whole vectors without predicates, then the tail */
        const int8_t *xa = exact1 ? input1 : input2, *xb = exact1 ? input2 : input1;
        const int32_t off_a = exact1 ? p->input1_offset : p->input2_offset;
        const int32_t off_b = exact1 ? p->input2_offset : p->input1_offset;
        const int32_t mb = p->multipliers[exact1 ? 1 : 0], mo = p->multipliers[2], off_out = p->output_offset;
        const int32x4_t right_b = vdupq_n_s32(p->shifts[exact1 ? 1 : 0]), right_out = vdupq_n_s32(p->shifts[2]);
        const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
#if defined(NN2C_INLINE_ASM)
        const int32_t shift_b = p->shifts[exact1 ? 1 : 0], shift_out = p->shifts[2];
        if (shift_b < 0 && shift_out < 0) {
            /* both roundings right shifts (the usual layer): a tail-predicated loop over 4 lanes, 18
             * instructions a step. VMLAS puts each input's offset and left shift in one instruction
             * ((x + offset) 2^k = x 2^k + offset 2^k); with the shift negative, RoundingDivideByPOT's
             * correction is the sign itself (VSHR #31) and VRSHL takes the shift from a register. The
             * intrinsics below took 26 (resnet's three ADDs: 187,830 instructions, QEMU). */
            const int32x4_t up19 = vdupq_n_s32(1 << 19), up20 = vdupq_n_s32(1 << 20);
            const int32_t add_a = (int32_t)((uint32_t)off_a << 19), add_b = (int32_t)((uint32_t)off_b << 20);
            int32x4_t a, b, t;
            int8_t *out = output;
            __asm__ volatile("dlstp.32     lr, %[n]\n"
                             "1:\n\t"
                             "vldrb.s32    %q[a], [%[xa]], #4\n\t"
                             "vldrb.s32    %q[b], [%[xb]], #4\n\t"
                             "vmlas.s32    %q[a], %q[up19], %[add_a]\n\t"
                             "vmlas.s32    %q[b], %q[up20], %[add_b]\n\t"
                             "vqrdmulh.s32 %q[b], %q[b], %[mb]\n\t"
                             "vshr.s32     %q[t], %q[b], #31\n\t"
                             "vqadd.s32    %q[b], %q[b], %q[t]\n\t"
                             "vrshl.s32    %q[b], %[shift_b]\n\t"
                             "vadd.i32     %q[a], %q[a], %q[b]\n\t"
                             "vqrdmulh.s32 %q[a], %q[a], %[mo]\n\t"
                             "vshr.s32     %q[t], %q[a], #31\n\t"
                             "vqadd.s32    %q[a], %q[a], %q[t]\n\t"
                             "vrshl.s32    %q[a], %[shift_out]\n\t"
                             "vadd.i32     %q[a], %q[a], %[off_out]\n\t"
                             "vmax.s32     %q[a], %q[a], %q[lo]\n\t"
                             "vmin.s32     %q[a], %q[a], %q[hi]\n\t"
                             "vstrb.32     %q[a], [%[out]], #4\n\t"
                             "letp         lr, 1b\n\t"
                             : [xa] "+r"(xa), [xb] "+r"(xb), [out] "+r"(out), [a] "=&w"(a), [b] "=&w"(b), [t] "=&w"(t)
                             : [n] "r"(n), [up19] "w"(up19), [up20] "w"(up20), [add_a] "r"(add_a), [add_b] "r"(add_b),
                               [mb] "r"(mb), [mo] "r"(mo), [shift_b] "r"(shift_b), [shift_out] "r"(shift_out),
                               [off_out] "r"(off_out), [lo] "w"(lo), [hi] "w"(hi)
                             : "lr", "memory");
            return;
        }
#endif
#define NN2C_MVE_ADD4(A, B) \
    do { \
        const int32x4_t a = vshlq_n_s32(vaddq_n_s32((A), off_a), 19); \
        int32x4_t b = vqrdmulhq_n_s32(vshlq_n_s32(vaddq_n_s32((B), off_b), 20), mb); \
        b = vrshlq_s32(vqaddq_s32(b, vshrq_n_s32(vandq_s32(b, right_b), 31)), right_b); \
        y = vqrdmulhq_n_s32(vaddq_s32(a, b), mo); \
        y = vrshlq_s32(vqaddq_s32(y, vshrq_n_s32(vandq_s32(y, right_out), 31)), right_out); \
        y = vminq_s32(vmaxq_s32(vaddq_n_s32(y, off_out), lo), hi); \
    } while (0)
        for (; i + 4 <= n; i += 4) {
            int32x4_t y;
            NN2C_MVE_ADD4(vldrbq_s32(xa + i), vldrbq_s32(xb + i));
            vstrbq_s32(output + i, y);
        }
        if (i < n) {
            const mve_pred16_t pred = vctp32q((uint32_t)(n - i));
            int32x4_t y;
            NN2C_MVE_ADD4(vldrbq_z_s32(xa + i, pred), vldrbq_z_s32(xb + i, pred));
            vstrbq_p_s32(output + i, y, pred);
        }
#undef NN2C_MVE_ADD4
        return;
    }
    {
        const int32x4_t right1 = vdupq_n_s32(p->shifts[0]), right2 = vdupq_n_s32(p->shifts[1]);
        const int32x4_t right_out = vdupq_n_s32(p->shifts[2]);
        for (; i < n; i += 4) {
            const mve_pred16_t pred = vctp32q((uint32_t)(n - i));
            int32x4_t a = vshlq_n_s32(vaddq_n_s32(vldrbq_z_s32(input1 + i, pred), p->input1_offset), 20);
            int32x4_t b = vshlq_n_s32(vaddq_n_s32(vldrbq_z_s32(input2 + i, pred), p->input2_offset), 20);
            a = vqrdmulhq_n_s32(a, p->multipliers[0]);
            a = vrshlq_s32(vqaddq_s32(a, vshrq_n_s32(vandq_s32(a, right1), 31)), right1);
            b = vqrdmulhq_n_s32(b, p->multipliers[1]);
            b = vrshlq_s32(vqaddq_s32(b, vshrq_n_s32(vandq_s32(b, right2), 31)), right2);
            int32x4_t y = vqrdmulhq_n_s32(vaddq_s32(a, b), p->multipliers[2]);
            y = vrshlq_s32(vqaddq_s32(y, vshrq_n_s32(vandq_s32(y, right_out), 31)), right_out);
            y = vaddq_n_s32(y, p->output_offset);
            y = vminq_s32(vmaxq_s32(y, vdupq_n_s32(p->act_min)), vdupq_n_s32(p->act_max));
            vstrbq_p_s32(output + i, y, pred);
        }
    }
#else
    const int32_t off1 = p->input1_offset, off2 = p->input2_offset, off_out = p->output_offset;
    const int32_t m1 = p->multipliers[0], m2 = p->multipliers[1], mo = p->multipliers[2];
    const int32_t s1 = p->shifts[0], s2 = p->shifts[1], so = p->shifts[2];
    const int64_t *r1 = p->rounding, *r2 = p->rounding + 2, *ro = p->rounding + 4;
    const int32_t lo = p->act_min, hi = p->act_max;
#if defined(NN2C_SIMD_DSP)
    if (p->scaled1 != NULL && so < 0) {
        /* the inputs' rescaled values from their tables (two loads instead of two 64-bit products with their
         * rounding per element: resnet's ADDs 43 -> 15 instructions per element, measured in QEMU) */
        const int32_t *t1 = p->scaled1, *t2 = p->scaled2;
        const int64_t *rounding = p->rounding + 4;
        const int32_t no = -so - 1;
        if (lo == -128 && hi == 127) { /* int8's range (a RELU whose output zero point is -128 too): one SSAT */
            for (; i < n; ++i) {
                const int32_t sum = (int32_t)((uint32_t)t1[input1[i]] + (uint32_t)t2[input2[i]]);
                output[i] = (int8_t)nn2c_sat_i8((nn2c_dsp_fused_high(sum, mo, rounding) >> no) + off_out);
            }
            return;
        }
        for (; i < n; ++i) {
            const int32_t sum = (int32_t)((uint32_t)t1[input1[i]] + (uint32_t)t2[input2[i]]);
            const int32_t y = (nn2c_dsp_fused_high(sum, mo, rounding) >> no) + off_out;
            output[i] = (int8_t)nn2c_dsp_clamp(y, lo, hi);
        }
        return;
    }
    if (s1 <= 0 && s2 <= 0 && so < 0) { /* the usual case: no branches per element */
        int64_t rounding[6]; /* a local copy: the int8 stores could alias the parameter struct */
        memcpy(rounding, p->rounding, sizeof rounding);
        /* An input shift of 0 (the input with the larger scale: multiplier 2^30) has no rounding
         * constants: SaturatingRoundingDoublingHighMul(x, m) = (2x m + 2^31) >> 32 then, the high
         * word of the same sum with x doubled (|x| < 2^28) and the constant 2^31. */
        if (s1 == 0) rounding[0] = rounding[1] = (int64_t)1 << 31;
        if (s2 == 0) rounding[2] = rounding[3] = (int64_t)1 << 31;
        const int32_t up1 = 20 + (s1 == 0), up2 = 20 + (s2 == 0);
        const int32_t n1 = s1 == 0 ? 0 : -s1 - 1, n2 = s2 == 0 ? 0 : -s2 - 1, no = -so - 1;
        for (; i < n; ++i) {
            const int32_t x1 = (int32_t)((uint32_t)(input1[i] + off1) << up1);
            const int32_t x2 = (int32_t)((uint32_t)(input2[i] + off2) << up2);
            const int32_t a = nn2c_dsp_fused_high(x1, m1, rounding) >> n1;
            const int32_t b = nn2c_dsp_fused_high(x2, m2, rounding + 2) >> n2;
            const int32_t sum = (int32_t)((uint32_t)a + (uint32_t)b);
            const int32_t y = (nn2c_dsp_fused_high(sum, mo, rounding + 4) >> no) + off_out;
            output[i] = (int8_t)nn2c_dsp_clamp(y, lo, hi);
        }
        return;
    }
#endif
    for (; i < n; ++i) {
        const int32_t a = nn2c_simd_scale_down((int32_t)((uint32_t)(input1[i] + off1) << 20), m1, s1, r1);
        const int32_t b = nn2c_simd_scale_down((int32_t)((uint32_t)(input2[i] + off2) << 20), m2, s2, r2);
        int32_t y = nn2c_simd_scale_down((int32_t)((uint32_t)a + (uint32_t)b), mo, so, ro) + off_out;
        y = y < lo ? lo : y;
        output[i] = (int8_t)(y > hi ? hi : y);
    }
#endif
}
