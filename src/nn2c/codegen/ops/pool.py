"""Pooling (AVERAGE_POOL_2D, MAX_POOL_2D) and reductions (MEAN, SUM, REDUCE_MAX), as TFLite Micro.

Pooling: out = ceil(in / stride) (SAME) or (in - filter + stride) / stride (VALID); the top / left
padding is ((out - 1) * stride + filter - in) / 2 clipped at 0 (ComputePaddingHeightWidth). The
window is clipped to the input; an integer average is (sum +- count/2) / count, truncated. int8 and
int16 pooling requires the output quantization to equal the input's (TFLM's Prepare checks it).

Reductions: each input element adds into the output element at sum(index[d] * out_stride[d]),
with out_stride 0 on reduced axes. Integer MEAN and SUM are QuantizedMeanOrSum, even when the input
and output quantization are equal (current TFLM no longer takes a truncating sum / n path there):
M = in_scale / out_scale (double) -> (m, e) by QuantizeMultiplier; for MEAN, s = min(floor(log2 n),
32, 31 + e), m' = (m << s) / n, e' = e - s; out = clamp(MBQM(sum - zp_in * n, m', e') + zp_out).
SUM uses (m, e) unchanged. float32 MEAN is (row-major float sum) / float(n).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import (
    float_activation_range,
    int_activation_range,
    scale,
    zero_point,
)
from nn2c.errors import InvalidModelError
from nn2c.ir import Node, Value
from nn2c.quant.fixedpoint import quantize_multiplier

_POOL_KERNELS = {"AVERAGE_POOL_2D": "avg_pool", "MAX_POOL_2D": "max_pool"}
_SUFFIX = {"int8": "s8", "int16": "s16", "float32": "f32"}
_MAX_REDUCE_RANK = 6


def _out_size_and_padding(padding: str, size: int, filter_size: int, stride: int) -> tuple[int, int]:
    """TFLite ComputeOutSize and ComputePaddingWithOffset (dilation 1): (output size, leading pad)."""
    if padding == "SAME":
        out = (size + stride - 1) // stride
    elif padding == "VALID":
        out = (size + stride - filter_size) // stride
    else:
        raise ValueError(padding)
    total = (out - 1) * stride + filter_size - size
    return out, max(total, 0) // 2


def _same_quantization(a: Value, b: Value) -> bool:
    return zero_point(a) == zero_point(b) and np.float32(scale(a)) == np.float32(scale(b))


def pool_geometry(node: Node, ctx: EmitContext, x: Value, out: Value) -> dict[str, Any]:
    """The window geometry fields of a 2-D pooling node (TFLite's SAME / VALID padding), checked
    against the output shape; shared by the pooling and L2-pooling lowerings."""
    padding = node.attrs.get("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        raise ctx.unsupported(f"padding {padding!r} is not SAME or VALID")
    if "filter_height" not in node.attrs or "filter_width" not in node.attrs:
        # (options of another operator's type, or none: TFLM would pool over a window of 0)
        raise InvalidModelError(f"{node.where()}: no Pool2DOptions (filter size); the operator's options do not "
                                "match its type, re-export the model")
    stride_h, stride_w = int(node.attrs.get("stride_h", 1)), int(node.attrs.get("stride_w", 1))
    filter_h, filter_w = int(node.attrs["filter_height"]), int(node.attrs["filter_width"])
    if min(stride_h, stride_w, filter_h, filter_w) < 1:
        raise ctx.unsupported("pooling strides and filter sizes must be positive")
    batches, in_h, in_w, depth = x.type.shape
    out_h, pad_h = _out_size_and_padding(padding, in_h, filter_h, stride_h)
    out_w, pad_w = _out_size_and_padding(padding, in_w, filter_w, stride_w)
    if out.type.shape != (batches, out_h, out_w, depth):
        raise ctx.unsupported(f"output shape {list(out.type.shape)} is not the pooled shape "
                              f"{[batches, out_h, out_w, depth]}")
    return {
        "batches": batches, "input_h": in_h, "input_w": in_w, "depth": depth,
        "output_h": out_h, "output_w": out_w, "stride_h": stride_h, "stride_w": stride_w,
        "filter_h": filter_h, "filter_w": filter_w, "pad_h": pad_h, "pad_w": pad_w,
    }


@lowering("AVERAGE_POOL_2D", "MAX_POOL_2D")
def pool_2d(node: Node, ctx: EmitContext) -> None:
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    dtype = x.type.dtype
    if dtype not in _SUFFIX or out.type.dtype != dtype:
        raise ctx.unsupported(f"pooling of {dtype} into {out.type.dtype}; supported: int8, int16, float32")
    if len(x.type.shape) != 4 or len(out.type.shape) != 4:
        raise ctx.unsupported("pooling needs 4-D NHWC input and output")
    activation = node.fused_activation
    fields: dict[str, Any] = pool_geometry(node, ctx, x, out)
    if dtype == "float32":
        act_min_f, act_max_f = float_activation_range(ctx, activation)
        fields.update(act_min=0, act_max=0, act_min_f=act_min_f, act_max_f=act_max_f)
    else:
        # TFLM Prepare: |in_scale - out_scale| <= 1e-6 (in double) and equal zero points
        if abs(float(scale(x)) - float(scale(out))) > 1e-6 or zero_point(x) != zero_point(out):
            raise ctx.unsupported("int pooling needs the output scale and zero point to equal the input's "
                                  "(TFLite Micro rejects this model)")
        act_min, act_max = int_activation_range(ctx, activation, out)
        fields.update(act_min=act_min, act_max=act_max, act_min_f=0.0, act_max_f=0.0)
    ctx.use_kernel("pool")
    function = f"nn2c_{_POOL_KERNELS[node.op]}_{_SUFFIX[dtype]}"
    if _takes_lanes(ctx, node, fields, dtype):
        ctx.take_path("POOL_LANES")
    elif function == "nn2c_avg_pool_s8" and is_global_pool(fields):
        function = "nn2c_avg_pool_s8_global"  # (the window arithmetic left out)
    params = ctx.params_struct("nn2c_pool_params_t", fields)
    ctx.call(function, params, ctx.ptr(x), ctx.ptr(out))


def is_global_pool(fields: dict[str, Any]) -> bool:
    """Pooling fields (nn2c_pool_params_t) of one window over the whole input, no padding (MobileNet's and
    person_detect's last pool); the row groups' accumulating sink asks the same (codegen/stream.py)."""
    return (fields["filter_h"], fields["filter_w"], fields["pad_h"], fields["pad_w"], fields["output_h"],
            fields["output_w"]) == (fields["input_h"], fields["input_w"], 0, 0, 1, 1)


def _takes_lanes(ctx: EmitContext, node: Node, fields: dict[str, Any], dtype: str) -> bool:
    """Whether nn2c_avg_pool_s8 runs this layer in SIMD lanes (kernels/nn2c_pool.c: its test, on the target's
    SIMD family)."""
    simd = ctx.target.simd
    if node.op != "AVERAGE_POOL_2D" or dtype != "int8" or simd is None:
        return False
    return (simd == "mve" or fields["depth"] % 4 == 0) and fields["filter_h"] * fields["filter_w"] <= 256


# ---- reductions -----------------------------------------------------------------------------------


def _resolved_axes(ctx: EmitContext, axis: Value | None, rank: int) -> list[int]:
    """TFLite ResolveAxis: negative axes wrap, duplicates are dropped, order is kept."""
    if axis is None or not axis.is_constant:
        raise ctx.unsupported("the reduction axes are not a constant tensor")
    if axis.type.dtype != "int32":
        raise ctx.unsupported(f"reduction axes of type {axis.type.dtype}; TFLite Micro needs int32")
    assert axis.data is not None
    resolved: list[int] = []
    for raw in axis.data.reshape(-1).tolist():
        current = raw + rank if raw < 0 else raw
        if not 0 <= current < rank:
            raise ctx.unsupported(f"reduction axis {raw} is out of range for rank {rank}")
        if current not in resolved:
            resolved.append(current)
    return resolved


def _reduce_fields(ctx: EmitContext, x: Value, out: Value, axes: list[int]) -> dict[str, Any]:
    """Shape part of nn2c_reduce_params_t: input dims and the output stride of each input dim."""
    dims = list(x.type.shape)
    rank = len(dims)
    if rank > _MAX_REDUCE_RANK:
        raise ctx.unsupported(f"reductions support rank <= {_MAX_REDUCE_RANK}, got {rank}")
    out_strides = [0] * rank
    stride = 1
    for d in reversed(range(rank)):
        if d not in axes:
            out_strides[d] = stride
            stride *= dims[d]
    num_outputs = stride
    if num_outputs != out.type.num_elements:
        raise ctx.unsupported(f"output {list(out.type.shape)} does not hold the {num_outputs} reduced values")
    pad = _MAX_REDUCE_RANK - rank
    return {
        "rank": rank,
        "dims": dims + [1] * pad,
        "out_strides": out_strides + [0] * pad,
        "num_outputs": num_outputs,
        "num_reduced": prod(dims[d] for d in axes),
    }


def reduced_rows_inner(shape: Sequence[int], axes: Sequence[int]) -> int:
    """nn2c_reduce_params_t.inner: where the reduced axes are one run (dimensions of 1 aside), the input is
    [outer][reduced][inner] and this is inner (1 where the last axis is reduced); 0 where they are not."""
    kept = [(d in axes, n) for d, n in enumerate(shape) if n != 1]
    flags = "".join("r" if reduced else "k" for reduced, _ in kept)
    if "r" in flags and "kr" in flags[flags.index("r"):]:
        return 0  # (a kept axis between two reduced ones)
    inner = 1
    for reduced, n in reversed(kept):
        if reduced:
            break
        inner *= n
    return inner


def _mean_multiplier(multiplier: int, shift: int, count: int) -> tuple[int, int]:
    """QuantizedMeanOrSum's folding of 1/count into the output multiplier (exact integer maths)."""
    if count <= 0:
        return multiplier, shift
    extra = max(0, min(count.bit_length() - 1, 32, 31 + shift))  # bit_length - 1 = floor(log2)
    return (multiplier << extra) // count, shift - extra


@lowering("MEAN", "SUM", "REDUCE_MAX")
def reduce(node: Node, ctx: EmitContext) -> None:
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    dtype = x.type.dtype
    if out.type.dtype != dtype:
        raise ctx.unsupported(f"reduction of {dtype} into {out.type.dtype}")
    from nn2c.codegen.ops.reduce import (  # reduce.py imports this module
        extra_axes_kernel,
        lower_extra_axes,
    )

    extra = extra_axes_kernel(node.op, dtype)
    if extra is not None:  # int32 (ONNX) SUM / REDUCE_MAX: nn2c_reduce kernels
        lower_extra_axes(node, ctx, extra)
        return
    axes = _resolved_axes(ctx, node.input(1), len(x.type.shape))
    fields = _reduce_fields(ctx, x, out, axes)
    fields.update(input_zp=0, output_zp=0, multiplier=0, shift=0)
    ctx.use_kernel("pool")

    if dtype == "float32":
        function = {"MEAN": "nn2c_reduce_mean_f32", "SUM": "nn2c_reduce_sum_f32",
                    "REDUCE_MAX": "nn2c_reduce_max_f32"}[node.op]
        ctx.call(function, ctx.params_struct("nn2c_reduce_params_t", fields), ctx.ptr(x), ctx.ptr(out))
        return

    if node.op == "REDUCE_MAX":
        if dtype not in ("int8", "int16"):
            raise ctx.unsupported(f"REDUCE_MAX of {dtype}; supported: float32, int8, int16")
        if not _same_quantization(x, out):
            raise ctx.unsupported(f"{dtype} REDUCE_MAX needs equal input and output quantization "
                                  "(TFLite Micro rejects this model)")
        ctx.call(f"nn2c_reduce_max_{_SUFFIX[dtype]}", ctx.params_struct("nn2c_reduce_params_t", fields),
                 ctx.ptr(x), ctx.ptr(out))
        return

    if dtype not in ("int8", "int16"):
        raise ctx.unsupported(f"{node.op} of {dtype}; supported: float32, int8, int16")
    multiplier, shift = quantize_multiplier(float(np.float64(scale(x)) / np.float64(scale(out))))
    if node.op == "MEAN":
        multiplier, shift = _mean_multiplier(multiplier, shift, fields["num_reduced"])
    fields.update(input_zp=zero_point(x), output_zp=zero_point(out), multiplier=multiplier, shift=shift,
                  inner=reduced_rows_inner(x.type.shape, axes))
    temp_sum = ctx.scratch(4 * fields["num_outputs"])
    ctx.call(f"nn2c_reduce_quantized_{_SUFFIX[dtype]}", ctx.params_struct("nn2c_reduce_params_t", fields),
             ctx.ptr(x), ctx.ptr(out), f"(int32_t *){temp_sum}")
