"""Row groups in C: several lowered operators run together, one output row of the last at a time.

Each member keeps the kernel call its own lowering wrote (codegen/ops/), with a copy of its
parameter struct on the stack whose row geometry is set per call: a convolution or pooling row
reads `in_h` rows of a window starting at its first needed row, with `pad_h` rows of padding above
them (only at the top border); an element-wise row is `row elements` long. Which kernels can run a
row at a time, and which fields say so, is ROW_KERNELS. The loop itself is the one
memory/rows.py simulates; memory/fusion.py chooses the groups.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from nn2c.codegen.bands import COLUMN_FIELDS, Bands, column_map
from nn2c.codegen.cnames import c_comment
from nn2c.codegen.context import GEOMETRY_MAX, EmitContext, NodeCode, ParamsStruct
from nn2c.ir import Node, Value, c_type, dtype_bytes
from nn2c.memory.rows import Member, RowMap, Simulation, consumers, steps

# kernel -> how its rows are set: "conv" (.g geometry), "pool" (input_h / output_h / pad_h),
# "bcast" (a same-shape element-wise op: .bc.dims[0] elements), "count" (.count elements)
ROW_KERNELS: dict[str, str] = {
    **dict.fromkeys(("nn2c_conv_s8", "nn2c_conv_s16_b64", "nn2c_conv_s16_b32", "nn2c_conv_f32", "nn2c_dwconv_s8",
                     "nn2c_dwconv_s16", "nn2c_dwconv_f32", "nn2c_conv_s8_simd", "nn2c_dw_s8_simd",
                     "nn2c_conv_s8_sparse", "nn2c_conv_s8_rows"), "conv"),
    **dict.fromkeys(("nn2c_avg_pool_s8", "nn2c_avg_pool_s16", "nn2c_avg_pool_f32", "nn2c_max_pool_s8",
                     "nn2c_max_pool_s16", "nn2c_max_pool_f32"), "pool"),
    **dict.fromkeys(("nn2c_add_s8", "nn2c_add_s16", "nn2c_add_f32"), "bcast"),
    "nn2c_add_s8_simd": "count",
    # a FULLY_CONNECTED over a 4-D map: accumulates the products of each input row, finishes after the loop
    **dict.fromkeys(("nn2c_fully_connected_s8", "nn2c_fc_s8_simd"), "accumulate"),
}
_ROW_FIELDS = {"conv": ("g.in_h", "g.out_h", "g.pad_h"), "pool": ("input_h", "output_h", "pad_h")}
_FIELD = re.compile(r"\.(\w+) = (-?\d+)")
_SCRATCH = re.compile(r"@s(\d+)@")


@dataclass(eq=False)
class StreamOp:
    """A lowered operator that can run one output row at a time."""

    node: Node
    code: NodeCode
    kind: str
    function: str
    args: tuple[str, ...]
    params: ParamsStruct
    streamed: list[tuple[int, Value, RowMap]]  # (argument index, input tensor, its row map)
    output_arg: int

    @property
    def output(self) -> Value:
        return self.node.outputs[0]

    @cached_property
    def column_map(self) -> RowMap | None:
        """How its output columns read its input's (codegen/bands.py); None if it cannot band."""
        return column_map(self)

    @property
    def rows(self) -> int:
        """Rows made (an accumulating sink: rows of its input consumed) per group."""
        return self._row_shape[1]

    @property
    def row_elements(self) -> int:
        shape = self._row_shape
        return shape[2] * shape[3]

    @property
    def _row_shape(self) -> tuple[int, ...]:
        return self.streamed[0][1].type.shape if self.kind == "accumulate" else self.output.type.shape

    @property
    def scratch(self) -> list[int]:
        """Bytes of each scratch buffer the row calls need (an accumulating sink: its int32 sums; a depthwise layer
        over channel planes: the zero-point row of its tap loop, as its rows run there)."""
        if self.kind == "accumulate":
            return [4 * self.output.type.num_elements]
        if self.planes:
            return [self.node.inputs[0].type.shape[3]]  # type: ignore[union-attr]
        return list(self.code.scratch)

    @property
    def planes(self) -> bool:
        """A depthwise layer over channel planes (nn2c_dw_simd_params_t.band): a row group runs its rows through the
        tap loop (band 0), whose scratch is the zero-point row alone."""
        return self.function == "nn2c_dw_s8_simd" and bool(self.params.fields.get("band"))


