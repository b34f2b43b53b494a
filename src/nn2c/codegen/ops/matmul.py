"""Matrix products with run-time operands: BATCH_MATMUL, TRANSPOSE_CONV, and the run-time-filter
variants of CONV_2D (float) that codegen/ops/conv.py routes here.

Parameters follow TensorFlow Lite Micro's Prepare:
- BATCH_MATMUL (batch_matmul.cc): lhs, rhs and output share one type (float32, int8, int16), rank
  2..5 in TFLM (nn2c takes up to 6 broadcast batch axes). int8 / int16: the real multiplier is
  GetQuantizedConvolutionMultipler's double(float(s_lhs * s_rhs)) / double(s_out), QuantizeMultiplier;
  offsets -zp_lhs, -zp_rhs, +zp_out; no activation (the full int range). int16 needs zero points 0.
  Accumulation: int32 (int8), int64 (int16, MultiplyByQuantizedMultiplier of an int64).
- TRANSPOSE_CONV (transpose_conv.cc): inputs (output_shape, filter OHWI, input NHWC, bias). The
  padding is ComputePaddingHeightWidth(stride, dilation 1, output size, filter size) — the output
  is the "input" of the equivalent convolution. int8: PopulateConvolutionQuantizationParams, per
  output channel double(s_in) * double(s_w[c]) / double(s_out), int32 bias, input offset -zp_in
  (the filter zero point is ignored); int16x8: int64 bias (a constant int16 bias is widened at
  compile time, as TFLM does at run time), no offsets. nn2c extensions for ONNX ConvTranspose:
  attrs explicit_padding (top, bottom, left, right), dilation_h_factor / dilation_w_factor, groups.
- DET (nn2c-internal, from ONNX Det): float32 [..., n, n] -> [...], LU with partial pivoting in
  double in an 8 n^2-byte scratch.
- CAUSAL_CONV (nn2c-internal, from ONNX CausalConvWithState): float32, every operand run-time
  data; absent bias / past_state are NULL (zeros).
- DEFORM_CONV (nn2c-internal, from ONNX DeformConv): float32 2-D, every operand run-time data;
  absent bias / mask are NULL.
"""

from __future__ import annotations

from math import prod

import numpy as np

from nn2c.codegen.context import EmitContext, format_field
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import (
    float_activation_range,
    int_activation_range,
    multiplier_arrays,
    requant_multipliers,
    scale,
    zero_point,
)
from nn2c.errors import InvalidModelError
from nn2c.ir import Node, Value
from nn2c.quant.fixedpoint import defined_requant_multipliers, quantize_multiplier

MAX_BATCH_DIMS = 6  # NN2C_MM_MAX_BATCH_DIMS


def _struct(fields: dict) -> str:
    return "{" + ", ".join(f".{k} = {format_field(v)}" for k, v in fields.items()) + "}"


def _padded(values: list[int]) -> list[int]:
    return values + [0] * (MAX_BATCH_DIMS - len(values))


def _per_tensor(ctx: EmitContext, *values: Value) -> None:
    for v in values:
        if v.type.quant is None or v.type.quant.per_channel:
            raise ctx.unsupported(f"{v.name!r} must be quantized per tensor")


