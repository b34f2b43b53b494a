/* Sparse int8 matrix products (nn2c_sparse.h). One input row runs the nonzeros of each output
 * channel four at a time (per nonzero: its position, the input byte there, its weight, a
 * multiply-accumulate); four input rows at once share each nonzero's position and weight. Sums of
 * int32 products in any order are the same int32, so the result equals the dense kernels'. */
#include <stddef.h>
#include <string.h>

#include "nn2c_sparse.h"

/* the optional path this build keeps (codegen/kernel_config.py: a model whose layers take it reads it) */
#if !defined(NN2C_OMIT_SPARSE_ROWS4)
const uint8_t nn2c_kernel_path_sparse_rows4 = 1;
#endif
#if !defined(NN2C_OMIT_SPARSE_TABLE)
const uint8_t nn2c_kernel_path_sparse_table = 1;
#endif
#if !defined(NN2C_OMIT_SPARSE_PACKED4)
const uint8_t nn2c_kernel_path_sparse_packed4 = 1;
#endif
#if !defined(NN2C_OMIT_SPARSE_ROWS8)
const uint8_t nn2c_kernel_path_sparse_rows8 = 1;
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
/* records are an Arm DSP lowering's (codegen/ops/sparse.py): a Helium build never reads them */
#define NN2C_SPARSE_NO_RECORDS 1
#elif defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP && defined(NN2C_INLINE_ASM)
#include <arm_acle.h>
/* channel records (nn2c_sparse_s8_t.records) run nn2c_sparse_row1_records; the general loops never see them */
#define NN2C_SPARSE_RECORDS 1
#endif
#if !defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_SPARSE_NO_RECORDS)
/* the records read in C: a build of an Arm DSP lowering without the inline assembly (-O0,
 * NN2C_NO_INLINE_ASM, or on the host) */
#define NN2C_SPARSE_RECORDS_IN_C 1
#endif
#if defined(NN2C_SPARSE_RECORDS)
/* The Arm DSP loops over a list of n entries (a multiple of 4, ending where the weights' pointer pw reaches
 * end): two STEP4s of four entries an iteration, entered at the second when n / 4 is odd. */
#define NN2C_SPARSE_DSP_LOOP8(STEP4) \
    "tst    %[n], #4\n\t" \
    "bne    2f\n" \
    "1:\n\t" STEP4 \
    "2:\n\t" STEP4 \
    "cmp    %[pw], %[end]\n\t" \
    "bne    1b\n\t"
/* Four entries of a list (nn2c_sparse_dot, 16 instructions): the position bytes two at a time, one word of
 * four weights split by SXTB16 into int16 halves (w0 w2, w1 w3) for SMLABB / SMLABT (GCC's loop takes 20).
 * Two position registers, not four: the callers' channel loops keep their pointers in registers. */
#define NN2C_SPARSE_DSP_STEP4 \
    "ldrb   %[i0], [%[pi]], #1\n\t" \
    "ldrb   %[i1], [%[pi]], #1\n\t" \
    "ldr    %[w], [%[pw]], #4\n\t" \
    "ldrsb  %[i0], [%[seg], %[i0]]\n\t" \
    "ldrsb  %[i1], [%[seg], %[i1]]\n\t" \
    "sxtb16 %[t], %[w], ror #8\n\t" \
    "sxtb16 %[w], %[w]\n\t" \
    "smlabb %[acc], %[i0], %[w], %[acc]\n\t" \
    "smlabb %[acc], %[i1], %[t], %[acc]\n\t" \
    "ldrb   %[i0], [%[pi]], #1\n\t" \
    "ldrb   %[i1], [%[pi]], #1\n\t" \
    "ldrsb  %[i0], [%[seg], %[i0]]\n\t" \
    "ldrsb  %[i1], [%[seg], %[i1]]\n\t" \
    "smlabt %[acc], %[i0], %[w], %[acc]\n\t" \
    "smlabt %[acc], %[i1], %[t], %[acc]\n\t"
#endif

/* The walk over the stored entries and the output stage, kept in locals: int8 stores could alias the
 * parameter struct, and GCC would reload every field after each store. */
typedef struct {
    const uint16_t *count;
    const uint8_t *index;
    const int8_t *value;
    int32_t out_c, segments;
    const int32_t *bias, *multipliers, *shifts;
    const int64_t *rounding;
    const int32_t *records;
    int32_t pairs;
    int32_t offset, lo, hi;
} nn2c_sparse_walk_t;

NN2C_INLINE nn2c_sparse_walk_t nn2c_sparse_walk(const nn2c_sparse_s8_t *m) {
    nn2c_sparse_walk_t w;
    w.count = m->counts;
    w.index = m->index;
    w.value = m->values;
    w.out_c = m->out_c;
    w.segments = m->segments;
    w.bias = m->bias;
    w.multipliers = m->multipliers;
    w.shifts = m->shifts;
    w.rounding = m->rounding;
    w.records = m->records;
    w.pairs = m->pairs;
    w.offset = m->output_offset;
    w.lo = m->act_min;
    w.hi = m->act_max;
    return w;
}

/* Channel c's bias and output stage: from the arrays, or (a build for an Arm DSP core without inline
 * assembly: -O0, NN2C_NO_INLINE_ASM) from its record where there are records; per_channel a constant of
 * the caller's instance (a per-tensor filter's stage is entry 0 of the arrays). */
#if defined(NN2C_SPARSE_RECORDS_IN_C)
/* A pair record's output stage (nn2c_sparse_s8_t.pairs: m and h = 2^(r - 1) + offset 2^r after the bias, r one
 * more than h's trailing zeros) on acc: nn2c_requant_doubled of 2 acc, clamped to int8. */
NN2C_INLINE int32_t nn2c_sparse_pair_requant(int32_t acc, const int32_t *r) {
    int32_t shift = 1;
    for (uint32_t h = (uint32_t)r[2]; !(h & 1u); h >>= 1) ++shift;
    return nn2c_requant_doubled((int32_t)((uint32_t)acc * 2u), r[1], r[2], shift);
}
#endif

NN2C_INLINE int32_t nn2c_sparse_bias(const nn2c_sparse_walk_t *o, int32_t c, int per_channel) {
#if defined(NN2C_SPARSE_RECORDS_IN_C)
    if (o->records != NULL && o->pairs) { /* 2 bias - 2^23 (wrapping; 2 bias fits int32) */
        return (int32_t)((uint32_t)o->records[NN2C_SPARSE_RECORD * c] + 0x800000u) >> 1;
    }
    if (o->records != NULL) return o->records[per_channel ? NN2C_SPARSE_RECORD * c : c];
#else
    (void)per_channel;
#endif
    return o->bias[c];
}

NN2C_INLINE int8_t nn2c_sparse_requant(const nn2c_sparse_walk_t *o, int32_t c, int32_t acc, int per_channel) {
    const int32_t q = per_channel ? c : 0;
#if defined(NN2C_SPARSE_RECORDS_IN_C)
    if (o->records != NULL && o->pairs) { /* (int8's whole range: doubled_records_fit) */
        return (int8_t)nn2c_sparse_pair_requant(acc, o->records + NN2C_SPARSE_RECORD * c);
    }
    if (o->records != NULL && per_channel) {
        const int32_t *r = o->records + NN2C_SPARSE_RECORD * c;
        acc = nn2c_add_offset(nn2c_mbqm(acc, r[1], -(r[2] & 0xFF) - 1), o->offset);
        return (int8_t)nn2c_clamp_i32(acc, o->lo, o->hi);
    }
    if (o->records != NULL) {
        acc = nn2c_add_offset(nn2c_mbqm(acc, o->multipliers[0], o->shifts[0]), o->offset);
        return (int8_t)nn2c_clamp_i32(acc, o->lo, o->hi);
    }
#endif
    acc = nn2c_add_offset(nn2c_mbqm_rounded(acc, o->multipliers[q], o->shifts[q], o->rounding + 2 * q), o->offset);
    return (int8_t)nn2c_clamp_i32(acc, o->lo, o->hi);
}

/* acc + the products of the n entries (a multiple of 4) at *index / *value with the segment seg; *index
 * and *value move past them (the callers' loops keep the pointers in registers). */
NN2C_INLINE int32_t nn2c_sparse_dot(const int8_t *seg, const uint8_t **index, const int8_t **value, int32_t n,
                                    int32_t acc) {
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
    /* Helium: 16 entries a step, the inputs fetched by a gather load at the 16 positions */
    const uint8_t *pi = *index;
    const int8_t *pw = *value;
    for (int32_t k = 0; k < n; k += 16) {
        const mve_pred16_t live = vctp8q((uint32_t)(n - k));
        const uint8x16_t position = vldrbq_z_u8(pi + k, live);
        const int8x16_t xv = vldrbq_gather_offset_z_s8(seg, position, live);
        acc = vmladavaq_p_s8(acc, xv, vldrbq_z_s8(pw + k, live), live);
    }
    *index = pi + n;
    *value = pw + n;
    return acc;
#elif defined(NN2C_SPARSE_RECORDS)
    /* Arm DSP: NN2C_SPARSE_DSP_STEP4, eight entries a loop iteration, entered in its middle when the count
     * of fours is odd */
    if (n > 0) {
        const uint8_t *pi = *index;
        const int8_t *pw = *value;
        const int8_t *const end = pw + n;
        int32_t i0, i1, w, t;
        __asm__ volatile(NN2C_SPARSE_DSP_LOOP8(NN2C_SPARSE_DSP_STEP4)
                         : [acc] "+r"(acc), [pi] "+r"(pi), [pw] "+r"(pw), [i0] "=&r"(i0), [i1] "=&r"(i1),
                           [w] "=&r"(w), [t] "=&r"(t)
                         : [seg] "r"(seg), [end] "r"(end), [n] "r"(n)
                         : "cc", "memory");
        *index = pi;
        *value = pw;
    }
    return acc;
#else
    const uint8_t *pi = *index;
    const int8_t *pw = *value;
    for (; n >= 4; n -= 4, pi += 4, pw += 4) {
        acc += pw[0] * seg[pi[0]];
        acc += pw[1] * seg[pi[1]];
        acc += pw[2] * seg[pi[2]];
        acc += pw[3] * seg[pi[3]];
    }
    for (; n > 0; --n) { /* (a row-pair layer's lists are unpadded: sparse_layout) */
        acc += *pw++ * seg[*pi++];
    }
    *index = pi;
    *value = pw;
    return acc;
#endif
}

/* nn2c_sparse_dot for a packed row (nn2c_sparse_s8_t.packed): the entries' positions as 4-bit steps of a
 * cursor that starts at the row x; it never passes the row's last nonzero (no step after it but the
 * padding's zero steps). */
