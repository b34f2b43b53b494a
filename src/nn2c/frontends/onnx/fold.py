"""Shape arithmetic folded at import: integer tensors that static shapes and constants determine.

Exporters leave shape computations in the graph (`torch.onnx.export(..., do_constant_folding=False)`
keeps `Shape -> Gather -> Unsqueeze -> Concat -> Reshape`; `F.pad` emits `ConstantOfShape / Concat /
Reshape / Slice / Transpose / Cast` feeding Pad's pads). With every input shape fixed, those values
are constants, but ONNX shape inference (even with data propagation) does not evaluate every
operator, so a Pad or Reshape behind such a chain gets no output shape.

When shape inference leaves a node without an output shape, this module evaluates, in graph order,
every node whose inputs are known: initializers, Constant nodes, Shape / Size of a tensor whose
shape inference did find (the graph inputs' symbolic dimensions are fixed to 1 before), with
onnx's own reference implementation (onnx.reference). The integer tensors among those values that
a node outside the evaluated set reads become initializers; the evaluated nodes nobody else reads
disappear. Shape inference then runs again, until nothing more folds. Float tensors are left as
nodes (the graph passes fold them, and QDQ weight patterns must stay visible).

A value that depends on run-time data is not folded; the node that needs it then fails with an
error naming the input whose values (not shape) it depends on.

A Range of run-time bounds (the window functions' bodies: Range(0, Cast(size), 1)) has no static
length, but the model may declare the shape of the outputs it flows into. `bind_range_lengths`
gives each such Range output a symbolic length, runs shape inference with the graph outputs'
shapes cleared, and where an output's inferred dimension is that symbol, takes the declared
dimension as the Range's length (the same length for every output it reaches, else nothing is
bound). The RANGE kernel then writes that many values from the run-time start and delta.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_ROUNDS = 8
MAX_FOLDED_ELEMENTS = 1 << 16  # shape operands are small; never materialise a large tensor here
_NONDETERMINISTIC = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                               "Bernoulli", "Multinomial"})


def _static_shapes(model: Any) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    graph = model.graph
    for info in [*graph.input, *graph.value_info, *graph.output]:
        tensor = info.type.tensor_type
        if not tensor.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in tensor.shape.dim]
        if all(d is not None for d in dims):
            shapes[info.name] = tuple(int(d) for d in dims)  # type: ignore[arg-type]
    for tensor in graph.initializer:
        shapes[tensor.name] = tuple(int(d) for d in tensor.dims)
    return shapes


def unshaped_outputs(model: Any) -> list[str]:
    """Node outputs that shape inference left without a static shape."""
    shapes = _static_shapes(model)
    return [name for node in model.graph.node for name in node.output if name and name not in shapes]


def _evaluate(onnx: Any, node: Any, inputs: list[np.ndarray | None], opset: Any) -> list[np.ndarray] | None:
    """The outputs of one node by onnx's reference implementation, None if it cannot run it."""
    from onnx.reference import ReferenceEvaluator

    names = [f"in{k}" if array is not None else "" for k, array in enumerate(inputs)]
    while names and names[-1] == "":
        names.pop()
    single = onnx.helper.make_node(node.op_type, names, [f"out{k}" for k in range(len(node.output))],
                                   domain=node.domain)
    single.attribute.extend(node.attribute)
    graph = onnx.helper.make_graph(
        [single], "fold",
        [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in zip(names, inputs, strict=False) if n and a is not None],
        [onnx.helper.make_tensor_value_info(f"out{k}", onnx.TensorProto.UNDEFINED, None)
         for k in range(len(node.output))])
    model = onnx.helper.make_model(graph, opset_imports=list(opset))
    try:
        feeds = {n: a for n, a in zip(names, inputs, strict=False) if n and a is not None}
        return [np.asarray(r) for r in ReferenceEvaluator(model).run(None, feeds)]
    except Exception:  # the reference implementation refuses or fails: leave the node as it is
        return None


