"""Float graph + calibrated ranges -> a graph in TFLite's int8 scheme, served by the int8 kernels.

What each int8 operator gets is what its TFLite Micro kernel (and so nn2c's lowering) accepts:
- FREE ops choose their output parameters from the output's calibrated range: CONV_2D,
  DEPTHWISE_CONV_2D, FULLY_CONNECTED (per-channel symmetric int8 weights, int32 bias with scale
  s_in * s_w[c]), ADD, SUB, MUL, MEAN, SUM, RELU, LEAKY_RELU, HARD_SWISH. A fused ReLU / ReLU6 is
  folded into the range: the range is observed after the activation, so the clamp costs no codes.
- TIED ops compute on raw int8 codes, so their outputs share the input's parameters (data
  movement, MAX_POOL_2D, AVERAGE_POOL_2D (TFLM's Prepare requires it), RELU6, REDUCE_MAX,
  MAXIMUM / MINIMUM, CONCATENATION with all its inputs). Tied tensors form one group (union-find)
  whose range is the union of the members' ranges, as TFLite's converter unifies them.
- PADV2 is tied too (TFLite Micro pads int8 with a constant in the output's parameters). Its fill
  value joins the range when it is an ordinary number; a "minus infinity" fill (what an ONNX
  MaxPool with explicit pads becomes: -FLT_MAX, read only by MAX_POOL_2D) would stretch the range
  over 1e38 and leave no code for the data, so it stays out of the range and saturates to the
  lowest code, which max pooling never picks over a real value.
- FIXED ops have outputs fixed by the kernel: SOFTMAX and LOGISTIC 1/256 zero point -128, TANH
  1/128 zero point 0; a group holding such an output takes those parameters.
Everything else, operators the user keeps float (--keep-float, by type or output tensor name) and
variants an int8 kernel cannot take (non-constant weights, a non-clamp fused activation) stays
float. Where a float and an int8 operator meet, a QUANTIZE (float -> int8) or DEQUANTIZE is
inserted; model inputs and outputs keep float unless io="int8".

The rewrite builds a new graph: every value of the float graph maps to a float version and/or an
int8 version, created on first use, so each conversion exists once however many readers need it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nn2c.ir import Graph, Node, QuantParams, TensorType, Value
from nn2c.ir.ops import FUSED_ACTIVATIONS, data_inputs, int8_attr_problem, int8_scales_ok, op_info
from nn2c.quant import params as qp

# the fused activations an int8 kernel applies as a clamp of its output range
CLAMPS = frozenset({"NONE", *FUSED_ACTIVATIONS})


# A fill beyond this magnitude stands for an infinity: it saturates instead of setting the range.
HUGE_FILL = 1e30


def int8_rule(node: Node) -> str | None:
    """The operator table's int8 rule, and PADV2's: its kernel is PAD's with a given fill value, so its
    output shares the input's parameters (the operator table has no int8 rule for PADV2 yet)."""
    if node.op == "PADV2":
        fill = node.input(2)
        return "tied" if fill is not None and fill.is_constant and fill.type.num_elements == 1 else None
    return op_info(node.op).int8


def _fill_value(node: Node) -> float:
    fill = node.input(2)
    assert fill is not None and fill.data is not None
    return float(np.asarray(fill.data, dtype=np.float64).reshape(-1)[0])


def pad_ranges(graph: Graph, ranges: dict[int, tuple[float, float]]) -> dict[int, tuple[float, float]]:
    """Calibrated ranges with each PADV2 output's range replaced by its input's, widened by the fill
    value only when that is an ordinary number (see the module docstring)."""
    adjusted = dict(ranges)
    for node in graph.nodes:
        x = node.input(0)
        if node.op != "PADV2" or int8_rule(node) != "tied" or x is None or id(x) not in ranges:
            continue
        lo, hi = ranges[id(x)]
        fill = _fill_value(node)
        if abs(fill) < HUGE_FILL:
            lo, hi = min(lo, fill), max(hi, fill)
        adjusted[id(node.outputs[0])] = (lo, hi)
    return adjusted


def _weighted(node: Node) -> bool:
    return op_info(node.op).weight_axis is not None


