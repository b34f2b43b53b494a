"""TensorFlow Lite flatbuffer -> IR, through the `tflite` package (generated from the official schema).

Only the first subgraph is imported, except for resource variables: VAR_HANDLE is resolved at import
(each (container, shared_name) pair, matched as TFLM's MicroResourceVariables::FindId does, becomes
one state value), and the init subgraph of a CALL_ONCE is evaluated here (it assigns constants):
see _ResourceVariables and ir/ops/state.py. An IF's branch subgraphs are inlined (_inline_if); a WHILE
is unrolled when its trip count is fixed at compile time (frontends/tflite_while.py). TFLM's DECODE
(weight compression) is decoded into constants (frontends/tflite_decode.py). Attributes keep
the schema's option names in snake_case, with enums turned into their names (padding="SAME",
fused_activation_function="RELU6").
"""

from __future__ import annotations

import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np
import tflite

from nn2c.errors import InvalidModelError, UnsupportedOpError
from nn2c.frontends import tflite_custom, tflite_decode, tflite_sparsity
from nn2c.ir import (
    Graph,
    GraphInvariantError,
    Node,
    QuantParams,
    TensorType,
    Value,
    dtype_bytes,
    verify,
)

# TFLite TensorType enum value -> IR dtype name (only the ones nn2c computes with)
_TENSOR_TYPES = {
    tflite.TensorType.FLOAT32: "float32",
    tflite.TensorType.INT32: "int32",
    tflite.TensorType.UINT8: "uint8",
    tflite.TensorType.INT64: "int64",
    tflite.TensorType.BOOL: "bool",
    tflite.TensorType.INT16: "int16",
    tflite.TensorType.INT8: "int8",
}

_SKIPPED_METHODS = re.compile(r"^(GetRootAs.*|Init|.*BufferHasIdentifier|.*AsNumpy|.*Length|.*IsNone)$")


def _enum_names(enum_class: type) -> dict[int, str]:
    return {v: k for k, v in vars(enum_class).items() if not k.startswith("_") and isinstance(v, int)}


@cache
def _operator_names() -> dict[int, str]:
    return _enum_names(tflite.BuiltinOperator)


@cache
def _options_names() -> dict[int, str]:
    return _enum_names(tflite.BuiltinOptions)


@cache
def _type_names() -> dict[int, str]:
    return _enum_names(tflite.TensorType)


_ENUM_ATTRS: dict[str, dict[int, str]] = {
    "fused_activation_function": _enum_names(tflite.ActivationFunctionType),
    "padding": _enum_names(tflite.Padding),
}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _read_options(op: tflite.Operator) -> dict[str, Any]:
    """Every scalar and vector field of the operator's builtin options, by snake_case name."""
    type_index = op.BuiltinOptionsType()
    if type_index == 0:
        return {}
    class_name = _options_names().get(type_index)
    options_class = getattr(tflite, class_name, None) if class_name else None
    table = op.BuiltinOptions()
    if options_class is None or table is None:
        return {}
    options = options_class()
    options.Init(table.Bytes, table.Pos)
    attrs: dict[str, Any] = {}
    for method_name in dir(options_class):
        if method_name.startswith("_") or _SKIPPED_METHODS.match(method_name):
            continue
        method = getattr(options, method_name)
        if hasattr(options, method_name + "AsNumpy"):
            vector = getattr(options, method_name + "AsNumpy")()
            attrs[_snake(method_name)] = [] if isinstance(vector, int) else [int(x) for x in vector]
            continue
        try:
            value = method()
        except TypeError:
            continue
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        key = _snake(method_name)
        if key in _ENUM_ATTRS and isinstance(value, int):
            value = _ENUM_ATTRS[key].get(value, str(value))
        attrs[key] = value
    return attrs