# --- BATCH_MATMUL --------------------------------------------------------------------------------
def matmul_shape(ctx: EmitContext, lhs: Value, rhs: Value, out: Value, adj_x: bool, adj_y: bool) -> dict:
    """The nn2c_mm_shape_t fields: broadcast batch loops, matrix sizes and element strides."""
    ls, rs = list(lhs.type.shape), list(rhs.type.shape)
    if len(ls) < 2 or len(rs) < 2:
        raise ctx.unsupported(f"operands need rank >= 2, got {lhs.type} and {rhs.type}")
    rank = max(len(ls), len(rs))
    ls, rs = [1] * (rank - len(ls)) + ls, [1] * (rank - len(rs)) + rs
    rows, depth = (ls[-1], ls[-2]) if adj_x else (ls[-2], ls[-1])
    depth_r, cols = (rs[-1], rs[-2]) if adj_y else (rs[-2], rs[-1])
    if depth != depth_r:
        raise ctx.unsupported(f"inner dimensions differ: {lhs.type} x {rhs.type} (adj_x={adj_x}, adj_y={adj_y})")
    batch = []
    for a, b in zip(ls[:-2], rs[:-2], strict=True):
        if a != b and 1 not in (a, b):
            raise ctx.unsupported(f"batch dimensions {ls[:-2]} and {rs[:-2]} do not broadcast")
        batch.append(max(a, b) if min(a, b) else 0)
    if out.type.num_elements != prod(batch) * rows * cols:
        raise ctx.unsupported(f"output {out.type} does not hold the product {[*batch, rows, cols]}")
    loops = [(d, n) for d, n in enumerate(batch) if n != 1]
    if len(loops) > MAX_BATCH_DIMS:
        raise ctx.unsupported(f"more than {MAX_BATCH_DIMS} broadcast batch axes")

    def stride(shape: list[int], d: int) -> int:
        return 0 if shape[d] == 1 else prod(shape[d + 1:])

    return {
        "batch_rank": len(loops),
        "batch_dims": _padded([n for _, n in loops]),
        "lhs_batch_stride": _padded([stride(ls, d) for d, _ in loops]),
        "rhs_batch_stride": _padded([stride(rs, d) for d, _ in loops]),
        "rows": rows, "cols": cols, "depth": depth,
        "lhs_row_stride": 1 if adj_x else depth, "lhs_depth_stride": rows if adj_x else 1,
        "rhs_depth_stride": 1 if adj_y else cols, "rhs_col_stride": depth if adj_y else 1,
    }


def _batch_matmul_multiplier(lhs: Value, rhs: Value, out: Value) -> tuple[int, int]:
    # GetQuantizedConvolutionMultipler: the scale product in float, then double; refused from 2^30, where TFLite
    # Micro's requantisation is undefined, as every requantising layer's (defined_requant_multipliers)
    product = float(np.float32(scale(lhs)) * np.float32(scale(rhs)))
    (real,) = defined_requant_multipliers([product / float(np.float32(scale(out)))])
    return quantize_multiplier(real)


@lowering("BATCH_MATMUL")
def batch_matmul(node: Node, ctx: EmitContext) -> None:
    lhs, rhs = node.input(0), node.input(1)
    if lhs is None or rhs is None or len(node.outputs) != 1:
        raise ctx.unsupported("BATCH_MATMUL needs two inputs and one output")
    out = node.outputs[0]
    dtype = out.type.dtype
    if lhs.type.dtype != dtype or rhs.type.dtype != dtype:
        raise ctx.unsupported(f"lhs {lhs.type.dtype}, rhs {rhs.type.dtype} and output {dtype} must share one type")
    shape = matmul_shape(ctx, lhs, rhs, out, bool(node.attrs.get("adj_x", False)),
                         bool(node.attrs.get("adj_y", False)))
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("matmul")
    activation = node.fused_activation
    if dtype == "float32":
        lo, hi = float_activation_range(ctx, activation)
        params = ctx.params_struct("nn2c_batch_matmul_f32_params_t", {"s": _struct(shape), "act_min": lo, "act_max": hi})
        ctx.call("nn2c_batch_matmul_f32", params, ctx.ptr(lhs), ctx.ptr(rhs), ctx.ptr(out))
        return
    if dtype not in ("int8", "int16"):
        raise ctx.unsupported(f"BATCH_MATMUL of {dtype} (float32, int8, int16 are supported)")
    _per_tensor(ctx, lhs, rhs, out)
    if dtype == "int16" and any(zero_point(v) for v in (lhs, rhs, out)):
        raise ctx.unsupported("int16 BATCH_MATMUL needs zero points of 0 (TFLite Micro requires it)")
    multiplier, shift = _batch_matmul_multiplier(lhs, rhs, out)
    act_min, act_max = int_activation_range(ctx, activation, out)
    params = ctx.params_struct("nn2c_batch_matmul_q_params_t", {
        "s": _struct(shape), "lhs_offset": -zero_point(lhs), "rhs_offset": -zero_point(rhs),
        "output_offset": zero_point(out), "multiplier": multiplier, "shift": shift,
        "act_min": act_min, "act_max": act_max,
    })
    suffix = "s8" if dtype == "int8" else "s16"
    ctx.call(f"nn2c_batch_matmul_{suffix}", params, ctx.ptr(lhs), ctx.ptr(rhs), ctx.ptr(out))


