/* Data movement, indexing and resizing kernels; see nn2c_movement.h. */
#include "nn2c_movement.h"

#include <math.h>
#include <string.h>

static void nn2c_move_elem(uint8_t *dst, const uint8_t *src, int32_t elem_size) {
    switch (elem_size) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, (size_t)elem_size); break;
    }
}

static void nn2c_move_fill(uint8_t *dst, const uint8_t *fill, int32_t fill_size, int32_t elem_size) {
    if (fill == NULL || fill_size <= 0) {
        memset(dst, 0, (size_t)elem_size);
        return;
    }
    for (int32_t b = 0; b + fill_size <= elem_size; b += fill_size) {
        memcpy(dst + b, fill, (size_t)fill_size);
    }
}

void nn2c_offset_gather(const nn2c_offset_gather_params_t *p, const void *input, const void *fill, void *output) {
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const int32_t last = p->rank - 1;
    const int32_t es = p->elem_size;
    const int32_t *table[NN2C_MOVE_MAX_RANK];
    int32_t index[NN2C_MOVE_MAX_RANK] = {0};
    int32_t rows = 1;
    table[0] = p->tables;
    for (int32_t d = 0; d < p->rank; ++d) {
        if (d > 0) {
            table[d] = table[d - 1] + p->dims[d - 1];
        }
        if (d < last) {
            rows *= p->dims[d];
        }
    }
    if (p->dims[last] <= 0 || rows <= 0) {
        return;
    }
    for (int32_t row = 0; row < rows; ++row) {
        int32_t base = 0;
        int valid = 1;
        for (int32_t d = 0; d < last; ++d) {
            const int32_t t = table[d][index[d]];
            valid &= t >= 0;
            base += t;
        }
        for (int32_t i = 0; i < p->dims[last]; ++i) {
            const int32_t t = table[last][i];
            if (valid && t >= 0) {
                nn2c_move_elem(out, in + (size_t)(base + t) * (size_t)es, es);
            } else {
                nn2c_move_fill(out, (const uint8_t *)fill, p->fill_size, es);
            }
            out += es;
        }
        for (int32_t d = last - 1; d >= 0; --d) {
            if (++index[d] < p->dims[d]) {
                break;
            }
            index[d] = 0;
        }
    }
}

void nn2c_gather_rows(const nn2c_gather_rows_params_t *p, const void *input, const void *indices, void *output) {
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t block = (size_t)p->inner_bytes;
    for (int32_t b = 0; b < p->batch; ++b) {
        for (int32_t o = 0; o < p->outer; ++o) {
            const uint8_t *rows = in + ((size_t)b * (size_t)p->outer + (size_t)o) * (size_t)p->axis_size * block;
            for (int32_t k = 0; k < p->count; ++k) {
                int64_t index = nn2c_read_index(indices, b * p->count + k, p->index_bytes);
                if (index < 0 && p->wrap_negative) {
                    index += p->axis_size;
                }
                if (index < 0 || index >= p->axis_size) {
                    memset(out, 0, block); /* TFLM fails the invoke; nn2c writes zeros */
                } else {
                    memcpy(out, rows + (size_t)index * block, block);
                }
                out += block;
            }
        }
    }
}

void nn2c_embedding_lookup_hybrid(const int32_t *ids, int32_t count, const int8_t *table, int32_t rows,
                                  int32_t columns, float scale, float *output) {
    for (int32_t i = 0; i < count; ++i) {
        const int32_t id = ids[i];
        float *out = output + (size_t)i * (size_t)columns;
        if (id < 0 || id >= rows) {
            memset(out, 0, (size_t)columns * sizeof(float));
            continue;
        }
        for (int32_t k = 0; k < columns; ++k) {
            out[k] = (float)table[(size_t)id * (size_t)columns + (size_t)k] * scale; /* micro_utils Dequantize */
        }
    }
}

/* The row that index tuple idx[first .. first + depth) names, sum_j idx[j] * strides[j], or -1 when
 * an index falls outside its axis (negative indices count from the end when wrap_negative). */
static int64_t nn2c_move_tuple_row(const void *indices, int32_t first, int32_t depth, int32_t index_bytes,
                                   const int32_t *dims, const int32_t *strides, int32_t wrap_negative) {
    int64_t row = 0;
    for (int32_t j = 0; j < depth; ++j) {
        int64_t index = nn2c_read_index(indices, (size_t)(first + j), index_bytes);
        if (index < 0 && wrap_negative) {
            index += dims[j];
        }
        if (index < 0 || index >= dims[j]) {
            return -1;
        }
        row += index * strides[j];
    }
    return row;
}

void nn2c_gather_nd(const nn2c_gather_nd_params_t *p, const void *input, const void *indices, void *output) {
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t block = (size_t)p->inner_bytes;
    for (int32_t b = 0; b < p->batch; ++b) {
        for (int32_t k = 0; k < p->count; ++k) {
            const int32_t tuple = (b * p->count + k) * p->depth;
            const int64_t row = nn2c_move_tuple_row(indices, tuple, p->depth, p->index_bytes, p->dims, p->strides,
                                                    p->wrap_negative);
            if (row >= 0) {
                memcpy(out, in + ((size_t)b * (size_t)p->batch_rows + (size_t)row) * block, block);
            } else {
                memset(out, 0, block);
            }
            out += block;
        }
    }
}