NN2C_INLINE int32_t nn2c_sparse_dot_packed(const int8_t *x, const uint8_t **steps, const int8_t **value, int32_t n,
                                           int32_t acc) {
#if defined(NN2C_SPARSE_RECORDS)
    /* Arm DSP, 20 instructions per four entries (eight a loop iteration, entered in its middle when the
     * count of fours is odd): four steps in one halfword, each taken out (AND / UBFX / the last as a
     * shifted operand) and added to the cursor before its load; the weights as in nn2c_sparse_dot. */
#define NN2C_SPARSE_PACKED_STEP4 \
    "ldrh   %[d], [%[pi]], #2\n\t" \
    "ldr    %[w], [%[pw]], #4\n\t" \
    "and    %[i0], %[d], #15\n\t" \
    "add    %[x], %[x], %[i0]\n\t" \
    "ldrsb  %[i0], [%[x]]\n\t" \
    "ubfx   %[i1], %[d], #4, #4\n\t" \
    "add    %[x], %[x], %[i1]\n\t" \
    "ldrsb  %[i1], [%[x]]\n\t" \
    "sxtb16 %[t], %[w], ror #8\n\t" \
    "sxtb16 %[w], %[w]\n\t" \
    "smlabb %[acc], %[i0], %[w], %[acc]\n\t" \
    "smlabb %[acc], %[i1], %[t], %[acc]\n\t" \
    "ubfx   %[i0], %[d], #8, #4\n\t" \
    "add    %[x], %[x], %[i0]\n\t" \
    "ldrsb  %[i0], [%[x]]\n\t" \
    "add    %[x], %[x], %[d], lsr #12\n\t" \
    "ldrsb  %[i1], [%[x]]\n\t" \
    "smlabt %[acc], %[i0], %[w], %[acc]\n\t" \
    "smlabt %[acc], %[i1], %[t], %[acc]\n\t"
    if (n > 0) {
        const uint8_t *pi = *steps;
        const int8_t *pw = *value;
        const int8_t *const end = pw + n;
        int32_t i0, i1, w, t, d;
        __asm__ volatile(NN2C_SPARSE_DSP_LOOP8(NN2C_SPARSE_PACKED_STEP4)
                         : [acc] "+r"(acc), [pi] "+r"(pi), [pw] "+r"(pw), [x] "+r"(x), [i0] "=&r"(i0),
                           [i1] "=&r"(i1), [w] "=&r"(w), [t] "=&r"(t), [d] "=&r"(d)
                         : [end] "r"(end), [n] "r"(n)
                         : "cc", "memory");
        *steps = pi;
        *value = pw;
    }
#undef NN2C_SPARSE_PACKED_STEP4
    return acc;
#else
    const uint8_t *pi = *steps;
    const int8_t *pw = *value;
    for (; n > 0; n -= 2, pi += 1, pw += 2) {
        x += pi[0] & 15;
        acc += pw[0] * *x;
        x += pi[0] >> 4;
        acc += pw[1] * *x;
    }
    *steps = pi;
    *value = pw;
    return acc;
#endif
}

/* The four rows' sums a[0..3] over a packed list (nn2c_sparse_s8_t.packed) of n entries, a multiple of 2: one
 * cursor into the rows, advanced by each entry's 4-bit step, each step and weight read once for the four rows. Row 0
 * at x0, rows 1-3 at d[0..2] bytes from it (the callers' once a call: int8 stores may alias their array of rows). */
#if defined(NN2C_INLINE_ASM) && defined(__thumb2__)
/* An entry at the cursor c (row 0; rows 1-3 at d1, d2, d3 bytes from it) after STEP: its weight, four MLAs. */
#define NN2C_SPARSE_PACKED4_ENTRY(STEP) \
    STEP \
    "ldrsb  %[v], [%[pw]], #1\n\t" \
    "ldrsb  %[t], [%[c]]\n\t" \
    "mla    %[a0], %[v], %[t], %[a0]\n\t" \
    "ldrsb  %[t], [%[c], %[d1]]\n\t" \
    "mla    %[a1], %[v], %[t], %[a1]\n\t" \
    "ldrsb  %[t], [%[c], %[d2]]\n\t" \
    "mla    %[a2], %[v], %[t], %[a2]\n\t" \
    "ldrsb  %[t], [%[c], %[d3]]\n\t" \
    "mla    %[a3], %[v], %[t], %[a3]\n\t"
/* a step byte's low half (read with it), then its high half */
#define NN2C_SPARSE_PACKED4_LOW \
    "ldrb   %[s], [%[pi]], #1\n\t" \
    "and    %[t], %[s], #15\n\t" \
    "add    %[c], %[c], %[t]\n\t"
#define NN2C_SPARSE_PACKED4_HIGH "add    %[c], %[c], %[s], lsr #4\n\t"
#endif

NN2C_INLINE void nn2c_sparse_dot4_packed(const int8_t *x0, const int32_t d[3], const uint8_t **steps,
                                         const int8_t **value, int32_t n, int32_t a[4]) {
#if defined(NN2C_INLINE_ASM) && defined(__thumb2__)
    /* 47 instructions per four entries, two steps' bytes an iteration, entered at the second when n / 2 is odd (13
     * registers; GCC's code of the C below at -Os keeps the rows' pointers and two sums on the stack: about 95) */
    if (n > 0) {
        const uint8_t *pi = *steps;
        const int8_t *pw = *value;
        const int8_t *const end = pw + n;
        const int8_t *c = x0;
        const int32_t d1 = d[0], d2 = d[1], d3 = d[2];
        int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], sv, v, t;
        __asm__ volatile("ldr    %[t], %[n]\n\t"
                         "tst    %[t], #2\n\t"
                         "bne    2f\n"
                         "1:\n\t"
                         NN2C_SPARSE_PACKED4_ENTRY(NN2C_SPARSE_PACKED4_LOW)
                         NN2C_SPARSE_PACKED4_ENTRY(NN2C_SPARSE_PACKED4_HIGH)
                         "2:\n\t"
                         NN2C_SPARSE_PACKED4_ENTRY(NN2C_SPARSE_PACKED4_LOW)
                         NN2C_SPARSE_PACKED4_ENTRY(NN2C_SPARSE_PACKED4_HIGH)
                         "ldr    %[t], %[end]\n\t"
                         "cmp    %[pw], %[t]\n\t"
                         "bne    1b\n\t"
                         : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [pi] "+r"(pi), [pw] "+r"(pw),
                           [c] "+r"(c), [s] "=&r"(sv), [v] "=&r"(v), [t] "=&r"(t)
                         : [d1] "r"(d1), [d2] "r"(d2), [d3] "r"(d3), [end] "m"(end), [n] "m"(n)
                         : "cc", "memory");
        *steps = pi;
        *value = pw;
        a[0] = a0;
        a[1] = a1;
        a[2] = a2;
        a[3] = a3;
    }
#else
    const int8_t *const x1 = x0 + d[0], *const x2 = x0 + d[1], *const x3 = x0 + d[2];
    const uint8_t *pi = *steps;
    const int8_t *pw = *value;
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], o = 0;
    for (; n > 0; n -= 2, ++pi, pw += 2) {
        const int32_t d = *pi;
        o += d & 15;
        int32_t v = pw[0];
        a0 += v * x0[o];
        a1 += v * x1[o];
        a2 += v * x2[o];
        a3 += v * x3[o];
        o += d >> 4;
        v = pw[1];
        a0 += v * x0[o];
        a1 += v * x1[o];
        a2 += v * x2[o];
        a3 += v * x3[o];
    }
    *steps = pi;
    *value = pw;
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
#endif
}
#if defined(NN2C_INLINE_ASM) && defined(__thumb2__)
#undef NN2C_SPARSE_PACKED4_HIGH
#undef NN2C_SPARSE_PACKED4_LOW
#undef NN2C_SPARSE_PACKED4_ENTRY
#endif

#if defined(NN2C_SPARSE_RECORDS)
/* nn2c_mbqm_rounded plus the output offset for a shift in [-25, -2], given the multiplier and the scale
 * word (nn2c_sparse_s8_t.records): the rounding pair is built in registers, not loaded. With sh = -shift
 * - 1 >= 1 it is 2^30 + 2^(31 + sh) - [acc < 0] 2^31: low word 2^30 | (acc's sign bit), high word
 * 2^(sh - 1) (the scale word >> 8, in register H) - [acc < 0]. ASR by a register reads its bottom byte: sh. */
#define NN2C_SPARSE_RECORD_RQ(H) \
    "and    %[lo], %[acc], #0x80000000\n\t" \
    "add    %[hi], " H ", %[acc], asr #31\n\t" \
    "orr    %[lo], %[lo], #0x40000000\n\t" \
    "smlal  %[lo], %[hi], %[acc], %[m]\n\t" \
    "asr    %[hi], %[hi], %[scale]\n\t" \
    "add    %[hi], %[hi], %[off]\n\t"

NN2C_INLINE int32_t nn2c_sparse_record_requant(int32_t acc, int32_t multiplier, int32_t scale, int32_t offset) {
    int32_t lo, hi;
    __asm__("lsr    %[hi], %[scale], #8\n\t" NN2C_SPARSE_RECORD_RQ("%[hi]")
            : [lo] "=&r"(lo), [hi] "=&r"(hi)
            : [acc] "r"(acc), [m] "r"(multiplier), [scale] "r"(scale), [off] "r"(offset));
    (void)lo;
    return hi;
}

/* The same with the high word h = scale >> 8 given: once for a channel's several outputs (its own register,
 * which the one-output loops measured slower with: the packed rows' 0.8% on pruned ad01). */
NN2C_INLINE int32_t nn2c_sparse_record_requant_h(int32_t acc, int32_t multiplier, int32_t h, int32_t scale,
                                                 int32_t offset) {
    int32_t lo, hi;
    __asm__(NN2C_SPARSE_RECORD_RQ("%[h]")
            : [lo] "=&r"(lo), [hi] "=&r"(hi)
            : [acc] "r"(acc), [m] "r"(multiplier), [h] "r"(h), [scale] "r"(scale), [off] "r"(offset));
    (void)lo;
    return hi;
}

/* The scale word of a per-tensor filter's one shift (a channel record's third word: channel_records in
 * codegen/ops/sparse.py): sh = -shift - 1 in its low byte, 2^(sh - 1) above it. */
NN2C_INLINE int32_t nn2c_sparse_scale_word(int32_t shift) {
    const int32_t sh = -shift - 1;
    return (int32_t)((1u << (sh + 7)) | (uint32_t)sh);
}

/* One input row x on the Arm DSP with channel records: per channel its counts, the dot over its entries
 * (segment by segment), the output stage from its record (or the filter's one multiplier and scale),
 * one store. Inlined with constant `segments`, `narrow` and `per_channel` into the functions below, so
 * that the usual layers (one segment, int8's whole range: SSAT is the clamp) run a loop whose pointers
 * all stay in registers. */
NN2C_INLINE void nn2c_sparse_records_loop(const nn2c_sparse_s8_t *m, const int8_t *x, int8_t *out, int32_t segments,
                                          int narrow, int per_channel, int packed) {
    const uint16_t *count = m->counts;
    const uint8_t *index = m->index;
    const int8_t *value = m->values;
    const int32_t *rec = m->records;
    const int32_t offset = m->output_offset, lo = m->act_min, hi = m->act_max;
    int32_t multiplier = 0, scale = 0;
    if (!per_channel) {
        multiplier = m->multipliers[0];
        scale = nn2c_sparse_scale_word(m->shifts[0]);
    }
    const int8_t *const end = out + m->out_c;
    for (; out < end; ++out, rec += per_channel ? NN2C_SPARSE_RECORD : 1) {
        int32_t acc = rec[0];
        if (packed) {
            acc = nn2c_sparse_dot_packed(x, &index, &value, *count++, acc);
        } else {
            for (int32_t s = 0; s < segments; ++s) {
                acc = nn2c_sparse_dot(x + s * NN2C_SPARSE_SEGMENT, &index, &value, *count++, acc);
            }
        }
        if (per_channel) {
            multiplier = rec[1];
            scale = rec[2];
        }
        const int32_t y = __ssat(nn2c_sparse_record_requant(acc, multiplier, scale, offset), 8);
        *out = (int8_t)(narrow ? nn2c_clamp_i32(y, lo, hi) : y);
    }
}

/* The channel loop of nn2c_sparse_row1_records / _biases in assembly: per channel its count and bias,
 * the list of entries (NN2C_SPARSE_DSP_STEP4, eight an iteration, entered in its middle when the count
 * of fours is odd; an empty list skips to the output stage), STAGE (the rounded output in i1), one store.
 * 13 registers; about 19 instructions a channel outside the entries where GCC's loop of
 * nn2c_sparse_records_loop took 25 (it spilled two pointers): a 1:8 pruned ad01 has 1,375 channels. */