# --- convolutions with run-time filters ------------------------------------------------------------
def conv_f32_runtime_filter(ctx: EmitContext, geometry: str, groups: int, activation: str, x: Value, w: Value,
                            bias: Value | None, out: Value) -> None:
    """float CONV_2D whose OHWI filter is computed at run time (no compile-time re-layout)."""
    ctx.use_kernel("conv")
    ctx.use_kernel("matmul")
    lo, hi = float_activation_range(ctx, activation)
    params = ctx.params_struct("nn2c_mm_conv_f32_params_t", {"g": geometry, "groups": groups,
                                                             "act_min": lo, "act_max": hi})
    ctx.call("nn2c_mm_conv_f32", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))


# --- TRANSPOSE_CONV --------------------------------------------------------------------------------
def _out_size(padding: str, image: int, filter_size: int, stride: int) -> int:
    """TFLite ComputeOutSize with dilation 1."""
    if padding == "SAME":
        return (image + stride - 1) // stride
    return max(image + stride - filter_size, 0) // stride


def _leading_pad(padding: str, stride: int, image: int, filter_size: int) -> int:
    """ComputePaddingHeightWidth's leading padding, dilation 1, for an "image" of the output's size."""
    out_size = _out_size(padding, image, filter_size, stride)
    return max((out_size - 1) * stride + filter_size - image, 0) // 2


def _tconv_geometry(ctx: EmitContext, node: Node, x: Value, w: Value, out: Value) -> tuple[dict, int]:
    if len(x.type.shape) != 4 or len(out.type.shape) != 4 or len(w.type.shape) != 4:
        raise ctx.unsupported(f"TRANSPOSE_CONV needs 4-D NHWC input / output and an OHWI filter, got "
                              f"{x.type}, {w.type} -> {out.type}")
    batches, in_h, in_w, in_c = x.type.shape
    out_b, out_h, out_w, out_c = out.type.shape
    filter_o, filter_h, filter_w, filter_i = w.type.shape
    groups = int(node.attrs.get("groups", 1))
    if out_b != batches or filter_o != out_c or groups < 1 or filter_i * groups != in_c or out_c % groups:
        raise ctx.unsupported(f"input {x.type}, filter {w.type} and output {out.type} do not match "
                              f"(groups {groups})")
    stride_h, stride_w = int(node.attrs.get("stride_h", 1)), int(node.attrs.get("stride_w", 1))
    dilation_h = int(node.attrs.get("dilation_h_factor", 1))
    dilation_w = int(node.attrs.get("dilation_w_factor", 1))
    if min(stride_h, stride_w, dilation_h, dilation_w) < 1:
        raise ctx.unsupported(f"strides {stride_h}x{stride_w} and dilations {dilation_h}x{dilation_w} must be >= 1")
    if "explicit_padding" in node.attrs:
        pad_h, _, pad_w, _ = (int(v) for v in node.attrs["explicit_padding"])
    else:
        padding = str(node.attrs.get("padding", "SAME"))
        if padding not in ("SAME", "VALID"):
            raise ctx.unsupported(f"padding {padding!r} is not SAME or VALID")
        pad_h = _leading_pad(padding, stride_h, out_h, filter_h)
        pad_w = _leading_pad(padding, stride_w, out_w, filter_w)
    for name, (out_size, pad, taps, dilation) in {"height": (out_h, pad_h, filter_h, dilation_h),
                                                  "width": (out_w, pad_w, filter_w, dilation_w)}.items():
        # the kernel forms o + pad - f * dilation in int32 (nn2c_tconv_source)
        if (taps - 1) * dilation + abs(pad) + out_size >= 2**31:
            raise InvalidModelError(f"{node.where()}: a filter of {taps} taps dilated by {dilation} over an output "
                                    f"{name} of {out_size} spans more than the kernel's 32-bit indices")
    geometry = {"batches": batches, "in_h": in_h, "in_w": in_w, "in_c": in_c, "out_h": out_h, "out_w": out_w,
                "out_c": out_c, "filter_h": filter_h, "filter_w": filter_w, "stride_h": stride_h,
                "stride_w": stride_w, "dilation_h": dilation_h, "dilation_w": dilation_w,
                "pad_h": pad_h, "pad_w": pad_w}
    return geometry, groups


