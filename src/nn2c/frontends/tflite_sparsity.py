"""TFLite's sparse tensor format (schema SparsityParameters), densified exactly at import.

The TFLite converter (`Optimize.EXPERIMENTAL_SPARSITY`) stores a mostly-zero constant as its nonzero
values plus per-dimension metadata, and puts a DENSIFY operator between it and its consumer.
The tensor's n dimensions may be split into blocks (block_map names the blocked dimensions; block
dimension j has size dim_metadata[n + j].dense_size), and the n + k resulting dimensions are
stored in traversal_order, each either DENSE (dense_size entries) or SPARSE_CSR (array_segments /
array_indices, like a compressed row). Walking the metadata in that order visits the stored values
in storage order (tflite FormatConverter::SparseToDense). nn2c writes them into a dense array, and
a DENSIFY of a constant becomes that constant: the sparse kernels (codegen/ops/sparse.py) then take
the zeros out again in their own layout where it pays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tflite

from nn2c.errors import InvalidModelError

_DENSE, _SPARSE_CSR = 0, 1
_INDEX_VECTORS = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}
MAX_STORED = 1 << 26  # entries a walk may visit: a corrupt dense_size cannot make it run for hours


def _index_vector(kind: int, table: Any, what: str, where: str) -> np.ndarray:
    vector_type = _INDEX_VECTORS.get(kind)
    if vector_type is None or table is None:
        raise InvalidModelError(f"{where}: sparsity {what} has no index vector (type {kind}); re-export the model")
    vector = vector_type()
    vector.Init(table.Bytes, table.Pos)
    return vector.ValuesAsNumpy().astype(np.int64) if vector.ValuesLength() else np.zeros(0, dtype=np.int64)


def densify(sparsity: Any, values: np.ndarray, shape: tuple[int, ...], where: str) -> np.ndarray:
    """The dense array of `shape` whose nonzeros `values` (the tensor's buffer, storage order) and
    `sparsity` (tflite.SparsityParameters) describe; InvalidModelError naming `where` if they disagree."""
    n = len(shape)
    order = [int(d) for d in sparsity.TraversalOrderAsNumpy()] if sparsity.TraversalOrderLength() else []
    block_map = [int(d) for d in sparsity.BlockMapAsNumpy()] if sparsity.BlockMapLength() else []
    k = len(block_map)
    levels = sparsity.DimMetadataLength()
    if sorted(order) != list(range(n + k)) or levels != n + k or not all(0 <= d < n for d in block_map):
        raise InvalidModelError(f"{where}: inconsistent sparsity parameters (traversal order {order}, block map "
                                f"{block_map}, {levels} dimension metadata for {n} dimensions); re-export the model")
    metadata = [sparsity.DimMetadata(i) for i in range(levels)]
    block = [int(metadata[n + j].DenseSize()) for j in range(k)]
    expanded = list(shape) + block
    for j, d in enumerate(block_map):
        if block[j] <= 0 or shape[d] % block[j]:
            raise InvalidModelError(f"{where}: sparsity block size {block[j]} does not divide dimension {d} "
                                    f"({shape[d]}); re-export the model")
        expanded[d] = shape[d] // block[j]
    dense = np.zeros(shape, dtype=values.dtype)
    # per stored entry reached so far: its storage slot, and its coordinates along order[0..level]
    slots = np.zeros(1, dtype=np.int64)  # the flat storage index reached so far, per visited entry
    coords = np.zeros((1, 0), dtype=np.int64)
    for level, meta in enumerate(metadata):
        size = expanded[order[level]]
        if meta.Format() == _DENSE:
            if int(meta.DenseSize()) != size:
                raise InvalidModelError(f"{where}: sparsity dimension {level} is dense with {meta.DenseSize()} "
                                        f"entries, the tensor has {size}; re-export the model")
            if slots.size * size > MAX_STORED:
                raise InvalidModelError(f"{where}: the sparsity metadata describes over {MAX_STORED:,} entries")
            coords = np.concatenate([np.repeat(coords, size, axis=0),
                                     np.tile(np.arange(size, dtype=np.int64), slots.size)[:, None]], axis=1)
            slots = (slots[:, None] * size + np.arange(size, dtype=np.int64)[None, :]).reshape(-1)
        elif meta.Format() == _SPARSE_CSR:
            segments = _index_vector(meta.ArraySegmentsType(), meta.ArraySegments(), f"dimension {level} segments",
                                     where)
            indices = _index_vector(meta.ArrayIndicesType(), meta.ArrayIndices(), f"dimension {level} indices",
                                    where)
            if (segments.size < int(slots.max(initial=-1)) + 2 or segments[0] != 0
                    or np.any(np.diff(segments) < 0) or segments[-1] > indices.size
                    or np.any(indices < 0) or np.any(indices >= size)):
                raise InvalidModelError(f"{where}: sparsity dimension {level} has inconsistent segments or "
                                        "indices; re-export the model")
            counts = segments[slots + 1] - segments[slots]
            starts = np.repeat(segments[slots], counts)
            within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
            slots = starts + within
            coords = np.concatenate([np.repeat(coords, counts, axis=0), indices[slots][:, None]], axis=1)
        else:
            raise InvalidModelError(f"{where}: sparsity dimension {level} has unknown format {meta.Format()}")
    if slots.size != values.size or (slots.size and int(slots.max()) >= values.size):
        raise InvalidModelError(f"{where}: the sparsity metadata describes {slots.size} stored values, the buffer "
                                f"holds {values.size}; re-export the model")
    expanded_coords = np.zeros((slots.size, n + k), dtype=np.int64)
    expanded_coords[:, order] = coords
    original = expanded_coords[:, :n].copy()
    for j, d in enumerate(block_map):
        original[:, d] = original[:, d] * block[j] + expanded_coords[:, n + j]
    dense[tuple(original.T)] = values[slots] if slots.size else values[:0]
    return dense
