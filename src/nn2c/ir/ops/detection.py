"""Operator facts: TFLite_Detection_PostProcess, the end of SSD detection models.

The TFLite frontend reads it from the custom operator (frontends/tflite_custom.py); its options
become attributes: ints max_detections, max_classes_per_detection, detections_per_class,
use_regular_nms (0 / 1), num_classes, and float32 values nms_score_threshold, nms_iou_threshold,
y_scale, x_scale, h_scale, w_scale.
- DETECTION_POSTPROCESS: (box encodings float32 [1, boxes, >= 4] (y, x, h, w), class scores float32
  [1, boxes, num_classes (+ 1 background)], anchors float32 [boxes, 4] (y, x, h, w)) -> (boxes
  float32 [1, rows, 4] (ymin, xmin, ymax, xmax), classes float32 [1, rows], scores float32 [1, rows],
  num_detections float32 [1]). TFLite Micro runs float inputs only (a quantized model dequantizes
  before it).
It does not run in place (it reads its inputs after writing its outputs).
"""

from __future__ import annotations

from nn2c.ir.ops.info import OpInfo

FACTS: dict[str, OpInfo] = {
    "DETECTION_POSTPROCESS": OpInfo("other", data_inputs=(0, 1)),
}
