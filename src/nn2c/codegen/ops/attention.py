"""ATTENTION (nn2c-internal, from ONNX Attention): one fused float32 kernel (kernels/nn2c_attention.c).

Attributes (set by frontends/onnx/attention.py): q_num_heads / kv_num_heads (the head counts of 3-D
[B, S, H * D] tensors; 4-D ones are [B, H, S, D]), scale (already resolved: 1 / sqrt(D) by
default), is_causal, causal_offset (the past length: query i sits at position i + offset),
left_window_size / right_window_size (-1: unbounded), softcap (0: none), qk_matmul_output_mode.
Every tensor is addressed by element strides of its (batch, head, row) axes, so neither layout is
transposed. The attn_mask (float32 or bool) broadcasts right-aligned to [B, Hq, Sq, L] with
L <= Skv; keys past L are masked (ONNX pads a short mask with -inf / False). The kernel needs one
scratch row of Skv floats.

ROTARY_EMBEDDING (attrs num_heads for a 3-D x, rotary_dim (0: the head size), interleaved): x and
the output share one layout and strides; cos / sin are [B or 1, S, rotary_dim / 2].

LINEAR_ATTENTION: one float kernel (kernels/nn2c_attention.c) that keeps the recurrent state in the
present_state output and needs dv floats of scratch; absent past_state / decay / beta are NULL.
"""

from __future__ import annotations

from dataclasses import dataclass

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.errors import InvalidModelError
from nn2c.ir import Node, Value, dtype_bytes


@dataclass(frozen=True)
class HeadView:
    """A tensor seen as [batch, heads, rows, features], with element strides of the first three."""

    batch: int
    heads: int
    rows: int
    features: int
    strides: tuple[int, int, int]


def head_view(ctx: EmitContext, value: Value, heads: int, what: str) -> HeadView:
    shape = value.type.shape
    if len(shape) == 4:
        b, h, s, d = shape
        return HeadView(b, h, s, d, (h * s * d, s * d, d))
    if len(shape) == 3:
        b, s, hidden = shape
        if heads <= 0 or hidden % heads:
            raise ctx.unsupported(f"{what} {list(shape)}: hidden size {hidden} is not a multiple of the "
                                  f"head count {heads}")
        d = hidden // heads
        return HeadView(b, heads, s, d, (s * hidden, d, hidden))
    raise ctx.unsupported(f"{what} must be 3-D or 4-D, got {list(shape)}")


def mask_strides(ctx: EmitContext, mask: Value, target: tuple[int, int, int], kv_len: int) -> tuple[list[int], int]:
    """Strides of the mask's (batch, head, row) axes broadcast right-aligned to target, and its last dim."""
    shape = list(mask.type.shape)
    if not 1 <= len(shape) <= 4:
        raise ctx.unsupported(f"attn_mask must have rank 1 to 4, got {shape}")
    length = shape[-1]
    if length > kv_len:
        raise ctx.unsupported(f"attn_mask {shape} has more keys than the {kv_len} of K")
    lead = [1] * (4 - len(shape)) + shape[:-1]
    strides, step = [0, 0, 0], length
    for axis in (2, 1, 0):
        if lead[axis] not in (1, target[axis]):
            raise ctx.unsupported(f"attn_mask {shape} does not broadcast to {[*target, kv_len]}")
        strides[axis] = 0 if lead[axis] == 1 else step
        step *= lead[axis]
    return strides, length


def _check_views(ctx: EmitContext, q: HeadView, k: HeadView, v: HeadView, y: HeadView) -> None:
    if k.heads <= 0 or q.heads % k.heads or v.heads != k.heads:
        raise ctx.unsupported(f"{q.heads} query heads cannot share {k.heads} key / {v.heads} value heads")
    if q.features != k.features or k.rows != v.rows or len({q.batch, k.batch, v.batch, y.batch}) != 1:
        raise ctx.unsupported(f"Q / K / V disagree: Q {q}, K {k}, V {v}")
    if (y.heads, y.rows, y.features) != (q.heads, q.rows, v.features):
        raise ctx.unsupported(f"output {y} does not match Q {q} and V {v}")


