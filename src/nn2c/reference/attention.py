"""Reference semantics of ATTENTION (ONNX Attention, opsets 23..25, as onnx.reference computes it).

Inputs (Q, K, V, attn_mask), outputs (Y, qk_output). A 3-D tensor [B, S, H * D] is viewed as
[B, H, S, D] with H = q_num_heads (Q, Y) or kv_num_heads (K, V). Per batch b, query head h (key /
value head h // (Hq / Hkv)), query row i and key j:
  bias[i, j]  = mask[i, j] (float; bool: 0 / -inf; -inf where j >= the mask's last dim)
                + (is_causal and j > i + causal_offset ? -inf : 0)
                + (outside the window left_window_size / right_window_size around i + offset ? -inf : 0)
  logit[i, j] = softcap(scale * q_i . k_j)   (softcap(x) = c * tanh(x / c) when c > 0)
  p[i, :]     = softmax(logit[i, :] + bias[i, :]); 0 for a row whose bias is all -inf
  Y[i]        = sum_j p[i, j] v_j
qk_output: mode 0 / 1 the (softcapped) logits, 2 logits + bias, 3 the probabilities.

ROTARY_EMBEDDING (x, cos, sin; attrs num_heads, rotary_dim, interleaved), as onnx.reference's
RotaryEmbedding without position_ids: per head row, with c / s = cos / sin[b, seq, i] and the pair
(x1, x2) = (x[i], x[i + R / 2]) or (x[2i], x[2i + 1]): x1' = c x1 - s x2, x2' = s x1 + c x2.
"""

from __future__ import annotations

import numpy as np

from nn2c.ir import Node
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays, ReferenceError, real, store


def as_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """[B, H, S, D] view of a 4-D tensor, or of a 3-D [B, S, H * D] one."""
    if x.ndim == 4:
        return x
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def attention_bias(node: Node, mask: np.ndarray | None, q_len: int, kv_len: int,
                   nonpad: np.ndarray | None = None) -> np.ndarray:
    """The additive bias (broadcastable to [B, Hq, Sq, Skv]) of the mask, causal and window terms;
    nonpad (nonpad_kv_seqlen, [B]): keys from n[b] on are masked, and the causal / window position of
    row i is i + n[b] - Sq."""
    attrs = node.attrs
    bias = np.zeros((q_len, kv_len))
    if mask is not None:
        if mask.dtype == np.bool_:
            mask = np.where(mask, 0.0, -np.inf)
        width = kv_len - mask.shape[-1]
        if width > 0:
            mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, width)], constant_values=-np.inf)
        bias = bias + mask
    offset: int | np.ndarray = int(attrs.get("causal_offset", 0))
    if nonpad is not None:
        valid = np.clip(nonpad.astype(np.int64).reshape(-1, 1, 1, 1), -(2**30), 2**30)
        offset = valid - q_len
    diff = np.arange(q_len)[:, None] + offset - np.arange(kv_len)[None, :]  # (i + offset) - j
    allowed = np.ones(diff.shape, dtype=bool)
    if nonpad is not None:
        allowed &= np.arange(kv_len) < valid
    if attrs.get("is_causal"):
        allowed &= diff >= 0
    left, right = int(attrs.get("left_window_size", -1)), int(attrs.get("right_window_size", -1))
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return bias + np.where(allowed, 0.0, -np.inf)


def _softmax(x: np.ndarray) -> np.ndarray:
    top = np.max(x, axis=-1, keepdims=True)
    top = np.where(np.isneginf(top), 0.0, top)
    e = np.exp(x - top)
    total = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


@evaluator("ATTENTION")
def attention(node: Node, arrays: Arrays) -> list[np.ndarray]:
    q_heads, kv_heads = int(node.attrs.get("q_num_heads", 0)), int(node.attrs.get("kv_num_heads", 0))
    qkv = []
    for i, heads in enumerate((q_heads, kv_heads, kv_heads)):
        value = node.input(i)
        if value is None or arrays[i] is None:
            raise ReferenceError("ATTENTION needs Q, K and V")
        qkv.append(as_heads(real(value, np.asarray(arrays[i])), heads))
    q, k, v = qkv
    mask = None
    if node.input(3) is not None and len(arrays) > 3 and arrays[3] is not None:
        mask = np.asarray(arrays[3])
        mask = mask if mask.dtype == np.bool_ else mask.astype(np.float64)
    reps = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, reps, axis=1), np.repeat(v, reps, axis=1)
    with np.errstate(all="ignore"):
        logits = np.matmul(q, np.swapaxes(k, -1, -2)) * float(node.attrs.get("scale", 1.0))
        cap = float(node.attrs.get("softcap", 0.0))
        if cap > 0:
            logits = cap * np.tanh(logits / cap)
        nonpad = np.asarray(arrays[4]) if node.input(4) is not None and len(arrays) > 4 else None
        bias = attention_bias(node, mask, q.shape[2], k.shape[2], nonpad)
        biased = logits + bias
        probs = _softmax(biased)
        fully_masked = np.isneginf(np.max(np.broadcast_to(bias, biased.shape), axis=-1, keepdims=True))
        probs = np.where(fully_masked, 0.0, probs)
        y = np.matmul(probs, v)
    if len(node.outputs[0].type.shape) == 3:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    results = [store(node.outputs[0], y)]
    if len(node.outputs) > 1:
        mode = int(node.attrs.get("qk_matmul_output_mode", 0))
        qk = {2: biased, 3: probs}.get(mode, logits)
        results.append(store(node.outputs[1], qk))
    return results


