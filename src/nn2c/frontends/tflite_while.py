"""WHILE (TFLM while.cc): unrolled at import when its number of iterations is fixed at compile time,
else a loop in the generated code.

TFLM runs the condition subgraph on the loop values, then, while its first output element is true,
the body subgraph, whose outputs become the next loop values; the WHILE's outputs are the last ones.
The loops converters write (Keras RNN layers without a fused kernel, tf.while_loop over a
sequence) count an iteration variable up to a constant: the condition depends only on values known
at compile time, although the body also computes on run-time data.

nn2c therefore unrolls: it evaluates the condition with the reference evaluator (nn2c.reference),
folding the body's constant arithmetic (the counters) as it inlines each copy, and inlines the body
once per iteration. The body's weights are one set of constants shared by every copy (flash holds
them once); each copy's activations are planned like any other tensors, so the arena holds only
what one iteration keeps live. A DECODE (TFLM's weight compression) inside the loop is decoded
once: every copy reads the same dense constant.

A condition that reads run-time data (a loop bounded by an input, or run until a value converges),
or more than MAX_ITERATIONS iterations (code grows with every copy), makes a WHILE node instead:
its condition and body become graphs of their own (`runtime_while`), compiled once each and run
in a C loop that copies the loop values between iterations as TFLM does (codegen/ops/control.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from nn2c.errors import InvalidModelError, UnsupportedOpError
from nn2c.frontends import tflite_decode
from nn2c.ir import Graph, Node, TensorType, Value
from nn2c.reference.evaluate import SUPPORTED_OPS, evaluate_node

if TYPE_CHECKING:
    from nn2c.frontends.tflite_frontend import _Reader

# each iteration is a copy of the body in the generated code
MAX_ITERATIONS = 1024
# a folded value becomes a constant in flash: fold the loop bookkeeping (counters, indices, shapes),
# leave the data path to the constant-folding pass, which weighs flash against RAM
_MAX_FOLD_BYTES = 1024
_REFUSED = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE"})


class _Subgraph:
    """One subgraph of a WHILE, inlined again for each iteration with the loop values as its inputs."""

    def __init__(self, reader: _Reader, index: int, role: str, loop_values: int, where: str) -> None:
        from nn2c.frontends.tflite_frontend import _Reader

        if not 1 <= index < reader.model.SubgraphsLength():
            raise InvalidModelError(f"{where}: its {role} subgraph {index} does not exist")
        self.reader = _Reader(reader.data, reader.source, index)
        self.index, self.role, self.where = index, role, where
        sub = self.reader.subgraph
        self.inputs = [int(i) for i in sub.InputsAsNumpy()] if sub.InputsLength() else []
        self.outputs = [int(i) for i in sub.OutputsAsNumpy()] if sub.OutputsLength() else []
        if len(self.inputs) != loop_values:
            raise InvalidModelError(f"{where}: its {role} subgraph {index} takes {len(self.inputs)} inputs, the WHILE "
                                    f"has {loop_values} loop values")
        self.ops = [sub.Operators(k) for k in range(sub.OperatorsLength())]
        self.names = [self.reader.operator_name(op, k) for k, op in enumerate(self.ops)]
        for k, name in enumerate(self.names):
            if name in _REFUSED or (name.startswith("CUSTOM:") and name != tflite_decode.DECODE):
                raise UnsupportedOpError(f"{where}: {role} subgraph {index} op #{k} {name} is not supported inside a "
                                         "WHILE (nn2c unrolls the loop at compile time)")
        produced = set(self.inputs)
        for op in self.ops:
            produced.update(int(i) for i in (op.OutputsAsNumpy() if op.OutputsLength() else []))
        self.produced = produced
        self.shared: dict[int, Value] = {}  # the subgraph's constants, one Value for every copy

    def run(self, graph: Graph | None, operands: list[Value], prefix: str) -> list[Value]:
        """Inline one copy reading `operands` into `graph` (None: only evaluate what folds) and return
        its output values."""
        sub = self.reader
        sub.values = dict(self.shared)
        for tensor, value in zip(self.inputs, operands, strict=True):
            if tensor in sub.values and sub.values[tensor] is not value:
                raise UnsupportedOpError(f"{self.where}: {self.role} subgraph {self.index} passes tensor {tensor} "
                                         "twice as an input, which nn2c does not support")
            sub.values[tensor] = value  # TFLM copies the loop values into the subgraph's input tensors
        seeded = {id(v) for v in operands}
        added: list[Node] = []
        for k, (op, name) in enumerate(zip(self.ops, self.names, strict=True)):
            scratch = Graph("while_scratch")
            sub.add_op(scratch, op, name, k, f"{self.role} subgraph {self.index} op #{k} {name}")
            for node in list(scratch.nodes):
                scratch.remove_node(node)
                _infer_shapes(node)
                if all(v.is_constant for v in node.outputs) or _fold(node) or graph is None:
                    continue  # an empty slice, or folded
                if node.op == "CONCATENATION":  # a TensorList write at the first or last step concatenates an
                    node.inputs = [v for v in node.inputs if v is None or v.type.num_elements]  # empty slice
                added.append(graph.add_node(node))
        results = [sub.value(i, f"{self.role} subgraph {self.index} output list") for i in self.outputs]
        copied: list[Value] = []
        for tensor, value in sub.values.items():
            if value.is_variable:
                raise UnsupportedOpError(f"{self.where}: {self.role} subgraph {self.index} keeps state (variable "
                                         f"tensor {value.name!r}), which nn2c does not support inside a WHILE")
            if tensor not in self.produced and value.is_constant:
                self.shared[tensor] = value
            else:
                copied.append(value)
        # subgraph tensor names repeat from copy to copy; so do those of an IF or WHILE nested in the body
        # (inlined by sub.add_op, their values are not in sub.values): every value of this copy gets the prefix
        shared = {id(v) for v in self.shared.values()}
        # a DECODE's output is one constant for every copy (tflite_decode dedupes by encoding): named once
        decoded = {id(v) for v in sub.decoded.by_encoding.values()}
        renamed = set(seeded) | shared | decoded
        for value in copied + [v for node in added for v in (*node.inputs, *node.outputs) if v is not None]:
            if id(value) not in renamed:
                renamed.add(id(value))
                value.name = f"{prefix}/{value.name}"
        return results


def _infer_shapes(node: Node) -> None:
    """Give the outputs of a shape-changing node the shapes its (constant) sizes and indices give.

    The converter lowers a Keras RNN's TensorList writes to SLICE / CONCATENATION with sizes computed
    from the loop counter; it declares placeholder shapes (e.g. [1, 1, 1]) that only a runtime with
    dynamic tensors resizes. Unrolled, every size is a constant, so the true shape is known here. A
    slice of no element becomes an empty constant, which CONCATENATION then skips.
    """
    shape = _shape_from_values(node)
    if shape is None:
        return
    value = node.outputs[0]
    if shape != value.type.shape:
        value.type = TensorType(value.type.dtype, shape, value.type.quant)
    if not value.type.num_elements:
        value.data = np.zeros(shape, np.dtype(value.type.dtype))


def _shape_from_values(node: Node) -> tuple[int, ...] | None:
    x = node.input(0)
    if len(node.outputs) != 1 or x is None:
        return None
    if node.op == "SLICE":
        begin, size = node.input(1), node.input(2)
        if begin is None or size is None or not (begin.is_constant and size.is_constant):
            return None
        assert begin.data is not None and size.data is not None
        starts, sizes = begin.data.reshape(-1).tolist(), size.data.reshape(-1).tolist()
        if not len(starts) == len(sizes) == len(x.type.shape):
            return None
        return tuple(int(n) if n >= 0 else int(d - b) for d, b, n in zip(x.type.shape, starts, sizes, strict=True))
    if node.op == "CONCATENATION":
        parts = [v.type.shape for v in node.inputs if v is not None]
        rank = len(parts[0])
        axis = int(node.attrs.get("axis", 0))
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank or any(len(p) != rank for p in parts):
            return None
        return tuple(sum(p[axis] for p in parts) if d == axis else parts[0][d] for d in range(rank))
    if node.op == "RESHAPE":
        target = node.input(1)
        if target is None or not target.is_constant or target.data is None:
            return None
        dims = [int(d) for d in target.data.reshape(-1).tolist()]
        known = int(np.prod([d for d in dims if d != -1])) if dims else 1
        if dims.count(-1) == 1 and known:
            dims[dims.index(-1)] = x.type.num_elements // known
        return tuple(dims) if int(np.prod(dims)) == x.type.num_elements and min(dims, default=0) >= 0 else None
    return None


def _fold(node: Node) -> bool:
    """Evaluate a node of small constant results at compile time (its outputs become constants)."""
    if node.op not in SUPPORTED_OPS or not node.outputs:
        return False
    arrays: list[np.ndarray | None] = []
    for value in node.inputs:
        if value is not None and value.is_constant:
            arrays.append(value.data)
        elif value is not None and node.op == "SHAPE":  # shapes are static
            arrays.append(np.broadcast_to(np.int8(0), value.type.shape))
        elif value is None:
            arrays.append(None)
        else:
            return False
    if any(v.is_variable for v in node.outputs) or sum(v.type.num_bytes for v in node.outputs) > _MAX_FOLD_BYTES:
        return False
    try:
        with np.errstate(all="ignore"):
            results = evaluate_node(node, arrays)
    except Exception:  # a variant the evaluator lacks stays a node; the lower stage reports it properly
        return False
    if len(results) != len(node.outputs) or any(
            tuple(np.shape(a)) != v.type.shape for a, v in zip(results, node.outputs, strict=True)):
        return False
    for value, array in zip(node.outputs, results, strict=True):
        value.data = np.array(array, dtype=np.dtype(value.type.dtype)).reshape(value.type.shape)
    return True


def _condition(cond: _Subgraph, loop: list[Value], iteration: int) -> bool | None:
    """The condition's value at this iteration; None when it depends on run-time data."""
    flag = cond.run(None, loop, f"while_cond{iteration}")
    if not flag or flag[0].type.dtype != "bool" or flag[0].type.num_elements < 1:
        raise InvalidModelError(f"{cond.where}: its condition subgraph {cond.index} must return a bool tensor")
    if not flag[0].is_constant:
        return None
    assert flag[0].data is not None
    return bool(flag[0].data.reshape(-1)[0])  # TFLM reads the first element


