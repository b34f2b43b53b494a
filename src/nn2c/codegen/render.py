"""The `render` stage: the lowered model, in its schedule, with its arena plan, becomes the files of
the output folder: NAME.h, NAME.c, NAME_weights.c/.h, the kernels it uses, main.c and the manifest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from nn2c.codegen.cnames import c_comment, c_float
from nn2c.codegen.context import EmitContext, NodeCode, ParamsStruct, WeightArray, format_field
from nn2c.codegen.cwriter import CWriter
from nn2c.codegen.host_main import host_main_c
from nn2c.codegen.kernel_config import CONFIG_HEADER, config_header, geometry_symbol, path_symbol
from nn2c.codegen.lower import LoweredModel
from nn2c.ir import Graph, Value, c_type
from nn2c.memory.arena import DEBUG_GUARD, ArenaPlan, Move
from nn2c.memory.inplace import InPlacePair
from nn2c.memory.requests import BufferRequest, MemoryPlan

KERNEL_DIR = "nn2c_kernels"
DEBUG_FILL = 0xA5
_PLACEHOLDER = re.compile(r"@([vs])(\d+)@")


@dataclass
class GeneratedCode:
    name: str
    files: dict[str, str]
    plan: MemoryPlan
    weight_bytes: int
    state_bytes: int
    buffers: list[BufferRequest] = field(default_factory=list)
    inplace: list[InPlacePair] = field(default_factory=list)
    lower_bound_no_inplace: int = 0  # max live bytes with every buffer separate
    buffer_of: dict[int, str] = field(default_factory=dict)  # id(value) -> its arena buffer's name
    moves: list[Move] = field(default_factory=list)  # relocations after in-place steps (memory/lifetimes.py)


# marks a relocation's line (the bench counts its instructions apart from the layer's: targets/cortexm_run.py)
RELOCATION_COMMENT = "/* relocated: undoes the in-place drift */"


def _bind(lowered: LoweredModel, steps: list[NodeCode], arena: ArenaPlan) -> list[list[str]]:
    """Each step's statements with the placeholders bound to arena addresses (or state arrays)."""
    return bind_statements(lowered.ctx.values, steps, arena, f"{lowered.name}_arena", lowered.state_ident)


def bind_statements(values: list[Value], steps: list[NodeCode], arena: ArenaPlan, base: str,
                    state_ident: dict[int, str] | None = None) -> list[list[str]]:
    """Each step's statements with the placeholders bound to addresses in the byte array `base` (the
    model's arena, or a WHILE's scratch: the placeholders that binding writes are its own, bound next)."""
    bound = [[_PLACEHOLDER.sub(_binder(values, arena, base, step, state_ident), s) for s in code.statements]
             for step, code in enumerate(steps)]
    for move in arena.moves:  # an in-place chain's tensor back where the next steps want it
        bound[move.step].append(f"nn2c_move(&{base}[{move.target}], &{base}[{move.source}], {move.size}); "
                                f"{RELOCATION_COMMENT}")
    return bound


def bind_definitions(values: list[Value], steps: list[NodeCode], arena: ArenaPlan, base: str,
                     state_ident: dict[int, str] | None = None) -> list[list[str]]:
    """Each step's file-scope definitions (NodeCode.definitions), bound as its statements are."""
    return [[_PLACEHOLDER.sub(_binder(values, arena, base, step, state_ident), s) for s in code.definitions]
            for step, code in enumerate(steps)]


def _binder(values: list[Value], arena: ArenaPlan, base: str, step: int,
            state_ident: dict[int, str] | None) -> Callable[[re.Match[str]], str]:
    def address(match: re.Match[str]) -> str:
        kind, index = match.group(1), int(match.group(2))
        if kind == "s":
            return f"(void *)&{base}[{arena.scratch_offset(step, index)}]"
        value = values[index]
        if value.is_variable and state_ident is not None:
            return state_ident[id(value)]
        return f"({c_type(value.type.dtype)} *)&{base}[{arena.offset(value, step)}]"

    return address


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def used_params(params: list[ParamsStruct], statements: list[list[str]]) -> list[ParamsStruct]:
    """The parameter structs some step's code names (a row group may replace an operator's own)."""
    names = {m for step in statements for line in step for m in _IDENT.findall(line)}
    return [p for p in params if p.ident in names]