/* The element offset of an index tuple over dims, with the axis coordinate replaced by a run-time
 * index (negative counts from the end); -1 when that index is outside the axis. */
static int64_t nn2c_move_axis_offset(const int32_t *index, const int32_t *strides, int32_t rank, int32_t axis,
                                     int64_t at, int32_t axis_size) {
    int64_t offset = 0;
    if (at < 0) {
        at += axis_size;
    }
    if (at < 0 || at >= axis_size) {
        return -1;
    }
    for (int32_t d = 0; d < rank; ++d) {
        offset += (d == axis ? at : (int64_t)index[d]) * strides[d];
    }
    return offset;
}

/* Advance a row-major index tuple over dims (an odometer). */
static void nn2c_move_next(int32_t *index, const int32_t *dims, int32_t rank) {
    for (int32_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < dims[d]) {
            return;
        }
        index[d] = 0;
    }
}

void nn2c_gather_elements(const nn2c_gather_elements_params_t *p, const void *input, const void *indices,
                          void *output) {
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const int32_t es = p->elem_size;
    int32_t index[NN2C_MOVE_MAX_RANK] = {0};
    int32_t total = 1;
    for (int32_t d = 0; d < p->rank; ++d) {
        total *= p->dims[d];
    }
    for (int32_t i = 0; i < total; ++i) {
        const int64_t at = nn2c_move_axis_offset(index, p->strides, p->rank, p->axis,
                                                 nn2c_read_index(indices, i, p->index_bytes), p->axis_size);
        if (at >= 0) {
            nn2c_move_elem(out, in + (size_t)at * (size_t)es, es);
        } else {
            memset(out, 0, (size_t)es);
        }
        out += es;
        nn2c_move_next(index, p->dims, p->rank);
    }
}

/* 8- and 16-bit integers: the sum / product in int, converted back (wraps on every target). */
#define NN2C_SCATTER_COMBINE(T, dst, src, reduction)                                                   \
    do {                                                                                               \
        T a_, b_;                                                                                      \
        memcpy(&a_, (dst), sizeof(T));                                                                 \
        memcpy(&b_, (src), sizeof(T));                                                                 \
        switch (reduction) {                                                                           \
        case NN2C_SCATTER_ADD: a_ = (T)(a_ + b_); break;                                               \
        case NN2C_SCATTER_MUL: a_ = (T)(a_ * b_); break;                                               \
        case NN2C_SCATTER_MAX: a_ = a_ > b_ ? a_ : b_; break;                                          \
        case NN2C_SCATTER_MIN: a_ = a_ < b_ ? a_ : b_; break;                                          \
        default: a_ = b_; break;                                                                       \
        }                                                                                              \
        memcpy((dst), &a_, sizeof(T));                                                                 \
    } while (0)

static void nn2c_scatter_combine_f32(uint8_t *dst, const uint8_t *src, int32_t reduction) {
    float a, b;
    memcpy(&a, dst, 4);
    memcpy(&b, src, 4);
    if (reduction == NN2C_SCATTER_ADD) {
        a = a + b;
    } else if (reduction == NN2C_SCATTER_MUL) {
        a = a * b;
    } else if (reduction == NN2C_SCATTER_MAX) {
        a = (a > b || isnan(a)) ? a : b; /* a NaN wins, as numpy.maximum */
    } else if (reduction == NN2C_SCATTER_MIN) {
        a = (a < b || isnan(a)) ? a : b;
    } else {
        a = b;
    }
    memcpy(dst, &a, 4);
}

/* 32- and 64-bit integers: add / mul wrap around as two's complement (onnxruntime's result),
 * computed unsigned so that the overflow is defined behaviour. */
#define NN2C_SCATTER_COMBINE_WIDE(NAME, T, UT)                                                         \
    static void NAME(uint8_t *dst, const uint8_t *src, int32_t reduction) {                            \
        T a, b;                                                                                        \
        memcpy(&a, dst, sizeof(T));                                                                    \
        memcpy(&b, src, sizeof(T));                                                                    \
        if (reduction == NN2C_SCATTER_ADD) {                                                           \
            a = (T)((UT)a + (UT)b);                                                                    \
        } else if (reduction == NN2C_SCATTER_MUL) {                                                    \
            a = (T)((UT)a * (UT)b);                                                                    \
        } else if (reduction == NN2C_SCATTER_MAX) {                                                    \
            a = a > b ? a : b;                                                                         \
        } else if (reduction == NN2C_SCATTER_MIN) {                                                    \
            a = a < b ? a : b;                                                                         \
        } else {                                                                                       \
            a = b;                                                                                     \
        }                                                                                              \
        memcpy(dst, &a, sizeof(T));                                                                    \
    }

NN2C_SCATTER_COMBINE_WIDE(nn2c_scatter_combine_s32, int32_t, uint32_t)
NN2C_SCATTER_COMBINE_WIDE(nn2c_scatter_combine_s64, int64_t, uint64_t)

