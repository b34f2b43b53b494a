"""Operator facts: Reductions over axes, arg-max/min, norms and the pools beyond average / max.

- MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ALL, REDUCE_ANY: TFLite reductions
  (input 1: the axes, attribute keep_dims); a transpose passes through them with the axes remapped.
- ARG_MAX, ARG_MIN: TFLite's (input 1: the one axis; output int32, or int64 from ONNX); the
  nn2c-only attribute select_last picks the last extreme index (ONNX select_last_index).
- L2_POOL_2D: TFLite's float NHWC L2 pool.
- WINDOW_POOL (nn2c-only, from ONNX): a channels-first (N, C, spatial...) max / average / Lp pool
  with explicit pads, dilations and ceil-mode output sizes, for what the NHWC pools cannot take; a
  float32 max pool may have a second output, the int64 flat input index of each maximum (ONNX
  MaxPool's Indices; attr storage_order 1: spatial dims column-major).
- HARDMAX (nn2c-only, from ONNX): one-hot of the first maximum along an axis.
"""

from __future__ import annotations

from nn2c.ir.ops.info import OpInfo

FACTS: dict[str, OpInfo] = {
    "MEAN": OpInfo("reduction", int8="free", layout="reduce"),
    "SUM": OpInfo("reduction", int8="free", layout="reduce"),
    "REDUCE_MAX": OpInfo("reduction", int8="tied", layout="reduce"),
    "REDUCE_MIN": OpInfo("reduction", int8="tied", layout="reduce"),
    "REDUCE_PROD": OpInfo("reduction", layout="reduce"),
    "REDUCE_ALL": OpInfo("reduction", layout="reduce"),
    "REDUCE_ANY": OpInfo("reduction", layout="reduce"),
    "ARG_MAX": OpInfo("reduction"),
    "ARG_MIN": OpInfo("reduction"),
    "L2_POOL_2D": OpInfo("window", fused_activation=True),
    "WINDOW_POOL": OpInfo("window"),
    "HARDMAX": OpInfo("other"),
}
