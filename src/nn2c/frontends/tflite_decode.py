"""TFLite Micro's DECODE operator (custom code "TFLM_DECODE", weight compression), resolved at import.

TFLM's compressor (tflite_micro/tensorflow/lite/micro/compression/compress.py) rewrites a constant
tensor as an encoded uint8 tensor plus an *ancillary* uint8 tensor, and inserts a DECODE right before
each operator that reads it. A DECODE has inputs (encoded_0, ancillary_0, encoded_1, ancillary_1,
...) and one output per pair, whose type, shape and quantization are the original tensor's. Both
inputs are constants, so the decoded tensor is a constant too: nn2c decodes it here, exactly as
TFLM's decode_state_*.cc do at run time, and the operators read dense weights from flash. The
encoded form does not reach the generated code (a decoder in C would only cost RAM and time).

The ancillary tensor starts with the 16-byte DECODE Common Metadata (DCM): byte 0 the decode type
(0 LUT, 1 Huffman, 2 prune, 128-255 application-registered custom types), byte 1 the DCM version
(1), bytes 4-15 for the type; type-specific data follows from byte 16. Per type, as the installed
runtime (tflite_micro 0.dev20261023, kernels/decode_state_{lut,prune,huffman}.cc) reads it:

- LUT: byte 4 version (1), byte 5 bits 2-0 the index bit width (1-7), byte 6 the value-table
  stride (entries per channel). The encoded tensor holds the indices as big-endian bit fields, one
  stream over the flat tensor. Channels come from the output's quantization, not from the DCM:
  n = number of scales; channel axis 0, or the last axis when quantized_dimension is the last one
  and n > 1 (any other axis is rejected). Element e of channel c is table[c * stride + index[e]].
  (The compressor also writes the axis into byte 5 bits 7-4; this runtime ignores them, so nn2c
  does too.)
- Prune: byte 4 version (1). The encoded tensor is a bit mask (MSB first, one bit per element):
  1 takes the next value of the table, 0 the element's zero point (per channel for int8 with
  several channels and a non-zero zero point; other types must have zero points 0). float32 is
  copied as int32 bits, bool as int8.
- Huffman (Xtensa decode tables): byte 4 version (1), byte 5 bit 0 = 32-bit table entries (else
  16-bit, int8 output only), bits 7-4 = initial lookup width - 1. The encoded tensor is a bit stream
  read MSB first. A lookup reads `width` bits and indexes the table: an entry with the top bit set
  is a symbol (value in the low bits, truncated to the output type; the count field says how many
  of the bits it used, the rest are given back), otherwise it points to a sub-table (count + 1
  more bits, at the entry's offset from the current one). Output int8 or int16.

TFLM does not bound-check any of this at run time; nn2c refuses, with one line naming the DECODE
(op index) and the tensor, every encoding whose result would depend on bytes outside its tensors
(TFLM's Huffman look-ahead past the end of a stream is accepted where the table makes those bits
irrelevant, as it does for a prefix code) and what TFLM's Prepare / Eval rejects: bit widths outside 1-7, encoded or table data too short, an index
past its channel's table, Huffman streams that run out or point outside the table, unsupported
types and quantization axes. Identical decodes (the compressor inserts one DECODE per consumer of a
tensor) give one constant, so flash holds each decoded tensor once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from nn2c.errors import InvalidModelError, UnsupportedOpError
from nn2c.ir import Value

if TYPE_CHECKING:
    import tflite

    from nn2c.frontends.tflite_frontend import _Reader

# the operator name the frontend gives the DECODE custom operator
DECODE = "CUSTOM:TFLM_DECODE"

_DCM_BYTES = 16
_LUT, _HUFFMAN, _PRUNE = 0, 1, 2
_TYPE_NAMES = {_LUT: "LUT", _HUFFMAN: "Huffman", _PRUNE: "prune"}
_FIRST_CUSTOM_TYPE = 128
_MAX_LUT_BITS = 7  # DecodeStateLut::kMaxBitWidth; byte 5 keeps 3 bits of it

# output types each decoder writes (Decode's switch on output.type); anything else fails in Eval
_LUT_TYPES = frozenset({"bool", "float32", "int8", "int16", "int32", "int64"})
_PRUNE_TYPES = _LUT_TYPES
# Prune copies these types through an integer type of the same size (DecodeStatePrune::Decode)
_PRUNE_AS = {"bool": "int8", "float32": "int32"}
_HUFFMAN_TYPES = frozenset({"int8", "int16"})
# Huffman table entry fields (DecodeStateHuffman::kTable{16,32}Bit*): symbol flag, count, value
_HUFFMAN_FIELDS = {16: (0x8000, 11, 0x7FF), 32: (0x80000000, 27, 0x07FFFFFF)}


@dataclass
class DecodedTensors:
    """The DECODE outputs of one subgraph: one constant per distinct decode, and their sizes."""

    by_encoding: dict[tuple[Any, ...], Value] = field(default_factory=dict)
    tensors: int = 0
    encoded_bytes: int = 0  # encoded + ancillary bytes of the distinct decodes, as the .tflite stores them
    decoded_bytes: int = 0  # the dense constants nn2c keeps in flash instead

    def add(self, other: DecodedTensors) -> None:
        """Count the decodes of an inlined subgraph (an IF branch) with this one's."""
        self.tensors += other.tensors
        self.encoded_bytes += other.encoded_bytes
        self.decoded_bytes += other.decoded_bytes

    def summary(self) -> dict[str, int]:
        return {"tensors": self.tensors, "encoded_bytes": self.encoded_bytes, "decoded_bytes": self.decoded_bytes}


