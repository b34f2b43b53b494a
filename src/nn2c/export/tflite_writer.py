"""IR graph -> TensorFlow Lite flatbuffer, through the `tflite` schema package and `flatbuffers`.

Two layers:
- `serialize(tensors, operators, inputs, outputs)` writes plain specs (TensorSpec, OperatorSpec) as a
  .tflite model: one subgraph, buffer 0 empty, constant data 16-byte aligned as the TFLite converter
  writes it. Options are the schema's fields in snake_case, as the frontend (tflite_frontend.py)
  reads them (`dilation_hfactor`, `fused_activation_function`), enums by name ("SAME") or value.
  tests/tflite_builder.py builds its test models with it.
- `graph_to_tflite(graph)` turns an nn2c graph into those specs. IR operators carry TFLite builtin
  names and options, so most nodes map one to one. Two nn2c-only forms have an exact standard
  spelling and are rewritten on the way out:
  - a CONV_2D / DEPTHWISE_CONV_2D with `explicit_padding` (passes/fuse_pad.py folded a PAD into it)
    becomes PAD + the VALID convolution again: the convolution skips out-of-bounds taps, which is
    what taps holding the zero point contribute, and an int8 PAD pads with its output zero point;
  - IDENTITY (ONNX Identity / Dropout / a copied graph output) becomes a RESHAPE to its own shape.
  Anything else without a TFLite form (nn2c's LUT, an unknown option) is an UnsupportedOpError
  naming the operator.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np
import tflite

from nn2c.errors import UnsupportedOpError, UsageError
from nn2c.ir import Graph, Node, Value

DTYPE_CODES = {
    "float32": tflite.TensorType.FLOAT32,
    "int32": tflite.TensorType.INT32,
    "uint8": tflite.TensorType.UINT8,
    "int64": tflite.TensorType.INT64,
    "bool": tflite.TensorType.BOOL,
    "int16": tflite.TensorType.INT16,
    "int8": tflite.TensorType.INT8,
}

# operator -> options table, where the name is not CamelCase(op) + "Options"
OPTIONS_NAMES: dict[str, str | None] = {
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "BATCH_MATMUL": "BatchMatMulOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "SVDF": "SVDFOptions",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "LOGISTIC": None,
    "TANH": None,
    "RELU": None,
    "RELU6": None,
}

ENUMS: dict[str, type] = {
    "padding": tflite.Padding,
    "fused_activation_function": tflite.ActivationFunctionType,
    "in_data_type": tflite.TensorType,
    "out_data_type": tflite.TensorType,
}


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _camel(op: str) -> str:
    return "".join(part.capitalize() for part in op.lower().split("_"))


def _camel_field(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def is_builtin(op: str) -> bool:
    return not op.startswith("_") and isinstance(getattr(tflite.BuiltinOperator, op, None), int)


def options_table_name(op: str) -> str | None:
    """The schema's options table of a builtin operator (None: it takes no options)."""
    if op in OPTIONS_NAMES:
        return OPTIONS_NAMES[op]
    name = _camel(op) + "Options"
    return name if hasattr(tflite.BuiltinOptions, name) else None


@cache
def option_fields(table: str) -> dict[str, Callable[..., Any]]:
    """snake_case field name -> the table's `...Add<Field>` function."""
    return {snake(n[len(table) + 3 :]): getattr(tflite, n) for n in dir(tflite) if n.startswith(table + "Add")}


class OperatorOptionsError(ValueError):
    """An operator's options do not fit its schema table; `operator` is its position in the list."""

    def __init__(self, operator: int, message: str) -> None:
        super().__init__(f"operator {operator}: {message}")
        self.operator = operator
        self.reason = message


@dataclass
class TensorSpec:
    dtype: str
    shape: tuple[int, ...]
    name: str
    scale: list[float] | None = None
    zero_point: list[int] | None = None
    axis: int = 0
    data: np.ndarray | None = None
    variable: bool = False


@dataclass
class OperatorSpec:
    op: str
    inputs: list[int]
    outputs: list[int]
    options: dict[str, Any] = field(default_factory=dict)
    version: int = 1


