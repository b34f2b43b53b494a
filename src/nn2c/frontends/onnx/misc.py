"""BitCast, and the operators nn2c refuses by design (with the reason, in one line).

- BitCast (opset 26) -> BITCAST: the bytes reinterpreted as `to`, a type of the same bit width
  (float32 <-> int32, int8 <-> uint8 <-> bool); a constant input is reinterpreted at import.
- SwiGLU (opset 28) -> SWISH(A, alpha) then MUL by B (same shapes, as the operator requires).
- (HannWindow / HammingWindow / BlackmanWindow / MelWeightMatrix / DFT are in spectral.py.)
- ImageDecoder decodes a compressed image (JPEG, PNG, ...) of data-dependent size, and the string
  operators work on text: none of them belongs in a static-memory microcontroller inference graph,
  so they are refused with that reason.
- TfIdfVectorizer over int32 token ids (pool_int64s) -> TFIDF_VECTORIZER with constant tables: the
  pool's grams of sizes min_gram_length .. max_gram_length, one row each (zero padded), the last
  output index of each distinct gram (as onnx's own trie keeps it); grams with ids outside the
  int32 range cannot match an int32 token and are dropped. pool_strings (text) is refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import ConversionContext, converts, invalid, unsupported
from nn2c.ir import numpy_dtype

# ONNX TensorProto element type -> IR dtype, for the types nn2c keeps as they are
_TO_DTYPE = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool"}


@converts("BitCast")
def bitcast(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    to = int(a.get("to", 0))
    if to not in _TO_DTYPE:
        raise unsupported(f"BitCast to ONNX type {to} (supported: float32, int32, int16, int8, uint8, bool, int64)")
    dtype = _TO_DTYPE[to]
    if np.dtype(numpy_dtype(dtype)).itemsize != np.dtype(numpy_dtype(x.type.dtype)).itemsize:
        raise invalid(f"BitCast from {x.type.dtype} to {dtype}: the bit widths differ")
    data = c.data(x)
    if data is not None and not x.is_variable:
        c.values[node.output[0]] = c.const(np.ascontiguousarray(data).view(numpy_dtype(dtype)), node.output[0])
        return
    c.emit("BITCAST", [x], [c.output(node, dtype=dtype, shape=x.type.shape)])


@converts("SwiGLU")
def swiglu(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    gate, value = c.value(node.input[0]), c.value(node.input[1])
    if gate.type.shape != value.type.shape or gate.type.dtype != value.type.dtype:
        raise invalid(f"A {gate.type} and B {value.type} must have one shape and type")
    swish = c.new(f"{node.output[0]}/swish", gate.type.dtype, gate.type.shape)
    c.emit("SWISH", [gate], [swish], {"alpha": float(a.get("alpha", 1.0))})
    c.emit("MUL", [swish, value], [c.output(node, dtype=gate.type.dtype, shape=gate.type.shape)],
           {"fused_activation_function": "NONE"})


@converts("TfIdfVectorizer")
def tfidf_vectorizer(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if "pool_strings" in a:
        raise unsupported("TfIdfVectorizer of strings (pool_strings): text is preprocessing outside a microcontroller "
                          "model; map the tokens to integer ids (pool_int64s) and feed those")
    if x.type.dtype != "int32":
        raise unsupported(f"TfIdfVectorizer of {x.type.dtype} tokens (int32 is supported)")
    if len(x.type.shape) not in (1, 2):
        raise invalid(f"tokens of shape {list(x.type.shape)}; TfIdfVectorizer takes [C] or [B, C]")
    mode = str(a.get("mode", ""))
    if mode not in ("TF", "IDF", "TFIDF"):
        raise invalid(f"mode {mode!r}; it must be TF, IDF or TFIDF")
    min_gram, max_gram, max_skip = (int(a.get(k, -1)) for k in ("min_gram_length", "max_gram_length",
                                                                  "max_skip_count"))
    if not 1 <= min_gram <= max_gram <= 1 << 16 or not 0 <= max_skip <= 1 << 16:
        raise invalid(f"min_gram_length {min_gram}, max_gram_length {max_gram}, max_skip_count {max_skip}; they must "
                      "satisfy 1 <= min <= max <= 65536 and 0 <= skip <= 65536")
    pool = [int(v) for v in a.get("pool_int64s", [])]
    starts = [int(v) for v in a.get("ngram_counts", [])]
    indexes = [int(v) for v in a.get("ngram_indexes", [])]
    if not indexes or min(indexes) < 0 or starts != sorted(starts) or any(not 0 <= s <= len(pool) for s in starts):
        raise invalid("ngram_counts must be ascending offsets into pool_int64s and ngram_indexes non-negative")
    outputs = max(indexes) + 1
    table: dict[tuple[int, ...], int] = {}
    gram_id = 0
    for k, start in enumerate(starts):
        size = k + 1
        end = starts[k + 1] if k + 1 < len(starts) else len(pool)
        for first in range(start, end - size + 1, size):
            if gram_id >= len(indexes):
                raise invalid(f"ngram_indexes has {len(indexes)} entries for more n-grams in the pool")
            gram = tuple(pool[first:first + size])
            if min_gram <= size <= max_gram and all(-(2**31) <= v < 2**31 for v in gram):
                table.pop(gram, None)
                table[gram] = indexes[gram_id]  # a repeated gram counts into its last index
            gram_id += 1
    width = max((len(g) for g in table), default=1)
    grams = np.zeros((max(len(table), 1), width), dtype=np.int32)
    sizes = np.zeros(max(len(table), 1), dtype=np.int32)
    targets = np.zeros(max(len(table), 1), dtype=np.int32)
    for row, (gram, index) in enumerate(table.items()):
        grams[row, :len(gram)], sizes[row], targets[row] = gram, len(gram), index
    if not table:
        sizes[0] = max_gram + 1  # a gram no window matches: the output stays zero
    weights = a.get("weights")
    name = node.output[0]
    inputs = [x, c.const(grams, f"{name}/grams"), c.const(sizes, f"{name}/sizes"), c.const(targets, f"{name}/indices")]
    if weights is not None and len(weights) > 0:
        if len(weights) != outputs:
            raise invalid(f"{len(weights)} weights for {outputs} outputs")
        inputs.append(c.const(np.asarray(weights, dtype=np.float32), f"{name}/weights"))
    shape = (*x.type.shape[:-1], outputs)
    c.emit("TFIDF_VECTORIZER", inputs, [c.output(node, dtype="float32", shape=shape)],
           {"mode": mode, "min_gram": min_gram, "max_gram": max_gram, "max_skip": max_skip})


_NOT_FOR_MICROCONTROLLERS = {
    "ImageDecoder": "decodes a compressed image (JPEG, PNG, ...) into a tensor of data-dependent size",
    "StringNormalizer": "works on string tensors",
    "StringConcat": "works on string tensors",
    "StringSplit": "works on string tensors",
    "RegexFullMatch": "works on string tensors",
}


@converts(*_NOT_FOR_MICROCONTROLLERS)
def not_for_microcontrollers(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    reason = _NOT_FOR_MICROCONTROLLERS[node.op_type]
    raise unsupported(f"{node.op_type} {reason}: it is preprocessing outside a static-memory microcontroller "
                      "model; run it before the model and feed the model its tensor output")