#define NN2C_SPARSE_DSP_CHANNELS(STAGE) \
    "0:\n\t" \
    "ldrh   %[i0], [%[cnt]], #2\n\t" \
    "ldr    %[acc], [%[rec]], #4\n\t" \
    "add    %[end], %[pw], %[i0]\n\t" \
    "tst    %[i0], #4\n\t" \
    "bne    2f\n\t" \
    "cmp    %[pw], %[end]\n\t" \
    "beq    3f\n" \
    "1:\n\t" NN2C_SPARSE_DSP_STEP4 \
    "2:\n\t" NN2C_SPARSE_DSP_STEP4 \
    "cmp    %[pw], %[end]\n\t" \
    "bne    1b\n" \
    "3:\n\t" STAGE \
    "ssat   %[i1], #8, %[i1]\n\t" \
    "strb   %[i1], [%[out]], #1\n\t" \
    "cmp    %[out], %[t]\n\t" \
    "bne    0b\n\t"

/* Runs NN2C_SPARSE_DSP_CHANNELS over every channel; stage: what STAGE reads, its last word the end of out. */
#define NN2C_SPARSE_DSP_RUN(STAGE, M, X, OUT, ST) \
    do { \
        const uint16_t *cnt = (M)->counts; \
        const int32_t *rec = (M)->records; \
        const uint8_t *pi = (M)->index; \
        const int8_t *pw = (M)->values; \
        int8_t *o = (OUT); \
        int32_t acc, i0, i1, w, t; \
        const int8_t *end; \
        __asm__ volatile(NN2C_SPARSE_DSP_CHANNELS(STAGE) \
                         : [cnt] "+r"(cnt), [rec] "+r"(rec), [pi] "+r"(pi), [pw] "+r"(pw), [out] "+r"(o), \
                           [acc] "=&r"(acc), [i0] "=&r"(i0), [i1] "=&r"(i1), [w] "=&r"(w), [t] "=&r"(t), \
                           [end] "=&r"(end) \
                         : [seg] "r"(X), [stage] "r"(ST) \
                         : "cc", "memory"); \
    } while (0)

/* One segment, int8's whole range, a per-channel filter: records of bias, multiplier, scale word
 * (nn2c_sparse_record_requant); stage: the output offset, the end of out. */
__attribute__((noinline)) static void nn2c_sparse_row1_records(const nn2c_sparse_s8_t *m, const int8_t *x,
                                                               int8_t *out) {
    if (m->out_c <= 0) return;
    const int32_t stage[2] = {m->output_offset, (int32_t)(intptr_t)(out + m->out_c)};
    NN2C_SPARSE_DSP_RUN("ldrd   %[w], %[t], [%[rec]], #8\n\t"
                        "lsr    %[i1], %[t], #8\n\t"
                        "and    %[i0], %[acc], #0x80000000\n\t"
                        "add    %[i1], %[i1], %[acc], asr #31\n\t"
                        "orr    %[i0], %[i0], #0x40000000\n\t"
                        "smlal  %[i0], %[i1], %[acc], %[w]\n\t"
                        "asr    %[i1], %[i1], %[t]\n\t"
                        "ldrd   %[w], %[t], [%[stage]]\n\t"
                        "add    %[i1], %[i1], %[w]\n\t",
                        m, x, out, stage);
}

/* The same for a per-tensor filter (records: the biases alone) whose shift is at least -24: stage holds the
 * multiplier, the rounding's high word 2^(sh - 1) with the output offset folded in (+ offset 2^sh: with sh
 * <= 23 the 64-bit sum stays in range, as nn2c_record_requant's), sh = -shift - 1, the end of out. */
__attribute__((noinline)) static void nn2c_sparse_row1_biases(const nn2c_sparse_s8_t *m, const int8_t *x,
                                                              int8_t *out) {
    if (m->out_c <= 0) return;
    const int32_t sh = -m->shifts[0] - 1;
    const int32_t stage[4] = {m->multipliers[0], (int32_t)((1u << (sh - 1)) + ((uint32_t)m->output_offset << sh)), sh,
                              (int32_t)(intptr_t)(out + m->out_c)};
    NN2C_SPARSE_DSP_RUN("ldrd   %[w], %[t], [%[stage]]\n\t"
                        "and    %[i0], %[acc], #0x80000000\n\t"
                        "add    %[i1], %[t], %[acc], asr #31\n\t"
                        "orr    %[i0], %[i0], #0x40000000\n\t"
                        "smlal  %[i0], %[i1], %[acc], %[w]\n\t"
                        "ldrd   %[w], %[t], [%[stage], #8]\n\t"
                        "asr    %[i1], %[i1], %[w]\n\t",
                        m, x, out, stage);
}

/* depth > 256 or an activation range inside int8's */
__attribute__((noinline)) static void nn2c_sparse_row1_records_any(const nn2c_sparse_s8_t *m, const int8_t *x,
                                                                   int8_t *out) {
    nn2c_sparse_records_loop(m, x, out, m->segments, m->act_min > -128 || m->act_max < 127, m->per_channel, 0);
}

/* packed rows (--optimize size: one loop for every range and output stage, the smaller code) */
__attribute__((noinline)) static void nn2c_sparse_row1_packed(const nn2c_sparse_s8_t *m, const int8_t *x,
                                                              int8_t *out) {
    nn2c_sparse_records_loop(m, x, out, 1, m->act_min > -128 || m->act_max < 127, m->per_channel, 1);
}
#endif

/* One input row x without records: out[c] for every output channel; per_channel and packed constants of
 * the caller's instance. kws pruned 1:8 on the Cortex-M4 (its 1x1 convolutions run many pixels one by one)
 * took 4,518,781 instructions with a select of the stage and a test of packed in the channel loop,
 * 4,371,738 with the stage's pointers stepped per channel, 4,281,246 with these instances (QEMU). */
NN2C_INLINE void nn2c_sparse_row1_arrays(const nn2c_sparse_s8_t *m, const int8_t *x, int8_t *out, int per_channel,
                                         int packed) {
    nn2c_sparse_walk_t w = nn2c_sparse_walk(m);
    for (int32_t c = 0; c < w.out_c; ++c) {
        int32_t acc = nn2c_sparse_bias(&w, c, per_channel);
        if (packed) {
            acc = nn2c_sparse_dot_packed(x, &w.index, &w.value, *w.count++, acc);
        } else if (w.segments == 1) {
            /* depth <= 256 without the segment loop: measured 7% fewer instructions on pruned ad01 on the
             * Cortex-M55 (1% on the M4) than the loop below with one segment */
            const int32_t n = *w.count++;
            acc = nn2c_sparse_dot(x, &w.index, &w.value, n, acc);
        } else {
            for (int32_t s = 0; s < w.segments; ++s) {
                const int32_t n = *w.count++;
                acc = nn2c_sparse_dot(x + s * NN2C_SPARSE_SEGMENT, &w.index, &w.value, n, acc);
            }
        }
        out[c] = nn2c_sparse_requant(&w, c, acc, per_channel);
    }
}

/* packed rows without records (portable C, Helium): one instance for both kinds of filter */
__attribute__((noinline)) static void nn2c_sparse_row1_packed_arrays(const nn2c_sparse_s8_t *m, const int8_t *x,
                                                                     int8_t *out) {
    nn2c_sparse_row1_arrays(m, x, out, m->per_channel, 1);
}

/* One input row x: out[c] for every output channel. */
static void nn2c_sparse_row1(const nn2c_sparse_s8_t *m, const int8_t *x, int8_t *out) {
#if defined(NN2C_SPARSE_RECORDS)
    if (m->records != NULL) {
        if (m->packed) {
            nn2c_sparse_row1_packed(m, x, out);
        } else if (m->segments == 1 && m->act_min == -128 && m->act_max == 127 && m->per_channel) {
            nn2c_sparse_row1_records(m, x, out);
        } else if (m->segments == 1 && m->act_min == -128 && m->act_max == 127 && m->shifts[0] >= -24) {
            nn2c_sparse_row1_biases(m, x, out);
        } else {
            nn2c_sparse_row1_records_any(m, x, out);
        }
        return;
    }
#endif
    if (m->packed) {
        nn2c_sparse_row1_packed_arrays(m, x, out);
    } else if (m->per_channel) {
        nn2c_sparse_row1_arrays(m, x, out, 1, 0);
    } else {
        nn2c_sparse_row1_arrays(m, x, out, 0, 0);
    }
}

#if !defined(NN2C_OMIT_SPARSE_TABLE) /* nn2c_config.h: some one-row layer is in the pair table layout */
/* The pair table of n <= NN2C_SPARSE_TABLE_INPUTS inputs x (nn2c_sparse_s8_t.table): per block of 16 inputs, for
 * each of B's four-input quarters and each A input p, four words x[A p] + 2^16 x[B q] as int16 halves (PKHBT);
 * a last partial block reads its inputs from a zero-padded copy (nothing past the row is read). */
static void nn2c_sparse_build_table(const int8_t *x, int32_t n, int32_t *tab) {
    int8_t last[16];
    for (int32_t at = 0; at < n; at += 16, x += 16) {
        const int8_t *v = x;
        if (n - at < 16) {
            memset(last, 0, sizeof last);
            memcpy(last, x, (size_t)(n - at));
            v = last;
        }
        for (int32_t h = 8; h < 16; h += 4) {
#if defined(NN2C_SPARSE_RECORDS)
            /* 8 A inputs x 4 B inputs in 48 instructions (PKHBT: A's low half, B's as the high; one STM of four
             * words, whose registers must ascend: fixed ones, r7 left to a frame pointer; GCC's loop of the C below
             * took 104) */
            const int32_t b0 = v[h], b1 = v[h + 1], b2 = v[h + 2], b3 = v[h + 3];
            int32_t a;
            register int32_t t0 __asm__("r4"), t1 __asm__("r5"), t2 __asm__("r6"), t3 __asm__("r8");
#define NN2C_SPARSE_TABLE_ROW(P) \
    "ldrsb  %[a], [%[v], #" #P "]\n\t" \
    "pkhbt  %[t0], %[a], %[b0], lsl #16\n\t" \
    "pkhbt  %[t1], %[a], %[b1], lsl #16\n\t" \
    "pkhbt  %[t2], %[a], %[b2], lsl #16\n\t" \
    "pkhbt  %[t3], %[a], %[b3], lsl #16\n\t" \
    "stmia  %[tab]!, {%[t0], %[t1], %[t2], %[t3]}\n\t"
            __asm__ volatile(NN2C_SPARSE_TABLE_ROW(0) NN2C_SPARSE_TABLE_ROW(1) NN2C_SPARSE_TABLE_ROW(2)
                             NN2C_SPARSE_TABLE_ROW(3) NN2C_SPARSE_TABLE_ROW(4) NN2C_SPARSE_TABLE_ROW(5)
                             NN2C_SPARSE_TABLE_ROW(6) NN2C_SPARSE_TABLE_ROW(7)
                             : [tab] "+r"(tab), [a] "=&r"(a), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2),
                               [t3] "=&r"(t3)
                             : [v] "r"(v), [b0] "r"(b0), [b1] "r"(b1), [b2] "r"(b2), [b3] "r"(b3)
                             : "memory");
#undef NN2C_SPARSE_TABLE_ROW
#else
            const uint32_t b0 = (uint32_t)(int32_t)v[h] << 16, b1 = (uint32_t)(int32_t)v[h + 1] << 16;
            const uint32_t b2 = (uint32_t)(int32_t)v[h + 2] << 16, b3 = (uint32_t)(int32_t)v[h + 3] << 16;
            for (int32_t p = 0; p < 8; ++p, tab += 4) {
                const uint32_t a = (uint16_t)(int16_t)v[p];
                tab[0] = (int32_t)(a | b0);
                tab[1] = (int32_t)(a | b1);
                tab[2] = (int32_t)(a | b2);
                tab[3] = (int32_t)(a | b3);
            }
#endif
        }
    }
}

#if defined(NN2C_SPARSE_RECORDS)
/* Two words of a pair table's list (nn2c_sparse_table_dot): one LDM of both words' table index and weight pair
 * (into i0 w0 i1 w1: fixed registers r0-r3, as LDM's list must ascend), the table words there, one SMLAD each;
 * four words (STEP4): 10 instructions for up to 8 products (14 with the indices as uint16 in an array of their
 * own: their loads, QEMU). */
