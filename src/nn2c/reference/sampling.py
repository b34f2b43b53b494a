"""Reference semantics of GRID_SAMPLE (ONNX GridSample, as onnx.reference computes it).

x [N, C, D1..Dr], grid [N, H1..Hr, r] -> y [N, C, H1..Hr]. Grid component k addresses spatial axis
r-1-k. Per axis of size S, the normalised g becomes u = (g + 1) / 2 * (S - 1) (align_corners, borders
[0, S - 1]) or ((g + 1) S - 1) / 2 (borders [-0.5, S - 0.5]); nearest rounds u half to even; outside
the borders, padding "border" clamps u to [0, S - 1] (except in cubic mode, where only the taps are
clamped: PyTorch's and onnxruntime's semantics; onnx.reference clamps u as well, which changes
results within two pixels of the border) and "reflection" reflects u into the borders (for the
symmetric reflection, reflecting u or only the taps gives the same result).
The taps: nearest trunc(u); linear floor(u) + (0, 1) with weights (1 - t, t); cubic floor(u) +
(-1..2) with Keys' weights (A = -0.75) of t = u - floor(u). A tap outside [0, S - 1] reads 0 (zeros),
the clamped index (border) or the reflected index (reflection). The last axis is interpolated first.
NaN / infinite coordinates are taken as far outside the input (as the C kernel does).

BITCAST: the input's bytes (little endian, as stored) viewed as the output's dtype.
"""

from __future__ import annotations

import numpy as np

from nn2c.ir import Node, numpy_dtype
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays, ReferenceError

MODES = {"nearest": 0, "linear": 1, "cubic": 2}
PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}
CUBIC_A = np.float32(-0.75)


