"""Reference semantics of BATCH_MATMUL, TRANSPOSE_CONV, L2_NORMALIZATION, NORMALIZE, LP_NORMALIZATION, LRN, DET,
CAUSAL_CONV, DEFORM_CONV.

Real-number arithmetic in float64 on dequantized inputs (see reference/evaluate.py), outputs stored
in the outputs' types; int8 L2_NORMALIZATION is the float formula on the output's fixed 1/128 scale.
Conventions as the lowerings (codegen/ops/matmul.py, norm.py): BATCH_MATMUL broadcasts batch axes,
adj_x / adj_y transpose an operand's last two axes; TRANSPOSE_CONV inputs (output_shape, filter OHWI,
input NHWC, bias), output pixel oy = iy * stride - pad + fy * dilation (scatter), groups along
channels; NORMALIZE groups x[..., axis:], scale / bias flat over shape[scale_axes].
"""

from __future__ import annotations

from math import prod

import numpy as np

from nn2c.ir import Node
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays, ReferenceError, real, store


def _inputs(node: Node, arrays: Arrays, positions: tuple[int, ...]) -> list[np.ndarray | None]:
    result: list[np.ndarray | None] = []
    for k in positions:
        value = node.input(k)
        array = arrays[k] if k < len(arrays) else None
        result.append(None if value is None or array is None else real(value, np.asarray(array)))
    return result


def _activation(x: np.ndarray, name: str) -> np.ndarray:
    bounds = {"NONE": (None, None), "RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0),
              "RELU_0_TO_1": (0.0, 1.0)}
    if name not in bounds:
        raise ReferenceError(f"fused activation {name} is not known")
    lo, hi = bounds[name]
    return x if lo is None and hi is None else np.clip(x, lo, hi)


@evaluator("BATCH_MATMUL")
def batch_matmul(node: Node, arrays: Arrays) -> list[np.ndarray]:
    lhs, rhs = _inputs(node, arrays, (0, 1))
    if lhs is None or rhs is None:
        raise ReferenceError("BATCH_MATMUL needs both operands")
    if node.attrs.get("adj_x"):
        lhs = np.swapaxes(lhs, -1, -2)
    if node.attrs.get("adj_y"):
        rhs = np.swapaxes(rhs, -1, -2)
    out = node.outputs[0]
    return [store(out, _activation(np.matmul(lhs, rhs), node.fused_activation))]