def stream_op(code: NodeCode, ctx: EmitContext) -> StreamOp | None:
    """The node's single kernel call as a row kernel, or None if it cannot run a row at a time."""
    node = code.node
    if len(code.calls) != 1 or len(code.statements) != 1 or code.aliases or len(node.outputs) != 1:
        return None
    function, args = code.calls[0]
    kind = ROW_KERNELS.get(function)
    out = node.outputs[0]
    if kind == "accumulate":
        return _accumulating(code, ctx, function, args)
    if function in ("nn2c_avg_pool_s8", "nn2c_avg_pool_s8_global") and _is_global(code, ctx):
        # sums of the rows, averaged after the loop
        return _averaging(code, ctx, function, args)
    if kind is None or len(out.type.shape) != 4 or out.type.shape[0] != 1 or out.type.num_elements == 0:
        return None
    params = _params_of(args[0], ctx)
    if params is None:
        return None
    placeholder = {f"@v{ctx.value_ids[id(v)]}@": v for v in node.inputs + node.outputs
                   if v is not None and id(v) in ctx.value_ids}
    if args.count(_ptr(ctx, out)) != 1:
        return None
    output_arg = args.index(_ptr(ctx, out))
    streamed = []
    for k, arg in enumerate(args):
        value = placeholder.get(arg)
        if value is None or value is out:
            continue
        row_map = _row_map(kind, params, value, out)
        if row_map is None:
            return None
        streamed.append((k, value, row_map))
    if not streamed or len({id(v) for _, v, _ in streamed}) != len(streamed):
        return None
    return StreamOp(node, code, kind, function, args, params, streamed, output_arg)


def _accumulating(code: NodeCode, ctx: EmitContext, function: str, args: tuple[str, ...]) -> StreamOp | None:
    """An int8 FULLY_CONNECTED of batch 1 reading a 4-D [1, H, W, C] map, weights constant."""
    node = code.node
    x, w = node.inputs[0], node.inputs[1]
    bias, out = node.input(2), node.outputs[0]
    if x is None or w is None or x.is_constant or not w.is_constant or (bias is not None and not bias.is_constant):
        return None
    if len(x.type.shape) != 4 or x.type.shape[0] != 1 or (x.type.dtype, w.type.dtype, out.type.dtype) != ("int8",) * 3:
        return None
    if len(w.type.shape) != 2 or w.type.shape[1] != x.type.num_elements or out.type.num_elements != w.type.shape[0]:
        return None
    params = _params_of(args[0], ctx)
    if params is None or args.count(_ptr(ctx, x)) != 1 or args.count(_ptr(ctx, out)) != 1:
        return None
    rows = RowMap(x.type.shape[1])
    return StreamOp(node, code, "accumulate", function, args, params, [(args.index(_ptr(ctx, x)), x, rows)],
                    args.index(_ptr(ctx, out)))


def _is_global(code: NodeCode, ctx: EmitContext) -> bool:
    """An int8 AVERAGE_POOL_2D whose one window is its whole [1, H, W, C] input (a global pool)."""
    x, out = code.node.inputs[0], code.node.outputs[0]
    params = _params_of(code.calls[0][1][0], ctx)
    if x is None or params is None or len(x.type.shape) != 4 or x.type.shape[0] != 1:
        return False
    from nn2c.codegen.ops.pool import is_global_pool

    g = geometry(params)
    return (g.get("input_h"), g.get("input_w")) == x.type.shape[1:3] and is_global_pool(g) \
        and x.type.dtype == out.type.dtype == "int8"


def _averaging(code: NodeCode, ctx: EmitContext, function: str, args: tuple[str, ...]) -> StreamOp | None:
    """A global int8 AVERAGE_POOL_2D as an accumulating sink: per channel int32 sums of its input
    rows, then TFLite's rounded division by the pixel count (nn2c_avg_pool_s8_sums / _finish)."""
    node = code.node
    x, out = node.inputs[0], node.outputs[0]
    assert x is not None
    params = _params_of(args[0], ctx)
    if params is None or args.count(_ptr(ctx, x)) != 1 or args.count(_ptr(ctx, out)) != 1:
        return None
    return StreamOp(node, code, "accumulate", function, args, params,
                    [(args.index(_ptr(ctx, x)), x, RowMap(x.type.shape[1]))], args.index(_ptr(ctx, out)))


def _ptr(ctx: EmitContext, value: Value) -> str:
    return f"@v{ctx.value_ids[id(value)]}@"


def _params_of(arg: str, ctx: EmitContext) -> ParamsStruct | None:
    if not arg.startswith("&"):
        return None
    return next((p for p in ctx.params if p.ident == arg[1:]), None)


def geometry(params: ParamsStruct) -> dict[str, int]:
    """The row geometry fields the kernel is given (conv: the nn2c_conv_geom_t initializer)."""
    if "g" in params.fields:
        return {k: int(v) for k, v in _FIELD.findall(str(params.fields["g"]))}
    return {k: int(v) for k, v in params.fields.items() if isinstance(v, int)}