def used_weights(weights: list[WeightArray], params: list[ParamsStruct], statements: list[list[str]]
                 ) -> list[WeightArray]:
    """The flash arrays named by the code or by the parameter structs it uses."""
    names = {m for step in statements for line in step for m in _IDENT.findall(line)}
    for p in params:
        names.update(m for value in p.fields.values() for m in _IDENT.findall(format_field(value)))
    return [w for w in weights if w.ident in names]


def weight_alignment(ctx: EmitContext) -> int:
    """Bytes the weight arrays are aligned to: the target's alignment, at --optimize size 4, what the kernels'
    word loads need (LDR / LDRD / LDM, VLDRW; the padding between arrays is flash too)."""
    return 4 if ctx.optimize == "size" else ctx.target.alignment


def _weights_source(name: str, weights: list[WeightArray], alignment: int) -> str:
    w = CWriter()
    w.line(f"/* Constant tensors of model {name} (flash). Generated by nn2c; do not edit. */")
    w.line(f'#include "{name}_weights.h"')
    if any(array.ctype == "float" and np.isnan(array.data).any() for array in weights):
        w.line("#include <math.h> /* NAN */")
    for array in weights:
        w.line()
        if array.comment:
            w.line(f"/* {c_comment(array.comment)} */")
        w.line(f"const {array.ctype} {array.ident}[{max(array.data.size, 1)}] NN2C_ALIGNED({alignment}) = {{")
        for row in _format_rows(array.data, array.ctype):
            w.line("    " + row)
        w.line("};")
    return w.text()


def _format_rows(data: np.ndarray, ctype: str, per_row: int = 16) -> list[str]:
    if data.size == 0:
        return ["0"]
    if ctype == "float":
        items = [c_float(float(x)) for x in data.astype(np.float32)]
    else:
        items = [str(int(x)) for x in data.tolist()]
        if ctype == "int32_t":
            items = ["(-2147483647 - 1)" if x == "-2147483648" else x for x in items]
        elif ctype == "int64_t":  # INT64_MIN has no literal: 9223372036854775808 does not fit long long
            items = ["(-9223372036854775807LL - 1)" if x == "-9223372036854775808" else f"{x}LL" for x in items]
    return [", ".join(items[i : i + per_row]) + "," for i in range(0, len(items), per_row)]


def _weights_header(name: str, weights: list[WeightArray], kernels: list[str]) -> str:
    guard = f"{name.upper()}_WEIGHTS_H"
    w = CWriter()
    w.line(f"/* Internal to model {name}: its constant arrays and kernel headers. Generated by nn2c. */")
    w.line(f"#ifndef {guard}")
    w.line(f"#define {guard}")
    w.line(f'#include "{KERNEL_DIR}/nn2c_common.h"')
    for family in kernels:
        w.line(f'#include "{KERNEL_DIR}/nn2c_{family}.h"')
    w.line()
    for array in weights:
        w.line(f"extern const {array.ctype} {array.ident}[{max(array.data.size, 1)}];")
    w.line(f"#endif /* {guard} */")
    return w.text()


def _io_macros(w: CWriter, macro: str, index: int, value: Value) -> None:
    t = value.type
    w.line(f"/* {macro.lower()} {index}: {c_comment(value.name, 60)} */")
    prefix = f"{macro}{index}"
    w.line(f"#define {prefix}_TYPE {c_type(t.dtype)}")
    w.line(f"#define {prefix}_ELEMENTS {t.num_elements}")
    w.line(f"#define {prefix}_BYTES {t.num_bytes}")
    w.line(f"#define {prefix}_RANK {len(t.shape)}")
    w.line(f"#define {prefix}_SHAPE {{{', '.join(str(d) for d in t.shape) or '1'}}}")
    if t.quant is not None and not t.quant.per_channel:
        w.line(f"#define {prefix}_SCALE {c_float(t.quant.scale[0])}")
        w.line(f"#define {prefix}_ZERO_POINT {t.quant.zero_point[0]}")


