"""Data movement, indexing and resizing: lowerings onto kernels/nn2c_movement.c.

- Pure movers with constant operands (SLICE, GATHER / GATHER_ND / GATHER_ELEMENTS with constant
  indices, BROADCAST_TO, TILE, REVERSE_V2, MIRROR_PAD, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
  BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, UNPACK, INDEX_MAP) become one nn2c_offset_gather each: the
  offset map of reference/movement.py, simplified (size-1 axes dropped, a trailing run that is
  copied whole merged into the element size; more than 6 axes left -> one full table), or a
  zero-copy alias when the map is the identity. The fill (cells outside the map) is
  reference.movement.fill_value: the int8 zero point for INDEX_MAP, else zero bytes (TFLM's
  SPACE_TO_BATCH_ND pads with an output_offset its Prepare leaves at 0).
- GATHER / GATHER_ND / GATHER_ELEMENTS with run-time indices and EMBEDDING_LOOKUP: nn2c_gather_rows /
  nn2c_gather_nd / nn2c_gather_elements (an index out of range writes zeros where TFLM fails the invoke); the hybrid EMBEDDING_LOOKUP
  (int8 table, float output) dequantizes each row as TFLM's EvalHybrid: v * scale in float.
- PACK: one block copy per input (as CONCATENATION). FILL, ZEROS_LIKE, SHAPE, DYNAMIC_UPDATE_SLICE.
- RESIZE_BILINEAR: TFLM's reference_ops::ResizeBilinear (float: scale = in / out, or (in - 1) /
  (out - 1) with align_corners, in float32) and ResizeBilinearInteger (int8: scale_10 =
  (1024 * in + out / 2) / out, 20-bit products rounded half away from zero).
- RESIZE (ONNX): nearest mode with constant scales is an offset map (any dtype, no arithmetic);
  otherwise float32 through nn2c_resize_f32, which computes the per-axis taps at run time from the
  scales (constant or not), so the backend's run-time `scales` inputs work too.
- CUMSUM (float32, int32; ONNX's run-time axis read by the kernel; int8 as TFLM's rescaled integer
  sum), ONE_HOT, RANGE, COMPRESS.
- SCATTER_ELEMENTS / SCATTER_ND_UPDATE: the data copied into the output, then each update combined
  into its target in order (nn2c_scatter_elements / nn2c_scatter_nd; an index outside its axis
  skips the update). TENSOR_SCATTER (a KV-cache write) likewise: the past cache copied, the update
  rows written at their sequence positions (nn2c_tensor_scatter).
"""

from __future__ import annotations

from math import prod

import numpy as np

from nn2c.codegen.context import EmitContext, format_field
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import scale, zero_point
from nn2c.errors import InvalidModelError
from nn2c.ir import Node, Value, c_type, dtype_bytes
from nn2c.quant.fixedpoint import quantize_multiplier_smaller_than_one
from nn2c.reference.movement import (
    MAPPED_OPS,
    OffsetMap,
    antialias_max_taps,
    combined,
    fill_value,
    nearest_resize_map,
    offset_map,
)
from nn2c.reference.values import ReferenceError

MAX_RANK = 6  # NN2C_MOVE_MAX_RANK
_INT_MAX = 2**31 - 1


def _pad(values: list[int], fill: int) -> list[int]:
    return values + [fill] * (MAX_RANK - len(values))


def _const_arrays(ctx: EmitContext, node: Node, runtime_ok: tuple[int, ...] = (0,)) -> list[np.ndarray | None]:
    """The constant inputs' arrays (None for the data inputs that may be computed at run time)."""
    arrays: list[np.ndarray | None] = []
    for i, value in enumerate(node.inputs):
        if value is None or i in runtime_ok:
            arrays.append(None)
        elif value.data is None or value.is_variable:
            raise ctx.unsupported(f"input {i} ({value.name!r}) must be a constant tensor; it is computed at run time")
        else:
            arrays.append(value.data)
    return arrays