def _row_map(kind: str, params: ParamsStruct, value: Value, out: Value) -> RowMap | None:
    shape = value.type.shape
    if len(shape) != 4 or shape[0] != 1:
        return None
    if kind in ("bcast", "count"):
        if shape != out.type.shape:
            return None
        if kind == "bcast" and not str(params.fields.get("bc", "")).startswith("{.rank = 1,"):
            return None
        return RowMap(shape[1])
    g = geometry(params)
    if kind == "conv":
        if g.get("batches") != 1 or g["in_h"] != shape[1] or g["out_h"] != out.type.shape[1]:
            return None
        return RowMap(g["in_h"], (g["filter_h"] - 1) * g["dilation_h"] + 1, g["stride_h"], g["pad_h"])
    if g.get("batches") != 1 or g["input_h"] != shape[1] or g["output_h"] != out.type.shape[1]:
        return None
    return RowMap(g["input_h"], g["filter_h"], g["stride_h"], g["pad_h"])


@dataclass(eq=False)
class RowGroup:
    """One step of the schedule that runs `ops` (in execution order; the last is the sink) by rows."""

    ops: list[StreamOp]
    members: list[Member]
    outside: list[Value]  # whole tensors read from outside the group (source -1 - k)
    sim: Simulation
    kernel_scratch: list[list[int]]  # per op: offsets of its scratch buffers in the shared region
    scratch_region: int
    inplace: dict[int, int] = field(default_factory=dict)  # id(outside tensor) -> in-place distance
    # a member whose rows the element-wise sink alone reads, element by element: it writes them straight
    # into the sink's output rows, which the sink then overwrites in place (no window of its own)
    alias: int | None = None
    # a SIMD convolution whose output only the accumulating sink reads hands it feed_pixels(out_c) pixels
    # at a time (nn2c_conv_s8_simd_fc): its window is those pixels instead of whole rows
    feed: bool = False
    # the output split into column bands, each streamed by rows (codegen/bands.py): groups whose members
    # each have one reader
    bands: Bands | None = None
    op: str = "ROW_GROUP"
    index: int = -1

    @property
    def inputs(self) -> list[Value]:
        return list(self.outside)

    @property
    def outputs(self) -> list[Value]:
        return [self.ops[-1].output]

    @property
    def nodes(self) -> list[Node]:
        return [o.node for o in self.ops]

    @property
    def name(self) -> str:
        how = f"by rows in {self.bands.count} column bands" if self.bands is not None else "by rows"
        return f"{len(self.ops)} operators {how}: " + ", ".join(o.node.op for o in self.ops)

    def where(self) -> str:
        return f"row group of {self.ops[0].node.where()} .. {self.ops[-1].node.where()}"

    @property
    def window_bytes(self) -> list[int]:
        if self.bands is not None:
            return [self.sim.capacity[j] * self.bands.row_bytes(j) for j in range(len(self.ops) - 1)]
        sizes = self.sim.window_bytes(self.members)[:-1]
        if self.alias is not None:
            sizes[self.alias] = 0
        if self.feed:
            channels = self.ops[0].output.type.shape[-1]
            sizes[0] = feed_pixels(channels) * channels
        return sizes

    @property
    def slower_paths(self) -> list[str]:
        """Members that run a slower kernel than they would layer by layer (said in the summary)."""
        how = (f"sums of {feed_pixels(self.ops[0].output.type.shape[-1])} pixels at a time in the convolution"
               if self.feed else "sums row by row")
        return [f"{op.node.where()}: {how} (the filter as stored, not re-laid out) instead of {op.function}"
                for op in self.ops if op.kind == "accumulate" and op.function == "nn2c_fc_s8_simd"]

    @property
    def sums_bytes(self) -> int:
        """The int32 sums of an accumulating sink, live through the whole loop."""
        sink = self.ops[-1]
        return sink.scratch[0] if sink.kind == "accumulate" else 0

    @property
    def tile_bytes(self) -> list[int]:
        """Column bands: the tile of each outside read (the most rows one call reads, a band wide), then the
        sink's output tile."""
        if self.bands is None:
            return []
        step = steps(self.members, consumers(self.members), self.sim.block)
        tiles = []
        for r, read in enumerate(self.bands.reads):
            rows = min(read.rows.in_rows, (step[read.member] - 1) * read.rows.stride + read.rows.span)
            tiles.append(rows * self.bands.read_row_bytes(r))
        return [*tiles, step[-1] * self.bands.row_bytes(len(self.ops) - 1)]

    @property
    def recomputed_macs(self) -> int:
        return self.bands.recomputed_macs if self.bands is not None else 0

    @property
    def scratch(self) -> list[int]:
        """Windows, then the band tiles, then the region the members' kernels share, then the sink's sums."""
        return (self.window_bytes + self.tile_bytes + ([self.scratch_region] if self.scratch_region else [])
                + ([self.sums_bytes] if self.sums_bytes else []))