# --- serialisation ---------------------------------------------------------------------------------
def serialize(tensors: list[TensorSpec], operators: list[OperatorSpec], inputs: list[int], outputs: list[int],
              description: str = "nn2c") -> bytes:
    """One-subgraph .tflite model. Options that do not fit their table raise OperatorOptionsError."""
    b = flatbuffers.Builder(1024)
    buffers = [_buffer(b, None)]
    buffer_of: dict[int, int] = {}
    for i, t in enumerate(tensors):
        if t.data is not None:
            buffer_of[i] = len(buffers)
            buffers.append(_buffer(b, np.ascontiguousarray(t.data).tobytes()))
    tensor_offsets = [_tensor(b, t, buffer_of.get(i, 0)) for i, t in enumerate(tensors)]
    codes: list[tuple[str, int]] = []
    for o in operators:
        if (o.op, o.version) not in codes:
            codes.append((o.op, o.version))
    code_offsets = [_opcode(b, op, version) for op, version in codes]
    op_offsets = []
    for position, o in enumerate(operators):
        try:
            op_offsets.append(_operator(b, o, codes.index((o.op, o.version))))
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:  # struct.error is a ValueError
            raise OperatorOptionsError(position, f"{o.op}: {exc}") from None

    name = b.CreateString("main")
    tensor_vec = _offsets(b, tflite.SubGraphStartTensorsVector, tensor_offsets)
    in_vec = _ints(b, tflite.SubGraphStartInputsVector, inputs)
    out_vec = _ints(b, tflite.SubGraphStartOutputsVector, outputs)
    ops_vec = _offsets(b, tflite.SubGraphStartOperatorsVector, op_offsets)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensor_vec)
    tflite.SubGraphAddInputs(b, in_vec)
    tflite.SubGraphAddOutputs(b, out_vec)
    tflite.SubGraphAddOperators(b, ops_vec)
    tflite.SubGraphAddName(b, name)
    subgraph = tflite.SubGraphEnd(b)

    text = b.CreateString(description)
    subgraphs = _offsets(b, tflite.ModelStartSubgraphsVector, [subgraph])
    codes_vec = _offsets(b, tflite.ModelStartOperatorCodesVector, code_offsets)
    buffers_vec = _offsets(b, tflite.ModelStartBuffersVector, buffers)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddDescription(b, text)
    tflite.ModelAddBuffers(b, buffers_vec)
    model = tflite.ModelEnd(b)
    b.Finish(model, file_identifier=b"TFL3")
    return bytes(b.Output())


def _ints(b: flatbuffers.Builder, start: Callable[..., Any], values: list[int]) -> int:
    start(b, len(values))
    for v in reversed(values):
        b.PrependInt32(int(v))
    return b.EndVector()


def _offsets(b: flatbuffers.Builder, start: Callable[..., Any], offsets: list[int]) -> int:
    start(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _buffer(b: flatbuffers.Builder, raw: bytes | None) -> int:
    data = None
    if raw:
        b.StartVector(1, len(raw), 16)  # 16-byte aligned, as the TFLite converter writes data
        b.head = b.head - len(raw)
        b.Bytes[b.head : b.head + len(raw)] = raw
        data = b.EndVector()
    tflite.BufferStart(b)
    if data is not None:
        tflite.BufferAddData(b, data)
    return tflite.BufferEnd(b)


def _tensor(b: flatbuffers.Builder, t: TensorSpec, buffer: int) -> int:
    name = b.CreateString(t.name)
    shape = _ints(b, tflite.TensorStartShapeVector, list(t.shape))
    quant = None
    if t.scale is not None:
        scale = b.CreateNumpyVector(np.array(t.scale, dtype=np.float32))
        zps = b.CreateNumpyVector(np.array(t.zero_point if t.zero_point is not None else [0] * len(t.scale),
                                           dtype=np.int64))
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scale)
        tflite.QuantizationParametersAddZeroPoint(b, zps)
        tflite.QuantizationParametersAddQuantizedDimension(b, t.axis)
        quant = tflite.QuantizationParametersEnd(b)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, DTYPE_CODES[t.dtype])
    tflite.TensorAddBuffer(b, buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    if t.variable:
        tflite.TensorAddIsVariable(b, True)
    return tflite.TensorEnd(b)


def _opcode(b: flatbuffers.Builder, op: str, version: int) -> int:
    code = getattr(tflite.BuiltinOperator, op)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))  # 127: "see builtin_code"
    tflite.OperatorCodeAddVersion(b, version)
    return tflite.OperatorCodeEnd(b)


