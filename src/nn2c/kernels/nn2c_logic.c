/* Comparisons, logical / bitwise operators, selection and binary arithmetic (see nn2c_logic.h).
 *
 * Each binary operator is an element function f(params, a, b) and the shared broadcast walk
 * NN2C_LOGIC_BINARY, which walks the output in row-major order and keeps one offset per operand.
 * Integer arithmetic that TFLite performs in int32 and lets wrap is done through uint32, and the
 * integer operations C leaves undefined (division by 0, INT_MIN / -1, shifts by the width or
 * more, right shifts of negative values) are given defined results here. */
#include "nn2c_logic.h"

#include <math.h>
#include <string.h>

/* --- the broadcast walk ----------------------------------------------------------------------- */

/* Number of inner runs: the product of all loop extents but the innermost. */
static int32_t nn2c_logic_runs(const nn2c_logic_bcast_t *bc) {
    int32_t runs = 1;
    for (int32_t d = 0; d < bc->rank - 1; ++d) {
        runs *= bc->dims[d];
    }
    return runs;
}

/* Odometer step over the outer loops, keeping every operand's offset in step. */
static void nn2c_logic_advance(const nn2c_logic_bcast_t *bc, int32_t operands, int32_t *idx, int32_t *off) {
    for (int32_t d = bc->rank - 2; d >= 0; --d) {
        idx[d] += 1;
        for (int32_t k = 0; k < operands; ++k) off[k] += bc->stride[k][d];
        if (idx[d] < bc->dims[d]) {
            return;
        }
        for (int32_t k = 0; k < operands; ++k) off[k] -= bc->stride[k][d] * bc->dims[d];
        idx[d] = 0;
    }
}

#define NN2C_LOGIC_BINARY(name, params_t, TA, TB, TO, elem)                                       \
    void name(const params_t *p, const TA *in1, const TB *in2, TO *out) {                         \
        const nn2c_logic_bcast_t *bc = &p->bc;                                                    \
        const int32_t last = bc->rank - 1;                                                        \
        const int32_t n = bc->dims[last];                                                         \
        const int32_t sa = bc->stride[0][last], sb = bc->stride[1][last];                         \
        const int32_t runs = nn2c_logic_runs(bc);                                                 \
        int32_t idx[NN2C_LOGIC_MAX_DIMS] = {0};                                                   \
        int32_t off[NN2C_LOGIC_MAX_OPERANDS] = {0};                                               \
        for (int32_t r = 0; r < runs; ++r) {                                                      \
            const TA *a = in1 + off[0];                                                           \
            const TB *b = in2 + off[1];                                                           \
            TO *o = out + (size_t)r * (size_t)n;                                                  \
            for (int32_t i = 0; i < n; ++i) o[i] = elem(p, a[i * sa], b[i * sb]);                 \
            nn2c_logic_advance(bc, 2, idx, off);                                                  \
        }                                                                                         \
    }

static inline int32_t nn2c_logic_wrap_mul(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a * (uint32_t)b);
}

static inline int32_t nn2c_logic_wrap_add(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* --- comparisons ------------------------------------------------------------------------------ */

#define NN2C_LOGIC_COMPARE_ELEMS(sfx, t)                                                                 \
    static inline uint8_t nn2c_eq_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return a == b; } \
    static inline uint8_t nn2c_ne_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return a != b; } \
    static inline uint8_t nn2c_lt_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return a < b; }  \
    static inline uint8_t nn2c_le_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return a <= b; } \
    static inline uint8_t nn2c_gt_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return a > b; }  \
    static inline uint8_t nn2c_ge_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return a >= b; }