def _quant(tensor: tflite.Tensor) -> QuantParams | None:
    q = tensor.Quantization()
    if q is None or q.ScaleLength() == 0:
        return None
    scales = tuple(float(s) for s in q.ScaleAsNumpy())
    zero_points = tuple(int(z) for z in q.ZeroPointAsNumpy()) if q.ZeroPointLength() else (0,)
    if len(zero_points) == 1 and len(scales) > 1:
        zero_points = zero_points * len(scales)
    return QuantParams(scales, zero_points, int(q.QuantizedDimension()))


_MAX_TENSOR_BYTES = 1 << 30  # no microcontroller model has a 1 GiB tensor; larger is a corrupt shape


def _check_quant(quant: QuantParams | None, dtype: str, shape: tuple[int, ...], where: str) -> None:
    """Reject quantization that no runtime could compute with (zero, negative or NaN scales, ...)."""
    if quant is None:
        return
    if not all(math.isfinite(s) and s > 0 for s in quant.scale):
        raise InvalidModelError(f"{where}: quantization scale must be finite and positive, got "
                                f"{', '.join(f'{s:g}' for s in quant.scale[:4])}; re-quantize the model")
    if dtype in ("int8", "int16", "uint8"):
        lo, hi = {"int8": (-128, 127), "int16": (-32768, 32767), "uint8": (0, 255)}[dtype]
        bad = [z for z in quant.zero_point if not lo <= z <= hi]
        if bad:
            raise InvalidModelError(f"{where}: zero point {bad[0]} is outside the {dtype} range; re-quantize the model")
    if quant.per_channel:
        if not 0 <= quant.axis < len(shape) or shape[quant.axis] != len(quant.scale):
            raise InvalidModelError(f"{where}: {len(quant.scale)} per-channel scales do not match axis "
                                    f"{quant.axis} of shape {list(shape)}; re-export the model")
        if len(quant.zero_point) != len(quant.scale):
            raise InvalidModelError(f"{where}: {len(quant.zero_point)} zero points for {len(quant.scale)} scales")


def _builtin_code(code: tflite.OperatorCode) -> int:
    """The operator's builtin code as TFLM's GetBuiltinCode reads it: the larger of the two fields.

    The `tflite` package's BuiltinCode() answers the deprecated int8 field whenever the int32 field
    is below 127, which turns CUSTOM (32) into ADD (0) in files that leave the deprecated field 0, as
    TFLM's compressor writes its DECODE operators; so the int32 field (slot 3) is read here."""
    offset = code._tab.Offset(10)
    field = code._tab.Get(flatbuffers.number_types.Int32Flags, offset + code._tab.Pos) if offset else 0
    return max(int(field), int(code.DeprecatedBuiltinCode()))


def _name(tensor: tflite.Tensor, index: int) -> str:
    raw = tensor.Name()
    return raw.decode("utf-8", "replace") if raw else f"tensor_{index}"