static void nn2c_scatter_combine(uint8_t *dst, const uint8_t *src, int32_t n, int32_t elem_size, int32_t elem_type,
                                 int32_t reduction) {
    if (reduction == NN2C_SCATTER_NONE) {
        memcpy(dst, src, (size_t)n * (size_t)elem_size);
        return;
    }
    for (int32_t i = 0; i < n; ++i, dst += elem_size, src += elem_size) {
        switch (elem_type) {
        case NN2C_ELEM_F32: nn2c_scatter_combine_f32(dst, src, reduction); break;
        case NN2C_ELEM_S32: nn2c_scatter_combine_s32(dst, src, reduction); break;
        case NN2C_ELEM_S64: nn2c_scatter_combine_s64(dst, src, reduction); break;
        case NN2C_ELEM_S16: NN2C_SCATTER_COMBINE(int16_t, dst, src, reduction); break;
        case NN2C_ELEM_S8: NN2C_SCATTER_COMBINE(int8_t, dst, src, reduction); break;
        case NN2C_ELEM_U8: NN2C_SCATTER_COMBINE(uint8_t, dst, src, reduction); break;
        default: memcpy(dst, src, (size_t)elem_size); break;
        }
    }
}

void nn2c_scatter_elements(const nn2c_scatter_elements_params_t *p, const void *indices, const void *updates,
                           void *output) {
    const uint8_t *src = (const uint8_t *)updates;
    uint8_t *out = (uint8_t *)output;
    const int32_t es = p->elem_size;
    int32_t index[NN2C_MOVE_MAX_RANK] = {0};
    int32_t total = 1;
    for (int32_t d = 0; d < p->rank; ++d) {
        total *= p->dims[d];
    }
    for (int32_t i = 0; i < total; ++i, src += es) {
        const int64_t at = nn2c_move_axis_offset(index, p->strides, p->rank, p->axis,
                                                 nn2c_read_index(indices, i, p->index_bytes), p->axis_size);
        if (at >= 0) {
            nn2c_scatter_combine(out + (size_t)at * (size_t)es, src, 1, es, p->elem_type, p->reduction);
        }
        nn2c_move_next(index, p->dims, p->rank);
    }
}

void nn2c_scatter_nd(const nn2c_scatter_nd_params_t *p, const void *indices, const void *updates, void *output) {
    const uint8_t *src = (const uint8_t *)updates;
    uint8_t *out = (uint8_t *)output;
    const size_t row_bytes = (size_t)p->inner * (size_t)p->elem_size;
    for (int32_t k = 0; k < p->count; ++k, src += row_bytes) {
        const int64_t row = nn2c_move_tuple_row(indices, k * p->depth, p->depth, p->index_bytes, p->dims, p->strides, 1);
        if (row >= 0) {
            nn2c_scatter_combine(out + (size_t)row * row_bytes, src, p->inner, p->elem_size, p->elem_type,
                                 p->reduction);
        }
    }
}

void nn2c_tensor_scatter(const nn2c_tensor_scatter_params_t *p, const void *update, const void *write_indices,
                         void *output) {
    const uint8_t *src = (const uint8_t *)update;
    uint8_t *out = (uint8_t *)output;
    const size_t block = (size_t)p->inner_bytes;
    for (int32_t b = 0; b < p->batch; ++b) {
        int64_t start = write_indices != NULL ? nn2c_read_index(write_indices, b, p->index_bytes) : 0;
        /* brought near [0, max_len] first, so that start + s cannot overflow */
        if (p->circular) {
            start %= p->max_len;
            start += start < 0 ? p->max_len : 0;
        } else if (start < -(int64_t)p->len || start > p->max_len) {
            start = p->max_len; /* every position outside: nothing written */
        }
        for (int32_t o = 0; o < p->outer; ++o) {
            uint8_t *rows = out + ((size_t)b * (size_t)p->outer + (size_t)o) * (size_t)p->max_len * block;
            for (int32_t s = 0; s < p->len; ++s, src += block) {
                int64_t at = start + s;
                if (p->circular) {
                    at %= p->max_len;
                }
                if (at >= 0 && at < p->max_len) {
                    memcpy(rows + (size_t)at * block, src, block);
                }
            }
        }
    }
}

void nn2c_reverse_sequence(const nn2c_reverse_sequence_params_t *p, const void *input, const void *lengths,
                           void *output) {
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const int32_t es = p->elem_size;
    int32_t index[NN2C_MOVE_MAX_RANK] = {0};
    int32_t strides[NN2C_MOVE_MAX_RANK];
    int32_t total = 1;
    for (int32_t d = p->rank - 1; d >= 0; --d) {
        strides[d] = total;
        total *= p->dims[d];
    }
    for (int32_t i = 0; i < total; ++i, out += es) {
        const int32_t t = index[p->seq_dim];
        int64_t length = nn2c_read_index(lengths, index[p->batch_dim], p->index_bytes);
        length = length < 0 ? 0 : (length > p->dims[p->seq_dim] ? p->dims[p->seq_dim] : length);
        const int32_t source = t < length ? (int32_t)length - 1 - t : t;
        nn2c_move_elem(out, in + (size_t)(i + (source - t) * strides[p->seq_dim]) * (size_t)es, es);
        nn2c_move_next(index, p->dims, p->rank);
    }
}

