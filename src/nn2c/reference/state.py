"""Reference semantics of the resource-variable operators (ir/ops/state.py), for constant folding.

A variable's input is never a constant, so these run only in whole-graph evaluation: READ_VARIABLE
returns the state's bytes seen as its output's type; ASSIGN_VARIABLE and CALL_ONCE return their
ordering token (their effect on the state is the generated code's business). IF_MERGE returns the
bytes of its second input when the condition's first element is true, else of its third. WHILE
runs its condition and body graphs until the condition is false (never folded: the constant-folding
pass leaves it alone, since a loop need not end).
"""

from __future__ import annotations

import numpy as np

from nn2c.ir import Graph, Node, Value
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays


def _as_type(array: np.ndarray, value: Value) -> np.ndarray:
    """The bytes of `array` seen as `value`'s type (TFLM copies variables, branch and loop values byte
    for byte)."""
    raw = np.ascontiguousarray(array).tobytes()
    return np.frombuffer(raw, dtype=np.dtype(value.type.dtype)).reshape(value.type.shape).copy()


@evaluator("READ_VARIABLE")
def read_variable(node: Node, arrays: Arrays) -> list[np.ndarray]:
    state = arrays[0]
    assert state is not None
    return [_as_type(state, node.outputs[0])]


@evaluator("ASSIGN_VARIABLE", "CALL_ONCE")
def ordering_token(node: Node, arrays: Arrays) -> list[np.ndarray]:
    token = node.outputs[0].type
    return [np.zeros(token.shape, dtype=np.dtype(token.dtype))]


@evaluator("IF_MERGE")
def if_merge(node: Node, arrays: Arrays) -> list[np.ndarray]:
    cond, then_value, else_value = arrays[0], arrays[1], arrays[2]
    assert cond is not None and then_value is not None and else_value is not None
    chosen = then_value if bool(np.asarray(cond).reshape(-1)[0]) else else_value
    return [_as_type(chosen, node.outputs[0])]


@evaluator("WHILE")
def while_loop(node: Node, arrays: Arrays) -> list[np.ndarray]:
    from nn2c.reference.evaluate import run_graph

    cond: Graph = node.attrs["cond"]
    body: Graph = node.attrs["body"]
    loop = [np.asarray(a) for a in arrays if a is not None]
    while True:
        flag = run_graph(cond, [_as_type(a, v) for a, v in zip(loop, cond.inputs, strict=True)])
        assert isinstance(flag, list)
        if not bool(np.asarray(flag[0]).reshape(-1)[0]):
            break
        after = run_graph(body, [_as_type(a, v) for a, v in zip(loop, body.inputs, strict=True)])
        assert isinstance(after, list)
        loop = [np.asarray(a) for a in after]
    return [_as_type(a, v) for a, v in zip(loop, node.outputs, strict=True)]