class _SourceWriter:
    def __init__(self, lowered: LoweredModel, steps: list[NodeCode], arena: ArenaPlan, source_name: str) -> None:
        self.lowered = lowered
        self.name = lowered.name
        self.graph = lowered.graph
        self.steps = steps
        self.statements = _bind(lowered, steps, arena)
        self.definitions = bind_definitions(lowered.ctx.values, steps, arena, f"{lowered.name}_arena",
                                            lowered.state_ident)
        # what each step's code names: its statements and the file-scope functions they call
        self.named = [s + d for s, d in zip(self.statements, self.definitions, strict=True)]
        self.arena = arena
        self.plan = arena.plan
        self.source_name = source_name
        # debug builds: (guard offset, first step, last step) of every buffer's guard zone
        self.guards = arena.guards

    def header(self) -> str:
        name, graph = self.name, self.graph
        up = name.upper()
        w = CWriter()
        w.line(f"/* {name}.h: C API of the model compiled from {c_comment(self.source_name, 60)}.")
        w.line(" * Generated by nn2c; do not edit.")
        w.line(" *")
        w.line(" * Usage: write the input tensors through the pointers returned by")
        w.line(f" * {name}_input(i), call {name}_invoke(), read the outputs through {name}_output(i).")
        w.line(" * Inputs and outputs live in the tensor arena and may share memory with each other:")
        w.line(" * read the outputs of one inference before writing the inputs of the next.")
        w.line(" * Not reentrant: one inference at a time. */")
        w.line(f"#ifndef {up}_H")
        w.line(f"#define {up}_H")
        w.line()
        w.line("#include <stddef.h>")
        w.line("#include <stdint.h>")
        w.line()
        w.line("#ifdef __cplusplus")
        w.line('extern "C" {')
        w.line("#endif")
        w.line()
        w.line(f"#define {up}_OK 0")
        if self.guards is not None:
            w.line("/* debug build: invoke returns this when an operator wrote outside its tensors */")
            w.line(f"#define {up}_ERROR_GUARD 1")
            w.line(f"#define {up}_DEBUG 1")
        w.line(f"#define {up}_NUM_INPUTS {len(graph.inputs)}")
        w.line(f"#define {up}_NUM_OUTPUTS {len(graph.outputs)}")
        w.line("/* bytes of the static tensor arena (RAM), and of state tensors kept across inferences */")
        w.line(f"#define {up}_ARENA_BYTES {self.plan.arena_bytes}")
        w.line(f"#define {up}_STATE_BYTES {self.lowered.state_bytes}")
        w.line()
        for i, value in enumerate(graph.inputs):
            _io_macros(w, f"{up}_INPUT", i, value)
        for i, value in enumerate(graph.outputs):
            _io_macros(w, f"{up}_OUTPUT", i, value)
        w.line()
        w.line("/* Pointer to input tensor `index` (NULL if out of range); write it before invoking. */")
        w.line(f"void *{name}_input(int index);")
        w.line("/* Pointer to output tensor `index` (NULL if out of range); valid after invoking. */")
        w.line(f"const void *{name}_output(int index);")
        w.line("/* Size in bytes of input / output tensor `index` (0 if out of range). */")
        w.line(f"size_t {name}_input_bytes(int index);")
        w.line(f"size_t {name}_output_bytes(int index);")
        w.line(f"/* Run one inference. Returns {up}_OK. */")
        w.line(f"int {name}_invoke(void);")
        w.line("/* Clear the state tensors (recurrent models) to their initial values. */")
        w.line(f"void {name}_reset(void);")
        if self.guards is not None:
            w.line("/* Debug build: index of the first operator after which a canary or guard zone was found")
            w.line(" * overwritten in the last invoke (-1: none). */")
            w.line(f"int {name}_debug_failed_op(void);")
        w.line()
        w.line("#ifdef __cplusplus")
        w.line("}")
        w.line("#endif")
        w.line(f"#endif /* {up}_H */")
        return w.text()

    def source(self) -> str:
        name, graph, state_ident = self.name, self.graph, self.lowered.state_ident
        w = CWriter()
        w.line(f"/* {name}.c: inference code of the model compiled from {c_comment(self.source_name, 60)}.")
        w.line(" * Generated by nn2c; do not edit. */")
        w.line("#include <math.h>")
        w.line("#include <string.h>")
        w.line(f'#include "{name}.h"')
        w.line(f'#include "{name}_weights.h"')
        w.line()
        paths = sorted(self.lowered.ctx.paths)
        symbols = [path_symbol(path) for path in paths]
        if self.lowered.ctx.wide_geometry is not None:  # the convolution geometry's width (kernels/nn2c_conv.h)
            symbols.append(geometry_symbol(self.lowered.ctx.wide_geometry))
        if symbols:
            w.line("/* optional kernel paths this model's layers take and the width of their geometry")
            w.line(" * (nn2c_kernels/nn2c_config.h): read once an inference, so that linking with kernels built")
            w.line(" * without one fails on its name */")
            for symbol in symbols:
                w.line(f"extern const uint8_t {symbol};")
            w.line()
        w.line(f"/* Tensor arena: {self.plan.arena_bytes} bytes, planned at compile time ({self.plan.planner}). */")
        w.line(f"static uint8_t {name}_arena[{max(self.arena.arena_bytes, 16)}] NN2C_ALIGNED(16);")
        if self.guards is not None:
            self._debug_helpers(w)
        for value in graph.variables():
            ident = state_ident[id(value)]
            count = max(value.type.num_elements, 1)
            w.line(f"/* state: {c_comment(value.name, 70)} */")
            w.line(f"static {c_type(value.type.dtype)} {ident}[{count}] NN2C_ALIGNED(16);")
        if graph.variables():
            w.line(f"static int {name}_state_ready;")
        w.line()
        for params in used_params(self.lowered.ctx.params, self.named):
            w.line(f"static const {params.ctype} {params.ident} = {{")
            for key, val in params.fields.items():
                w.line(f"    .{key} = {format_field(val)},")
            w.line("};")
        w.line()
        for definitions in self.definitions:
            if definitions:
                w.lines(definitions)
                w.line()
        self._io_functions(w)
        with w.block(f"void {name}_reset(void)"):
            for value in graph.variables():
                # as TFLite Micro's ResetVariableTensors: int8 state starts at its zero point
                fill = 0
                if value.type.dtype == "int8" and value.type.quant is not None:
                    fill = value.type.quant.zero_point[0]
                w.line(f"memset({state_ident[id(value)]}, {fill}, sizeof({state_ident[id(value)]}));")
            if graph.variables():
                w.line(f"{name}_state_ready = 1;")
            if not graph.variables():
                w.line("/* this model has no state */")
        w.line()
        with w.block(f"int {name}_invoke(void)"):
            for symbol in symbols:
                w.line(f"(void)*(const volatile uint8_t *)&{symbol};")
            if graph.variables():
                with w.block(f"if (!{name}_state_ready)"):
                    w.line(f"{name}_reset();")
            if self.guards is not None:
                w.line(f"{name}_failed_op = -1;")
            for step, (code, statements) in enumerate(zip(self.steps, self.statements, strict=True)):
                node = code.node
                label = f"/* [{step}] {node.op}" + (f": {c_comment(node.name, 70)}" if node.name else "")
                w.line(label + " */")
                if self.guards is not None:
                    w.line(f"{name}_guard_fill({step});")
                if not statements:
                    w.line("/* no code: output shares its input's memory */")
                w.lines(statements)
                if self.guards is not None:
                    with w.block(f"if (!{name}_guard_check({step}))"):
                        w.line(f"return {name.upper()}_ERROR_GUARD;")
            w.line(f"return {name.upper()}_OK;")
        if self.guards is not None:
            w.line()
            with w.block(f"int {name}_debug_failed_op(void)"):
                w.line(f"return {name}_failed_op;")
        return w.text()

    def _debug_helpers(self, w: CWriter) -> None:
        """Guard zones: filled before the step that first uses a buffer, checked after every step."""
        name = self.name
        assert self.guards is not None
        guards = sorted(self.guards, key=lambda g: (g[1], g[0]))
        w.line(f"/* debug build: {DEBUG_GUARD}-byte canary at the arena's start and a guard zone behind each")
        w.line(" * buffer: {guard offset, first step, last step} */")
        w.line(f"static const int32_t {name}_guards[{max(len(guards), 1)}][3] = {{")
        for offset, first, last in guards or [(0, -1, -2)]:
            w.line(f"    {{{offset}, {first}, {last}}},")
        w.line("};")
        w.line(f"static int {name}_failed_op = -1;")
        w.line()
        with w.block(f"static int {name}_zone_ok(int32_t offset)"):
            with w.block(f"for (int32_t i = 0; i < {DEBUG_GUARD}; ++i)"):
                with w.block(f"if ({name}_arena[offset + i] != {DEBUG_FILL:#04x}u)"):
                    w.line("return 0;")
            w.line("return 1;")
        w.line()
        with w.block(f"static void {name}_guard_fill(int32_t step)"):
            with w.block("if (step == 0)"):
                w.line(f"memset({name}_arena, {DEBUG_FILL:#04x}, {DEBUG_GUARD});")
            with w.block(f"for (size_t k = 0; k < sizeof({name}_guards) / sizeof({name}_guards[0]); ++k)"):
                with w.block(f"if ({name}_guards[k][1] == step)"):
                    w.line(f"memset(&{name}_arena[{name}_guards[k][0]], {DEBUG_FILL:#04x}, {DEBUG_GUARD});")
        w.line()
        with w.block(f"static int {name}_guard_check(int32_t step)"):
            w.line(f"int ok = {name}_zone_ok(0);")
            with w.block(f"for (size_t k = 0; k < sizeof({name}_guards) / sizeof({name}_guards[0]); ++k)"):
                with w.block(f"if ({name}_guards[k][1] <= step && step <= {name}_guards[k][2])"):
                    w.line(f"ok = ok && {name}_zone_ok({name}_guards[k][0]);")
            with w.block(f"if (!ok && {name}_failed_op < 0)"):
                w.line(f"{name}_failed_op = (int)step;")
            w.line("return ok;")
        w.line()

    def _io_functions(self, w: CWriter) -> None:
        name = self.name
        for kind, values, const in (("input", self.graph.inputs, ""), ("output", self.graph.outputs, "const ")):
            with w.block(f"{const}void *{name}_{kind}(int index)"):
                with w.block("switch (index)"):
                    for i, value in enumerate(values):
                        w.line(f"case {i}: return &{name}_arena[{self.arena.offset(value)}];")
                    w.line("default: return NULL;")
            w.line()
            with w.block(f"size_t {name}_{kind}_bytes(int index)"):
                with w.block("switch (index)"):
                    for i, value in enumerate(values):
                        w.line(f"case {i}: return {value.type.num_bytes};")
                    w.line("default: return 0;")
            w.line()