void nn2c_dynamic_update_slice(const nn2c_update_slice_params_t *p, const void *operand, const void *update,
                               const void *start, void *output) {
    const int32_t last = p->rank - 1;
    const size_t es = (size_t)p->elem_size;
    int32_t begin[NN2C_MOVE_MAX_RANK];
    int32_t stride[NN2C_MOVE_MAX_RANK];
    int32_t index[NN2C_MOVE_MAX_RANK] = {0};
    int32_t rows = 1;
    size_t total = es;
    const uint8_t *upd = (const uint8_t *)update;
    uint8_t *out = (uint8_t *)output;
    for (int32_t d = 0; d < p->rank; ++d) {
        total *= (size_t)p->dims[d];
    }
    if (output != operand) {
        memmove(output, operand, total);
    }
    for (int32_t d = last; d >= 0; --d) {
        int64_t s = nn2c_read_index(start, d, p->index_bytes);
        const int64_t hi = (int64_t)p->dims[d] - p->update_dims[d];
        s = s < 0 ? 0 : (s > hi ? hi : s);
        begin[d] = (int32_t)s;
        stride[d] = d == last ? 1 : stride[d + 1] * p->dims[d + 1];
        if (d < last) {
            rows *= p->update_dims[d];
        }
        if (p->update_dims[d] <= 0) {
            return;
        }
    }
    for (int32_t row = 0; row < rows; ++row) {
        size_t offset = (size_t)begin[last];
        for (int32_t d = 0; d < last; ++d) {
            offset += (size_t)(begin[d] + index[d]) * (size_t)stride[d];
        }
        memcpy(out + offset * es, upd, (size_t)p->update_dims[last] * es);
        upd += (size_t)p->update_dims[last] * es;
        for (int32_t d = last - 1; d >= 0; --d) {
            if (++index[d] < p->update_dims[d]) {
                break;
            }
            index[d] = 0;
        }
    }
}

void nn2c_fill(void *output, const void *value, int32_t count, int32_t elem_size) {
    uint8_t *out = (uint8_t *)output;
    for (int32_t i = 0; i < count; ++i) {
        nn2c_move_elem(out + (size_t)i * (size_t)elem_size, (const uint8_t *)value, elem_size);
    }
}

/* ---- RESIZE_BILINEAR --------------------------------------------------------------------------- */

static void nn2c_bilinear_source(int32_t value, float scale, int32_t half, int32_t size, float *pos, int32_t *lo,
                                 int32_t *hi) {
    const float v = half ? ((float)value + 0.5f) * scale - 0.5f : (float)value * scale;
    const int32_t f = (int32_t)floorf(v);
    const int32_t c = (int32_t)ceilf(v);
    *pos = v;
    *lo = f > 0 ? f : 0;
    *hi = c < size - 1 ? c : size - 1;
}

void nn2c_resize_bilinear_f32(const nn2c_resize_bilinear_params_t *p, const float *input, float *output) {
    const size_t row = (size_t)p->input_w * (size_t)p->depth;
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *img = input + (size_t)b * (size_t)p->input_h * row;
        for (int32_t y = 0; y < p->output_h; ++y) {
            float iy;
            int32_t y0, y1;
            nn2c_bilinear_source(y, p->scale_h, p->half_pixel_centers, p->input_h, &iy, &y0, &y1);
            for (int32_t x = 0; x < p->output_w; ++x) {
                float ix;
                int32_t x0, x1;
                nn2c_bilinear_source(x, p->scale_w, p->half_pixel_centers, p->input_w, &ix, &x0, &x1);
                {
                    const float dy = iy - (float)y0, dx = ix - (float)x0;
                    const float *a = img + (size_t)y0 * row + (size_t)x0 * (size_t)p->depth;
                    const float *bl = img + (size_t)y1 * row + (size_t)x0 * (size_t)p->depth;
                    const float *c = img + (size_t)y0 * row + (size_t)x1 * (size_t)p->depth;
                    const float *d = img + (size_t)y1 * row + (size_t)x1 * (size_t)p->depth;
                    for (int32_t ch = 0; ch < p->depth; ++ch) {
                        *output++ = a[ch] * (1 - dy) * (1 - dx) + bl[ch] * dy * (1 - dx) + c[ch] * (1 - dy) * dx +
                                    d[ch] * dy * dx;
                    }
                }
            }
        }
    }
}

static void nn2c_bilinear_source_10(int32_t value, int32_t scale_10, int32_t half, int32_t size, int32_t *pos,
                                    int32_t *lo, int32_t *hi) {
    const int32_t v = half ? value * scale_10 + scale_10 / 2 - (1 << 9) : value * scale_10;
    const int32_t f = v / (1 << 10);
    const int32_t c = (v + (1 << 10) - 1) / (1 << 10);
    *pos = v;
    *lo = f > 0 ? f : 0;
    *hi = c < size - 1 ? c : size - 1;
}

void nn2c_resize_bilinear_s8(const nn2c_resize_bilinear_params_t *p, const int8_t *input, int8_t *output) {
    const size_t row = (size_t)p->input_w * (size_t)p->depth;
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *img = input + (size_t)b * (size_t)p->input_h * row;
        for (int32_t y = 0; y < p->output_h; ++y) {
            int32_t iy, y0, y1;
            nn2c_bilinear_source_10(y, p->scale_h_10, p->half_pixel_centers, p->input_h, &iy, &y0, &y1);
            for (int32_t x = 0; x < p->output_w; ++x) {
                int32_t ix, x0, x1;
                nn2c_bilinear_source_10(x, p->scale_w_10, p->half_pixel_centers, p->input_w, &ix, &x0, &x1);
                {
                    const int64_t wy1 = iy - (1 << 10) * y0, wy0 = (1 << 10) - wy1;
                    const int64_t wx1 = ix - (1 << 10) * x0, wx0 = (1 << 10) - wx1;
                    const int8_t *a = img + (size_t)y0 * row + (size_t)x0 * (size_t)p->depth;
                    const int8_t *bl = img + (size_t)y1 * row + (size_t)x0 * (size_t)p->depth;
                    const int8_t *c = img + (size_t)y0 * row + (size_t)x1 * (size_t)p->depth;
                    const int8_t *d = img + (size_t)y1 * row + (size_t)x1 * (size_t)p->depth;
                    for (int32_t ch = 0; ch < p->depth; ++ch) {
                        const int64_t sum = (int64_t)a[ch] * wy0 * wx0 + (int64_t)bl[ch] * wy1 * wx0 +
                                            (int64_t)c[ch] * wy0 * wx1 + (int64_t)d[ch] * wy1 * wx1;
                        const int64_t round = sum > 0 ? (1 << 19) : -(1 << 19);
                        *output++ = (int8_t)((sum + round) / (1 << 20));
                    }
                }
            }
        }
    }
}

