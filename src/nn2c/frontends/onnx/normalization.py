"""Normalisations.

BatchNormalization (inference) -> MUL and ADD by per-channel constants (with statistics computed at
run time: SUB, MUL by gamma * RSQRT(var + eps), ADD):
y = gamma * (x - mean) / sqrt(var + eps) + beta = x * s + t with s = gamma / sqrt(var + eps) and
t = beta - mean * s, computed in float64 and stored as float32 of shape [C, 1, ...] (broadcast
over the spatial axes of the channels-first tensor). passes/fold_affine.py merges the pair into a
neighbouring conv or fully connected layer.

The statistics normalisations become ONE fused NORMALIZE node each (kernels/nn2c_norm.c), whose
groups are the trailing axes x[..., axis:] and whose scale / bias are flat vectors indexed over
shape[scale_axes]:
- LayerNormalization(X, Scale, B; axis, epsilon): groups X[..., axis:], scale / bias per element
  of the group (a smaller broadcastable scale is expanded when constant); the optional Mean and
  InvStdDev outputs are the kernel's per-group statistics.
- RMSNormalization (opset 23): as LayerNormalization, x / sqrt(mean(x^2) + eps), no bias.
- InstanceNormalization(x, scale[C], B[C]): groups x[n, c, ...], per channel scale / bias.
- GroupNormalization(X, scale, bias; num_groups): X reshaped to [N, G, C / G, ...], groups
  X[n, g, ...]; scale of C values (opset 21) per channel, of G values (opset 18) per group.
- MeanVarianceNormalization(axes): the axes transposed to the end, (x - mean) / (sqrt(var) + 1e-9).
LpNormalization(axis, p) -> LP_NORMALIZATION: x / ||x||_p (p = 1 or 2).
LRN(size, alpha, beta, bias) -> LRN across axis 1 (float32, rank 3 or more).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import ConversionContext, converts, invalid, unsupported
from nn2c.ir import Value


@converts("BatchNormalization")
def _batch_norm(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if a.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        raise unsupported("BatchNormalization in training mode")
    if any(c.data(c.optional(node, i)) is None for i in range(1, 5)):
        _batch_norm_runtime(c, node, x, float(a.get("epsilon", 1e-5)))
        return
    gamma, beta, mean, var = (c.const_input(node, i, n).astype(np.float64) for i, n in
                              ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")))
    eps = float(a.get("epsilon", 1e-5))
    if not np.all(var + eps > 0):
        raise invalid(f"variance + epsilon must be positive (epsilon {eps:g}, smallest variance {var.min():g})")
    s = gamma / np.sqrt(var + eps)
    t = beta - mean * s
    shape = (x.type.shape[1], *([1] * (len(x.type.shape) - 2)))
    name = node.output[0]
    scaled = c.new(f"{name}/scaled", "float32", x.type.shape)
    c.emit("MUL", [x, c.const(s.astype(np.float32).reshape(shape), f"{name}/bn_scale")], [scaled],
           {"fused_activation_function": "NONE"})
    out = c.output(node)
    c.emit("ADD", [scaled, c.const(t.astype(np.float32).reshape(shape), f"{name}/bn_shift")], [out],
           {"fused_activation_function": "NONE"})


def _batch_norm_runtime(c: ConversionContext, node: Any, x: Value, eps: float) -> None:
    """Statistics computed at run time: y = (x - mean) * (gamma * rsqrt(var + eps)) + beta, the
    [C] vectors reshaped to [C, 1, ...] to broadcast over the spatial axes."""
    name = node.output[0]
    shape = (x.type.shape[1], *([1] * (len(x.type.shape) - 2)))
    vectors = []
    for i, what in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")):
        value = c.optional(node, i)
        if value is None or value.type.dtype != "float32" or value.type.num_elements != shape[0]:
            raise invalid(f"the {what} input must hold {shape[0]} float32 values")
        vectors.append(c.reshape(value, shape, f"{name}/{what}"))
    gamma, beta, mean, var = vectors

    def step(op: str, inputs: list[Value], label: str, out_shape: tuple[int, ...] = shape) -> Value:
        out = c.new(f"{name}/{label}", "float32", out_shape)
        c.emit(op, inputs, [out], None if op == "RSQRT" else {"fused_activation_function": "NONE"})
        return out

    shifted_var = step("ADD", [var, c.const(np.array(eps, dtype=np.float32), f"{name}/epsilon")], "var_eps")
    factor = step("MUL", [gamma, step("RSQRT", [shifted_var], "rstd")], "factor")
    centred = step("SUB", [x, mean], "centred", x.type.shape)
    scaled = step("MUL", [centred, factor], "scaled", x.type.shape)
    c.emit("ADD", [scaled, beta], [c.output(node, 0, "float32", x.type.shape)], {"fused_activation_function": "NONE"})


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise invalid(f"{what} {axis} is out of range for a rank-{rank} input")
    return axis % rank


def _flat_affine(c: ConversionContext, value: Value | None, shape: Sequence[int], name: str) -> Value | None:
    """A scale / bias as a flat float32 vector over `shape` (a broadcastable constant is expanded)."""
    if value is None:
        return None
    if value.type.dtype != "float32":
        raise unsupported(f"{value.type.dtype} scale / bias {value.name!r} (float32 is supported)")
    size = prod(shape)
    if value.type.num_elements == size:  # the same values in the same order (GroupNorm's [C] over [G, C / G])
        return value if len(value.type.shape) == 1 else c.reshape(value, (size,), name)
    data = c.data(value)
    if data is None:
        raise unsupported(f"a run-time scale / bias {list(value.type.shape)} broadcast over {list(shape)}")
    try:
        expanded = np.broadcast_to(np.asarray(data, dtype=np.float32), tuple(shape))
    except ValueError:
        raise invalid(f"scale / bias {list(value.type.shape)} does not broadcast to {list(shape)}") from None
    return c.const(np.ascontiguousarray(expanded).reshape(-1), name)


def _normalize(c: ConversionContext, node: Any, x: Value, mode: str, axis: int, epsilon: float,
               scale: Value | None, bias: Value | None, scale_axes: tuple[int, int], out: Value | None = None,
               stats: Sequence[Value] = ()) -> None:
    """One NORMALIZE node; out defaults to the node's first output."""
    shape = x.type.shape
    name = node.output[0]
    first, last = scale_axes
    affine_shape = shape[first:last + 1]
    inputs = [x, _flat_affine(c, scale, affine_shape, f"{name}/scale"),
              _flat_affine(c, bias, affine_shape, f"{name}/bias")]
    # the output has the input's shape: ONNX shape inference does not always type function ops
    result = out if out is not None else c.output(node, 0, "float32", shape)
    c.emit("NORMALIZE", inputs, [result, *stats],
           {"axis": axis, "epsilon": epsilon, "mode": mode, "scale_axes": (first, last)})