#define NN2C_SPARSE_TABLE_STEP2 \
    "ldm    %[pw]!, {%[i0], %[w0], %[i1], %[w1]}\n\t" \
    "ldr    %[i0], [%[tab], %[i0], lsl #2]\n\t" \
    "ldr    %[i1], [%[tab], %[i1], lsl #2]\n\t" \
    "smlad  %[acc], %[i0], %[w0], %[acc]\n\t" \
    "smlad  %[acc], %[i1], %[w1], %[acc]\n\t"
#define NN2C_SPARSE_TABLE_STEP4 NN2C_SPARSE_TABLE_STEP2 NN2C_SPARSE_TABLE_STEP2
/* The registers of NN2C_SPARSE_TABLE_STEP2's LDM, in ascending order. */
#define NN2C_SPARSE_TABLE_LDM_REGISTERS \
    register int32_t i0 __asm__("r0"), w0 __asm__("r1"), i1 __asm__("r2"), w1 __asm__("r3")
#endif

/* acc plus the n words (a multiple of 4) at *words (per word its table index, then its weight pair) over the
 * table tab; the pointer moves past them. */
NN2C_INLINE int32_t nn2c_sparse_table_dot(const int32_t *tab, const int32_t **words, int32_t n, int32_t acc) {
    const int32_t *pw = *words;
#if defined(NN2C_SPARSE_RECORDS)
    if (n > 0) {
        const int32_t *const end = pw + 2 * n;
        NN2C_SPARSE_TABLE_LDM_REGISTERS;
        __asm__ volatile("tst    %[n], #4\n\t"
                         "bne    2f\n"
                         "1:\n\t" NN2C_SPARSE_TABLE_STEP4
                         "2:\n\t" NN2C_SPARSE_TABLE_STEP4
                         "cmp    %[pw], %[end]\n\t"
                         "bne    1b\n\t"
                         : [acc] "+r"(acc), [pw] "+r"(pw), [i0] "=&r"(i0), [i1] "=&r"(i1), [w0] "=&r"(w0),
                           [w1] "=&r"(w1)
                         : [tab] "r"(tab), [end] "r"(end), [n] "r"(n)
                         : "cc", "memory");
    }
#else
    for (const int32_t *const end = pw + 2 * n; pw != end; pw += 2) {
        const int32_t t = tab[pw[0]], w = pw[1];
        /* SMLAD: both int16 halves' products (wrapping like the instruction's int32 sum) */
        acc = (int32_t)((uint32_t)acc + (uint32_t)((int16_t)t * (int16_t)w) +
                        (uint32_t)((int32_t)(int16_t)(t >> 16) * (int32_t)(int16_t)(w >> 16)));
    }
#endif
    *words = pw;
    return acc;
}

/* Channel c's sum before its pair tables (the bias, input offset folded in) and its output stage: from its
 * record (or the filter's one multiplier and scale) in the assembly builds, else as nn2c_sparse_bias /
 * nn2c_sparse_requant. */
NN2C_INLINE int32_t nn2c_sparse_table_bias(const nn2c_sparse_walk_t *w, int32_t c, int per_channel, int doubled) {
    if (doubled) return w->records[NN2C_SPARSE_TABLE_RECORD * c];
#if defined(NN2C_SPARSE_RECORDS)
    if (w->records != NULL) return w->records[per_channel ? NN2C_SPARSE_RECORD * c : c];
#endif
    return nn2c_sparse_bias(w, c, per_channel);
}

NN2C_INLINE int8_t nn2c_sparse_table_out(const nn2c_sparse_walk_t *w, int32_t c, int32_t acc, int per_channel,
                                         int doubled) {
    if (doubled) return (int8_t)nn2c_record_requant_doubled(acc, w->records + NN2C_SPARSE_TABLE_RECORD * c + 1);
#if defined(NN2C_SPARSE_RECORDS)
    if (w->records != NULL) {
        const int32_t *r = w->records + NN2C_SPARSE_RECORD * c;
        const int32_t y = per_channel ? nn2c_sparse_record_requant(acc, r[1], r[2], w->offset)
                                      : nn2c_sparse_record_requant(acc, w->multipliers[0],
                                                                   nn2c_sparse_scale_word(w->shifts[0]), w->offset);
        return (int8_t)nn2c_clamp_i32(__ssat(y, 8), w->lo, w->hi);
    }
#endif
    return nn2c_sparse_requant(w, c, acc, per_channel);
}

/* One input row x in the pair table layout in C (an activation range inside int8's, arrays, or no assembly):
 * table by table, its build, then every channel's words; sums carried between tables in scratch after it. */
static void nn2c_sparse_row1_table_any(const nn2c_sparse_s8_t *m, const int8_t *x, int8_t *out, int32_t *scratch) {
    nn2c_sparse_walk_t w = nn2c_sparse_walk(m);
    const int32_t *pw = m->table_words;
    int32_t *const tab = scratch, *const carry = scratch + NN2C_SPARSE_TABLE_WORDS;
    const int per_channel = m->per_channel, doubled = m->table == 2;
    for (int32_t t = 0; t < w.segments; ++t) {
        const int32_t first = t * NN2C_SPARSE_TABLE_INPUTS;
        nn2c_sparse_build_table(x + first, NN2C_MIN(NN2C_SPARSE_TABLE_INPUTS, m->depth - first), tab);
        const int last = t + 1 == w.segments;
        for (int32_t c = 0; c < w.out_c; ++c) {
            int32_t acc = t == 0 ? nn2c_sparse_table_bias(&w, c, per_channel, doubled) : carry[c];
            acc = nn2c_sparse_table_dot(tab, &pw, *w.count++, acc);
            if (last) {
                out[c] = nn2c_sparse_table_out(&w, c, acc, per_channel, doubled);
            } else {
                carry[c] = acc;
            }
        }
    }
}

#if defined(NN2C_SPARSE_RECORDS)
/* The channel loop of one pair table in assembly (12 registers, four of them fixed): per channel its
 * count (at least 4: the codegen pads an empty list, rare, rather than test every list for one), START (acc: its
 * bias from its record, or its sum carried from the tables before), its words (NN2C_SPARSE_TABLE_STEP4, eight an
 * iteration, entered in its middle when the count of fours is odd), FINISH (the output stage and store, or the
 * sum carried on), which leaves the end of its output in w1. */
#define NN2C_SPARSE_TABLE_CHANNELS(START, FINISH) \
    "0:\n\t" \
    "ldrh   %[i0], [%[cnt]], #2\n\t" START \
    "add    %[end], %[pw], %[i0], lsl #3\n\t" \
    "tst    %[i0], #4\n\t" \
    "bne    2f\n" \
    "1:\n\t" NN2C_SPARSE_TABLE_STEP4 \
    "2:\n\t" NN2C_SPARSE_TABLE_STEP4 \
    "cmp    %[pw], %[end]\n\t" \
    "bne    1b\n" \
    "3:\n\t" FINISH \
    "cmp    %[out], %[w1]\n\t" \
    "bne    0b\n\t"
/* acc from the channel's record (rec at its bias, left at its multiplier) */
#define NN2C_SPARSE_TABLE_BIAS "ldr    %[acc], [%[rec]], #4\n\t"
/* acc carried in the int32 at out */
#define NN2C_SPARSE_TABLE_CARRIED "ldr    %[acc], [%[out]]\n\t"
/* acc carried in the int32 at stage[2] (the pointer stepped there: out is the int8 output; i0 holds the count) */
#define NN2C_SPARSE_TABLE_CARRIED_AT \
    "ldr    %[i1], [%[stage], #8]\n\t" \
    "ldr    %[acc], [%[i1]], #4\n\t" \
    "str    %[i1], [%[stage], #8]\n\t"
/* the sum carried on to the next table (stage[1]: the end of the carried sums); REC how far rec steps */
#define NN2C_SPARSE_TABLE_CARRY(REC) \
    REC "str    %[acc], [%[out]], #4\n\t" \
    "ldr    %[w1], [%[stage], #4]\n\t"
/* the output stage of the channel's record (nn2c_sparse_record_requant: multiplier, scale word at rec, which
 * steps by STEP) with stage[0] the output offset, stage[1] the end of out; int8's whole range (SSAT) */
#define NN2C_SPARSE_TABLE_OUT(STEP) \
    "ldrd   %[w0], %[w1], [%[rec]], " STEP "\n\t" \
    "lsr    %[i1], %[w1], #8\n\t" \
    "and    %[i0], %[acc], #0x80000000\n\t" \
    "add    %[i1], %[i1], %[acc], asr #31\n\t" \
    "orr    %[i0], %[i0], #0x40000000\n\t" \
    "smlal  %[i0], %[i1], %[acc], %[w0]\n\t" \
    "asr    %[i1], %[i1], %[w1]\n\t" \
    "ldrd   %[w0], %[w1], [%[stage]]\n\t" \
    "add    %[i1], %[i1], %[w0]\n\t" \
    "ssat   %[i1], #8, %[i1]\n\t" \
    "strb   %[i1], [%[out]], #1\n\t"
/* the output stage of the channel's doubled record (m, c, r at rec, r's load stepping by STEP past it), as
 * nn2c_requant_doubled, with stage[1] the end of out: 8 instructions where NN2C_SPARSE_TABLE_OUT takes 11 */
#define NN2C_SPARSE_TABLE_OUT_DOUBLED(STEP) \
    "ldrd   %[w0], %[w1], [%[rec]], #8\n\t" \
    "ldr    %[i1], [%[rec]], " STEP "\n\t" \
    "add    %[i0], %[w1], %[acc], asr #31\n\t" \
    "smmlar %[i0], %[acc], %[w0], %[i0]\n\t" \
    "asr    %[i0], %[i0], %[i1]\n\t" \
    "ssat   %[i0], #8, %[i0]\n\t" \
    "strb   %[i0], [%[out]], #1\n\t" \
    "ldr    %[w1], [%[stage], #4]\n\t"
#define NN2C_SPARSE_TABLE_RUN(STAGE, START, FINISH, OUT, REC) \
    do { \
        const int32_t *const st_ = (STAGE); \
        int8_t *o = (int8_t *)(OUT); \
        const int32_t *rec = (REC); \
        int32_t acc; \
        NN2C_SPARSE_TABLE_LDM_REGISTERS; \
        const int32_t *end; \
        __asm__ volatile(NN2C_SPARSE_TABLE_CHANNELS(START, FINISH) \
                         : [cnt] "+r"(cnt), [pw] "+r"(pw), [out] "+r"(o), [rec] "+r"(rec), \
                           [acc] "=&r"(acc), [i0] "=&r"(i0), [i1] "=&r"(i1), [w0] "=&r"(w0), [w1] "=&r"(w1), \
                           [end] "=&r"(end) \
                         : [tab] "r"(tab), [stage] "r"(st_) \
                         : "cc", "memory"); \
    } while (0)
#endif

/* One input row x in the pair table layout (nn2c_sparse_s8_t.table). With per-channel records and int8's whole
 * range (what the codegen writes for it), each table's channel loop in assembly (NN2C_SPARSE_TABLE_CHANNELS);
 * else nn2c_sparse_row1_table_any. */