/* ---- ONNX Resize ------------------------------------------------------------------------------- */

static int32_t nn2c_resize_taps(int32_t mode) {
    return mode == NN2C_RESIZE_CUBIC ? 4 : (mode == NN2C_RESIZE_LINEAR ? 2 : 1);
}

static double nn2c_resize_source(const nn2c_resize_params_t *p, int32_t i, int32_t in, int32_t out, double scale,
                                 const float *roi, int32_t d, uint8_t *outside) {
    const double y = (double)i;
    const double out_len = scale * (double)in;
    double x;
    *outside = 0;
    switch (p->coord) {
    case NN2C_COORD_ALIGN_CORNERS:
        x = out_len == 1.0 ? 0.0 : y * (double)(in - 1) / (out_len - 1.0);
        break;
    case NN2C_COORD_ASYMMETRIC:
        x = y / scale;
        break;
    case NN2C_COORD_TF_CROP_AND_RESIZE: {
        const double start = roi ? (double)roi[d] : 0.0, end = roi ? (double)roi[d + p->rank] : 1.0;
        x = out_len == 1.0 ? (end - start) * (double)(in - 1) / 2.0
                           : y * (end - start) * (double)(in - 1) / (out_len - 1.0);
        x += start * (double)(in - 1);
        *outside = (uint8_t)(x < 0.0 || x > (double)(in - 1));
        break;
    }
    case NN2C_COORD_PYTORCH_HALF_PIXEL:
        x = out_len == 1.0 ? -0.5 : (y + 0.5) / scale - 0.5;
        break;
    case NN2C_COORD_HALF_PIXEL_SYMMETRIC:
        x = (double)in / 2.0 * (1.0 - (double)out / out_len) + (y + 0.5) / scale - 0.5;
        break;
    default:
        x = (y + 0.5) / scale - 0.5;
        break;
    }
    return x;
}

static int32_t nn2c_clamp_index(int64_t v, int32_t size) {
    return (int32_t)(v < 0 ? 0 : (v >= size ? size - 1 : v));
}

/* A source coordinate made safe to convert: NaN -> 0, far outside -> +-2^30 (clamped later). */
static double nn2c_finite_coordinate(double x) {
    const double limit = 1073741824.0;
    if (!(x == x)) {
        return 0.0;
    }
    return x < -limit ? -limit : (x > limit ? limit : x);
}

/* The taps per output index along an axis of this scale. */
static int32_t nn2c_resize_axis_count(const nn2c_resize_params_t *p, double scale) {
    const int32_t n = nn2c_resize_taps(p->mode);
    if (!p->antialias || p->mode == NN2C_RESIZE_NEAREST || !(scale < 1.0)) {
        return n;
    }
    {
        const double wide = 2.0 * ceil((p->mode == NN2C_RESIZE_CUBIC ? 2.0 : 1.0) / scale);
        return wide < (double)p->max_taps ? (int32_t)wide : p->max_taps;
    }
}

/* onnx's antialias coefficients: the linear / cubic filter at distances (1 - n / 2 + k - r) * scale
 * (scale at most 1), normalised to sum 1. */
static double nn2c_resize_antialias_tap(const nn2c_resize_params_t *p, double arg) {
    const double x = fabs(arg), a = (double)p->cubic_a;
    if (p->mode == NN2C_RESIZE_LINEAR) {
        return x < 1.0 ? 1.0 - x : 0.0;
    }
    if (x <= 1.0) {
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    }
    return x < 2.0 ? ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a : 0.0;
}

static void nn2c_resize_antialias_taps(const nn2c_resize_params_t *p, double x, double scale, int32_t n, int32_t in,
                                       int32_t stride, int32_t *offs, float *weights) {
    const double c = ceil(x);
    const int64_t start = (int64_t)c - n / 2;
    const double r = x - (c - 1.0), s = scale < 1.0 ? scale : 1.0;
    double sum = 0.0, kept = 0.0;
    for (int32_t k = 0; k < n; ++k) {
        sum += nn2c_resize_antialias_tap(p, ((double)(1 - n / 2 + k) - r) * s);
    }
    sum = sum != 0.0 ? sum : 1.0;
    for (int32_t k = 0; k < n; ++k) {
        const int64_t raw = start + k;
        const double w = nn2c_resize_antialias_tap(p, ((double)(1 - n / 2 + k) - r) * s) / sum;
        if (!(p->exclude_outside && (raw < 0 || raw >= in))) {
            kept += w;
        }
    }
    kept = kept != 0.0 ? kept : 1.0;
    for (int32_t k = 0; k < n; ++k) {
        const int64_t raw = start + k;
        double w = nn2c_resize_antialias_tap(p, ((double)(1 - n / 2 + k) - r) * s) / sum;
        if (p->exclude_outside) {
            w = (raw < 0 || raw >= in) ? 0.0 : w / kept;
        }
        offs[k] = nn2c_clamp_index(raw, in) * stride;
        weights[k] = (float)w;
    }
}

