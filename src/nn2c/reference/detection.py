"""Reference semantics of TFLite_Detection_PostProcess (ir/ops/detection.py), float for float.

It follows tflite-micro kernels/detection_postprocess.cc step for step, as the C kernel
(kernels/nn2c_detection.c) does: the centre-size decoding in double, rounded to float32 where TFLM
rounds; the box arithmetic and IoU in float32 (numpy float32 scalars, rounded after every
operation); std::max / std::min as (a < b) ? b : a and (b < a) ? b : a. Orders:
- the per-class (regular) and per-anchor (fast) top-k, DecreasingPartialArgSort: decreasing score,
  equal scores by increasing index (its comparator is a strict total order without NaN, so any
  correct partial sort gives TFLM's result);
- the candidates of one NMS pass, DecreasingArgSort: TFLM's own merge sort (insertion sort below 20
  elements, std::upper_bound + std::rotate; a merge that takes the right element only when it
  scores strictly higher), reproduced exactly, so that it is stable.
TFLM's fast path writes detection k's c-th class at row ncat * (k * ncat + c) + c (its row counter
advances inside the class loop); that layout is reproduced, and rows past the output's end are not
written (TFLM would write past the tensor). Rows not written are zero here (TFLM leaves them
unwritten). Where TFLM's Invoke fails (a decoded box with ymin >= ymax or xmin >= xmax), the
outputs are all zero: no detections.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nn2c.ir import Node
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays, ReferenceError

F32 = np.float32
_ZERO = F32(0.0)


def decode_boxes(encodings: np.ndarray, anchors: np.ndarray, scales: tuple[float, float, float, float]) -> np.ndarray:
    """[boxes, >= 4] (y, x, h, w) encodings and [boxes, 4] anchors -> [boxes, 4] (ymin, xmin, ymax, xmax)."""
    sy, sx, sh, sw = (float(F32(s)) for s in scales)
    out = np.zeros((encodings.shape[0], 4), dtype=np.float32)
    for i in range(encodings.shape[0]):
        y, x, h, w = (float(v) for v in encodings[i, :4])
        ay, ax, ah, aw = (float(v) for v in anchors[i, :4])
        ycenter = F32(y / sy * ah + ay)
        xcenter = F32(x / sx * aw + ax)
        half_h = F32(0.5 * _exp(h / sh) * ah)
        half_w = F32(0.5 * _exp(w / sw) * aw)
        out[i] = [ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w]
    return out


def _exp(v: float) -> float:
    if math.isnan(v):
        return v
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _fmax(a: np.float32, b: np.float32) -> np.float32:
    return b if a < b else a


def _fmin(a: np.float32, b: np.float32) -> np.float32:
    return b if b < a else a


def iou(boxes: np.ndarray, i: int, j: int) -> np.float32:
    bi, bj = boxes[i], boxes[j]
    area_i = (bi[2] - bi[0]) * (bi[3] - bi[1])
    area_j = (bj[2] - bj[0]) * (bj[3] - bj[1])
    if area_i <= 0 or area_j <= 0:
        return _ZERO
    ymin, xmin = _fmax(bi[0], bj[0]), _fmax(bi[1], bj[1])
    ymax, xmax = _fmin(bi[2], bj[2]), _fmin(bi[3], bj[3])
    inter = _fmax(F32(ymax - ymin), _ZERO) * _fmax(F32(xmax - xmin), _ZERO)
    return F32(inter / (area_i + area_j - inter))


def partial_argsort(values: list[np.float32], count: int) -> list[int]:
    """The first `count` indices of DecreasingPartialArgSort: decreasing value, ties by index."""
    top: list[int] = []
    for i in range(len(values)):
        pos = len(top)
        while pos > 0 and _before(values, i, top[pos - 1]):
            pos -= 1
        if pos < count:
            top.insert(pos, i)
            del top[count:]
    return top


def _before(values: list[np.float32], a: int, b: int) -> bool:
    return bool(values[a] > values[b] or (values[a] == values[b] and a < b))


def merge_argsort(values: list[np.float32]) -> list[int]:
    """DecreasingArgSort: TFLM's merge sort of the indices by values[i] > values[j]."""
    indices = list(range(len(values)))
    _merge_sort(indices, 0, len(indices), values)
    return indices


def _merge_sort(a: list[int], start: int, n: int, v: list[np.float32]) -> None:
    if n < 20:
        for k in range(start, start + n):  # std::rotate(std::upper_bound(start, k, a[k]), k, k + 1)
            item, pos = a[k], start
            lo, hi = start, k
            while lo < hi:  # upper_bound: the first p with comp(item, a[p])
                mid = (lo + hi) // 2
                if v[item] > v[a[mid]]:
                    hi = mid
                else:
                    lo = mid + 1
            pos = lo
            a[pos + 1:k + 1] = a[pos:k]
            a[pos] = item
        return
    half = n // 2
    _merge_sort(a, start, half, v)
    _merge_sort(a, start + half, n - half, v)
    merged = []
    left, right = start, start + half
    for _ in range(n):
        if left >= start + half or (right < start + n and v[a[right]] > v[a[left]]):
            merged.append(a[right])
            right += 1
        else:
            merged.append(a[left])
            left += 1
    a[start:start + n] = merged