__attribute__((noinline)) static void nn2c_sparse_row1_table(const nn2c_sparse_s8_t *m, const int8_t *x, int8_t *out,
                                                             int32_t *scratch) {
#if defined(NN2C_SPARSE_RECORDS)
    if (m->records != NULL && m->per_channel && m->act_min == -128 && m->act_max == 127 && m->out_c > 0) {
        const uint16_t *cnt = m->counts;
        const int32_t *pw = m->table_words;
        int32_t *const tab = scratch, *const carry = scratch + NN2C_SPARSE_TABLE_WORDS;
        int32_t stages[3] = {m->output_offset, (int32_t)(intptr_t)(out + m->out_c), (int32_t)(intptr_t)carry};
        int32_t *const stage = stages;
        const int32_t tables = m->segments;
        const int doubled = m->table == 2;
        for (int32_t t = 0; t < tables; ++t) {
            const int32_t first = t * NN2C_SPARSE_TABLE_INPUTS;
            nn2c_sparse_build_table(x + first, NN2C_MIN(NN2C_SPARSE_TABLE_INPUTS, m->depth - first), tab);
            if (t + 1 < tables) {
                const int32_t carried[2] = {0, (int32_t)(intptr_t)(carry + m->out_c)};
                if (t > 0) {
                    NN2C_SPARSE_TABLE_RUN(carried, NN2C_SPARSE_TABLE_CARRIED, NN2C_SPARSE_TABLE_CARRY(""), carry,
                                          m->records);
                } else if (doubled) {
                    NN2C_SPARSE_TABLE_RUN(carried, NN2C_SPARSE_TABLE_BIAS,
                                          NN2C_SPARSE_TABLE_CARRY("add    %[rec], %[rec], #12\n\t"), carry,
                                          m->records);
                } else {
                    NN2C_SPARSE_TABLE_RUN(carried, NN2C_SPARSE_TABLE_BIAS,
                                          NN2C_SPARSE_TABLE_CARRY("add    %[rec], %[rec], #8\n\t"), carry,
                                          m->records);
                }
            } else if (t == 0 && doubled) {
                NN2C_SPARSE_TABLE_RUN(stage, NN2C_SPARSE_TABLE_BIAS, NN2C_SPARSE_TABLE_OUT_DOUBLED("#4"), out,
                                      m->records);
            } else if (t == 0) {
                NN2C_SPARSE_TABLE_RUN(stage, NN2C_SPARSE_TABLE_BIAS, NN2C_SPARSE_TABLE_OUT("#8"), out, m->records);
            } else if (doubled) {
                NN2C_SPARSE_TABLE_RUN(stage, NN2C_SPARSE_TABLE_CARRIED_AT, NN2C_SPARSE_TABLE_OUT_DOUBLED("#8"), out,
                                      m->records + 1);
            } else {
                NN2C_SPARSE_TABLE_RUN(stage, NN2C_SPARSE_TABLE_CARRIED_AT, NN2C_SPARSE_TABLE_OUT("#12"), out,
                                      m->records + 1);
            }
        }
        return;
    }
#endif
    nn2c_sparse_row1_table_any(m, x, out, scratch);
}
#endif

/* Four input rows x[0..3] (output rows out[0..3]) at once; per_channel and packed constants of the instance
 * (nn2c_sparse_row4_packed's one instance reads per_channel at run time: the smaller code). */
NN2C_INLINE void nn2c_sparse_row4_arrays(const nn2c_sparse_s8_t *m, const int8_t *const x[4], int8_t *const out[4],
                                         int per_channel, int packed) {
    nn2c_sparse_walk_t w = nn2c_sparse_walk(m);
    const int8_t *const row0 = x[0];
    const int32_t d[3] = {(int32_t)(x[1] - row0), (int32_t)(x[2] - row0), (int32_t)(x[3] - row0)};
    for (int32_t c = 0; c < w.out_c; ++c) {
        int32_t a0 = nn2c_sparse_bias(&w, c, per_channel), a1 = a0, a2 = a0, a3 = a0;
        if (packed) { /* (one list a channel) */
            int32_t a[4] = {a0, a0, a0, a0};
            nn2c_sparse_dot4_packed(row0, d, &w.index, &w.value, *w.count++, a);
            a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
        }
        for (int32_t s = 0; s < (packed ? 0 : w.segments); ++s) {
            const int32_t base = s * NN2C_SPARSE_SEGMENT;
            const int8_t *x0 = x[0] + base, *x1 = x[1] + base, *x2 = x[2] + base, *x3 = x[3] + base;
            const uint8_t *index = w.index;
            const int8_t *value = w.value;
            const int32_t n = *w.count++;
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
            for (int32_t k = 0; k < n; k += 16) { /* the positions and weights loaded once for 4 gathers */
                const mve_pred16_t live = vctp8q((uint32_t)(n - k));
                const uint8x16_t position = vldrbq_z_u8(index + k, live);
                const int8x16_t wv = vldrbq_z_s8(value + k, live);
                a0 = vmladavaq_p_s8(a0, vldrbq_gather_offset_z_s8(x0, position, live), wv, live);
                a1 = vmladavaq_p_s8(a1, vldrbq_gather_offset_z_s8(x1, position, live), wv, live);
                a2 = vmladavaq_p_s8(a2, vldrbq_gather_offset_z_s8(x2, position, live), wv, live);
                a3 = vmladavaq_p_s8(a3, vldrbq_gather_offset_z_s8(x3, position, live), wv, live);
            }
#else
            for (int32_t k = 0; k < n; ++k) { /* GCC's loop: 12 instructions per entry on Cortex-M4 */
                const int32_t i = index[k], v = value[k];
                a0 += v * x0[i];
                a1 += v * x1[i];
                a2 += v * x2[i];
                a3 += v * x3[i];
            }
#endif
            w.index += n;
            w.value += n;
        }
        out[0][c] = nn2c_sparse_requant(&w, c, a0, per_channel);
        out[1][c] = nn2c_sparse_requant(&w, c, a1, per_channel);
        out[2][c] = nn2c_sparse_requant(&w, c, a2, per_channel);
        out[3][c] = nn2c_sparse_requant(&w, c, a3, per_channel);
    }
}

#if defined(NN2C_SPARSE_RECORDS)
/* Four entries of a list over four input rows x0..x3 (nn2c_sparse_row4_records: 40 instructions, GCC's loop took
 * 52): the weights' word split by SXTB16 twice (w1 w3, then w0 w2) for SMLABB / SMLABT, each position byte
 * read once for the four rows; the last one read with the step past the four. */
#define NN2C_SPARSE_DSP_ROWS4_MACS(SEL, POS) \
    "ldrb   %[i], " POS "\n\t" \
    "ldrsb  %[v], [%[x0], %[i]]\n\t" \
    "smlab" SEL " %[a0], %[v], %[t], %[a0]\n\t" \
    "ldrsb  %[v], [%[x1], %[i]]\n\t" \
    "smlab" SEL " %[a1], %[v], %[t], %[a1]\n\t" \
    "ldrsb  %[v], [%[x2], %[i]]\n\t" \
    "smlab" SEL " %[a2], %[v], %[t], %[a2]\n\t" \
    "ldrsb  %[v], [%[x3], %[i]]\n\t" \
    "smlab" SEL " %[a3], %[v], %[t], %[a3]\n\t"
#define NN2C_SPARSE_DSP_ROWS4_STEP4 \
    "ldr    %[t], [%[pw]]\n\t" \
    "sxtb16 %[t], %[t], ror #8\n\t" \
    NN2C_SPARSE_DSP_ROWS4_MACS("b", "[%[pi], #1]") \
    NN2C_SPARSE_DSP_ROWS4_MACS("t", "[%[pi], #3]") \
    "ldr    %[t], [%[pw]], #4\n\t" \
    "sxtb16 %[t], %[t]\n\t" \
    NN2C_SPARSE_DSP_ROWS4_MACS("t", "[%[pi], #2]") \
    NN2C_SPARSE_DSP_ROWS4_MACS("b", "[%[pi]], #4")
/* The list (n a multiple of 4, > 0) two STEP4s an iteration, entered at the second when n / 4 is odd; n and
 * the end of the weights in memory (13 registers are taken). */
#define NN2C_SPARSE_DSP_ROWS4_LOOP8_OF(STEP4) \
    "ldr    %[i], %[n]\n\t" \
    "tst    %[i], #4\n\t" \
    "bne    2f\n" \
    "1:\n\t" STEP4 \
    "2:\n\t" STEP4 \
    "ldr    %[i], %[end]\n\t" \
    "cmp    %[pw], %[i]\n\t" \
    "bne    1b\n\t"
#define NN2C_SPARSE_DSP_ROWS4_LOOP8 NN2C_SPARSE_DSP_ROWS4_LOOP8_OF(NN2C_SPARSE_DSP_ROWS4_STEP4)

/* Four input rows x[0..3] with channel records (an Arm DSP lowering's 1x1 convolution): the entries
 * (NN2C_SPARSE_DSP_ROWS4_LOOP8), each output from its channel's record (nn2c_sparse_record_requant_h, 6
 * instructions, the rounding's high word once a channel) where GCC's code of nn2c_sparse_requant from the
 * arrays took about 30. per_channel and one_segment (depth <= 256: no segment loop) constants of the caller's
 * instance. */
NN2C_INLINE void nn2c_sparse_row4_records(const nn2c_sparse_s8_t *m, const int8_t *const x[4], int8_t *const out[4],
                                          int per_channel, int one_segment, int packed) {
    const uint16_t *count = m->counts;
    const uint8_t *index = m->index;
    const int8_t *value = m->values;
    const int32_t *rec = m->records;
    const int32_t offset = m->output_offset, lo = m->act_min, hi = m->act_max, out_c = m->out_c;
    const int32_t segments = one_segment ? 1 : m->segments;
    const int narrow = lo > -128 || hi < 127;
    int32_t multiplier = 0, scale = 0;
    if (!per_channel) {
        multiplier = m->multipliers[0];
        scale = nn2c_sparse_scale_word(m->shifts[0]);
    }
    const int8_t *const x0 = x[0], *const x1 = x[1], *const x2 = x[2], *const x3 = x[3];
    const int32_t d[3] = {(int32_t)(x1 - x0), (int32_t)(x2 - x0), (int32_t)(x3 - x0)};
    int8_t *const o0 = out[0], *const o1 = out[1], *const o2 = out[2], *const o3 = out[3];
    for (int32_t c = 0; c < out_c; ++c, rec += per_channel ? NN2C_SPARSE_RECORD : 1) {
        int32_t a0 = rec[0], a1 = a0, a2 = a0, a3 = a0;
        if (packed) { /* (one list a channel) */
            int32_t a[4] = {a0, a0, a0, a0};
            nn2c_sparse_dot4_packed(x0, d, &index, &value, *count++, a);
            a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
        }
        for (int32_t s = 0, base = 0; s < (packed ? 0 : segments); ++s, base += NN2C_SPARSE_SEGMENT) {
            const int32_t n = *count++;
#if !defined(__OPTIMIZE_SIZE__) /* (at -Os GCC 12 finds no 13 registers for it here: the C loop) */
            if (n > 0) {
                const int8_t *const end = value + n;
                int32_t i, v, t;
                __asm__ volatile(NN2C_SPARSE_DSP_ROWS4_LOOP8
                                 : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [pi] "+r"(index),
                                   [pw] "+r"(value), [i] "=&r"(i), [v] "=&r"(v), [t] "=&r"(t)
                                 : [x0] "r"(x0 + base), [x1] "r"(x1 + base), [x2] "r"(x2 + base),
                                   [x3] "r"(x3 + base), [n] "m"(n), [end] "m"(end)
                                 : "cc", "memory");
            }
#else
            for (int32_t k = 0; k < n; ++k) {
                const int32_t i = base + index[k], v = value[k];
                a0 += v * x0[i];
                a1 += v * x1[i];
                a2 += v * x2[i];
                a3 += v * x3[i];
            }
            index += n;
            value += n;
#endif
        }
        if (per_channel) {
            multiplier = rec[1];
            scale = rec[2];
        }
        const int32_t h = (int32_t)((uint32_t)scale >> 8);
        int32_t y0 = __ssat(nn2c_sparse_record_requant_h(a0, multiplier, h, scale, offset), 8);
        int32_t y1 = __ssat(nn2c_sparse_record_requant_h(a1, multiplier, h, scale, offset), 8);
        int32_t y2 = __ssat(nn2c_sparse_record_requant_h(a2, multiplier, h, scale, offset), 8);
        int32_t y3 = __ssat(nn2c_sparse_record_requant_h(a3, multiplier, h, scale, offset), 8);
        if (narrow) {
            y0 = nn2c_clamp_i32(y0, lo, hi);
            y1 = nn2c_clamp_i32(y1, lo, hi);
            y2 = nn2c_clamp_i32(y2, lo, hi);
            y3 = nn2c_clamp_i32(y3, lo, hi);
        }
        o0[c] = (int8_t)y0;
        o1[c] = (int8_t)y1;
        o2[c] = (int8_t)y2;
        o3[c] = (int8_t)y3;
    }
}
#endif