/* The taps of output index i along one axis: input indices (times stride) and weights. */
static void nn2c_resize_axis_taps(const nn2c_resize_params_t *p, double x, int32_t in, int32_t stride, int32_t *offs,
                                  float *weights) {
    x = nn2c_finite_coordinate(x);
    if (p->mode == NN2C_RESIZE_NEAREST) {
        const double base = floor(x);
        const double r = x - base;
        int up;
        switch (p->nearest_mode) {
        case NN2C_NEAREST_ROUND_PREFER_CEIL: up = r >= 0.5; break;
        case NN2C_NEAREST_FLOOR: up = 0; break;
        case NN2C_NEAREST_CEIL: up = r > 0.0; break;
        default: up = r > 0.5; break;
        }
        offs[0] = nn2c_clamp_index((int64_t)base + up, in) * stride;
        weights[0] = 1.0f;
        return;
    }
    {
        const int32_t n = nn2c_resize_taps(p->mode);
        const double c = ceil(x);
        const int64_t start = (int64_t)c - n / 2;
        const double r = x - (c - 1.0);
        double w[4];
        double sum = 0.0;
        if (n == 2) {
            w[0] = 1.0 - r;
            w[1] = r;
        } else {
            const double a = (double)p->cubic_a;
            w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
            w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
            w[2] = ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1;
            w[3] = ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a;
        }
        for (int32_t k = 0; k < n; ++k) {
            const int64_t raw = start + k;
            if (p->exclude_outside && (raw < 0 || raw >= in)) {
                w[k] = 0.0;
            }
            sum += w[k];
        }
        for (int32_t k = 0; k < n; ++k) {
            offs[k] = nn2c_clamp_index(start + k, in) * stride;
            weights[k] = (float)(p->exclude_outside && sum != 0.0 ? w[k] / sum : w[k]);
        }
    }
}

void nn2c_resize_f32(const nn2c_resize_params_t *p, const float *input, const float *scales, const float *roi,
                     float *output, void *scratch) {
    const int32_t taps = p->max_taps;
    int32_t total_out = 0;
    int32_t *offs[NN2C_MOVE_MAX_RANK];
    float *wts[NN2C_MOVE_MAX_RANK];
    uint8_t *ext[NN2C_MOVE_MAX_RANK];
    int32_t ntaps[NN2C_MOVE_MAX_RANK];
    int32_t stride[NN2C_MOVE_MAX_RANK];
    int32_t o[NN2C_MOVE_MAX_RANK] = {0};
    int32_t count = 1;
    uint8_t *s = (uint8_t *)scratch;
    for (int32_t d = 0; d < p->rank; ++d) {
        total_out += p->out_dims[d];
        count *= p->out_dims[d];
    }
    for (int32_t d = p->rank - 1; d >= 0; --d) {
        stride[d] = d == p->rank - 1 ? 1 : stride[d + 1] * p->in_dims[d + 1];
    }
    /* scratch: int32 offsets, then float weights, then outside flags */
    for (int32_t d = 0, at = 0; d < p->rank; at += p->out_dims[d], ++d) {
        offs[d] = (int32_t *)(void *)s + (size_t)at * (size_t)taps;
        wts[d] = (float *)(void *)(s + (size_t)total_out * (size_t)taps * 4u) + (size_t)at * (size_t)taps;
        ext[d] = s + (size_t)total_out * (size_t)taps * 8u + (size_t)at;
    }
    for (int32_t d = 0; d < p->rank; ++d) {
        double scale = p->scale_axes[d] >= 0 ? (double)scales[p->scale_axes[d]] : 1.0;
        if (!(scale > 0.0) || scale > 1e30) {
            scale = 1.0; /* a run-time scale that is not a positive finite number: no resize on that axis */
        }
        const int32_t in = p->in_dims[d], out = p->out_dims[d];
        const int identity = scale == 1.0 && in == out && p->coord != NN2C_COORD_TF_CROP_AND_RESIZE;
        const int wide = p->antialias && p->mode != NN2C_RESIZE_NEAREST;
        ntaps[d] = identity ? 1 : nn2c_resize_axis_count(p, scale);
        for (int32_t i = 0; i < out; ++i) {
            if (identity) {
                offs[d][i] = i * stride[d];
                wts[d][i] = 1.0f;
                ext[d][i] = 0;
            } else {
                const double x = nn2c_resize_source(p, i, in, out, scale, roi, d, &ext[d][i]);
                int32_t *o = offs[d] + (size_t)i * (size_t)ntaps[d];
                float *w = wts[d] + (size_t)i * (size_t)ntaps[d];
                if (wide) {
                    nn2c_resize_antialias_taps(p, nn2c_finite_coordinate(x), scale, ntaps[d], in, stride[d], o, w);
                } else {
                    nn2c_resize_axis_taps(p, x, in, stride[d], o, w);
                }
            }
        }
    }
    for (int32_t flat = 0; flat < count; ++flat) {
        int outside = 0;
        for (int32_t d = 0; d < p->rank; ++d) {
            outside |= ext[d][o[d]];
        }
        if (outside) {
            output[flat] = p->extrapolation_value;
        } else {
            int32_t k[NN2C_MOVE_MAX_RANK] = {0};
            float acc = 0.0f;
            for (;;) {
                int32_t off = 0;
                float w = 1.0f;
                int32_t d;
                for (d = 0; d < p->rank; ++d) {
                    const size_t j = (size_t)o[d] * (size_t)ntaps[d] + (size_t)k[d];
                    off += offs[d][j];
                    w *= wts[d][j];
                }
                acc += w * input[off];
                for (d = p->rank - 1; d >= 0; --d) {
                    if (++k[d] < ntaps[d]) {
                        break;
                    }
                    k[d] = 0;
                }
                if (d < 0) {
                    break;
                }
            }
            output[flat] = acc;
        }
        for (int32_t d = p->rank - 1; d >= 0; --d) {
            if (++o[d] < p->out_dims[d]) {
                break;
            }
            o[d] = 0;
        }
    }
}

