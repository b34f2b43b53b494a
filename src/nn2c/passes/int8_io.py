"""`--io int8` without `--quantize`: expose the int8 tensors of an already quantized model.

Many quantized TFLite models keep float32 I/O: the graph input goes only into a QUANTIZE and the
graph outputs come from DEQUANTIZEs (the TinyEngine models, most converter output with
`inference_input_type=float32`). On a microcontroller the application usually has the int8 data at
hand (camera bytes, int8 features) and reads int8 scores, so the edge conversions are wasted work,
and the float input buffer, 4 bytes an element, often sets the arena's peak.

expose_int8_io removes those edge operators: the graph input becomes the QUANTIZE's int8 result and
a graph output the DEQUANTIZE's int8 operand; their scale and zero point reach the header
(NAME_INPUT0_SCALE / _ZERO_POINT) and the manifest as for any quantized I/O tensor. Nothing else
changes, so the int8 outputs, dequantized with those parameters, are bit for bit the float
outputs, given the int8 input the QUANTIZE would have computed. An edge that cannot be exposed
exactly (read by other operators too, two different QUANTIZEs, ...) stays float32, and the line
returned for it says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from nn2c.errors import UsageError
from nn2c.ir import Graph, Node, TensorType, Value
from nn2c.passes.rewrite import is_input, is_output

# how many unexposable edges the "nothing to expose" error names before "and N more"
_ERROR_EDGES = 3


@dataclass
class _Edge:
    """What happened to one graph input or output."""

    kind: str  # "input" / "output"
    index: int
    name: str
    int8: bool = False  # int8 after this call (exposed, or already int8)
    kept_float: str | None = None  # why a float32 edge stays float32
    note: str = ""  # the rest of the summary line

    def line(self) -> str:
        where = f"{self.kind} {self.index} {self.name!r}"
        if self.kept_float is not None:
            return f"{where}: kept float32: {self.kept_float}"
        return f"{where}: {self.note}"


def expose_int8_io(graph: Graph) -> list[str]:
    """Expose the int8 tensors at the edges; one summary line per graph input and output.

    Raises UsageError when float32 edges stay and no edge is int8 (the user asked for int8 I/O
    and would get none). A model already int8 at its edges is left as it is, and so is a second
    call: what it exposed is then "already int8"."""
    edges = [_expose_input(graph, k) for k in range(len(graph.inputs))]
    edges += [_expose_output(graph, k) for k in range(len(graph.outputs))]
    kept = [e for e in edges if e.kept_float is not None]
    if kept and not any(e.int8 for e in edges):
        raise UsageError(_nothing_to_expose(kept))
    return [e.line() for e in edges]


def _nothing_to_expose(kept: list[_Edge]) -> str:
    reasons = "; ".join(f"{e.kind} {e.index} {e.name!r}: {e.kept_float}" for e in kept[:_ERROR_EDGES])
    more = f" (and {len(kept) - _ERROR_EDGES} more)" if len(kept) > _ERROR_EDGES else ""
    return ("--io int8 without --quantize exposes the int8 tensors of an already quantized model, "
            f"but this model has none at its edges: {reasons}{more}; to quantize a float model "
            "use --quantize int8 --calibration DATA, or drop --io int8")


# --- inputs --------------------------------------------------------------------------------------
def _expose_input(graph: Graph, index: int) -> _Edge:
    value = graph.inputs[index]
    edge = _Edge("input", index, value.name)
    if value.type.dtype != "float32":
        edge.note, edge.int8 = _not_float(value.type), value.type.dtype == "int8"
        return edge
    edge.kept_float = _input_problem(graph, value)
    if edge.kept_float is not None:
        return edge
    quantizes = _unique(value.users)
    q = quantizes[0].outputs[0]
    for other in quantizes[1:]:  # same parameters (checked): one int8 tensor serves every reader
        graph.replace_all_uses(other.outputs[0], q)
    for node in quantizes:
        graph.remove_node(node)
    graph.inputs[index] = q
    _take_name(graph, q, value.name)
    edge.int8 = True
    edge.note = _exposed_note(q.type, quantizes)
    return edge


def _input_problem(graph: Graph, value: Value) -> str | None:
    """Why this float32 input cannot become the int8 tensor its QUANTIZE makes (None: it can)."""
    readers = _unique(value.users)
    if not readers:
        return "no operator reads it"
    others = [n for n in readers if n.op != "QUANTIZE"]
    if len(others) == len(readers):
        return f"it is read by {others[0].where()}, not by a QUANTIZE"
    if others:  # the float data must stay for that reader, so the input cannot become int8
        return f"it is also read by {others[0].where()}, not only by QUANTIZE"
    if is_output(graph, value):
        return "it is also a graph output"
    kinds = _unique_types([n.outputs[0].type for n in readers])
    if len(kinds) > 1:
        # one int8 input cannot reproduce two roundings of the same float data
        listed = ", ".join(f"{n.where()} to {n.outputs[0].type.dtype} {n.outputs[0].type.quant}" for n in readers)
        return f"it is read by QUANTIZEs with different parameters ({listed})"
    problem = _int8_problem(kinds[0], "its QUANTIZE makes")
    if problem is not None:
        return problem
    for node in readers:
        if is_output(graph, node.outputs[0]):  # the input would also be an output, as can_bypass refuses
            return f"the result of its {node.where()} is also a graph output"
    return None


# --- outputs -------------------------------------------------------------------------------------
def _expose_output(graph: Graph, index: int) -> _Edge:
    value = graph.outputs[index]
    edge = _Edge("output", index, value.name)
    if value.type.dtype != "float32":
        edge.note, edge.int8 = _not_float(value.type), value.type.dtype == "int8"
        return edge
    edge.kept_float = _output_problem(graph, value)
    if edge.kept_float is not None:
        return edge
    dequantize = value.producer
    assert dequantize is not None and dequantize.inputs[0] is not None
    q = dequantize.inputs[0]
    # every position of this value (a model may list one tensor twice); other readers keep the float
    graph.outputs = [q if v is value else v for v in graph.outputs]
    removed = not value.users
    if removed:
        graph.remove_node(dequantize)
    else:  # the output keeps the model's name; the float copy its other readers take is renamed
        value.name = f"{edge.name}/float32"
    _take_name(graph, q, edge.name)
    edge.int8 = True
    edge.note = _exposed_note(q.type, [dequantize] if removed else [])
    if not removed:
        edge.note += f" ({dequantize.where()} stays: {value.users[0].where()} reads its float result)"
    return edge


def _output_problem(graph: Graph, value: Value) -> str | None:
    """Why this float32 output cannot become the int8 tensor its DEQUANTIZE reads (None: it can)."""
    producer = value.producer
    if producer is None:
        if is_input(graph, value):
            return "it is a graph input itself, not computed by a DEQUANTIZE"
        return "it is a constant, not computed by a DEQUANTIZE"
    if producer.op != "DEQUANTIZE":
        return f"it comes from {producer.where()}, not from a DEQUANTIZE"
    q = producer.inputs[0]
    assert q is not None
    problem = _int8_problem(q.type, f"its {producer.where()} reads")
    if problem is not None:
        return problem
    # a graph output that is an input, a constant or a second output: can_bypass refuses these too
    if is_input(graph, q):
        return f"its {producer.where()} reads graph input {q.name!r} itself"
    if q.is_constant:
        return f"its {producer.where()} reads a constant"
    if is_output(graph, q):
        return f"the int8 tensor its {producer.where()} reads is already a graph output"
    return None


# --- shared --------------------------------------------------------------------------------------
def _int8_problem(t: TensorType, what: str) -> str | None:
    """int8 with one scale and zero point, the only quantized I/O the header and manifest describe."""
    if t.dtype != "int8":
        return f"{what} {t.dtype}, not int8"
    if t.quant is None:
        return f"{what} int8 without a scale and zero point"
    if t.quant.per_channel:
        return f"{what} int8 quantized per channel, not per tensor"
    return None


def _exposed_note(t: TensorType, removed: list[Node]) -> str:
    assert t.quant is not None
    shape = "x".join(str(d) for d in t.shape)
    note = f"int8[{shape}] (scale {t.quant.scale[0]:.6g}, zero point {t.quant.zero_point[0]}) instead of float32"
    if removed:
        note += f"; {', '.join(n.where() for n in removed)} removed"
    return note


def _not_float(t: TensorType) -> str:
    if t.dtype == "int8":
        return "already int8"
    return f"{t.dtype}, left as it is (only float32 edges are converted)"


def _take_name(graph: Graph, value: Value, name: str) -> None:
    """The exposed tensor keeps the model's I/O name (header comments, manifest), when it is free."""
    if all(v is value or v.name != name for v in graph.values()):
        value.name = name


def _unique(nodes: list[Node]) -> list[Node]:
    """Readers without repeats (a node reading a value twice is listed twice in its users)."""
    return list({id(n): n for n in nodes}.values())


def _unique_types(types: list[TensorType]) -> list[TensorType]:
    return list(dict.fromkeys(types))
