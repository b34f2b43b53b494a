"""Normalisations: L2_NORMALIZATION (TFLite), NORMALIZE and LP_NORMALIZATION (nn2c, from ONNX).

- L2_NORMALIZATION (TFLM l2norm.cc): the last axis; float32 x / max(||x||, 1e-6); int8 with the
  input zero point, output scale 1/128 and zero point 0 required by TFLite's converter (the kernel
  produces that quantization whatever the tensor says, so nn2c refuses another one), no activation.
- NORMALIZE (attrs axis, epsilon, mode "layer" | "rms" | "mvn", scale_axes (first, last)): groups
  are x[i0, ..., i_{axis-1}, :, ..., :]; the optional scale / bias (inputs 1, 2, flat) are indexed
  by the flat position over shape[first:last + 1]; optional outputs 1, 2: mean and 1 / std per group.
- LP_NORMALIZATION (attrs axis, p): x / ||x||_p along one axis, p = 1 or 2 (no epsilon, as ONNX).
- LRN (attrs size, alpha, beta, bias): across the channels (axis 1) of [N, C, spatial...], float32;
  the window is [c - (size-1)//2, c + ceil((size-1)/2)] clipped to the channels.
"""

from __future__ import annotations

from math import prod

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import scale, zero_point
from nn2c.ir import Node, Value

MODES = {"layer": 0, "rms": 1, "mvn": 2}