def group_code(group: RowGroup, ctx: EmitContext, tables: bool = False) -> NodeCode:
    """The C block of a row group (placeholders bound later by the renderer, like any step's); a chain's
    loop from a table where `tables` (chain_tables)."""
    if tables and is_chain(group):
        return chain_code(group, ctx)
    ops, members, sim = group.ops, group.members, group.sim
    n = len(ops)
    windows = len(group.window_bytes)
    region = windows + len(group.tile_bytes)  # the scratch index of the kernels' shared region
    bands = group.bands
    readers = consumers(members)
    lines = [f"{{ /* {group.name}; {group.sim.block} row(s) of the last per iteration */"]
    body: list[str] = []
    sink = ops[-1]
    finish: list[str] = []
    if sink.kind == "accumulate" and sink.node.op == "AVERAGE_POOL_2D":
        acc = f"(int32_t *)@s{len(group.scratch) - 1}@"
        body.append(f"int32_t *const acc = {acc}; /* the sums of op {n - 1} */")
        body.append(f"memset(acc, 0, {sink.output.type.num_elements} * sizeof(int32_t));")
        finish = [f"nn2c_avg_pool_s8_finish(&k{n - 1}, acc, {sink.args[sink.output_arg]});"]
    elif sink.kind == "accumulate":
        # the portable kernel's parameters and plain filter (a re-laid-out SIMD filter is dropped unused)
        from nn2c.codegen.ops.fully_connected import fc_s8_params

        node = sink.node
        sink.params = ParamsStruct(fc_s8_params(ctx, node)[1:], "nn2c_fc_s8_params_t", {})
        filter_ident = ctx.weight(node.inputs[1]) if node.inputs[1] is not None else "NULL"
        bias_ident, accumulate = _accumulation(ctx, node)
        outputs = sink.output.type.num_elements
        acc = f"(int32_t *)@s{len(group.scratch) - 1}@"
        body.append(f"int32_t *const acc = {acc}; /* the sums of op {n - 1} */")
        body.append(f"memset(acc, 0, {outputs} * sizeof(int32_t));")
        finish = [f"nn2c_fc_s8_finish(&k{n - 1}, acc, {bias_ident}, {ctx.ptr(sink.output)});"]
    for j, op in enumerate(ops):
        body.append(f"{op.params.ctype} k{j} = {op.params.ident};")
        if op.kind == "bcast":  # (its one loop's extent set per call: the struct's own array is constant)
            body.append(f"int32_t k{j}_dims[1] = {{0}};")
            body.append(f"k{j}.bc.dims = k{j}_dims;")
        if op.planes:
            body.append(f"k{j}.band = 0; /* (its rows through the tap loop: the planes' scratch is not there) */")
    for j in range(n - 1):
        ctype = c_type(ops[j].output.type.dtype)
        if j == group.alias:  # its rows go where the sink writes the same rows, then read in place
            body.append(f"{ctype} *const w{j} = ({ctype} *){sink.args[sink.output_arg]}; /* op {j}'s rows are "
                        f"written in op {n - 1}'s output */")
            continue
        if group.feed:
            body.append(f"{ctype} *const w{j} = ({ctype} *)@s{j}@; /* "
                        f"{feed_pixels(ops[j].output.type.shape[-1])} pixels of op {j}'s output */")
            continue
        body.append(f"{ctype} *const w{j} = ({ctype} *)@s{j}@; /* {sim.capacity[j]} rows of op {j}'s output */")
    firsts = [] if group.feed else [f"first{j} = 0" for j in range(n - 1)]  # (a feed's window never slides)
    counters = "int32_t " + ", ".join(firsts + [f"done{j} = 0" for j in range(n)]) + ";"
    if bands is None:
        body.append(counters)
        elems = [str(op.row_elements) for op in ops]  # elements of one row of each member's output
    else:
        band_loop, elems = _band_start(group, bands)
        body += [*band_loop, "    " + counters]
    block = sim.block
    step = steps(members, readers, block)
    loop = [f"const int32_t need{n - 1} = NN2C_MIN({sink.rows}, done{n - 1} + {block});"]
    for j in range(n - 2, -1, -1):
        terms = [f"(need{c} > 0 ? NN2C_MIN({m.in_rows}, (need{c} - 1) * {m.stride} - {m.pad} + {m.span}) : 0)"
                 for c, m in readers[j]]
        loop.append(f"const int32_t need{j} = {_nested('NN2C_MAX', terms)};")
    for j, op in enumerate(ops):
        # at most its step more than it has, and only rows its inputs in the group already allow
        limits = [f"need{j}", f"done{j} + {step[j]}"]
        for source, m in members[j].reads:
            if source >= 0:
                reach = f"done{source} + {m.pad - m.span}"
                limits.append(f"(done{source} >= {m.in_rows} ? {members[j].out_rows} : {reach} < 0 ? 0 : "
                              f"NN2C_MIN({members[j].out_rows}, ({reach}) / {m.stride} + 1))")
        loop.append(f"const int32_t upto{j} = {_nested('NN2C_MIN', limits)};")
        loop.append(f"if (done{j} < upto{j}) {{ /* op {j}: rows done{j} .. upto{j} - 1 in one call */")
        inner: list[str] = []
        if j < n - 1 and j != group.alias and not group.feed:
            size = f"{elems[j]} * sizeof(*w{j})"
            lowest = [f"(done{c} < {members[c].out_rows} ? NN2C_MAX(0, done{c} * {m.stride} - {m.pad}) : INT32_MAX)"
                      for c, m in readers[j]]
            inner += [f"if (upto{j} - first{j} > {sim.capacity[j]}) {{ /* no room: keep only the rows still read */",
                      f"    const int32_t low = {_nested('NN2C_MIN', [f'done{j}', *lowest])};",
                      f"    nn2c_move(w{j}, w{j} + (low - first{j}) * {elems[j]}, "
                      f"(size_t)(done{j} - low) * {size});",
                      f"    first{j} = low;",
                      "}"]
        rows = f"(upto{j} - done{j})"
        if op.kind == "accumulate" and group.feed:  # the convolution added its pixels' products
            loop += ["    " + s for s in inner] + [f"    done{j} = upto{j};", "}"]
            continue
        if op.kind == "accumulate":
            k, value, _ = op.streamed[0]
            source = _source(group, value)
            row = f"w{source} + (done{j} - first{source}) * {op.row_elements}" if source >= 0 else \
                f"{op.args[k]} + done{j} * {op.row_elements}"
            start, count = f"done{j} * {op.row_elements}", f"{rows} * {op.row_elements}"
            if op.node.op == "AVERAGE_POOL_2D":
                channels = op.output.type.shape[-1]
                inner.append(f"nn2c_avg_pool_s8_sums({row}, {count}, {channels}, acc);")
            elif accumulate == "nn2c_fc_s8_sums_simd":
                depth, outputs = node.inputs[1].type.shape[1], node.inputs[1].type.shape[0]  # type: ignore
                inner.append(f"{accumulate}({row}, {filter_ident}, {depth}, {outputs}, {start}, {count}, acc);")
            else:
                inner.append(f"{accumulate}(&k{j}, {row}, {filter_ident}, {start}, {count}, acc);")
            inner.append(f"done{j} = upto{j};")
            loop += ["    " + s for s in inner] + ["}"]
            continue
        if op.kind == "bcast":
            inner.append(f"k{j}_dims[0] = {rows} * {elems[j]};")
        elif op.kind == "count":
            inner.append(f"k{j}.count = {rows} * {elems[j]};")
        offsets: list[int] = group.kernel_scratch[j]

        def shared(match: re.Match[str], offsets: list[int] = offsets) -> str:
            return f"(void *)((uint8_t *)@s{region}@ + {offsets[int(match.group(1))]})"

        # the kernel's own scratch placeholders point into the shared region (before any window is named)
        args = [_SCRATCH.sub(shared, a) for a in op.args]
        args[0] = f"&k{j}"
        geometry_set = False
        for k, value, m in op.streamed:
            source = _source(group, value)
            elements = elems[source] if source >= 0 else str(value.type.shape[2] * value.type.shape[3])
            if op.kind in _ROW_FIELDS and not geometry_set:
                in_h, out_h, pad_h = _ROW_FIELDS[op.kind]
                inner += [f"const int32_t lo{k} = NN2C_MAX(0, done{j} * {m.stride} - {m.pad});",
                          f"k{j}.{in_h} = NN2C_MIN({m.in_rows}, (upto{j} - 1) * {m.stride} - {m.pad} + {m.span}) "
                          f"- lo{k};",
                          f"k{j}.{out_h} = {rows};",
                          f"k{j}.{pad_h} = lo{k} - (done{j} * {m.stride} - {m.pad});"]
                geometry_set = True
                row = f"lo{k}"
            else:
                row = f"done{j}"
            if source >= 0:
                args[k] = f"w{source} + ({row} - first{source}) * {elements}"
            elif bands is not None:  # the band's columns of the rows it reads, copied into its tile
                r = bands.read_number(j, k)
                count = f"k{j}.{_ROW_FIELDS[op.kind][0]}" if op.kind in _ROW_FIELDS else rows
                inner.append(_copy_in(bands, r, args[k], row, count, windows + r))
                args[k] = f"({c_type(value.type.dtype)} *)@s{windows + r}@"
            else:
                args[k] = f"{args[k]} + {row} * {elements}"
        copy_out = ""
        if j < n - 1:
            args[op.output_arg] = f"w{j} + (done{j} - first{j}) * {elems[j]}"
        elif bands is not None:  # through the output tile into the band's columns of the output rows
            args[op.output_arg] = f"({c_type(op.output.type.dtype)} *)@s{windows + len(bands.reads)}@"
            copy_out = _copy_out(op, bands, args[op.output_arg], op.args[op.output_arg], rows, elems[j], n)
        else:
            args[op.output_arg] = f"{args[op.output_arg]} + done{j} * {op.row_elements}"
        if group.feed and j == 0:  # (params, input, filter, scratch) then the sink's filter and sums
            fc = ops[-1].node
            depth, outputs = fc.inputs[1].type.shape[1], fc.inputs[1].type.shape[0]  # type: ignore[union-attr]
            args = [*args[:3], args[4], filter_ident, str(depth), str(outputs), f"done0 * {op.row_elements}",
                    "acc", "w0", str(feed_pixels(op.output.type.shape[-1]))]
            inner.append(f"nn2c_conv_s8_simd_fc({', '.join(args)});")
            if op.params.fields.get("triples"):  # (fed to the sink a pixel pair at a time: the pairs' dual path)
                ctx.take_path("DSP_GEMM_PAIRS")
                ctx.take_path("DSP_GEMM_DUAL")
        else:
            inner.append(f"{op.function}({', '.join(args)});")
        if copy_out:
            inner.append(copy_out)
        inner.append(f"done{j} = upto{j};")
        loop += ["    " + s for s in inner] + ["}"]
    indent = "" if bands is None else "    "
    body.append(f"{indent}while (done{n - 1} < {sink.rows}) {{ /* (the first iterations fill the windows) */")
    body += [indent + "    " + s for s in loop] + [indent + "}"] + finish
    if bands is not None:
        body.append("}")
    lines += ["    " + s for s in body] + ["}"]
    code = NodeCode(group)  # type: ignore[arg-type]  # a step, shaped like a node for the renderer
    code.statements = lines
    code.scratch = group.scratch
    return code