#if defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4)
/* (the rows' words `STEP` bytes from one position to the next: 8 for four rows, 16 for eight, whose second four
 * rows' words follow the first's) */
#define NN2C_SPARSE_PAIR_ROWS_ASM(STEP) \
    __asm__ volatile("cmp    %[xp], %[end]\n\t" \
                     "beq    2f\n" \
                     "1:\n\t" \
                     "ldrsb  %[a], [%[x0]], #1\n\t" \
                     "ldrsb  %[b], [%[x1]], #1\n\t" \
                     "ldrsb  %[c], [%[x2]], #1\n\t" \
                     "ldrsb  %[d], [%[x3]], #1\n\t" \
                     "add    %[a], %[a], %[b], lsl #23\n\t" \
                     "add    %[c], %[c], %[d], lsl #23\n\t" \
                     "ldrsb  %[b], [%[x1]], #1\n\t" \
                     "ldrsb  %[d], [%[x3]], #1\n\t" \
                     "strd   %[a], %[c], [%[xp]], #" STEP "\n\t" \
                     "ldrsb  %[a], [%[x0]], #1\n\t" \
                     "ldrsb  %[c], [%[x2]], #1\n\t" \
                     "add    %[a], %[a], %[b], lsl #23\n\t" \
                     "add    %[c], %[c], %[d], lsl #23\n\t" \
                     "strd   %[a], %[c], [%[xp]], #" STEP "\n\t" \
                     "cmp    %[xp], %[end]\n\t" \
                     "bne    1b\n" \
                     "2:\n\t" \
                     : [xp] "+r"(xp), [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3), [a] "=&r"(a), \
                       [b] "=&r"(b), [c] "=&r"(c), [d] "=&r"(d) \
                     : [end] "r"(end) \
                     : "cc", "memory")

/* Four input rows as two row pairs (nn2c_sparse_s8_t.pairs): at each input position the words x0 + 2^23 x1 and
 * x2 + 2^23 x3 (nn2c_sparse_pair_rows, 8 bytes a position), so that one SMLAL of an entry's weight adds to two
 * rows' sums at once, held in one 64-bit sum: 6 instructions an entry for the four rows, where
 * NN2C_SPARSE_DSP_ROWS4_MACS takes 10. Each sum starts at 2^22 + 2^23 2^22: the low field S0 + 2^22 stays in
 * [0, 2^23) (|S0| < 2^22: 128 sum|w| < 2^22, the codegen's test), so it is the sum's low 23 bits and S1 + 2^22
 * the rest shifted down. Step: words from one position to
 * the next, 2 (four rows) or 4 (eight: this call's rows at xp, the other four's at xp + 2). */
NN2C_INLINE void nn2c_sparse_pair_rows_step(const int8_t *const x[4], int32_t depth, int32_t *xp, int32_t step) {
    const int8_t *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
#if !defined(__OPTIMIZE_SIZE__)
    /* two positions a step, each position's two words in one STRD: 8.5 instructions a position (GCC's loop of
     * one position and two stores took 11) */
    int32_t *const end = xp + step * (depth & ~1);
    int32_t a, b, c, d;
    if (step == 2) {
        NN2C_SPARSE_PAIR_ROWS_ASM("8");
    } else {
        NN2C_SPARSE_PAIR_ROWS_ASM("16");
    }
    if (depth & 1) {
        xp[0] = *x0 + *x1 * (1 << 23);
        xp[1] = *x2 + *x3 * (1 << 23);
    }
#else
    for (int32_t i = 0; i < depth; ++i, xp += step) {
        xp[0] = x0[i] + x1[i] * (1 << 23);
        xp[1] = x2[i] + x3[i] * (1 << 23);
    }
#endif
}
#undef NN2C_SPARSE_PAIR_ROWS_ASM

static void nn2c_sparse_pair_rows(const int8_t *const x[4], int32_t depth, int32_t *xp) {
    nn2c_sparse_pair_rows_step(x, depth, xp, 2);
}

/* An entry of the list against the row pairs at xa / xb (xp, its second word): its position and weight bytes,
 * each pair's word at 8 x position, one SMLAL a pair */
#define NN2C_SPARSE_DSP_PAIRS_ENTRY(POS, VAL) \
    "ldrb   %[i], " POS "\n\t" \
    "ldrsb  %[w], " VAL "\n\t" \
    "ldr    %[v], [%[xa], %[i], lsl #3]\n\t" \
    "smlal  %[l0], %[h0], %[v], %[w]\n\t" \
    "ldr    %[v], [%[xb], %[i], lsl #3]\n\t" \
    "smlal  %[l1], %[h1], %[v], %[w]\n\t"
/* Four entries of a row-pair loop (ENTRY: its assembly of one, from a position and a weight operand) from the
 * positions' and weights' pointers PI and PW (one before the next entry) plus 1 to 4, the last with their step; A..D
 * the four entries' labels (a list enters at any: an unpadded list, sparse_layout) */
#define NN2C_SPARSE_DSP_PAIRS_LABELLED_STEP4(ENTRY, PI, PW, A, B, C, D) \
    A ":\n\t" ENTRY("[" PI ", #1]", "[" PW ", #1]") \
    B ":\n\t" ENTRY("[" PI ", #2]", "[" PW ", #2]") \
    C ":\n\t" ENTRY("[" PI ", #3]", "[" PW ", #3]") \
    D ":\n\t" ENTRY("[" PI ", #4]!", "[" PW ", #4]!")
#define NN2C_SPARSE_DSP_PAIRS_STEP4(A, B, C, D) \
    NN2C_SPARSE_DSP_PAIRS_LABELLED_STEP4(NN2C_SPARSE_DSP_PAIRS_ENTRY, "%[pi]", "%[pw]", A, B, C, D)
/* the output of a row from its doubled sum A (in place) with the pair record's m (w), h (v) and r (e), as
 * nn2c_record_requant_doubled */
#define NN2C_SPARSE_DSP_PAIRS_RQ(A) \
    "add    %[i], %[v], %[" A "], asr #31\n\t" \
    "smmlar %[i], %[" A "], %[w], %[i]\n\t" \
    "asr    %[i], %[i], %[e]\n\t" \
    "ssat   %[" A "], #8, %[i]\n\t"

/* What the channel loop of nn2c_sparse_row4_pairs keeps in memory (13 registers hold the rest). */
typedef struct {
    const uint16_t *count;
    const int32_t *rec;
    int8_t *out;       /* row 0's output of the channel */
    int8_t *out_end;   /* row 0's output past the last channel */
    int32_t stride;    /* bytes from one row's outputs to the next's */
    int32_t start[2];  /* a 64-bit sum's start, 2^22 + 2^23 2^22 (one LDRD) */
} nn2c_sparse_pairs_frame_t;

/* The four rows x (their outputs `stride` bytes apart from out) of a layer with pair records, per-channel and
 * over at most 256 inputs (the codegen's test), the whole channel loop in assembly: 6 instructions an entry
 * for the four rows (nn2c_sparse_row4_records: 10); fitted to QEMU counts, 1.64 per entry and row and 14.8
 * an output (nn2c.target sparse_pairs_cost; the records' loop 2.63 and 17.5). Pair record:
 * B = 2 bias - 2^23, m, h = 2^(r - 1) + offset 2^r; the doubled sums B + 2 (S + 2^22) of the rows, r counted
 * from h's trailing zeros. xp: 8 * depth bytes of scratch. */
static void nn2c_sparse_row4_pairs(const nn2c_sparse_s8_t *m, const int8_t *const x[4], int8_t *out, int32_t stride,
                                   int32_t *xp) {
    nn2c_sparse_pair_rows(x, m->depth, xp);
    nn2c_sparse_pairs_frame_t frame = {m->counts, m->records, out, out + m->out_c, stride, {0x400000, 0x2000}};
    nn2c_sparse_pairs_frame_t *const fr = &frame;
    const uint8_t *pi = m->index;
    const int8_t *pw = m->values;
    int32_t l0, h0, l1, h1, i, w, v, e;
    __asm__ volatile(
        "sub    %[pi], %[pi], #1\n\t"
        "sub    %[pw], %[pw], #1\n"
        "1:\n\t"
        "ldr    %[e], [%[fr]]\n\t"
        "ldrh   %[i], [%[e]], #2\n\t"
        "str    %[e], [%[fr]]\n\t"
        "ldrd   %[l0], %[h0], [%[fr], #20]\n\t"
        "ldrd   %[l1], %[h1], [%[fr], #20]\n\t"
        /* eight entries a pass, the first entered where the rest are whole passes: s = -n mod 8 entries skipped,
         * the pointers moved back by s mod 4 for the step it enters (n >= 1: the codegen's layout, sparse_layout) */
        "add    %[e], %[pw], %[i]\n\t"
        "rsb    %[i], %[i], #0\n\t"
        "and    %[i], %[i], #7\n\t"
        "and    %[w], %[i], #3\n\t"
        "sub    %[pi], %[pi], %[w]\n\t"
        "sub    %[pw], %[pw], %[w]\n\t"
        "tbb    [pc, %[i]]\n"
        "5:\n\t"
        ".byte  (20f - 5b) / 2, (21f - 5b) / 2, (22f - 5b) / 2, (23f - 5b) / 2\n\t"
        ".byte  (24f - 5b) / 2, (25f - 5b) / 2, (26f - 5b) / 2, (27f - 5b) / 2\n"
        NN2C_SPARSE_DSP_PAIRS_STEP4("20", "21", "22", "23") NN2C_SPARSE_DSP_PAIRS_STEP4("24", "25", "26", "27")
        "cmp    %[pw], %[e]\n\t"
        "bne    20b\n\t"
        /* the pairs' fields: S1 + 2^22 above bit 23, S0 + 2^22 below */
        "lsl    %[h0], %[h0], #9\n\t"
        "orr    %[h0], %[h0], %[l0], lsr #23\n\t"
        "ubfx   %[l0], %[l0], #0, #23\n\t"
        "lsl    %[h1], %[h1], #9\n\t"
        "orr    %[h1], %[h1], %[l1], lsr #23\n\t"
        "ubfx   %[l1], %[l1], #0, #23\n\t"
        /* the record, the doubled sums, r */
        "ldr    %[e], [%[fr], #4]\n\t"
        "ldrd   %[i], %[w], [%[e]], #12\n\t"
        "ldr    %[v], [%[e], #-4]\n\t"
        "str    %[e], [%[fr], #4]\n\t"
        "add    %[l0], %[i], %[l0], lsl #1\n\t"
        "add    %[h0], %[i], %[h0], lsl #1\n\t"
        "add    %[l1], %[i], %[l1], lsl #1\n\t"
        "add    %[h1], %[i], %[h1], lsl #1\n\t"
        "rbit   %[e], %[v]\n\t"
        "clz    %[e], %[e]\n\t"
        "add    %[e], %[e], #1\n\t"
        NN2C_SPARSE_DSP_PAIRS_RQ("l0") NN2C_SPARSE_DSP_PAIRS_RQ("h0")
        NN2C_SPARSE_DSP_PAIRS_RQ("l1") NN2C_SPARSE_DSP_PAIRS_RQ("h1")
        /* the four rows' bytes, the next channel */
        "ldr    %[w], [%[fr], #8]\n\t"
        "ldr    %[v], [%[fr], #16]\n\t"
        "strb   %[l0], [%[w]]\n\t"
        "strb   %[h0], [%[w], %[v]]\n\t"
        "add    %[e], %[w], %[v], lsl #1\n\t"
        "strb   %[l1], [%[e]]\n\t"
        "strb   %[h1], [%[e], %[v]]\n\t"
        "ldr    %[i], [%[fr], #12]\n\t"
        "add    %[w], %[w], #1\n\t"
        "str    %[w], [%[fr], #8]\n\t"
        "cmp    %[w], %[i]\n\t"
        "bne    1b\n\t"
        : [l0] "=&r"(l0), [h0] "=&r"(h0), [l1] "=&r"(l1), [h1] "=&r"(h1), [pi] "+r"(pi), [pw] "+r"(pw),
          [i] "=&r"(i), [w] "=&r"(w), [v] "=&r"(v), [e] "=&r"(e)
        : [xa] "r"(xp), [xb] "r"(xp + 1), [fr] "r"(fr)
        : "cc", "memory");
    (void)l0, (void)h0, (void)l1, (void)h1, (void)i, (void)w, (void)v, (void)e;
}
#undef NN2C_SPARSE_DSP_PAIRS_RQ
#undef NN2C_SPARSE_DSP_PAIRS_STEP4
#undef NN2C_SPARSE_DSP_PAIRS_ENTRY