class _Reader:
    def __init__(self, data: bytes, source: str, subgraph: int = 0) -> None:
        self.data = data
        self.source = source
        self.model = tflite.Model.GetRootAsModel(data, 0)
        if self.model.SubgraphsLength() < 1:
            raise InvalidModelError(f"{source}: the model has no subgraph; re-export it")
        if not 0 <= subgraph < self.model.SubgraphsLength():
            raise InvalidModelError(f"{source}: subgraph {subgraph} does not exist")
        self.subgraph = self.model.Subgraphs(subgraph)
        self.values: dict[int, Value] = {}
        self.decoded = tflite_decode.DecodedTensors()  # the DECODE outputs of this subgraph

    def buffer_bytes(self, index: int) -> bytes | None:
        if not 0 <= index < self.model.BuffersLength():
            raise InvalidModelError(f"{self.source}: buffer index {index} is out of range")
        buffer = self.model.Buffers(index)
        offset = buffer.Offset()
        if offset > 1:  # large models keep tensor data after the flatbuffer
            size = buffer.Size()
            if offset + size > len(self.data):
                raise InvalidModelError(f"{self.source}: buffer {index} lies past the end of the file")
            return self.data[offset : offset + size]
        if buffer.DataLength() == 0:
            return None
        return buffer.DataAsNumpy().tobytes()

    def value(self, index: int, where: str) -> Value:
        if index in self.values:
            return self.values[index]
        if not 0 <= index < self.subgraph.TensorsLength():
            raise InvalidModelError(f"{self.source}: {where} names tensor {index}, which does not exist")
        tensor = self.subgraph.Tensors(index)
        name = _name(tensor, index)
        type_code = tensor.Type()
        dtype = _TENSOR_TYPES.get(type_code)
        if dtype is None:
            type_name = _type_names().get(type_code, str(type_code))
            raise UnsupportedOpError(
                f"{self.source}: tensor {index} {name!r} has type {type_name}, which nn2c does not support"
            )
        shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
        if any(d < 0 for d in shape):
            raise UnsupportedOpError(
                f"{self.source}: tensor {index} {name!r} has a dynamic shape {list(shape)}; "
                "export the model with fixed input shapes (batch 1)"
            )
        raw = self.buffer_bytes(tensor.Buffer())
        quant = _quant(tensor)
        if quant is not None and quant.per_channel and len(shape) == 1 and shape[0] == len(quant.scale):
            # some converters leave a stale quantized_dimension on 1-D bias tensors (person_detect);
            # TFLM ignores it, and a 1-D tensor has only axis 0
            quant = QuantParams(quant.scale, quant.zero_point, 0)
        ttype = TensorType(dtype, shape, quant)
        _check_quant(ttype.quant, dtype, shape, f"{self.source}: tensor {index} {name!r}")
        if ttype.num_bytes > _MAX_TENSOR_BYTES:
            raise InvalidModelError(f"{self.source}: tensor {index} {name!r} would need {ttype.num_bytes:,} bytes "
                                    f"(shape {list(shape)}); the shape is corrupt")
        data = None
        sparsity = tensor.Sparsity()
        if raw is not None and sparsity is not None:  # TFLite's sparse format: densified here
            if len(raw) % dtype_bytes(dtype):
                raise InvalidModelError(f"{self.source}: tensor {index} {name!r} holds {len(raw)} bytes, not whole "
                                        f"{dtype} values")
            stored = np.frombuffer(raw, dtype=np.dtype(dtype))
            data = tflite_sparsity.densify(sparsity, stored, shape, f"{self.source}: tensor {index} {name!r}")
        elif raw is not None:
            expected = ttype.num_bytes
            if len(raw) != expected:
                raise InvalidModelError(
                    f"{self.source}: tensor {index} {name!r} holds {len(raw)} bytes, "
                    f"but its type {ttype} needs {expected}"
                )
            data = np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()
        is_variable = bool(tensor.IsVariable())
        if is_variable and data is None:
            data = np.zeros(shape, dtype=np.dtype(dtype))
        value = Value(name=name, type=ttype, data=data, is_variable=is_variable)
        self.values[index] = value
        return value

    def operator_name(self, op: tflite.Operator, op_index: int) -> str:
        code_index = op.OpcodeIndex()
        if not 0 <= code_index < self.model.OperatorCodesLength():
            raise InvalidModelError(f"{self.source}: op #{op_index} has an invalid operator code index")
        code = self.model.OperatorCodes(code_index)
        builtin = _builtin_code(code)
        if builtin == tflite.BuiltinOperator.CUSTOM:
            custom = (code.CustomCode() or b"?").decode("utf-8", "replace")
            return f"CUSTOM:{custom}"
        return _operator_names().get(builtin, f"UNKNOWN_{builtin}")

    def add_op(self, graph: Graph, op: tflite.Operator, op_name: str, op_index: int, where: str) -> None:
        """Append the node of one operator of this reader's subgraph (an IF: its inlined branches)."""
        if op_name == tflite_decode.DECODE:  # its output tensors are read only once decoded
            tflite_decode.decode_op(self, op, op_index, f"{self.source}: {where}", self.decoded)
            return
        inputs = [
            None if int(i) < 0 else self.value(int(i), where)
            for i in (op.InputsAsNumpy() if op.InputsLength() else [])
        ]
        outputs = [self.value(int(i), where) for i in (op.OutputsAsNumpy() if op.OutputsLength() else [])]
        attrs = _read_options(op)
        attrs["version"] = int(self.model.OperatorCodes(op.OpcodeIndex()).Version())
        if op_name == "GELU":  # TFLite's GeluOptions.approximate is a bool; the IR's is ONNX's "none" / "tanh"
            attrs["approximate"] = "tanh" if attrs.get("approximate") else "none"
        if op_name == "IF":
            _inline_if(self, graph, inputs, outputs, attrs, op_index)
            return
        if op_name == "DENSIFY":  # of a sparse constant, densified at import: its output is that constant
            if len(inputs) != 1 or len(outputs) != 1 or inputs[0] is None or inputs[0].data is None:
                raise UnsupportedOpError(f"{self.source}: {where}: DENSIFY of a tensor that is not a constant")
            if inputs[0].type.shape != outputs[0].type.shape or inputs[0].type.dtype != outputs[0].type.dtype:
                raise InvalidModelError(f"{self.source}: {where}: DENSIFY changes the tensor's type "
                                        f"({inputs[0].type} -> {outputs[0].type})")
            out_index = int(op.OutputsAsNumpy()[0])
            model_io = {int(i) for i in self.subgraph.InputsAsNumpy()} | {int(i) for i in self.subgraph.OutputsAsNumpy()}
            if outputs[0].data is not None or outputs[0].producer is not None or out_index in model_io:
                raise InvalidModelError(f"{self.source}: {where}: DENSIFY writes tensor {out_index} "
                                        f"{outputs[0].name!r}, which is a model input or output or has another "
                                        "producer; re-export the model")
            outputs[0].data = inputs[0].data
            return
        if op_name.startswith("CUSTOM:"):
            where = f"{self.source}: {where}"
            tflite_custom.add_custom_node(graph, op, op_name, op_index, inputs, outputs, attrs, where)
            return
        if op_name == "WHILE":
            # imported here: tflite_while reads the loop's subgraphs through this module's _Reader
            from nn2c.frontends.tflite_while import unroll_while

            unroll_while(self, graph, inputs, outputs, attrs, op_index)
            return
        graph.add_node(Node(op_name, inputs, outputs, attrs, name=outputs[0].name if outputs else "", index=op_index))

    def graph(self, name: str) -> Graph:
        graph = Graph(name)
        tflite_decode.refuse_metadata_compression(self.model, self.source)
        sub = self.subgraph
        graph.inputs = [self.value(int(i), "the model input list") for i in sub.InputsAsNumpy()]
        ops = [sub.Operators(i) for i in range(sub.OperatorsLength())]
        names = [self.operator_name(op, i) for i, op in enumerate(ops)]
        custom = tflite_custom.refused([n for n in names if n != tflite_decode.DECODE])
        if custom:
            first = names.index(f"CUSTOM:{custom[0]}")
            raise UnsupportedOpError(
                f"{self.source}: custom operators are not supported: {', '.join(custom)} "
                f"(first at op #{first}); replace them with builtin operators or run them outside nn2c "
                f"(nn2c compiles these custom operators: {', '.join(tflite_custom.CUSTOM_OPS)})"
            )
        if any(n.startswith("CUSTOM:") for n in names):
            tflite_custom.declare_unsigned(self, ops, names)
        resources = _ResourceVariables(self, ops, names) if _RESOURCE_OPS.intersection(names) else None
        for op_index, (op, op_name) in enumerate(zip(ops, names, strict=True)):
            where = f"op #{op_index} {op_name}"
            if resources is not None and op_name in _RESOURCE_OPS:
                resources.add_node(graph, op, op_name, op_index)
                continue
            self.add_op(graph, op, op_name, op_index, where)
        graph.outputs = [self.value(int(i), "the model output list") for i in sub.OutputsAsNumpy()]
        for value in graph.inputs + graph.outputs:  # the caller's buffers live in the arena, state apart
            if value.is_variable:
                raise InvalidModelError(f"{self.source}: model input/output {value.name!r} is marked as a variable "
                                        "(state) tensor; re-export the model")
        description = self.model.Description()
        graph.metadata["description"] = description.decode("utf-8", "replace") if description else ""
        graph.metadata["source_format"] = "tflite"
        if self.decoded.tensors:  # flash: the dense tensors nn2c keeps against the compressed bytes
            graph.metadata["decode"] = self.decoded.summary()
        return graph


