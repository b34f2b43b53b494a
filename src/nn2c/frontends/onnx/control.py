"""ONNX If nodes whose condition static shapes and constants decide, replaced by the branch taken.

Exporters leave If nodes behind Python branches on shapes (`if x.shape[1] == 3:` in a traced
module, onnxscript functions, ONNX's own AffineGrid body: 2-D or 3-D). With every input shape
fixed, the condition is a constant: it is evaluated with the shape folder's evaluator
(fold._known_values: initializers, Constant nodes, Shape / Size of statically shaped tensors and
what onnx.reference computes from them), and the node is replaced by the nodes of the branch it
takes. Names defined inside the branch get a prefix unique to the node (also where a nested
subgraph reads them); an Identity gives each branch output the If's output name (the graph passes
remove it). Shape inference then runs again. An If
whose condition depends on run-time values stays, and its converter refuses it in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import ConversionContext, converts, unsupported
from nn2c.frontends.onnx.fold import _known_values

_MAX_ROUNDS = 8


def _rename_graph(onnx: Any, graph: Any, names: dict[str, str]) -> None:
    """Rename, in place, every use and definition of `names` in graph and its nested subgraphs."""
    for node in graph.node:
        node.input[:] = [names.get(n, n) for n in node.input]
        node.output[:] = [names.get(n, n) for n in node.output]
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _rename_graph(onnx, attr.g, names)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _rename_graph(onnx, sub, names)
    for tensor in graph.initializer:
        tensor.name = names.get(tensor.name, tensor.name)


def _branch_nodes(onnx: Any, node: Any, branch: Any, prefix: str) -> tuple[list[Any], list[Any]]:
    """The branch's nodes and initializers, renamed, writing the If node's outputs."""
    branch = onnx.GraphProto.FromString(branch.SerializeToString())  # the model keeps its copy
    defined = [o for n in branch.node for o in n.output if o] + [t.name for t in branch.initializer]
    names = {name: prefix + name for name in defined}
    _rename_graph(onnx, branch, names)
    nodes = list(branch.node)
    identities = [onnx.helper.make_node("Identity", [names.get(info.name, info.name)], [out_name],
                                        name=f"{prefix}output_{k}")
                  for k, (out_name, info) in enumerate(zip(node.output, branch.output, strict=False)) if out_name]
    return nodes + identities, list(branch.initializer)


def inline_constant_ifs(model: Any, infer: Callable[[Any], Any]) -> Any:
    """Replace every If whose condition is known at compile time by the branch it takes."""
    import onnx

    for round_ in range(_MAX_ROUNDS):
        ifs = [n for n in model.graph.node if n.op_type == "If" and n.domain in ("", "ai.onnx")]
        if not ifs:
            return model
        known = _known_values(onnx, model)
        nodes: list[Any] = []
        changed = False
        for index, node in enumerate(model.graph.node):
            cond = known.get(node.input[0]) if node in ifs and node.input else None
            if cond is None or np.asarray(cond).size != 1:
                nodes.append(node)
                continue
            attrs = {a.name: a for a in node.attribute}
            branch = attrs.get("then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch")
            if branch is None:
                nodes.append(node)
                continue
            body, initializers = _branch_nodes(onnx, node, branch.g, f"{node.name or 'if'}_{round_}_{index}/")
            nodes.extend(body)
            model.graph.initializer.extend(initializers)
            changed = True
        if not changed:
            return model
        del model.graph.node[:]
        model.graph.node.extend(nodes)
        del model.graph.value_info[:]
        model = infer(model)
    return model


@converts("If")
def _if(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    raise unsupported("an If whose condition depends on run-time values (nn2c compiles the branch an If takes "
                      "when static shapes and constants decide its condition; export the model with the branch "
                      "taken, or with fixed shapes)")
