/* Data movement, indexing and resizing: offset-map gathers, run-time-index gathers, dynamic
 * update slice, fills, TFLite RESIZE_BILINEAR, ONNX Resize, cumulative sums, one-hot, range, compress.
 *
 * The movers copy whole elements of `elem_size` bytes and serve every dtype; index arithmetic that
 * depends only on the model is resolved at compile time into the params. */
#ifndef NN2C_MOVEMENT_H
#define NN2C_MOVEMENT_H
#include "nn2c_common.h"

#define NN2C_MOVE_MAX_RANK 6

/* Output element (i_0, ..., i_{r-1}) (row-major) = input element sum_d tables_d[i_d], or *fill when
 * any tables_d[i_d] < 0 (fill: fill_size bytes repeated over the element; NULL = zero bytes).
 * `tables` holds the per-axis tables one after the other (dims[0] entries, then dims[1], ...). */
typedef struct {
    int32_t rank; /* 1..NN2C_MOVE_MAX_RANK */
    int32_t dims[NN2C_MOVE_MAX_RANK];
    const int32_t *tables;
    int32_t elem_size;
    int32_t fill_size;
} nn2c_offset_gather_params_t;

void nn2c_offset_gather(const nn2c_offset_gather_params_t *p, const void *input, const void *fill, void *output);

/* GATHER / EMBEDDING_LOOKUP with run-time indices: for batch b, outer row o and index k,
 * output block (b, o, k) = input block (b, o, indices[b * count + k]) of inner_bytes bytes; an index
 * outside [0, axis_size) (after adding axis_size to a negative one when wrap_negative) gives zeros. */
typedef struct {
    int32_t batch, outer, axis_size, count, inner_bytes;
    int32_t index_bytes; /* 2, 4 or 8 (int16, int32, int64 indices) */
    int32_t wrap_negative;
} nn2c_gather_rows_params_t;

void nn2c_gather_rows(const nn2c_gather_rows_params_t *p, const void *input, const void *indices, void *output);

/* Hybrid EMBEDDING_LOOKUP (TFLM EvalHybrid): int8 table rows dequantized as (float)(v * 1) * scale
 * (zero point 0); an id outside [0, rows) writes zeros where TFLM fails the invoke. */
void nn2c_embedding_lookup_hybrid(const int32_t *ids, int32_t count, const int8_t *table, int32_t rows,
                                  int32_t columns, float scale, float *output);

/* GATHER_ND with run-time indices: for batch b (ONNX batch_dims: the leading axes shared by data and
 * indices) and tuple k, output row (b, k) (inner_bytes) = input row b * batch_rows + sum_j
 * idx[b][k][j] * strides[j]; a tuple with an index outside its axis gives zeros. */
typedef struct {
    int32_t batch, batch_rows;
    int32_t count, depth, inner_bytes, index_bytes, wrap_negative; /* count: tuples per batch */
    int32_t dims[NN2C_MOVE_MAX_RANK];
    int32_t strides[NN2C_MOVE_MAX_RANK]; /* in rows of inner_bytes */
} nn2c_gather_nd_params_t;

void nn2c_gather_nd(const nn2c_gather_nd_params_t *p, const void *input, const void *indices, void *output);

/* ONNX GatherElements with run-time indices: output element i (coordinates over dims, the indices'
 * shape) = input element at the same coordinates except axis, where it is indices[i] (a negative
 * index counts from the end); an index outside [-axis_size, axis_size) gives zeros. Strides are
 * the input's, in elements. */
typedef struct {
    int32_t rank, axis, axis_size, elem_size, index_bytes;
    int32_t dims[NN2C_MOVE_MAX_RANK];
    int32_t strides[NN2C_MOVE_MAX_RANK];
} nn2c_gather_elements_params_t;

void nn2c_gather_elements(const nn2c_gather_elements_params_t *p, const void *input, const void *indices,
                          void *output);

/* ONNX ScatterElements / ScatterND with run-time indices, on an output that already holds the data.
 * Each update element is combined into its target by `reduction`; updates are applied in order
 * (a repeated target with NONE keeps the last update, as onnxruntime and the ONNX reference do).
 * An index outside its axis skips the update. Arithmetic reductions take the element types below;
 * NONE copies elem_size bytes and serves every type. */
enum { NN2C_SCATTER_NONE = 0, NN2C_SCATTER_ADD, NN2C_SCATTER_MUL, NN2C_SCATTER_MAX, NN2C_SCATTER_MIN };
enum { NN2C_ELEM_F32 = 0, NN2C_ELEM_S32, NN2C_ELEM_S64, NN2C_ELEM_S16, NN2C_ELEM_S8, NN2C_ELEM_U8, NN2C_ELEM_RAW };

