/* TFLite_Detection_PostProcess (TFLite Micro kernels/detection_postprocess.cc): SSD centre-size box
 * decoding against the anchors, then non-max suppression, fast (one pass over each anchor's best
 * class) or regular (one pass per class, then the best max_detections over all classes). Float
 * arithmetic in TFLM's order: decoding in double rounded to float where TFLM rounds, IoU in float;
 * the same sorts (a partial sort by decreasing score with ties by index, TFLM's stable merge sort). */
#ifndef NN2C_DETECTION_H
#define NN2C_DETECTION_H
#include "nn2c_common.h"

typedef struct {
    int32_t num_boxes;         /* anchors */
    int32_t box_stride;        /* values per box encoding (>= 4; the first 4 are y, x, h, w) */
    int32_t num_classes;       /* classes without background */
    int32_t class_stride;      /* class scores per anchor: num_classes, + 1 with a background class first */
    int32_t max_detections;
    int32_t max_classes_per_detection;
    int32_t detections_per_class;
    int32_t use_regular_nms;
    int32_t output_rows;       /* rows of the boxes, classes and scores outputs */
    int32_t merged_capacity;   /* max_detections + min(num_boxes, detections_per_class) */
    float score_threshold;
    float iou_threshold;       /* in (0, 1] */
    float y_scale, x_scale, h_scale, w_scale;  /* non-zero */
} nn2c_detection_params_t;

/* Outputs: boxes [output_rows][4] (ymin, xmin, ymax, xmax), classes and scores [output_rows],
 * num_detections [1]; rows not written by the algorithm are 0. When a decoded box has ymin >= ymax
 * or xmin >= xmax (TFLM's Invoke fails), every output is 0. scratch: 4-byte aligned, of
 * 4 * (9 * num_boxes + max(num_boxes, merged_capacity) + extra) bytes, extra = 3 * merged_capacity
 * with regular NMS, num_boxes * min(max_classes_per_detection, num_classes) without. */
void nn2c_detection_postprocess_f32(const nn2c_detection_params_t *p, const float *box_encodings,
                                    const float *class_scores, const float *anchors, float *out_boxes,
                                    float *out_classes, float *out_scores, float *num_detections, void *scratch);
#endif
