"""Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) and CALL_ONCE, against TFLite Micro.

The models have two subgraphs (main and CALL_ONCE's init), which tests/tflite_builder.py does not
write: _Subgraph / _serialize below reuse the single-subgraph writer's tensor and operator tables.
Records run in sequence, so the state carries over between invokes as in a streaming model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import pytest
import tflite

from nn2c.api import compile_model, load_model
from nn2c.errors import UnsupportedOpError
from nn2c.export import tflite_writer as tw
from nn2c.verify.build import build, run
from tests.c_safety import build_sanitized, extreme_records
from tests.oracle_check import assert_matches_tflm, assert_records_match, tflm_with_reset


@dataclass
class _Subgraph:
    tensors: list[tw.TensorSpec] = field(default_factory=list)
    ops: list[tw.OperatorSpec] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def tensor(self, dtype: str, shape: tuple[int, ...], scale: float | None = None, zero_point: int = 0,
               data: np.ndarray | None = None, name: str | None = None) -> int:
        if data is not None and dtype != "resource":
            data = np.asarray(data).astype(np.dtype(dtype)).reshape(shape)
        self.tensors.append(tw.TensorSpec(dtype, tuple(shape), name or f"t{len(self.tensors)}",
                                          None if scale is None else [scale],
                                          None if scale is None else [zero_point], 0, data))
        return len(self.tensors) - 1

    def handle(self, shared_name: str, container: str = "") -> int:
        """A VAR_HANDLE op and its resource tensor."""
        index = self.tensor("resource", (), name=f"handle_{shared_name}")
        self.ops.append(tw.OperatorSpec("VAR_HANDLE", [], [index], {"container": container,
                                                                    "shared_name": shared_name}))
        return index

    def op(self, op: str, inputs: list[int], outputs: list[int], options: dict[str, Any] | None = None) -> None:
        self.ops.append(tw.OperatorSpec(op, inputs, outputs, dict(options or {})))


def _tensor(b: flatbuffers.Builder, t: tw.TensorSpec, buffer: int) -> int:
    if t.dtype != "resource":
        return tw._tensor(b, t, buffer)
    name = b.CreateString(t.name)
    shape = tw._ints(b, tflite.TensorStartShapeVector, [])
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, tflite.TensorType.RESOURCE)
    tflite.TensorAddBuffer(b, buffer)
    tflite.TensorAddName(b, name)
    return tflite.TensorEnd(b)


def _operator(b: flatbuffers.Builder, o: tw.OperatorSpec, code: int) -> int:
    if o.op != "VAR_HANDLE":
        return tw._operator(b, o, code)
    container = b.CreateString(o.options["container"]) if o.options["container"] else None
    shared = b.CreateString(o.options["shared_name"])
    outputs = tw._ints(b, tflite.OperatorStartOutputsVector, o.outputs)
    inputs = tw._ints(b, tflite.OperatorStartInputsVector, [])
    tflite.VarHandleOptionsStart(b)
    if container is not None:
        tflite.VarHandleOptionsAddContainer(b, container)
    tflite.VarHandleOptionsAddSharedName(b, shared)
    options = tflite.VarHandleOptionsEnd(b)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, code)
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    tflite.OperatorAddBuiltinOptionsType(b, tflite.BuiltinOptions.VarHandleOptions)
    tflite.OperatorAddBuiltinOptions(b, options)
    return tflite.OperatorEnd(b)


def _serialize(subgraphs: list[_Subgraph]) -> bytes:
    b = flatbuffers.Builder(1024)
    buffers = [tw._buffer(b, None)]
    codes: list[str] = []
    sub_offsets = []
    for sub in subgraphs:
        tensor_offsets = []
        for t in sub.tensors:
            buffer = 0
            if t.data is not None:
                buffer = len(buffers)
                buffers.append(tw._buffer(b, np.ascontiguousarray(t.data).tobytes()))
            tensor_offsets.append(_tensor(b, t, buffer))
        for o in sub.ops:
            if o.op not in codes:
                codes.append(o.op)
        op_offsets = [_operator(b, o, codes.index(o.op)) for o in sub.ops]
        tensors = tw._offsets(b, tflite.SubGraphStartTensorsVector, tensor_offsets)
        inputs = tw._ints(b, tflite.SubGraphStartInputsVector, sub.inputs)
        outputs = tw._ints(b, tflite.SubGraphStartOutputsVector, sub.outputs)
        ops = tw._offsets(b, tflite.SubGraphStartOperatorsVector, op_offsets)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors)
        tflite.SubGraphAddInputs(b, inputs)
        tflite.SubGraphAddOutputs(b, outputs)
        tflite.SubGraphAddOperators(b, ops)
        sub_offsets.append(tflite.SubGraphEnd(b))
    code_offsets = [tw._opcode(b, op, 1) for op in codes]
    description = b.CreateString("nn2c resource variable test")
    subs = tw._offsets(b, tflite.ModelStartSubgraphsVector, sub_offsets)
    codes_vec = tw._offsets(b, tflite.ModelStartOperatorCodesVector, code_offsets)
    buffers_vec = tw._offsets(b, tflite.ModelStartBuffersVector, buffers)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subs)
    tflite.ModelAddDescription(b, description)
    tflite.ModelAddBuffers(b, buffers_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _streaming_model(dtype: str) -> bytes:
    """Several variables, each exercising one pattern, in one model (one C build):
    - "acc": initialised by CALL_ONCE, y = acc + x; acc <- y; read again after the assignment
    - "delay": never initialised (starts at its zero point), out = delay; delay <- x
    - "twice": assigned twice in one invoke, read in between
    """
    quant: dict[str, Any] = {"scale": 0.05, "zero_point": -3} if dtype == "int8" else {}
    shape = (1, 6)
    rng = np.random.default_rng(1)
    init = rng.integers(-60, 60, shape) if dtype == "int8" else rng.uniform(-1, 1, shape)
    init_sub = _Subgraph()
    h = init_sub.handle("acc")
    value = init_sub.tensor(dtype, shape, data=init, name="acc_init", **quant)
    init_sub.op("ASSIGN_VARIABLE", [h, value], [])
    init_sub.handle("unused")

    main = _Subgraph()
    x = main.tensor(dtype, shape, name="x", **quant)
    main.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    acc, delay, twice = main.handle("acc"), main.handle("delay"), main.handle("twice")
    old_delay = main.tensor(dtype, shape, name="old_delay", **quant)
    main.op("READ_VARIABLE", [delay], [old_delay])
    main.op("ASSIGN_VARIABLE", [delay, x], [])
    old_acc = main.tensor(dtype, shape, name="old_acc", **quant)
    main.op("READ_VARIABLE", [acc], [old_acc])
    y = main.tensor(dtype, shape, name="y", **quant)
    main.op("ADD", [old_acc, x], [y], {"fused_activation_function": "NONE"})
    main.op("ASSIGN_VARIABLE", [acc, y], [])
    new_acc = main.tensor(dtype, shape, name="new_acc", **quant)
    main.op("READ_VARIABLE", [acc], [new_acc])
    main.op("ASSIGN_VARIABLE", [twice, old_delay], [])
    between = main.tensor(dtype, shape, name="between", **quant)
    main.op("READ_VARIABLE", [twice], [between])
    main.op("ASSIGN_VARIABLE", [twice, new_acc], [])
    main.inputs = [x]
    main.outputs = [old_delay, old_acc, new_acc, between]
    return _serialize([main, init_sub])


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_resource_variables_stream(tmp_path, dtype):
    assert_matches_tflm(_streaming_model(dtype), tmp_path, records=5, name=f"state_{dtype}")


def _refused_model(case: str) -> list[_Subgraph]:
    main = _Subgraph()
    x = main.tensor("int16", (1, 2), name="x", scale=0.5, zero_point=3 if case == "zero point" else 0)
    h = main.handle("v")
    out = main.tensor("int16", (1, 2), name="out")
    main.inputs, main.outputs = [x], [out]
    if case != "never assigned":
        main.op("ASSIGN_VARIABLE", [h, x], [])
    main.op("READ_VARIABLE", [h], [out])
    if case != "init op":
        return [main]
    main.ops.insert(0, tw.OperatorSpec("CALL_ONCE", [], [], {"init_subgraph_index": 1}))
    init = _Subgraph()
    a = init.tensor("int16", (1, 2), data=np.ones((1, 2)))
    b = init.tensor("int16", (1, 2))
    init.op("NEG", [a], [b])
    init.op("ASSIGN_VARIABLE", [init.handle("v"), b], [])
    return [main, init]


@pytest.mark.parametrize(("case", "message"), [
    ("never assigned", "read but never assigned"),
    ("zero point", "zero point 3"),
    ("init op", "subgraph 1 op #0 NEG: a CALL_ONCE init subgraph may only hold"),
])
def test_refused_cleanly(tmp_path, case, message):
    path = tmp_path / "refused.tflite"
    path.write_bytes(_serialize(_refused_model(case)))
    with pytest.raises(UnsupportedOpError, match=message):
        load_model(path)


def test_container_matching_and_graph(tmp_path):
    """A VAR_HANDLE without container matches the variable of any container (TFLM's FindId); each
    variable is one state value, and reads / writes are chained by ordering inputs."""
    main = _Subgraph()
    x = main.tensor("float32", (2,), name="x")
    read = main.tensor("float32", (2,), name="read")
    main.op("ASSIGN_VARIABLE", [main.handle("v", container="c"), x], [])
    main.op("READ_VARIABLE", [main.handle("v")], [read])
    main.inputs, main.outputs = [x], [read]
    path = tmp_path / "m.tflite"
    path.write_bytes(_serialize([main]))
    graph = load_model(path)
    assign, read_node = graph.nodes
    assert [n.op for n in graph.nodes] == ["ASSIGN_VARIABLE", "READ_VARIABLE"]
    assert len(graph.variables()) == 1 and assign.inputs[0] is read_node.inputs[0]
    assert read_node.inputs[1] is assign.outputs[0]  # the read runs after the write


_RESET_AT = 3  # the reset test calls <name>_reset() before this record


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_reset_and_sanitizers(tmp_path, dtype):
    """ASan + UBSan build, extreme then random inputs, <name>_reset() in the middle: as TFLM's
    MicroInterpreter::Reset, the variables go back to their zero point and CALL_ONCE does not run
    again."""
    model = _streaming_model(dtype)
    path = tmp_path / "state.tflite"
    path.write_bytes(model)
    result = compile_model(path)
    exe = build_sanitized(result, tmp_path / "out", tmp_path / "asan_runner", reset_at=_RESET_AT)
    rng = np.random.default_rng(2)
    records = extreme_records(result.graph)
    for _ in range(4):
        x = rng.integers(-128, 128, (1, 6)) if dtype == "int8" else rng.uniform(-2, 2, (1, 6))
        records.append([x.astype(np.dtype(dtype))])
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    theirs = tflm_with_reset(model, records, len(result.graph.outputs), _RESET_AT)
    assert_records_match(ours, theirs)


def _if_model(dtype: str) -> bytes:
    """IF on a run-time condition: then = (a + b, a), else = (a - b, constant); names repeat across
    subgraphs as in converted models."""
    quant: dict[str, Any] = {"scale": 0.05, "zero_point": 2} if dtype == "int8" else {}
    shape = (2, 3)
    branches = []
    for op in ("ADD", "SUB"):
        sub = _Subgraph()
        a, b = sub.tensor(dtype, shape, name="a", **quant), sub.tensor(dtype, shape, name="b", **quant)
        y = sub.tensor(dtype, shape, name="y", **quant)
        sub.op(op, [a, b], [y], {"fused_activation_function": "NONE"})
        second = a if op == "ADD" else sub.tensor(dtype, shape, data=np.arange(6) - 2, name="c", **quant)
        sub.inputs, sub.outputs = [a, b], [y, second]
        branches.append(sub)
    main = _Subgraph()
    cond = main.tensor("bool", (1,), name="cond")
    a, b = main.tensor(dtype, shape, name="a", **quant), main.tensor(dtype, shape, name="b", **quant)
    y, z = main.tensor(dtype, shape, name="y", **quant), main.tensor(dtype, shape, name="z", **quant)
    main.op("IF", [cond, a, b], [y, z], {"then_subgraph_index": 1, "else_subgraph_index": 2})
    main.inputs, main.outputs = [cond, a, b], [y, z]
    return _serialize([main, *branches])


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_if_runtime_condition(tmp_path, dtype):
    assert_matches_tflm(_if_model(dtype), tmp_path, records=6, name=f"if_{dtype}")


def test_if_sanitizers(tmp_path):
    path = tmp_path / "if.tflite"
    path.write_bytes(_if_model("int8"))
    result = compile_model(path)
    exe = build(result.write(tmp_path / "out"), tmp_path / "asan_runner", opt="-O1",
                extra_flags=["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
    records = extreme_records(result.graph)
    records += [[~r[0], *r[1:]] for r in records]  # both conditions with both extremes
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    assert_records_match(ours, tflm_with_reset(path.read_bytes(), records, 2, reset_at=-1))


