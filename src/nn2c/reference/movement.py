"""Reference semantics of the data-movement, indexing and resizing family, and their index maps.

Most operators of this family only move elements. Each of those is described by an *offset map*
(`OffsetMap`): the output, seen as row-major dims d_0..d_{r-1}, takes element
    out[i_0, ..., i_{r-1}] = x.flat[T_0[i_0] + ... + T_{r-1}[i_{r-1}]]
with one int table T_k per output axis (in input elements), or the fill value (0, the int8 zero
point) when any T_k[i_k] is -1. The tables are computed at compile time from the static shapes and
constant attributes; the same map drives the numpy evaluator here (constant folding) and the C
kernel nn2c_offset_gather (codegen/ops/movement.py), so the two agree by construction and the
tests against TFLM / onnxruntime check the maps. A map that does not separate per axis (space to
batch with padding, GatherElements, Trilu) is one full table over the flattened output.

TFLite semantics used (TFLM's reference_ops): DEPTH_TO_SPACE is DCR on NHWC (output channel c of
block (i, j) reads input channel (i * b + j) * C_out + c); SPACE_TO_DEPTH its inverse; BATCH_TO_SPACE_ND
reads input batch (i * block_w + j) * B + b for output pixel (y * block_h + i - crop_top, ...);
SPACE_TO_BATCH_ND the inverse with padding cells 0 (see fill_value); MIRROR_PAD REFLECT skips
the edge element, SYMMETRIC repeats it; GATHER with batch_dims; GATHER_ND on the leading dims.
Arithmetic members (RESIZE_BILINEAR, CUMSUM, the ONNX RESIZE) have their own evaluators below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nn2c.ir import Node, Value, numpy_dtype
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays, ReferenceError, real, store


@dataclass
class OffsetMap:
    dims: list[int]  # output dims, row-major
    tables: list[np.ndarray]  # one int64 table per dim, in input elements; -1 = fill


def row_strides(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * int(shape[d + 1])
    return strides


def axis_map(shape: Sequence[int], maps: Sequence[Sequence[int] | np.ndarray]) -> OffsetMap:
    """out[i_0..] = x[maps[0][i_0], maps[1][i_1], ...]; a map entry of -1 is the fill value."""
    strides = row_strides(shape)
    tables = []
    for m, stride in zip(maps, strides, strict=True):
        m = np.asarray(m, dtype=np.int64).reshape(-1)
        tables.append(np.where(m < 0, -1, m * stride))
    return OffsetMap([len(np.asarray(m).reshape(-1)) for m in maps], tables)


def full_map(flat_offsets: np.ndarray) -> OffsetMap:
    flat = np.asarray(flat_offsets, dtype=np.int64).reshape(-1)
    return OffsetMap([int(flat.size)], [flat])


def combined(m: OffsetMap) -> np.ndarray:
    """Every output element's input offset (-1: fill), in output order."""
    total = np.zeros(m.dims, dtype=np.int64) if m.dims else np.zeros((), np.int64)
    invalid = np.zeros(m.dims, dtype=bool)
    for d, table in enumerate(m.tables):
        shape = [1] * len(m.dims)
        shape[d] = m.dims[d]
        t = table.reshape(shape)
        total = total + np.maximum(t, 0)
        invalid = invalid | (t < 0)
    return np.where(invalid, -1, total).reshape(-1)


def apply_map(x: np.ndarray, m: OffsetMap, fill: float | int = 0) -> np.ndarray:
    flat = np.asarray(x).reshape(-1)
    offsets = combined(m)
    if flat.size == 0:
        return np.full(offsets.shape, fill, dtype=flat.dtype)
    picked = flat[np.clip(offsets, 0, flat.size - 1)]
    return np.where(offsets < 0, np.asarray(fill).astype(flat.dtype), picked)


# --- the maps of each operator ---------------------------------------------------------------------
def _ints(array: np.ndarray | None, what: str) -> list[int]:
    if array is None:
        raise ReferenceError(f"the {what} input is missing")
    return [int(v) for v in np.asarray(array).reshape(-1)]


def slice_map(shape: Sequence[int], begin: Sequence[int], size: Sequence[int]) -> OffsetMap:
    """TFLite SLICE: size -1 runs to the end of the axis."""
    maps = []
    for n, b, s in zip(shape, begin, size, strict=True):
        count = n - b if s < 0 else s
        if b < 0 or count < 0 or b + count > n:
            raise ReferenceError(f"slice begin {b} size {s} is outside an axis of {n}")
        maps.append(np.arange(b, b + count))
    return axis_map(shape, maps)