# Cortex-M4 code with and without the tables (arm-none-eabi-gcc -O2, the bench image's model code; measured with
# 32-bit geometry and table rows): +568 B for vww_96_int8's one chain of 2 members, +424 B for
# tinyengine/mcunetv2_large's, -1,388 B for person_detect's 13 members in three chains: some 180 B saved per
# member against some 900 B for nn2c_row_chain and the tables' fixed costs. tests/test_row_groups.py checks the
# choice on person_detect and vww_96_int8 as built today.
TABLE_MIN_MEMBERS = 6


def chain_tables(groups: list[RowGroup], ctx: EmitContext) -> bool:
    """Whether the model's chains run from tables (nn2c_row_chain): not at --optimize speed, which keeps
    every loop written out (no calls through the table), only where they save code, and where their row
    counts fit the model's geometry fields (nn2c_dim_t: a chain of poolings alone over more rows than 65,535
    keeps its loop). Taking them makes the model read its geometry's width (kernels/nn2c_conv.c)."""
    chains = [g for g in groups if is_chain(g)]
    if ctx.optimize == "speed" or sum(len(g.ops) for g in chains) < TABLE_MIN_MEMBERS:
        return False
    if not ctx.wide_geometry and max(v for g in chains for facts in _row_facts(g) for v in facts) > GEOMETRY_MAX:
        return False
    ctx.wide_geometry = bool(ctx.wide_geometry)
    return True