/* ScatterElements: update i (coordinates over dims, the indices' shape) goes to the output element
 * at the same coordinates except axis, where it is indices[i]; strides are the output's. */
typedef struct {
    int32_t rank, axis, axis_size, elem_size, elem_type, reduction, index_bytes;
    int32_t dims[NN2C_MOVE_MAX_RANK];
    int32_t strides[NN2C_MOVE_MAX_RANK];
} nn2c_scatter_elements_params_t;

void nn2c_scatter_elements(const nn2c_scatter_elements_params_t *p, const void *indices, const void *updates,
                           void *output);

/* ScatterND: updates row k (inner elements) goes to the output row sum_j idx[k][j] * strides[j]. */
typedef struct {
    int32_t count, depth, inner, elem_size, elem_type, reduction, index_bytes;
    int32_t dims[NN2C_MOVE_MAX_RANK];
    int32_t strides[NN2C_MOVE_MAX_RANK]; /* in rows of inner elements */
} nn2c_scatter_nd_params_t;

void nn2c_scatter_nd(const nn2c_scatter_nd_params_t *p, const void *indices, const void *updates, void *output);

/* ONNX TensorScatter (a KV-cache write), on an output that already holds the past cache
 * [batch, outer..., max_len, inner...]: update [batch, outer..., len, inner...] goes to sequence
 * positions write_indices[b] + s (NULL write_indices: 0), modulo max_len when circular; a linear
 * position outside [0, max_len) is skipped. */
typedef struct {
    int32_t batch, outer, max_len, len, inner_bytes, index_bytes, circular;
} nn2c_tensor_scatter_params_t;

void nn2c_tensor_scatter(const nn2c_tensor_scatter_params_t *p, const void *update, const void *write_indices,
                         void *output);

/* REVERSE_SEQUENCE (ONNX ReverseSequence, TFLite REVERSE_SEQUENCE) with run-time lengths: along
 * seq_dim, the first lengths[b] elements of batch b (b: the coordinate on batch_dim) are reversed,
 * the rest copied; a length is clamped to [0, dims[seq_dim]]. */
typedef struct {
    int32_t rank, seq_dim, batch_dim, elem_size, index_bytes;
    int32_t dims[NN2C_MOVE_MAX_RANK];
} nn2c_reverse_sequence_params_t;

void nn2c_reverse_sequence(const nn2c_reverse_sequence_params_t *p, const void *input, const void *lengths,
                           void *output);

/* DYNAMIC_UPDATE_SLICE: output = operand with the update block written at start (run-time
 * indices, each clamped to [0, dim - update_dim] as TFLM does). */
typedef struct {
    int32_t rank;
    int32_t dims[NN2C_MOVE_MAX_RANK];
    int32_t update_dims[NN2C_MOVE_MAX_RANK];
    int32_t elem_size, index_bytes;
} nn2c_update_slice_params_t;

void nn2c_dynamic_update_slice(const nn2c_update_slice_params_t *p, const void *operand, const void *update,
                               const void *start, void *output);

/* `count` copies of the element at `value` (elem_size bytes). */
void nn2c_fill(void *output, const void *value, int32_t count, int32_t elem_size);

/* TFLite RESIZE_BILINEAR (NHWC): reference_ops::ResizeBilinear (float) / ResizeBilinearInteger (int8). */
typedef struct {
    int32_t batches, input_h, input_w, depth, output_h, output_w;
    int32_t half_pixel_centers;
    float scale_h, scale_w;       /* float path */
    int32_t scale_h_10, scale_w_10; /* integer path: scales in 1/1024 */
} nn2c_resize_bilinear_params_t;

void nn2c_resize_bilinear_f32(const nn2c_resize_bilinear_params_t *p, const float *input, float *output);
void nn2c_resize_bilinear_s8(const nn2c_resize_bilinear_params_t *p, const int8_t *input, int8_t *output);

/* ONNX Resize on float32, any rank: per axis, the taps (input index, weight) of every output index
 * are computed at run time from scales[scale_axes[d]] (1.0 when scale_axes[d] < 0) and roi (may be
 * NULL) as onnx's reference implementation does (in double), into `scratch` (9 bytes per output
 * index and tap: sum of out_dims times max_taps). */
enum { NN2C_RESIZE_NEAREST = 0, NN2C_RESIZE_LINEAR = 1, NN2C_RESIZE_CUBIC = 2 };
enum { NN2C_COORD_HALF_PIXEL = 0, NN2C_COORD_HALF_PIXEL_SYMMETRIC, NN2C_COORD_PYTORCH_HALF_PIXEL,
       NN2C_COORD_ALIGN_CORNERS, NN2C_COORD_ASYMMETRIC, NN2C_COORD_TF_CROP_AND_RESIZE };
