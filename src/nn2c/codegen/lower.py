"""The `lower` stage: every IR node becomes C statements calling a kernel for the target.

Each operator's lowering (codegen/ops/) writes its kernel calls, parameter structs and flash
arrays into an EmitContext. Tensors it reads or writes in the arena are named by placeholders
(`@v12@`, scratch `@s0@`): their addresses are known only after memory planning, which in turn
needs the lowerings' scratch requests and zero-copy aliases. The renderer binds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nn2c.codegen.context import EmitContext, NodeCode
from nn2c.codegen.ops import Lowering, load_all
from nn2c.errors import InvalidModelError, NN2CError, UnsupportedOpError
from nn2c.ir import Graph, Node, Value
from nn2c.target import Target


@dataclass
class LoweredModel:
    name: str  # the C prefix
    graph: Graph
    ctx: EmitContext  # weights, parameter structs, kernel families, and the code of each node
    state_ident: dict[int, str]  # id(variable) -> its static array

    def code_in(self, order: Sequence[Node]) -> list[NodeCode]:
        """The nodes' code in execution order."""
        by_node = {id(code.node): code for code in self.ctx.code}
        return [by_node[id(node)] for node in order]

    @property
    def aliases(self) -> dict[int, Value]:
        """id(output) -> the value whose memory it shares (zero-copy reshapes)."""
        return {k: v for code in self.ctx.code for k, v in code.aliases.items()}

    @property
    def state_bytes(self) -> int:
        return sum(v.type.num_bytes for v in self.graph.variables())


def check_supported(graph: Graph, lowerings: dict[str, Lowering]) -> None:
    missing = [n for n in graph.nodes if n.op not in lowerings]
    if missing:
        ops = sorted({n.op for n in missing})
        first = missing[0]
        raise UnsupportedOpError(
            f"unsupported operator{'s' if len(ops) > 1 else ''} {', '.join(ops)} "
            f"(first at {first.where()}); nn2c cannot compile this model yet"
        )


def lower(graph: Graph, name: str, target: str | Target = "host", debug: bool = False,
          sparse: str = "auto", optimize: str = "balanced", extra_scratch: bool | frozenset[int] = True
          ) -> LoweredModel:
    """Lower every node of `graph` for `target`; `name` prefixes every C identifier (extra_scratch:
    EmitContext.extra_scratch)."""
    lowerings = load_all()
    check_supported(graph, lowerings)
    ctx = EmitContext(name, target, debug, sparse, optimize, extra_scratch)
    for value in graph.inputs + graph.outputs:
        ctx.value_id(value)
        if value.is_constant:
            raise UnsupportedOpError(
                f"model input/output {value.name!r} is a constant; remove it from the model's signature"
            )
    lower_nodes(graph.nodes, ctx, lowerings)
    state_ident = {id(value): f"{name}_state{k}" for k, value in enumerate(graph.variables())}
    return LoweredModel(name, graph, ctx, state_ident)


def lower_nodes(nodes: Sequence[Node], ctx: EmitContext, lowerings: dict[str, Lowering] | None = None) -> None:
    """Lower each node into `ctx` (a model's nodes, or a WHILE's condition or body: codegen/ops/control.py)."""
    lowerings = lowerings or load_all()
    for node in nodes:
        ctx.begin(node)
        try:
            lowerings[node.op](node, ctx)
        except NN2CError:
            raise
        except (AssertionError, IndexError, KeyError, TypeError, ValueError, ArithmeticError) as exc:
            # a lowering met a node that breaks its operator's contract (missing inputs,
            # impossible shapes): the model is malformed, say where
            detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise InvalidModelError(
                f"{node.where()}: malformed operator ({detail}); the model does not follow the "
                "TFLite schema for this operator, re-export it") from None