def is_chain(group: RowGroup) -> bool:
    """Whether the group's loop can run from a table (nn2c_row_chain, kernels/nn2c_rows.h): convolutions
    and poolings, member 0 reading a tensor from outside the group, each later member the one before it
    and each member read by the next alone; no column bands, feed or alias."""
    if group.bands is not None or group.feed or group.alias is not None or len(group.ops) < 2:
        return False
    if any(op.kind not in _ROW_FIELDS or len(op.streamed) != 1 for op in group.ops):
        return False
    readers = consumers(group.members)
    return group.members[0].reads[0][0] < 0 and all(
        member.reads[0][0] == j - 1 for j, member in enumerate(group.members) if j > 0) and all(
        [c for c, _ in readers[j]] == [j + 1] for j in range(len(group.ops) - 1))


def _row_facts(group: RowGroup) -> list[tuple[int, ...]]:
    """Per member of a chain, its nn2c_row_stage_t row counts: the window's rows (0 for the sink), output rows,
    rows per iteration, then its row map (input rows, span, stride, pad)."""
    n = len(group.ops)
    step = steps(group.members, consumers(group.members), group.sim.block)
    facts: list[tuple[int, ...]] = []
    for j, member in enumerate(group.members):
        m = member.reads[0][1]
        capacity = 0 if j == n - 1 else group.sim.capacity[j]
        facts.append((capacity, member.out_rows, step[j], m.in_rows, m.span, m.stride, m.pad))
    return facts


