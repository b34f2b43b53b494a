"""MaxPool, AveragePool -> MAX_POOL_2D, AVERAGE_POOL_2D; GlobalAveragePool, GlobalMaxPool -> MEAN,
REDUCE_MAX over the spatial axes (keep_dims).

The windowed pools run channels-last between transposes, like Conv. Pads that are not TFLite's
SAME become an explicit PAD before a VALID pool: zeros for an average, the lowest float32 for a
(float) max, so that padding never wins. TFLite's SAME average counts only the in-bounds taps,
like ONNX's count_include_pad = 0; an average over an explicitly zero-padded window counts all
kH * kW taps, so with count_include_pad = 0 it is multiplied per output pixel by
kH * kW / (in-bounds taps).

What the NHWC pools cannot take stays channels-first as one nn2c WINDOW_POOL node: 3-D pools,
dilations, a ceil_mode that changes the output size (the output shape is ONNX shape inference's),
integer max pools that are not int8 / int16 or need explicit padding; LpPool and GlobalLpPool
((sum of |x|^p over the in-bounds taps)^(1/p): padding adds zeros) always.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import (
    FLOAT_LOWEST,
    ConversionContext,
    converts,
    invalid,
    unsupported,
)
from nn2c.frontends.onnx.spatial import (
    geometry,
    padding_attrs,
    resolve_pads,
    spatial,
    spatial_rank_check,
)
from nn2c.ir import Value


@converts("MaxPool", "AveragePool")
def _pool(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if len(node.output) > 1 and node.output[1]:  # the Indices output: the channels-first window pool
        if x.type.dtype != "float32":
            raise unsupported(f"the Indices output of a MaxPool of {x.type.dtype} (float32 is supported)")
        _window_pool(c, node, a, "max", indices=True)
        return
    _, out_shape = c.out_type(node.output[0])
    kernel = [int(k) for k in a["kernel_shape"]]
    if _needs_window_pool(node.op_type, a, x, out_shape, kernel):
        _window_pool(c, node, a, "max" if node.op_type == "MaxPool" else "avg")
        return
    rank = spatial_rank_check(x, node.op_type)
    in_hw, out_hw, strides, dilations, pads = geometry(a, x.type.shape, out_shape, kernel)
    k_hw = [1, kernel[0]] if rank == 3 else kernel
    if any(d != 1 for d in dilations):
        raise unsupported("dilated pooling")
    if a.get("ceil_mode", 0):
        floor_out = [(i + p0 + p1 - k) // s + 1 for i, p0, p1, k, s in
                     zip(in_hw, pads[:2], pads[2:], k_hw, strides, strict=True)]
        if floor_out != out_hw:
            raise unsupported("ceil_mode that changes the output size")
    name = node.output[0]
    xn = c.to_channels_last(x, name)
    include_pad = bool(a.get("count_include_pad", 0))
    attrs: dict[str, Any] = {"stride_h": strides[0], "stride_w": strides[1], "filter_height": k_hw[0],
                             "filter_width": k_hw[1], "fused_activation_function": "NONE"}
    padding = padding_attrs(pads, in_hw, out_hw, k_hw, strides, [1, 1])
    average = node.op_type == "AveragePool"
    correction = None
    if "explicit_padding" in padding or (average and include_pad and any(pads)):
        top, left, bottom, right = pads
        if average:
            xn = c.pad_nhwc(xn, (top, bottom, left, right), name)
            if not include_pad:
                correction = _average_correction(in_hw, out_hw, k_hw, strides, (top, left))
        else:
            if xn.type.dtype != "float32":
                raise unsupported("explicitly padded max pooling of integers")
            xn = c.pad_nhwc(xn, (top, bottom, left, right), name, fill=FLOAT_LOWEST)
        padding = {"padding": "VALID"}
    attrs.update(padding)
    y = c.new(f"{name}/pool", xn.type.dtype, (x.type.shape[0], *out_hw, x.type.shape[1]), xn.type.quant)
    c.emit("AVERAGE_POOL_2D" if average else "MAX_POOL_2D", [xn], [y], attrs)
    if correction is not None:
        scaled = c.new(f"{name}/pool_excl", "float32", y.type.shape)
        c.emit("MUL", [y, c.const(correction, f"{name}/count_scale")], [scaled], {"fused_activation_function": "NONE"})
        y = scaled
    c.from_channels_last(y, rank, node)


def _average_correction(in_hw: Sequence[int], out_hw: Sequence[int], k_hw: Sequence[int], strides: Sequence[int],
                        begin: Sequence[int]) -> np.ndarray:
    """kH*kW / in-bounds taps per output pixel: turns an average over a zero-padded window into
    ONNX's average over the in-bounds taps only (count_include_pad = 0)."""
    counts = []
    for size, out, k, s, b in zip(in_hw, out_hw, k_hw, strides, begin, strict=True):
        start = np.arange(out) * s - b
        counts.append(np.clip(start + k, 0, size) - np.clip(start, 0, size))
    valid = np.outer(counts[0], counts[1]).astype(np.float64)
    return (k_hw[0] * k_hw[1] / np.maximum(valid, 1)).astype(np.float32).reshape(1, out_hw[0], out_hw[1], 1)


@converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    axes = list(range(2, len(x.type.shape)))
    op = "MEAN" if node.op_type == "GlobalAveragePool" else "REDUCE_MAX"
    out = c.output(node)
    c.emit(op, [x, c.int32(axes, f"{out.name}/axes")], [out], {"keep_dims": True})


# ---- the channels-first window pool: what the NHWC pools cannot take --------------------------------
_WINDOW_SPATIAL_DIMS = (1, 2, 3)


def _needs_window_pool(op_type: str, a: dict[str, Any], x: Value, out_shape: Sequence[int],
                       kernel: list[int]) -> bool:
    """3-D pools, dilations, a ceil_mode that changes the output size, integer max pools that are
    not int8 / int16 or need explicit padding: WINDOW_POOL (the NHWC path refuses them)."""
    rank = len(x.type.shape)
    if rank - 2 not in _WINDOW_SPATIAL_DIMS or len(kernel) != rank - 2:
        return False
    if rank == 5 or any(int(d) != 1 for d in a.get("dilations", [])):
        return True
    strides = spatial(rank, a.get("strides"), 1)
    pads = resolve_pads(a, x.type.shape[2:], out_shape[2:], kernel, strides, [1] * len(kernel))
    count = len(kernel)
    floor_out = [(i + pads[d] + pads[count + d] - k) // s + 1
                 for d, (i, k, s) in enumerate(zip(x.type.shape[2:], kernel, strides, strict=True))]
    if list(out_shape[2:]) != floor_out:
        return True
    dtype = x.type.dtype
    if op_type == "MaxPool" and dtype != "float32":
        return dtype not in ("int8", "int16") or any(pads)
    return False


def _window_pool(c: ConversionContext, node: Any, a: dict[str, Any], mode: str,
                 kernel: Sequence[int] | None = None, indices: bool = False) -> None:
    """WINDOW_POOL in the ONNX layout (no transposes): explicit pads, dilations, ceil-mode sizes."""
    x = c.value(node.input[0])
    rank = len(x.type.shape)
    if rank - 2 not in _WINDOW_SPATIAL_DIMS:
        raise unsupported(f"{node.op_type} over {rank - 2} spatial dimensions (1 to 3 are supported)")
    out = c.output(node)
    kernel = [int(k) for k in (kernel if kernel is not None else a["kernel_shape"])]
    if len(kernel) != rank - 2:
        raise invalid(f"kernel_shape has {len(kernel)} values for {rank - 2} spatial dimensions")
    strides = spatial(rank, a.get("strides"), 1)
    dilations = spatial(rank, a.get("dilations"), 1)
    pads = resolve_pads(a, x.type.shape[2:], out.type.shape[2:], kernel, strides, dilations)
    if mode != "max" and x.type.dtype != "float32":
        raise unsupported(f"{node.op_type} of {x.type.dtype} (float32 is supported)")
    if x.type.dtype != "float32" and x.type.dtype not in ("int8", "uint8", "int16"):
        raise unsupported(f"{node.op_type} of {x.type.dtype}")
    attrs = {"mode": mode, "kernel": kernel, "strides": strides, "dilations": dilations, "pads": pads,
             "count_include_pad": bool(a.get("count_include_pad", 0)), "p": float(a.get("p", 2))}
    outputs = [out]
    if indices:
        outputs.append(c.output(node, 1, dtype="int64", shape=out.type.shape))
        attrs["storage_order"] = int(a.get("storage_order", 0))
        if attrs["storage_order"] not in (0, 1):
            raise invalid(f"storage_order {attrs['storage_order']} (0: row-major, 1: column-major)")
    c.emit("WINDOW_POOL", [x], outputs, attrs)


@converts("LpPool")
def _lp_pool(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    _window_pool(c, node, a, "lp")


@converts("GlobalLpPool")
def _global_lp_pool(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    _window_pool(c, node, {"p": a.get("p", 2)}, "lp", kernel=list(x.type.shape[2:]))