def unroll_while(reader: _Reader, graph: Graph, inputs: list[Value | None], outputs: list[Value],
                 attrs: dict[str, Any], op_index: int) -> None:
    """Append to `graph` the unrolled loop of the WHILE at `op_index` of `reader`'s subgraph."""
    where = f"{reader.source}: op #{op_index} WHILE"
    loop: list[Value] = []
    for j, value in enumerate(inputs):
        if value is None:
            raise InvalidModelError(f"{where}: loop value {j} is missing (tensor index -1)")
        loop.append(value)
    if len(outputs) != len(loop):
        raise InvalidModelError(f"{where}: it has {len(loop)} loop values but {len(outputs)} outputs")
    for j, (value, out) in enumerate(zip(loop, outputs, strict=True)):
        if value.type.dtype != out.type.dtype or value.type.shape != out.type.shape:
            raise UnsupportedOpError(f"{where}: loop value {j} is {value.type}, output {out.name!r} is {out.type}; "
                                     "nn2c needs static loop shapes")
    cond = _Subgraph(reader, int(attrs.get("cond_subgraph_index", -1)), "condition", len(loop), where)
    body = _Subgraph(reader, int(attrs.get("body_subgraph_index", -1)), "body", len(loop), where)
    iteration, start = 0, len(graph.nodes)
    while go := _condition(cond, loop, iteration):
        if iteration == MAX_ITERATIONS:  # one copy of the body per iteration would not fit in flash
            go = None
            break
        following = body.run(graph, loop, f"while{op_index}_{iteration}")
        if len(following) != len(loop):
            raise InvalidModelError(f"{where}: its body subgraph {body.index} returns {len(following)} tensors for "
                                    f"{len(loop)} loop values")
        for j, (old, new) in enumerate(zip(loop, following, strict=True)):
            if new.type.dtype != old.type.dtype or new.type.shape != old.type.shape:
                raise UnsupportedOpError(f"{where}: body output {j} is {new.type}, loop value {j} is {old.type}; "
                                         "nn2c needs static loop shapes")
        loop = following
        iteration += 1
    if go is None:  # the number of iterations depends on run-time data: a loop in the generated code
        for node in reversed(graph.nodes[start:]):  # the iterations unrolled until the condition stopped folding
            graph.remove_node(node)
        runtime_while(reader, graph, cond, body, [v for v in inputs if v is not None], outputs, attrs, op_index)
        return
    for sub in (cond, body):  # their DECODEs, counted once each, with the model's (the summary's figures)
        reader.decoded.add(sub.reader.decoded)
    for value, out in zip(loop, outputs, strict=True):
        if value.type.quant != out.type.quant:
            raise UnsupportedOpError(f"{where}: output {out.name!r} is quantized differently from its loop value "
                                     f"{value.name!r}; TFLM copies the bytes, which nn2c does not reproduce")
        # TFLM copies the last loop values into the outputs: a shape-preserving RESHAPE is that copy
        # (no code when the planner lets the two share bytes)
        graph.add_node(Node("RESHAPE", [value], [out], {"version": 1}, out.name, op_index))