def chain_code(group: RowGroup, ctx: EmitContext) -> NodeCode:
    """A chain's loop as one call of nn2c_row_chain: its members' row facts in a table, their kernel calls
    in one function of the model's (`stage` picks the member), both at file scope. The same calls, rows and
    window slides as group_code's written-out loop."""
    ops, sim = group.ops, group.sim
    n = len(ops)
    region = len(group.window_bytes)  # the scratch index of the kernels' shared region
    name = f"{ctx.prefix}_rows{ctx.value_ids[id(ops[-1].output)]}"
    facts = _row_facts(group)
    calls = [f"/* {c_comment(group.name, 90)}: the calls of each member (nn2c_row_chain) */",
             f"static void {name}(int32_t stage, void *params, void *in, int32_t in_h, int32_t out_h, int32_t pad_h,",
             "    void *out) {",
             "    switch (stage) {"]
    table = []
    for j, op in enumerate(ops):
        offsets: list[int] = group.kernel_scratch[j]

        def shared(match: re.Match[str], offsets: list[int] = offsets) -> str:
            return f"(void *)((uint8_t *)@s{region}@ + {offsets[int(match.group(1))]})"

        args = [_SCRATCH.sub(shared, a) for a in op.args]
        k, value, _ = op.streamed[0]
        args[0] = "k"
        args[k] = f"({c_type(value.type.dtype)} *)in"
        args[op.output_arg] = f"({c_type(op.output.type.dtype)} *)out"
        in_h, out_h, pad_h = _ROW_FIELDS[op.kind]
        calls += [f"    {'default' if j == n - 1 else f'case {j}'}: {{ /* {c_comment(op.node.where(), 90)} */",
                  f"        {op.params.ctype} *const k = ({op.params.ctype} *)params;",
                  f"        k->{in_h} = in_h;",
                  f"        k->{out_h} = out_h;",
                  f"        k->{pad_h} = pad_h;",
                  *(["        k->band = 0; /* (the tap loop: the planes' scratch is not there) */"] if op.planes
                    else []),
                  f"        {op.function}({', '.join(args)});",
                  "        break;",
                  "    }"]
        window = "NULL" if j == n - 1 else f"(uint8_t *)@s{j}@"
        row_bytes = op.row_elements * dtype_bytes(op.output.type.dtype)
        rows = ", ".join(str(v) for v in facts[j])
        table.append(f"    {{&{op.params.ident}, {window}, {row_bytes}, sizeof({op.params.ident}), {rows}}}, "
                     f"/* op {j} */")
    calls += ["    }", "}"]
    table = ["/* per member: its parameters, window, bytes a row, the parameters' bytes, the window's rows, output "
             "rows, rows per iteration, then its row map (input rows, span, stride, pad) */",
             f"static const nn2c_row_stage_t {name}_stages[{n}] = {{", *table, "};"]
    k, source, _ = ops[0].streamed[0]
    sink = ops[-1]
    source_row_bytes = source.type.shape[2] * source.type.shape[3] * dtype_bytes(source.type.dtype)
    ctx.use_kernel("rows")
    code = NodeCode(group)  # type: ignore[arg-type]  # a step, shaped like a node for the renderer
    sizes = " + ".join(f"NN2C_ROW_COPY_BYTES(sizeof({op.params.ctype}))" for op in ops)
    code.statements = [f"{{ /* {group.name}; {sim.block} row(s) of the last per iteration */",
                       f"    uint64_t copies[({sizes}) / 8]; /* the members' parameter copies */",
                       f"    int32_t rows[{4 * n}]; /* per member: rows done, the window's first row, rows needed, "
                       "its copy */",
                       f"    nn2c_row_chain({name}_stages, {n}, {sim.block}, copies, (uint8_t *){ops[0].args[k]}, "
                       f"{source_row_bytes}, (uint8_t *){sink.args[sink.output_arg]}, rows, {name});",
                       "}"]
    code.definitions = calls + table
    code.calls = [("nn2c_row_chain", ())]  # (the cost model's code bytes count the loop's function)
    code.scratch = group.scratch
    return code


def _band_start(group: RowGroup, bands: Bands) -> tuple[list[str], list[str]]:
    """The band table and the head of the loop over bands: each member's column geometry for the band,
    and the elements of one row of each member's band (its window rows are this long)."""
    table = bands.table()
    n = len(group.ops)
    lines = [f"/* per band: per op its output width and left padding, per outside read its first column and "
             f"width, then op {n - 1}'s first output column */",
             f"static const int32_t cols[{bands.count}][{len(table[0])}] = {{"]
    lines += [f"    {{{', '.join(str(v) for v in row)}}}," for row in table] + ["};"]
    lines.append(f"for (int32_t band = 0; band < {bands.count}; ++band) {{")
    lines.append("    const int32_t *const c = cols[band];")
    elems = []
    for j, op in enumerate(group.ops):
        out_w = bands.out_w_index(j)
        if op.kind in COLUMN_FIELDS:
            in_w_field, out_w_field, pad_w_field = COLUMN_FIELDS[op.kind]
            _, value, _ = op.streamed[0]
            source = _source(group, value)
            in_w = bands.out_w_index(source) if source >= 0 else \
                bands.read_index(bands.read_number(j, op.streamed[0][0])) + 1
            lines.append(f"    k{j}.{in_w_field} = c[{in_w}]; k{j}.{out_w_field} = c[{out_w}]; "
                         f"k{j}.{pad_w_field} = c[{out_w + 1}];")
        lines.append(f"    const int32_t e{j} = c[{out_w}] * {bands.channels[j]};")
        elems.append(f"e{j}")
    return lines, elems