#if !defined(NN2C_OMIT_SPARSE_ROWS8)
/* What nn2c_sparse_row8_pairs_asm copies onto its stack (its offsets there are the words' here). */
typedef struct {
    int32_t start[8];       /* the four 64-bit sums' start, 2^22 + 2^23 2^22 each (one LDM) */
    const uint16_t *count;  /* word 8: the next channel's entry count */
    const int32_t *rec;     /* 9: its pair record */
    int8_t *out;            /* 10: row 0's output of the channel */
    int32_t stride;         /* 11: bytes from one row's outputs to the next's (one LDRD with out) */
    int8_t *out_end;        /* 12: row 0's output past the last channel */
    const int32_t *xp;      /* 13: the row pairs, 16 bytes a position */
} nn2c_sparse_row8_frame_t;
/* (the assembly's offsets: a build for a core with wider pointers fails here instead) */
typedef char nn2c_sparse_row8_frame_check[offsetof(nn2c_sparse_row8_frame_t, xp) == 52 ? 1 : -1];

/* An entry against the eight rows' four pair words at 16 x position: its position (r8) and weight (r9) bytes, the
 * words' address, one SMLAL a pair: 11 instructions for eight rows (the four-row loop's 6 for four) */
#define NN2C_SPARSE_DSP_ROWS8_ENTRY(POS, VAL) \
    "ldrb   r8, " POS "\n\t" \
    "ldrsb  r9, " VAL "\n\t" \
    "add    r8, lr, r8, lsl #4\n\t" \
    "ldr    r10, [r8]\n\t" \
    "smlal  r0, r1, r10, r9\n\t" \
    "ldr    r10, [r8, #4]\n\t" \
    "smlal  r2, r3, r10, r9\n\t" \
    "ldr    r10, [r8, #8]\n\t" \
    "smlal  r4, r5, r10, r9\n\t" \
    "ldr    r10, [r8, #12]\n\t" \
    "smlal  r6, r7, r10, r9\n\t"
#define NN2C_SPARSE_DSP_ROWS8_STEP4(A, B, C, D) \
    NN2C_SPARSE_DSP_PAIRS_LABELLED_STEP4(NN2C_SPARSE_DSP_ROWS8_ENTRY, "r11", "r12", A, B, C, D)
/* a pair's two fields (S1 + 2^22 above bit 23 of the 64-bit sum, S0 + 2^22 below) */
#define NN2C_SPARSE_DSP_ROWS8_FIELDS(L, H) \
    "lsl    " H ", " H ", #9\n\t" \
    "orr    " H ", " H ", " L ", lsr #23\n\t" \
    "ubfx   " L ", " L ", #0, #23\n\t"
/* a row's output from its doubled sum A (in place): m r9, h r10, r r8, as nn2c_record_requant_doubled */
#define NN2C_SPARSE_DSP_ROWS8_RQ(A) \
    "add    lr, r10, " A ", asr #31\n\t" \
    "smmlar lr, " A ", r9, lr\n\t" \
    "asr    lr, lr, r8\n\t" \
    "ssat   " A ", #8, lr\n\t"

/* The channel loop of nn2c_sparse_row8_pairs, all of it in assembly with every register but sp and pc (the eight
 * rows' four 64-bit sums r0-r7, the entry r8-r10, the positions r11, the weights r12, the row pairs lr), the rest
 * in a frame on the stack (nn2c_sparse_row8_frame_t; a list's end at word 14). Per channel of eight rows, counted
 * below: 11 instructions an entry and 90 more for a list of up to 16 (two runs of nn2c_sparse_row4_pairs: 12 and
 * 118). */
__attribute__((naked, noinline)) static void nn2c_sparse_row8_pairs_asm(
    __attribute__((unused)) const nn2c_sparse_row8_frame_t *frame, __attribute__((unused)) const uint8_t *index,
    __attribute__((unused)) const int8_t *values) {
    __asm__ volatile(
        "push   {r4-r11, lr}\n\t"
        "sub    sp, sp, #64\n\t"
        "sub    r11, r1, #1\n\t"
        "sub    r12, r2, #1\n\t"
        "ldm    r0!, {r1-r8}\n\t"
        "stm    sp, {r1-r8}\n\t"
        "ldm    r0, {r1-r6}\n\t"
        "add    r7, sp, #32\n\t"
        "stm    r7, {r1-r6}\n"
        "1:\n\t"
        "ldr    r8, [sp, #32]\n\t"
        "ldrh   r9, [r8], #2\n\t" /* (at least 1: the codegen's layout, sparse_layout) */
        "str    r8, [sp, #32]\n\t"
        "ldr    lr, [sp, #52]\n\t"
        "ldm    sp, {r0-r7}\n\t"
        /* sixteen entries a pass, the first entered where the rest are whole passes: s = -n mod 16 entries
         * skipped, the pointers moved back by s mod 4 for the step it enters */
        "add    r10, r12, r9\n\t"
        "str    r10, [sp, #56]\n\t"
        "rsb    r10, r9, #0\n\t"
        "and    r10, r10, #15\n\t"
        "and    r8, r10, #3\n\t"
        "sub    r11, r11, r8\n\t"
        "sub    r12, r12, r8\n\t"
        "tbh    [pc, r10, lsl #1]\n"
        "5:\n\t"
        ".hword (20f - 5b) / 2, (21f - 5b) / 2, (22f - 5b) / 2, (23f - 5b) / 2\n\t"
        ".hword (24f - 5b) / 2, (25f - 5b) / 2, (26f - 5b) / 2, (27f - 5b) / 2\n\t"
        ".hword (28f - 5b) / 2, (29f - 5b) / 2, (30f - 5b) / 2, (31f - 5b) / 2\n\t"
        ".hword (32f - 5b) / 2, (33f - 5b) / 2, (34f - 5b) / 2, (35f - 5b) / 2\n"
        NN2C_SPARSE_DSP_ROWS8_STEP4("20", "21", "22", "23") NN2C_SPARSE_DSP_ROWS8_STEP4("24", "25", "26", "27")
        NN2C_SPARSE_DSP_ROWS8_STEP4("28", "29", "30", "31") NN2C_SPARSE_DSP_ROWS8_STEP4("32", "33", "34", "35")
        "ldr    r10, [sp, #56]\n\t"
        "cmp    r12, r10\n\t"
        "bne    20b\n\t"
        NN2C_SPARSE_DSP_ROWS8_FIELDS("r0", "r1") NN2C_SPARSE_DSP_ROWS8_FIELDS("r2", "r3")
        NN2C_SPARSE_DSP_ROWS8_FIELDS("r4", "r5") NN2C_SPARSE_DSP_ROWS8_FIELDS("r6", "r7")
        /* the record (B r8, m r9, h r10): the doubled sums B + 2 field, then r (h's trailing zeros + 1) */
        "ldr    lr, [sp, #36]\n\t"
        "ldm    lr!, {r8-r10}\n\t"
        "str    lr, [sp, #36]\n\t"
        "add    r0, r8, r0, lsl #1\n\t"
        "add    r1, r8, r1, lsl #1\n\t"
        "add    r2, r8, r2, lsl #1\n\t"
        "add    r3, r8, r3, lsl #1\n\t"
        "add    r4, r8, r4, lsl #1\n\t"
        "add    r5, r8, r5, lsl #1\n\t"
        "add    r6, r8, r6, lsl #1\n\t"
        "add    r7, r8, r7, lsl #1\n\t"
        "rbit   r8, r10\n\t"
        "clz    r8, r8\n\t"
        "add    r8, r8, #1\n\t"
        NN2C_SPARSE_DSP_ROWS8_RQ("r0") NN2C_SPARSE_DSP_ROWS8_RQ("r1") NN2C_SPARSE_DSP_ROWS8_RQ("r2")
        NN2C_SPARSE_DSP_ROWS8_RQ("r3") NN2C_SPARSE_DSP_ROWS8_RQ("r4") NN2C_SPARSE_DSP_ROWS8_RQ("r5")
        NN2C_SPARSE_DSP_ROWS8_RQ("r6") NN2C_SPARSE_DSP_ROWS8_RQ("r7")
        /* the eight rows' bytes, the next channel */
        "ldrd   r8, r9, [sp, #40]\n\t"
        "strb   r1, [r8, r9]\n\t"
        "strb   r2, [r8, r9, lsl #1]\n\t"
        "strb   r4, [r8, r9, lsl #2]\n\t"
        "add    r10, r8, r9, lsl #1\n\t"
        "strb   r3, [r10, r9]\n\t"
        "add    r10, r10, r9, lsl #2\n\t"
        "strb   r6, [r10]\n\t"
        "strb   r7, [r10, r9]\n\t"
        "sub    r10, r10, r9\n\t"
        "strb   r5, [r10]\n\t"
        "strb   r0, [r8], #1\n\t"
        "str    r8, [sp, #40]\n\t"
        "ldr    r9, [sp, #48]\n\t"
        "cmp    r8, r9\n\t"
        "bne    1b\n\t"
        "add    sp, sp, #64\n\t"
        "pop    {r4-r11, pc}\n\t");
}
#undef NN2C_SPARSE_DSP_ROWS8_RQ
#undef NN2C_SPARSE_DSP_ROWS8_FIELDS
#undef NN2C_SPARSE_DSP_ROWS8_STEP4
#undef NN2C_SPARSE_DSP_ROWS8_ENTRY

/* Eight rows x (their outputs `stride` bytes apart from out) of a layer in row pairs (nn2c_sparse_s8_t.pairs 2:
 * eight rows or more), as nn2c_sparse_row4_pairs twice with each entry's position and
 * weight read once: the four row pairs' words of a position side by side (16 * depth bytes of scratch at xp). */
static void nn2c_sparse_row8_pairs(const nn2c_sparse_s8_t *m, const int8_t *const x[8], int8_t *out, int32_t stride,
                                   int32_t *xp) {
    nn2c_sparse_pair_rows_step(x, m->depth, xp, 4);
    nn2c_sparse_pair_rows_step(x + 4, m->depth, xp + 2, 4);
    const nn2c_sparse_row8_frame_t frame = {
        {0x400000, 0x2000, 0x400000, 0x2000, 0x400000, 0x2000, 0x400000, 0x2000},
        m->counts, m->records, out, stride, out + m->out_c, xp};
    nn2c_sparse_row8_pairs_asm(&frame, m->index, m->values);
}
#endif
#undef NN2C_SPARSE_DSP_PAIRS_LABELLED_STEP4
#endif

/* nn2c_config.h: some layer runs four rows at a time, with byte positions (SPARSE_ROWS4) or packed (SPARSE_PACKED4) */
#if !defined(NN2C_OMIT_SPARSE_ROWS4) || !defined(NN2C_OMIT_SPARSE_PACKED4)
#define NN2C_SPARSE_FOUR_ROWS 1
#endif