def broadcast_map(shape: Sequence[int], out_shape: Sequence[int]) -> OffsetMap:
    """numpy broadcasting of `shape` to `out_shape` (also Tile when out dims are multiples: i mod n)."""
    rank = len(out_shape)
    full = [1] * (rank - len(shape)) + list(shape)
    if len(shape) > rank:
        raise ReferenceError(f"cannot broadcast {list(shape)} to {list(out_shape)}")
    maps = []
    for n, o in zip(full, out_shape, strict=True):
        if n != 1 and o % n:
            raise ReferenceError(f"cannot broadcast {list(shape)} to {list(out_shape)}")
        maps.append(np.arange(o) % n)
    return axis_map(full, maps)


def reverse_map(shape: Sequence[int], axes: Sequence[int]) -> OffsetMap:
    rank = len(shape)
    flipped = {a % rank for a in axes} if rank else set()
    return axis_map(shape, [np.arange(n)[::-1] if d in flipped else np.arange(n) for d, n in enumerate(shape)])


def mirror_index(n: int, before: int, after: int, symmetric: bool) -> np.ndarray:
    """Source index of every padded position: REFLECT mirrors about the edge element, SYMMETRIC
    repeats it (numpy's 'reflect' / 'symmetric')."""
    mode: Any = "symmetric" if symmetric else "reflect"
    if n == 1 and not symmetric:
        mode = "edge"
    return np.pad(np.arange(n), (before, after), mode=mode)


def pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """ONNX Pad modes on one axis: constant (-1 = fill), edge, reflect, wrap."""
    if mode == "constant":
        return np.concatenate([np.full(before, -1), np.arange(n), np.full(after, -1)])
    numpy_mode: Any = {"edge": "edge", "reflect": "reflect", "wrap": "wrap"}[mode]
    return np.pad(np.arange(n), (before, after), mode=numpy_mode)


def mirror_pad_map(shape: Sequence[int], paddings: np.ndarray, symmetric: bool) -> OffsetMap:
    pads = np.asarray(paddings, dtype=np.int64).reshape(-1, 2)
    return axis_map(shape, [mirror_index(n, int(b), int(a), symmetric) for n, (b, a) in zip(shape, pads, strict=True)])