@converts("LayerNormalization", "RMSNormalization")
def _layer_norm(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if x.type.dtype != "float32":
        raise unsupported(f"{node.op_type} of {x.type.dtype} (float32 is supported)")
    rank = len(x.type.shape)
    axis = _axis(int(a.get("axis", -1)), rank, "axis")
    rms = node.op_type == "RMSNormalization"
    stat_shape = (*x.type.shape[:axis], *([1] * (rank - axis)))
    stats = [c.output(node, k, "float32", stat_shape) for k in (1, 2)
             if not rms and k < len(node.output) and node.output[k]]
    if len(stats) == 1 and node.output[1] == "":  # InvStdDev without Mean: the kernel writes both
        stats = [c.new(f"{node.output[0]}/mean", "float32", stat_shape), *stats]
    y = c.output(node, 0, "float32", x.type.shape)
    bias = None if rms else c.optional(node, 2)
    _normalize(c, node, x, "rms" if rms else "layer", axis, float(a.get("epsilon", 1e-5)), c.optional(node, 1),
               bias, (axis, rank - 1), y, stats)


@converts("InstanceNormalization")
def _instance_norm(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if len(x.type.shape) < 3:
        raise unsupported("InstanceNormalization of an input without spatial axes")
    _normalize(c, node, x, "layer", 2, float(a.get("epsilon", 1e-5)), c.optional(node, 1), c.optional(node, 2),
               (1, 1))


@converts("GroupNormalization")
def _group_norm(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if len(x.type.shape) < 2:
        raise invalid("GroupNormalization needs an input [N, C, ...]")
    n, channels, *rest = x.type.shape
    groups = int(a.get("num_groups", 0))
    if groups < 1 or channels % groups:
        raise invalid(f"num_groups {groups} does not divide the {channels} channels")
    scale, bias = c.optional(node, 1), c.optional(node, 2)
    per_channel = scale is None or scale.type.num_elements == channels
    name = node.output[0]
    grouped = c.reshape(x, (n, groups, channels // groups, prod(rest)), f"{name}/groups")
    y = c.new(f"{name}/normalized", "float32", grouped.type.shape)
    _normalize(c, node, grouped, "layer", 2, float(a.get("epsilon", 1e-5)), scale, bias,
               (1, 2) if per_channel else (1, 1), y)
    out = c.output(node, 0, "float32", x.type.shape)
    c.emit("RESHAPE", [y, c.int32(list(out.type.shape), f"{name}/shape")], [out])


@converts("MeanVarianceNormalization")
def _mvn(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    rank = len(x.type.shape)
    axes = sorted({_axis(int(v), rank, "axis") for v in a.get("axes", [0, 2, 3])})
    kept = [d for d in range(rank) if d not in axes]
    perm = (*kept, *axes)
    name = node.output[0]
    if perm == tuple(range(rank)):
        _normalize(c, node, x, "mvn", len(kept), 1e-9, None, None, (0, 0))
        return
    moved = c.transpose(x, perm, f"{name}/moved")
    y = c.new(f"{name}/normalized", "float32", moved.type.shape)
    _normalize(c, node, moved, "mvn", len(kept), 1e-9, None, None, (0, 0), y)
    inverse = [perm.index(d) for d in range(rank)]
    c.emit("TRANSPOSE", [y, c.int32(inverse, f"{name}/perm")], [c.output(node, 0, "float32", x.type.shape)])


@converts("LpNormalization")
def _lp_norm(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    p = int(a.get("p", 2))
    if p not in (1, 2):
        raise invalid(f"LpNormalization p = {p} (ONNX allows 1 and 2)")
    axis = _axis(int(a.get("axis", -1)), len(x.type.shape), "axis")
    c.emit("LP_NORMALIZATION", [x], [c.output(node, 0, "float32", x.type.shape)], {"axis": axis, "p": p})


@converts("LRN")
def _lrn(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if x.type.dtype != "float32":
        raise unsupported(f"LRN of {x.type.dtype} (float32 is supported)")
    if len(x.type.shape) < 3:
        raise invalid(f"LRN of a rank-{len(x.type.shape)} input; it needs [N, C, D1, ...]")
    if "size" not in a or not 1 <= int(a["size"]) <= 1 << 16:
        raise invalid(f"size={a.get('size')}; LRN needs a positive size attribute (the channels summed, at most "
                      "65536)")
    attrs = {"size": int(a["size"]), "alpha": float(a.get("alpha", 1e-4)), "beta": float(a.get("beta", 0.75)),
             "bias": float(a.get("bias", 1.0))}
    c.emit("LRN", [x], [c.output(node, 0, "float32", x.type.shape)], attrs)