#if defined(NN2C_SPARSE_FOUR_ROWS)
#if !defined(NN2C_OMIT_SPARSE_PACKED4)
/* a packed filter's four rows (--optimize size: one instance for every output stage, the smaller code) */
__attribute__((noinline)) static void nn2c_sparse_row4_packed(const nn2c_sparse_s8_t *m, const int8_t *const x[4],
                                                              int8_t *const out[4]) {
#if defined(NN2C_SPARSE_RECORDS)
    if (m->records != NULL) {
        nn2c_sparse_row4_records(m, x, out, m->per_channel, 1, 1);
        return;
    }
#endif
    nn2c_sparse_row4_arrays(m, x, out, m->per_channel, 1);
}
#endif

/* (every instance in the one function its callers call; pairs: 8 * depth bytes for nn2c_sparse_pair_rows where
 * m->pairs, else NULL. A build whose four-row layers are all packed leaves out the byte layout's instances, some
 * 3 KB on the Cortex-M4 at -Os.) */
static void nn2c_sparse_row4(const nn2c_sparse_s8_t *m, const int8_t *const x[4], int8_t *const out[4],
                             int32_t *pairs) {
#if !defined(NN2C_OMIT_SPARSE_PACKED4)
    if (m->packed) {
        nn2c_sparse_row4_packed(m, x, out);
        return;
    }
#endif
#if defined(NN2C_OMIT_SPARSE_ROWS4)
    (void)pairs;
#else
#if defined(NN2C_SPARSE_RECORDS)
    if (m->pairs) { /* (the four rows' outputs one stride apart: nn2c_sparse_rows_tail, the callers) */
        nn2c_sparse_row4_pairs(m, x, out[0], (int32_t)(out[1] - out[0]), pairs);
        return;
    }
    if (m->records != NULL) {
        /* (the usual layer, per-channel over at most 256 inputs, without the segment loop: kws pruned 1:8, its
         * 1x1 convolutions 11% fewer instructions on the Cortex-M4) */
        if (m->per_channel && m->segments == 1) {
            nn2c_sparse_row4_records(m, x, out, 1, 1, 0);
        } else if (m->per_channel) {
            nn2c_sparse_row4_records(m, x, out, 1, 0, 0);
        } else {
            nn2c_sparse_row4_records(m, x, out, 0, 0, 0);
        }
        return;
    }
#else
    (void)pairs;
#endif
    if (m->per_channel) {
        nn2c_sparse_row4_arrays(m, x, out, 1, 0);
    } else {
        nn2c_sparse_row4_arrays(m, x, out, 0, 0);
    }
#endif
}

#if (defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4)) || !defined(NN2C_OMIT_SPARSE_PACKED4)
/* The last n (1 to 3) rows of a layer with pair records or packed for four rows (nn2c_sparse_s8_t.packed 2), which
 * only the four-row loop reads: the last one repeated to four, computed into rows (4 * out_c bytes of scratch), the
 * n copied out. */
static void nn2c_sparse_rows_tail(const nn2c_sparse_s8_t *m, const int8_t *const x[], int8_t *const out[], int32_t n,
                                  int32_t *pairs, int8_t *rows) {
    const int8_t *const x4[4] = {x[0], x[n > 1 ? 1 : 0], x[n > 2 ? 2 : n - 1], x[n - 1]};
    int8_t *const o4[4] = {rows, rows + m->out_c, rows + 2 * m->out_c, rows + 3 * m->out_c};
    nn2c_sparse_row4(m, x4, o4, pairs);
    for (int32_t r = 0; r < n; ++r) {
        memcpy(out[r], o4[r], (size_t)m->out_c);
    }
}
#endif
#endif

#if defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4) && !defined(NN2C_OMIT_SPARSE_ROWS8)
/* The last n (5 to 7) rows of an eight-row layer: the last one repeated to eight, computed into rows (8 * out_c
 * bytes of scratch), the n copied out (one pass of the eight-row loop where the four-row loop would take two). */
static void nn2c_sparse_rows8_tail(const nn2c_sparse_s8_t *m, const int8_t *const x[], int8_t *const out[],
                                   int32_t n, int32_t *pairs, int8_t *rows) {
    const int8_t *x8[8];
    for (int32_t r = 0; r < 8; ++r) {
        x8[r] = x[r < n ? r : n - 1];
    }
    nn2c_sparse_row8_pairs(m, x8, rows, m->out_c, pairs);
    for (int32_t r = 0; r < n; ++r) {
        memcpy(out[r], rows + r * m->out_c, (size_t)m->out_c);
    }
}
#endif

void nn2c_fc_s8_sparse(const nn2c_fc_sparse_params_t *p, const int8_t *input, int8_t *output, void *scratch) {
    const nn2c_sparse_s8_t *m = &p->m;
    int32_t b = 0;
    (void)scratch; /* (a build without the four-row path) */
#if defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4) && !defined(NN2C_OMIT_SPARSE_ROWS8)
    if (m->pairs == 2) { /* eight rows at a time, then as nn2c_conv_s8_sparse: a last 5-7 as eight */
        const int8_t *x[8];
        for (; b + 8 <= p->batches; b += 8) {
            for (int32_t r = 0; r < 8; ++r) x[r] = input + (b + r) * m->depth;
            nn2c_sparse_row8_pairs(m, x, output + b * m->out_c, m->out_c, (int32_t *)scratch);
        }
        if (p->batches - b > 4) {
            int8_t *out[8];
            for (int32_t r = 0; r < p->batches - b; ++r) {
                x[r] = input + (b + r) * m->depth;
                out[r] = output + (b + r) * m->out_c;
            }
            nn2c_sparse_rows8_tail(m, x, out, p->batches - b, (int32_t *)scratch, (int8_t *)scratch + 16 * m->depth);
            return;
        }
    }
#endif
#if defined(NN2C_SPARSE_FOUR_ROWS)
    for (; b + 4 <= p->batches; b += 4) {
        const int8_t *const x[4] = {input + b * m->depth, input + (b + 1) * m->depth, input + (b + 2) * m->depth,
                                    input + (b + 3) * m->depth};
        int8_t *const out[4] = {output + b * m->out_c, output + (b + 1) * m->out_c, output + (b + 2) * m->out_c,
                                output + (b + 3) * m->out_c};
        nn2c_sparse_row4(m, x, out, (int32_t *)scratch);
    }
#if defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4)
    if (m->pairs && b < p->batches) { /* (the scratch: the row pairs, then 4 * out_c bytes or more) */
        const int8_t *x[3];
        int8_t *out[3];
        const int32_t n = p->batches - b;
        for (int32_t r = 0; r < n; ++r) {
            x[r] = input + (b + r) * m->depth;
            out[r] = output + (b + r) * m->out_c;
        }
        nn2c_sparse_rows_tail(m, x, out, n, (int32_t *)scratch, (int8_t *)scratch + 8 * m->pairs * m->depth);
        return;
    }
#endif
#endif
    for (; b < p->batches; ++b) {
#if !defined(NN2C_OMIT_SPARSE_TABLE)
        if (m->table) {
            nn2c_sparse_row1_table(m, input + b * m->depth, output + b * m->out_c, (int32_t *)scratch);
            continue;
        }
#endif
        nn2c_sparse_row1(m, input + b * m->depth, output + b * m->out_c);
    }
}


/* Output pixels in raster order, four at a time; pixel q reads input pixel
 * (oy * stride_h - pad_h, ox * stride_w - pad_w), inside the input for a 1x1 filter without padding
 * (pad_h is also how a row-streamed call shifts its window of input rows). */
#if defined(NN2C_SPARSE_FOUR_ROWS) /* (every sparse 1x1 convolution takes one of the paths) */
/* The n (4, or 8 where ROWS8) rows of pixels x into out (their outputs out_c bytes apart): written channel by
 * channel while their inputs are still read, so where an in-place plan puts them over those inputs, into the scratch
 * rows first (copied in order once all are read: pixel by pixel in order is safe, memory/inplace.py). */
static void nn2c_sparse_pixels(const nn2c_sparse_s8_t *m, const int8_t *const x[], int8_t *const out[], int32_t n,
                               int32_t in_c, int32_t *pairs, int8_t *rows_scratch) {
    const int32_t out_c = m->out_c;
    const int in_place = !(out[n - 1] + out_c <= x[0] || out[0] >= x[n - 1] + in_c);
#if defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4) && !defined(NN2C_OMIT_SPARSE_ROWS8)
    if (n == 8) {
        nn2c_sparse_row8_pairs(m, x, in_place ? rows_scratch : out[0], out_c, pairs);
        for (int32_t r = 0; in_place && r < 8; ++r) {
            memcpy(out[r], rows_scratch + r * out_c, (size_t)out_c);
        }
        return;
    }
#endif
    if (!in_place) {
        nn2c_sparse_row4(m, x, out, pairs);
        return;
    }
    int8_t *const rows[4] = {rows_scratch, rows_scratch + out_c, rows_scratch + 2 * out_c, rows_scratch + 3 * out_c};
    nn2c_sparse_row4(m, x, rows, pairs);
    for (int32_t r = 0; r < 4; ++r) {
        memcpy(out[r], rows[r], (size_t)out_c);
    }
}

void nn2c_conv_s8_sparse(const nn2c_conv_sparse_params_t *p, const int8_t *input, int8_t *output, void *scratch) {
    const nn2c_sparse_s8_t *m = &p->m;
    const nn2c_conv_geom_t *g = &p->g;
    const int32_t pixels = g->out_h * g->out_w;
    int32_t *const pairs = (int32_t *)scratch;
    /* (the row pairs: 8 bytes an input position for four rows, 16 for eight) */
    int8_t *const rows_scratch = (int8_t *)scratch + 8 * m->pairs * m->depth;
#if defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4) && !defined(NN2C_OMIT_SPARSE_ROWS8)
    const int32_t block = m->pairs == 2 ? 8 : 4;
#else
    const int32_t block = 4;
#endif
    for (int32_t b = 0; b < g->batches; ++b) {
        const int8_t *in_b = input + b * g->in_h * g->in_w * g->in_c;
        int8_t *out_b = output + b * pixels * g->out_c;
        const int8_t *x[8];
        int8_t *out[8];
        int32_t ready = 0;
        /* (the pixels' inputs and outputs stepped, not divided out of their index) */
        const int32_t col_step = g->stride_w * g->in_c, row_step = g->stride_h * g->in_w * g->in_c;
        const int8_t *row = in_b + ((-g->pad_h) * g->in_w - g->pad_w) * g->in_c;
        int8_t *y = out_b;
        for (int32_t oy = 0; oy < g->out_h; ++oy, row += row_step) {
            const int8_t *px = row;
            for (int32_t ox = 0; ox < g->out_w; ++ox, px += col_step, y += g->out_c) {
                x[ready] = px;
                out[ready] = y;
                if (++ready < block) {
                    continue;
                }
                ready = 0;
                nn2c_sparse_pixels(m, x, out, block, g->in_c, pairs, rows_scratch);
            }
        }
#if defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4) && !defined(NN2C_OMIT_SPARSE_ROWS8)
        if (ready > 4) { /* (an eight-row layer's last 5-7 pixels: as eight, the last repeated) */
            nn2c_sparse_rows8_tail(m, x, out, ready, pairs, rows_scratch);
            continue;
        }
#endif
        if (ready == 4) { /* (an eight-row layer's last 4 pixels) */
            nn2c_sparse_pixels(m, x, out, 4, g->in_c, pairs, rows_scratch);
            continue;
        }
#if (defined(NN2C_SPARSE_RECORDS) && !defined(NN2C_OMIT_SPARSE_ROWS4)) || !defined(NN2C_OMIT_SPARSE_PACKED4)
        if ((m->pairs || m->packed == 2) && ready > 0) {
            nn2c_sparse_rows_tail(m, x, out, ready, pairs, rows_scratch);
            continue;
        }
#endif
        for (int32_t r = 0; r < ready; ++r) {
            nn2c_sparse_row1(m, x[r], out[r]);
        }
    }
}
#endif
