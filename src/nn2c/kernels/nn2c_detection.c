/* TFLite_Detection_PostProcess; see nn2c_detection.h. Each step follows tflite-micro
 * kernels/detection_postprocess.cc; comments name its functions. */
#include "nn2c_detection.h"

#include <math.h>
#include <string.h>

/* std::max<float> / std::min<float>: the first argument unless the comparison holds */
static float det_max(float a, float b) { return (a < b) ? b : a; }
static float det_min(float a, float b) { return (b < a) ? b : a; }

/* DecodeCenterSizeBoxes */
static void det_decode(const nn2c_detection_params_t *p, const float *enc, const float *anchors, float *boxes) {
    int32_t i;
    for (i = 0; i < p->num_boxes; ++i) {
        const float *e = enc + (size_t)i * (size_t)p->box_stride;
        const float *a = anchors + (size_t)i * 4u;
        float ycenter = (float)((double)e[0] / (double)p->y_scale * (double)a[2] + (double)a[0]);
        float xcenter = (float)((double)e[1] / (double)p->x_scale * (double)a[3] + (double)a[1]);
        float half_h = (float)(0.5 * exp((double)e[2] / (double)p->h_scale) * (double)a[2]);
        float half_w = (float)(0.5 * exp((double)e[3] / (double)p->w_scale) * (double)a[3]);
        float *b = boxes + (size_t)i * 4u;
        b[0] = ycenter - half_h;
        b[1] = xcenter - half_w;
        b[2] = ycenter + half_h;
        b[3] = xcenter + half_w;
    }
}

/* ComputeIntersectionOverUnion */
static float det_iou(const float *boxes, int32_t i, int32_t j) {
    const float *bi = boxes + (size_t)i * 4u;
    const float *bj = boxes + (size_t)j * 4u;
    const float area_i = (bi[2] - bi[0]) * (bi[3] - bi[1]);
    const float area_j = (bj[2] - bj[0]) * (bj[3] - bj[1]);
    float ymin, xmin, ymax, xmax, inter;
    if (area_i <= 0 || area_j <= 0) {
        return 0.0f;
    }
    ymin = det_max(bi[0], bj[0]);
    xmin = det_max(bi[1], bj[1]);
    ymax = det_min(bi[2], bj[2]);
    xmax = det_min(bi[3], bj[3]);
    inter = det_max(ymax - ymin, 0.0f) * det_max(xmax - xmin, 0.0f);
    return inter / (area_i + area_j - inter);
}

/* DecreasingPartialArgSort: the first `count` indices of [0, n) by decreasing value, equal values by
 * increasing index (a strict total order without NaN: every correct partial sort agrees). */
static void det_partial_argsort(const float *values, int32_t n, int32_t count, int32_t *top) {
    int32_t size = 0, i;
    for (i = 0; i < n; ++i) {
        int32_t pos = size;
        while (pos > 0) {
            const int32_t other = top[pos - 1];
            if (!(values[i] > values[other] || (values[i] == values[other] && i < other))) {
                break;
            }
            --pos;
        }
        if (pos < count) {
            int32_t last = (size < count) ? size : count - 1;
            int32_t k;
            for (k = last; k > pos; --k) {
                top[k] = top[k - 1];
            }
            top[pos] = i;
            if (size < count) {
                ++size;
            }
        }
    }
}

/* DecreasingArgSort's MergeSort: InsertionSort (std::upper_bound + std::rotate) below 20 elements,
 * TopDownMerge (the right element only when strictly greater) above. */
