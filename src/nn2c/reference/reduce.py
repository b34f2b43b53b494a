"""Reference evaluators of the reduction family beyond MEAN / SUM / REDUCE_MAX / MIN / PROD.

- REDUCE_ALL / REDUCE_ANY: logical and / or over the axes (bool).
- ARG_MAX / ARG_MIN: the index of the first extreme along one axis (the last with select_last);
  int8 inputs compare as stored (the scale is positive, so the order is the real one).
- L2_POOL_2D: sqrt(mean of the squares of the in-bounds taps), TFLite's SAME / VALID geometry.
- WINDOW_POOL: channels-first max / average / Lp pool with explicit pads and dilations (ONNX).
- HARDMAX: 1 at the first maximum along the axis (over the flattened tail when `flatten`), else 0.
"""

from __future__ import annotations

import itertools
from math import prod

import numpy as np

from nn2c.ir import Node, numpy_dtype
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays, ReferenceError


def _input(arrays: Arrays, i: int, what: str) -> np.ndarray:
    array = arrays[i] if i < len(arrays) else None
    if array is None:
        raise ReferenceError(f"the {what} input is missing")
    return np.asarray(array)


def _axes(node: Node, arrays: Arrays, rank: int) -> tuple[int, ...]:
    raw = [int(v) for v in _input(arrays, 1, "axes").reshape(-1)]
    if any(not -rank <= a < rank for a in raw) and rank:
        raise ReferenceError(f"{node.op}: an axis of {raw} is out of range for rank {rank}")
    return tuple(sorted({a % rank for a in raw})) if rank else ()