def _simplify(m: OffsetMap) -> tuple[list[int], list[np.ndarray], int]:
    """Drop size-1 axes (their offset moves into another table), then merge a trailing axis that
    copies a contiguous run into the element (returns dims, tables, elements per moved element)."""
    dims, tables = list(m.dims), [np.asarray(t, dtype=np.int64) for t in m.tables]
    if any(d == 0 for d in dims):
        return dims, tables, 1
    base, keep = 0, []
    for d, t in zip(dims, tables, strict=True):
        if d == 1 and t[0] >= 0 and len(dims) > 1:
            base += int(t[0])
        else:
            keep.append((d, t))
    if not keep:
        return [1], [np.array([base])], 1
    dims, tables = [d for d, _ in keep], [t for _, t in keep]
    tables[0] = np.where(tables[0] < 0, -1, tables[0] + base)
    group = 1
    while len(dims) > 1 and np.array_equal(tables[-1], np.arange(dims[-1]) * group):
        n = dims[-1]
        rest = [t for t in tables[:-1]]
        if not all(np.all((t < 0) | (t % (group * n) == 0)) for t in rest):
            break
        dims.pop()
        tables.pop()
        group *= n
    tables = [np.where(t < 0, -1, t // group) for t in tables]
    return dims, tables, group


def emit_offset_map(ctx: EmitContext, x: Value, out: Value, m: OffsetMap) -> None:
    if prod(m.dims) != out.type.num_elements:
        raise ctx.unsupported(f"the operator yields {prod(m.dims)} elements but the output {list(out.type.shape)} "
                              f"holds {out.type.num_elements}")
    if out.type.num_elements == 0:
        return
    flat = combined(m)
    if flat.size and int(flat.max()) >= max(x.type.num_elements, 1):
        raise ctx.unsupported("an index reads outside the input")
    identity = flat.size == x.type.num_elements and np.array_equal(flat, np.arange(flat.size))
    if identity and not x.is_constant and not x.is_variable:
        ctx.alias(out, x)
        return
    dims, tables, group = _simplify(m)
    if len(dims) > MAX_RANK:
        dims, tables, group = [int(flat.size)], [flat], 1
    if max(int(np.abs(t).max()) if t.size else 0 for t in tables) > _INT_MAX:
        raise ctx.unsupported("the input is too large for 32-bit offsets")
    es = dtype_bytes(x.type.dtype)
    fill = "NULL"
    fill_size = 0
    fill_element = fill_value(ctx.node.op, out)
    if any(np.any(t < 0) for t in tables) and fill_element != 0:
        fill = ctx.const_array(np.array([fill_element], dtype=np.int8), "int8_t", "fill value (zero point)")
        fill_size = 1
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_offset_gather_params_t", {
        "rank": len(dims),
        "dims": _pad(dims, 1),
        "tables": ctx.const_array(np.concatenate(tables).astype(np.int32), "int32_t", "offset tables"),
        "elem_size": es * group,
        "fill_size": fill_size,
    })
    ctx.call("nn2c_offset_gather", params, ctx.ptr(x), fill, ctx.ptr(out))


def _same_dtype(ctx: EmitContext, x: Value, out: Value) -> None:
    if x.type.dtype != out.type.dtype:
        raise ctx.unsupported(f"the input is {x.type.dtype} but the output is {out.type.dtype}")


def _mapped(node: Node, ctx: EmitContext) -> None:
    x = node.inputs[0]
    assert x is not None
    for out in node.outputs:
        _same_dtype(ctx, x, out)
    try:
        maps = offset_map(node, _const_arrays(ctx, node))
    except (ReferenceError, ValueError, IndexError, KeyError) as exc:
        raise ctx.unsupported(f"cannot compute the index map: {exc}") from None
    for out, m in zip(node.outputs, maps, strict=True):
        emit_offset_map(ctx, x, out, m)


@lowering(*MAPPED_OPS)
def mapped(node: Node, ctx: EmitContext) -> None:
    indices = node.input(1)
    runtime = _RUNTIME_INDEX_LOWERINGS.get(node.op)
    if runtime is not None and indices is not None and (indices.data is None or indices.is_variable):
        runtime(node, ctx)
        return
    _mapped(node, ctx)


def _index_bytes(ctx: EmitContext, indices: Value) -> int:
    if indices.type.dtype not in ("int16", "int32", "int64"):
        raise ctx.unsupported(f"indices of type {indices.type.dtype} (int16 / int32 / int64 are supported)")
    return dtype_bytes(indices.type.dtype)


def _check_output_shape(node: Node, out: Value, expected: list[int]) -> None:
    """A declared output shape the kernel would write past (a model whose shapes disagree)."""
    if list(out.type.shape) != expected:
        raise InvalidModelError(f"{node.where()}: output shape {list(out.type.shape)} is not {expected}, what the "
                                "input and indices shapes give")


def _gather_runtime(node: Node, ctx: EmitContext) -> None:
    x, indices, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and indices is not None
    _same_dtype(ctx, x, out)
    shape = list(x.type.shape)
    rank = len(shape)
    axis = int(node.attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    batch_dims = int(node.attrs.get("batch_dims", 0))
    batch_dims = batch_dims + len(indices.type.shape) if batch_dims < 0 else batch_dims
    if not 0 <= batch_dims <= axis < rank:
        raise ctx.unsupported(f"axis {axis} / batch_dims {batch_dims} do not fit a rank-{rank} input")
    batch = prod(shape[:batch_dims])
    count = indices.type.num_elements // max(batch, 1)
    _check_output_shape(node, out, [*shape[:axis], *indices.type.shape[batch_dims:], *shape[axis + 1:]])
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_gather_rows_params_t", {
        "batch": batch, "outer": prod(shape[batch_dims:axis]), "axis_size": shape[axis], "count": count,
        "inner_bytes": prod(shape[axis + 1:]) * dtype_bytes(x.type.dtype),
        "index_bytes": _index_bytes(ctx, indices), "wrap_negative": int(bool(node.attrs.get("wrap_negative"))),
    })
    ctx.call("nn2c_gather_rows", params, ctx.ptr(x), ctx.ptr(indices), ctx.ptr(out))


