"""Structure-aware mutations of TFLite flatbuffers.

The `tflite` schema package locates each field (a tensor's shape, type, buffer index and
quantization; an operator's opcode index and tensor lists; an operator code's version); a
mutation overwrites those bytes in place with hostile values: huge, zero or negative dimensions,
out-of-range indices, cycles, zero / negative / NaN scales, out-of-range zero points, wrong
quantization axes, operator versions that do not exist, corrupt custom-operator (FlexBuffers)
options and hostile values of their integer options (lengths, steps, counts). Byte flips and
truncation cover the rest.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tflite


@dataclass(frozen=True)
class Field:
    """A scalar at `position` in the file: `fmt` is its struct format ('<i', '<f', '<q', '<B', ...)."""

    kind: str
    position: int
    fmt: str


def _scalar(table, slot: int) -> int | None:
    offset = table._tab.Offset(slot)
    return table._tab.Pos + offset if offset else None


def _vector(table, slot: int, width: int, fmt: str, kind: str) -> list[Field]:
    offset = table._tab.Offset(slot)
    if not offset:
        return []
    start = table._tab.Vector(offset)
    length = table._tab.VectorLen(offset)
    return [Field(kind, start + i * width, fmt) for i in range(length)]


def locate_fields(data: bytes) -> list[Field]:
    """Every mutable scalar field of the model's first subgraph."""
    model = tflite.Model.GetRootAsModel(data, 0)
    fields: list[Field] = []
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        for slot, kind, fmt in ((8, "opcode.version", "<i"), (10, "opcode.builtin", "<i")):
            position = _scalar(code, slot)
            if position is not None:
                fields.append(Field(kind, position, fmt))
    sub = model.Subgraphs(0)
    fields += _vector(sub, 6, 4, "<i", "subgraph.inputs") + _vector(sub, 8, 4, "<i", "subgraph.outputs")
    for t in range(sub.TensorsLength()):
        tensor = sub.Tensors(t)
        fields += _vector(tensor, 4, 4, "<i", "tensor.shape")
        for slot, kind, fmt in ((6, "tensor.type", "<b"), (8, "tensor.buffer", "<I")):
            position = _scalar(tensor, slot)
            if position is not None:
                fields.append(Field(kind, position, fmt))
        quant = tensor.Quantization()
        if quant is not None:
            fields += _vector(quant, 8, 4, "<f", "quant.scale") + _vector(quant, 10, 8, "<q", "quant.zero_point")
            position = _scalar(quant, 16)
            if position is not None:
                fields.append(Field("quant.axis", position, "<i"))
    for o in range(sub.OperatorsLength()):
        op = sub.Operators(o)
        position = _scalar(op, 4)
        if position is not None:
            fields.append(Field("op.opcode_index", position, "<I"))
        fields += _vector(op, 6, 4, "<i", "op.inputs") + _vector(op, 8, 4, "<i", "op.outputs")
        # a custom operator's FlexBuffers options (the Signal ops of the audio preprocessors): its
        # bytes, and the integer / bool option values themselves (a frame step, a delay length)
        options = _vector(op, 14, 1, "<B", "op.custom_options")
        fields += options
        if options:
            start = options[0].position
            fields += _flex_option_fields(data[start:start + len(options)], start)
    return fields


_FLEX_MAP, _FLEX_SCALARS = 9, (1, 2, 26)  # FlexBuffers types: map; int, uint, bool (stored inline)
_WIDTH_FORMATS = {1: "<b", 2: "<h", 4: "<i", 8: "<q"}


def _flex_option_fields(raw: bytes, start: int) -> list[Field]:
    """The inline integer and bool values of a FlexBuffers option map at file position `start`, so
    that a mutation hits an option rather than the map's structure (where byte flips end in a refusal
    of the whole map). Anything but a well-formed map gives no fields."""
    if len(raw) < 3:
        return []
    root_width, root_type = raw[-1], raw[-2]
    if root_width not in _WIDTH_FORMATS or root_type >> 2 != _FLEX_MAP or len(raw) < 2 + root_width:
        return []
    root_at = len(raw) - 2 - root_width
    values_at = root_at - int.from_bytes(raw[root_at:root_at + root_width], "little")
    width = 1 << (root_type & 3)
    if width not in _WIDTH_FORMATS or values_at - width < 0:
        return []
    size = int.from_bytes(raw[values_at - width:values_at], "little")
    types_at = values_at + size * width
    if types_at + size > root_at:
        return []
    return [Field("op.custom_option", start + values_at + i * width, _WIDTH_FORMATS[width])
            for i in range(size) if raw[types_at + i] >> 2 in _FLEX_SCALARS]


_HOSTILE: dict[str, Callable[[np.random.Generator], float | int]] = {
    "<i": lambda r: int(r.choice([-1, 0, 1, 2, 3, 7, 255, 65535, 2**31 - 1, -(2**31), int(r.integers(-100, 100_000))])),
    "<I": lambda r: int(r.choice([0, 1, 2, 5, 1000, 2**31 - 1, 2**32 - 1, int(r.integers(0, 300))])),
    "<b": lambda r: int(r.integers(-128, 128)),
    "<B": lambda r: int(r.choice([0, 1, 0x7F, 0x80, 0xFF, int(r.integers(0, 256))])),
    "<q": lambda r: int(r.choice([-(2**63), -129, -128, 127, 128, 300, 2**40, int(r.integers(-300, 300))])),
    "<f": lambda r: float(r.choice([0.0, -0.5, float("nan"), float("inf"), 1e-45, 1e38, float(r.normal())])),
}


def _hostile_option(field: Field, rng: np.random.Generator) -> int:
    """An option value at the edges the kernels care about: negative, zero, one past a small size,
    the width's extremes (FlexBuffers stores a map's values in one width, 1 to 8 bytes)."""
    bits = 8 * struct.calcsize(field.fmt)
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return int(rng.choice([low, -1, 0, 1, 2, 3, 7, 64, high, int(rng.integers(low, high, endpoint=True))]))


def mutate(data: bytes, rng: np.random.Generator, fields: list[Field] | None = None) -> tuple[bytes, str]:
    """One mutated copy of `data` and a short description of what was done."""
    buf = bytearray(data)
    choice = rng.random()
    if choice < 0.1:
        cut = int(rng.integers(8, len(buf)))
        return bytes(buf[:cut]), f"truncated to {cut} B"
    if choice < 0.25 or not fields:
        flips = int(rng.integers(1, 16))
        for _ in range(flips):
            buf[int(rng.integers(8, len(buf)))] = int(rng.integers(0, 256))
        return bytes(buf), f"{flips} random bytes"
    count = int(rng.integers(1, 4))
    kinds = []
    for _ in range(count):
        field = fields[int(rng.integers(0, len(fields)))]
        value = _hostile_option(field, rng) if field.kind == "op.custom_option" else _HOSTILE[field.fmt](rng)
        if field.kind == "op.inputs" and rng.random() < 0.3:
            value = -1  # an omitted optional input where one is required
        try:
            struct.pack_into(field.fmt, buf, field.position, value)
        except struct.error:
            continue
        kinds.append(field.kind)
    return bytes(buf), "fields " + ", ".join(kinds)