#define NN2C_LOGIC_COMPARE(sfx, t)                                                                \
    NN2C_LOGIC_COMPARE_ELEMS(sfx, t)                                                              \
    NN2C_LOGIC_BINARY(nn2c_equal_##sfx, nn2c_logic_params_t, t, t, uint8_t, nn2c_eq_##sfx)        \
    NN2C_LOGIC_BINARY(nn2c_not_equal_##sfx, nn2c_logic_params_t, t, t, uint8_t, nn2c_ne_##sfx)    \
    NN2C_LOGIC_BINARY(nn2c_less_##sfx, nn2c_logic_params_t, t, t, uint8_t, nn2c_lt_##sfx)         \
    NN2C_LOGIC_BINARY(nn2c_less_equal_##sfx, nn2c_logic_params_t, t, t, uint8_t, nn2c_le_##sfx)   \
    NN2C_LOGIC_BINARY(nn2c_greater_##sfx, nn2c_logic_params_t, t, t, uint8_t, nn2c_gt_##sfx)      \
    NN2C_LOGIC_BINARY(nn2c_greater_equal_##sfx, nn2c_logic_params_t, t, t, uint8_t, nn2c_ge_##sfx)

NN2C_LOGIC_COMPARE(f32, float)
NN2C_LOGIC_COMPARE(s8, int8_t)
NN2C_LOGIC_COMPARE(u8, uint8_t)
NN2C_LOGIC_COMPARE(s16, int16_t)
NN2C_LOGIC_COMPARE(i32, int32_t)
NN2C_LOGIC_COMPARE(i64, int64_t)

/* bools compare by truth value, whatever non-zero byte stands for true */
static inline uint8_t nn2c_truth(uint8_t v) {
    return v != 0;
}
#define NN2C_LOGIC_BOOL_ELEM(name, expr) \
    static inline uint8_t name(const nn2c_logic_params_t *p, uint8_t a, uint8_t b) { (void)p; return (expr); }
NN2C_LOGIC_BOOL_ELEM(nn2c_eq_b8, nn2c_truth(a) == nn2c_truth(b))
NN2C_LOGIC_BOOL_ELEM(nn2c_ne_b8, nn2c_truth(a) != nn2c_truth(b))
NN2C_LOGIC_BOOL_ELEM(nn2c_lt_b8, nn2c_truth(a) < nn2c_truth(b))
NN2C_LOGIC_BOOL_ELEM(nn2c_le_b8, nn2c_truth(a) <= nn2c_truth(b))
NN2C_LOGIC_BOOL_ELEM(nn2c_gt_b8, nn2c_truth(a) > nn2c_truth(b))
NN2C_LOGIC_BOOL_ELEM(nn2c_ge_b8, nn2c_truth(a) >= nn2c_truth(b))
NN2C_LOGIC_BOOL_ELEM(nn2c_and_b8, nn2c_truth(a) && nn2c_truth(b))
NN2C_LOGIC_BOOL_ELEM(nn2c_or_b8, nn2c_truth(a) || nn2c_truth(b))
NN2C_LOGIC_BINARY(nn2c_equal_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t, nn2c_eq_b8)
NN2C_LOGIC_BINARY(nn2c_not_equal_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t, nn2c_ne_b8)
NN2C_LOGIC_BINARY(nn2c_less_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t, nn2c_lt_b8)
NN2C_LOGIC_BINARY(nn2c_less_equal_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t, nn2c_le_b8)
NN2C_LOGIC_BINARY(nn2c_greater_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t, nn2c_gt_b8)
NN2C_LOGIC_BINARY(nn2c_greater_equal_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t, nn2c_ge_b8)

/* reference_ops::ComparisonWithScaling: (x + offset) << left_shift, rescaled per input. */
static inline int32_t nn2c_compare_scaled(int32_t x, int32_t offset, int32_t left_shift, int32_t multiplier,
                                          int32_t shift) {
    const int32_t shifted = (int32_t)((uint32_t)(offset + x) << left_shift);
    return nn2c_mbqm_smaller_than_one(shifted, multiplier, (int)shift);
}
#define NN2C_LOGIC_COMPARE_Q(name, elem, op)                                                          \
    static inline uint8_t elem(const nn2c_compare_q_params_t *p, int8_t a, int8_t b) {                \
        return nn2c_compare_scaled(a, p->input1_offset, p->left_shift, p->input1_multiplier,          \
                                   p->input1_shift) op                                                \
               nn2c_compare_scaled(b, p->input2_offset, p->left_shift, p->input2_multiplier,          \
                                   p->input2_shift);                                                  \
    }                                                                                                 \
    NN2C_LOGIC_BINARY(name, nn2c_compare_q_params_t, int8_t, int8_t, uint8_t, elem)
NN2C_LOGIC_COMPARE_Q(nn2c_equal_q_s8, nn2c_eq_q_s8, ==)
NN2C_LOGIC_COMPARE_Q(nn2c_not_equal_q_s8, nn2c_ne_q_s8, !=)
NN2C_LOGIC_COMPARE_Q(nn2c_less_q_s8, nn2c_lt_q_s8, <)
NN2C_LOGIC_COMPARE_Q(nn2c_less_equal_q_s8, nn2c_le_q_s8, <=)
NN2C_LOGIC_COMPARE_Q(nn2c_greater_q_s8, nn2c_gt_q_s8, >)
NN2C_LOGIC_COMPARE_Q(nn2c_greater_equal_q_s8, nn2c_ge_q_s8, >=)

/* --- logical operators ------------------------------------------------------------------------ */

NN2C_LOGIC_BINARY(nn2c_logical_and_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t, nn2c_and_b8)
NN2C_LOGIC_BINARY(nn2c_logical_or_b8, nn2c_logic_params_t, uint8_t, uint8_t, uint8_t, nn2c_or_b8)

void nn2c_logical_not_b8(int32_t count, const uint8_t *in, uint8_t *out) {
    for (int32_t i = 0; i < count; ++i) out[i] = (uint8_t)(in[i] == 0);
}

/* --- bitwise operators and shifts ------------------------------------------------------------- */

/* The shift amount as a plain int, so that unsigned amounts compare without type-limit warnings. */
static inline int32_t nn2c_shift_amount(int64_t s, int32_t bits) {
    return (s < 0 || s >= bits) ? -1 : (int32_t)s;
}

/* Left: the bits of the unsigned representation move up and wrap to the width. */
static inline uint32_t nn2c_shl_bits(uint32_t bits_of_x, int64_t s, int32_t width) {
    const int32_t amount = nn2c_shift_amount(s, width);
    return amount < 0 ? 0u : (uint32_t)(bits_of_x << amount);
}

/* Right: arithmetic for signed values, written without right-shifting a negative number. */
static inline int32_t nn2c_shr_signed(int32_t x, int64_t s, int32_t width) {
    const int32_t amount = nn2c_shift_amount(s, width);
    if (amount < 0) return x < 0 ? -1 : 0;
    return x < 0 ? ~(int32_t)((uint32_t)~x >> amount) : (int32_t)((uint32_t)x >> amount);
}

#define NN2C_LOGIC_BITS(sfx, t, ut, width, shr_expr)                                                          \
    static inline t nn2c_band_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return (t)(a & b); }  \
    static inline t nn2c_bor_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return (t)(a | b); }   \
    static inline t nn2c_bxor_##sfx(const nn2c_logic_params_t *p, t a, t b) { (void)p; return (t)(a ^ b); }  \
    static inline t nn2c_shl_##sfx(const nn2c_logic_params_t *p, t a, t b) {                                 \
        (void)p;                                                                                              \
        return (t)(ut)nn2c_shl_bits((uint32_t)(ut)a, (int64_t)b, width);                                     \
    }                                                                                                         \
    static inline t nn2c_shr_##sfx(const nn2c_logic_params_t *p, t a, t b) {                                 \
        (void)p;                                                                                              \
        return (t)(shr_expr);                                                                                 \
    }                                                                                                         \
    NN2C_LOGIC_BINARY(nn2c_bitwise_and_##sfx, nn2c_logic_params_t, t, t, t, nn2c_band_##sfx)                 \
    NN2C_LOGIC_BINARY(nn2c_bitwise_or_##sfx, nn2c_logic_params_t, t, t, t, nn2c_bor_##sfx)                   \
    NN2C_LOGIC_BINARY(nn2c_bitwise_xor_##sfx, nn2c_logic_params_t, t, t, t, nn2c_bxor_##sfx)                 \
    NN2C_LOGIC_BINARY(nn2c_shift_left_##sfx, nn2c_logic_params_t, t, t, t, nn2c_shl_##sfx)                   \
    NN2C_LOGIC_BINARY(nn2c_shift_right_##sfx, nn2c_logic_params_t, t, t, t, nn2c_shr_##sfx)                  \
    void nn2c_bitwise_not_##sfx(int32_t count, const t *in, t *out) {                                        \
        for (int32_t i = 0; i < count; ++i) out[i] = (t)(ut)~(ut)in[i];                                      \
    }

NN2C_LOGIC_BITS(s8, int8_t, uint8_t, 8, nn2c_shr_signed(a, (int64_t)b, 8))
NN2C_LOGIC_BITS(s16, int16_t, uint16_t, 16, nn2c_shr_signed(a, (int64_t)b, 16))
NN2C_LOGIC_BITS(i32, int32_t, uint32_t, 32, nn2c_shr_signed(a, (int64_t)b, 32))
NN2C_LOGIC_BITS(u8, uint8_t, uint8_t, 8, nn2c_shr_signed((int32_t)a, (int64_t)b, 8))

/* int64 (ONNX's index type): the same operations on 64 bits. */
static inline int64_t nn2c_band_i64(const nn2c_logic_params_t *p, int64_t a, int64_t b) { (void)p; return a & b; }
static inline int64_t nn2c_bor_i64(const nn2c_logic_params_t *p, int64_t a, int64_t b) { (void)p; return a | b; }
static inline int64_t nn2c_bxor_i64(const nn2c_logic_params_t *p, int64_t a, int64_t b) { (void)p; return a ^ b; }

static inline int64_t nn2c_shl_i64(const nn2c_logic_params_t *p, int64_t a, int64_t b) {
    (void)p;
    return (b < 0 || b >= 64) ? 0 : (int64_t)((uint64_t)a << b);
}

static inline int64_t nn2c_shr_i64(const nn2c_logic_params_t *p, int64_t a, int64_t b) {
    (void)p;
    if (b < 0 || b >= 64) return a < 0 ? -1 : 0;
    return a < 0 ? ~(int64_t)((uint64_t)~a >> b) : (int64_t)((uint64_t)a >> b);
}

NN2C_LOGIC_BINARY(nn2c_bitwise_and_i64, nn2c_logic_params_t, int64_t, int64_t, int64_t, nn2c_band_i64)
NN2C_LOGIC_BINARY(nn2c_bitwise_or_i64, nn2c_logic_params_t, int64_t, int64_t, int64_t, nn2c_bor_i64)
NN2C_LOGIC_BINARY(nn2c_bitwise_xor_i64, nn2c_logic_params_t, int64_t, int64_t, int64_t, nn2c_bxor_i64)
NN2C_LOGIC_BINARY(nn2c_shift_left_i64, nn2c_logic_params_t, int64_t, int64_t, int64_t, nn2c_shl_i64)
NN2C_LOGIC_BINARY(nn2c_shift_right_i64, nn2c_logic_params_t, int64_t, int64_t, int64_t, nn2c_shr_i64)

void nn2c_bitwise_not_i64(int32_t count, const int64_t *in, int64_t *out) {
    for (int32_t i = 0; i < count; ++i) out[i] = ~in[i];
}

/* --- SELECT_V2 -------------------------------------------------------------------------------- */

/* Elements move as bytes (memcpy of a constant size compiles to one load and store), so any
 * element type is copied without reading it through another type's lvalue. */
#define NN2C_LOGIC_SELECT(sfx, width)                                                             \
    void nn2c_select_##sfx(const nn2c_logic_params_t *p, const uint8_t *cond, const void *in1,    \
                           const void *in2, void *out) {                                          \
        const nn2c_logic_bcast_t *bc = &p->bc;                                                    \
        const int32_t last = bc->rank - 1;                                                        \
        const int32_t n = bc->dims[last];                                                         \
        const int32_t sc = bc->stride[0][last], sa = bc->stride[1][last], sb = bc->stride[2][last]; \
        const int32_t runs = nn2c_logic_runs(bc);                                                 \
        const unsigned char *x = (const unsigned char *)in1;                                      \
        const unsigned char *y = (const unsigned char *)in2;                                      \
        unsigned char *o = (unsigned char *)out;                                                  \
        int32_t idx[NN2C_LOGIC_MAX_DIMS] = {0};                                                   \
        int32_t off[NN2C_LOGIC_MAX_OPERANDS] = {0};                                               \
        for (int32_t r = 0; r < runs; ++r) {                                                      \
            const uint8_t *c = cond + off[0];                                                     \
            const unsigned char *a = x + (size_t)off[1] * (width);                                \
            const unsigned char *b = y + (size_t)off[2] * (width);                                \
            for (int32_t i = 0; i < n; ++i) {                                                     \
                const unsigned char *src = c[i * sc] ? a + (size_t)(i * sa) * (width)              \
                                                     : b + (size_t)(i * sb) * (width);             \
                memcpy(o, src, (width));                                                          \
                o += (width);                                                                     \
            }                                                                                     \
            nn2c_logic_advance(bc, 3, idx, off);                                                  \
        }                                                                                         \
    }
NN2C_LOGIC_SELECT(x8, 1)
NN2C_LOGIC_SELECT(x16, 2)
NN2C_LOGIC_SELECT(x32, 4)
NN2C_LOGIC_SELECT(x64, 8)

/* --- SQUARED_DIFFERENCE ----------------------------------------------------------------------- */

static inline float nn2c_sqdiff_f32(const nn2c_logic_params_t *p, float a, float b) {
    (void)p;
    const float d = a - b;
    return d * d;
}

static inline int32_t nn2c_sqdiff_i32(const nn2c_logic_params_t *p, int32_t a, int32_t b) {
    (void)p;
    const int32_t d = (int32_t)((uint32_t)a - (uint32_t)b);
    return nn2c_logic_wrap_mul(d, d);
}

/* squared_difference.cc SquaredDifference(x, y, params). */
static inline int32_t nn2c_sqdiff_q(const nn2c_squared_difference_q_params_t *p, int32_t a, int32_t b) {
    const int32_t shifted1 = (int32_t)((uint32_t)(p->input1_offset + a) << p->left_shift);
    const int32_t shifted2 = (int32_t)((uint32_t)(p->input2_offset + b) << p->left_shift);
    const int32_t scaled1 = nn2c_mbqm_smaller_than_one(shifted1, p->input1_multiplier, (int)p->input1_shift);
    const int32_t scaled2 = nn2c_mbqm_smaller_than_one(shifted2, p->input2_multiplier, (int)p->input2_shift);
    const int32_t diff = (int32_t)((uint32_t)scaled1 - (uint32_t)scaled2);
    const int32_t raw = nn2c_logic_wrap_add(
        nn2c_mbqm(nn2c_logic_wrap_mul(diff, diff), p->output_multiplier, (int)p->output_shift), p->output_offset);
    return nn2c_clamp_i32(raw, p->act_min, p->act_max);
}

static inline int8_t nn2c_sqdiff_s8(const nn2c_squared_difference_q_params_t *p, int8_t a, int8_t b) {
    return (int8_t)nn2c_sqdiff_q(p, a, b);
}

static inline int16_t nn2c_sqdiff_s16(const nn2c_squared_difference_q_params_t *p, int16_t a, int16_t b) {
    return (int16_t)nn2c_sqdiff_q(p, a, b);
}

NN2C_LOGIC_BINARY(nn2c_squared_difference_f32, nn2c_logic_params_t, float, float, float, nn2c_sqdiff_f32)
NN2C_LOGIC_BINARY(nn2c_squared_difference_i32, nn2c_logic_params_t, int32_t, int32_t, int32_t, nn2c_sqdiff_i32)
NN2C_LOGIC_BINARY(nn2c_squared_difference_s8, nn2c_squared_difference_q_params_t, int8_t, int8_t, int8_t,
                  nn2c_sqdiff_s8)
NN2C_LOGIC_BINARY(nn2c_squared_difference_s16, nn2c_squared_difference_q_params_t, int16_t, int16_t, int16_t,
                  nn2c_sqdiff_s16)

/* --- FLOOR_DIV, FLOOR_MOD, FMOD --------------------------------------------------------------- */

/* reference_ops::FloorDiv<float>: the quotient in double, floored, narrowed to float. */
static inline float nn2c_floordiv_f32(const nn2c_logic_params_t *p, float a, float b) {
    (void)p;
    return (float)floor((double)a / (double)b);
}

static inline int32_t nn2c_floordiv_i32(const nn2c_logic_params_t *p, int32_t a, int32_t b) {
    (void)p;
    if (b == 0) return 0;
    if (b == -1) return (int32_t)(0u - (uint32_t)a); /* INT32_MIN / -1 wraps */
    const int32_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* reference_ops::FloorMod<float>: fmodf, moved to the divisor's sign. */
static inline float nn2c_floormod_f32(const nn2c_logic_params_t *p, float a, float b) {
    (void)p;
    const float r = fmodf(a, b);
    return (r != 0.0f && ((b < 0.0f) != (r < 0.0f))) ? r + b : r;
}

static inline float nn2c_tmod_f32(const nn2c_logic_params_t *p, float a, float b) {
    (void)p;
    return fmodf(a, b);
}

/* C's %, with the cases C leaves undefined set to 0 (x % 0, INT32_MIN % -1). */
static inline int32_t nn2c_trunc_mod(int32_t a, int32_t b) {
    return (b == 0 || b == -1) ? 0 : a % b;
}

static inline int32_t nn2c_floor_mod(int32_t a, int32_t b) {
    const int32_t r = nn2c_trunc_mod(a, b);
    return (r != 0 && ((b < 0) != (r < 0))) ? r + b : r;
}

#define NN2C_LOGIC_INT_MOD(sfx, t)                                                                     \
    static inline t nn2c_floormod_##sfx(const nn2c_logic_params_t *p, t a, t b) {                     \
        (void)p;                                                                                       \
        return (t)nn2c_floor_mod((int32_t)a, (int32_t)b);                                              \
    }                                                                                                  \
    static inline t nn2c_tmod_##sfx(const nn2c_logic_params_t *p, t a, t b) {                         \
        (void)p;                                                                                       \
        return (t)nn2c_trunc_mod((int32_t)a, (int32_t)b);                                              \
    }                                                                                                  \
    NN2C_LOGIC_BINARY(nn2c_floor_mod_##sfx, nn2c_logic_params_t, t, t, t, nn2c_floormod_##sfx)        \
    NN2C_LOGIC_BINARY(nn2c_fmod_##sfx, nn2c_logic_params_t, t, t, t, nn2c_tmod_##sfx)

NN2C_LOGIC_BINARY(nn2c_floor_div_f32, nn2c_logic_params_t, float, float, float, nn2c_floordiv_f32)
NN2C_LOGIC_BINARY(nn2c_floor_div_i32, nn2c_logic_params_t, int32_t, int32_t, int32_t, nn2c_floordiv_i32)
NN2C_LOGIC_BINARY(nn2c_floor_mod_f32, nn2c_logic_params_t, float, float, float, nn2c_floormod_f32)
NN2C_LOGIC_BINARY(nn2c_fmod_f32, nn2c_logic_params_t, float, float, float, nn2c_tmod_f32)
NN2C_LOGIC_INT_MOD(s8, int8_t)
NN2C_LOGIC_INT_MOD(u8, uint8_t)
NN2C_LOGIC_INT_MOD(s16, int16_t)
NN2C_LOGIC_INT_MOD(i32, int32_t)

static inline int64_t nn2c_tmod_i64(const nn2c_logic_params_t *p, int64_t a, int64_t b) {
    (void)p;
    return (b == 0 || b == -1) ? 0 : a % b;
}

static inline int64_t nn2c_floormod_i64(const nn2c_logic_params_t *p, int64_t a, int64_t b) {
    const int64_t r = nn2c_tmod_i64(p, a, b);
    return (r != 0 && ((b < 0) != (r < 0))) ? r + b : r;
}

NN2C_LOGIC_BINARY(nn2c_floor_mod_i64, nn2c_logic_params_t, int64_t, int64_t, int64_t, nn2c_floormod_i64)
NN2C_LOGIC_BINARY(nn2c_fmod_i64, nn2c_logic_params_t, int64_t, int64_t, int64_t, nn2c_tmod_i64)

/* --- ADD_N ------------------------------------------------------------------------------------ */

/* reference_ops::AddN<float>: the sum from 0 in input order. */
void nn2c_add_n_f32(const nn2c_add_n_params_t *p, const float *const *inputs, float *out) {
    for (int32_t i = 0; i < p->count; ++i) {
        float sum = 0.0f;
        for (int32_t k = 0; k < p->num_inputs; ++k) sum += inputs[k][i];
        out[i] = sum;
    }
}

/* reference_ops::AddN for int8: the rescaled offset (a zero) plus every rescaled input. */
static inline int32_t nn2c_add_n_scaled(const nn2c_add_n_q_params_t *p, int32_t x) {
    const int32_t shifted = (int32_t)((uint32_t)(p->input_offset + x) << p->left_shift);
    return nn2c_mbqm_smaller_than_one(shifted, p->input_multiplier, (int)p->input_shift);
}

void nn2c_add_n_s8(const nn2c_add_n_q_params_t *p, const int8_t *const *inputs, int8_t *out) {
    const int32_t zero = nn2c_add_n_scaled(p, 0);
    for (int32_t i = 0; i < p->count; ++i) {
        int32_t sum = zero;
        for (int32_t k = 0; k < p->num_inputs; ++k) sum = nn2c_logic_wrap_add(sum, nn2c_add_n_scaled(p, inputs[k][i]));
        const int32_t raw = nn2c_mbqm_smaller_than_one(sum, p->output_multiplier, (int)p->output_shift) +
                            p->output_offset;
        out[i] = (int8_t)nn2c_clamp_i32(raw, p->act_min, p->act_max);
    }
}

/* --- PRELU ------------------------------------------------------------------------------------ */

static inline float nn2c_prelu_elem_f32(const nn2c_logic_params_t *p, float x, float alpha) {
    (void)p;
    return x >= 0.0f ? x : x * alpha;
}

/* reference_ops::BroadcastPrelu4DSlow's element. */
static inline int32_t nn2c_prelu_q(const nn2c_prelu_q_params_t *p, int32_t x, int32_t alpha) {
    const int32_t input = p->input_offset + x;
    if (input >= 0) {
        return nn2c_add_offset(nn2c_mbqm(input, p->multiplier_positive, (int)p->shift_positive), p->output_offset);
    }
    return nn2c_mbqm(input * (p->alpha_offset + alpha), p->multiplier_negative, (int)p->shift_negative) +
           p->output_offset;
}

static inline int8_t nn2c_prelu_elem_s8(const nn2c_prelu_q_params_t *p, int8_t x, int8_t alpha) {
    return (int8_t)nn2c_clamp_i32(nn2c_prelu_q(p, x, alpha), INT8_MIN, INT8_MAX);
}

static inline int16_t nn2c_prelu_elem_s16(const nn2c_prelu_q_params_t *p, int16_t x, int8_t alpha) {
    return (int16_t)nn2c_clamp_i32(nn2c_prelu_q(p, x, alpha), INT16_MIN, INT16_MAX);
}

NN2C_LOGIC_BINARY(nn2c_prelu_f32, nn2c_logic_params_t, float, float, float, nn2c_prelu_elem_f32)
NN2C_LOGIC_BINARY(nn2c_prelu_s8, nn2c_prelu_q_params_t, int8_t, int8_t, int8_t, nn2c_prelu_elem_s8)
NN2C_LOGIC_BINARY(nn2c_prelu_s16, nn2c_prelu_q_params_t, int16_t, int8_t, int16_t, nn2c_prelu_elem_s16)
