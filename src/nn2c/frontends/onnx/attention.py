"""Attention (opsets 23..25) -> one fused ATTENTION node (kernels/nn2c_attention.c).

Attention(Q, K, V, attn_mask?, past_key?, past_value?) -> (Y, present_key?, present_value?,
qk_matmul_output?), following onnx.reference's op_attention.py:
- Q / K / V are 4-D [B, H, S, D] or 3-D [B, S, H * D] (then q_num_heads / kv_num_heads are
  required); grouped-query attention shares key / value head h // (Hq / Hkv).
- The key-value cache is data movement: present_key = Concat(past_key, K as [B, Hkv, S, D], axis 2)
  (a RESHAPE + TRANSPOSE first for a 3-D K), likewise for V; ATTENTION then reads the present
  tensors, and is_causal / the window are offset by the past length (a query at in-block index i
  sits at position i + past length: bottom-right alignment).
- scale: the reference multiplies both Q and K by float32(sqrt(scale)); nn2c folds that into one
  factor float32(sqrt(scale))^2 (default scale 1 / sqrt(D)).
- softmax_precision is accepted and the softmax computed in float32 (the float32 cases of the
  suite ask for float32 or double; the difference is within float tolerance).
- nonpad_kv_seqlen (opset 24, a run-time per-batch count of valid keys, an external cache): keys
  from that count on are masked, and the causal / window position of query row i is i + count - Sq.

RotaryEmbedding (opset 23) -> ROTARY_EMBEDDING(x, cos, sin): with constant position_ids the caches
are gathered at import (cos_cache[position_ids] -> [B, S, R / 2] constants); run-time position ids
gather the rows at run time (GATHER; an id outside the cache reads zeros).
- LinearAttention (opset 27) -> LINEAR_ATTENTION (float32): decay is required by the gated rules
  and refused by the others, beta likewise by the delta rules (as the operator's definition says);
  decay has Hkv or Hkv * dk values per token, beta Hkv or 1; chunk_size is a tuning hint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import ConversionContext, converts, invalid, unsupported
from nn2c.ir import Value


def _heads(a: dict[str, Any], x: Value, attr: str, what: str) -> int:
    """The head count of a 3-D [B, S, H * D] tensor (from attr), or of a 4-D one (its axis 1)."""
    shape = x.type.shape
    if len(shape) == 4:
        return int(shape[1])
    if len(shape) != 3:
        raise invalid(f"{what} must be 3-D or 4-D, got {list(shape)}")
    if attr not in a:
        raise invalid(f"3-D {what} {list(shape)} needs the {attr} attribute")
    heads = int(a[attr])
    if heads <= 0 or shape[2] % heads:
        raise invalid(f"{what} {list(shape)}: hidden size {shape[2]} is not a multiple of {attr} = {heads}")
    return heads


def _as_4d(c: ConversionContext, x: Value, heads: int, name: str) -> Value:
    """[B, S, H * D] -> [B, H, S, D] (a 4-D tensor is returned as it is)."""
    if len(x.type.shape) == 4:
        return x
    b, s, hidden = x.type.shape
    split = c.reshape(x, (b, s, heads, hidden // heads), f"{name}/heads")
    return c.transpose(split, (0, 2, 1, 3), f"{name}/bhsd")


def _cache(c: ConversionContext, node: Any, x: Value, past: Value | None, heads: int, k: int, what: str) -> Value:
    """present = Concat(past, x as 4-D) along the sequence axis (output k when the node names it);
    returns what ATTENTION reads: the present tensor, or x itself without a past."""
    wanted = k < len(node.output) and bool(node.output[k])
    if past is None and not wanted:
        return x
    x4 = _as_4d(c, x, heads, f"{node.output[0]}/{what}")
    if past is None:
        present = c.output(node, k, dtype=x4.type.dtype, shape=x4.type.shape)
        c.emit("IDENTITY", [x4], [present], {"source": "Attention"})
        return present
    if len(past.type.shape) != 4 or [past.type.shape[i] for i in (0, 1, 3)] != [x4.type.shape[i] for i in (0, 1, 3)]:
        raise invalid(f"past_{what} {list(past.type.shape)} does not match {what} as {list(x4.type.shape)}")
    shape = list(x4.type.shape)
    shape[2] += past.type.shape[2]
    present = c.output(node, k, dtype=x4.type.dtype, shape=shape) if wanted else \
        c.new(f"{node.output[0]}/present_{what}", x4.type.dtype, shape)
    c.emit("CONCATENATION", [past, x4], [present], {"axis": 2, "fused_activation_function": "NONE"})
    return present


def _scale(a: dict[str, Any], head_dim: int) -> float:
    given = a.get("scale")
    scale = float(given) if given is not None else 1.0 / math.sqrt(head_dim)
    if not scale > 0 or not math.isfinite(scale):
        raise invalid(f"scale {scale} must be positive and finite")
    root = float(np.float32(math.sqrt(scale)))  # the reference scales Q and K by float32(sqrt(scale)) each
    return root * root


@converts("Attention")
def _attention(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    q, k, v = (c.value(node.input[i]) for i in range(3))
    mask, past_key, past_value, nonpad = (c.optional(node, i) for i in range(3, 7))
    if nonpad is not None and past_key is not None:
        raise invalid("nonpad_kv_seqlen cannot be combined with past_key / past_value (it describes an external cache)")
    if (past_key is None) != (past_value is None):
        raise invalid("past_key and past_value must be given together")
    for x, what in ((q, "Q"), (k, "K"), (v, "V"), (past_key, "past_key"), (past_value, "past_value")):
        if x is not None and x.type.dtype != "float32":
            raise unsupported(f"{what} of {x.type.dtype} (float32 is supported)")
    if not len(q.type.shape) == len(k.type.shape) == len(v.type.shape):
        raise invalid(f"Q {list(q.type.shape)}, K {list(k.type.shape)} and V {list(v.type.shape)} differ in rank")
    q_heads = _heads(a, q, "q_num_heads", "Q")
    kv_heads = _heads(a, k, "kv_num_heads", "K")
    past_len = 0 if past_key is None else int(past_key.type.shape[2])
    k_read = _cache(c, node, k, past_key, kv_heads, 1, "key")
    v_read = _cache(c, node, v, past_value, kv_heads, 2, "value")
    head_dim = q.type.shape[3] if len(q.type.shape) == 4 else q.type.shape[2] // q_heads
    attrs = {
        "q_num_heads": q_heads, "kv_num_heads": kv_heads, "scale": _scale(a, head_dim),
        "is_causal": bool(int(a.get("is_causal", 0))), "causal_offset": past_len,
        "left_window_size": int(a.get("left_window_size", -1)),
        "right_window_size": int(a.get("right_window_size", -1)),
        "softcap": max(float(a.get("softcap", 0.0)), 0.0),
        "qk_matmul_output_mode": int(a.get("qk_matmul_output_mode", 0)),
    }
    if attrs["qk_matmul_output_mode"] not in (0, 1, 2, 3):
        raise invalid(f"qk_matmul_output_mode {attrs['qk_matmul_output_mode']} (0 to 3 are defined)")
    if min(attrs["left_window_size"], attrs["right_window_size"]) < -1:
        raise invalid("left_window_size / right_window_size must be -1 or non-negative")
    if mask is not None and mask.type.dtype not in ("float32", "bool"):
        raise unsupported(f"attn_mask of {mask.type.dtype} (float32 and bool are supported)")
    v_dim = v.type.shape[3] if len(v.type.shape) == 4 else v.type.shape[2] // kv_heads * q_heads
    y = c.output(node, 0) if node.output[0] else c.new("attention_y", "float32", (*q.type.shape[:-1], v_dim))
    outputs = [y]
    if len(node.output) > 3 and node.output[3]:
        outputs.append(c.output(node, 3))
    c.emit("ATTENTION", [q, k_read, v_read, mask, nonpad], outputs, attrs)


def _gather_rows(c: ConversionContext, table: Value, ids: Value, name: str) -> Value:
    """table[ids]: rows of a [positions, R / 2] cache for run-time position ids [B, S]."""
    if len(table.type.shape) != 2:
        raise invalid(f"a cos / sin cache of shape {list(table.type.shape)} (2-D [positions, rotary_dim / 2] is "
                      "needed with position_ids)")
    rows = c.new(name, table.type.dtype, [*ids.type.shape, table.type.shape[1]])
    c.emit("GATHER", [table, ids], [rows], {"axis": 0, "batch_dims": 0})
    return rows


@converts("RotaryEmbedding")
def _rotary_embedding(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    cos, sin = c.value(node.input[1]), c.value(node.input[2])
    ids_v = c.optional(node, 3)
    if ids_v is not None and c.data(ids_v) is None:  # run-time positions: gather the cache rows
        cos, sin = (_gather_rows(c, table, ids_v, f"{node.output[0]}/{what}")
                    for table, what in ((cos, "cos"), (sin, "sin")))
    elif ids_v is not None:
        ids = c.const_input(node, 3, "position_ids").astype(np.int64)
        tables = [c.data(cos), c.data(sin)]
        if tables[0] is None or tables[1] is None:
            raise unsupported("position_ids with run-time cos / sin caches")
        if ids.size and (ids.min() < 0 or ids.max() >= tables[0].shape[0]):
            raise invalid(f"position_ids outside the {tables[0].shape[0]} cached positions")
        cos, sin = (c.const(np.asarray(t, dtype=np.float32)[ids], f"{node.output[0]}/{what}")
                    for t, what in zip(tables, ("cos", "sin"), strict=True))
    rank = len(x.type.shape)
    heads = int(a.get("num_heads", 0))
    if rank == 3 and (heads <= 0 or x.type.shape[2] % heads):
        raise invalid(f"3-D input {list(x.type.shape)} needs num_heads dividing its hidden size (got {heads})")
    if rank not in (3, 4):
        raise invalid(f"input must be 3-D or 4-D, got {list(x.type.shape)}")
    attrs = {"num_heads": heads if rank == 3 else int(x.type.shape[1]),
             "rotary_dim": int(a.get("rotary_embedding_dim", 0)), "interleaved": bool(int(a.get("interleaved", 0)))}
    c.emit("ROTARY_EMBEDDING", [x, cos, sin], [c.output(node)], attrs)


@converts("LinearAttention")
def _linear_attention(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    q, k, v = (c.value(node.input[i]) for i in range(3))
    past, decay, beta = (c.optional(node, i) for i in (3, 4, 5))
    rule = str(a.get("update_rule", "gated_delta"))
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise invalid(f"update_rule {rule!r}; it must be linear, gated, delta or gated_delta")
    if "q_num_heads" not in a or "kv_num_heads" not in a:
        raise invalid("q_num_heads and kv_num_heads are required attributes")
    hq, hkv = int(a["q_num_heads"]), int(a["kv_num_heads"])
    if hq <= 0 or hkv <= 0 or hq % hkv:
        raise invalid(f"q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
    if any(len(x.type.shape) != 3 for x in (q, k, v)):
        raise invalid("query, key and value must be rank 3 [batch, tokens, heads * size]")
    b, t, qd = q.type.shape
    if qd % hq or v.type.shape[2] % hkv:
        raise invalid(f"query width {qd} / value width {v.type.shape[2]} do not divide into {hq} / {hkv} heads")
    dk, dv = qd // hq, v.type.shape[2] // hkv
    if k.type.shape != (b, t, hkv * dk) or v.type.shape[:2] != (b, t):
        raise invalid(f"key {list(k.type.shape)} / value {list(v.type.shape)} do not fit query {list(q.type.shape)}")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if (decay is not None) != gated or (beta is not None) != delta:
        raise invalid(f"update_rule {rule} takes {'a' if gated else 'no'} decay and {'a' if delta else 'no'} beta input")
    if past is not None and past.type.shape != (b, hkv, dk, dv):
        raise invalid(f"past_state {list(past.type.shape)} must be {[b, hkv, dk, dv]}")
    if decay is not None and (decay.type.shape[:2] != (b, t) or decay.type.shape[2] not in (hkv, hkv * dk)):
        raise invalid(f"decay {list(decay.type.shape)} must be [{b}, {t}, {hkv} or {hkv * dk}]")
    if beta is not None and (beta.type.shape[:2] != (b, t) or beta.type.shape[2] not in (hkv, 1)):
        raise invalid(f"beta {list(beta.type.shape)} must be [{b}, {t}, {hkv} or 1]")
    if any(x is not None and x.type.dtype != "float32" for x in (q, k, v, past, decay, beta)):
        raise unsupported("LinearAttention of a non-float32 tensor (float32 is supported)")
    out = c.output(node, 0, "float32", (b, t, hq * dv))
    if len(node.output) > 1 and node.output[1]:
        present = c.output(node, 1, "float32", (b, hkv, dk, dv))
    else:
        present = c.new(f"{node.output[0]}/present_state", "float32", (b, hkv, dk, dv))
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule, "scale": float(a.get("scale", 0.0))}
    c.emit("LINEAR_ATTENTION", [q, k, v, past, decay, beta], [out, present], attrs)
