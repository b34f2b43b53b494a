"""REDUCE_MIN, REDUCE_PROD, REDUCE_ALL, REDUCE_ANY, ARG_MAX, ARG_MIN, HARDMAX, L2_POOL_2D and
WINDOW_POOL, as TFLite Micro (kernels/nn2c_reduce.c; MEAN / SUM / REDUCE_MAX are in pool.py).

- REDUCE_MIN (TFLM's PrepareMinMax / EvalMinMaxHelper): float32, or int8 with the input and output
  scale (as double) and zero point equal, else TFLM rejects the model; the kernel walks the input in
  row-major order keeping (in < cur) ? in : cur from the type's max. int16 / int32 are nn2c's
  (ONNX) with the same rule.
- REDUCE_ALL (EvalAllHelper): bool, in && cur from true. REDUCE_ANY and REDUCE_PROD (float32,
  int32 wrapping) are not in TFLM; nn2c runs them for ONNX models.
- ARG_MAX / ARG_MIN (reference_ops::ArgMinMax): float32 / int8 into int32 in TFLM (nn2c also takes
  uint8 / int16 / int32 inputs and int64 outputs, for ONNX); one constant axis; the first extreme
  wins (strict > / <), or the last with the nn2c attribute select_last.
- L2_POOL_2D (L2Prepare, reference_ops::L2Pool): float32 only; TFLite SAME / VALID geometry as the
  other pools; sqrt(sum of squares / in-bounds taps), then the fused activation clamp.
- WINDOW_POOL (nn2c-only, from ONNX): channels-first, 1 to 3 spatial dims (a float32 max pool may
  have a second output, ONNX MaxPool's int64 Indices: nn2c_window_argmax_f32), attributes mode
  (max / avg / lp), p, kernel, strides, dilations, pads ([begin..., end...]), count_include_pad.
- HARDMAX (nn2c-only, from ONNX): float32 rows (outer, axis, inner).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import float_activation_range, scale, zero_point
from nn2c.codegen.ops.pool import _reduce_fields, _resolved_axes, pool_geometry
from nn2c.errors import InvalidModelError
from nn2c.ir import Node, Value

_SUFFIX = {"float32": "f32", "int8": "s8", "uint8": "u8", "int16": "s16", "int32": "s32", "bool": "b"}
_OUT_SUFFIX = {"int32": "i32", "int64": "i64"}
_WINDOW_DIMS = 3
_WINDOW_MODES = {"max": 0, "avg": 1, "lp": 2}

# op -> {dtype: kernel}
_AXES_KERNELS: dict[str, dict[str, str]] = {
    "REDUCE_MIN": {d: f"nn2c_reduce_min_{_SUFFIX[d]}" for d in ("float32", "int8", "int16", "int32")},
    "REDUCE_PROD": {"float32": "nn2c_reduce_prod_f32", "int32": "nn2c_reduce_prod_s32"},
    "REDUCE_ALL": {"bool": "nn2c_reduce_all_b"},
    "REDUCE_ANY": {"bool": "nn2c_reduce_any_b"},
}


def _io(node: Node, ctx: EmitContext) -> tuple[Value, Value]:
    x = node.input(0)
    if x is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected a data input and one output")
    return x, node.outputs[0]


def _same_quantization(a: Value, b: Value) -> bool:
    """TFLM compares the scales as double (after float storage) and the zero points exactly."""
    return zero_point(a) == zero_point(b) and float(np.float32(scale(a))) == float(np.float32(scale(b)))


def axes_fields(ctx: EmitContext, x: Value, out: Value, axes: list[int]) -> dict[str, Any]:
    """nn2c_axes_params_t: input dims and the output stride of each input dim (0 if reduced)."""
    fields = _reduce_fields(ctx, x, out, axes)
    return {k: fields[k] for k in ("rank", "dims", "out_strides", "num_outputs")}


@lowering("REDUCE_MIN", "REDUCE_PROD", "REDUCE_ALL", "REDUCE_ANY")
def reduce_axes(node: Node, ctx: EmitContext) -> None:
    x, out = _io(node, ctx)
    dtype = x.type.dtype
    kernels = _AXES_KERNELS[node.op]
    if dtype not in kernels or out.type.dtype != dtype:
        raise ctx.unsupported(f"{node.op} of {dtype} into {out.type.dtype}; supported: {', '.join(kernels)}")
    if (x.type.quant or out.type.quant) and not _same_quantization(x, out):
        raise ctx.unsupported(f"{dtype} {node.op} needs equal input and output quantization "
                              "(TFLite Micro rejects this model)")
    if node.op == "REDUCE_PROD" and x.type.quant is not None:
        raise ctx.unsupported("REDUCE_PROD of quantized tensors (no kernel: TFLite Micro has none)")
    axes = _resolved_axes(ctx, node.input(1), len(x.type.shape))
    ctx.use_kernel("reduce")
    params = ctx.params_struct("nn2c_axes_params_t", axes_fields(ctx, x, out, axes))
    ctx.call(kernels[dtype], params, ctx.ptr(x), ctx.ptr(out))


def extra_axes_kernel(op: str, dtype: str) -> str | None:
    """The nn2c_reduce kernel of MEAN / SUM / REDUCE_MAX for dtypes the pool kernels lack."""
    return {("SUM", "int32"): "nn2c_reduce_sum_s32", ("REDUCE_MAX", "int32"): "nn2c_reduce_max_axes_s32"}.get((op, dtype))


def lower_extra_axes(node: Node, ctx: EmitContext, kernel: str) -> None:
    x, out = _io(node, ctx)
    if x.type.quant is not None or out.type.quant is not None:
        raise ctx.unsupported(f"{node.op} of quantized {x.type.dtype}")
    axes = _resolved_axes(ctx, node.input(1), len(x.type.shape))
    ctx.use_kernel("reduce")
    params = ctx.params_struct("nn2c_axes_params_t", axes_fields(ctx, x, out, axes))
    ctx.call(kernel, params, ctx.ptr(x), ctx.ptr(out))


# ---- arg-max / arg-min / hardmax ----------------------------------------------------------------


def _one_axis(ctx: EmitContext, axis: Value | None, rank: int) -> int:
    if axis is None or axis.data is None or not axis.is_constant:
        raise ctx.unsupported("the axis is not a constant tensor")
    values = [int(v) for v in axis.data.reshape(-1)]
    if len(values) != 1:
        raise ctx.unsupported(f"expected one axis, got {values}")
    if not -rank <= values[0] < rank:
        raise ctx.unsupported(f"axis {values[0]} is out of range for rank {rank}")
    return values[0] % rank


def _rows(shape: tuple[int, ...], axis: int) -> dict[str, int]:
    return {"outer": prod(shape[:axis]), "axis_size": shape[axis], "inner": prod(shape[axis + 1:])}


@lowering("ARG_MAX", "ARG_MIN")
def arg_min_max(node: Node, ctx: EmitContext) -> None:
    x, out = _io(node, ctx)
    dtype = x.type.dtype
    if dtype not in ("float32", "int8", "uint8", "int16", "int32") or out.type.dtype not in _OUT_SUFFIX:
        raise ctx.unsupported(f"{node.op} of {dtype} into {out.type.dtype}; supported: float32, int8 (and "
                              "uint8, int16, int32) into int32 or int64")
    if not x.type.shape:
        raise ctx.unsupported(f"{node.op} of a scalar")
    axis = _one_axis(ctx, node.input(1), len(x.type.shape))
    rows = _rows(x.type.shape, axis)
    if rows["axis_size"] < 1:
        raise ctx.unsupported(f"{node.op} over an empty axis")
    if out.type.num_elements != rows["outer"] * rows["inner"]:
        raise ctx.unsupported(f"output {list(out.type.shape)} is not the input {list(x.type.shape)} without "
                              f"axis {axis}")
    rows["select_last"] = int(bool(node.attrs.get("select_last", False)))
    ctx.use_kernel("reduce")
    params = ctx.params_struct("nn2c_arg_params_t", rows)
    which = "max" if node.op == "ARG_MAX" else "min"
    ctx.call(f"nn2c_arg_{which}_{_SUFFIX[dtype]}_{_OUT_SUFFIX[out.type.dtype]}", params, ctx.ptr(x), ctx.ptr(out))


@lowering("HARDMAX")
def hardmax(node: Node, ctx: EmitContext) -> None:
    from nn2c.reference.reduce import hardmax_rows

    x, out = _io(node, ctx)
    if x.type.dtype != "float32" or out.type.dtype != "float32" or out.type.shape != x.type.shape:
        raise ctx.unsupported(f"HARDMAX of {x.type} into {out.type}; supported: float32 of the same shape")
    rank = len(x.type.shape)
    axis = int(node.attrs.get("axis", -1))
    if not -rank <= axis < rank:
        raise ctx.unsupported(f"axis {axis} is out of range for rank {rank}")
    outer, size, inner = hardmax_rows(x.type.shape, axis % rank, bool(node.attrs.get("flatten", False)))
    if size < 1 or x.type.num_elements == 0:
        raise ctx.unsupported("HARDMAX of an empty tensor")
    ctx.use_kernel("reduce")
    params = ctx.params_struct("nn2c_arg_params_t", {"outer": outer, "axis_size": size, "inner": inner,
                                                     "select_last": 0})
    ctx.call("nn2c_hardmax_f32", params, ctx.ptr(x), ctx.ptr(out))


# ---- pools --------------------------------------------------------------------------------------


@lowering("L2_POOL_2D")
def l2_pool(node: Node, ctx: EmitContext) -> None:
    x, out = _io(node, ctx)
    if x.type.dtype != "float32" or out.type.dtype != "float32":
        raise ctx.unsupported(f"L2_POOL_2D of {x.type.dtype}; TFLite Micro has only float32")
    if len(x.type.shape) != 4 or len(out.type.shape) != 4:
        raise ctx.unsupported("L2_POOL_2D needs 4-D NHWC input and output")
    fields = pool_geometry(node, ctx, x, out)
    act_min, act_max = float_activation_range(ctx, node.fused_activation)
    fields.update(act_min=act_min, act_max=act_max)
    ctx.use_kernel("reduce")
    ctx.call("nn2c_l2_pool_f32", ctx.params_struct("nn2c_l2_pool_params_t", fields), ctx.ptr(x), ctx.ptr(out))


def _window_list(ctx: EmitContext, node: Node, name: str, count: int, default: int | None) -> list[int]:
    raw = node.attrs.get(name)
    if raw is None:
        if default is None:
            raise ctx.unsupported(f"WINDOW_POOL has no {name}")
        return [default] * count
    values = [int(v) for v in raw]
    if len(values) != count:
        raise ctx.unsupported(f"{name} has {len(values)} values for {count} spatial dims")
    return values


def _check_window_geometry(node: Node, in_sizes: Sequence[int], out_sizes: Sequence[int], kernel: list[int],
                           strides: list[int], dilations: list[int], pads: list[int]) -> None:
    """Each output extent must be what the window gives, rounded down or (ceil_mode) up, with at least
    one whole window in the padded input: a declared output shape that disagrees (a kernel of 2^31 - 1
    taps over 32 rows claimed to give 31) made the kernel loop over taps for minutes."""
    count = len(kernel)
    for d, (size, out_size) in enumerate(zip(in_sizes, out_sizes, strict=True)):
        extent = dilations[d] * (kernel[d] - 1) + 1
        span = size + pads[d] + pads[count + d] - extent
        if span < 0 or out_size not in (span // strides[d] + 1, -(-span // strides[d]) + 1):
            raise InvalidModelError(
                f"{node.where()}: output extent {out_size} of spatial dim {d} does not follow from input {size}, "
                f"kernel {kernel[d]}, stride {strides[d]}, dilation {dilations[d]} and pads "
                f"{pads[d]}/{pads[count + d]}")
        if (out_size - 1) * strides[d] + extent + size + pads[d] + pads[count + d] >= 2**31:
            # nn2c_window_pos forms o * stride - pad + t * dilation in int32
            raise InvalidModelError(f"{node.where()}: stride {strides[d]}, kernel {kernel[d]} and dilation "
                                    f"{dilations[d]} over {out_size} outputs exceed the kernel's 32-bit positions")


@lowering("WINDOW_POOL")
def window_pool(node: Node, ctx: EmitContext) -> None:
    indices = node.outputs[1] if len(node.outputs) == 2 else None
    x, out = _io(node, ctx) if indices is None else (node.inputs[0], node.outputs[0])
    assert x is not None
    rank = len(x.type.shape)
    count = rank - 2
    if not 1 <= count <= _WINDOW_DIMS or len(out.type.shape) != rank:
        raise ctx.unsupported(f"pooling over {count} spatial dims (1 to {_WINDOW_DIMS} are supported)")
    mode = node.attrs.get("mode")
    if mode not in _WINDOW_MODES:
        raise ctx.unsupported(f"pooling mode {mode!r}")
    dtype = x.type.dtype
    if out.type.dtype != dtype or (dtype != "float32" and (mode != "max" or dtype not in ("int8", "uint8", "int16"))):
        raise ctx.unsupported(f"{mode} pooling of {dtype} into {out.type.dtype}; supported: float32, and max "
                              "pooling of int8 / uint8 / int16")
    if dtype != "float32" and (x.type.quant or out.type.quant) and not _same_quantization(x, out):
        raise ctx.unsupported("integer max pooling needs equal input and output quantization")
    kernel = _window_list(ctx, node, "kernel", count, None)
    strides = _window_list(ctx, node, "strides", count, 1)
    dilations = _window_list(ctx, node, "dilations", count, 1)
    pads = _window_list(ctx, node, "pads", 2 * count, 0)
    if min(kernel + strides + dilations) < 1 or min(pads) < 0:
        raise ctx.unsupported("pooling kernel, strides and dilations must be positive and pads not negative")
    if x.type.shape[:2] != out.type.shape[:2]:
        raise ctx.unsupported(f"output {list(out.type.shape)} does not keep the input's N, C")
    _check_window_geometry(node, x.type.shape[2:], out.type.shape[2:], kernel, strides, dilations, pads)
    lead = [1] * (_WINDOW_DIMS - count)
    p = float(node.attrs.get("p", 2.0))
    if mode == "lp" and not p > 0:
        raise ctx.unsupported(f"Lp pooling with p = {p}")
    fields = {
        "planes": x.type.shape[0] * x.type.shape[1], "mode": _WINDOW_MODES[mode],
        "count_include_pad": int(bool(node.attrs.get("count_include_pad", False))), "p": p,
        "in": lead + list(x.type.shape[2:]), "out": lead + list(out.type.shape[2:]),
        "kernel": lead + kernel, "stride": lead + strides, "dilation": lead + dilations,
        "pad_begin": [0] * len(lead) + pads[:count], "pad_end": [0] * len(lead) + pads[count:],
    }
    ctx.use_kernel("reduce")
    params = ctx.params_struct("nn2c_window_params_t", fields)
    if indices is not None:
        if mode != "max" or dtype != "float32" or indices.type.dtype != "int64" or indices.type.shape != out.type.shape:
            raise ctx.unsupported(f"pooling indices of a {mode} pool of {dtype} into {indices.type} (the indices of "
                                  "a float32 max pool, int64, shaped as the output, are supported)")
        ctx.call("nn2c_window_argmax_f32", params, ctx.ptr(x), ctx.ptr(out), ctx.ptr(indices),
                 str(int(node.attrs.get("storage_order", 0))))
        return
    function = "nn2c_window_pool_f32" if dtype == "float32" else f"nn2c_window_max_{_SUFFIX[dtype]}"
    ctx.call(function, params, ctx.ptr(x), ctx.ptr(out))