static void det_merge_sort(int32_t *a, int32_t *tmp, int32_t n, const float *v) {
    int32_t half, left, right, i;
    if (n < 20) {
        for (i = 0; i < n; ++i) {
            const int32_t item = a[i];
            int32_t lo = 0, hi = i, k;
            while (lo < hi) {
                const int32_t mid = lo + (hi - lo) / 2;
                if (v[item] > v[a[mid]]) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            for (k = i; k > lo; --k) {
                a[k] = a[k - 1];
            }
            a[lo] = item;
        }
        return;
    }
    half = n / 2;
    det_merge_sort(a, tmp, half, v);
    det_merge_sort(a + half, tmp, n - half, v);
    left = 0;
    right = half;
    for (i = 0; i < n; ++i) {
        if (left >= half || (right < n && v[a[right]] > v[a[left]])) {
            tmp[i] = a[right++];
        } else {
            tmp[i] = a[left++];
        }
    }
    memcpy(a, tmp, (size_t)n * sizeof(int32_t));
}

typedef struct {
    float *boxes;          /* [num_boxes][4] decoded */
    float *keep_scores;    /* [num_boxes] */
    int32_t *keep_indices; /* [num_boxes] */
    int32_t *active;       /* [num_boxes] */
    int32_t *sorted;       /* [max(num_boxes, merged_capacity)] */
} det_nms_scratch_t;

/* NonMaxSuppressionSingleClassHelper: the selected anchors, best first; returns their count. */
static int32_t det_nms(const nn2c_detection_params_t *p, const det_nms_scratch_t *s, const float *scores,
                       int32_t max_detections, int32_t *selected) {
    int32_t kept = 0, i, j, output_size, num_active, count = 0;
    for (i = 0; i < p->num_boxes; ++i) {
        if (scores[i] >= p->score_threshold) {
            s->keep_scores[kept] = scores[i];
            s->keep_indices[kept] = i;
            ++kept;
        }
    }
    for (i = 0; i < kept; ++i) {
        s->sorted[i] = i;
    }
    det_merge_sort(s->sorted, s->keep_indices, kept, s->keep_scores); /* keep_indices: TFLM's scratch */
    kept = 0;
    for (i = 0; i < p->num_boxes; ++i) {
        if (scores[i] >= p->score_threshold) {
            s->keep_indices[kept++] = i;
        }
    }
    output_size = (kept < max_detections) ? kept : max_detections;
    for (i = 0; i < kept; ++i) {
        s->active[i] = 1;
    }
    num_active = kept;
    for (i = 0; i < kept; ++i) {
        if (num_active == 0 || count >= output_size) {
            break;
        }
        if (!s->active[i]) {
            continue;
        }
        selected[count++] = s->keep_indices[s->sorted[i]];
        s->active[i] = 0;
        --num_active;
        for (j = i + 1; j < kept; ++j) {
            if (s->active[j] &&
                det_iou(s->boxes, s->keep_indices[s->sorted[i]], s->keep_indices[s->sorted[j]]) > p->iou_threshold) {
                s->active[j] = 0;
                --num_active;
            }
        }
    }
    return count;
}

static void det_write(float *out_boxes, float *out_classes, float *out_scores, int32_t row, const float *box,
                      float cls, float score) {
    memcpy(out_boxes + (size_t)row * 4u, box, 4u * sizeof(float));
    out_classes[row] = cls;
    out_scores[row] = score;
}

void nn2c_detection_postprocess_f32(const nn2c_detection_params_t *p, const float *box_encodings,
                                    const float *class_scores, const float *anchors, float *out_boxes,
                                    float *out_classes, float *out_scores, float *num_detections, void *scratch) {
    const int32_t n = p->num_boxes;
    const int32_t offset = p->class_stride - p->num_classes;
    const int32_t sort_words = (n > p->merged_capacity) ? n : p->merged_capacity;
    float *words = (float *)scratch;
    det_nms_scratch_t s;
    float *column = words + 4 * (size_t)n;
    int32_t *selected;
    float *extra;
    int32_t i;
    s.boxes = words;
    s.keep_scores = column + n;
    s.keep_indices = (int32_t *)(void *)(s.keep_scores + n);
    s.active = s.keep_indices + n;
    selected = s.active + n;
    s.sorted = selected + n;
    extra = (float *)(void *)(s.sorted + sort_words);

    memset(out_boxes, 0, (size_t)p->output_rows * 4u * sizeof(float));
    memset(out_classes, 0, (size_t)p->output_rows * sizeof(float));
    memset(out_scores, 0, (size_t)p->output_rows * sizeof(float));
    num_detections[0] = 0.0f;
    det_decode(p, box_encodings, anchors, s.boxes);
    for (i = 0; i < n; ++i) { /* ValidateBoxes: TFLM's Invoke fails, nn2c reports no detections */
        const float *b = s.boxes + (size_t)i * 4u;
        if (b[0] >= b[2] || b[1] >= b[3]) {
            return;
        }
    }
    if (p->use_regular_nms) { /* NonMaxSuppressionMultiClassRegularHelper */
        int32_t *merged_index = (int32_t *)(void *)extra;
        float *merged_score = extra + p->merged_capacity;
        float *sorted_values = merged_score + p->merged_capacity;
        int32_t size = 0, col, row;
        for (col = 0; col < p->num_classes; ++col) {
            int32_t count, total = size, k, top;
            for (row = 0; row < n; ++row) {
                column[row] = class_scores[(size_t)row * (size_t)p->class_stride + (size_t)(col + offset)];
            }
            count = det_nms(p, &s, column, p->detections_per_class, selected);
            for (k = 0; k < count; ++k) {
                merged_index[total] = selected[k] * p->class_stride + col + offset;
                merged_score[total] = column[selected[k]];
                ++total;
            }
            top = (total < p->max_detections) ? total : p->max_detections;
            det_partial_argsort(merged_score, total, top, s.sorted);
            for (row = 0; row < top; ++row) {
                const int32_t from = s.sorted[row];
                s.sorted[row] = merged_index[from];
                sorted_values[row] = merged_score[from];
            }
            for (row = 0; row < top; ++row) {
                merged_index[row] = s.sorted[row];
                merged_score[row] = sorted_values[row];
            }
            size = top;
        }
        for (row = 0; row < size && row < p->output_rows; ++row) {
            const int32_t anchor = merged_index[row] / p->class_stride;
            const int32_t cls = merged_index[row] - anchor * p->class_stride - offset;
            det_write(out_boxes, out_classes, out_scores, row, s.boxes + (size_t)anchor * 4u, (float)cls,
                      merged_score[row]);
        }
        num_detections[0] = (float)size;
    } else { /* NonMaxSuppressionMultiClassFastHelper */
        const int32_t ncat = (p->max_classes_per_detection < p->num_classes) ? p->max_classes_per_detection
                                                                             : p->num_classes;
        int32_t *class_order = (int32_t *)(void *)extra;
        int32_t count, k, col, written = 0;
        for (i = 0; i < n; ++i) {
            const float *row_scores = class_scores + (size_t)i * (size_t)p->class_stride + (size_t)offset;
            int32_t *order = class_order + (size_t)i * (size_t)ncat;
            det_partial_argsort(row_scores, p->num_classes, ncat, order);
            column[i] = row_scores[order[0]];
        }
        count = det_nms(p, &s, column, p->max_detections, selected);
        for (k = 0; k < count; ++k) {
            const int32_t anchor = selected[k];
            const float *row_scores = class_scores + (size_t)anchor * (size_t)p->class_stride + (size_t)offset;
            const int32_t *order = class_order + (size_t)anchor * (size_t)ncat;
            for (col = 0; col < ncat; ++col) {
                /* TFLM's row: its counter advances inside the class loop */
                const int64_t row = (int64_t)ncat * written + col;
                if (row < p->output_rows) {
                    det_write(out_boxes, out_classes, out_scores, (int32_t)row, s.boxes + (size_t)anchor * 4u,
                              (float)order[col], row_scores[order[col]]);
                }
                ++written;
            }
        }
        num_detections[0] = (float)written;
    }
}