enum { NN2C_NEAREST_ROUND_PREFER_FLOOR = 0, NN2C_NEAREST_ROUND_PREFER_CEIL, NN2C_NEAREST_FLOOR, NN2C_NEAREST_CEIL };
typedef struct {
    int32_t rank;
    int32_t in_dims[NN2C_MOVE_MAX_RANK];
    int32_t out_dims[NN2C_MOVE_MAX_RANK];
    int32_t scale_axes[NN2C_MOVE_MAX_RANK];
    int32_t mode, coord, nearest_mode, exclude_outside;
    float cubic_a, extrapolation_value;
    /* antialias (linear / cubic): when an axis downsamples, its filter is stretched by 1 / scale, to
     * 2 ceil(support / scale) taps (support 1 linear, 2 cubic), at most max_taps (the scratch's
     * taps per output index; 2 or 4 without antialias) */
    int32_t antialias, max_taps;
} nn2c_resize_params_t;

void nn2c_resize_f32(const nn2c_resize_params_t *p, const float *input, const float *scales, const float *roi,
                     float *output, void *scratch);

/* Cumulative sum along the middle axis of [outer, len, inner]; exclusive / reverse as TFLite and ONNX. */
void nn2c_cumsum_f32(const float *input, float *output, int32_t outer, int32_t len, int32_t inner,
                     int32_t exclusive, int32_t reverse);
void nn2c_cumsum_s32(const int32_t *input, int32_t *output, int32_t outer, int32_t len, int32_t inner,
                     int32_t exclusive, int32_t reverse);
/* TFLM's int8 CUMSUM (reference_ops::CumSum with ArithmeticParams): values are shifted left 20 bits,
 * halved (input multiplier 0.5), summed in int32 from a start of the scaled -zero_point (as TFLM),
 * and rescaled to the output. */
typedef struct {
    int32_t outer, len, inner, exclusive, reverse;
    int32_t input_offset, input_multiplier, input_shift;
    int32_t output_offset, output_multiplier, output_shift;
    int32_t act_min, act_max;
} nn2c_cumsum_s8_params_t;

void nn2c_cumsum_s8(const nn2c_cumsum_s8_params_t *p, const int8_t *input, int8_t *output);
/* The axis read at run time (an ONNX input): dims / rank describe the tensor. */
void nn2c_cumsum_axis_f32(const float *input, float *output, const int32_t *dims, int32_t rank, const void *axis,
                          int32_t axis_bytes, int32_t exclusive, int32_t reverse);
void nn2c_cumsum_axis_s32(const int32_t *input, int32_t *output, const int32_t *dims, int32_t rank,
                          const void *axis, int32_t axis_bytes, int32_t exclusive, int32_t reverse);
/* Cumulative product (ONNX CumProd), as the sums above: constant axis, or read at run time. */
void nn2c_cumprod_f32(const float *input, float *output, int32_t outer, int32_t len, int32_t inner,
                      int32_t exclusive, int32_t reverse);
void nn2c_cumprod_s32(const int32_t *input, int32_t *output, int32_t outer, int32_t len, int32_t inner,
                      int32_t exclusive, int32_t reverse);
void nn2c_cumprod_axis_f32(const float *input, float *output, const int32_t *dims, int32_t rank, const void *axis,
                           int32_t axis_bytes, int32_t exclusive, int32_t reverse);
void nn2c_cumprod_axis_s32(const int32_t *input, int32_t *output, const int32_t *dims, int32_t rank,
                           const void *axis, int32_t axis_bytes, int32_t exclusive, int32_t reverse);

/* ONNX OneHot: output [outer, depth, inner], element = values[1] where index == position else values[0]. */
typedef struct {
    int32_t outer, depth, inner, index_type; /* 0 float32, 1 int32, 2 int64, 3 int8, 4 uint8, 5 int16 */
    int32_t elem_size;
} nn2c_one_hot_params_t;

void nn2c_one_hot(const nn2c_one_hot_params_t *p, const void *indices, const void *values, void *output);

/* ONNX Range: output[i] = start + i * delta (the count is static). */
void nn2c_range_f32(const float *start, const float *delta, float *output, int32_t count);
void nn2c_range_s32(const int32_t *start, const int32_t *delta, int32_t *output, int32_t count);

/* ONNX Compress with a run-time condition: the blocks k of [outer, len, inner_bytes] with
 * condition[k] != 0, in order, at most `kept` of them per outer row (the static output size). */
void nn2c_compress(const void *input, const uint8_t *condition, void *output, int32_t outer, int32_t len,
                   int32_t cond_len, int32_t inner_bytes, int32_t kept);
#endif