def reflect(u: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """u reflected by the nearer border until it lies within [lo, hi]."""
    rng = np.float32(hi - lo)
    if not rng > 0:
        return np.full_like(u, lo)
    below, above = u < lo, u > hi
    dx = np.where(below, np.float32(lo) - u, u - np.float32(hi))
    with np.errstate(invalid="ignore", over="ignore"):
        n = np.floor(dx / rng)
        r = dx - n * rng
        even = np.fmod(n, 2) == 0
    low_side = np.where(even, np.float32(lo) + r, np.float32(hi) - r)
    high_side = np.where(even, np.float32(hi) - r, np.float32(lo) + r)
    return np.where(below, low_side, np.where(above, high_side, u)).astype(np.float32)


def cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    a = CUBIC_A
    t1, t2, t3 = t + 1, 1 - t, 2 - t
    return [((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a, ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1, ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a]


def tap_index(i: np.ndarray, size: int, padding: int, lo: float, hi: float) -> np.ndarray:
    """The index each tap reads, -1 for a zero."""
    inside = (i >= 0) & (i < size)
    if padding == 0:
        mapped = np.full_like(i, -1)
    elif padding == 1:
        mapped = np.clip(i, 0, size - 1)
    else:
        mapped = np.clip(np.trunc(reflect(i.astype(np.float32), lo, hi)).astype(np.int64), 0, size - 1)
    return np.where(inside, i, mapped)


def axis_taps(g: np.ndarray, size: int, mode: int, padding: int, align: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(indices, weights) of the taps of one axis, one array per tap over the grid positions."""
    g = g.astype(np.float32)
    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    with np.errstate(invalid="ignore", over="ignore"):
        u = (g + 1) / 2 * np.float32(size - 1) if align else ((g + 1) * np.float32(size) - 1) / 2
        if mode == 0:
            u = np.rint(u)
        outside = (u < lo) | (u > hi)
        if padding == 1 and mode != 2:
            u = np.where(outside, np.clip(u, 0, size - 1), u)
        elif padding == 2:
            u = np.where(outside, reflect(u, lo, hi), u)
    limit = np.float32(size + 4)
    u = np.where(np.isnan(u), -limit, np.clip(u, -limit, limit)).astype(np.float32)
    if mode == 0:
        return [tap_index(np.trunc(u).astype(np.int64), size, padding, lo, hi)], [np.ones_like(u)]
    f = np.floor(u)
    t = (u - f).astype(np.float32)
    base = f.astype(np.int64)
    if mode == 1:
        weights = [1 - t, t]
    else:
        base = base - 1
        weights = cubic_weights(t)
    return [tap_index(base + k, size, padding, lo, hi) for k in range(len(weights))], weights


def grid_sample(x: np.ndarray, grid: np.ndarray, mode: int, padding: int, align: bool) -> np.ndarray:
    n, c, *dims = x.shape
    rank = len(dims)
    out_spatial = grid.shape[1:-1]
    flat_grid = grid.reshape(n, -1, rank)
    taps = [axis_taps(flat_grid[:, :, rank - 1 - d], dims[d], mode, padding, align) for d in range(rank)]
    batch = np.arange(n)[:, None, None]
    channel = np.arange(c)[None, :, None]

    def interpolate(axis: int, prefix: tuple[np.ndarray, ...]) -> np.ndarray:
        """Sum over this axis's taps of weight * (the interpolation of the axes after it)."""
        total = np.zeros((n, c, flat_grid.shape[1]), dtype=np.float32)
        for index, weight in zip(*taps[axis], strict=True):
            idx = (*prefix, index[:, None, :])
            if axis == rank - 1:
                valid = np.all([i >= 0 for i in idx], axis=0)
                safe = tuple(np.maximum(i, 0) for i in idx)
                inner = np.where(valid, x[(batch, channel, *safe)], np.float32(0))
            else:
                inner = interpolate(axis + 1, idx)
            total = total + weight[:, None, :] * inner
        return total

    return interpolate(0, ()).reshape(n, c, *out_spatial).astype(np.float32)


@evaluator("GRID_SAMPLE")
def _grid_sample(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, grid = arrays[0], arrays[1]
    if x is None or grid is None or x.dtype != np.float32 or grid.dtype != np.float32:
        raise ReferenceError("GRID_SAMPLE needs float32 x and grid")
    mode = MODES[str(node.attrs.get("mode", "linear"))]
    padding = PADDINGS[str(node.attrs.get("padding_mode", "zeros"))]
    return [grid_sample(x, grid, mode, padding, bool(node.attrs.get("align_corners", 0)))]


def _roi_sample(y: float, x: float, height: int, width: int) -> tuple[list[int], list[float]]:
    """The four corners and weights of one RoiAlign sample (nothing outside [-1, size])."""
    if not (-1.0 <= y <= height and -1.0 <= x <= width):
        return [0, 0, 0, 0], [0.0, 0.0, 0.0, 0.0]
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    return ([y_low * width + x_low, y_low * width + x_high, y_high * width + x_low, y_high * width + x_high],
            [hy * hx, hy * lx, ly * hx, ly * lx])


def _roi_grid(ratio: int, extent: float, bins: int, limit: int) -> int:
    if ratio > 0:
        return ratio
    n = np.ceil(extent / bins)
    return int(min(n, limit)) if n >= 1 else 1


@evaluator("ROI_ALIGN")
def _roi_align(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = np.asarray(arrays[0], dtype=np.float64)
    rois = np.asarray(arrays[1], dtype=np.float64).reshape(-1, 4)
    images = np.asarray(arrays[2]).astype(np.int64).reshape(-1)
    out = node.outputs[0]
    batch, channels, height, width = x.shape
    pooled_h, pooled_w = out.type.shape[2:]
    a = node.attrs
    half, scale, ratio = bool(a.get("half_pixel")), float(a.get("spatial_scale", 1.0)), int(a.get("sampling_ratio", 0))
    y = np.zeros(out.type.shape, dtype=np.float64)
    for r, (box, image) in enumerate(zip(rois, images, strict=True)):
        if not 0 <= image < batch:
            continue
        start_w, start_h, end_w, end_h = (v * scale - (0.5 if half else 0.0) for v in box)
        roi_w, roi_h = end_w - start_w, end_h - start_h
        if not half:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / pooled_h, roi_w / pooled_w
        grid_h, grid_w = _roi_grid(ratio, roi_h, pooled_h, height + 1), _roi_grid(ratio, roi_w, pooled_w, width + 1)
        planes = x[image].reshape(channels, -1)
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                values = []
                for iy in range(grid_h):
                    yy = start_h + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                    for ix in range(grid_w):
                        xx = start_w + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                        pos, weights = _roi_sample(yy, xx, height, width)
                        corners = np.stack([w * planes[:, k] for k, w in zip(pos, weights, strict=True)])
                        values.append(corners.max(axis=0) if a.get("mode") == "max" else corners.sum(axis=0))
                stacked = np.stack(values)
                y[r, :, ph, pw] = stacked.max(axis=0) if a.get("mode") == "max" else stacked.sum(axis=0) / len(values)
    return [y.astype(numpy_dtype(out.type.dtype))]


@evaluator("BITCAST")
def _bitcast(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, out = arrays[0], node.outputs[0]
    target = np.dtype(numpy_dtype(out.type.dtype))
    if x is None or x.dtype.itemsize != target.itemsize:
        raise ReferenceError("BITCAST between types of different sizes")
    return [np.ascontiguousarray(x).view(target).reshape(out.type.shape)]