@dataclass(frozen=True)
class _Channels:
    """How TFLM's DecodeState::Setup splits the output into channels (from its quantization)."""

    count: int
    last_axis: bool  # channels interleave (quantized_dimension is the last axis), else contiguous
    zero_points: tuple[int, ...]  # per channel, as TFLM expands them (empty: not quantized)

    def of_elements(self, elements: int) -> np.ndarray:
        """The channel of every element of the flat tensor."""
        flat = np.arange(elements)
        if self.last_axis:
            return flat % self.count
        return flat // max(1, elements // self.count)


def refuse_metadata_compression(model: tflite.Model, source: str) -> None:
    """Refuse TFLM's earlier compression scheme: a COMPRESSION_METADATA entry listing LUT tensors whose
    own buffers hold the packed indices, decoded inside the kernels. The installed compressor no longer
    writes it; read as plain weights those bytes would be wrong (or fail the size check with a
    misleading message), so the model is refused with what to do."""
    for i in range(model.MetadataLength()):
        if model.Metadata(i).Name() == b"COMPRESSION_METADATA":
            raise UnsupportedOpError(f"{source}: the model is compressed with TFLM's earlier COMPRESSION_METADATA "
                                     "scheme, which nn2c does not read; compress the uncompressed model again with "
                                     "tflite_micro's compress.py (DECODE operators, which nn2c decodes)")


def decode_op(reader: _Reader, op: tflite.Operator, op_index: int, where: str, decoded: DecodedTensors) -> None:
    """Set the decoded constant of each output of one DECODE operator in `reader.values`."""
    inputs = [int(i) for i in op.InputsAsNumpy()] if op.InputsLength() else []
    outputs = [int(i) for i in op.OutputsAsNumpy()] if op.OutputsLength() else []
    if not outputs or len(inputs) != 2 * len(outputs):
        raise InvalidModelError(f"{where}: a DECODE takes two inputs (encoded, ancillary) per output; it has "
                                f"{len(inputs)} inputs and {len(outputs)} outputs; re-run TFLM's compressor")
    for k, out_index in enumerate(outputs):
        encoded_index, ancillary_index = inputs[2 * k], inputs[2 * k + 1]
        encoded = _constant_bytes(reader, encoded_index, "encoded", where)
        ancillary = _constant_bytes(reader, ancillary_index, "ancillary", where)
        if out_index in reader.values:
            raise InvalidModelError(f"{where}: output tensor {out_index} is read or written before this DECODE "
                                    "decodes it; re-run TFLM's compressor")
        out = reader.value(out_index, where)
        if out.data is not None:
            raise InvalidModelError(f"{where}: output tensor {out_index} {out.name!r} already holds data; a DECODE "
                                    "output must be empty; re-run TFLM's compressor")
        what = f"{where} output {k} (tensor {out_index} {out.name!r})"
        if out.type.num_elements == 0:  # the compressor cannot encode an empty tensor: a corrupt shape
            raise InvalidModelError(f"{what}: decodes into an empty tensor of shape {list(out.type.shape)}; "
                                    "re-run TFLM's compressor")
        channels = _channels(reader, out_index, out, what)
        key = (encoded, ancillary, out.type, channels)
        if key in decoded.by_encoding:  # another DECODE of the same tensor: one constant in flash
            reader.values[out_index] = decoded.by_encoding[key]
            continue
        out.data = decode(encoded, ancillary, out.type.dtype, out.type.shape, channels, what)
        decoded.by_encoding[key] = out
        decoded.tensors += 1
        decoded.encoded_bytes += len(encoded) + len(ancillary)
        decoded.decoded_bytes += out.type.num_bytes