@evaluator("REDUCE_ALL", "REDUCE_ANY")
def reduce_all_any(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = _input(arrays, 0, "data").astype(np.bool_)
    function = np.all if node.op == "REDUCE_ALL" else np.any
    y = function(x, axis=_axes(node, arrays, x.ndim), keepdims=True)
    return [y.reshape(node.outputs[0].type.shape)]


def arg_extreme(x: np.ndarray, axis: int, is_max: bool, select_last: bool) -> np.ndarray:
    """Index of the first (or last) extreme along axis; NaN never wins a comparison (as in C)."""
    moved = np.moveaxis(x, axis, -1)
    if select_last:
        moved = moved[..., ::-1]
    best = moved[..., 0].copy()
    index = np.zeros(best.shape, dtype=np.int64)
    for i in range(1, moved.shape[-1]):
        current = moved[..., i]
        better = current > best if is_max else current < best
        best = np.where(better, current, best)
        index = np.where(better, i, index)
    if select_last:
        index = moved.shape[-1] - 1 - index
    return index


@evaluator("ARG_MAX", "ARG_MIN")
def arg_min_max(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = _input(arrays, 0, "data")
    axes = _axes(node, arrays, x.ndim)
    if len(axes) != 1:
        raise ReferenceError(f"{node.op} needs exactly one axis, got {list(axes)}")
    out = node.outputs[0]
    index = arg_extreme(x, axes[0], node.op == "ARG_MAX", bool(node.attrs.get("select_last", False)))
    return [index.astype(numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


def _tflite_pads(node: Node, in_hw: tuple[int, int], out_hw: tuple[int, int]) -> tuple[int, int]:
    a = node.attrs
    pads = []
    for size, out, k, s in zip(in_hw, out_hw, (a.get("filter_height", 1), a.get("filter_width", 1)),
                               (a.get("stride_h", 1), a.get("stride_w", 1)), strict=True):
        total = (out - 1) * int(s) + int(k) - size
        pads.append(max(total, 0) // 2 if a.get("padding", "SAME") == "SAME" else 0)
    return pads[0], pads[1]


@evaluator("L2_POOL_2D")
def l2_pool(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = _input(arrays, 0, "data").astype(np.float64)
    out = node.outputs[0]
    n, oh, ow, c = out.type.shape
    a = node.attrs
    kh, kw = int(a.get("filter_height", 1)), int(a.get("filter_width", 1))
    sh, sw = int(a.get("stride_h", 1)), int(a.get("stride_w", 1))
    ph, pw = _tflite_pads(node, (x.shape[1], x.shape[2]), (oh, ow))
    y = np.zeros((n, oh, ow, c))
    for i, j in itertools.product(range(oh), range(ow)):
        y0, x0 = i * sh - ph, j * sw - pw
        window = x[:, max(y0, 0):max(min(y0 + kh, x.shape[1]), 0), max(x0, 0):max(min(x0 + kw, x.shape[2]), 0), :]
        count = window.shape[1] * window.shape[2]
        y[:, i, j, :] = np.sqrt((window ** 2).sum(axis=(1, 2)) / max(count, 1))
    y = _clamp(y, a.get("fused_activation_function", "NONE"))
    return [y.astype(np.float32)]


def _clamp(y: np.ndarray, activation: str) -> np.ndarray:
    bounds = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}
    if activation in bounds:
        low, high = bounds[activation]
        return np.clip(y, low, high)
    return y


def window_taps(size: int, out: int, k: int, stride: int, dilation: int, begin: int) -> list[list[int]]:
    """Input positions (maybe outside [0, size)) of the taps of each output position along one axis."""
    return [[o * stride - begin + t * dilation for t in range(k)] for o in range(out)]


def _pooled(flat: np.ndarray | None, mode: str, p: float, divisor: int) -> np.ndarray | float:
    """One output position of every plane from its in-bounds taps (None: no tap is in bounds)."""
    if mode == "max":
        return flat.max(axis=-1) if flat is not None else -np.inf
    if mode == "avg":
        return flat.sum(axis=-1) / max(divisor, 1) if flat is not None else 0.0
    total = (np.abs(flat) ** p).sum(axis=-1) if flat is not None else 0.0
    return total ** (1.0 / p)


@evaluator("WINDOW_POOL")
def window_pool(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = _input(arrays, 0, "data").astype(np.float64)
    out = node.outputs[0]
    a = node.attrs
    spatial = x.shape[2:]
    count = len(spatial)
    pads = [int(v) for v in a["pads"]]
    taps = [window_taps(spatial[d], out.type.shape[2 + d], int(a["kernel"][d]), int(a["strides"][d]),
                        int(a["dilations"][d]), pads[d]) for d in range(count)]
    y = np.zeros((x.shape[0], x.shape[1], prod(out.type.shape[2:])), dtype=np.float64)
    planes = x.reshape(x.shape[0], x.shape[1], *spatial)
    with_indices = len(node.outputs) == 2
    where = np.full(y.shape, -1, dtype=np.int64)
    # the flat input index of each element: row-major, or spatial dims column-major (storage_order 1)
    plane_offsets = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[0], x.shape[1], *[1] * count) * prod(spatial)
    within = np.arange(prod(spatial)).reshape(spatial, order="F" if a.get("storage_order") else "C")
    positions = plane_offsets + within
    for k, position in enumerate(itertools.product(*(range(n) for n in out.type.shape[2:]))):
        per_axis = [taps[d][position[d]] for d in range(count)]
        inside = [[t for t in axis_taps if 0 <= t < spatial[d]] for d, axis_taps in enumerate(per_axis)]
        flat = None
        if all(inside):
            flat = planes[np.ix_(range(x.shape[0]), range(x.shape[1]), *inside)].reshape(x.shape[0], x.shape[1], -1)
        if a.get("count_include_pad", False):
            divisor = prod(sum(-pads[d] <= t < spatial[d] + pads[count + d] for t in per_axis[d]) for d in range(count))
        else:
            divisor = prod(len(t) for t in inside)
        y[:, :, k] = _pooled(flat, a["mode"], float(a.get("p", 2)), divisor)
        if with_indices and flat is not None:
            chosen = positions[np.ix_(range(x.shape[0]), range(x.shape[1]), *inside)].reshape(flat.shape)
            where[:, :, k] = np.take_along_axis(chosen, np.argmax(flat, axis=-1)[..., None], axis=-1)[..., 0]
    result = [y.reshape(out.type.shape).astype(numpy_dtype(out.type.dtype))]
    return result + ([where.reshape(out.type.shape)] if with_indices else [])


def hardmax_rows(shape: tuple[int, ...], axis: int, flatten: bool) -> tuple[int, int, int]:
    """(outer, axis size, inner) of the hardmax's rows; `flatten` (ONNX before opset 13) takes
    every dim from axis on as the row."""
    if flatten:
        return prod(shape[:axis]), prod(shape[axis:]), 1
    return prod(shape[:axis]), shape[axis], prod(shape[axis + 1:])


@evaluator("HARDMAX")
def hardmax(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = _input(arrays, 0, "data")
    axis = int(node.attrs.get("axis", -1)) % max(x.ndim, 1)
    outer, size, inner = hardmax_rows(x.shape, axis, bool(node.attrs.get("flatten", False)))
    rows = x.reshape(outer, size, inner)
    index = arg_extreme(rows, 1, True, False)
    y = np.zeros(rows.shape, dtype=x.dtype)
    np.put_along_axis(y, index[:, None, :], 1, axis=1)
    return [y.reshape(x.shape)]