def _operator(b: flatbuffers.Builder, o: OperatorSpec, code_index: int) -> int:
    options_type, options = _options(b, o)
    inputs = _ints(b, tflite.OperatorStartInputsVector, o.inputs)
    outputs = _ints(b, tflite.OperatorStartOutputsVector, o.outputs)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, code_index)
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if options is not None:
        tflite.OperatorAddBuiltinOptionsType(b, options_type)
        tflite.OperatorAddBuiltinOptions(b, options)
    return tflite.OperatorEnd(b)


def _enum_value(key: str, value: Any) -> Any:
    if key in ENUMS and isinstance(value, str):
        return int(value) if value.isdigit() else getattr(ENUMS[key], value)
    return value


def _options(b: flatbuffers.Builder, o: OperatorSpec) -> tuple[int, int | None]:
    table = options_table_name(o.op)
    if table is None:
        if o.options:
            raise ValueError(f"{o.op} takes no options, got {o.options}")
        return 0, None
    adders = option_fields(table)
    vectors: dict[str, int] = {}
    for key, value in o.options.items():
        if key not in adders:
            raise ValueError(f"{table} has no field {key!r}; fields: {sorted(adders)}")
        if isinstance(value, list | tuple | np.ndarray):
            start = getattr(tflite, f"{table}Start{_camel_field(key)}Vector")
            vectors[key] = _ints(b, start, [int(v) for v in value])
    getattr(tflite, table + "Start")(b)
    for key, value in o.options.items():
        if key in vectors:
            adders[key](b, vectors[key])
        else:
            adders[key](b, _enum_value(key, value))
    return getattr(tflite.BuiltinOptions, table), getattr(tflite, table + "End")(b)


# --- IR graph -> specs -----------------------------------------------------------------------------
_NO_TFLITE_FORM = {
    "LUT": "is nn2c's own int8 lookup table (an activation of an ONNX QDQ model)",
}


def _unsupported(node: Node, why: str, todo: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"cannot write the model as .tflite: {node.where()} {why}; {todo}")


