"""In-place rules: how far below its input an operator's output may start.

A kernel that produces its output in increasing address order, one unit at a time (an output
pixel for window operators, an element for element-wise ones), may write over input bytes that no
later unit reads. If the output starts D bytes below the input (out = in - D), output unit p ends
at in - D + end(p); it is safe when that is at most the lowest input byte still read by units
p, p+1, ... (or, for element-wise kernels that read an element before writing it, by units
p+1, ...). The smallest safe D over all units gives the overlap; the pair then needs
max(D + input bytes, output bytes) instead of input + output bytes.

Which kernels keep that order is the `inplace` fact of the operator table (ir/ops.py); every rule
is checked end to end by the bit-exact model tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from nn2c.ir import Node, Value, dtype_bytes
from nn2c.ir.ops import op_info


@dataclass(frozen=True)
class InPlacePair:
    """Output `output` may start `distance` bytes below input `input` (both buffer names)."""

    input: str
    output: str
    distance: int
    step: int


def _padding(in_size: int, out_size: int, stride: int, dilation: int, kernel: int, mode: str) -> int:
    """TFLite ComputePaddingHeightWidth: the leading padding of one spatial axis."""
    if mode != "SAME":
        return 0
    effective = (kernel - 1) * dilation + 1
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return total // 2


def _window_distance(node: Node, x: Value, out: Value) -> int | None:
    if len(x.type.shape) != 4 or len(out.type.shape) != 4:
        return None
    n, h, w, c_in = x.type.shape
    n_out, ho, wo, c_out = out.type.shape
    if n != n_out:
        return None
    attrs = node.attrs
    if op_info(node.op).weight_axis is not None:  # a convolution: the window is its filter's
        weights = node.inputs[1]
        assert weights is not None
        kh, kw = weights.type.shape[1], weights.type.shape[2]
        dh, dw = attrs.get("dilation_hfactor", 1), attrs.get("dilation_wfactor", 1)
    else:  # (a pooling without its filter size is refused by its lowering, which runs first: pool_geometry)
        kh, kw = attrs["filter_height"], attrs["filter_width"]
        dh = dw = 1
    sh, sw = attrs.get("stride_h", 1), attrs.get("stride_w", 1)
    if "explicit_padding" in attrs:  # PAD folded into the operator (passes/fuse_pad.py)
        pad_h, _, pad_w, _ = attrs["explicit_padding"]
    else:
        pad_h = _padding(h, ho, sh, dh, kh, attrs.get("padding", "VALID"))
        pad_w = _padding(w, wo, sw, dw, kw, attrs.get("padding", "VALID"))
    return _window_overlap((n, h, w, c_in), (ho, wo, c_out), (kh, kw), (dh, dw), (sh, sw), (pad_h, pad_w),
                           dtype_bytes(x.type.dtype), dtype_bytes(out.type.dtype))


@lru_cache(maxsize=4096)
def _window_overlap(x_shape: tuple[int, int, int, int], out_shape: tuple[int, int, int], kernel: tuple[int, int],
                    dilation: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int], in_elem: int,
                    out_elem: int) -> int:
    """_window_distance's arithmetic on plain integers, remembered: the fusion stage asks it of the same
    layers for every grouping it weighs."""
    n, h, w, c_in = x_shape
    ho, wo, c_out = out_shape
    (kh, kw), (dh, dw), (sh, sw), (pad_h, pad_w) = kernel, dilation, stride, pad

    # lowest input row / column each output row / column reads (or "none" if all padding)
    def first_valid(out_len: int, in_len: int, stride: int, dil: int, k: int, pad: int) -> np.ndarray:
        # the first tap at or after row 0, k0 = ceil(-start / dil), in closed form: a window of 2**31 taps
        # (a corrupt model) must not become a 2**31-wide array
        starts = np.arange(out_len, dtype=np.int64) * stride - pad
        k0 = np.where(starts >= 0, 0, -(starts // max(dil, 1)))
        first = starts + k0 * dil
        return np.where((k0 < k) & (first < in_len), first, -1)

    rows = first_valid(ho, h, sh, dh, kh, pad_h)
    cols = first_valid(wo, w, sw, dw, kw, pad_w)
    big = np.iinfo(np.int64).max // 4
    pixel_min = (rows[:, None] * w + cols[None, :]).astype(np.int64)
    pixel_min = np.where((rows[:, None] < 0) | (cols[None, :] < 0), big, pixel_min)
    per_batch = pixel_min.reshape(-1)
    batches = np.arange(n, dtype=np.int64)[:, None] * (h * w)
    min_in = (per_batch[None, :] + batches).reshape(-1)
    min_in = np.where(min_in >= big // 2, big, min_in * c_in * in_elem)
    suffix_min = np.minimum.accumulate(min_in[::-1])[::-1]
    out_end = (np.arange(n * ho * wo, dtype=np.int64) + 1) * c_out * out_elem
    return max(0, int((out_end - suffix_min).max()))


def _elementwise_distance(x: Value, out: Value) -> int | None:
    if x.type.num_elements != out.type.num_elements or x.type.shape != out.type.shape:
        return None
    a, b = dtype_bytes(x.type.dtype), dtype_bytes(out.type.dtype)
    # unit e may overlap its own input; it must stay below units e+1.. : D >= (e+1)(b - a)
    return max(0, out.type.num_elements * (b - a))


def overlap_distance(node: Node, x: Value, out: Value) -> int | None:
    """Smallest D >= 0 such that `out` may start D bytes below `x` in this node; None if never."""
    if x.type.num_elements == 0 or out.type.num_elements == 0:
        return None  # an empty tensor has no bytes to share
    # "window": output pixels in NHWC raster order, batch outermost, each reading only its window;
    # "elementwise": y[i] = f(x[i]) in one forward loop, same element count, no restrict pointers
    order = op_info(node.op).inplace
    if order == "window" and x is node.inputs[0]:
        return _window_distance(node, x, out)
    if order == "elementwise":
        return _elementwise_distance(x, out)
    return None