def _gather_nd_runtime(node: Node, ctx: EmitContext) -> None:
    x, indices, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and indices is not None
    _same_dtype(ctx, x, out)
    shape = list(x.type.shape)
    batch_dims = int(node.attrs.get("batch_dims", 0))
    depth = indices.type.shape[-1] if indices.type.shape else 0
    if not 0 <= batch_dims < len(indices.type.shape) or list(indices.type.shape[:batch_dims]) != shape[:batch_dims]:
        raise ctx.unsupported(f"batch_dims {batch_dims} for indices {list(indices.type.shape)} and data {shape}")
    lead = shape[batch_dims:batch_dims + depth]
    if not 0 < depth <= MAX_RANK or len(lead) != depth:
        raise ctx.unsupported(f"index tuples of {depth} values for a rank-{len(shape)} input")
    inner = prod(shape[batch_dims + depth:])
    strides = [prod(lead[j + 1:]) for j in range(depth)]
    batch = prod(shape[:batch_dims])
    _check_output_shape(node, out, [*indices.type.shape[:-1], *shape[batch_dims + depth:]])
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_gather_nd_params_t", {
        "batch": batch, "batch_rows": prod(lead),
        "count": indices.type.num_elements // depth // max(batch, 1), "depth": depth,
        "inner_bytes": inner * dtype_bytes(x.type.dtype), "index_bytes": _index_bytes(ctx, indices),
        "wrap_negative": int(bool(node.attrs.get("wrap_negative"))),
        "dims": _pad(lead, 1), "strides": _pad(strides, 0),
    })
    ctx.call("nn2c_gather_nd", params, ctx.ptr(x), ctx.ptr(indices), ctx.ptr(out))


def _element_strides(shape: list[int]) -> list[int]:
    return [prod(shape[d + 1:]) for d in range(len(shape))]


def _elements_axis(ctx: EmitContext, node: Node, data: Value, indices: Value) -> tuple[list[int], list[int], int]:
    """The data shape, indices shape and axis of a GatherElements / ScatterElements, checked, with
    neighbouring non-axis dimensions merged where the indices span the inner one whole (the same
    offsets in fewer dimensions: a rank-7 loss over N, C, d1..d5 runs in three)."""
    data_shape, index_shape = list(data.type.shape), list(indices.type.shape)
    rank = len(data_shape)
    if not rank or len(index_shape) != rank:
        raise ctx.unsupported(f"indices {index_shape} for data {data_shape} (the same rank is needed)")
    axis = int(node.attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.unsupported(f"axis {node.attrs.get('axis')} is out of range for rank {rank}")
    if any(index_shape[d] > data_shape[d] for d in range(rank) if d != axis):
        raise InvalidModelError(f"{node.where()}: indices {index_shape} are larger than data {data_shape} outside "
                                f"axis {axis}")
    d = 0
    while d + 1 < len(data_shape):
        if axis not in (d, d + 1) and index_shape[d + 1] == data_shape[d + 1]:
            data_shape[d:d + 2] = [data_shape[d] * data_shape[d + 1]]
            index_shape[d:d + 2] = [index_shape[d] * index_shape[d + 1]]
            axis -= 1 if axis > d else 0
        else:
            d += 1
    if len(data_shape) > MAX_RANK:
        raise ctx.unsupported(f"indices {list(indices.type.shape)} for data {list(data.type.shape)} need more than "
                              f"{MAX_RANK} dimensions")
    return data_shape, index_shape, axis


def _gather_elements_runtime(node: Node, ctx: EmitContext) -> None:
    x, indices, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and indices is not None
    _same_dtype(ctx, x, out)
    data_shape, index_shape, axis = _elements_axis(ctx, node, x, indices)
    _check_output_shape(node, out, list(indices.type.shape))
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_gather_elements_params_t", {
        "rank": len(data_shape), "axis": axis, "axis_size": data_shape[axis],
        "elem_size": dtype_bytes(x.type.dtype), "index_bytes": _index_bytes(ctx, indices),
        "dims": _pad(index_shape, 1), "strides": _pad(_element_strides(data_shape), 0),
    })
    ctx.call("nn2c_gather_elements", params, ctx.ptr(x), ctx.ptr(indices), ctx.ptr(out))


_RUNTIME_INDEX_LOWERINGS = {"GATHER": _gather_runtime, "GATHER_ND": _gather_nd_runtime,
                            "GATHER_ELEMENTS": _gather_elements_runtime}

# ---- SCATTER_ELEMENTS, SCATTER_ND_UPDATE (run-time indices) ----------------------------------------
_REDUCTIONS = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}  # NN2C_SCATTER_*
_ELEM_TYPES = {"float32": 0, "int32": 1, "int64": 2, "int16": 3, "int8": 4, "uint8": 5}  # NN2C_ELEM_*