def _copy_in(bands: Bands, r: int, tensor: str, row: str, rows: str, tile: int) -> str:
    """Copy the rows an outside read needs in this call, the band's columns of them, into its tile."""
    read = bands.reads[r]
    at = bands.read_index(r)
    pixel = read.channels * read.item_bytes
    return (f"nn2c_copy_rows(@s{tile}@, (size_t)c[{at + 1}] * {pixel}, {tensor} + {row} * "
            f"{read.width * read.channels} + c[{at}] * {read.channels}, {read.width * pixel}, {rows}, "
            f"(size_t)c[{at + 1}] * {pixel});")


def _copy_out(op: StreamOp, bands: Bands, tile: str, tensor: str, rows: str, elements: str, n: int) -> str:
    """Copy the sink's rows of the band from the output tile into the band's columns of the output."""
    channels, width = op.output.type.shape[3], op.output.type.shape[2]
    item = dtype_bytes(op.output.type.dtype)
    return (f"nn2c_copy_rows({tensor} + done{n - 1} * {width * channels} + c[{bands.sink_lo_index}] * {channels}, "
            f"{width * channels * item}, {tile}, (size_t){elements} * {item}, {rows}, (size_t){elements} * {item});")


def feed_pixels(channels: int) -> int:
    """Output pixels a convolution feeding an accumulating FULLY_CONNECTED buffers (RowGroup.feed): an
    even number (the kernels make pixels in pairs), at least 32 bytes, so that each call of the sums
    kernel runs a few words per filter row."""
    pixels = 2
    while pixels * channels < 32:
        pixels += 2
    return pixels


def feeds_sums(run: list[StreamOp]) -> bool:
    """Whether a run is a SIMD convolution streamed into an accumulating FULLY_CONNECTED that can take
    its pixels a few at a time (RowGroup.feed): the FC sums products alone (filter zero point 0)."""
    from nn2c.codegen.ops.common import zero_point

    if len(run) != 2 or run[0].function != "nn2c_conv_s8_simd" or run[1].node.op != "FULLY_CONNECTED":
        return False
    weights = run[1].node.inputs[1]
    return run[1].streamed[0][1] is run[0].output and weights is not None and zero_point(weights) == 0


def _accumulation(ctx: EmitContext, node: Node) -> tuple[str, str]:
    """The bias the accumulating FULLY_CONNECTED finishes with and its slice kernel: with a filter
    zero point of 0 (TFLite's int8 filters), the input offset's terms are folded into the bias at
    compile time and the slices sum products alone (nn2c_fc_s8_sums_simd on the SIMD targets,
    nn2c_fc_s8_accumulate_raw elsewhere)."""
    from nn2c.codegen.ops.common import zero_point
    from nn2c.codegen.ops.conv import folded_bias

    x, w, bias = node.inputs[0], node.inputs[1], node.input(2)
    assert x is not None and w is not None and w.is_constant
    if zero_point(w) != 0:
        return ctx.ptr(bias), "nn2c_fc_s8_accumulate"
    function = "nn2c_fc_s8_sums_simd" if ctx.target.simd else "nn2c_fc_s8_accumulate_raw"
    if ctx.target.simd:
        ctx.use_kernel("simd")
    rows = np.asarray(w.data, dtype=np.int8).reshape(w.type.shape[0], -1)
    folded = folded_bias(None if bias is None else np.asarray(bias.data), rows, -zero_point(x), rows.shape[0],
                         pad_to=1)
    return ctx.const_array(folded, "int32_t", "bias with the input offset folded in"), function


def _source(group: RowGroup, value: Value) -> int:
    for j, op in enumerate(group.ops):
        if op.output is value:
            return j
    return -1 - next(k for k, v in enumerate(group.outside) if v is value)


def _nested(function: str, terms: list[str]) -> str:
    expr = terms[0]
    for term in terms[1:]:
        expr = f"{function}({expr}, {term})"
    return expr


def member_of(op: StreamOp, sources: dict[int, int]) -> Member:
    """The row facts of a group member; sources: id(tensor) -> member index or -1 - outside index."""
    reads = tuple((sources[id(value)], m) for _, value, m in op.streamed)
    row_bytes = 0 if op.kind == "accumulate" else op.row_elements * dtype_bytes(op.output.type.dtype)
    return Member(op.rows, row_bytes, reads, elementwise=op.kind in ("bcast", "count"))


__all__ = ["ROW_KERNELS", "RowGroup", "StreamOp", "chain_tables", "group_code", "member_of", "stream_op"]
