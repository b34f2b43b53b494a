"""Lowering of WHILE (ir/ops/state.py) whose number of iterations depends on run-time data: a C loop.

The condition and the body are graphs of their own. Each is lowered into the model's context (its
weights join the model's flash arrays, its kernels the model's), scheduled, and planned in an arena
of its own; the two arenas share the WHILE's scratch buffer, since the condition's result is read
before the body starts. The loop copies bytes as TFLM's while.cc does:

    loop values <- inputs
    for (;;) {
        condition inputs <- loop values; run the condition; stop unless its first element is true
        body inputs <- loop values; run the body; loop values <- body outputs
    }

The loop values are the WHILE's outputs in the model's arena. Every kernel runs as in a model of
its own, so results are TFLM's bit for bit; the price is one copy of each loop value per
condition and body run, and the subgraphs' RAM while the loop runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from nn2c.codegen.context import EmitContext, NodeCode
from nn2c.codegen.ops import lowering
from nn2c.errors import NN2CError
from nn2c.ir import Graph, Node, Value

# the subgraphs are small: the exact planner proves its plan optimal well within this
_PLAN_SECONDS = 5.0


@dataclass
class _Program:
    """A condition or body, lowered and planned: its statements address its arena through `base`."""

    graph: Graph
    statements: list[str]
    arena_bytes: int
    pointer: dict[int, str]  # id(value) of each input and output -> its C address
    codes: list[NodeCode]  # of each node, in order (read by nn2c.profile: the cost of one iteration)


def _program(node: Node, ctx: EmitContext, graph: Graph, role: str, base: str) -> _Program:
    from nn2c.codegen.lower import check_supported, lower_nodes
    from nn2c.codegen.ops import load_all
    from nn2c.codegen.render import bind_statements
    from nn2c.memory.arena import plan_arena
    from nn2c.memory.schedule import schedule

    lowerings = load_all()
    try:
        check_supported(graph, lowerings)
        schedule(graph)
        with ctx.nested() as codes:
            lower_nodes(graph.nodes, ctx, lowerings)
    except NN2CError as exc:
        raise type(exc)(f"{node.where()}: in its {role}: {exc}") from None
    aliases = {k: v for code in codes for k, v in code.aliases.items()}
    arena = plan_arena(graph, aliases, [code.scratch for code in codes], "exact", time_limit=_PLAN_SECONDS)
    bound = bind_statements(ctx.values, codes, arena, base)
    statements = []
    for code, lines in zip(codes, bound, strict=True):
        statements.append(f"/* {role}: {code.node.op} */")
        statements.extend(lines)
    pointer = {}
    for value in (*graph.inputs, *graph.outputs):
        if value.is_constant:
            pointer[id(value)] = ctx.weight(value)
        else:
            pointer[id(value)] = f"&{base}[{arena.offset(value)}]"
    return _Program(graph, statements, arena.arena_bytes, pointer, codes)


def _copies(targets: list[str], sources: list[str], values: list[Value], needed: list[bool]) -> list[str]:
    return [f"memcpy({t}, {s}, {v.type.num_bytes});"
            for t, s, v, n in zip(targets, sources, values, needed, strict=True) if n and v.type.num_bytes]


def _read(graph: Graph) -> list[bool]:
    """Whether the subgraph reads each of its inputs: an input no node reads needs no copy, unless it
    is also an output at another position (output j passing input j through is not copied back)."""
    moved = {id(v) for j, v in enumerate(graph.outputs) if j >= len(graph.inputs) or v is not graph.inputs[j]}
    return [bool(v.users) or id(v) in moved for v in graph.inputs]


@lowering("WHILE")
def while_loop(node: Node, ctx: EmitContext) -> None:
    cond, body = node.attrs.get("cond"), node.attrs.get("body")
    if not isinstance(cond, Graph) or not isinstance(body, Graph):
        raise ctx.unsupported("a WHILE needs its condition and body graphs")
    loop = [v for v in node.inputs if v is not None]
    if not (len(loop) == len(node.outputs) == len(cond.inputs) == len(body.inputs) == len(body.outputs)):
        raise ctx.unsupported("the loop values, outputs and subgraph inputs and outputs differ in number")
    # the WHILE's scratch is asked for once both arenas are known: `@s0@` is its placeholder; the
    # subgraphs address it through a local pointer named after the loop's first value (unique, also
    # for a WHILE nested in a body)
    base = f"loop{ctx.value_id(node.outputs[0])}" if node.outputs else "loop"
    # (no state inside: the frontend refuses variable tensors in a run-time loop's subgraphs)
    condition, program = (_program(node, ctx, graph, role, base) for graph, role in ((cond, "condition"),
                                                                                       (body, "body")))
    here = ctx.code[-1]
    assert here.node is node
    here.inner = condition.codes + program.codes
    ctx.scratch(max(condition.arena_bytes, program.arena_bytes, 1))
    flag = cond.outputs[0]
    state = [ctx.ptr(v) for v in node.outputs]
    every = [True] * len(loop)
    ctx.statement("{ /* WHILE: iterations depend on run-time data (TFLM while.cc) */")
    ctx.statement(f"    uint8_t *const {base} = (uint8_t *)@s0@; /* the condition's and the body's arena */")
    for line in _copies(state, [ctx.ptr(v) for v in loop], node.outputs, every):
        ctx.statement("    " + line)
    ctx.statement("    for (;;) {")
    for line in _copies([condition.pointer[id(v)] for v in cond.inputs], state, node.outputs, _read(cond)):
        ctx.statement("        " + line)
    for line in condition.statements:
        ctx.statement("        " + line)
    ctx.statement(f"        if (!((const uint8_t *){condition.pointer[id(flag)]})[0]) {{")
    ctx.statement("            break;")
    ctx.statement("        }")
    for line in _copies([program.pointer[id(v)] for v in body.inputs], state, node.outputs, _read(body)):
        ctx.statement("        " + line)
    for line in program.statements:
        ctx.statement("        " + line)
    # a loop value the body passes through unchanged stays where it is
    changed = [result is not given for result, given in zip(body.outputs, body.inputs, strict=True)]
    for line in _copies(state, [program.pointer[id(v)] for v in body.outputs], node.outputs, changed):
        ctx.statement("        " + line)
    ctx.statement("    }")
    ctx.statement("}")