def runtime_while(reader: _Reader, graph: Graph, cond_sub: _Subgraph, body_sub: _Subgraph, loop: list[Value],
                  outputs: list[Value], attrs: dict[str, Any], op_index: int) -> None:
    """Append a WHILE node whose condition and body (already checked as `_Subgraph`s: they exist,
    take the loop values, hold no refused operator) are graphs of their own (attributes `cond`,
    `body`): the generated code loops at run time (codegen/ops/control.py), as TFLM's while.cc does."""
    where = f"{reader.source}: op #{op_index} WHILE"
    cond, body = (_loop_graph(reader, sub, loop, op_index) for sub in (cond_sub, body_sub))
    flag = cond.outputs[0] if cond.outputs else None
    if flag is None or flag.type.dtype != "bool" or flag.type.num_elements < 1:
        raise InvalidModelError(f"{where}: its condition subgraph must return a bool tensor")
    if len(body.outputs) != len(loop):
        raise InvalidModelError(f"{where}: its body subgraph returns {len(body.outputs)} tensors for {len(loop)} "
                                "loop values")
    for j, (value, result, out) in enumerate(zip(loop, body.outputs, outputs, strict=True)):
        for other, what in ((result, "body output"), (out, "output")):
            # TFLM copies the loop values' bytes from tensor to tensor: same dtype and size
            if other.type.dtype != value.type.dtype or other.type.num_bytes != value.type.num_bytes:
                raise UnsupportedOpError(f"{where}: {what} {j} {other.name!r} is {other.type}, loop value {j} is "
                                         f"{value.type}; nn2c needs static loop shapes")
    attrs = {"version": attrs.get("version", 1), "cond": cond, "body": body}
    graph.add_node(Node("WHILE", list(loop), list(outputs), attrs, outputs[0].name if outputs else "", op_index))