def _constant_bytes(reader: _Reader, index: int, role: str, where: str) -> bytes:
    """The bytes of an encoded or ancillary tensor: its buffer, as TFLM's decoders address it (its
    declared shape, type and quantization play no part; the compressor leaves stale ones)."""
    if not 0 <= index < reader.subgraph.TensorsLength():
        raise InvalidModelError(f"{where}: its {role} input names tensor {index}, which does not exist; "
                                "re-run TFLM's compressor")
    tensor = reader.subgraph.Tensors(index)
    data = reader.buffer_bytes(tensor.Buffer())
    if data is None or tensor.IsVariable():
        raise InvalidModelError(f"{where}: its {role} input (tensor {index}) is not a constant; TFLM decodes "
                                "constant tensors only")
    return data


def _channels(reader: _Reader, index: int, out: Value, what: str) -> _Channels:
    """The channel split TFLM derives from the output tensor's flatbuffer quantization (read raw:
    micro_allocator.cc sets affine quantization only when scales and zero points are both present,
    and expands the zero points as below; the frontend's own reading differs in corner cases)."""
    q = reader.subgraph.Tensors(index).Quantization()
    if q is None or q.ScaleLength() == 0 or q.ZeroPointLength() == 0:
        return _Channels(1, False, ())
    count = q.ScaleLength()
    raw = [int(z) for z in q.ZeroPointAsNumpy()]
    zero_points = tuple(raw) if len(raw) == count else (raw[0],) * count
    axis, rank = int(q.QuantizedDimension()), len(out.type.shape)
    last_axis = axis == rank - 1 and count > 1
    if not last_axis and axis != 0:
        raise UnsupportedOpError(f"{what}: quantized_dimension {axis} (rank {rank}, {count} scales); TFLM's DECODE "
                                 "accepts axis 0, or the last axis with more than one scale")
    size = out.type.shape[axis] if out.type.shape else 1
    if count > 1 and size != count:
        raise InvalidModelError(f"{what}: {count} quantization scales for axis {axis} of size {size}")
    return _Channels(count, last_axis, zero_points)


def decode(encoded: bytes, ancillary: bytes, dtype: str, shape: tuple[int, ...], channels: _Channels,
           what: str) -> np.ndarray:
    """The tensor TFLM's DECODE writes for one (encoded, ancillary) pair: `dtype` values of `shape`."""
    if len(ancillary) < _DCM_BYTES:
        raise InvalidModelError(f"{what}: the ancillary tensor holds {len(ancillary)} bytes, fewer than the "
                                f"{_DCM_BYTES}-byte DECODE header; re-run TFLM's compressor")
    kind, version = ancillary[0], ancillary[1]
    if version != 1:
        raise InvalidModelError(f"{what}: DECODE header version {version}; TFLM reads version 1 only")
    if kind >= _FIRST_CUSTOM_TYPE:
        raise UnsupportedOpError(f"{what}: custom decode type {kind} is decoded by a handler the application "
                                 "registers with TFLM (SetCustomDecodeRegistrations), which nn2c cannot know; "
                                 "decompress that tensor before compiling")
    if kind not in _TYPE_NAMES:
        raise InvalidModelError(f"{what}: unknown decode type {kind} (TFLM decodes 0 LUT, 1 Huffman, 2 prune)")
    if ancillary[4] != 1:
        raise InvalidModelError(f"{what}: {_TYPE_NAMES[kind]} metadata version {ancillary[4]}; TFLM reads "
                                "version 1 only")
    elements = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if kind == _LUT:
        flat = _lut(encoded, ancillary, dtype, elements, channels, what)
    elif kind == _PRUNE:
        flat = _prune(encoded, ancillary, dtype, elements, channels, what)
    else:
        flat = _huffman(encoded, ancillary, dtype, elements, what)
    if dtype == "bool" and flat.size and int(flat.view(np.uint8).max()) > 1:
        raise InvalidModelError(f"{what}: a decoded bool holds the byte {int(flat.view(np.uint8).max())}; a bool "
                                "is 0 or 1")
    return flat.reshape(shape)