class _Writer:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.tensors: list[TensorSpec] = []
        self.operators: list[OperatorSpec] = []
        self.index: dict[int, int] = {}  # id(Value) -> tensor index
        self.origin: list[Node] = []  # the node each operator spec was written for

    def tensor(self, value: Value) -> int:
        if id(value) in self.index:
            return self.index[id(value)]
        t = value.type
        q = t.quant
        data = None if value.is_variable or value.data is None else np.asarray(value.data, dtype=np.dtype(t.dtype))
        spec = TensorSpec(t.dtype, tuple(int(d) for d in t.shape), value.name,
                          None if q is None else [float(s) for s in q.scale],
                          None if q is None else [int(z) for z in q.zero_point],
                          0 if q is None else int(q.axis), data, value.is_variable)
        self.index[id(value)] = len(self.tensors)
        self.tensors.append(spec)
        return self.index[id(value)]

    def constant(self, name: str, array: np.ndarray) -> int:
        self.tensors.append(TensorSpec(str(array.dtype), tuple(array.shape), name, data=array))
        return len(self.tensors) - 1

    def options(self, node: Node, attrs: dict[str, Any]) -> dict[str, Any]:
        table = options_table_name(node.op)
        fields = option_fields(table) if table else {}
        options: dict[str, Any] = {}
        for key, value in attrs.items():
            if key == "version" or value is None or (isinstance(value, list | tuple) and len(value) == 0):
                continue  # the version goes to the operator code; an empty vector is an absent one
            if key not in fields:
                raise _unsupported(node, f"has the attribute {key}={value!r}, which TFLite's "
                                   f"{table or node.op} options cannot hold",
                                   "compile with a lower -O level, or drop --write-tflite")
            if key in ENUMS and isinstance(value, str) and not value.isdigit() and not hasattr(ENUMS[key], value):
                raise _unsupported(node, f"has {key}={value!r}, which is not a TFLite {ENUMS[key].__name__}",
                                   "drop --write-tflite")
            options[key] = value
        return options

    def node(self, node: Node) -> None:
        if node.op in _NO_TFLITE_FORM:
            raise _unsupported(node, f"{_NO_TFLITE_FORM[node.op]} and has no TFLite form",
                               "export the model before nn2c's -O2 passes (-O1), or drop --write-tflite")
        if node.op == "IDENTITY":
            out = node.outputs[0]
            x = node.input(0)
            if x is None:
                raise _unsupported(node, "has no input", "drop --write-tflite")
            shape = self.constant(f"{out.name}/shape", np.array(out.type.shape, dtype=np.int32))
            self.operators.append(OperatorSpec("RESHAPE", [self.tensor(x), shape], [self.tensor(out)]))
            self.origin.append(node)
            return
        if not is_builtin(node.op):
            raise _unsupported(node, "is not a TFLite builtin operator", "drop --write-tflite")
        attrs = dict(node.attrs)
        inputs = [-1 if v is None else self.tensor(v) for v in node.inputs]
        pads = attrs.pop("explicit_padding", None)
        if pads is not None:
            inputs[0] = self.unfold_pad(node, tuple(int(p) for p in pads))
            attrs["padding"] = "VALID"
        options = self.options(node, attrs)
        outputs = [self.tensor(v) for v in node.outputs]
        self.operators.append(OperatorSpec(node.op, inputs, outputs, options, int(node.attrs.get("version", 1))))
        self.origin.append(node)

    def unfold_pad(self, node: Node, pads: tuple[int, ...]) -> int:
        """PAD (top, bottom, left, right) of the NHWC input, written before the convolution."""
        x = node.input(0)
        if node.op not in ("CONV_2D", "DEPTHWISE_CONV_2D") or x is None or len(x.type.shape) != 4 or len(pads) != 4:
            raise _unsupported(node, f"has explicit padding {list(pads)}, which TFLite's {node.op} cannot take",
                               "compile with -O1 (no PAD folding), or drop --write-tflite")
        top, bottom, left, right = pads
        n, h, w, c = x.type.shape
        q = x.type.quant
        padded = TensorSpec(x.type.dtype, (n, h + top + bottom, w + left + right, c), f"{node.name or x.name}/pad",
                            None if q is None else [float(s) for s in q.scale],
                            None if q is None else [int(z) for z in q.zero_point], 0 if q is None else q.axis)
        self.tensors.append(padded)
        padded_index = len(self.tensors) - 1
        amounts = self.constant(f"{node.name or x.name}/paddings",
                                np.array([[0, 0], [top, bottom], [left, right], [0, 0]], dtype=np.int32))
        self.operators.append(OperatorSpec("PAD", [self.tensor(x), amounts], [padded_index]))
        self.origin.append(node)
        return padded_index


def graph_to_tflite(graph: Graph, description: str | None = None) -> bytes:
    """The graph as a .tflite flatbuffer; UnsupportedOpError names the first operator TFLite cannot hold."""
    writer = _Writer(graph)
    inputs = [writer.tensor(v) for v in graph.inputs]
    for node in graph.nodes:
        if node.op == "WHILE":  # its condition and body would be subgraphs of their own
            raise _unsupported(node, "loops a number of times known only at run time, and nn2c writes "
                               "single-subgraph .tflite files", "drop --write-tflite")
        writer.node(node)
    outputs = [writer.tensor(v) for v in graph.outputs]
    text = description if description is not None else f"nn2c export of {graph.name}"
    try:
        return serialize(writer.tensors, writer.operators, inputs, outputs, text)
    except OperatorOptionsError as exc:
        raise _unsupported(writer.origin[exc.operator], f"has options TFLite cannot hold ({exc.reason})",
                           "drop --write-tflite") from None


def write_bytes_atomically(data: bytes, path: str | Path) -> Path:
    """Write the file whole or not at all (a failure leaves no truncated model behind)."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{path}: is a folder; give a file name for the .tflite model")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return path


def write_tflite(graph: Graph, path: str | Path, description: str | None = None) -> Path:
    """graph_to_tflite, written to path."""
    return write_bytes_atomically(graph_to_tflite(graph, description), path)