def nms_single_class(boxes: np.ndarray, scores: list[np.float32], max_detections: int, score_threshold: np.float32,
                     iou_threshold: np.float32) -> list[int]:
    keep = [i for i, s in enumerate(scores) if s >= score_threshold]
    order = merge_argsort([scores[i] for i in keep])
    output_size = min(len(keep), max_detections)
    active = [True] * len(keep)
    num_active = len(keep)
    selected: list[int] = []
    for i in range(len(keep)):
        if num_active == 0 or len(selected) >= output_size:
            break
        if not active[i]:
            continue
        selected.append(keep[order[i]])
        active[i] = False
        num_active -= 1
        for j in range(i + 1, len(keep)):
            if active[j] and iou(boxes, keep[order[i]], keep[order[j]]) > iou_threshold:
                active[j] = False
                num_active -= 1
    return selected


def detection_postprocess(encodings: np.ndarray, class_scores: np.ndarray, anchors: np.ndarray, attrs: dict[str, Any],
                          rows: int) -> list[np.ndarray]:
    """(boxes [1, rows, 4], classes [1, rows], scores [1, rows], num_detections [1]), float32."""
    enc = np.asarray(encodings, dtype=np.float32).reshape(encodings.shape[1], encodings.shape[2])
    cls = np.asarray(class_scores, dtype=np.float32).reshape(class_scores.shape[1], class_scores.shape[2])
    anc = np.asarray(anchors, dtype=np.float32).reshape(-1, 4)
    num_boxes, with_bg = cls.shape
    num_classes = int(attrs["num_classes"])
    offset = with_bg - num_classes
    out_boxes = np.zeros((rows, 4), np.float32)
    out_classes = np.zeros(rows, np.float32)
    out_scores = np.zeros(rows, np.float32)
    result = [out_boxes.reshape(1, rows, 4), out_classes.reshape(1, rows), out_scores.reshape(1, rows),
              np.zeros(1, np.float32)]
    scales = (attrs["y_scale"], attrs["x_scale"], attrs["h_scale"], attrs["w_scale"])
    boxes = decode_boxes(enc, anc, scales)
    if any(b[0] >= b[2] or b[1] >= b[3] for b in boxes):
        return result  # TFLM's ValidateBoxes fails the Invoke
    score_threshold, iou_threshold = F32(attrs["nms_score_threshold"]), F32(attrs["nms_iou_threshold"])
    max_detections = int(attrs["max_detections"])
    if attrs["use_regular_nms"]:
        kept_index: list[int] = []
        kept_score: list[np.float32] = []
        for col in range(num_classes):
            column = [cls[row, col + offset] for row in range(num_boxes)]
            selected = nms_single_class(boxes, column, int(attrs["detections_per_class"]), score_threshold,
                                        iou_threshold)
            kept_index += [s * with_bg + col + offset for s in selected]
            kept_score += [column[s] for s in selected]
            order = partial_argsort(kept_score, min(len(kept_score), max_detections))
            kept_index = [kept_index[k] for k in order]
            kept_score = [kept_score[k] for k in order]
        for r, (index, score) in enumerate(zip(kept_index, kept_score, strict=True)):
            if r < rows:
                anchor = index // with_bg
                out_boxes[r] = boxes[anchor]
                out_classes[r] = F32(index - anchor * with_bg - offset)
                out_scores[r] = score
        result[3][0] = F32(len(kept_index))
        return result
    ncat = min(int(attrs["max_classes_per_detection"]), num_classes)
    class_order = [partial_argsort(list(cls[row, offset:]), ncat) for row in range(num_boxes)]
    max_scores = [cls[row, offset + class_order[row][0]] for row in range(num_boxes)]
    selected = nms_single_class(boxes, max_scores, max_detections, score_threshold, iou_threshold)
    count = 0
    for anchor in selected:
        for col in range(ncat):
            r = ncat * count + col
            if r < rows:
                out_boxes[r] = boxes[anchor]
                out_classes[r] = F32(class_order[anchor][col])
                out_scores[r] = cls[anchor, offset + class_order[anchor][col]]
            count += 1
    result[3][0] = F32(count)
    return result


@evaluator("DETECTION_POSTPROCESS")
def _detection_postprocess(node: Node, arrays: Arrays) -> list[np.ndarray]:
    if len(arrays) != 3 or any(a is None for a in arrays):
        raise ReferenceError("DETECTION_POSTPROCESS takes 3 inputs")
    encodings, scores, anchors = (np.asarray(a) for a in arrays)
    if any(a.dtype != np.float32 for a in (encodings, scores, anchors)):
        raise ReferenceError("DETECTION_POSTPROCESS runs on float32 inputs only (as TFLite Micro)")
    if (len(node.outputs) != 4 or encodings.ndim != 3 or scores.ndim != 3 or encodings.shape[0] != 1
            or encodings.shape[2] < 4 or scores.shape[:2] != encodings.shape[:2] or anchors.shape != (encodings.shape[1], 4)
            or scores.shape[2] - int(node.attrs["num_classes"]) not in (0, 1) or len(node.outputs[1].type.shape) != 2):
        raise ReferenceError("DETECTION_POSTPROCESS needs box encodings [1, n, >= 4], class predictions [1, n, "
                             "num_classes (+ 1)], anchors [n, 4] and 4 outputs")
    rows = int(node.outputs[1].type.shape[-1])
    with np.errstate(all="ignore"):  # inf and NaN propagate as in C
        return detection_postprocess(encodings, scores, anchors, node.attrs, rows)
