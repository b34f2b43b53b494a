"""Operator facts: matrix products with run-time operands, transposed convolution, normalisations.

- BATCH_MATMUL (TFLite): both operands are data (either may also be a constant); batch axes
  broadcast; no fused activation.
- TRANSPOSE_CONV (TFLite): inputs (output_shape, filter OHWI, input NHWC, bias); the data input is
  position 2. Its filter is not re-laid out by passes (no weight_axis: fuse-pad and fold-affine
  must not treat it as a convolution).
- L2_NORMALIZATION (TFLite): x / max(||x||_2, 1e-6) over the last axis.
- nn2c-internal normalisations (ONNX): NORMALIZE (mean / variance or RMS normalisation of groups of
  contiguous elements with an optional per-element or per-channel scale and bias: LayerNormalization,
  RMSNormalization, InstanceNormalization, GroupNormalization, MeanVarianceNormalization) and
  LP_NORMALIZATION (x / ||x||_p along one axis, p = 1 or 2).
- LRN (nn2c-internal, from ONNX LRN): channels-first local response normalisation across axis 1,
  attributes size, alpha, beta, bias.
- DET (nn2c-internal, from ONNX Det): the determinant of each [n, n] matrix of [..., n, n].
- CAUSAL_CONV (nn2c-internal, from ONNX CausalConvWithState): inputs (x [B, C, L], weight
  [C, 1, K], optional bias [C], optional past_state [B, C, K-1]), outputs (y [B, C, L],
  present_state [B, C, K-1]): the depthwise convolution of past_state (zeros when absent) followed
  by x, attribute activation ("none" / "silu"). Every given input may be run-time data.
- DEFORM_CONV (nn2c-internal, from ONNX DeformConv, 2-D): inputs (x [N, C, H, W], weight
  [OC, C / group, kh, kw], offset [N, offset_group * kh * kw * 2, OH, OW], optional bias [OC],
  optional mask [N, offset_group * kh * kw, OH, OW]); attributes strides, pads (top, left,
  bottom, right), dilations, group, offset_group. Every input may be run-time data.
"""

from __future__ import annotations

from nn2c.ir.ops.info import ALL, OpInfo

FACTS: dict[str, OpInfo] = {
    "BATCH_MATMUL": OpInfo("matmul", data_inputs=(0, 1)),
    "TRANSPOSE_CONV": OpInfo("other", data_inputs=(2,), fused_activation=True),
    "L2_NORMALIZATION": OpInfo("other", fused_activation=True),
    "NORMALIZE": OpInfo("other"),
    "LP_NORMALIZATION": OpInfo("other"),
    "LRN": OpInfo("other"),
    "DET": OpInfo("other"),
    "CAUSAL_CONV": OpInfo("other", data_inputs=ALL),
    "DEFORM_CONV": OpInfo("other", data_inputs=ALL),
}