def _unsupported_type(kind: str, dtype: str, allowed: frozenset[str], what: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"{what}: TFLM's {kind} decoder does not write {dtype} tensors (it writes "
                              f"{', '.join(sorted(allowed))})")


def _table(ancillary: bytes, dtype: str, entries: int, kind: str, what: str) -> np.ndarray:
    """The first `entries` values of the table after the DCM, or a refusal if it is shorter."""
    np_dtype = np.dtype(dtype).newbyteorder("<")
    available = (len(ancillary) - _DCM_BYTES) // np_dtype.itemsize
    if entries > available:
        raise InvalidModelError(f"{what}: the {kind} needs {entries} {dtype} table values, the ancillary tensor "
                                f"holds {available}; re-run TFLM's compressor")
    return np.frombuffer(ancillary, dtype=np_dtype, count=entries, offset=_DCM_BYTES).astype(np.dtype(dtype))


def _lut(encoded: bytes, ancillary: bytes, dtype: str, elements: int, channels: _Channels, what: str
         ) -> np.ndarray:
    """DecodeStateLut: value-table indices of `bits` bits, MSB first, one stream over the flat tensor."""
    if dtype not in _LUT_TYPES:
        raise _unsupported_type("LUT", dtype, _LUT_TYPES, what)
    bits, stride = ancillary[5] & 0x07, ancillary[6]
    if bits == 0:
        raise InvalidModelError(f"{what}: LUT index bit width 0; TFLM decodes 1 to {_MAX_LUT_BITS} bits")
    needed = (elements * bits + 7) // 8
    if len(encoded) < needed:
        raise InvalidModelError(f"{what}: {elements} LUT indices of {bits} bits need {needed} bytes, the encoded "
                                f"tensor holds {len(encoded)}; re-run TFLM's compressor")
    table = _table(ancillary, dtype, channels.count * stride, "LUT value tables", what)
    if elements == 0:
        return table[:0]
    stream = np.unpackbits(np.frombuffer(encoded, dtype=np.uint8, count=needed))[: elements * bits]
    weights = 1 << np.arange(bits - 1, -1, -1, dtype=np.int64)
    indices = stream.reshape(elements, bits).astype(np.int64) @ weights
    if int(indices.max()) >= stride:
        first = int(np.argmax(indices >= stride))
        raise InvalidModelError(f"{what}: element {first} has LUT index {int(indices[first])}, past its channel's "
                                f"table of {stride} values; re-run TFLM's compressor")
    return table[channels.of_elements(elements) * stride + indices]


def _prune(encoded: bytes, ancillary: bytes, dtype: str, elements: int, channels: _Channels, what: str
           ) -> np.ndarray:
    """DecodeStatePrune: a bit mask (MSB first); 1 takes the next table value, 0 the zero point."""
    if dtype not in _PRUNE_TYPES:
        raise _unsupported_type("prune", dtype, _PRUNE_TYPES, what)
    zero_points = channels.zero_points
    if dtype != "int8" and any(zero_points):
        raise UnsupportedOpError(f"{what}: pruned {dtype} tensor with a non-zero zero point; TFLM's prune decoder "
                                 "needs zero points 0 for every type but int8")
    needed = (elements + 7) // 8
    if len(encoded) < needed:
        raise InvalidModelError(f"{what}: the prune mask of {elements} elements needs {needed} bytes, the encoded "
                                f"tensor holds {len(encoded)}; re-run TFLM's compressor")
    kept = np.unpackbits(np.frombuffer(encoded, dtype=np.uint8, count=needed))[:elements].astype(bool)
    as_type = _PRUNE_AS.get(dtype, dtype)
    values = _table(ancillary, as_type, int(kept.sum()), "prune", what)
    if channels.count > 1 and any(zero_points):  # DecompressToBufferPerChannelInt8
        per_channel = np.array(zero_points, dtype=np.int64).astype(np.int8)
        fill = per_channel[channels.of_elements(elements)]
    else:  # single_zero_point_, an int8_t
        first = np.array(zero_points[:1] or (0,), dtype=np.int64).astype(np.int8)
        fill = np.repeat(first, elements)
    flat = fill.astype(np.dtype(as_type))
    flat[kept] = values
    return flat.view(np.dtype(dtype))