def _scatter_common(node: Node, ctx: EmitContext) -> tuple[Value, Value, Value, Value, dict[str, int]]:
    """Checks shared by both scatters, and the params fields for the element type and the reduction."""
    data, indices, updates, out = node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]
    assert data is not None and indices is not None and updates is not None
    _same_dtype(ctx, data, out)
    _same_dtype(ctx, updates, out)
    if data.type.shape != out.type.shape:
        raise InvalidModelError(f"{node.where()}: output {list(out.type.shape)} is not the data's shape "
                                f"{list(data.type.shape)}")
    reduction = str(node.attrs.get("reduction", "none"))
    if reduction not in _REDUCTIONS:
        raise ctx.unsupported(f"reduction {reduction!r} (none, add, mul, max, min are supported)")
    elem_type = _ELEM_TYPES.get(out.type.dtype, 6)
    if reduction != "none" and (elem_type == 6 or out.type.quant is not None):
        kind = "quantized " if out.type.quant is not None else ""
        raise ctx.unsupported(f"reduction {reduction!r} of {kind}{out.type.dtype} values (float32 and plain integers "
                              "are supported)")
    if updates.type.quant != data.type.quant:
        raise ctx.unsupported("data and updates of different quantization")
    fields = {"elem_size": dtype_bytes(out.type.dtype), "elem_type": elem_type, "reduction": _REDUCTIONS[reduction],
              "index_bytes": _index_bytes(ctx, indices)}
    return data, indices, updates, out, fields


def _copy_data(ctx: EmitContext, data: Value, out: Value) -> None:
    if out.type.num_elements:
        ctx.use_kernel("layout")
        ctx.call("nn2c_copy_blocks", ctx.ptr(out), ctx.ptr(data), "1", str(out.type.num_bytes), "0", "0")


@lowering("SCATTER_ELEMENTS")
def scatter_elements(node: Node, ctx: EmitContext) -> None:
    data, indices, updates, out, fields = _scatter_common(node, ctx)
    data_shape, index_shape, axis = _elements_axis(ctx, node, data, indices)
    if updates.type.shape != indices.type.shape:
        raise InvalidModelError(f"{node.where()}: updates {list(updates.type.shape)} and indices "
                                f"{list(indices.type.shape)} differ in shape")
    _copy_data(ctx, data, out)
    if indices.type.num_elements == 0 or out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_scatter_elements_params_t", {
        "rank": len(data_shape), "axis": axis, "axis_size": data_shape[axis], **fields,
        "dims": _pad(index_shape, 1), "strides": _pad(_element_strides(data_shape), 0),
    })
    ctx.call("nn2c_scatter_elements", params, ctx.ptr(indices), ctx.ptr(updates), ctx.ptr(out))


@lowering("SCATTER_ND_UPDATE")
def scatter_nd_update(node: Node, ctx: EmitContext) -> None:
    data, indices, updates, out, fields = _scatter_common(node, ctx)
    shape = list(data.type.shape)
    depth = indices.type.shape[-1] if indices.type.shape else 0
    if not 0 < depth <= min(len(shape), MAX_RANK):
        raise ctx.unsupported(f"index tuples of {depth} values for a rank-{len(shape)} input")
    expected = [*indices.type.shape[:-1], *shape[depth:]]
    if list(updates.type.shape) != expected:
        raise InvalidModelError(f"{node.where()}: updates {list(updates.type.shape)} are not {expected} (the indices' "
                                "leading shape, then the data's shape after the indexed axes)")
    _copy_data(ctx, data, out)
    if indices.type.num_elements == 0 or out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_scatter_nd_params_t", {
        "count": indices.type.num_elements // depth, "depth": depth, "inner": prod(shape[depth:]), **fields,
        "dims": _pad(shape[:depth], 1), "strides": _pad([prod(shape[j + 1:depth]) for j in range(depth)], 0),
    })
    ctx.call("nn2c_scatter_nd", params, ctx.ptr(indices), ctx.ptr(updates), ctx.ptr(out))


@lowering("REVERSE_SEQUENCE")
def reverse_sequence(node: Node, ctx: EmitContext) -> None:
    x, lengths, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and lengths is not None
    _same_dtype(ctx, x, out)
    shape = list(x.type.shape)
    seq, batch = int(node.attrs["seq_dim"]), int(node.attrs["batch_dim"])
    if not 2 <= len(shape) <= MAX_RANK or not (0 <= seq < len(shape) and 0 <= batch < len(shape)) or seq == batch:
        raise ctx.unsupported(f"seq_dim {seq} / batch_dim {batch} of a rank-{len(shape)} input")
    if lengths.type.num_elements != shape[batch]:
        raise InvalidModelError(f"{node.where()}: {lengths.type.num_elements} lengths for a batch of {shape[batch]}")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_reverse_sequence_params_t", {
        "rank": len(shape), "seq_dim": seq, "batch_dim": batch, "elem_size": dtype_bytes(x.type.dtype),
        "index_bytes": _index_bytes(ctx, lengths), "dims": _pad(shape, 1),
    })
    ctx.call("nn2c_reverse_sequence", params, ctx.ptr(x), ctx.ptr(lengths), ctx.ptr(out))


