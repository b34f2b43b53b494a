"""Constant folding: a node whose inputs are all constants is evaluated at compile time.

SHAPE counts as constant whatever its input: nn2c's shapes are static.

The node's outputs become constants computed by the reference evaluator (nn2c.reference), the
node is removed, and the activation bytes its outputs needed are saved. Limits:
- an output larger than MAX_FOLD_BYTES is folded only if it is no larger than the node's constant
  inputs (folding must not grow the weights, e.g. a broadcast or ConstantOfShape-like tile);
- nodes reading state (variables) and nodes producing graph outputs are kept;
- with keep_quantized_weights (-O2), DEQUANTIZE of a constant is kept when its reader is an
  operator the QDQ pass turns into an integer kernel: the int8 weights then stay int8.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nn2c.ir import Graph, Node
from nn2c.passes.base import PassResult
from nn2c.passes.rewrite import is_output
from nn2c.reference.evaluate import SUPPORTED_OPS, evaluate_node

MAX_FOLD_BYTES = 64 * 1024


def _static_shape(node: Node) -> bool:
    """SHAPE of a run-time tensor: shapes are static in nn2c, so the result is a constant too."""
    return node.op == "SHAPE" and len(node.outputs) == 1 and node.input(0) is not None


def _foldable(graph: Graph, node: Node, keep_quantized_weights: bool, max_bytes: int) -> bool:
    if node.op not in SUPPORTED_OPS or not node.outputs:
        return False
    if _static_shape(node) and not is_output(graph, node.outputs[0]):
        return True
    inputs = [v for v in node.inputs if v is not None]
    if not inputs or any(v.data is None or v.is_variable for v in inputs):
        return False
    if any(is_output(graph, v) or v.is_variable for v in node.outputs):
        return False
    out_bytes = sum(v.type.num_bytes for v in node.outputs)
    if out_bytes > max_bytes and out_bytes > sum(v.type.num_bytes for v in inputs):
        return False
    if node.op == "DEQUANTIZE" and keep_quantized_weights:
        from nn2c.passes.qdq import reads_quantized_weights

        return not any(reads_quantized_weights(user) for user in node.outputs[0].users)
    return True


def fold_constants(graph: Graph, keep_quantized_weights: bool = False,
                   max_bytes: int = MAX_FOLD_BYTES) -> PassResult:
    result = PassResult(False)
    for node in list(graph.nodes):
        if not _foldable(graph, node, keep_quantized_weights, max_bytes):
            continue
        arrays = [None if v is None else v.data for v in node.inputs]
        if _static_shape(node) and arrays[0] is None:
            x = node.inputs[0]
            assert x is not None
            arrays[0] = np.broadcast_to(np.int8(0), x.type.shape)  # SHAPE reads only the shape (no copy)
        try:
            with np.errstate(all="ignore"):
                outputs = evaluate_node(node, arrays)
        except Exception:
            continue
        if len(outputs) != len(node.outputs) or any(
                tuple(a.shape) != v.type.shape for a, v in zip(outputs, node.outputs, strict=True)):
            continue
        graph.remove_node(node)
        for value, array in zip(node.outputs, outputs, strict=True):
            value.data = array
        result.modified = True
        result.removed_ops += 1
        result.removed_tensors += len(node.outputs)
        result.bytes_saved += sum(v.type.num_bytes for v in node.outputs)
        result.notes.append(f"evaluated {node.where()} at compile time")
    return result


def constant_folding(keep_quantized_weights: bool) -> Callable[[Graph], PassResult]:
    def run(graph: Graph) -> PassResult:
        return fold_constants(graph, keep_quantized_weights)

    run.__name__ = "fold_constants"
    return run
