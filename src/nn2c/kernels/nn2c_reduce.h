/* Reductions beyond MEAN / SUM / REDUCE_MAX (those are in nn2c_pool), arg-max / arg-min, hardmax,
 * L2_POOL_2D and the channels-first window pool ONNX models bring (dilations, ceil mode, Lp, 3-D).
 *
 * Axis reductions follow TFLite's reference_ops::ReduceGeneric: the input is walked in row-major
 * order and every element is combined into the output element it reduces into (REDUCE_MIN: init
 * the type's max, (in < cur) ? in : cur). Arg-min / arg-max follow reference_ops::ArgMinMax (the
 * first extreme wins, strict comparison; select_last keeps the last instead). L2_POOL_2D is
 * reference_ops::L2Pool: sqrt(sum of squares / in-bounds taps). All shape facts are computed at
 * compile time. */
#ifndef NN2C_REDUCE_H
#define NN2C_REDUCE_H
#include "nn2c_common.h"

#define NN2C_AXES_MAX_RANK 6

/* Each input element lands in the output element at sum(index[d] * out_strides[d]); out_strides
 * is 0 on reduced axes. */
typedef struct {
    int32_t rank;
    int32_t dims[NN2C_AXES_MAX_RANK];        /* input dims */
    int32_t out_strides[NN2C_AXES_MAX_RANK]; /* output stride per input dim, 0 if reduced */
    int32_t num_outputs;
} nn2c_axes_params_t;

void nn2c_reduce_min_f32(const nn2c_axes_params_t *p, const float *input, float *output);
void nn2c_reduce_min_s8(const nn2c_axes_params_t *p, const int8_t *input, int8_t *output);
void nn2c_reduce_min_s16(const nn2c_axes_params_t *p, const int16_t *input, int16_t *output);
void nn2c_reduce_min_s32(const nn2c_axes_params_t *p, const int32_t *input, int32_t *output);
void nn2c_reduce_max_axes_s32(const nn2c_axes_params_t *p, const int32_t *input, int32_t *output);
void nn2c_reduce_prod_f32(const nn2c_axes_params_t *p, const float *input, float *output);
/* int32 products wrap modulo 2^32 (computed unsigned: no undefined overflow). */
void nn2c_reduce_prod_s32(const nn2c_axes_params_t *p, const int32_t *input, int32_t *output);
void nn2c_reduce_sum_s32(const nn2c_axes_params_t *p, const int32_t *input, int32_t *output);
/* bool tensors are uint8_t 0 / 1 */
void nn2c_reduce_all_b(const nn2c_axes_params_t *p, const uint8_t *input, uint8_t *output);
void nn2c_reduce_any_b(const nn2c_axes_params_t *p, const uint8_t *input, uint8_t *output);

/* Rows of `axis_size` elements, `inner` apart: element (o, a, i) is at (o * axis_size + a) * inner + i. */
typedef struct {
    int32_t outer, axis_size, inner;
    int32_t select_last; /* ties: 0 keeps the first extreme, 1 the last */
} nn2c_arg_params_t;

#define NN2C_ARG_DECLARE(IN_SUFFIX, IN_TYPE)                                                        \
    void nn2c_arg_max_##IN_SUFFIX##_i32(const nn2c_arg_params_t *p, const IN_TYPE *input, int32_t *output); \
    void nn2c_arg_min_##IN_SUFFIX##_i32(const nn2c_arg_params_t *p, const IN_TYPE *input, int32_t *output); \
    void nn2c_arg_max_##IN_SUFFIX##_i64(const nn2c_arg_params_t *p, const IN_TYPE *input, int64_t *output); \
    void nn2c_arg_min_##IN_SUFFIX##_i64(const nn2c_arg_params_t *p, const IN_TYPE *input, int64_t *output);
NN2C_ARG_DECLARE(f32, float)
NN2C_ARG_DECLARE(s8, int8_t)
NN2C_ARG_DECLARE(u8, uint8_t)
NN2C_ARG_DECLARE(s16, int16_t)
NN2C_ARG_DECLARE(s32, int32_t)
#undef NN2C_ARG_DECLARE

/* output = 1 at the first maximum of each row, 0 elsewhere (select_last is unused). */
void nn2c_hardmax_f32(const nn2c_arg_params_t *p, const float *input, float *output);

typedef struct {
    int32_t batches, input_h, input_w, depth;
    int32_t output_h, output_w;
    int32_t stride_h, stride_w;
    int32_t filter_h, filter_w;
    int32_t pad_h, pad_w; /* top / left padding (TFLite ComputePaddingHeightWidth) */
    float act_min, act_max;
} nn2c_l2_pool_params_t;

void nn2c_l2_pool_f32(const nn2c_l2_pool_params_t *p, const float *input, float *output);

#define NN2C_WINDOW_MAX_DIMS 3

/* Channels-first pooling of `planes` = N * C planes of up to three spatial dims (unused leading
 * dims have size 1, kernel 1). Tap t of output o along a dim reads input o * stride - pad_begin +
 * t * dilation when it is inside [0, in); outside taps are skipped. An average divides by the
 * inside taps, or with count_include_pad by the taps inside [-pad_begin, in + pad_end). */
enum { NN2C_WINDOW_MAX = 0, NN2C_WINDOW_AVG = 1, NN2C_WINDOW_LP = 2 };
typedef struct {
    int32_t planes;
    int32_t mode;
    int32_t count_include_pad;
    float p; /* Lp norm order (mode LP) */
    int32_t in[NN2C_WINDOW_MAX_DIMS], out[NN2C_WINDOW_MAX_DIMS];
    int32_t kernel[NN2C_WINDOW_MAX_DIMS], stride[NN2C_WINDOW_MAX_DIMS], dilation[NN2C_WINDOW_MAX_DIMS];
    int32_t pad_begin[NN2C_WINDOW_MAX_DIMS], pad_end[NN2C_WINDOW_MAX_DIMS];
} nn2c_window_params_t;

void nn2c_window_pool_f32(const nn2c_window_params_t *p, const float *input, float *output);
/* ONNX MaxPool with its Indices output: the max and the flat index of its first occurrence in the
 * input, row-major over (N, C, spatial...) or, with column_major (storage_order 1), with the spatial
 * dims in column-major order; a window without an inside tap gives -FLT_MAX and index -1. */
void nn2c_window_argmax_f32(const nn2c_window_params_t *p, const float *input, float *output, int64_t *indices,
                            int32_t column_major);
/* integer max pooling (mode must be MAX) */
void nn2c_window_max_s8(const nn2c_window_params_t *p, const int8_t *input, int8_t *output);
void nn2c_window_max_u8(const nn2c_window_params_t *p, const uint8_t *input, uint8_t *output);
void nn2c_window_max_s16(const nn2c_window_params_t *p, const int16_t *input, int16_t *output);
#endif
