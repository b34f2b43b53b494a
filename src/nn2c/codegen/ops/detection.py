"""Lowering of TFLite_Detection_PostProcess (ir/ops/detection.py) onto kernels/nn2c_detection.c.

It checks what TFLM's Prepare and Eval check (3 inputs, 4 outputs, ranks, batch 1, at least 4 values
per box encoding, num_classes or num_classes + 1 class scores per anchor, float32 inputs: TFLM's
Eval fails on any other type), and beyond it every size the kernel indexes with: anchors [boxes, 4],
outputs of matching rows, at least max_detections rows with regular NMS (TFLM always writes that
many). Options were validated by the frontend; only numbers reach the C.
"""

from __future__ import annotations

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.ir import Node, Value


def _float(ctx: EmitContext, value: Value, rank: int, what: str) -> tuple[int, ...]:
    if value.type.dtype != "float32":
        raise ctx.unsupported(f"{what} {value.name!r} is {value.type.dtype}; TFLite Micro's "
                              "TFLite_Detection_PostProcess runs on float32 only (dequantize before it)")
    if len(value.type.shape) != rank:
        raise ctx.unsupported(f"{what} {value.name!r} has rank {len(value.type.shape)}, TFLite Micro requires {rank}")
    return tuple(int(d) for d in value.type.shape)


@lowering("DETECTION_POSTPROCESS")
def detection_postprocess(node: Node, ctx: EmitContext) -> None:
    ins = [node.input(i) for i in range(len(node.inputs))]
    if len(ins) != 3 or any(v is None for v in ins):
        raise ctx.unsupported(f"TFLite_Detection_PostProcess needs 3 inputs, got {len(node.inputs)}")
    if len(node.outputs) != 4:
        raise ctx.unsupported(f"TFLite_Detection_PostProcess needs 4 outputs, got {len(node.outputs)}")
    encodings, scores, anchors = (v for v in ins if v is not None)
    out_boxes, out_classes, out_scores, num = node.outputs
    a = node.attrs
    enc_shape = _float(ctx, encodings, 3, "box encodings")
    score_shape = _float(ctx, scores, 3, "class predictions")
    anchor_shape = _float(ctx, anchors, 2, "anchors")
    boxes_shape = _float(ctx, out_boxes, 3, "detection boxes output")
    classes_shape = _float(ctx, out_classes, 2, "detection classes output")
    _float(ctx, out_scores, 2, "detection scores output")
    n = enc_shape[1]
    if enc_shape[0] != 1 or score_shape[0] != 1 or enc_shape[2] < 4 or n < 1:
        raise ctx.unsupported(f"box encodings have shape {list(enc_shape)}; TFLite Micro needs [1, boxes >= 1, >= 4]")
    if score_shape[1] != n or score_shape[2] - int(a["num_classes"]) not in (0, 1):
        raise ctx.unsupported(f"class predictions have shape {list(score_shape)}; TFLite Micro needs [1, {n}, "
                              f"num_classes ({a['num_classes']}) or num_classes + 1]")
    if anchor_shape != (n, 4):
        raise ctx.unsupported(f"anchors have shape {list(anchor_shape)}; the kernel reads [{n}, 4]")
    rows = classes_shape[1]
    if (boxes_shape != (1, rows, 4) or out_scores.type.shape != (1, rows) or classes_shape[0] != 1
            or rows < 1 or num.type.dtype != "float32" or num.type.num_elements != 1):
        raise ctx.unsupported(f"outputs have shapes {list(boxes_shape)}, {list(classes_shape)}, "
                              f"{list(out_scores.type.shape)}, {list(num.type.shape)}; they must be float32 "
                              "[1, rows, 4], [1, rows], [1, rows], [1]")
    max_detections = int(a["max_detections"])
    if a["use_regular_nms"] and rows < max_detections:
        raise ctx.unsupported(f"the outputs have {rows} rows, fewer than max_detections ({max_detections}), which "
                              "TFLite Micro's regular NMS writes past; give them max_detections rows")
    if n > 1 << 20 or n * score_shape[2] > 1 << 26:
        raise ctx.unsupported(f"{n} anchors x {score_shape[2]} classes exceed what nn2c compiles (2^26 scores)")
    merged = max_detections + min(n, int(a["detections_per_class"]))
    ncat = min(int(a["max_classes_per_detection"]), int(a["num_classes"]))
    extra = 3 * merged if a["use_regular_nms"] else n * ncat
    scratch = ctx.scratch(4 * (9 * n + max(n, merged) + extra))
    params = ctx.params_struct("nn2c_detection_params_t", {
        "num_boxes": n, "box_stride": enc_shape[2], "num_classes": int(a["num_classes"]),
        "class_stride": score_shape[2], "max_detections": max_detections,
        "max_classes_per_detection": int(a["max_classes_per_detection"]),
        "detections_per_class": int(a["detections_per_class"]), "use_regular_nms": int(a["use_regular_nms"]),
        "output_rows": rows, "merged_capacity": merged,
        "score_threshold": float(a["nms_score_threshold"]), "iou_threshold": float(a["nms_iou_threshold"]),
        "y_scale": float(a["y_scale"]), "x_scale": float(a["x_scale"]), "h_scale": float(a["h_scale"]),
        "w_scale": float(a["w_scale"]),
    })
    ctx.use_kernel("detection")
    ctx.call("nn2c_detection_postprocess_f32", params, ctx.ptr(encodings), ctx.ptr(scores), ctx.ptr(anchors),
             ctx.ptr(out_boxes), ctx.ptr(out_classes), ctx.ptr(out_scores), ctx.ptr(num), scratch)