def _axis(ctx: EmitContext, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ctx.unsupported(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _float_io(ctx: EmitContext, node: Node) -> tuple[Value, Value]:
    x = node.input(0)
    if x is None or not node.outputs:
        raise ctx.unsupported(f"{node.op} needs an input and an output")
    out = node.outputs[0]
    if x.type.dtype != "float32" or out.type.dtype != "float32":
        raise ctx.unsupported(f"{node.op} of {x.type.dtype} (float32 is supported)")
    if out.type.num_elements != x.type.num_elements:
        raise ctx.unsupported(f"input {x.type} and output {out.type} differ in size")
    return x, out


@lowering("L2_NORMALIZATION")
def l2_normalization(node: Node, ctx: EmitContext) -> None:
    x = node.input(0)
    if x is None or len(node.outputs) != 1:
        raise ctx.unsupported("L2_NORMALIZATION needs one input and one output")
    out = node.outputs[0]
    if node.fused_activation != "NONE":
        raise ctx.unsupported("L2_NORMALIZATION with a fused activation (TFLite Micro supports none)")
    if x.type.dtype != out.type.dtype or x.type.num_elements != out.type.num_elements or not x.type.shape:
        raise ctx.unsupported(f"input {x.type} and output {out.type} must have one type and size, rank >= 1")
    depth = x.type.shape[-1]
    outer = x.type.num_elements // depth if depth else 0
    if outer * depth == 0:
        return
    ctx.use_kernel("norm")
    if x.type.dtype == "float32":
        params = ctx.params_struct("nn2c_lp_norm_params_t", {"outer": outer, "count": depth, "inner": 1, "p": 2,
                                                             "epsilon": 1e-6})
        ctx.call("nn2c_lp_norm_f32", params, ctx.ptr(x), ctx.ptr(out))
        return
    if x.type.dtype != "int8":
        raise ctx.unsupported(f"L2_NORMALIZATION of {x.type.dtype} (float32 and int8 are supported)")
    for v in (x, out):
        if v.type.quant is None or v.type.quant.per_channel:
            raise ctx.unsupported(f"{v.name!r} must be quantized per tensor")
    if zero_point(out) != 0 or abs(scale(out) - 1.0 / 128) > 1e-9:
        raise ctx.unsupported("int8 L2_NORMALIZATION output must have scale 1/128 and zero point 0 "
                              "(the kernel's fixed output quantization)")
    ctx.call("nn2c_l2_norm_s8", str(outer), str(depth), str(zero_point(x)), ctx.ptr(x), ctx.ptr(out))


@lowering("NORMALIZE")
def normalize(node: Node, ctx: EmitContext) -> None:
    x, out = _float_io(ctx, node)
    shape = list(x.type.shape)
    rank = len(shape)
    axis = _axis(ctx, int(node.attrs.get("axis", -1)), rank)
    mode = str(node.attrs.get("mode", "layer"))
    if mode not in MODES:
        raise ctx.unsupported(f"normalisation mode {mode!r}")
    first, last = (int(a) for a in node.attrs.get("scale_axes", (axis, rank - 1)))
    if not 0 <= first <= last < rank:
        raise ctx.unsupported(f"scale axes {first}..{last} are out of range for rank {rank}")
    scale_size, scale_div = prod(shape[first:last + 1]), prod(shape[last + 1:])
    affine = [node.input(1), node.input(2)]
    for v in affine:
        if v is not None and (v.type.dtype != "float32" or v.type.num_elements != scale_size):
            raise ctx.unsupported(f"scale / bias {v.name!r} {v.type} must be float32 with {scale_size} values")
    extra = [node.outputs[k] if k < len(node.outputs) else None for k in (1, 2)]
    count, outer = prod(shape[axis:]), prod(shape[:axis])
    for v in extra:
        if v is not None and (v.type.dtype != "float32" or v.type.num_elements != outer):
            raise ctx.unsupported(f"statistics output {v.name!r} {v.type} must be float32 with {outer} values")
    if outer * count == 0:
        return
    ctx.use_kernel("norm")
    params = ctx.params_struct("nn2c_norm_params_t", {
        "outer": outer, "count": count, "mode": MODES[mode], "epsilon": float(node.attrs.get("epsilon", 1e-5)),
        "scale_div": max(scale_div, 1), "scale_size": max(scale_size, 1),
    })
    ctx.call("nn2c_norm_f32", params, ctx.ptr(x), ctx.ptr(affine[0]), ctx.ptr(affine[1]), ctx.ptr(out),
             ctx.ptr(extra[0]), ctx.ptr(extra[1]))


@lowering("LP_NORMALIZATION")
def lp_normalization(node: Node, ctx: EmitContext) -> None:
    x, out = _float_io(ctx, node)
    shape = list(x.type.shape)
    axis = _axis(ctx, int(node.attrs.get("axis", -1)), len(shape))
    p = int(node.attrs.get("p", 2))
    if p not in (1, 2):
        raise ctx.unsupported(f"LpNormalization with p = {p} (1 and 2 are supported)")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("norm")
    params = ctx.params_struct("nn2c_lp_norm_params_t", {
        "outer": prod(shape[:axis]), "count": shape[axis] if shape else 1, "inner": prod(shape[axis + 1:]),
        "p": p, "epsilon": 0.0,
    })
    ctx.call("nn2c_lp_norm_f32", params, ctx.ptr(x), ctx.ptr(out))


@lowering("LRN")
def lrn(node: Node, ctx: EmitContext) -> None:
    x, out = _float_io(ctx, node)
    shape = list(x.type.shape)
    size = int(node.attrs.get("size", 0))
    if len(shape) < 2 or size < 1:
        raise ctx.unsupported(f"LRN of {shape} with size {size} (rank 2 or more, size 1 or more)")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("norm")
    below = (size - 1) // 2
    params = ctx.params_struct("nn2c_lrn_params_t", {
        "outer": shape[0], "channels": shape[1], "inner": prod(shape[2:]),
        "below": below, "above": size - 1 - below, "size": size,
        "alpha": float(node.attrs.get("alpha", 1e-4)), "beta": float(node.attrs.get("beta", 0.75)),
        "bias": float(node.attrs.get("bias", 1.0)),
    })
    ctx.call("nn2c_lrn_f32", params, ctx.ptr(x), ctx.ptr(out))