def float_reason(node: Node, keep_float: frozenset[str], has_range: Callable[[Value], bool]) -> str | None:
    """Why the node stays float, or None when it becomes int8."""
    if node.op in keep_float or any(o.name in keep_float for o in node.outputs):
        return "kept float (--keep-float)"
    if int8_rule(node) is None:
        return f"no int8 kernel for {node.op}"
    if any(o.type.dtype != "float32" for o in node.outputs):
        return "output is not float32"
    activation = node.fused_activation
    if activation not in CLAMPS:
        return f"fused activation {activation} has no int8 form"
    for i in data_inputs(node):
        x = node.input(i)
        if x is None or x.type.dtype != "float32":
            return "an activation input is not float32"
        if not x.is_constant and not has_range(x):
            return f"input {x.name!r} was not calibrated"
    if _weighted(node):
        w, b = node.input(1), node.input(2)
        if w is None or not w.is_constant or w.type.dtype != "float32":
            return "weights are not a float constant"
        if b is not None and (not b.is_constant or b.type.dtype != "float32"):
            return "bias is not a float constant"
        if node.op == "DEPTHWISE_CONV_2D" and (len(w.type.shape) != 4 or w.type.shape[0] != 1):
            return "depthwise filter is not 1HWO"
    return int8_attr_problem(node)