def _filter_scales(ctx: EmitContext, w: Value, channels: int) -> list[float]:
    quant = w.type.quant
    if quant is None:
        raise ctx.unsupported(f"the int8 filter {w.name!r} has no quantization parameters")
    found = list(quant.scale)
    if len(found) == 1:
        return found * channels
    if len(found) != channels or quant.axis != 0:
        raise ctx.unsupported(f"filter {w.name!r} has {len(found)} scales on axis {quant.axis}; expected 1 or "
                              f"{channels} on axis 0")
    return found


def _tconv_bias(ctx: EmitContext, bias: Value | None, dtype: str, channels: int) -> str:
    if bias is None:
        return "NULL"
    if bias.type.num_elements != channels:
        raise ctx.unsupported(f"bias {bias.name!r} has {bias.type.num_elements} values for {channels} channels")
    wanted = {"float32": "float32", "int8": "int32", "int16": "int64"}[dtype]
    if bias.type.dtype == wanted:
        return ctx.ptr(bias)
    if dtype == "int16" and bias.type.dtype == "int16" and bias.data is not None:
        return ctx.weight(bias, np.asarray(bias.data, dtype=np.int64), "int64_t")
    raise ctx.unsupported(f"bias {bias.name!r} is {bias.type.dtype}; expected {wanted}")


@lowering("TRANSPOSE_CONV")
def transpose_conv(node: Node, ctx: EmitContext) -> None:
    w, x, bias = node.input(1), node.input(2), node.input(3)
    if w is None or x is None or len(node.outputs) != 1:
        raise ctx.unsupported("TRANSPOSE_CONV needs a filter, an input and one output")
    out = node.outputs[0]
    geometry, groups = _tconv_geometry(ctx, node, x, w, out)
    if out.type.num_elements == 0:
        return
    dtypes = (x.type.dtype, w.type.dtype, out.type.dtype)
    activation = node.fused_activation
    ctx.use_kernel("conv")
    ctx.use_kernel("matmul")
    common = {"g": _struct(geometry), "groups": groups}
    if dtypes == ("float32", "float32", "float32"):
        lo, hi = float_activation_range(ctx, activation)
        bias_ptr = _tconv_bias(ctx, bias, "float32", geometry["out_c"])
        params = ctx.params_struct("nn2c_tconv_f32_params_t", {**common, "act_min": lo, "act_max": hi})
        ctx.call("nn2c_tconv_f32", params, ctx.ptr(x), ctx.ptr(w), bias_ptr, ctx.ptr(out))
        return
    if dtypes not in (("int8", "int8", "int8"), ("int16", "int8", "int16")):
        raise ctx.unsupported(f"input {dtypes[0]}, filter {dtypes[1]}, output {dtypes[2]} is not a supported "
                              "combination (float32, int8, int16x8)")
    _per_tensor(ctx, x, out)
    dtype = dtypes[0]
    if dtype == "int16" and (zero_point(x) or zero_point(out)):
        raise ctx.unsupported("int16 TRANSPOSE_CONV needs zero points of 0")
    real = requant_multipliers(x, out, _filter_scales(ctx, w, geometry["out_c"]))
    mult, shift = multiplier_arrays(ctx, real)
    act_min, act_max = int_activation_range(ctx, activation, out)
    bias_ptr = _tconv_bias(ctx, bias, dtype, geometry["out_c"])
    params = ctx.params_struct("nn2c_tconv_q_params_t", {
        **common, "input_offset": -zero_point(x) if dtype == "int8" else 0,
        "output_offset": zero_point(out) if dtype == "int8" else 0,
        "multipliers": mult, "shifts": shift, "act_min": act_min, "act_max": act_max,
    })
    suffix = "s8" if dtype == "int8" else "s16"
    ctx.call(f"nn2c_tconv_{suffix}", params, ctx.ptr(x), ctx.ptr(w), bias_ptr, ctx.ptr(out))



@lowering("DET")
def det(node: Node, ctx: EmitContext) -> None:
    x, out = node.input(0), node.outputs[0]
    if x is None or x.type.dtype != "float32" or out.type.dtype != "float32":
        raise ctx.unsupported("DET of float32 into float32 is supported")
    shape = list(x.type.shape)
    if len(shape) < 2 or shape[-1] != shape[-2] or list(out.type.shape) != shape[:-2]:
        raise ctx.unsupported(f"DET of {shape} into {list(out.type.shape)} (square matrices [..., n, n] into [...])")
    if out.type.num_elements == 0:
        return
    n = shape[-1]
    ctx.use_kernel("matmul")
    ctx.call("nn2c_det_f32", str(prod(shape[:-2])), str(n), ctx.scratch(8 * max(n * n, 1)), ctx.ptr(x), ctx.ptr(out))