_RESOURCE_OPS = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE"})
# builtins that leave no node of their own: resolved into state values, or inlined, at import (WHILE
# is unrolled when its iterations are known at compile time, else it is a WHILE node)
RESOLVED_AT_IMPORT = frozenset({"VAR_HANDLE", "IF", "DENSIFY"})


class _Variable:
    """One resource variable: its state value and what orders the nodes that touch it."""

    def __init__(self, container: str | None, shared_name: str) -> None:
        self.container = container
        self.shared_name = shared_name
        self.state: Value | None = None
        self.init: np.ndarray | None = None  # the CALL_ONCE init subgraph's value
        self.last_write: Value | None = None  # ordering token of the last assignment
        self.reads: list[Value] = []  # results of reads since that assignment


class _ResourceVariables:
    """VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE / CALL_ONCE resolved at import (TFLM semantics).

    A variable gets the type of the first ASSIGN_VARIABLE value TFLM prepares (subgraph 0 in op order,
    then the init subgraphs: MicroResourceVariables::Allocate sizes the buffer there) and starts at
    that tensor's zero point (memset of the int8-cast zero point, 0 when not quantized).
    """

    def __init__(self, reader: _Reader, ops: list[tflite.Operator], names: list[str]) -> None:
        self.reader = reader
        self.source = reader.source
        self.variables: list[_Variable] = []
        self.handles: dict[int, _Variable] = {}  # subgraph 0 tensor index -> variable
        self.init_values: dict[int, list[tuple[_Variable, np.ndarray]]] = {}  # op index -> CALL_ONCE's values
        for op_index, (op, name) in enumerate(zip(ops, names, strict=True)):
            if name == "VAR_HANDLE":
                self._handle(op, self.handles, op_index)
            elif name == "ASSIGN_VARIABLE":
                where = self._where(op_index, name)
                self._allocate(self._variable(op, self.handles, op_index), reader.value(self._input(op, 1), where))
        for op_index, (op, name) in enumerate(zip(ops, names, strict=True)):
            if name == "CALL_ONCE":
                self.init_values[op_index] = self._run_init(op, op_index)

    # --- resolution ---------------------------------------------------------------------------
    def _where(self, op_index: int, name: str, subgraph: int = 0) -> str:
        prefix = f"subgraph {subgraph} " if subgraph else ""
        return f"{self.source}: {prefix}op #{op_index} {name}"

    @staticmethod
    def _input(op: tflite.Operator, i: int) -> int:
        return int(op.InputsAsNumpy()[i]) if op.InputsLength() > i else -1

    def _find_or_create(self, container: str | None, shared_name: str) -> _Variable:
        # MicroResourceVariables::FindId: a missing container matches any
        for variable in self.variables:
            if (not container or container == variable.container) and shared_name == variable.shared_name:
                return variable
        variable = _Variable(container, shared_name)
        self.variables.append(variable)
        return variable

    def _handle(self, op: tflite.Operator, handles: dict[int, _Variable], op_index: int, subgraph: int = 0) -> None:
        attrs = _read_options(op)
        if op.OutputsLength() != 1:
            raise InvalidModelError(f"{self._where(op_index, 'VAR_HANDLE', subgraph)}: needs one output")
        shared_name = str(attrs.get("shared_name") or "")
        handles[int(op.OutputsAsNumpy()[0])] = self._find_or_create(attrs.get("container") or None, shared_name)

    def _variable(self, op: tflite.Operator, handles: dict[int, _Variable], op_index: int, subgraph: int = 0
                  ) -> _Variable:
        tensor = self._input(op, 0)
        if tensor not in handles:
            raise UnsupportedOpError(f"{self._where(op_index, 'resource operator', subgraph)}: its resource "
                                     f"tensor {tensor} does not come from a VAR_HANDLE of the same subgraph")
        return handles[tensor]

    def _allocate(self, variable: _Variable, value: Value) -> None:
        if variable.state is not None:
            return
        t = value.type
        zero_point = t.quant.zero_point[0] if t.quant is not None else 0
        if t.dtype != "int8" and zero_point & 0xFF:
            raise UnsupportedOpError(
                f"{self.source}: resource variable {variable.shared_name!r} is {t.dtype} with zero point "
                f"{zero_point}; TFLM resets it to bytes of value {zero_point} & 0xFF, which nn2c does not reproduce")
        name = variable.shared_name or f"variable_{self.variables.index(variable)}"
        variable.state = Value(name=name, type=TensorType(t.dtype, t.shape, t.quant),
                               data=np.zeros(t.shape, dtype=np.dtype(t.dtype)), is_variable=True)

    def _run_init(self, op: tflite.Operator, op_index: int) -> list[tuple[_Variable, np.ndarray]]:
        """Evaluate a CALL_ONCE's init subgraph: VAR_HANDLEs and ASSIGN_VARIABLEs of constants."""
        index = int(_read_options(op).get("init_subgraph_index", -1))
        if not 1 <= index < self.reader.model.SubgraphsLength():
            raise InvalidModelError(f"{self._where(op_index, 'CALL_ONCE')}: init subgraph {index} does not exist")
        sub = _Reader(self.reader.data, self.source, index)
        handles: dict[int, _Variable] = {}
        assigned: dict[int, tuple[_Variable, np.ndarray]] = {}
        for k in range(sub.subgraph.OperatorsLength()):
            init_op = sub.subgraph.Operators(k)
            name = sub.operator_name(init_op, k)
            if name == "VAR_HANDLE":
                self._handle(init_op, handles, k, index)
                continue
            if name != "ASSIGN_VARIABLE":
                raise UnsupportedOpError(f"{self._where(k, name, index)}: a CALL_ONCE init subgraph may only hold "
                                         "VAR_HANDLE and ASSIGN_VARIABLE of constants in nn2c")
            variable = self._variable(init_op, handles, k, index)
            value = sub.value(self._input(init_op, 1), f"op #{k} ASSIGN_VARIABLE")
            if not value.is_constant or value.data is None:
                raise UnsupportedOpError(f"{self._where(k, name, index)}: the initial value of "
                                         f"{variable.shared_name!r} is not a constant")
            self._allocate(variable, value)
            assert variable.state is not None
            state_type = variable.state.type
            if value.type.num_bytes != state_type.num_bytes:
                raise UnsupportedOpError(f"{self._where(k, name, index)}: initial value of {value.type.num_bytes} "
                                         f"bytes for variable {variable.shared_name!r} of {state_type.num_bytes}")
            raw = np.ascontiguousarray(value.data).tobytes()
            data = np.frombuffer(raw, dtype=np.dtype(state_type.dtype)).reshape(state_type.shape).copy()
            assigned[id(variable)] = (variable, data)  # a later assignment overwrites an earlier one
        return sorted(assigned.values(), key=lambda pair: self.variables.index(pair[0]))

    # --- nodes of subgraph 0 -------------------------------------------------------------------
    def _state(self, variable: _Variable, where: str) -> Value:
        if variable.state is None:
            raise UnsupportedOpError(f"{where}: resource variable {variable.shared_name!r} is read but never "
                                     "assigned (TFLite Micro never allocates it)")
        return variable.state

    @staticmethod
    def _order(variable: _Variable, after_reads: bool) -> list[Value]:
        order = [variable.last_write] if variable.last_write is not None else []
        return order + (variable.reads if after_reads else [])

    def _token(self, graph: Graph, variable: _Variable) -> Value:
        assert variable.state is not None
        token = graph.new_value(f"{variable.state.name}_written", "int8", (1,))
        variable.last_write, variable.reads = token, []
        return token

    def add_node(self, graph: Graph, op: tflite.Operator, name: str, op_index: int) -> None:
        where = self._where(op_index, name)
        attrs = {"version": int(self.reader.model.OperatorCodes(op.OpcodeIndex()).Version())}
        if name == "VAR_HANDLE":
            return  # resolved in __init__
        if name == "READ_VARIABLE":
            variable = self._variable(op, self.handles, op_index)
            state = self._state(variable, where)
            if op.OutputsLength() != 1:
                raise InvalidModelError(f"{where}: needs one output")
            out = self.reader.value(int(op.OutputsAsNumpy()[0]), where)
            if out.type.num_bytes != state.type.num_bytes:
                raise UnsupportedOpError(f"{where}: reads {out.type.num_bytes} bytes from variable "
                                         f"{variable.shared_name!r} of {state.type.num_bytes} bytes")
            graph.add_node(Node(name, [state, *self._order(variable, False)], [out], attrs, out.name, op_index))
            variable.reads.append(out)
        elif name == "ASSIGN_VARIABLE":
            variable = self._variable(op, self.handles, op_index)
            state = self._state(variable, where)
            value = self.reader.value(self._input(op, 1), where)
            if value.type.num_bytes != state.type.num_bytes:
                raise UnsupportedOpError(f"{where}: assigns {value.type.num_bytes} bytes to variable "
                                         f"{variable.shared_name!r} of {state.type.num_bytes} bytes")
            inputs: list[Value | None] = [state, value, *self._order(variable, True)]
            graph.add_node(Node(name, inputs, [self._token(graph, variable)], attrs, state.name, op_index))
        elif name == "CALL_ONCE":
            self._call_once(graph, attrs, op_index)

    def _call_once(self, graph: Graph, attrs: dict[str, Any], op_index: int) -> None:
        pairs = self.init_values[op_index]
        if not pairs:
            return
        states = [self._state(v, self._where(op_index, "CALL_ONCE")) for v, _ in pairs]
        inits = [graph.const(data, f"{state.name}_init", state.type.quant) for state, (_, data) in
                 zip(states, pairs, strict=True)]
        order = [value for variable, _ in pairs for value in self._order(variable, True)]
        token = graph.new_value("call_once_done", "int8", (1,))
        graph.add_node(Node("CALL_ONCE", [*states, *inits, *order], [token], {**attrs, "variables": len(pairs)},
                            "call_once", op_index))
        for variable, _ in pairs:
            variable.last_write, variable.reads = token, []