@lowering("TENSOR_SCATTER")
def tensor_scatter(node: Node, ctx: EmitContext) -> None:
    cache, update, write, out = node.inputs[0], node.inputs[1], node.input(2), node.outputs[0]
    assert cache is not None and update is not None
    _same_dtype(ctx, cache, out)
    _same_dtype(ctx, update, out)
    shape, axis = list(cache.type.shape), int(node.attrs["axis"])
    if update.type.quant != cache.type.quant:
        raise ctx.unsupported("cache and update of different quantization")
    _copy_data(ctx, cache, out)
    if update.type.num_elements == 0 or out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_tensor_scatter_params_t", {
        "batch": shape[0], "outer": prod(shape[1:axis]), "max_len": shape[axis], "len": update.type.shape[axis],
        "inner_bytes": prod(shape[axis + 1:]) * dtype_bytes(out.type.dtype),
        "index_bytes": _index_bytes(ctx, write) if write is not None else 4,
        "circular": int(bool(node.attrs.get("circular"))),
    })
    ctx.call("nn2c_tensor_scatter", params, ctx.ptr(update), ctx.ptr(write) if write is not None else "NULL",
             ctx.ptr(out))


@lowering("EMBEDDING_LOOKUP")
def embedding_lookup(node: Node, ctx: EmitContext) -> None:
    ids, table, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert ids is not None and table is not None
    if ids.type.dtype != "int32" or len(ids.type.shape) != 1:
        raise ctx.unsupported("EMBEDDING_LOOKUP needs 1-D int32 ids (as TFLite Micro)")
    if len(table.type.shape) < 2:
        raise ctx.unsupported("EMBEDDING_LOOKUP needs a table of rank >= 2")
    if table.type.dtype != out.type.dtype:
        _hybrid_embedding_lookup(ctx, ids, table, out)
        return
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_gather_rows_params_t", {
        "batch": 1, "outer": 1, "axis_size": table.type.shape[0], "count": ids.type.num_elements,
        "inner_bytes": prod(table.type.shape[1:]) * dtype_bytes(table.type.dtype), "index_bytes": 4,
        "wrap_negative": 0,
    })
    ctx.call("nn2c_gather_rows", params, ctx.ptr(table), ctx.ptr(ids), ctx.ptr(out))


def _hybrid_embedding_lookup(ctx: EmitContext, ids: Value, table: Value, out: Value) -> None:
    """TFLM: an int8 table with a float32 output, zero point 0, one scale (params.scale)."""
    if table.type.dtype != "int8" or out.type.dtype != "float32":
        raise ctx.unsupported(f"EMBEDDING_LOOKUP of a {table.type.dtype} table into {out.type.dtype}")
    if table.type.quant is None or zero_point(table) != 0:
        raise ctx.unsupported("the int8 table of a hybrid EMBEDDING_LOOKUP needs a zero point of 0 (as TFLite Micro)")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    rows = table.type.shape[0]
    ctx.call("nn2c_embedding_lookup_hybrid", ctx.ptr(ids), str(ids.type.num_elements), ctx.ptr(table), str(rows),
             str(table.type.num_elements // max(rows, 1)), format_field(float(np.float32(scale(table)))),
             ctx.ptr(out))


# ---- PACK, FILL, ZEROS_LIKE, SHAPE, BROADCAST_ARGS, DYNAMIC_UPDATE_SLICE -------------------------


@lowering("PACK")
def pack(node: Node, ctx: EmitContext) -> None:
    out = node.outputs[0]
    inputs = [v for v in node.inputs if v is not None]
    rank = len(out.type.shape)
    axis = int(node.attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.unsupported(f"axis {node.attrs.get('axis')} is out of range for a rank-{rank} output")
    for value in inputs:
        _same_dtype(ctx, value, out)
        if value.type.shape != out.type.shape[:axis] + out.type.shape[axis + 1:]:
            raise ctx.unsupported(f"input {value.name!r} {list(value.type.shape)} does not stack into "
                                  f"{list(out.type.shape)} on axis {axis}")
    if out.type.shape[axis] != len(inputs):
        raise ctx.unsupported(f"{len(inputs)} inputs stack into an axis of {out.type.shape[axis]}")
    elem = dtype_bytes(out.type.dtype)
    outer = prod(out.type.shape[:axis])
    block = prod(out.type.shape[axis + 1:]) * elem
    if not block or not outer:
        return
    ctx.use_kernel("layout")
    for k, value in enumerate(inputs):
        ctx.call("nn2c_copy_blocks", f"(uint8_t *)({ctx.ptr(out)}) + {k * block}", ctx.ptr(value),
                 str(outer), str(block), str(block * len(inputs)), str(block))


@lowering("FILL")
def fill(node: Node, ctx: EmitContext) -> None:
    value, out = node.inputs[1], node.outputs[0]
    assert value is not None
    _same_dtype(ctx, value, out)
    if value.type.num_elements != 1:
        raise ctx.unsupported("the FILL value must be a scalar")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    ctx.call("nn2c_fill", ctx.ptr(out), ctx.ptr(value), str(out.type.num_elements), str(dtype_bytes(out.type.dtype)))


def _constant_output(ctx: EmitContext, out: Value, array: np.ndarray) -> None:
    """Write a compile-time constant into the output (an operator whose result does not depend on
    run-time values, when constant folding did not remove it: -O0)."""
    if out.type.num_elements == 0:
        return
    data = np.asarray(array).astype(np.dtype(out.type.dtype if out.type.dtype != "bool" else "bool")).reshape(-1)
    source = ctx.const_array(data, c_type(out.type.dtype), f"{out.name} (constant)")
    ctx.use_kernel("layout")
    ctx.call("nn2c_copy_blocks", ctx.ptr(out), source, "1", str(out.type.num_bytes), "0", "0")


@lowering("ZEROS_LIKE")
def zeros_like(node: Node, ctx: EmitContext) -> None:
    out = node.outputs[0]
    _constant_output(ctx, out, np.zeros(out.type.shape))


@lowering("SHAPE")
def shape(node: Node, ctx: EmitContext) -> None:
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    if out.type.dtype not in ("int32", "int64"):
        raise ctx.unsupported(f"SHAPE output of type {out.type.dtype}")
    _constant_output(ctx, out, np.asarray(x.type.shape))


@lowering("BROADCAST_ARGS")
def broadcast_args(node: Node, ctx: EmitContext) -> None:
    raise ctx.unsupported("BROADCAST_ARGS of run-time shapes (a data-dependent shape); only constant shapes, which "
                          "constant folding removes, are supported")


@lowering("DYNAMIC_UPDATE_SLICE")
def dynamic_update_slice(node: Node, ctx: EmitContext) -> None:
    operand, update, start, out = node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]
    assert operand is not None and update is not None and start is not None
    _same_dtype(ctx, operand, out)
    _same_dtype(ctx, update, out)
    rank = len(operand.type.shape)
    if len(update.type.shape) != rank or start.type.num_elements != rank or not 1 <= rank <= MAX_RANK:
        raise ctx.unsupported(f"operand {list(operand.type.shape)}, update {list(update.type.shape)} and "
                              f"{start.type.num_elements} start indices do not agree (rank 1..{MAX_RANK})")
    if any(u > d for u, d in zip(update.type.shape, operand.type.shape, strict=True)):
        raise ctx.unsupported("the update is larger than the operand")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_update_slice_params_t", {
        "rank": rank, "dims": _pad(list(operand.type.shape), 1), "update_dims": _pad(list(update.type.shape), 1),
        "elem_size": dtype_bytes(out.type.dtype), "index_bytes": _index_bytes(ctx, start),
    })
    ctx.call("nn2c_dynamic_update_slice", params, ctx.ptr(operand), ctx.ptr(update), ctx.ptr(start), ctx.ptr(out))