def _initializer_array(onnx: Any, tensor: Any) -> np.ndarray | None:
    """The initializer's data, or None when it is malformed (the import reports that, naming it)."""
    if tensor.external_data or tensor.data_location == onnx.TensorProto.EXTERNAL:
        return None
    try:
        array = onnx.numpy_helper.to_array(tensor)
    except Exception:  # data of the wrong length or type: left to the importer's own check
        return None
    return array if list(array.shape) == [int(d) for d in tensor.dims] else None


def _shape_value(onnx: Any, node: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Shape (with its start / end) or Size of a tensor of static `shape`, without materialising it."""
    if node.op_type == "Size":
        return np.array(int(np.prod(shape, dtype=np.float64)), dtype=np.int64)
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    rank = len(shape)
    start, end = int(attrs.get("start", 0)), int(attrs.get("end", rank))
    start, end = (min(max(v + rank if v < 0 else v, 0), rank) for v in (start, end))
    return np.array(shape[start:end], dtype=np.int64)


def _known_values(onnx: Any, model: Any) -> dict[str, np.ndarray]:
    """Every tensor computable from constants and static shapes, by name."""
    graph = model.graph
    shapes = _static_shapes(model)
    known: dict[str, np.ndarray] = {}
    for tensor in graph.initializer:
        array = _initializer_array(onnx, tensor)
        if array is not None:
            known[tensor.name] = array
    for node in graph.node:
        if node.op_type in _NONDETERMINISTIC or node.domain not in ("", "ai.onnx"):
            continue
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            continue
        outputs = None
        if node.op_type in ("Shape", "Size") and node.input and node.input[0] in shapes:
            outputs = [_shape_value(onnx, node, shapes[node.input[0]])]
        elif all(name == "" or name in known for name in node.input):
            inputs = [known[name] if name else None for name in node.input]
            if sum(a.size for a in inputs if a is not None) <= MAX_FOLDED_ELEMENTS:
                outputs = _evaluate(onnx, node, inputs, model.opset_import)
        if outputs is None or any(o.size > MAX_FOLDED_ELEMENTS for o in outputs):
            continue
        for name, array in zip(node.output, outputs, strict=False):
            if name:
                known[name] = array
    return known


def _integer(array: np.ndarray) -> bool:
    return np.asarray(array).dtype.kind in "iub"


def _fold_once(onnx: Any, model: Any) -> bool:
    """Replace the known integer tensors read by unknown nodes with initializers; True if any was."""
    graph = model.graph
    known = _known_values(onnx, model)
    initializers = {t.name for t in graph.initializer}

    def folds_away(node: Any) -> bool:  # evaluated, and every output an integer tensor
        return bool(node.output) and all(o == "" or (o in known and _integer(known[o])) for o in node.output)

    # the nodes that stay (run-time ones, and constant float ones that the graph passes fold later)
    readers = [n for n in graph.node if not folds_away(n)]
    wanted = {name for n in readers for name in n.input if name in known and name not in initializers}
    wanted |= {o.name for o in graph.output if o.name in known and o.name not in initializers}
    folded = {name for name in wanted if _integer(known[name])}
    if not folded:
        return False
    # keep the nodes some graph output still needs, reading folded tensors as initializers
    needed = {o.name for o in graph.output}
    keep: list[Any] = []
    for node in reversed(list(graph.node)):
        if any(o and o in needed and o not in folded for o in node.output):
            keep.append(node)
            needed.update(name for name in node.input if name)
    folded -= {o for node in keep for o in node.output}  # a kept node still defines it
    if not folded:
        return False
    graph.initializer.extend(onnx.numpy_helper.from_array(np.asarray(known[name]), name) for name in sorted(folded))
    del graph.node[:]
    graph.node.extend(reversed(keep))
    return True


def fold_shape_arithmetic(model: Any, infer: Any) -> Any:
    """Fold until every node output has a static shape or nothing more folds; `infer(model)` runs
    ONNX shape inference and returns the inferred model."""
    import onnx

    for _ in range(MAX_ROUNDS):
        if not unshaped_outputs(model) or not _fold_once(onnx, model):
            break
        del model.graph.value_info[:]
        model = infer(model)
    return model


def runtime_source(model: Any, name: str) -> str | None:
    """The first graph input whose values (not only its shape) the tensor `name` depends on."""
    graph = model.graph
    producer = {o: n for n in graph.node for o in n.output}
    inputs = {i.name for i in graph.input}
    seen: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in inputs:
            return current
        node = producer.get(current)
        if node is None or node.op_type in ("Shape", "Size"):
            continue
        stack.extend(i for i in node.input if i)
    return None


def explain_unshaped(model: Any, name: str) -> str:
    """Why the output `name` has no static shape, for the error message."""
    graph = model.graph
    producer = next((n for n in graph.node if name in n.output), None)
    initializers = {t.name for t in graph.initializer}
    if producer is not None:
        for k, operand in enumerate(producer.input):
            if k == 0 or not operand or operand in initializers:
                continue
            source = runtime_source(model, operand)
            if source is not None:
                return (f"the shape of {name!r} depends on input {k} ({operand!r}), which is computed from the "
                        f"run-time values of graph input {source!r}, not only from shapes and constants; "
                        "nn2c needs that operand to be constant for a static memory plan")
    return (f"the shape of {name!r} could not be inferred from the model's static input shapes and constants; "
            "check that every input has a fixed shape (symbolic dimensions are taken as 1)")


def _elem_type(model: Any, name: str) -> int:
    """The element type ONNX shape inference (or the graph) gives `name`, 0 when unknown."""
    graph = model.graph
    for info in [*graph.value_info, *graph.input, *graph.output]:
        if info.name == name:
            return int(info.type.tensor_type.elem_type)
    for tensor in graph.initializer:
        if tensor.name == name:
            return int(tensor.data_type)
    return 0


def bind_range_lengths(model: Any, infer: Any) -> Any:
    """Static lengths for run-time Range outputs that the declared graph output shapes determine."""
    import copy

    import onnx

    shapes = _static_shapes(model)
    ranges = [n for n in model.graph.node if n.op_type == "Range" and n.output and n.output[0] not in shapes]
    symbols: dict[str, str] = {}
    probe = copy.deepcopy(model)
    del probe.graph.value_info[:]  # earlier inference named the unknown lengths (unk__0) already
    for k, node in enumerate(ranges):
        elem = _elem_type(model, node.output[0]) or _elem_type(model, node.input[0])
        if not elem:
            continue
        symbols[f"nn2c_range_{k}"] = node.output[0]
        probe.graph.value_info.append(onnx.helper.make_tensor_value_info(node.output[0], elem, [f"nn2c_range_{k}"]))
    if not symbols:
        return model
    declared = {o.name: list(o.type.tensor_type.shape.dim) for o in model.graph.output}
    for output in probe.graph.output:
        output.type.tensor_type.ClearField("shape")
    try:
        inferred = infer(probe)
    except Exception:  # the probe is only a hint; the import reports the unshaped node as before
        return model
    lengths: dict[str, set[int]] = {}
    for output in inferred.graph.output:
        dims = list(output.type.tensor_type.shape.dim)
        given = declared.get(output.name, [])
        if len(dims) != len(given):
            continue
        for dim, want in zip(dims, given, strict=True):
            if dim.dim_param in symbols and want.HasField("dim_value") and want.dim_value >= 0:
                lengths.setdefault(dim.dim_param, set()).add(int(want.dim_value))
    bound = False
    if any(len(values) == 1 for values in lengths.values()):
        del model.graph.value_info[:]  # inferred again below, with the lengths bound
    for symbol, values in lengths.items():
        if len(values) == 1:
            name = symbols[symbol]
            elem = _elem_type(model, name) or _elem_type(model, next(n for n in ranges if n.output[0] == name).input[0])
            model.graph.value_info.append(onnx.helper.make_tensor_value_info(name, elem, [values.pop()]))
            bound = True
    return infer(model) if bound else model
