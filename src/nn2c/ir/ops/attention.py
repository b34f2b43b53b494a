"""Operator facts: scaled dot-product attention (nn2c-internal, from ONNX Attention, opsets 23..25).

- ATTENTION: inputs (Q, K, V, attn_mask, nonpad_kv_seqlen), outputs (Y, qk_output). Q / Y are [B, Hq, Sq, D] or
  [B, Sq, Hq * D] (3-D with attrs q_num_heads), K / V likewise with kv_num_heads; every input is
  run-time data. The past / present key-value cache is plain data movement the frontend emits
  (CONCATENATION along the sequence axis); the kernel only sees the concatenated K / V and the
  causal offset (the past length). One fused float kernel, no int8 variant (the quantizers leave
  it in float), fixed layout (the head and sequence axes are addressed by strides).
- ROTARY_EMBEDDING: inputs (x, cos, sin), x [B, H, S, D] or [B, S, H * D] (attr num_heads), cos /
  sin [B or 1, S, R / 2]; the first R = rotary_dim features of each head are rotated (pairs
  (i, i + R / 2), or (2i, 2i + 1) with interleaved), the rest copied. Float only, fixed layout.
- LINEAR_ATTENTION (ONNX LinearAttention, opset 27): inputs (query [B, T, Hq * dk], key
  [B, T, Hkv * dk], value [B, T, Hkv * dv], past_state [B, Hkv, dk, dv], decay [B, T, Hkv or
  Hkv * dk], beta [B, T, Hkv or 1]; the last three optional), outputs (output [B, T, Hq * dv],
  present_state); attributes q_num_heads, kv_num_heads, scale, update_rule (linear / gated /
  delta / gated_delta). The recurrence is in reference/attention.py. Float only, fixed layout.
"""

from __future__ import annotations

from nn2c.ir.ops.info import OpInfo

FACTS: dict[str, OpInfo] = {
    "ATTENTION": OpInfo("other", data_inputs=(0, 1, 2, 3, 4)),
    "ROTARY_EMBEDDING": OpInfo("other", data_inputs=(0, 1, 2)),
    "LINEAR_ATTENTION": OpInfo("other", data_inputs=(0, 1, 2, 3, 4, 5)),
}
