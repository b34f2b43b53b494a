"""Operator facts: sampling an input at run-time coordinates (nn2c-internal, from ONNX GridSample).

- GRID_SAMPLE: inputs (x, grid), x [N, C, D1..Dr] (r = 1..3 spatial axes), grid [N, H1..Hr, r] of
  normalised coordinates in [-1, 1] (component k addresses spatial axis r-1-k); output
  [N, C, H1..Hr]. Attributes mode ("nearest" / "linear" / "cubic"), padding_mode ("zeros" /
  "border" / "reflection"), align_corners (0 / 1). Semantics in reference/sampling.py. Float only
  (no int8 kernel: the quantizers leave it in float); the channel axis is fixed (NCHW), so a
  transpose does not pass through it.
- ROI_ALIGN (ONNX RoiAlign): inputs (x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch indices
  [R] int32 / int64), output [R, C, output_height, output_width]; attributes mode ("avg" / "max"),
  sampling_ratio, spatial_scale, half_pixel (coordinate_transformation_mode). Float only.
- BITCAST (from ONNX BitCast): the input's bytes as another dtype of the same element size (attr
  `to`, the IR dtype name); the output shares the input's memory. Not a "reshape": RESHAPE chains
  must not swallow the dtype change.
"""

from __future__ import annotations

from nn2c.ir.ops.info import OpInfo

FACTS: dict[str, OpInfo] = {
    "GRID_SAMPLE": OpInfo("resize", data_inputs=(0, 1)),
    "ROI_ALIGN": OpInfo("resize", data_inputs=(0, 1, 2)),
    "BITCAST": OpInfo("other"),
}
