"""Audio front-end operators: the window functions, MelWeightMatrix and DFT.

- HannWindow / HammingWindow / BlackmanWindow / MelWeightMatrix generate a tensor whose shape is
  the value of their inputs. With constant inputs the result is a constant, computed at import by
  onnx's reference implementation. With run-time inputs the output shape must be static in the
  model (declared, or inferred): the kernel then reads the operands at run time and writes that
  shape (WINDOW of an int32 size; MEL_WEIGHT_MATRIX of int32 num_mel_bins, dft_length,
  sample_rate and float32 edges). A run-time operand of another integer type is refused (no int64
  C path), float16 / float64 edges become float32. output_datatype must be a float type.
- DFT -> DFT (float32): `axis` is the attribute before opset 20 (default 1), a constant third
  input from opset 20 (default -2); the optional dft_length input must be a constant. The transformed axis may not be the last one (that holds real / imaginary).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import (
    MAX_COMPUTED_CONSTANT_BYTES,
    ConversionContext,
    converts,
    invalid,
    unsupported,
)
from nn2c.frontends.onnx.fold import _evaluate as evaluate_onnx_node
from nn2c.ir import Value

_WINDOWS = {"HannWindow": "hann", "HammingWindow": "hamming", "BlackmanWindow": "blackman"}
_FLOAT_TYPES = {1: "float", 10: "float16", 11: "double"}  # ONNX element types nn2c keeps as float32
MAX_DFT_LENGTH = 1 << 16  # a microcontroller audio frame is far shorter; a larger one is corrupt


@converts(*_WINDOWS, "MelWeightMatrix")
def generated_tensor(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    arrays = [c.data(c.value(name)) if name else None for name in node.input]
    if all(array is not None for name, array in zip(node.input, arrays, strict=True) if name):
        _fold(c, node, arrays)
        return
    datatype = int(a.get("output_datatype", 1))
    if datatype not in _FLOAT_TYPES:
        raise unsupported(f"{node.op_type} of run-time inputs with output_datatype {datatype}: the kernel "
                          "computes float32 (output_datatype 1); make the inputs constant to fold it instead")
    if node.output[0] not in c.types:
        raise unsupported(f"{node.op_type} of run-time inputs needs a static output shape; declare it on the "
                          "model's output (or make the inputs constant)")
    if node.op_type == "MelWeightMatrix":
        _mel(c, node)
        return
    size = _int32_operand(c, node, 0, "size")
    _, shape = c.out_type(node.output[0])
    if len(shape) != 1:
        raise invalid(f"the output shape {list(shape)} of a window must have one dimension")
    periodic = int(a.get("periodic", 1))
    if periodic not in (0, 1):
        raise invalid(f"periodic={periodic}; it must be 0 or 1")
    c.emit("WINDOW", [size], [c.output(node, dtype="float32")],
           {"window": _WINDOWS[node.op_type], "periodic": bool(periodic)})


def _fold(c: ConversionContext, node: Any, arrays: list[np.ndarray | None]) -> None:
    results = evaluate_onnx_node(c.onnx, node, arrays, c.model.opset_import)
    if results is None or len(results) != 1:
        raise invalid(f"{node.op_type} cannot be evaluated on these constant inputs; check their values")
    if results[0].nbytes > MAX_COMPUTED_CONSTANT_BYTES:
        raise invalid(f"{node.op_type} would generate {results[0].nbytes:,} bytes; check its constant inputs")
    c.values[node.output[0]] = c.const(results[0], node.output[0])


def _scalar_operand(c: ConversionContext, node: Any, k: int, what: str) -> tuple[Value, np.ndarray | None]:
    """Input k, which must be a scalar, and its data when it is a constant."""
    if k >= len(node.input) or not node.input[k]:
        raise invalid(f"the {what} input is missing")
    value = c.value(node.input[k])
    if value.type.num_elements != 1:
        raise invalid(f"the {what} input must be a scalar; it has shape {list(value.type.shape)}")
    return value, c.data(value)


def _int32_operand(c: ConversionContext, node: Any, k: int, what: str) -> Value:
    """An integer scalar operand as int32: a constant is converted, a run-time one must be int32."""
    value, data = _scalar_operand(c, node, k, what)
    if data is not None:
        number = int(np.asarray(data).reshape(-1)[0])
        if not -(2**31) <= number < 2**31:
            raise invalid(f"the {what} input {number} is out of the int32 range")
        return c.int32([number], f"{node.output[0]}/{what}")
    if value.type.dtype != "int32":
        raise unsupported(f"a run-time {what} input of type {value.type.dtype} (int32 is supported; or make it "
                          "constant)")
    return value


def _float32_operand(c: ConversionContext, node: Any, k: int, what: str) -> Value:
    value, data = _scalar_operand(c, node, k, what)
    if data is not None:
        return c.const(np.asarray(data, dtype=np.float32).reshape(1), f"{node.output[0]}/{what}")
    if value.type.dtype != "float32":
        raise unsupported(f"a run-time {what} input of type {value.type.dtype} (float32 is supported)")
    return value


def _mel(c: ConversionContext, node: Any) -> None:
    operands = [_int32_operand(c, node, k, what) for k, what in enumerate(("num_mel_bins", "dft_length",
                                                                             "sample_rate"))]
    operands += [_float32_operand(c, node, k, what) for k, what in ((3, "lower_edge_hertz"),
                                                                  (4, "upper_edge_hertz"))]
    _, shape = c.out_type(node.output[0])
    if len(shape) != 2:
        raise invalid(f"the output shape {list(shape)} of MelWeightMatrix must have two dimensions")
    c.emit("MEL_WEIGHT_MATRIX", operands, [c.output(node, dtype="float32")])


@converts("DFT")
def dft(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if x.type.dtype != "float32":
        raise unsupported(f"DFT of {x.type.dtype} (float32 is supported)")
    rank = len(x.type.shape)
    if rank < 2 or x.type.shape[-1] not in (1, 2):
        raise invalid(f"the input shape {list(x.type.shape)} must end in an axis of 1 (real) or 2 (complex)")
    if c.opset >= 20:
        axis = -2
        if len(node.input) > 2 and node.input[2]:
            axis = int(np.asarray(c.const_input(node, 2, "axis")).reshape(-1)[0])
    else:
        axis = int(a.get("axis", 1))
    if not -rank <= axis < rank or axis % rank == rank - 1:
        raise invalid(f"axis {axis} for an input of rank {rank}; it must name a signal axis, not the last "
                      "(real / imaginary) one")
    axis %= rank
    inverse, onesided = int(a.get("inverse", 0)), int(a.get("onesided", 0))
    if inverse not in (0, 1) or onesided not in (0, 1):
        raise invalid(f"inverse={inverse}, onesided={onesided}; each must be 0 or 1")
    n_in = x.type.shape[axis]
    if len(node.input) > 1 and node.input[1]:
        length = int(np.asarray(c.const_input(node, 1, "dft_length")).reshape(-1)[0])
    else:
        length = 2 * (n_in - 1) if inverse and onesided else n_in
    if not 1 <= length <= MAX_DFT_LENGTH:
        raise invalid(f"dft_length {length}; it must be in [1, {MAX_DFT_LENGTH}]")
    if inverse and onesided:
        n_out, last = length, 1
    else:
        n_out, last = (length // 2 + 1 if onesided else length), 2
    shape = list(x.type.shape)
    shape[axis], shape[-1] = n_out, last
    if node.output[0] in c.types and list(c.types[node.output[0]][1]) != shape:
        raise invalid(f"the model declares the output shape {list(c.types[node.output[0]][1])}, the DFT gives "
                      f"{shape}; re-export the model")
    c.emit("DFT", [x], [c.output(node, dtype="float32", shape=shape)],
           {"axis": axis, "length": length, "inverse": bool(inverse), "onesided": bool(onesided)})