@lowering("CAUSAL_CONV")
def causal_conv(node: Node, ctx: EmitContext) -> None:
    x, w = node.input(0), node.input(1)
    bias, past = node.input(2), node.input(3)
    if x is None or w is None or len(node.outputs) != 2:
        raise ctx.unsupported("CAUSAL_CONV needs input, weight and two outputs")
    out, present = node.outputs
    values = [v for v in (x, w, bias, past, out, present) if v is not None]
    if any(v.type.dtype != "float32" for v in values):
        raise ctx.unsupported("CAUSAL_CONV of float32 is supported")
    if len(x.type.shape) != 3 or len(w.type.shape) != 3:
        raise ctx.unsupported(f"CAUSAL_CONV of {list(x.type.shape)} with weight {list(w.type.shape)}")
    batch, channels, length = x.type.shape
    k = w.type.shape[2]
    checks = [list(w.type.shape) == [channels, 1, k], k >= 1, list(out.type.shape) == [batch, channels, length],
              list(present.type.shape) == [batch, channels, k - 1],
              bias is None or list(bias.type.shape) == [channels],
              past is None or list(past.type.shape) == [batch, channels, k - 1]]
    if not all(checks):
        raise ctx.unsupported(f"CAUSAL_CONV shapes do not fit: input {list(x.type.shape)}, weight {list(w.type.shape)}")
    if batch * channels == 0:
        return
    ctx.use_kernel("matmul")
    params = ctx.params_struct("nn2c_causal_conv_params_t", {
        "batch": batch, "channels": channels, "length": length, "kernel": k,
        "silu": int(node.attrs.get("activation", "none") == "silu")})
    ctx.call("nn2c_causal_conv_f32", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(past), ctx.ptr(out),
             ctx.ptr(present))


@lowering("DEFORM_CONV")
def deform_conv(node: Node, ctx: EmitContext) -> None:
    x, w, offset = node.input(0), node.input(1), node.input(2)
    bias, mask = node.input(3), node.input(4)
    out = node.outputs[0]
    if x is None or w is None or offset is None:
        raise ctx.unsupported("DEFORM_CONV needs x, weight and offset")
    if any(v.type.dtype != "float32" for v in (x, w, offset, bias, mask, out) if v is not None):
        raise ctx.unsupported("DEFORM_CONV of float32 is supported")
    a = node.attrs
    n, channels, height, width = x.type.shape
    oc, cpg, kh, kw = w.type.shape
    oh, ow = out.type.shape[2:]
    group, offset_group = int(a["group"]), int(a["offset_group"])
    ok = (channels == cpg * group and oc % group == 0 and channels % offset_group == 0
          and list(offset.type.shape) == [n, offset_group * kh * kw * 2, oh, ow]
          and (mask is None or list(mask.type.shape) == [n, offset_group * kh * kw, oh, ow])
          and (bias is None or list(bias.type.shape) == [oc]) and list(out.type.shape) == [n, oc, oh, ow])
    if not ok:
        raise ctx.unsupported(f"DEFORM_CONV shapes do not fit: x {list(x.type.shape)}, weight {list(w.type.shape)}, "
                              f"offset {list(offset.type.shape)}")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("matmul")
    (sh, sw), (pt, pl), (dh, dw) = a["strides"], a["pads"][:2], a["dilations"]
    params = ctx.params_struct("nn2c_deform_conv_params_t", {
        "batch": n, "channels": channels, "height": height, "width": width, "out_channels": oc,
        "out_height": oh, "out_width": ow, "kernel_h": kh, "kernel_w": kw, "stride_h": sh, "stride_w": sw,
        "pad_top": pt, "pad_left": pl, "dilation_h": dh, "dilation_w": dw, "group": group,
        "offset_group": offset_group})
    ctx.call("nn2c_deform_conv_f32", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(offset), ctx.ptr(bias), ctx.ptr(mask),
             ctx.ptr(out))