def _kernel_files(families: set[str]) -> dict[str, str]:
    root = resources.files("nn2c") / "kernels"
    files = {f"{KERNEL_DIR}/nn2c_common.h": (root / "nn2c_common.h").read_text()}
    for family in sorted(families):
        for ext in ("h", "c"):
            entry = root / f"nn2c_{family}.{ext}"
            if entry.is_file():
                files[f"{KERNEL_DIR}/nn2c_{family}.{ext}"] = entry.read_text()
    return files


def _io_spec(value: Value) -> dict:
    t = value.type
    spec: dict = {"name": value.name, "dtype": t.dtype, "shape": list(t.shape)}
    if t.quant is not None and not t.quant.per_channel:
        spec["scale"] = t.quant.scale[0]
        spec["zero_point"] = t.quant.zero_point[0]
    return spec


def _manifest(name: str, graph: Graph, plan: MemoryPlan, state_bytes: int) -> str:
    """Machine-readable description of the folder's C API (used by `nn2c run`)."""
    return json.dumps({
        "name": name,
        "inputs": [_io_spec(v) for v in graph.inputs],
        "outputs": [_io_spec(v) for v in graph.outputs],
        "arena_bytes": plan.arena_bytes,
        "state_bytes": state_bytes,
    }, indent=2, sort_keys=True) + "\n"