_BRANCH_REFUSED = _RESOURCE_OPS | {"IF", "WHILE"}


def _inline_if(reader: _Reader, graph: Graph, inputs: list[Value | None], outputs: list[Value],
               attrs: dict[str, Any], op_index: int) -> None:
    """IF (TFLM if.cc: run the then or else subgraph on inputs[1:], copy its outputs to the IF's).

    Both branches are inlined and run; IF_MERGE then copies the chosen branch's bytes into each
    output. The results are TFLM's, since a branch has no side effects here (branches with
    resource variables or nested control flow are refused); the cost is running both branches.
    """
    where = f"{reader.source}: op #{op_index} IF"
    if not inputs or inputs[0] is None or inputs[0].type.dtype != "bool" or inputs[0].type.num_elements < 1:
        raise UnsupportedOpError(f"{where}: the condition (input 0) must be a bool tensor")
    operands = [v for v in inputs[1:] if v is not None]
    branches = [_inline_branch(reader, graph, int(attrs.get(key, -1)), operands, op_index)
                for key in ("then_subgraph_index", "else_subgraph_index")]
    for j, out in enumerate(outputs):
        if any(len(branch) != len(outputs) for branch in branches):
            raise InvalidModelError(f"{where}: its branches return {[len(b) for b in branches]} tensors, "
                                    f"the IF has {len(outputs)} outputs")
        chosen = [branch[j] for branch in branches]
        if any(v.type.dtype != out.type.dtype or v.type.num_bytes != out.type.num_bytes for v in chosen):
            raise UnsupportedOpError(f"{where}: branch output {j} does not have the type of output {out.name!r}")
        graph.add_node(Node("IF_MERGE", [inputs[0], *chosen], [out], {"version": attrs["version"]}, out.name, op_index))