def _loop_graph(reader: _Reader, checked: _Subgraph, loop: list[Value], op_index: int) -> Graph:
    """The condition or body subgraph as a graph whose inputs are copies of the loop values."""
    from nn2c.frontends.tflite_frontend import _Reader

    where, role, index = checked.where, checked.role, checked.index
    sub = _Reader(reader.data, reader.source, index)
    graph = sub.graph(f"while{op_index}_{role}")
    if len({id(v) for v in graph.inputs}) != len(graph.inputs):
        raise UnsupportedOpError(f"{where}: {role} subgraph {index} lists one tensor twice as an input, which nn2c "
                                 "does not support")
    for j, (value, given) in enumerate(zip(loop, graph.inputs, strict=True)):
        if given.type.dtype != value.type.dtype or given.type.num_bytes != value.type.num_bytes:
            raise UnsupportedOpError(f"{where}: {role} subgraph {index} input {j} {given.name!r} is {given.type}, "
                                     f"loop value {j} is {value.type}; nn2c needs static loop shapes")
    if any(v.is_variable for v in graph.values()):
        raise UnsupportedOpError(f"{where}: {role} subgraph {index} keeps state (a variable tensor), which nn2c does "
                                 "not support inside a WHILE whose iterations depend on run-time data")
    reader.decoded.add(sub.decoded)
    for value in graph.values():  # subgraph tensor names often repeat the model's
        value.name = f"while{op_index}_{role}/{value.name}"
    return graph