class _BitStream:
    """The encoded tensor as TFLM's GetNextBits / PutBackBits see it: 32-bit words loaded big-endian,
    i.e. the bytes in order, most significant bit first."""

    def __init__(self, data: bytes) -> None:
        self.data = data + b"\0\0\0"  # a 3-byte window holds any read of up to 16 bits at any offset
        self.bits = 8 * len(data)
        self.position = 0

    def take(self, count: int) -> tuple[int, int]:
        """The next `count` bits, and how many of the last ones lie past the data (read as 0 here;
        TFLM reads whatever follows the tensor, which a well-formed table then ignores)."""
        start = self.position >> 3
        window = (self.data[start] << 16) | (self.data[start + 1] << 8) | self.data[start + 2]
        value = (window >> (24 - (self.position & 7) - count)) & ((1 << count) - 1)
        missing = max(0, self.position + count - self.bits)
        self.position += count
        return value, missing


def _huffman(encoded: bytes, ancillary: bytes, dtype: str, elements: int, what: str) -> np.ndarray:
    """DecodeStateHuffman, symbol by symbol (the codes have variable lengths).

    At the end of the stream a lookup may read past the data (TFLM loads whole words and looks
    `width` bits ahead); that is exact only when every entry those unknown bits can select is the
    same symbol using none of them, which is what is required there."""
    wide = bool(ancillary[5] & 0x01)
    width = ((ancillary[5] & 0xF0) >> 4) + 1
    if not wide and dtype != "int8":
        raise UnsupportedOpError(f"{what}: a Huffman table of 16-bit entries decodes int8 tensors only in TFLM, "
                                 f"this one is {dtype}")
    if dtype not in _HUFFMAN_TYPES:
        raise _unsupported_type("Huffman", dtype, _HUFFMAN_TYPES, what)
    stream = _BitStream(encoded)
    entry_bytes = 4 if wide else 2
    found, count_shift, value_mask = _HUFFMAN_FIELDS[8 * entry_bytes]
    table = np.frombuffer(ancillary, dtype=np.dtype(f"<u{entry_bytes}"), offset=_DCM_BYTES,
                          count=(len(ancillary) - _DCM_BYTES) // entry_bytes).tolist()

    def lookup(base: int, used: int, symbol: int) -> tuple[int, int]:
        """Read `used` bits, add them to `base`: the table offset reached and its entry."""
        index, missing = stream.take(used)
        offset = base + index
        if offset + (1 << missing) > len(table):
            raise InvalidModelError(f"{what}: Huffman symbol {symbol} looks up entry {offset + (1 << missing) - 1}, "
                                    f"past the table of {len(table)} entries; re-run the compressor")
        entry = table[offset]
        if missing and (any(e != entry for e in table[offset: offset + (1 << missing)]) or not entry & found
                        or (entry >> count_shift) & 0xF > used - missing):
            raise InvalidModelError(f"{what}: the Huffman stream ends inside symbol {symbol} of {elements}; "
                                    "re-run the compressor")
        return offset, entry

    out = np.empty(elements, dtype=np.int64)
    for e in range(elements):
        start = stream.position
        used = width
        offset, entry = lookup(0, used, e)
        while not entry & found:  # a sub-table of (count + 1) bits, `value` entries further on
            used = ((entry >> count_shift) & 0xF) + 1
            offset, entry = lookup(offset + (entry & value_mask), used, e)
        residual = (entry >> count_shift) & 0xF  # the bits of this lookup the symbol's code used
        if used > residual:  # PutBackBits
            stream.position -= used - residual
        out[e] = entry
        if stream.position == start:  # a code of no bits: every later symbol decodes the same way
            out[e:] = entry
            break
    # TFLM stores the entry into an int8_t / int16_t: its low bits
    return out.astype(np.dtype(f"u{np.dtype(dtype).itemsize}")).view(np.dtype(dtype))