def _inline_branch(reader: _Reader, graph: Graph, index: int, operands: list[Value], op_index: int) -> list[Value]:
    where = f"{reader.source}: op #{op_index} IF"
    if not 1 <= index < reader.model.SubgraphsLength():
        raise InvalidModelError(f"{where}: branch subgraph {index} does not exist")
    sub = _Reader(reader.data, reader.source, index)
    sub_inputs = [int(i) for i in sub.subgraph.InputsAsNumpy()] if sub.subgraph.InputsLength() else []
    if len(sub_inputs) != len(operands):
        raise InvalidModelError(f"{where}: subgraph {index} takes {len(sub_inputs)} inputs, the IF passes "
                                f"{len(operands)}")
    for tensor, value in zip(sub_inputs, operands, strict=True):
        sub.values[tensor] = value  # TFLM copies the IF's inputs into the branch's input tensors
    seeded = {id(v) for v in operands}
    for k in range(sub.subgraph.OperatorsLength()):
        op = sub.subgraph.Operators(k)
        name = sub.operator_name(op, k)
        if name in _BRANCH_REFUSED or (name.startswith("CUSTOM:") and name != tflite_decode.DECODE):
            raise UnsupportedOpError(f"{where}: subgraph {index} op #{k} {name} is not supported inside an IF "
                                     "branch (nn2c runs both branches)")
        sub.add_op(graph, op, name, op_index, f"subgraph {index} op #{k} {name}")
    results = [sub.value(int(i), f"subgraph {index} output list") for i in sub.subgraph.OutputsAsNumpy()]
    reader.decoded.add(sub.decoded)
    if any(v.is_variable for v in sub.values.values()):
        raise UnsupportedOpError(f"{where}: subgraph {index} keeps state (a variable tensor), which nn2c does not "
                                 "support inside an IF branch (nn2c runs both branches)")
    for value in sub.values.values():  # branch tensor names often repeat the main graph's
        if id(value) not in seeded:
            value.name = f"if{op_index}_branch{index}/{value.name}"
    return results


def is_tflite(data: bytes) -> bool:
    return len(data) >= 8 and data[4:8] == b"TFL3"


def load_tflite(path: str | Path, data: bytes | None = None) -> Graph:
    """Read a .tflite file into a Graph; malformed files raise InvalidModelError."""
    path = Path(path)
    if data is None:
        data = path.read_bytes()
    if not is_tflite(data):
        raise InvalidModelError(
            f"{path}: not a TensorFlow Lite model (no 'TFL3' identifier at byte 4); "
            "pass a .tflite flatbuffer"
        )
    graph_name = re.sub(r"\W", "_", path.stem) or "model"
    try:
        graph = _Reader(data, str(path)).graph(graph_name)
        verify(graph)
        return graph
    except GraphInvariantError as exc:
        raise InvalidModelError(f"{path}: the model's graph is inconsistent ({exc}); re-export the model") from None
    except (InvalidModelError, UnsupportedOpError):
        raise
    except Exception as exc:  # the flatbuffer runtime raises many types on corrupt data
        raise InvalidModelError(
            f"{path}: the flatbuffer is corrupt or truncated ({type(exc).__name__}: {exc}); "
            "re-export the model"
        ) from None
