"""Operator facts: Data movement beyond reshape / transpose / pad / concatenation / split: gathers,
slices, packing, space / depth / batch rearrangements, resizing, cumulative sums, shape queries.

Pure element movers (values copied raw, so int8 outputs share the input's quantization: "tied",
and a DEQUANTIZE commutes with them) are evaluated and lowered through one offset map each
(reference/movement.py). nn2c-internal operators the ONNX importer emits:
- INDEX_MAP: out.flat[i] = x.flat[map[i]] (map: constant int32 input 1; -1 = zero / zero point);
  GatherElements, Trilu, ReverseSequence, Compress with constant operands.
- GATHER_ELEMENTS, TILE: as ONNX, with constant indices / repeats (the output shape says the tiling).
- RESIZE: ONNX Resize on float32 (inputs x, scales, optional roi; attrs mode, coord, nearest_mode,
  cubic_a, exclude_outside, extrapolation_value, scale_axes).
- COMPRESS (run-time condition, static output size), ONE_HOT, RANGE (run-time scalars, static size).
- SCATTER_ELEMENTS / SCATTER_ND_UPDATE: ONNX ScatterElements (attr axis) / ScatterND (TensorFlow's
  tensor_scatter_nd_update; TFLite's SCATTER_ND scatters into zeros instead) with run-time indices:
  inputs data, indices, updates; attr reduction none / add / mul / max / min. An index outside its
  axis skips its update (onnxruntime fails the run).
- REVERSE_SEQUENCE (as TFLite: attrs seq_dim, batch_dim) with run-time lengths; constant lengths
  become an INDEX_MAP.
- TENSOR_SCATTER: ONNX TensorScatter (a KV-cache write): inputs past cache, update, optional
  write_indices; attrs axis (>= 1), circular.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nn2c.ir.ops.info import ALL, OpInfo


def _nearest_only(attrs: Mapping[str, Any]) -> str | None:
    return None if attrs.get("mode") == "nearest" else f"an int8 RESIZE in mode {attrs.get('mode')}"


def _mover(**facts: object) -> OpInfo:
    return OpInfo("movement", int8="tied", dequantize_commutes=True, **facts)  # type: ignore[arg-type]


FACTS: dict[str, OpInfo] = {
    "SLICE": _mover(),
    "GATHER": _mover(),
    "GATHER_ND": _mover(),
    "GATHER_ELEMENTS": _mover(),
    "INDEX_MAP": _mover(),
    "PACK": OpInfo("movement", data_inputs=ALL, int8="tied"),
    "UNPACK": _mover(),
    "DEPTH_TO_SPACE": _mover(),
    "SPACE_TO_DEPTH": _mover(),
    "BATCH_TO_SPACE_ND": _mover(),
    "SPACE_TO_BATCH_ND": _mover(),
    "MIRROR_PAD": _mover(),
    "REVERSE_V2": _mover(),
    "BROADCAST_TO": _mover(),
    "TILE": _mover(),
    "EMBEDDING_LOOKUP": OpInfo("movement", data_inputs=(1,)),
    "DYNAMIC_UPDATE_SLICE": OpInfo("movement", data_inputs=(0, 1)),
    "COMPRESS": OpInfo("movement"),
    "SCATTER_ELEMENTS": OpInfo("movement", data_inputs=(0, 2)),
    "SCATTER_ND_UPDATE": OpInfo("movement", data_inputs=(0, 2)),
    "TENSOR_SCATTER": OpInfo("movement", data_inputs=(0, 1), int8="tied"),
    "REVERSE_SEQUENCE": _mover(),
    "RESIZE_NEAREST_NEIGHBOR": OpInfo("resize", int8="tied"),
    "RESIZE_BILINEAR": OpInfo("resize", int8="tied"),
    "RESIZE": OpInfo("resize", int8="tied", int8_attr_limit=_nearest_only),
    "CUMSUM": OpInfo("other"),
    "CUMPROD": OpInfo("other"),
    "FILL": OpInfo("other", data_inputs=(1,)),
    "ZEROS_LIKE": OpInfo("other"),
    "ONE_HOT": OpInfo("other"),
    "RANGE": OpInfo("other", data_inputs=(0, 2)),
    "BROADCAST_ARGS": OpInfo("shape", data_inputs=(0, 1)),
    "SHAPE": OpInfo("shape"),
}