# ---- resizing -------------------------------------------------------------------------------------


@lowering("RESIZE_BILINEAR")
def resize_bilinear(node: Node, ctx: EmitContext) -> None:
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    _same_dtype(ctx, x, out)
    if x.type.dtype not in ("float32", "int8"):
        raise ctx.unsupported(f"RESIZE_BILINEAR of {x.type.dtype} (TFLite Micro has float32 and int8)")
    if len(x.type.shape) != 4 or len(out.type.shape) != 4:
        raise ctx.unsupported("RESIZE_BILINEAR needs 4-D NHWC input and output")
    size = _const_arrays(ctx, node)[1]
    assert size is not None
    batches, in_h, in_w, depth = x.type.shape
    out_h, out_w = (int(v) for v in np.asarray(size).reshape(-1)[:2])
    if out.type.shape != (batches, out_h, out_w, depth):
        raise ctx.unsupported(f"output shape {list(out.type.shape)} does not match size {[out_h, out_w]}")
    align, half = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    if align and half:
        raise ctx.unsupported("half_pixel_centers with align_corners (TFLite Micro rejects it)")
    if out.type.num_elements == 0:
        return
    if in_h <= 0 or in_w <= 0:
        raise ctx.unsupported("an empty input image")

    def scale_f(i: int, o: int) -> float:
        f32 = np.float32
        return float(f32(i - 1) / f32(o - 1)) if align and o > 1 else float(f32(i) / f32(o))

    def scale_10(i: int, o: int) -> int:
        return ((1 << 10) * (i - 1) + (o - 1) // 2) // (o - 1) if align and o > 1 else ((1 << 10) * i + o // 2) // o

    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_resize_bilinear_params_t", {
        "batches": batches, "input_h": in_h, "input_w": in_w, "depth": depth, "output_h": out_h, "output_w": out_w,
        "half_pixel_centers": int(half), "scale_h": scale_f(in_h, out_h), "scale_w": scale_f(in_w, out_w),
        "scale_h_10": scale_10(in_h, out_h), "scale_w_10": scale_10(in_w, out_w),
    })
    suffix = "f32" if x.type.dtype == "float32" else "s8"
    ctx.call(f"nn2c_resize_bilinear_{suffix}", params, ctx.ptr(x), ctx.ptr(out))


RESIZE_MODES = {"nearest": 0, "linear": 1, "cubic": 2}
COORD_MODES = {"half_pixel": 0, "half_pixel_symmetric": 1, "pytorch_half_pixel": 2, "align_corners": 3,
               "asymmetric": 4, "tf_crop_and_resize": 5}
NEAREST_MODES = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}