def _tconv_pads(node: Node, out_hw: tuple[int, int], k_hw: tuple[int, int], strides: tuple[int, int]) -> tuple[int, int]:
    if "explicit_padding" in node.attrs:
        top, _, left, _ = (int(v) for v in node.attrs["explicit_padding"])
        return top, left
    padding = str(node.attrs.get("padding", "SAME"))
    pads = []
    for image, k, s in zip(out_hw, k_hw, strides, strict=True):
        out_size = (image + s - 1) // s if padding == "SAME" else max(image + s - k, 0) // s
        pads.append(max((out_size - 1) * s + k - image, 0) // 2)
    return pads[0], pads[1]


@evaluator("TRANSPOSE_CONV")
def transpose_conv(node: Node, arrays: Arrays) -> list[np.ndarray]:
    _, w, x, bias = _inputs(node, arrays, (0, 1, 2, 3))
    if w is None or x is None:
        raise ReferenceError("TRANSPOSE_CONV needs its filter and input")
    out = node.outputs[0]
    n, out_h, out_w, out_c = out.type.shape
    _, in_h, in_w, _ = x.shape
    _, kh, kw, depth = w.shape
    groups = int(node.attrs.get("groups", 1))
    strides = (int(node.attrs.get("stride_h", 1)), int(node.attrs.get("stride_w", 1)))
    dil = (int(node.attrs.get("dilation_h_factor", 1)), int(node.attrs.get("dilation_w_factor", 1)))
    pad_h, pad_w = _tconv_pads(node, (out_h, out_w), (kh, kw), strides)
    per_group = out_c // groups
    # scatter into a canvas large enough for every tap, then cut the window
    full_h = (in_h - 1) * strides[0] + (kh - 1) * dil[0] + 1 + pad_h + out_h
    full_w = (in_w - 1) * strides[1] + (kw - 1) * dil[1] + 1 + pad_w + out_w
    canvas = np.zeros((n, full_h, full_w, out_c), dtype=np.float64)
    for g in range(groups):
        xs = x[..., g * depth:(g + 1) * depth]
        ws = w[g * per_group:(g + 1) * per_group]  # [o, kh, kw, i]
        for fy in range(kh):
            for fx in range(kw):
                contribution = np.einsum("nhwi,oi->nhwo", xs, ws[:, fy, fx, :])
                y0, x0 = fy * dil[0], fx * dil[1]
                canvas[:, y0:y0 + (in_h - 1) * strides[0] + 1:strides[0],
                       x0:x0 + (in_w - 1) * strides[1] + 1:strides[1],
                       g * per_group:(g + 1) * per_group] += contribution
    result = canvas[:, pad_h:pad_h + out_h, pad_w:pad_w + out_w, :]
    if bias is not None:
        result = result + bias.reshape(-1)
    return [store(out, _activation(result, node.fused_activation))]


@evaluator("L2_NORMALIZATION")
def l2_normalization(node: Node, arrays: Arrays) -> list[np.ndarray]:
    (x,) = _inputs(node, arrays, (0,))
    if x is None:
        raise ReferenceError("L2_NORMALIZATION needs its input")
    norm = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    with np.errstate(all="ignore"):
        return [store(node.outputs[0], x / np.maximum(norm, 1e-6))]


@evaluator("NORMALIZE")
def normalize(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, scale, bias = _inputs(node, arrays, (0, 1, 2))
    if x is None:
        raise ReferenceError("NORMALIZE needs its input")
    shape = x.shape
    rank = len(shape)
    axis = int(node.attrs.get("axis", -1)) % max(rank, 1)
    eps = float(node.attrs.get("epsilon", 1e-5))
    mode = str(node.attrs.get("mode", "layer"))
    groups = x.reshape(prod(shape[:axis]), -1)
    mean = np.zeros((groups.shape[0], 1)) if mode == "rms" else groups.mean(axis=1, keepdims=True)
    var = np.mean((groups - mean) ** 2, axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        inv = 1.0 / (np.sqrt(var) + eps) if mode == "mvn" else 1.0 / np.sqrt(var + eps)
    y = ((groups - mean) * inv).reshape(shape)
    first, last = (int(a) for a in node.attrs.get("scale_axes", (axis, rank - 1)))
    affine_shape = [1] * first + list(shape[first:last + 1]) + [1] * (rank - last - 1)
    if scale is not None:
        y = y * scale.reshape(affine_shape)
    if bias is not None:
        y = y + bias.reshape(affine_shape)
    results = [store(node.outputs[0], y)]
    for k, stat in ((1, mean), (2, inv)):
        if k < len(node.outputs):
            results.append(store(node.outputs[k], stat))
    return results


@evaluator("LP_NORMALIZATION")
def lp_normalization(node: Node, arrays: Arrays) -> list[np.ndarray]:
    (x,) = _inputs(node, arrays, (0,))
    if x is None:
        raise ReferenceError("LP_NORMALIZATION needs its input")
    axis = int(node.attrs.get("axis", -1))
    p = int(node.attrs.get("p", 2))
    norm = np.sum(np.abs(x), axis=axis, keepdims=True) if p == 1 else np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    with np.errstate(all="ignore"):
        return [store(node.outputs[0], np.where(norm == 0, 0.0, x / norm))]


@evaluator("LRN")
def _lrn(node: Node, arrays: Arrays) -> list[np.ndarray]:
    """y = x / (bias + alpha / size * sum of x^2 over channels [c - (size-1)//2, c + ceil((size-1)/2)])^beta,
    the channels being axis 1 (ONNX LRN, as onnxruntime computes it)."""
    x = np.asarray(arrays[0], dtype=np.float64)
    a = node.attrs
    size, alpha, beta, bias = int(a["size"]), float(a.get("alpha", 1e-4)), float(a.get("beta", 0.75)), \
        float(a.get("bias", 1.0))
    below, above = (size - 1) // 2, size - 1 - (size - 1) // 2
    squares = x * x
    total = np.zeros_like(x)
    channels = x.shape[1]
    for c in range(channels):
        total[:, c] = squares[:, max(0, c - below):min(channels, c + above + 1)].sum(axis=1)
    return [(x / (bias + alpha / size * total) ** beta).astype(np.float32)]


@evaluator("DET")
def _det(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = np.asarray(arrays[0], dtype=np.float64)
    return [np.asarray(np.linalg.det(x)).astype(np.float32).reshape(node.outputs[0].type.shape)]


@evaluator("CAUSAL_CONV")
def _causal_conv(node: Node, arrays: Arrays) -> list[np.ndarray]:
    """y[b, c, t] = bias[c] + sum_j w[c, 0, j] * p[b, c, t + j] with p = past_state (or zeros) then x,
    SiLU-activated when asked; present_state = the last K - 1 positions of p."""
    x, w = (np.asarray(arrays[i], dtype=np.float64) for i in (0, 1))
    batch, channels, length = x.shape
    k = w.shape[-1]
    past = arrays[3] if len(arrays) > 3 else None
    past64 = np.zeros((batch, channels, k - 1)) if past is None else np.asarray(past, dtype=np.float64)
    padded = np.concatenate([past64, x], axis=2)
    y = np.zeros_like(x)
    for j in range(k):
        y += w[:, 0, j][None, :, None] * padded[:, :, j:j + length]
    bias = arrays[2] if len(arrays) > 2 else None
    if bias is not None:
        y += np.asarray(bias, dtype=np.float64)[None, :, None]
    if node.attrs.get("activation", "none") == "silu":
        y = y / (1.0 + np.exp(-y))
    return [y.astype(np.float32), padded[:, :, length:].astype(np.float32).reshape(node.outputs[1].type.shape)]


def bilinear_zero_padded(image: np.ndarray, h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """image [H, W] sampled at real coordinates (h, w): bilinear, corners outside the image read 0."""
    height, width = image.shape
    h0, w0 = np.floor(h), np.floor(w)
    result = np.zeros(np.shape(h), dtype=np.float64)
    for dh in (0, 1):
        for dw in (0, 1):
            hh, ww = h0 + dh, w0 + dw
            weight = (1.0 - np.abs(h - hh)) * (1.0 - np.abs(w - ww))
            inside = (hh >= 0) & (hh < height) & (ww >= 0) & (ww < width)
            hi = np.clip(hh, 0, height - 1).astype(np.int64)
            wi = np.clip(ww, 0, width - 1).astype(np.int64)
            result += np.where(inside, weight * image[hi, wi], 0.0)
    return result


@evaluator("DEFORM_CONV")
def _deform_conv(node: Node, arrays: Arrays) -> list[np.ndarray]:
    """y[n, o, i, j] = bias[o] + sum over the group's channels c and taps (a, b) of
    w[o, c, a, b] * mask * x[n, c] sampled at (i sh - pt + a dh + dy, j sw - pl + b dw + dx), with
    (dy, dx) and mask those of c's offset group at (i, j): bilinear, zero outside (ONNX DeformConv)."""
    x, w, offset = (np.asarray(arrays[i], dtype=np.float64) for i in range(3))
    bias = arrays[3] if len(arrays) > 3 else None
    mask = arrays[4] if len(arrays) > 4 else None
    a = node.attrs
    (sh, sw), (pt, pl), (dh, dw) = a["strides"], a["pads"][:2], a["dilations"]
    group, offset_group = int(a["group"]), int(a["offset_group"])
    n, channels = x.shape[:2]
    oc, cpg, kh, kw = w.shape
    oh, ow = offset.shape[2:]
    offsets = offset.reshape(n, offset_group, kh, kw, 2, oh, ow)
    masks = (np.ones((n, offset_group, kh, kw, oh, ow)) if mask is None
             else np.asarray(mask, dtype=np.float64).reshape(n, offset_group, kh, kw, oh, ow))
    y = np.zeros((n, oc, oh, ow))
    if bias is not None:
        y += np.asarray(bias, dtype=np.float64).reshape(1, -1, 1, 1)
    rows = (np.arange(oh) * sh - pt)[:, None]
    cols = (np.arange(ow) * sw - pl)[None, :]
    per_offset_group = channels // offset_group
    for b in range(n):
        for c in range(channels):
            g, og = c // cpg, c // per_offset_group
            for i in range(kh):
                for j in range(kw):
                    h = rows + i * dh + offsets[b, og, i, j, 0]
                    ww = cols + j * dw + offsets[b, og, i, j, 1]
                    sample = bilinear_zero_padded(x[b, c], h, ww) * masks[b, og, i, j]
                    outs = range(g * (oc // group), (g + 1) * (oc // group))
                    for o in outs:
                        y[b, o] += w[o, c % cpg, i, j] * sample
    return [y.astype(np.float32)]