def render(lowered: LoweredModel, arena: ArenaPlan, source_name: str,
           steps: list[NodeCode] | None = None) -> GeneratedCode:
    """All files of the output folder; `steps` is the code of each step of invoke() in order
    (default: every node of the graph, in its scheduled order)."""
    name, graph = lowered.name, lowered.graph
    steps = lowered.code_in(graph.nodes) if steps is None else steps
    writer = _SourceWriter(lowered, steps, arena, source_name)
    kernels = sorted(lowered.ctx.kernels)
    params = used_params(lowered.ctx.params, writer.named)
    weights = used_weights(lowered.ctx.weights, params, writer.named)
    files = {
        f"{name}.h": writer.header(),
        f"{name}.c": writer.source(),
        f"{name}_weights.h": _weights_header(name, weights, kernels),
        f"{name}_weights.c": _weights_source(name, weights, weight_alignment(lowered.ctx)),
        "main.c": host_main_c(name, len(graph.inputs)),
        "nn2c_manifest.json": _manifest(name, graph, arena.plan, lowered.state_bytes),
    }
    files.update(_kernel_files(set(kernels)))
    files[f"{KERNEL_DIR}/{CONFIG_HEADER}"] = config_header(lowered.ctx.paths, bool(lowered.ctx.wide_geometry))
    weight_bytes = sum(a.data.nbytes for a in weights)
    return GeneratedCode(name, files, arena.plan, weight_bytes, lowered.state_bytes, arena.requests,
                         arena.honoured, arena.lower_bound_no_inplace, arena.buffers.buffer_of, arena.moves)