def _resize_by_map(node: Node, ctx: EmitContext) -> bool:
    """Nearest-neighbour RESIZE with constant scales (and roi): a compile-time offset map, any dtype."""
    x, scales, roi, out = node.inputs[0], node.inputs[1], node.input(2), node.outputs[0]
    assert x is not None and scales is not None
    constant = [v for v in (scales, roi) if v is not None]
    if any(v.data is None or v.is_variable for v in constant) or x.type.dtype != out.type.dtype:
        return False
    roi_array = None if roi is None or roi.data is None else np.asarray(roi.data, dtype=np.float32).reshape(-1)
    m = nearest_resize_map(node, np.asarray(scales.data, dtype=np.float32), roi_array)
    if m is None:
        return False
    emit_offset_map(ctx, x, out, m)
    return True


@lowering("RESIZE")
def resize(node: Node, ctx: EmitContext) -> None:
    x, scales, out = node.inputs[0], node.inputs[1], node.outputs[0]
    roi = node.input(2)
    assert x is not None and scales is not None
    a = node.attrs
    if a.get("mode") == "nearest" and _resize_by_map(node, ctx):
        return
    if x.type.dtype != "float32" or out.type.dtype != "float32" or scales.type.dtype != "float32":
        raise ctx.unsupported(f"Resize of {x.type.dtype} in mode {a.get('mode')} (float32 is supported; other "
                              "types in nearest mode with constant scales)")
    rank = len(x.type.shape)
    if not 1 <= rank <= MAX_RANK or len(out.type.shape) != rank:
        raise ctx.unsupported(f"Resize of rank {rank} (1..{MAX_RANK} are supported)")
    scale_axes = [int(v) for v in a.get("scale_axes", range(rank))]
    if len(scale_axes) != rank or max(scale_axes, default=-1) >= scales.type.num_elements:
        raise ctx.unsupported("the scales do not cover the input's axes")
    if out.type.num_elements == 0:
        return
    if x.type.num_elements == 0:
        raise ctx.unsupported("Resize of an empty input")
    mode = RESIZE_MODES[str(a.get("mode", "nearest"))]
    antialias = bool(a.get("antialias")) and mode != 0
    taps = (1, 2, 4)[mode]
    if antialias:
        taps = max(antialias_max_taps(str(a.get("mode")), i, o) for i, o in zip(x.type.shape, out.type.shape,
                                                                                  strict=True))
    total_out = sum(out.type.shape)
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_resize_params_t", {
        "rank": rank, "in_dims": _pad(list(x.type.shape), 1), "out_dims": _pad(list(out.type.shape), 1),
        "scale_axes": _pad(scale_axes, -1), "mode": mode, "coord": COORD_MODES[str(a.get("coord", "half_pixel"))],
        "nearest_mode": NEAREST_MODES[str(a.get("nearest_mode", "round_prefer_floor"))],
        "exclude_outside": int(bool(a.get("exclude_outside"))), "cubic_a": float(a.get("cubic_a", -0.75)),
        "extrapolation_value": float(a.get("extrapolation_value", 0.0)),
        "antialias": int(antialias), "max_taps": taps,
    })
    scratch = ctx.scratch(total_out * taps * 8 + total_out)
    ctx.call("nn2c_resize_f32", params, ctx.ptr(x), ctx.ptr(scales), ctx.ptr(roi), ctx.ptr(out), scratch)


# ---- CUMSUM, ONE_HOT, RANGE, COMPRESS --------------------------------------------------------------


@lowering("CUMSUM", "CUMPROD")
def cumsum(node: Node, ctx: EmitContext) -> None:
    x, axis_v, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and axis_v is not None
    _same_dtype(ctx, x, out)
    if x.type.dtype == "int8" and node.op == "CUMSUM":
        _cumsum_s8(node, ctx)
        return
    suffix = {"float32": "f32", "int32": "s32"}.get(x.type.dtype)
    kernel = node.op.lower()
    if suffix is None:
        supported = "float32, int32 and int8" if node.op == "CUMSUM" else "float32 and int32"
        raise ctx.unsupported(f"{node.op} of {x.type.dtype} ({supported} are supported)")
    shape = list(x.type.shape) or [1]
    exclusive, reverse = str(int(bool(node.attrs.get("exclusive")))), str(int(bool(node.attrs.get("reverse"))))
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    if axis_v.data is not None and not axis_v.is_variable:
        axis = int(np.asarray(axis_v.data).reshape(-1)[0])
        axis = axis + len(shape) if axis < 0 else axis
        if not 0 <= axis < len(shape):
            raise ctx.unsupported(f"axis {axis} is out of range for rank {len(shape)}")
        ctx.call(f"nn2c_{kernel}_{suffix}", ctx.ptr(x), ctx.ptr(out), str(prod(shape[:axis])), str(shape[axis]),
                 str(prod(shape[axis + 1:])), exclusive, reverse)
        return
    if axis_v.type.dtype not in ("int32", "int64", "int16"):
        raise ctx.unsupported(f"a run-time axis of type {axis_v.type.dtype}")
    dims = ctx.const_array(np.array(shape, dtype=np.int32), "int32_t", "dims")
    ctx.call(f"nn2c_{kernel}_axis_{suffix}", ctx.ptr(x), ctx.ptr(out), dims, str(len(shape)), ctx.ptr(axis_v),
             str(dtype_bytes(axis_v.type.dtype)), exclusive, reverse)