@lowering("ATTENTION")
def attention(node: Node, ctx: EmitContext) -> None:
    q_in, k_in, v_in, mask, nonpad = (node.input(i) for i in range(5))
    if q_in is None or k_in is None or v_in is None or not 1 <= len(node.outputs) <= 2:
        raise ctx.unsupported("ATTENTION needs Q, K, V and one or two outputs")
    y_out = node.outputs[0]
    qk_out = node.outputs[1] if len(node.outputs) > 1 else None
    floats = [q_in, k_in, v_in, y_out] + ([qk_out] if qk_out is not None else [])
    if any(x.type.dtype != "float32" for x in floats):
        raise ctx.unsupported("ATTENTION of " + ", ".join(sorted({x.type.dtype for x in floats})) +
                              " (float32 is supported)")
    q_heads, kv_heads = int(node.attrs.get("q_num_heads", 0)), int(node.attrs.get("kv_num_heads", 0))
    q = head_view(ctx, q_in, q_heads, "Q")
    k = head_view(ctx, k_in, kv_heads, "K")
    v = head_view(ctx, v_in, kv_heads, "V")
    y = head_view(ctx, y_out, q.heads, "Y")
    _check_views(ctx, q, k, v, y)
    if qk_out is not None and list(qk_out.type.shape) != [q.batch, q.heads, q.rows, k.rows]:
        raise ctx.unsupported(f"qk output {qk_out.type} is not [B, Hq, Sq, Skv] = "
                              f"{[q.batch, q.heads, q.rows, k.rows]}")
    mode = int(node.attrs.get("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise ctx.unsupported(f"qk_matmul_output_mode {mode} (0 to 3 are defined)")
    strides, mask_len = [0, 0, 0], 0
    mask_f = mask_b = "NULL"
    if mask is not None:
        if mask.type.dtype not in ("float32", "bool"):
            raise ctx.unsupported(f"attn_mask of {mask.type.dtype} (float32 and bool are supported)")
        strides, mask_len = mask_strides(ctx, mask, (q.batch, q.heads, q.rows), k.rows)
        mask_f, mask_b = (ctx.ptr(mask), "NULL") if mask.type.dtype == "float32" else ("NULL", ctx.ptr(mask))
    if nonpad is not None and (nonpad.type.dtype not in ("int32", "int64") or nonpad.type.num_elements != q.batch):
        raise ctx.unsupported(f"nonpad_kv_seqlen {nonpad.type} is not {q.batch} int32 / int64 counts")
    if y_out.type.num_elements == 0:
        return
    ctx.use_kernel("attention")
    params = ctx.params_struct("nn2c_attention_params_t", {
        "batch": q.batch, "q_heads": q.heads, "kv_group": q.heads // k.heads,
        "q_len": q.rows, "kv_len": k.rows, "head_dim": q.features, "v_dim": v.features,
        "q_stride": list(q.strides), "k_stride": list(k.strides), "v_stride": list(v.strides),
        "y_stride": list(y.strides), "mask_stride": strides, "mask_len": mask_len,
        "causal": int(bool(node.attrs.get("is_causal", False))),
        "causal_offset": int(node.attrs.get("causal_offset", 0)),
        "left_window": int(node.attrs.get("left_window_size", -1)),
        "right_window": int(node.attrs.get("right_window_size", -1)),
        "qk_mode": mode, "scale": float(node.attrs.get("scale", 1.0)),
        "softcap": float(node.attrs.get("softcap", 0.0)),
        "nonpad_bytes": dtype_bytes(nonpad.type.dtype) if nonpad is not None else 4,
    })
    row = ctx.scratch(4 * max(k.rows, 1))
    ctx.call("nn2c_attention_f32", params, ctx.ptr(q_in), ctx.ptr(k_in), ctx.ptr(v_in), mask_f, mask_b,
             ctx.ptr(nonpad), ctx.ptr(y_out), ctx.ptr(qk_out), f"(float *){row}")


@lowering("ROTARY_EMBEDDING")
def rotary_embedding(node: Node, ctx: EmitContext) -> None:
    x_in, cos, sin = (node.input(i) for i in range(3))
    if x_in is None or cos is None or sin is None or len(node.outputs) != 1:
        raise ctx.unsupported("ROTARY_EMBEDDING needs x, cos, sin and one output")
    out = node.outputs[0]
    if any(v.type.dtype != "float32" for v in (x_in, cos, sin, out)):
        raise ctx.unsupported("ROTARY_EMBEDDING of non-float32 tensors (float32 is supported)")
    if out.type.shape != x_in.type.shape:
        raise ctx.unsupported(f"output {out.type} differs from input {x_in.type}")
    x = head_view(ctx, x_in, int(node.attrs.get("num_heads", 0)), "input")
    rotary = int(node.attrs.get("rotary_dim", 0)) or x.features
    if rotary % 2 or not 0 < rotary <= x.features:
        raise ctx.unsupported(f"rotary_embedding_dim {rotary} must be even and at most the head size {x.features}")
    if cos.type.shape != sin.type.shape:  # the kernel walks both with the cos cache's strides
        raise InvalidModelError(f"{node.where()}: cos cache {list(cos.type.shape)} and sin cache "
                                f"{list(sin.type.shape)} differ in shape")
    for cache in (cos, sin):
        shape = list(cache.type.shape)
        if len(shape) != 3 or shape[0] not in (1, x.batch) or shape[1:] != [x.rows, rotary // 2]:
            raise ctx.unsupported(f"cos / sin cache {shape} is not [{x.batch} or 1, {x.rows}, {rotary // 2}]")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("attention")
    params = ctx.params_struct("nn2c_rotary_params_t", {
        "batch": x.batch, "heads": x.heads, "rows": x.rows, "head_dim": x.features, "rotary_dim": rotary,
        "interleaved": int(bool(node.attrs.get("interleaved", False))), "x_stride": list(x.strides),
        "cache_batch_stride": 0 if cos.type.shape[0] == 1 else x.rows * (rotary // 2),
    })
    ctx.call("nn2c_rotary_embedding_f32", params, ctx.ptr(x_in), ctx.ptr(cos), ctx.ptr(sin), ctx.ptr(out))


@lowering("LINEAR_ATTENTION")
def linear_attention(node: Node, ctx: EmitContext) -> None:
    from nn2c.reference.attention import LINEAR_RULES

    q, k, v = node.input(0), node.input(1), node.input(2)
    past, decay, beta = node.input(3), node.input(4), node.input(5)
    if q is None or k is None or v is None or len(node.outputs) != 2:
        raise ctx.unsupported("LINEAR_ATTENTION needs query, key, value and two outputs")
    out, present = node.outputs
    given = [x for x in (q, k, v, past, decay, beta, out, present) if x is not None]
    if any(x.type.dtype != "float32" for x in given):
        raise ctx.unsupported("LINEAR_ATTENTION of float32 is supported")
    a = node.attrs
    hq, hkv, rule = int(a["q_num_heads"]), int(a["kv_num_heads"]), str(a.get("update_rule", "gated_delta"))
    b, t, qd = q.type.shape
    dk, dv = qd // hq, v.type.shape[2] // hkv
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    ok = (rule in LINEAR_RULES and hkv > 0 and hq % hkv == 0 and (decay is not None) == gated
          and (beta is not None) == delta and list(present.type.shape) == [b, hkv, dk, dv]
          and list(out.type.shape) == [b, t, hq * dv])
    if not ok:
        raise ctx.unsupported(f"LINEAR_ATTENTION {rule} with inputs {[list(x.type.shape) for x in given]}")
    if out.type.num_elements == 0 and present.type.num_elements == 0:
        return
    ctx.use_kernel("attention")
    params = ctx.params_struct("nn2c_linear_attention_params_t", {
        "batch": b, "steps": t, "q_heads": hq, "kv_heads": hkv, "dk": dk, "dv": dv, "rule": LINEAR_RULES[rule],
        "decay_per_key": int(decay is not None and decay.type.shape[-1] == hkv * dk and dk != 1),
        "beta_heads": beta.type.shape[-1] if beta is not None else 1,
        "scale": float(a.get("scale", 0.0)) or 1.0 / float(dk) ** 0.5})
    ctx.call("nn2c_linear_attention_f32", params, ctx.ptr(q), ctx.ptr(k), ctx.ptr(v), ctx.ptr(past), ctx.ptr(decay),
             ctx.ptr(beta), ctx.ptr(out), ctx.ptr(present), ctx.scratch(4 * max(dv, 1)))