/* ---- CUMSUM ------------------------------------------------------------------------------------ */

#define NN2C_CUMSUM_BODY(T, START)                                                                   \
    for (int32_t a = 0; a < outer; ++a) {                                                            \
        for (int32_t c = 0; c < inner; ++c) {                                                        \
            const size_t base = (size_t)a * (size_t)len * (size_t)inner + (size_t)c;                \
            T acc = START;                                                                           \
            for (int32_t i = 0; i < len; ++i) {                                                      \
                const int32_t k = reverse ? len - 1 - i : i;                                         \
                const size_t at = base + (size_t)k * (size_t)inner;                                  \
                const T v = input[at];                                                               \
                if (exclusive) {                                                                     \
                    output[at] = acc;                                                                \
                    acc = NN2C_CUMSUM_ADD(T, acc, v);                                                \
                } else {                                                                             \
                    acc = NN2C_CUMSUM_ADD(T, acc, v);                                                \
                    output[at] = acc;                                                                \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
    }

#define NN2C_CUMSUM_ADD(T, a, b) ((a) + (b))
void nn2c_cumsum_f32(const float *input, float *output, int32_t outer, int32_t len, int32_t inner,
                     int32_t exclusive, int32_t reverse) {
    NN2C_CUMSUM_BODY(float, 0)
}

#undef NN2C_CUMSUM_ADD
/* int32 sums wrap (added as uint32: no undefined overflow) */
#define NN2C_CUMSUM_ADD(T, a, b) ((T)(int32_t)((uint32_t)(a) + (uint32_t)(b)))
void nn2c_cumsum_s32(const int32_t *input, int32_t *output, int32_t outer, int32_t len, int32_t inner,
                     int32_t exclusive, int32_t reverse) {
    NN2C_CUMSUM_BODY(int32_t, 0)
}
#undef NN2C_CUMSUM_ADD

/* CUMPROD (ONNX CumProd): the same walk with products from 1; int32 products wrap (as uint32) */
#define NN2C_CUMSUM_ADD(T, a, b) ((a) * (b))
void nn2c_cumprod_f32(const float *input, float *output, int32_t outer, int32_t len, int32_t inner,
                      int32_t exclusive, int32_t reverse) {
    NN2C_CUMSUM_BODY(float, 1.0f)
}
#undef NN2C_CUMSUM_ADD
#define NN2C_CUMSUM_ADD(T, a, b) ((T)(int32_t)((uint32_t)(a) * (uint32_t)(b)))
void nn2c_cumprod_s32(const int32_t *input, int32_t *output, int32_t outer, int32_t len, int32_t inner,
                      int32_t exclusive, int32_t reverse) {
    NN2C_CUMSUM_BODY(int32_t, 1)
}
#undef NN2C_CUMSUM_ADD

void nn2c_cumsum_s8(const nn2c_cumsum_s8_params_t *p, const int8_t *input, int8_t *output) {
    const int32_t start = nn2c_mbqm_smaller_than_one((int32_t)((uint32_t)p->input_offset << 20), p->input_multiplier,
                                                     p->input_shift);
    for (int32_t a = 0; a < p->outer; ++a) {
        for (int32_t c = 0; c < p->inner; ++c) {
            const size_t base = (size_t)a * (size_t)p->len * (size_t)p->inner + (size_t)c;
            int32_t acc = start;
            for (int32_t i = 0; i < p->len; ++i) {
                const int32_t k = p->reverse ? p->len - 1 - i : i;
                const size_t at = base + (size_t)k * (size_t)p->inner;
                const int32_t y = p->input_offset + input[at];
                const int32_t scaled = nn2c_mbqm_smaller_than_one(y * (1 << 20), p->input_multiplier, p->input_shift);
                int32_t sum;
                int32_t out;
                if (p->exclusive) {
                    sum = acc;
                    acc = (int32_t)((uint32_t)acc + (uint32_t)scaled);
                } else {
                    acc = (int32_t)((uint32_t)acc + (uint32_t)scaled);
                    sum = acc;
                }
                out = nn2c_add_offset(nn2c_mbqm_smaller_than_one(sum, p->output_multiplier, p->output_shift), p->output_offset);
                out = out < p->act_min ? p->act_min : (out > p->act_max ? p->act_max : out);
                output[at] = (int8_t)out;
            }
        }
    }
}

static void nn2c_cumsum_split(const int32_t *dims, int32_t rank, const void *axis, int32_t axis_bytes,
                              int32_t *outer, int32_t *len, int32_t *inner) {
    int64_t a = nn2c_read_index(axis, 0, axis_bytes);
    if (a < 0) {
        a += rank;
    }
    if (a < 0 || a >= rank) {
        a = 0;
    }
    *outer = 1;
    *inner = 1;
    for (int32_t d = 0; d < rank; ++d) {
        if (d < a) {
            *outer *= dims[d];
        } else if (d > a) {
            *inner *= dims[d];
        }
    }
    *len = rank > 0 ? dims[a] : 1;
}

void nn2c_cumsum_axis_f32(const float *input, float *output, const int32_t *dims, int32_t rank, const void *axis,
                          int32_t axis_bytes, int32_t exclusive, int32_t reverse) {
    int32_t outer, len, inner;
    nn2c_cumsum_split(dims, rank, axis, axis_bytes, &outer, &len, &inner);
    nn2c_cumsum_f32(input, output, outer, len, inner, exclusive, reverse);
}

void nn2c_cumsum_axis_s32(const int32_t *input, int32_t *output, const int32_t *dims, int32_t rank,
                          const void *axis, int32_t axis_bytes, int32_t exclusive, int32_t reverse) {
    int32_t outer, len, inner;
    nn2c_cumsum_split(dims, rank, axis, axis_bytes, &outer, &len, &inner);
    nn2c_cumsum_s32(input, output, outer, len, inner, exclusive, reverse);
}

void nn2c_cumprod_axis_f32(const float *input, float *output, const int32_t *dims, int32_t rank, const void *axis,
                           int32_t axis_bytes, int32_t exclusive, int32_t reverse) {
    int32_t outer, len, inner;
    nn2c_cumsum_split(dims, rank, axis, axis_bytes, &outer, &len, &inner);
    nn2c_cumprod_f32(input, output, outer, len, inner, exclusive, reverse);
}

void nn2c_cumprod_axis_s32(const int32_t *input, int32_t *output, const int32_t *dims, int32_t rank,
                           const void *axis, int32_t axis_bytes, int32_t exclusive, int32_t reverse) {
    int32_t outer, len, inner;
    nn2c_cumsum_split(dims, rank, axis, axis_bytes, &outer, &len, &inner);
    nn2c_cumprod_s32(input, output, outer, len, inner, exclusive, reverse);
}

/* ---- OneHot, Range, Compress ------------------------------------------------------------------- */

static int64_t nn2c_one_hot_index(const void *indices, int32_t k, int32_t type) {
    switch (type) {
    case 0: {
        float v;
        memcpy(&v, (const uint8_t *)indices + (size_t)k * 4u, 4);
        /* ONNX casts the float index to an integer (truncation); non-finite / huge never match */
        return (v == v && v > -2147483648.0f && v < 2147483648.0f) ? (int64_t)v : INT64_MIN;
    }
    case 2: return nn2c_read_index(indices, k, 8);
    case 3: return ((const int8_t *)indices)[k];
    case 4: return ((const uint8_t *)indices)[k];
    case 5: return nn2c_read_index(indices, k, 2);
    default: return nn2c_read_index(indices, k, 4);
    }
}

void nn2c_one_hot(const nn2c_one_hot_params_t *p, const void *indices, const void *values, void *output) {
    const uint8_t *off = (const uint8_t *)values;
    const uint8_t *on = off + p->elem_size;
    uint8_t *out = (uint8_t *)output;
    for (int32_t a = 0; a < p->outer; ++a) {
        for (int32_t j = 0; j < p->depth; ++j) {
            for (int32_t c = 0; c < p->inner; ++c) {
                int64_t index = nn2c_one_hot_index(indices, a * p->inner + c, p->index_type);
                if (index < 0 && index >= -(int64_t)p->depth) {
                    index += p->depth;
                }
                nn2c_move_elem(out, index == j ? on : off, p->elem_size);
                out += p->elem_size;
            }
        }
    }
}

void nn2c_range_f32(const float *start, const float *delta, float *output, int32_t count) {
    for (int32_t i = 0; i < count; ++i) {
        output[i] = *start + (float)i * *delta;
    }
}

void nn2c_range_s32(const int32_t *start, const int32_t *delta, int32_t *output, int32_t count) {
    for (int32_t i = 0; i < count; ++i) {
        output[i] = (int32_t)((uint32_t)*start + (uint32_t)i * (uint32_t)*delta);
    }
}

void nn2c_compress(const void *input, const uint8_t *condition, void *output, int32_t outer, int32_t len,
                   int32_t cond_len, int32_t inner_bytes, int32_t kept) {
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t block = (size_t)inner_bytes;
    for (int32_t a = 0; a < outer; ++a) {
        int32_t written = 0;
        for (int32_t k = 0; k < len && k < cond_len && written < kept; ++k) {
            if (condition[k]) {
                memcpy(out, in + ((size_t)a * (size_t)len + (size_t)k) * block, block);
                out += block;
                ++written;
            }
        }
        if (written < kept) { /* fewer true entries than the static size: zeros, deterministically */
            memset(out, 0, (size_t)(kept - written) * block);
            out += (size_t)(kept - written) * block;
        }
    }
}