def _cumsum_s8(node: Node, ctx: EmitContext) -> None:
    """TFLM cumsum.cc CalculateOpData: input multiplier s / (2 s) = 0.5, output multiplier
    2 s / (2^20 s_out), both QuantizeMultiplierSmallerThanOneExp; a constant axis."""
    x, axis_v, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and axis_v is not None
    if axis_v.data is None or axis_v.is_variable:
        raise ctx.unsupported("an int8 CUMSUM needs a constant axis")
    shape = list(x.type.shape) or [1]
    axis = int(np.asarray(axis_v.data).reshape(-1)[0])
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape):
        raise ctx.unsupported(f"axis {axis} is out of range for rank {len(shape)}")
    s_in, s_out = float(np.float32(scale(x))), float(np.float32(scale(out)))
    twice = 2 * s_in
    try:
        in_mult, in_shift = quantize_multiplier_smaller_than_one(s_in / twice)
        out_mult, out_shift = quantize_multiplier_smaller_than_one(twice / ((1 << 20) * s_out))
    except ValueError as exc:
        raise ctx.unsupported(f"the int8 CUMSUM rescale is not below one ({exc}); TFLite Micro rejects it") from None
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_cumsum_s8_params_t", {
        "outer": prod(shape[:axis]), "len": shape[axis], "inner": prod(shape[axis + 1:]),
        "exclusive": int(bool(node.attrs.get("exclusive"))), "reverse": int(bool(node.attrs.get("reverse"))),
        "input_offset": -zero_point(x), "input_multiplier": in_mult, "input_shift": in_shift,
        "output_offset": zero_point(out), "output_multiplier": out_mult, "output_shift": out_shift,
        "act_min": -128, "act_max": 127,
    })
    ctx.call("nn2c_cumsum_s8", params, ctx.ptr(x), ctx.ptr(out))


_INDEX_TYPES = {"float32": 0, "int32": 1, "int64": 2, "int8": 3, "uint8": 4, "int16": 5}


@lowering("ONE_HOT")
def one_hot(node: Node, ctx: EmitContext) -> None:
    indices, values, out = node.inputs[0], node.inputs[2], node.outputs[0]
    assert indices is not None and values is not None
    _same_dtype(ctx, values, out)
    if indices.type.dtype not in _INDEX_TYPES:
        raise ctx.unsupported(f"indices of type {indices.type.dtype}")
    if values.type.num_elements != 2:
        raise ctx.unsupported("OneHot values must hold [off, on]")
    rank = len(out.type.shape)
    axis = int(node.attrs.get("axis", -1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.unsupported(f"axis {node.attrs.get('axis')} is out of range for a rank-{rank} output")
    expected = list(indices.type.shape)
    expected.insert(axis, out.type.shape[axis])
    if list(out.type.shape) != expected:  # a declared output shape the kernel would read indices past
        raise InvalidModelError(f"{node.where()}: output shape {list(out.type.shape)} is not the indices' shape "
                                f"{list(indices.type.shape)} with the depth inserted at axis {axis}")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    params = ctx.params_struct("nn2c_one_hot_params_t", {
        "outer": prod(out.type.shape[:axis]), "depth": out.type.shape[axis], "inner": prod(out.type.shape[axis + 1:]),
        "index_type": _INDEX_TYPES[indices.type.dtype], "elem_size": dtype_bytes(out.type.dtype),
    })
    ctx.call("nn2c_one_hot", params, ctx.ptr(indices), ctx.ptr(values), ctx.ptr(out))


@lowering("RANGE")
def range_(node: Node, ctx: EmitContext) -> None:
    start, delta, out = node.inputs[0], node.inputs[2], node.outputs[0]
    assert start is not None and delta is not None
    suffix = {"float32": "f32", "int32": "s32"}.get(out.type.dtype)
    if suffix is None or start.type.dtype != out.type.dtype or delta.type.dtype != out.type.dtype:
        raise ctx.unsupported(f"Range of {out.type.dtype} (float32 and int32 are supported)")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    ctx.call(f"nn2c_range_{suffix}", ctx.ptr(start), ctx.ptr(delta), ctx.ptr(out), str(out.type.num_elements))


@lowering("COMPRESS")
def compress(node: Node, ctx: EmitContext) -> None:
    x, condition, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and condition is not None
    _same_dtype(ctx, x, out)
    if condition.type.dtype not in ("bool", "int8", "uint8"):
        raise ctx.unsupported(f"a condition of type {condition.type.dtype}")
    axis = node.attrs.get("axis")
    shape = list(x.type.shape)
    if axis is None:
        shape, axis = [x.type.num_elements], 0
    axis = int(axis) % len(shape)
    kept = out.type.num_elements // max(prod(shape[:axis]) * prod(shape[axis + 1:]), 1)
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("movement")
    ctx.call("nn2c_compress", ctx.ptr(x), f"(const uint8_t *)({ctx.ptr(condition)})", ctx.ptr(out),
             str(prod(shape[:axis])), str(shape[axis]), str(condition.type.num_elements),
             str(prod(shape[axis + 1:]) * dtype_bytes(x.type.dtype)), str(kept))