@evaluator("ROTARY_EMBEDDING")
def rotary_embedding(node: Node, arrays: Arrays) -> list[np.ndarray]:
    values = [node.input(i) for i in range(3)]
    if any(v is None or arrays[i] is None for i, v in enumerate(values)):
        raise ReferenceError("ROTARY_EMBEDDING needs x, cos and sin")
    x = np.asarray(arrays[0], dtype=np.float64)
    cos, sin = (np.asarray(arrays[i], dtype=np.float64)[:, None] for i in (1, 2))  # [B, 1, S, R / 2]
    heads = as_heads(x, int(node.attrs.get("num_heads", 0))).copy()  # [B, H, S, D]
    rotary = int(node.attrs.get("rotary_dim", 0)) or heads.shape[-1]
    half = rotary // 2
    if node.attrs.get("interleaved"):
        first, second = np.arange(0, rotary, 2), np.arange(1, rotary, 2)
    else:
        first, second = np.arange(half), np.arange(half, rotary)
    x1, x2 = heads[..., first], heads[..., second]
    heads[..., first], heads[..., second] = cos * x1 - sin * x2, sin * x1 + cos * x2
    if x.ndim == 3:
        heads = heads.transpose(0, 2, 1, 3).reshape(x.shape)
    return [store(node.outputs[0], heads)]


LINEAR_RULES = {"linear": 0, "gated": 1, "delta": 2, "gated_delta": 3}


@evaluator("LINEAR_ATTENTION")
def _linear_attention(node: Node, arrays: Arrays) -> list[np.ndarray]:
    """Per token t, per key-value head (state S [dk, dv], from past_state or zeros):
    gated rules: S *= exp(g_t) (per head, or per key row); delta rules: v_t = beta_t (v_t - S^T k_t);
    then S += k_t v_t^T; query head h reads its group's S: o = scale q_t^T S (scale 0: 1 / sqrt(dk))."""
    a = node.attrs
    hq, hkv = int(a["q_num_heads"]), int(a["kv_num_heads"])
    rule = str(a.get("update_rule", "gated_delta"))
    q, k, v = (np.asarray(arrays[i], dtype=np.float32) for i in range(3))
    past, decay, beta = (arrays[i] if i < len(arrays) else None for i in (3, 4, 5))
    b, t, _ = q.shape
    dk, dv = q.shape[2] // hq, v.shape[2] // hkv
    q4 = q.reshape(b, t, hq, dk).transpose(0, 2, 1, 3)
    k4 = k.reshape(b, t, hkv, dk).transpose(0, 2, 1, 3)
    v4 = v.reshape(b, t, hkv, dv).transpose(0, 2, 1, 3)
    state = np.zeros((b, hkv, dk, dv), np.float32) if past is None else np.asarray(past, np.float32).copy()
    scale = float(a.get("scale", 0.0)) or 1.0 / float(np.sqrt(dk))
    out = np.zeros((b, hq, t, dv), np.float32)
    for i in range(t):
        if rule in ("gated", "gated_delta"):
            assert decay is not None
            g = np.asarray(decay, np.float32)
            g4 = g.reshape(b, t, hkv, -1).transpose(0, 2, 1, 3)[:, :, i, :]  # (B, Hkv, 1 or dk)
            state = state * np.exp(g4)[..., None]
        v_t = v4[:, :, i, :]
        if rule in ("delta", "gated_delta"):
            assert beta is not None
            bt = np.asarray(beta, np.float32)
            b4 = bt.reshape(b, t, bt.shape[-1], 1).transpose(0, 2, 1, 3)[:, :, i, :]
            v_t = b4 * (v_t - np.einsum("bhdm,bhd->bhm", state, k4[:, :, i, :]))
        state = state + k4[:, :, i, :, None] * v_t[..., None, :]
        out[:, :, i, :] = scale * np.einsum("bhd,bhdm->bhm", q4[:, :, i, :], np.repeat(state, hq // hkv, axis=1))
    return [out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv), state]
