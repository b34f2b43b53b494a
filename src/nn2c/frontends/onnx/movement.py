"""Indexing, rearranging and resizing: DepthToSpace, SpaceToDepth, Resize / Upsample, Tile, Expand,
GatherElements, GatherND, Compress, CumSum, OneHot, Range, EyeLike, Trilu, ReverseSequence,
ScatterND, ScatterElements, TensorScatter, MaxUnpool.

- DepthToSpace / SpaceToDepth (NCHW) -> RESHAPE to 6-D, TRANSPOSE, RESHAPE (one strided copy):
  DCR splits the channels as [b, b, C'], CRD as [C', b, b].
- Resize (opset 10+) / Upsample -> RESIZE (float32): scales per axis (from `scales`, constant or
  run-time, or from constant `sizes` as sizes / input, keep_aspect_ratio_policy applied), roi for
  tf_crop_and_resize; opset 10 and Upsample are asymmetric + floor. antialias (linear / cubic,
  float32) widens the filter by 1 / scale when downsampling, as onnx's reference does.
- Tile -> TILE, Expand -> BROADCAST_TO (output shape from shape inference); GatherElements /
  GatherND -> GATHER_ELEMENTS / GATHER_ND: one index map with constant indices, a run-time index
  kernel otherwise (negative indices wrap).
- Compress: constant condition -> GATHER of the kept indices; a run-time one -> COMPRESS when the
  output size is static (the count of true entries must equal it), else refused (data-dependent).
- CumSum -> CUMSUM, CumProd -> CUMPROD (a run-time axis is read by the kernel). OneHot -> ONE_HOT (depth from the
  output shape). Range -> a constant when its inputs are, else RANGE with the static length.
- EyeLike -> a constant. Trilu and ReverseSequence with constant k / lengths -> INDEX_MAP;
  ReverseSequence with run-time lengths -> REVERSE_SEQUENCE.
- ScatterND / ScatterElements (reduction none) with constant indices -> CONCATENATION of the
  flattened data and updates, then INDEX_MAP (run-time data and updates); with run-time indices or a
  reduction (add, mul, max, min) -> SCATTER_ND_UPDATE / SCATTER_ELEMENTS.
- TensorScatter (KV-cache write) -> TENSOR_SCATTER.
- MaxUnpool -> SCATTER_ND_UPDATE of the values into zeros of the output's size at the flat
  positions the indices give (MaxPool's Indices output); the output shape from shape inference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import ConversionContext, converts, invalid, unsupported
from nn2c.ir import Value


def _blocks(c: ConversionContext, node: Any, a: dict[str, Any]) -> tuple[Value, int, bool]:
    x = c.value(node.input[0])
    if len(x.type.shape) != 4:
        raise unsupported(f"{node.op_type} of a rank-{len(x.type.shape)} input (4-D NCHW is supported)")
    block = int(a.get("blocksize", 0))
    if block < 1:
        raise invalid(f"blocksize {block}")
    mode = a.get("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("DCR", "CRD"):
        raise invalid(f"mode {mode!r}")
    return x, block, mode == "CRD"


def _reshape_transpose_reshape(c: ConversionContext, node: Any, x: Value, shape6: list[int], perm: list[int]) -> None:
    name = node.output[0]
    inner = c.reshape(x, shape6, f"{name}/6d")
    moved = c.transpose(inner, perm, f"{name}/moved")
    _, out_shape = c.out_type(name)
    out = c.output(node, quant=x.type.quant)
    if math.prod(out_shape) != moved.type.num_elements:
        raise invalid(f"output shape {list(out_shape)} does not hold {moved.type.num_elements} elements")
    c.emit("RESHAPE", [moved, c.int32(list(out.type.shape), f"{name}/shape")], [out],
           {"new_shape": list(out.type.shape)})


@converts("DepthToSpace")
def _depth_to_space(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, b, crd = _blocks(c, node, a)
    n, ch, h, w = x.type.shape
    if ch % (b * b):
        raise invalid(f"{ch} channels are not a multiple of blocksize^2 = {b * b}")
    cs = ch // (b * b)
    if crd:
        _reshape_transpose_reshape(c, node, x, [n, cs, b, b, h, w], [0, 1, 4, 2, 5, 3])
    else:
        _reshape_transpose_reshape(c, node, x, [n, b, b, cs, h, w], [0, 3, 4, 1, 5, 2])


@converts("SpaceToDepth")
def _space_to_depth(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, b, crd = _blocks(c, node, a)
    n, ch, h, w = x.type.shape
    if h % b or w % b:
        raise invalid(f"spatial size {h}x{w} is not a multiple of blocksize {b}")
    perm = [0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4]
    _reshape_transpose_reshape(c, node, x, [n, ch, h // b, b, w // b, b], perm)


# --- Resize / Upsample -----------------------------------------------------------------------------
COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _text(a: dict[str, Any], key: str, default: str) -> str:
    value = a.get(key, default)
    return value.decode() if isinstance(value, bytes) else str(value)


def _resize_scales(c: ConversionContext, node: Any, a: dict[str, Any], x: Value, out_shape: tuple[int, ...],
                   scales_at: int, sizes_at: int | None) -> tuple[Value, list[int]]:
    """The scales value and, per input axis, its position in it (-1: scale 1)."""
    rank = len(x.type.shape)
    axes = [int(v) % rank for v in a.get("axes", range(rank))]
    scales_v = c.optional(node, scales_at)
    if scales_v is not None and scales_v.type.num_elements == 0:
        scales_v = None
    name = node.output[0]
    if scales_v is not None:
        if scales_v.type.num_elements != len(axes):
            raise invalid(f"{scales_v.type.num_elements} scales for {len(axes)} axes")
        data = c.data(scales_v)
        if data is None:
            if scales_v.type.dtype != "float32":
                raise unsupported(f"run-time scales of type {scales_v.type.dtype}")
            return scales_v, [axes.index(d) if d in axes else -1 for d in range(rank)]
        full = np.ones(rank, dtype=np.float32)
        full[axes] = np.asarray(data, dtype=np.float32).reshape(-1)
        return c.const(full, f"{name}/scales"), list(range(rank))
    sizes_v = c.optional(node, sizes_at) if sizes_at is not None else None
    if sizes_v is None:
        raise invalid("neither scales nor sizes is given")
    sizes = np.asarray(c.const_input(node, sizes_at, "sizes"), dtype=np.float64).reshape(-1)  # type: ignore[arg-type]
    ratios = sizes / np.asarray([x.type.shape[d] for d in axes], dtype=np.float64)
    policy = _text(a, "keep_aspect_ratio_policy", "stretch")
    if policy == "not_larger":
        ratios[:] = ratios.min()
    elif policy == "not_smaller":
        ratios[:] = ratios.max()
    full = np.ones(rank, dtype=np.float32)
    full[axes] = ratios.astype(np.float32)
    return c.const(full, f"{name}/scales"), list(range(rank))


def _emit_resize(c: ConversionContext, node: Any, x: Value, scales: Value, scale_axes: list[int],
                 roi: Value | None, attrs: dict[str, Any]) -> None:
    if x.type.dtype != "float32" and (attrs["mode"] != "nearest" or scales.data is None):
        raise unsupported(f"{node.op_type} of {x.type.dtype} in mode {attrs['mode']} (float32 is supported; other "
                          "types in nearest mode with constant scales)")
    out = c.output(node, quant=x.type.quant)
    if len(out.type.shape) != len(x.type.shape):
        raise invalid(f"output rank {len(out.type.shape)} differs from the input's")
    c.emit("RESIZE", [x, scales, roi], [out], {**attrs, "scale_axes": scale_axes})


@converts("Resize")
def _resize(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    mode = _text(a, "mode", "nearest")
    if int(a.get("antialias", 0)) and x.type.dtype != "float32":
        raise unsupported(f"antialias of {x.type.dtype} (float32 is supported)")
    if mode not in ("nearest", "linear", "cubic"):
        raise invalid(f"mode {mode!r}")
    _, out_shape = c.out_type(node.output[0])
    if c.opset < 11:
        scales, scale_axes = _resize_scales(c, node, a, x, out_shape, 1, None)
        attrs: dict[str, Any] = {"mode": mode, "coord": "asymmetric", "nearest_mode": "floor"}
        _emit_resize(c, node, x, scales, scale_axes, None, attrs)
        return
    coord = _text(a, "coordinate_transformation_mode", "half_pixel")
    nearest = _text(a, "nearest_mode", "round_prefer_floor")
    if coord not in COORD_MODES:
        raise unsupported(f"coordinate_transformation_mode {coord!r}")
    if nearest not in NEAREST_MODES:
        raise unsupported(f"nearest_mode {nearest!r}")
    scales, scale_axes = _resize_scales(c, node, a, x, out_shape, 2, 3)
    roi: Value | None = None
    if coord == "tf_crop_and_resize":
        roi_v = c.optional(node, 1)
        rank = len(x.type.shape)
        axes = [int(v) % rank for v in a.get("axes", range(rank))]
        data = np.asarray(c.const_input(node, 1, "roi"), dtype=np.float32).reshape(-1)
        if roi_v is None or data.size != 2 * len(axes):
            raise invalid("tf_crop_and_resize needs a roi of 2 values per axis")
        full = np.concatenate([np.zeros(rank, np.float32), np.ones(rank, np.float32)])
        for k, d in enumerate(axes):
            full[d], full[d + rank] = data[k], data[k + len(axes)]
        roi = c.const(full, f"{node.output[0]}/roi")
    attrs = {"mode": mode, "coord": coord, "nearest_mode": nearest, "cubic_a": float(a.get("cubic_coeff_a", -0.75)),
             "exclude_outside": bool(int(a.get("exclude_outside", 0))),
             "extrapolation_value": float(a.get("extrapolation_value", 0.0)),
             "antialias": bool(int(a.get("antialias", 0))) and mode != "nearest"}
    _emit_resize(c, node, x, scales, scale_axes, roi, attrs)


@converts("Upsample")
def _upsample(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    mode = _text(a, "mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        raise invalid(f"mode {mode!r}")
    if "scales" in a:
        scales = c.const(np.asarray(a["scales"], dtype=np.float32), f"{node.output[0]}/scales")
        scale_axes = list(range(len(x.type.shape)))
    else:
        scales, scale_axes = _resize_scales(c, node, {}, x, (), 1, None)
    attrs = {"mode": "nearest" if mode == "nearest" else "linear", "coord": "asymmetric", "nearest_mode": "floor"}
    _emit_resize(c, node, x, scales, scale_axes, None, attrs)


# --- broadcasting and gathers ----------------------------------------------------------------------
@converts("Tile")
def _tile(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    repeats = [int(v) for v in c.const_input(node, 1, "repeats").reshape(-1)]
    if len(repeats) != len(x.type.shape) or any(r < 0 for r in repeats):
        raise invalid(f"repeats {repeats} for a rank-{len(x.type.shape)} input")
    shape = [d * r for d, r in zip(x.type.shape, repeats, strict=True)]
    out = c.output(node, dtype=x.type.dtype, shape=shape, quant=x.type.quant)
    c.emit("TILE", [x, c.int32(repeats, f"{out.name}/repeats")], [out])


@converts("Expand")
def _expand(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    target = [int(v) for v in c.const_input(node, 1, "shape").reshape(-1)]
    try:
        shape = list(np.broadcast_shapes(tuple(x.type.shape), tuple(target)))
    except ValueError:
        raise invalid(f"cannot expand {list(x.type.shape)} to {target}") from None
    out = c.output(node, dtype=x.type.dtype, shape=shape, quant=x.type.quant if not x.type.quant or not x.type.quant.per_channel else None)
    c.emit("BROADCAST_TO", [x, c.int32(shape, f"{out.name}/shape")], [out])


def _const_indices(c: ConversionContext, node: Any, i: int) -> np.ndarray | None:
    data = c.data(c.optional(node, i))
    return None if data is None else np.asarray(data)


@converts("GatherElements")
def _gather_elements(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    indices = _const_indices(c, node, 1)
    axis = int(a.get("axis", 0)) % max(len(x.type.shape), 1)
    if indices is None:
        idx_v = c.value(node.input[1])
        out = c.output(node, dtype=x.type.dtype, shape=list(idx_v.type.shape), quant=x.type.quant)
        c.emit("GATHER_ELEMENTS", [x, idx_v], [out], {"axis": axis})
        return
    n = x.type.shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise invalid(f"an index is outside [-{n}, {n})")
    out = c.output(node, dtype=x.type.dtype, shape=list(indices.shape), quant=x.type.quant)
    c.emit("GATHER_ELEMENTS", [x, c.int32(indices.astype(np.int32), f"{out.name}/indices")], [out], {"axis": axis})


@converts("GatherND")
def _gather_nd(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    batch_dims = int(a.get("batch_dims", 0))
    indices = _const_indices(c, node, 1)
    out = c.output(node, quant=x.type.quant)
    if indices is None:
        c.emit("GATHER_ND", [x, c.value(node.input[1])], [out], {"batch_dims": batch_dims, "wrap_negative": True})
        return
    depth = indices.shape[-1]
    lead = x.type.shape[batch_dims:batch_dims + depth]
    if np.any((indices < -np.asarray(lead)) | (indices >= np.asarray(lead))):
        raise invalid("an index is outside its axis")
    c.emit("GATHER_ND", [x, c.int32(indices.astype(np.int32), f"{out.name}/indices")], [out],
           {"batch_dims": batch_dims})


# --- Compress, CumSum, OneHot, Range, EyeLike --------------------------------------------------------
@converts("Compress")
def _compress(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    condition = _const_indices(c, node, 1)
    axis = a.get("axis")
    if condition is not None:
        source = x if axis is not None else c.reshape(x, [x.type.num_elements], f"{node.output[0]}/flat")
        ax = int(axis) % len(x.type.shape) if axis is not None else 0
        kept = np.nonzero(condition.reshape(-1)[:source.type.shape[ax]])[0].astype(np.int32)
        shape = list(source.type.shape)
        shape[ax] = len(kept)
        out = c.output(node, dtype=x.type.dtype, shape=shape, quant=x.type.quant)
        c.emit("GATHER", [source, c.int32(kept, f"{out.name}/indices")], [out], {"axis": ax, "batch_dims": 0})
        return
    if node.output[0] not in c.types:
        raise unsupported("Compress with a run-time condition has a data-dependent output shape")
    out = c.output(node, quant=x.type.quant)
    attrs = {} if axis is None else {"axis": int(axis) % len(x.type.shape)}
    c.emit("COMPRESS", [x, c.value(node.input[1])], [out], attrs)


@converts("CumSum", "CumProd")
def _cumsum(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, axis = c.value(node.input[0]), c.value(node.input[1])
    data = c.data(axis)
    if data is not None:
        axis = c.int32(np.asarray(data).reshape(-1)[:1], f"{node.output[0]}/axis")
    op = {"CumSum": "CUMSUM", "CumProd": "CUMPROD"}[node.op_type]
    c.emit(op, [x, axis], [c.output(node)], {"exclusive": bool(int(a.get("exclusive", 0))),
                                             "reverse": bool(int(a.get("reverse", 0)))})


@converts("OneHot")
def _one_hot(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    indices, depth, values = (c.value(n) for n in node.input[:3])
    out = c.output(node)
    axis = int(a.get("axis", -1)) % len(out.type.shape)
    c.emit("ONE_HOT", [indices, depth, values], [out], {"axis": axis})


@converts("Range")
def _range(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    start, limit, delta = (c.value(n) for n in node.input[:3])
    known = [c.data(v) for v in (start, limit, delta)]
    if all(k is not None for k in known):
        s, lim, d = (np.asarray(k).reshape(-1)[0] for k in known)
        if d == 0:
            raise invalid("Range with delta 0")
        count = max(math.ceil((lim - s) / d), 0)
        array = (s + np.arange(count) * d).astype(np.asarray(known[0]).dtype)
        c.values[node.output[0]] = c.const(array, node.output[0])
        return
    if node.output[0] not in c.types:
        raise unsupported("Range of run-time values has a data-dependent output shape")
    c.emit("RANGE", [start, limit, delta], [c.output(node)])


@converts("EyeLike")
def _eye_like(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if len(x.type.shape) != 2:
        raise invalid(f"EyeLike of a rank-{len(x.type.shape)} input (2-D is required)")
    dtype, _ = c.out_type(node.output[0])
    from nn2c.ir import numpy_dtype

    eye = np.eye(x.type.shape[0], x.type.shape[1], k=int(a.get("k", 0)), dtype=numpy_dtype(dtype))
    c.values[node.output[0]] = c.const(eye, node.output[0])


# --- Trilu, ReverseSequence: one full index map --------------------------------------------------------
def _index_map(c: ConversionContext, node: Any, x: Value, offsets: np.ndarray) -> None:
    out = c.output(node, quant=x.type.quant)
    c.emit("INDEX_MAP", [x, c.int32(offsets.astype(np.int32).reshape(out.type.shape), f"{out.name}/map")], [out])


@converts("Trilu")
def _trilu(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if len(x.type.shape) < 2:
        raise invalid("Trilu needs a rank >= 2 input")
    k_v = c.optional(node, 1)
    k = int(np.asarray(c.const_input(node, 1, "k")).reshape(-1)[0]) if k_v is not None else 0
    rows, cols = x.type.shape[-2:]
    mask = np.triu(np.ones((rows, cols), bool), k) if int(a.get("upper", 1)) else np.tril(np.ones((rows, cols), bool), k)
    offsets = np.arange(x.type.num_elements).reshape(x.type.shape)
    _index_map(c, node, x, np.where(np.broadcast_to(mask, x.type.shape), offsets, -1))


@converts("ReverseSequence")
def _reverse_sequence(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    batch_axis, time_axis = int(a.get("batch_axis", 1)), int(a.get("time_axis", 0))
    shape = x.type.shape
    if len(shape) < 2 or {batch_axis, time_axis} != {0, 1}:
        raise invalid(f"batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1 (in either order) of a "
                      f"rank >= 2 input, got rank {len(shape)}")
    lengths_v = c.value(node.input[1])
    if lengths_v.type.num_elements != shape[batch_axis]:
        raise invalid(f"sequence_lens holds {lengths_v.type.num_elements} values for a batch of {shape[batch_axis]}")
    if c.data(lengths_v) is None:
        out = c.output(node, dtype=x.type.dtype, shape=shape, quant=x.type.quant)
        c.emit("REVERSE_SEQUENCE", [x, lengths_v], [out], {"seq_dim": time_axis, "batch_dim": batch_axis})
        return
    lengths = np.asarray(c.const_input(node, 1, "sequence_lens")).reshape(-1).astype(np.int64)
    idx = np.indices(shape)
    t, b = idx[time_axis], idx[batch_axis]
    length = lengths[b]
    source_t = np.where(t < length, length - 1 - t, t)
    idx[time_axis] = source_t
    offsets = np.ravel_multi_index(tuple(idx), shape)
    _index_map(c, node, x, offsets)


# --- ScatterND / ScatterElements with constant indices -------------------------------------------
def _scatter(c: ConversionContext, node: Any, a: dict[str, Any], positions: np.ndarray) -> None:
    """out = data with out.flat[positions[k]] = updates.flat[k]: one INDEX_MAP over the flattened
    data and updates, concatenated (later updates win on repeated positions)."""
    data, updates = c.value(node.input[0]), c.value(node.input[2])
    if data.type.dtype != updates.type.dtype or data.type.quant != updates.type.quant:
        raise unsupported("data and updates of different types or quantization")
    n, name = data.type.num_elements, node.output[0]
    flat = c.new(f"{name}/both", data.type.dtype, (n + updates.type.num_elements,), data.type.quant)
    c.emit("CONCATENATION", [c.reshape(data, [n], f"{name}/data"),
                             c.reshape(updates, [updates.type.num_elements], f"{name}/updates")], [flat],
           {"axis": 0, "fused_activation_function": "NONE"})
    table = np.arange(n, dtype=np.int64)
    table[positions.reshape(-1)] = n + np.arange(positions.size)
    out = c.output(node, dtype=data.type.dtype, shape=data.type.shape, quant=data.type.quant)
    c.emit("INDEX_MAP", [flat, c.int32(table.astype(np.int32).reshape(out.type.shape), f"{name}/map")], [out])


def _scatter_indices(c: ConversionContext, node: Any, a: dict[str, Any]) -> np.ndarray | None:
    """The constant indices of a scatter that one index map computes (reduction none), else None:
    run-time indices or a reduction go to the SCATTER_* kernels."""
    if _text(a, "reduction", "none") != "none":
        return None
    indices = _const_indices(c, node, 1)
    return None if indices is None else indices.astype(np.int64)


def _scatter_runtime(c: ConversionContext, node: Any, a: dict[str, Any], op: str, attrs: dict[str, Any]) -> None:
    data, indices, updates = (c.value(n) for n in node.input[:3])
    reduction = _text(a, "reduction", "none")
    if reduction not in ("none", "add", "mul", "max", "min"):
        raise invalid(f"reduction {reduction!r}")
    out = c.output(node, dtype=data.type.dtype, shape=data.type.shape, quant=data.type.quant)
    c.emit(op, [data, indices, updates], [out], {**attrs, "reduction": reduction})

@converts("ScatterND")
def _scatter_nd(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    data = c.value(node.input[0])
    indices = _scatter_indices(c, node, a)
    if indices is None:
        _scatter_runtime(c, node, a, "SCATTER_ND_UPDATE", {})
        return
    shape = data.type.shape
    depth = indices.shape[-1]
    lead = np.asarray(shape[:depth], dtype=np.int64)
    if depth > len(shape) or np.any((indices < -lead) | (indices >= lead)):
        raise invalid("a ScatterND index is outside the data")
    indices = np.where(indices < 0, indices + lead, indices)
    inner = math.prod(shape[depth:])
    rows = np.ravel_multi_index(tuple(np.moveaxis(indices.reshape(-1, depth), -1, 0)), shape[:depth]) \
        if depth else np.zeros(indices.reshape(-1, 1).shape[0], np.int64)
    _scatter(c, node, a, (rows[:, None] * inner + np.arange(inner)[None, :]).reshape(-1))


@converts("ScatterElements", "Scatter")
def _scatter_elements(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    data = c.value(node.input[0])
    indices = _scatter_indices(c, node, a)
    shape = data.type.shape
    axis = int(a.get("axis", 0)) % len(shape)
    if indices is None:
        _scatter_runtime(c, node, a, "SCATTER_ELEMENTS", {"axis": axis})
        return
    n = shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise invalid("a ScatterElements index is outside the axis")
    coords: list[np.ndarray] = list(np.indices(indices.shape))
    coords[axis] = np.where(indices < 0, indices + n, indices)
    _scatter(c, node, a, np.ravel_multi_index(tuple(coords), shape).reshape(-1))


@converts("TensorScatter")
def _tensor_scatter(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    cache, update = c.value(node.input[0]), c.value(node.input[1])
    write = c.optional(node, 2)
    shape, rank = list(cache.type.shape), len(cache.type.shape)
    axis = int(a.get("axis", -2))
    axis = axis + rank if axis < 0 else axis
    if not 1 <= axis < rank:
        raise invalid(f"axis {a.get('axis', -2)} for a rank-{rank} cache (the batch axis 0 cannot be the sequence)")
    mode = _text(a, "mode", "linear")
    if mode not in ("linear", "circular"):
        raise invalid(f"mode {mode!r} (linear or circular)")
    upd = list(update.type.shape)
    if len(upd) != rank or any(upd[d] != shape[d] for d in range(rank) if d != axis) or upd[axis] > shape[axis]:
        raise invalid(f"update {upd} does not fit the cache {shape} along axis {axis}")
    if write is not None and write.type.num_elements != shape[0]:
        raise invalid(f"write_indices holds {write.type.num_elements} values for a batch of {shape[0]}")
    out = c.output(node, dtype=cache.type.dtype, shape=shape, quant=cache.type.quant)
    c.emit("TENSOR_SCATTER", [cache, update, write], [out], {"axis": axis, "circular": mode == "circular"})


@converts("MaxUnpool")
def _max_unpool(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, indices = c.value(node.input[0]), c.value(node.input[1])
    if indices.type.shape != x.type.shape:
        raise invalid(f"indices {list(indices.type.shape)} and X {list(x.type.shape)} differ in shape")
    out = c.output(node, dtype=x.type.dtype, quant=x.type.quant)
    name, count = node.output[0], x.type.num_elements
    from nn2c.ir import numpy_dtype

    zero = int(x.type.quant.zero_point[0]) if x.type.quant is not None else 0  # real 0
    zeros = c.const(np.full(out.type.num_elements, zero, dtype=numpy_dtype(x.type.dtype)), f"{name}/zeros",
                    x.type.quant)
    flat = c.new(f"{name}/flat", x.type.dtype, [out.type.num_elements], x.type.quant)
    c.emit("SCATTER_ND_UPDATE", [zeros, c.reshape(indices, [count, 1], f"{name}/positions"),
                                 c.reshape(x, [count], f"{name}/values")], [flat], {"reduction": "none"})
    c.emit("RESHAPE", [flat, c.int32(list(out.type.shape), f"{name}/shape")], [out],
           {"new_shape": list(out.type.shape)})