class _Groups:
    """Union-find over values whose int8 parameters must be equal."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, key: int) -> int:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


@dataclass
class QuantizedGraph:
    graph: Graph
    int8_of: dict[int, Value]  # id(float-graph value) -> its int8 version in the new graph
    params: dict[int, QuantParams]  # id(float-graph value) -> chosen activation parameters
    float_nodes: list[tuple[Node, str]] = field(default_factory=list)  # (float-graph node, reason)
    int8_nodes: list[Node] = field(default_factory=list)  # float-graph nodes now int8


def _clone(value: Value, name: str | None = None, ttype: TensorType | None = None,
           data: np.ndarray | None = None) -> Value:
    return Value(name or value.name, ttype or value.type, value.data if data is None else data,
                 is_variable=value.is_variable)


def choose_params(graph: Graph, quantized: list[Node], ranges: dict[int, tuple[float, float]]) -> dict[int, QuantParams]:
    """Activation parameters for every value an int8 node reads or writes (see module docstring)."""
    groups = _Groups()
    fixed: dict[int, tuple[float, int]] = {}
    values: dict[int, Value] = {}
    for node in quantized:
        inputs = [node.inputs[i] for i in data_inputs(node)]
        for v in [*inputs, *node.outputs]:
            if v is not None:
                values[id(v)] = v
                groups.find(id(v))
        if int8_rule(node) == "tied":
            anchor = inputs[0]
            assert anchor is not None
            for v in [*inputs[1:], *node.outputs]:
                if v is not None:
                    groups.union(id(anchor), id(v))
        fixed_output = op_info(node.op).int8_fixed
        if fixed_output is not None:
            fixed[id(node.outputs[0])] = fixed_output
    members: dict[int, list[Value]] = {}
    for key, v in values.items():
        members.setdefault(groups.find(key), []).append(v)
    chosen: dict[int, QuantParams] = {}
    for group in members.values():
        pinned = [fixed[id(v)] for v in group if id(v) in fixed]
        if pinned:
            quant = qp.fixed_params(*pinned[0])
        else:
            observed = [ranges[id(v)] for v in group if id(v) in ranges]
            consts = [v.data for v in group if v.is_constant and v.data is not None and v.data.size]
            lo = min([r[0] for r in observed] + [float(np.min(c)) for c in consts] + [0.0])
            hi = max([r[1] for r in observed] + [float(np.max(c)) for c in consts] + [0.0])
            quant = qp.activation_params(lo, hi)
        for v in group:
            chosen[id(v)] = quant
    _satisfy_kernel_limits(quantized, chosen, lambda v: members[groups.find(id(v))])
    return chosen


def _satisfy_kernel_limits(quantized: list[Node], chosen: dict[int, QuantParams],
                           group_of: Callable[[Value], list[Value]]) -> None:
    """Widen output scales that a kernel's fixed-point rescale cannot take (rare; exact otherwise).
    The whole group of the output is widened, so that tied tensors stay equal."""

    def widen(out: Value, scale: float) -> None:
        old = chosen[id(out)]
        lo, hi = qp.representable_range(old)
        factor = scale / old.scale[0]
        new = qp.activation_params(lo * factor, hi * factor)
        for member in group_of(out):
            chosen[id(member)] = new

    for node in quantized:
        out = node.outputs[0]
        s_out = chosen[id(out)].scale[0]
        floor_of = op_info(node.op).int8_scale_floor
        scales = [chosen[id(v)].scale[0] for v in (node.inputs[i] for i in data_inputs(node)) if v is not None]
        if floor_of is not None and not int8_scales_ok(node.op, scales, s_out):
            widen(out, floor_of(scales) * 1.01)


class _Builder:
    def __init__(self, source: Graph, chosen: dict[int, QuantParams]) -> None:
        self.source = source
        self.chosen = chosen
        self.graph = Graph(source.name)
        self.graph.metadata = dict(source.metadata)
        self.graph.names_issued = source.names_issued  # new names go on from the float graph's
        self.float_of: dict[int, Value] = {}
        self.int8_of: dict[int, Value] = {}
        self.constants: dict[int, Value] = {}
        # (id(float weight), axis) -> its int8 constant: layers sharing a weight (a WHILE's unrolled
        # copies, tied layers) share it in flash too; its parameters depend on the weight alone
        self.weights_int8: dict[tuple[int, int], tuple[Value, QuantParams]] = {}

    def add(self, node: Node) -> None:
        self.graph.add_node(node)

    def as_float(self, value: Value, anchor: Node) -> Value:
        key = id(value)
        if key in self.float_of:
            return self.float_of[key]
        if value.data is not None:
            clone = self.constants.get(key) or _clone(value)
            self.constants[key] = clone
            return clone
        q = self.int8_of.get(key)
        assert q is not None, f"{value.name!r} has neither a float nor an int8 version"
        out = _clone(value, f"{value.name}/float", TensorType("float32", value.type.shape))
        self.add(Node("DEQUANTIZE", [q], [out], name=anchor.name, index=anchor.index))
        self.float_of[key] = out
        return out

    def as_int8(self, value: Value, anchor: Node) -> Value:
        key = id(value)
        if key in self.int8_of:
            return self.int8_of[key]
        quant = self.chosen.get(key)
        if value.is_constant and value.data is not None:
            if quant is None:
                data = value.data
                quant = qp.activation_params(float(np.min(data, initial=0.0)), float(np.max(data, initial=0.0)))
            q = Value(f"{value.name}/int8", TensorType("int8", value.type.shape, quant),
                      qp.quantize_array(value.data, quant))
            self.int8_of[key] = q
            return q
        assert quant is not None, f"{value.name!r} has no int8 parameters"
        f = self.as_float(value, anchor)
        q = Value(f"{value.name}/int8", TensorType("int8", value.type.shape, quant))
        self.add(Node("QUANTIZE", [f], [q], name=anchor.name, index=anchor.index))
        self.int8_of[key] = q
        return q

    def float_node(self, node: Node) -> None:
        inputs = [None if v is None else self.as_float(v, node) if v.type.dtype == "float32"
                  else self._passthrough(v) for v in node.inputs]
        outputs = []
        for out in node.outputs:
            clone = _clone(out)
            self.float_of[id(out)] = clone
            outputs.append(clone)
        self.add(Node(node.op, inputs, outputs, dict(node.attrs), name=node.name, index=node.index))

    def _passthrough(self, value: Value) -> Value:
        """Non-float values (int32 shapes, axes, indices) are carried over unchanged."""
        key = id(value)
        if key in self.float_of:
            return self.float_of[key]
        clone = _clone(value)
        self.float_of[key] = clone
        return clone

    def int8_node(self, node: Node) -> None:
        positions = set(data_inputs(node))
        inputs: list[Value | None] = []
        for i, v in enumerate(node.inputs):
            if v is None:
                inputs.append(None)
            elif i in positions:
                inputs.append(self.as_int8(v, node))
            elif _weighted(node) and i in (1, 2):
                inputs.append(None)  # filled below
            elif node.op == "PADV2" and i == 2:
                inputs.append(self._pad_fill(node))
            else:
                inputs.append(self._passthrough(v) if v.type.dtype != "float32" else self.as_float(v, node))
        if _weighted(node):
            self._weights(node, inputs)
        outputs = []
        for out in node.outputs:
            q = Value(f"{out.name}/int8", TensorType("int8", out.type.shape, self.chosen[id(out)]))
            self.int8_of[id(out)] = q
            outputs.append(q)
        self.add(Node(node.op, inputs, outputs, dict(node.attrs), name=node.name, index=node.index))

    def _pad_fill(self, node: Node) -> Value:
        """PADV2's fill as an int8 scalar in the output's parameters (TFLite Micro requires them),
        saturated: an infinite-like fill becomes the lowest (or highest) code."""
        fill = node.inputs[2]
        assert fill is not None and fill.data is not None
        quant = self.chosen[id(node.outputs[0])]
        lo, hi = qp.representable_range(quant)
        real = np.clip(np.asarray(fill.data, dtype=np.float64), lo, hi)
        return Value(f"{fill.name}/int8", TensorType("int8", fill.type.shape, quant), qp.quantize_array(real, quant))

    def _weights(self, node: Node, inputs: list[Value | None]) -> None:
        w, b = node.inputs[1], node.input(2)
        assert w is not None and w.data is not None
        axis = op_info(node.op).weight_axis
        assert axis is not None
        key = (id(w), axis)
        if key not in self.weights_int8:
            params = qp.weight_params(w.data, axis)
            self.weights_int8[key] = (Value(f"{w.name}/int8", TensorType("int8", w.type.shape, params),
                                            qp.quantize_array(w.data, params)), params)
        inputs[1], w_quant = self.weights_int8[key]
        channels = w.type.shape[axis]
        if b is None and node.op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            # a zero bias, as TFLite's converter writes one: on an exported int8 convolution without
            # one, TFLite Micro crashed (DEPTHWISE_CONV_2D) and LiteRT refused to prepare (CONV_2D)
            b = Value(f"{w.name}/zero_bias", TensorType("float32", (channels,)), np.zeros(channels, np.float32))
            inputs.extend([None] * (3 - len(inputs)))
        if b is not None:
            assert b.data is not None
            x = inputs[0]
            assert x is not None and x.type.quant is not None
            b_quant = qp.bias_params(x.type.quant.scale[0], w_quant, channels)
            inputs[2] = Value(f"{b.name}/int32", TensorType("int32", b.type.shape, b_quant),
                              qp.quantize_bias(b.data, b_quant).reshape(b.type.shape))


def rewrite(graph: Graph, ranges: dict[int, tuple[float, float]], keep_float: frozenset[str],
            io: str = "float") -> QuantizedGraph:
    """The int8 graph; `ranges` maps id(value) of the float graph's activations to clip ranges."""
    reasons = {id(n): float_reason(n, keep_float, lambda v: id(v) in ranges) for n in graph.nodes}
    quantized = [n for n in graph.nodes if reasons[id(n)] is None]
    ranges = pad_ranges(graph, ranges)
    chosen = choose_params(graph, quantized, ranges)
    for v in graph.inputs:  # io=int8 exposes every float input as int8, whoever reads it
        if io == "int8" and id(v) not in chosen and id(v) in ranges:
            chosen[id(v)] = qp.activation_params(*ranges[id(v)])
    builder = _Builder(graph, chosen)
    for v in graph.inputs:
        if io == "int8" and id(v) in chosen:
            q = Value(v.name, TensorType("int8", v.type.shape, chosen[id(v)]))
            builder.int8_of[id(v)] = q
            builder.graph.inputs.append(q)
        else:
            clone = _clone(v)
            builder.float_of[id(v)] = clone
            builder.graph.inputs.append(clone)
    result = QuantizedGraph(builder.graph, builder.int8_of, chosen)
    for node in graph.nodes:
        if reasons[id(node)] is None:
            builder.int8_node(node)
            result.int8_nodes.append(node)
        else:
            builder.float_node(node)
            result.float_nodes.append((node, str(reasons[id(node)])))
    anchor = graph.nodes[-1] if graph.nodes else Node("IDENTITY", [], [])
    outputs = []
    for v in graph.outputs:
        if v.type.dtype != "float32" or (id(v) not in builder.int8_of and id(v) not in builder.float_of
                                         and v.data is None):
            out = builder._passthrough(v)
        elif io == "int8" and id(v) in chosen:
            out = builder.as_int8(v, anchor)
        elif io == "int8" and id(v) not in builder.int8_of and id(v) in ranges:
            chosen[id(v)] = qp.activation_params(*ranges[id(v)])
            out = builder.as_int8(v, anchor)
        else:
            out = builder.as_float(v, anchor)
        outputs.append(out)
    _name_outputs(builder.graph, graph.outputs, outputs)
    builder.graph.outputs = outputs
    return result


def _name_outputs(graph: Graph, originals: list[Value], outputs: list[Value]) -> None:
    """Graph outputs keep the float model's names; a value already holding the name is renamed."""
    for original, out in zip(originals, outputs, strict=True):
        if out.name == original.name:
            continue
        for v in graph.values():
            if v.name == original.name and v is not out:
                v.name = f"{original.name}/{v.type.dtype}"
        out.name = original.name