def depth_to_space_map(shape: Sequence[int], block: int, crd: bool = False, channels_first: bool = False) -> OffsetMap:
    """DEPTH_TO_SPACE. NHWC (TFLite, DCR): out[n, y, x, c] = in[n, y/b, x/b, ((y%b)*b + x%b)*C' + c].
    ONNX NCHW: DCR reads channel ((y%b)*b + x%b)*C' + c, CRD reads c*b*b + (y%b)*b + x%b."""
    if channels_first:
        n, ch, h, w = shape
        cs = ch // (block * block)
        st = row_strides(shape)
        y, x, c = np.arange(h * block), np.arange(w * block), np.arange(cs)
        if crd:
            ty = (y // block) * st[2] + (y % block) * block * st[1]
            tx = (x // block) * st[3] + (x % block) * st[1]
            tc = c * block * block * st[1]
        else:
            ty = (y // block) * st[2] + (y % block) * block * cs * st[1]
            tx = (x // block) * st[3] + (x % block) * cs * st[1]
            tc = c * st[1]
        return OffsetMap([n, cs, h * block, w * block], [np.arange(n) * st[0], tc, ty, tx])
    n, h, w, ch = shape
    cs = ch // (block * block)
    st = row_strides(shape)
    y, x = np.arange(h * block), np.arange(w * block)
    ty = (y // block) * st[1] + (y % block) * block * cs
    tx = (x // block) * st[2] + (x % block) * cs
    return OffsetMap([n, h * block, w * block, cs], [np.arange(n) * st[0], ty, tx, np.arange(cs)])


def space_to_depth_map(shape: Sequence[int], block: int, crd: bool = False, channels_first: bool = False) -> OffsetMap:
    """SPACE_TO_DEPTH, the inverse of depth_to_space_map (ONNX's default mode is DCR)."""
    st = row_strides(shape)
    if channels_first:
        n, ch, h, w = shape
        c_out = np.arange(ch * block * block)
        if crd:
            c, i, j = c_out // (block * block), (c_out // block) % block, c_out % block
        else:
            i, j, c = c_out // (block * ch), (c_out // ch) % block, c_out % ch
        tc = c * st[1] + i * st[2] + j * st[3]
        return OffsetMap([n, ch * block * block, h // block, w // block],
                         [np.arange(n) * st[0], tc, np.arange(h // block) * block * st[2],
                          np.arange(w // block) * block * st[3]])
    n, h, w, ch = shape
    c_out = np.arange(ch * block * block)
    i, j, c = c_out // (block * ch), (c_out // ch) % block, c_out % ch
    return OffsetMap([n, h // block, w // block, ch * block * block],
                     [np.arange(n) * st[0], np.arange(h // block) * block * st[1],
                      np.arange(w // block) * block * st[2], i * st[1] + j * st[2] + c])


def batch_to_space_map(shape: Sequence[int], block: Sequence[int], crops: np.ndarray) -> OffsetMap:
    """BATCH_TO_SPACE_ND on [B*prod(block), spatial..., rest...] (1 or 2 spatial dims)."""
    crops = np.asarray(crops, dtype=np.int64).reshape(-1, 2)
    st = row_strides(shape)
    batch = shape[0] // math.prod(block)
    tables = [np.arange(batch) * st[0]]
    dims = [batch]
    block_stride = batch  # input batch = (i_0 * block_1 + i_1) * B + b
    for k in reversed(range(len(block))):
        n = shape[1 + k] * block[k] - int(crops[k][0]) - int(crops[k][1])
        pos = np.arange(n) + int(crops[k][0])
        tables.insert(1, (pos % block[k]) * block_stride * st[0] + (pos // block[k]) * st[1 + k])
        dims.insert(1, n)
        block_stride *= block[k]
    rest = shape[1 + len(block):]
    for d, n in enumerate(rest):
        tables.append(np.arange(n) * st[1 + len(block) + d])
        dims.append(n)
    return OffsetMap(dims, tables)


def space_to_batch_map(shape: Sequence[int], block: Sequence[int], pads: np.ndarray) -> OffsetMap:
    """SPACE_TO_BATCH_ND: output batch (i_0 * block_1 + i_1) * B + b takes the padded pixel
    (y * block_0 + i_0 - pad_top, ...); padding cells are the fill value. One full table."""
    pads = np.asarray(pads, dtype=np.int64).reshape(-1, 2)
    batch, spatial, rest = shape[0], list(shape[1:1 + len(block)]), list(shape[1 + len(block):])
    out_spatial = [(n + int(p[0]) + int(p[1])) // b for n, p, b in zip(spatial, pads, block, strict=True)]
    out_shape = [batch * math.prod(block), *out_spatial, *rest]
    st = row_strides(shape)
    idx = np.indices(out_shape).reshape(len(out_shape), -1)
    ob = idx[0]
    b = ob % batch
    group = ob // batch
    offset = b * st[0]
    valid = np.ones_like(ob, dtype=bool)
    for k in reversed(range(len(block))):
        i = group % block[k]
        group = group // block[k]
        pos = idx[1 + k] * block[k] + i - int(pads[k][0])
        valid &= (pos >= 0) & (pos < spatial[k])
        offset = offset + pos * st[1 + k]
    for d in range(len(rest)):
        offset = offset + idx[1 + len(block) + d] * st[1 + len(block) + d]
    return full_map(np.where(valid, offset, -1))


def gather_map(shape: Sequence[int], indices: np.ndarray, axis: int, batch_dims: int = 0) -> OffsetMap:
    """GATHER with constant indices: out = x[batch..., outer..., indices[batch..., i...], inner...]."""
    idx = np.asarray(indices, dtype=np.int64)
    rank = len(shape)
    axis %= max(rank, 1)
    n = shape[axis]
    if np.any((idx < -n) | (idx >= n)):
        raise ReferenceError(f"a gather index is outside [0, {n})")
    idx = np.where(idx < 0, idx + n, idx)
    st = row_strides(shape)
    if batch_dims == 0:
        dims = [*shape[:axis], int(idx.size), *shape[axis + 1:]]
        tables = [np.arange(shape[d]) * st[d] for d in range(axis)]
        tables.append(idx.reshape(-1) * st[axis])
        tables += [np.arange(shape[d]) * st[d] for d in range(axis + 1, rank)]
        return OffsetMap(dims, tables)
    batch = math.prod(shape[:batch_dims])
    outer = math.prod(shape[batch_dims:axis])
    inner = math.prod(shape[axis + 1:])
    per = idx.reshape(batch, -1)
    ob, oo, ok, oi = np.meshgrid(np.arange(batch), np.arange(outer), np.arange(per.shape[1]), np.arange(inner),
                                 indexing="ij")
    offsets = (ob * outer + oo) * n * inner + per[ob, ok] * inner + oi
    return full_map(offsets)


def gather_nd_map(shape: Sequence[int], indices: np.ndarray, batch_dims: int = 0) -> OffsetMap:
    """GATHER_ND: out[i..., rest...] = x[indices[i...], rest...] (ONNX batch_dims: leading dims shared)."""
    idx = np.asarray(indices, dtype=np.int64)
    depth = idx.shape[-1]
    st = row_strides(shape)
    batch = math.prod(shape[:batch_dims])
    lead = shape[batch_dims:batch_dims + depth]
    idx = idx.reshape(batch, -1, depth)
    for k, n in enumerate(lead):
        if np.any((idx[..., k] < -n) | (idx[..., k] >= n)):
            raise ReferenceError(f"a gather_nd index is outside [0, {n})")
    idx = np.where(idx < 0, idx + np.asarray(lead), idx)
    row = (idx * np.asarray(st[batch_dims:batch_dims + depth])).sum(-1)  # [batch, count]
    if batch_dims:
        row = row + np.arange(batch)[:, None] * st[batch_dims - 1]
    inner = math.prod(shape[batch_dims + depth:])
    return OffsetMap([int(row.size), inner], [row.reshape(-1), np.arange(inner)])


def gather_elements_map(shape: Sequence[int], indices: np.ndarray, axis: int) -> OffsetMap:
    idx = np.asarray(indices, dtype=np.int64)
    axis %= len(shape)
    n = shape[axis]
    idx = np.where(idx < 0, idx + n, idx)
    if np.any((idx < 0) | (idx >= n)):
        raise ReferenceError(f"a GatherElements index is outside [0, {n})")
    st = row_strides(shape)
    coords = np.indices(idx.shape)
    offset = np.zeros(idx.shape, dtype=np.int64)
    for d in range(len(shape)):
        offset = offset + (idx if d == axis else coords[d]) * st[d]
    return full_map(offset)


def unpack_maps(shape: Sequence[int], axis: int) -> list[OffsetMap]:
    axis %= len(shape)
    maps = []
    for k in range(shape[axis]):
        slices = [np.arange(n) for n in shape]
        slices[axis] = np.array([k])
        m = axis_map(shape, slices)
        del m.dims[axis], m.tables[axis]
        if not m.dims:
            m = OffsetMap([1], [np.array([k * row_strides(shape)[axis]])])
        else:
            m.tables[0] = m.tables[0] + k * row_strides(shape)[axis]
        maps.append(m)
    return maps


# --- evaluators ----------------------------------------------------------------------------------
def fill_value(op: str, out: Value) -> int:
    """The element of out-of-map cells: zero, or the int8 zero point (real 0) for INDEX_MAP.
    TFLM's SPACE_TO_BATCH_ND pads with params.output_offset, which its Prepare never sets (0)."""
    quant = out.type.quant
    if op == "INDEX_MAP" and out.type.dtype == "int8" and quant is not None:
        return int(quant.zero_point[0])
    return 0


def offset_map(node: Node, arrays: Arrays) -> list[OffsetMap]:
    """The offset map(s) of a pure data-movement node of this family (constant attribute inputs)."""
    op, a = node.op, node.attrs
    x = node.inputs[0]
    assert x is not None
    shape = list(x.type.shape)
    if op == "SLICE":
        return [slice_map(shape, _ints(arrays[1], "begin"), _ints(arrays[2], "size"))]
    if op == "GATHER":
        return [gather_map(shape, np.asarray(arrays[1]), int(a.get("axis", 0)), int(a.get("batch_dims", 0)))]
    if op == "GATHER_ND":
        return [gather_nd_map(shape, np.asarray(arrays[1]), int(a.get("batch_dims", 0)))]
    if op == "GATHER_ELEMENTS":
        return [gather_elements_map(shape, np.asarray(arrays[1]), int(a.get("axis", 0)))]
    if op in ("BROADCAST_TO", "TILE"):
        return [broadcast_map(shape, node.outputs[0].type.shape)]
    if op == "REVERSE_V2":
        return [reverse_map(shape, _ints(arrays[1], "axis"))]
    if op == "MIRROR_PAD":
        return [mirror_pad_map(shape, np.asarray(arrays[1]), _symmetric(a))]
    if op == "DEPTH_TO_SPACE":
        return [depth_to_space_map(shape, int(a["block_size"]), a.get("mode") == "CRD", bool(a.get("nchw")))]
    if op == "SPACE_TO_DEPTH":
        return [space_to_depth_map(shape, int(a["block_size"]), a.get("mode") == "CRD", bool(a.get("nchw")))]
    if op == "BATCH_TO_SPACE_ND":
        return [batch_to_space_map(shape, _ints(arrays[1], "block_shape"), np.asarray(arrays[2]))]
    if op == "SPACE_TO_BATCH_ND":
        return [space_to_batch_map(shape, _ints(arrays[1], "block_shape"), np.asarray(arrays[2]))]
    if op == "UNPACK":
        return unpack_maps(shape, int(a.get("axis", 0)))
    if op == "INDEX_MAP":  # nn2c-internal: the ONNX importer computed the map itself
        return [full_map(np.asarray(arrays[1]))]
    raise ReferenceError(f"{op} has no offset map")


def _symmetric(attrs: dict) -> bool:
    mode = attrs.get("mode", 0)
    return mode in (1, "SYMMETRIC")


MAPPED_OPS = ("SLICE", "GATHER", "GATHER_ND", "GATHER_ELEMENTS", "BROADCAST_TO", "TILE", "REVERSE_V2", "MIRROR_PAD",
              "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "UNPACK", "INDEX_MAP")


@evaluator(*MAPPED_OPS)
def _mapped(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = arrays[0]
    assert x is not None
    maps = offset_map(node, arrays)
    results = []
    for out, m in zip(node.outputs, maps, strict=True):
        results.append(apply_map(np.asarray(x), m, fill_value(node.op, out)).astype(numpy_dtype(out.type.dtype))
                       .reshape(out.type.shape))
    return results


@evaluator("PACK")
def _pack(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    stacked = np.stack([np.asarray(v) for v in arrays if v is not None], axis=int(node.attrs.get("axis", 0)))
    return [stacked.astype(numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


@evaluator("FILL")
def _fill(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    value = np.asarray(arrays[1]).reshape(-1)[0]
    return [np.full(out.type.shape, value, dtype=numpy_dtype(out.type.dtype))]


@evaluator("ZEROS_LIKE")
def _zeros_like(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    return [np.zeros(out.type.shape, dtype=numpy_dtype(out.type.dtype))]


@evaluator("BROADCAST_ARGS")
def _broadcast_args(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    a, b = (tuple(_ints(v, "shape")) for v in arrays[:2])
    return [np.asarray(np.broadcast_shapes(a, b), dtype=numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


@evaluator("DYNAMIC_UPDATE_SLICE")
def _dynamic_update_slice(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    operand, update = np.array(arrays[0]), np.asarray(arrays[1])
    start = _ints(arrays[2], "start_indices")
    index = []
    for n, u, s in zip(operand.shape, update.shape, start, strict=True):
        s = min(max(s, 0), n - u)  # TFLM clamps the start so that the update fits
        index.append(slice(s, s + u))
    operand[tuple(index)] = update
    return [operand.astype(numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


@evaluator("EMBEDDING_LOOKUP")
def _embedding_lookup(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out, table = node.outputs[0], node.inputs[1]
    assert table is not None
    ids = np.asarray(arrays[0]).astype(np.int64).reshape(-1)
    rows = np.asarray(arrays[1])
    if np.any((ids < 0) | (ids >= rows.shape[0])):
        raise ReferenceError("an embedding id is outside the table")
    picked = rows[ids]
    if out.type.dtype == "float32" and table.type.dtype != "float32":  # hybrid: dequantized rows
        quant = table.type.quant
        assert quant is not None
        picked = picked.astype(np.float32) * np.float32(quant.scale[0])  # TFLM: one scale, zero point 0
    return [picked.astype(numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


@evaluator("CUMSUM")
def _cumsum(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    axis = _ints(arrays[1], "axis")[0] % max(len(x.type.shape), 1)
    values = real(x, np.asarray(arrays[0])) if x.type.dtype == "int8" else np.asarray(arrays[0])
    if node.attrs.get("reverse"):
        values = np.flip(values, axis)
    summed = np.cumsum(values, axis=axis, dtype=values.dtype)
    if node.attrs.get("exclusive"):
        summed = summed - values
    if node.attrs.get("reverse"):
        summed = np.flip(summed, axis)
    if x.type.dtype == "int8":
        return [store(out, summed)]
    return [summed.astype(numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


@evaluator("CUMPROD")
def _cumprod(node: Node, arrays: Arrays) -> list[np.ndarray]:
    """ONNX CumProd: products from 1 (exclusive: shifted by one), integers wrapping."""
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    values = np.asarray(arrays[0])
    axis = _ints(arrays[1], "axis")[0] % max(values.ndim, 1)
    if values.ndim == 0:
        return [values.astype(numpy_dtype(out.type.dtype)).reshape(out.type.shape)]
    if node.attrs.get("reverse"):
        values = np.flip(values, axis)
    if node.attrs.get("exclusive"):
        ones = np.ones_like(np.take(values, [0], axis=axis))
        values = np.concatenate([ones, np.take(values, np.arange(values.shape[axis] - 1), axis=axis)], axis=axis)
    with np.errstate(over="ignore"):
        result = np.cumprod(values, axis=axis, dtype=values.dtype)
    if node.attrs.get("reverse"):
        result = np.flip(result, axis)
    return [result.astype(numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


@evaluator("RANGE")
def _range(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    start, delta = (np.asarray(arrays[i]).reshape(-1)[0] for i in (0, 2))
    n = out.type.num_elements
    dtype = numpy_dtype(out.type.dtype)
    return [(np.asarray(start, dtype) + np.arange(n, dtype=dtype) * np.asarray(delta, dtype)).astype(dtype)]


@evaluator("ONE_HOT")
def _one_hot(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    axis = int(node.attrs.get("axis", -1))
    depth = out.type.shape[axis]
    indices = np.asarray(arrays[0]).astype(np.int64)
    indices = np.where(indices < 0, indices + depth, indices)
    values = np.asarray(arrays[2]).reshape(-1)
    hot = np.moveaxis(np.arange(depth) == indices[..., None], -1, axis % len(out.type.shape))
    return [np.where(hot, values[1], values[0]).astype(numpy_dtype(out.type.dtype))]


@evaluator("COMPRESS")
def _compress(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    x = np.asarray(arrays[0])
    condition = np.asarray(arrays[1]).reshape(-1).astype(bool)
    axis = node.attrs.get("axis")
    if axis is None:
        x, axis = x.reshape(-1), 0
    kept = np.nonzero(condition[:x.shape[int(axis)]])[0]
    result = np.take(x, kept, axis=int(axis))
    if result.size != out.type.num_elements:
        raise ReferenceError("the condition keeps another number of elements than the output holds")
    return [result.reshape(out.type.shape)]


# --- scatters with run-time indices ---------------------------------------------------------------
_SCATTER_REDUCE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter_into(rows: np.ndarray, targets: np.ndarray, valid: np.ndarray, updates: np.ndarray,
                  reduction: str) -> None:
    """rows[targets[k]] combined with updates[k], in order, skipping the invalid targets (rows: a
    view of the output); integers wrap around as the kernel's two's complement arithmetic."""
    combine = _SCATTER_REDUCE.get(reduction)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in np.nonzero(valid)[0]:
            row = int(targets[k])
            rows[row] = updates[k] if combine is None else combine(rows[row], updates[k]).astype(rows.dtype)


@evaluator("SCATTER_ELEMENTS")
def _scatter_elements(node: Node, arrays: Arrays) -> list[np.ndarray]:
    data, indices, updates = (np.asarray(a) for a in arrays[:3])
    out = data.copy()
    axis = int(node.attrs.get("axis", 0)) % max(data.ndim, 1)
    n = data.shape[axis]
    idx = indices.astype(np.int64)
    idx = np.where(idx < 0, idx + n, idx)
    valid = (idx >= 0) & (idx < n)
    coords: list[np.ndarray] = list(np.indices(idx.shape))
    coords[axis] = np.where(valid, idx, 0)
    targets = np.ravel_multi_index(tuple(coords), data.shape).reshape(-1)
    _scatter_into(out.reshape(-1), targets, valid.reshape(-1), updates.reshape(-1),
                  str(node.attrs.get("reduction", "none")))
    return [out]


@evaluator("SCATTER_ND_UPDATE")
def _scatter_nd_update(node: Node, arrays: Arrays) -> list[np.ndarray]:
    data, indices, updates = (np.asarray(a) for a in arrays[:3])
    out = data.copy()
    depth = indices.shape[-1]
    lead = np.asarray(data.shape[:depth], dtype=np.int64)
    idx = indices.astype(np.int64).reshape(-1, depth)
    idx = np.where(idx < 0, idx + lead, idx)
    valid = np.all((idx >= 0) & (idx < lead), axis=1)
    rows = np.ravel_multi_index(tuple(np.where(valid[:, None], idx, 0).T), data.shape[:depth])
    inner = data.shape[depth:]
    rows_view = out.reshape(-1, *inner) if inner else out.reshape(-1)
    _scatter_into(rows_view, rows, valid, updates.reshape(-1, *inner) if inner else updates.reshape(-1),
                  str(node.attrs.get("reduction", "none")))
    return [out]


@evaluator("REVERSE_SEQUENCE")
def _reverse_sequence(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = np.asarray(arrays[0])
    seq, batch = int(node.attrs["seq_dim"]), int(node.attrs["batch_dim"])
    lengths = np.clip(np.asarray(arrays[1]).astype(np.int64).reshape(-1), 0, x.shape[seq])
    idx = np.indices(x.shape)
    t, length = idx[seq], lengths[idx[batch]]
    idx[seq] = np.where(t < length, length - 1 - t, t)
    return [x[tuple(idx)]]


@evaluator("TENSOR_SCATTER")
def _tensor_scatter(node: Node, arrays: Arrays) -> list[np.ndarray]:
    cache, update = np.asarray(arrays[0]), np.asarray(arrays[1])
    axis, circular = int(node.attrs["axis"]), bool(node.attrs.get("circular"))
    batch, max_len, length = cache.shape[0], cache.shape[axis], update.shape[axis]
    starts = np.zeros(batch, np.int64) if len(arrays) < 3 or arrays[2] is None else \
        np.asarray(arrays[2]).astype(np.int64).reshape(-1)
    out = cache.copy()
    for b in range(batch):
        for s in range(length):
            at = starts[b] + s
            at = at % max_len if circular else at
            if 0 <= at < max_len:
                target: list[int | slice] = [slice(None)] * cache.ndim
                source: list[int | slice] = [slice(None)] * cache.ndim
                target[0], source[0], target[axis], source[axis] = b, b, int(at), s
                out[tuple(target)] = update[tuple(source)]
    return [out]


# --- resizing ------------------------------------------------------------------------------------
def bilinear_source(out_size: int, in_size: int, align_corners: bool, half_pixel: bool) -> tuple[np.ndarray, ...]:
    """TFLite ComputeInterpolationValues (float32): for every output index the source position,
    its floor and ceiling rows."""
    f32 = np.float32
    scale = f32(in_size - 1) / f32(out_size - 1) if align_corners and out_size > 1 else f32(in_size) / f32(out_size)
    pos = np.arange(out_size, dtype=np.float32)
    value = (pos + f32(0.5)) * scale - f32(0.5) if half_pixel else pos * scale
    lower = np.maximum(np.floor(value).astype(np.int64), 0)
    upper = np.minimum(np.ceil(value).astype(np.int64), in_size - 1)
    return value.astype(np.float32), lower, upper


@evaluator("RESIZE_BILINEAR")
def _resize_bilinear(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    data = real(x, np.asarray(arrays[0]))
    _, h, w, _ = x.type.shape
    _, oh, ow, _ = out.type.shape
    align, half = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    yv, y0, y1 = bilinear_source(oh, h, align, half)
    xv, x0, x1 = bilinear_source(ow, w, align, half)
    dy = (yv - y0)[None, :, None, None]
    dx = (xv - x0)[None, None, :, None]
    top = data[:, y0][:, :, x0] * (1 - dx) + data[:, y0][:, :, x1] * dx
    bottom = data[:, y1][:, :, x0] * (1 - dx) + data[:, y1][:, :, x1] * dx
    return [store(out, top * (1 - dy) + bottom * dy)]


def antialias_taps(mode: str, scale: float, max_taps: int) -> int:
    """The taps of an antialiased linear / cubic Resize along an axis: the filter (support 1 or 2
    input pixels) is stretched by 1 / scale when downsampling (2 ceil(support / scale) taps, at most
    max_taps, which the output size bounds at compile time)."""
    if scale >= 1.0:
        return 2 if mode == "linear" else 4
    support = 1.0 if mode == "linear" else 2.0
    return int(min(2 * math.ceil(support / scale), max_taps))


def antialias_max_taps(mode: str, in_size: int, out_size: int) -> int:
    """The most taps an antialiased axis needs for a scale that gives out_size from in_size (scale >=
    out_size / in_size), plus the two a rounding of the scale can add."""
    support = 1 if mode == "linear" else 2
    return 2 * math.ceil(support * in_size / max(out_size, 1)) + 2


def _antialias_weights(mode: str, ratio: np.ndarray, scale: float, n: int, cubic_a: float) -> np.ndarray:
    """onnx's _linear_coeffs_antialias / _cubic_coeffs_antialias: the filter at distances (first + k
    - ratio) * scale, normalised to sum 1."""
    s = min(scale, 1.0)
    args = (np.arange(n)[None, :] + (1 - n // 2) - ratio[:, None]) * s
    if mode == "linear":
        w = np.clip(1 - np.abs(args), 0, 1)
    else:
        a, x = cubic_a, np.abs(args)
        w = np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                     np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))
    total = w.sum(axis=1, keepdims=True)
    return w / np.where(total == 0, 1.0, total)


def resize_taps(mode: str, coord: str, nearest: str, cubic_a: float, exclude_outside: bool, in_size: int,
                out_size: int, scale: float, roi: tuple[float, float] | None,
                antialias: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX Resize along one axis, as onnx's reference op_resize: per output index the input
    indices, their weights and whether the position is extrapolated (tf_crop_and_resize)."""
    out_len = scale * in_size  # onnx's `output_width`: the real, not the integer, size
    y = np.arange(out_size, dtype=np.float64)
    outside = np.zeros(out_size, dtype=bool)
    if coord == "align_corners":
        x = np.zeros(out_size) if out_len == 1 else y * (in_size - 1) / (out_len - 1)
    elif coord == "asymmetric":
        x = y / scale
    elif coord == "tf_crop_and_resize":
        assert roi is not None
        roi_start, roi_end = roi
        x = np.full(out_size, (roi_end - roi_start) * (in_size - 1) / 2) if out_len == 1 else \
            y * (roi_end - roi_start) * (in_size - 1) / (out_len - 1)
        x = x + roi_start * (in_size - 1)
        outside = (x < 0) | (x > in_size - 1)
    elif coord == "pytorch_half_pixel":
        x = np.full(out_size, -0.5) if out_len == 1 else (y + 0.5) / scale - 0.5
    elif coord == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif coord == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / out_len)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        raise ReferenceError(f"coordinate_transformation_mode {coord!r}")
    if mode == "nearest":
        base = np.floor(x)
        ratio = x - base
        if nearest == "round_prefer_floor":
            up = ratio > 0.5
        elif nearest == "round_prefer_ceil":
            up = ratio >= 0.5
        elif nearest == "floor":
            up = np.zeros_like(ratio, dtype=bool)
        else:
            up = ratio > 0
        idx = np.clip(base.astype(np.int64) + up, 0, in_size - 1)
        return idx[:, None], np.ones((out_size, 1)), outside
    n = antialias_taps(mode, scale, antialias_max_taps(mode, in_size, out_size)) if antialias else \
        (2 if mode == "linear" else 4)
    start = np.ceil(x).astype(np.int64) - n // 2
    ratio = x - (np.ceil(x) - 1)
    if antialias:
        weights = _antialias_weights(mode, ratio, scale, n, cubic_a)
    elif mode == "linear":
        weights = np.stack([1 - ratio, ratio], axis=1)
    else:
        a = cubic_a
        r = ratio
        weights = np.stack([((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                            ((a + 2) * r - (a + 3)) * r * r + 1,
                            ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
                            ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a], axis=1)
    raw = start[:, None] + np.arange(n)[None, :]
    if exclude_outside:
        weights = np.where((raw < 0) | (raw >= in_size), 0.0, weights)
        weights = weights / weights.sum(axis=1, keepdims=True)
    return np.clip(raw, 0, in_size - 1), weights, outside


def nearest_resize_map(node: Node, scales: np.ndarray, roi: np.ndarray | None) -> OffsetMap | None:
    """RESIZE in nearest mode as an offset map (any dtype), or None when tf_crop_and_resize
    extrapolates somewhere (the extrapolation value is not an input element)."""
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    a = node.attrs
    rank = len(x.type.shape)
    scale_axes = list(a.get("scale_axes", range(rank)))
    maps = []
    for d in range(rank):
        k = scale_axes[d]
        scale = float(np.float32(scales.reshape(-1)[k])) if k >= 0 else 1.0
        scale = scale if 0 < scale <= 1e30 else 1.0
        roi_d = (float(roi[d]), float(roi[d + rank])) if roi is not None else None
        if scale == 1.0 and x.type.shape[d] == out.type.shape[d] and a.get("coord") != "tf_crop_and_resize":
            maps.append(np.arange(out.type.shape[d]))
            continue
        idx, _, outside = resize_taps("nearest", str(a.get("coord")), str(a.get("nearest_mode")), -0.75, False,
                                      x.type.shape[d], out.type.shape[d], scale, roi_d)
        if outside.any():
            return None
        maps.append(idx[:, 0])
    return axis_map(x.type.shape, maps)


@evaluator("RESIZE")
def _resize(node: Node, arrays: Arrays) -> list[np.ndarray]:
    """nn2c-internal: ONNX Resize (inputs: x, scales per axis, optional roi [2 * rank]); float32, or
    any dtype in nearest mode (raw elements)."""
    out = node.outputs[0]
    if node.attrs.get("mode") == "nearest" and out.type.dtype != "float32":
        roi_array = np.asarray(arrays[2]).reshape(-1) if len(arrays) > 2 and arrays[2] is not None else None
        m = nearest_resize_map(node, np.asarray(arrays[1]), roi_array)
        if m is None:
            raise ReferenceError("an integer tf_crop_and_resize that extrapolates")
        return [apply_map(np.asarray(arrays[0]), m).reshape(out.type.shape)]
    data = np.asarray(arrays[0], dtype=np.float64)
    a = node.attrs
    scales = np.asarray(arrays[1], dtype=np.float32).reshape(-1)
    scale_axes = list(a.get("scale_axes", range(data.ndim)))
    roi = np.asarray(arrays[2], dtype=np.float32).reshape(-1) if len(arrays) > 2 and arrays[2] is not None else None
    rank = data.ndim
    outside = np.zeros(out.type.shape, dtype=bool)
    for d in range(rank):
        k = scale_axes[d]
        scale = float(scales[k]) if k >= 0 else 1.0
        scale = scale if 0 < scale <= 1e30 else 1.0  # as the kernel: a non-positive / non-finite scale is 1
        roi_d = (float(roi[d]), float(roi[d + rank])) if roi is not None else None
        if scale == 1.0 and data.shape[d] == out.type.shape[d] and a.get("coord") != "tf_crop_and_resize":
            continue
        idx, w, ext = resize_taps(str(a.get("mode")), str(a.get("coord")), str(a.get("nearest_mode")),
                                  float(a.get("cubic_a", -0.75)), bool(a.get("exclude_outside")), data.shape[d],
                                  out.type.shape[d], scale, roi_d, bool(a.get("antialias")))
        moved = np.moveaxis(data, d, -1)
        data = np.moveaxis((moved[..., idx] * w).sum(-1), -1, d)
        shape = [1] * rank
        shape[d] = out.type.shape[d]
        outside = outside | ext.reshape(shape)
    data = np.where(outside, float(a.get("extrapolation_value", 0.0)), data)
    return [data.astype(np.float32).reshape(out.type.shape)]
