"""Structure-aware mutations of ONNX models (protobuf), through the `onnx` package.

A mutant is the seed parsed into a ModelProto, changed in one to three fields, and serialized
again, so that most mutants still parse and pass onnx.checker and reach nn2c's converters:
- shapes: huge, zero, negative or symbolic dimensions of inputs, outputs and value_info, a
  value_info that contradicts shape inference; initializer dims that disagree with the data, data
  cut short, data types that do not exist;
- graph structure: node inputs renamed to nothing, to the node's own output or to a later node's
  output (cycles), duplicate outputs, nodes removed, duplicated or reordered, op types swapped,
  hostile nodes inserted on an edge (Expand / Tile / ConstantOfShape / Pad / Slice / Gather /
  Split / Resize / ... with huge or out-of-range constant operands);
- attributes: wrong types, huge values, kernel_shape / strides / dilations 0, negative pads,
  group 0, axes out of range, invalid perms; and, keeping the attribute's type, its value nudged
  (ints and lists by one, negated, zero, huge; floats to 0 / NaN / inf / tiny / huge; strings to
  another ONNX mode name or garbage; lists one element longer or shorter);
- initializer and Constant values (same dims and dtype): NaN / inf / huge / zero floats, integers
  at their dtype's limits, out-of-range indices, one element changed;
- plausible shapes: a graph input dimension set to 1, 2, one more or less, or doubled, with the
  declared shapes of the other tensors dropped so that shape inference propagates it;
- Reshape shape constants with two -1, zeros or huge values;
- QuantizeLinear / DequantizeLinear: scales 0 / negative / NaN / inf / tiny / huge, zero points
  out of range or of a wrong type or length, quantization axes out of range;
- opset versions that do not exist (0, 999), unknown domains, IR versions, external data whose
  location points outside the model's folder (or at the model itself).
Raw byte flips and truncation cover the parser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

SUFFIX = ".onnx"

_HUGE_DIMS = [0, -1, -7, 2**31 - 1, 2**40, 2**62, 3, 1000, 65536]
_INTS = [0, -1, -2, -100, 1, 2, 3, 7, 100, 2**31 - 1, 2**40, -(2**40)]
_FLOATS = [0.0, -1.0, float("nan"), float("inf"), float("-inf"), 1e-45, 1e38, -1e-3]
_OP_TYPES = ["Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Mul", "Sub", "Div", "MatMul", "Gemm",
             "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Slice", "Pad", "Gather",
             "Softmax", "LogSoftmax", "Relu", "Clip", "Sigmoid", "BatchNormalization", "QuantizeLinear",
             "DequantizeLinear", "Shape", "Size", "Cast", "ConstantOfShape", "Constant", "Identity", "Dropout",
             "ReduceMean", "ReduceSum", "Sum", "Max", "Expand", "Tile", "Resize", "Loop", "If", "Scan",
             "ConvTranspose", "LSTM", "Range", "NotAnOnnxOp"]
_ATTRIBUTE_NAMES = ["kernel_shape", "strides", "pads", "dilations", "group", "axis", "axes", "perm", "epsilon",
                    "alpha", "beta", "transA", "transB", "keepdims", "auto_pad", "ceil_mode", "count_include_pad",
                    "to", "min", "max", "value", "split", "starts", "ends", "mode", "noop_with_empty_axes",
                    "training_mode", "block_size", "saturate", "start", "end"]
# string attribute values of ONNX operators (modes, paddings, directions, activations): a mutant swaps
# one for another operator's, which the converter must refuse by name
_STRINGS = ["constant", "reflect", "edge", "wrap", "nearest", "linear", "cubic", "bilinear", "bicubic", "zeros",
            "border", "reflection", "DCR", "CRD", "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
            "tf_crop_and_resize", "half_pixel_symmetric", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
            "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "tanh", "none", "RIGHT", "LEFT", "forward", "reverse",
            "bidirectional", "Sigmoid", "Tanh", "Relu", "HardSigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
            "ScaledTanh", "Elu", "Softsign", "Softplus", "TF", "IDF", "TFIDF", "silu", "swish", "delta", "gated",
            "stretch", "not_larger", "not_smaller", "RGB", "BGR", "Grayscale", "", "x" * 300, "\xff\xfe",
            "linear\0nearest"]
_EXTERNAL_LOCATIONS = ["/etc/passwd", "../../../../../../etc/passwd", "weights.bin", "mutant.onnx", ".", "",
                       "/proc/self/mem", "..", "sub/../../x.bin"]


def prepare(data: bytes) -> Any:
    """The parsed seed (parsed once; each mutant starts from a copy)."""
    import onnx

    return onnx.load_from_string(data)


def _pick(rng: np.random.Generator, items: list[Any]) -> Any:
    return items[int(rng.integers(0, len(items)))]


def _int(rng: np.random.Generator) -> int:
    return int(_pick(rng, _INTS)) if rng.random() < 0.8 else int(rng.integers(-10, 300))


def _ints(rng: np.random.Generator) -> list[int]:
    return [_int(rng) for _ in range(int(rng.integers(0, 7)))]


def _initializer_names_of(model: Any, op_types: tuple[str, ...], positions: tuple[int, ...]) -> list[str]:
    names = {t.name for t in model.graph.initializer}
    found = []
    for node in model.graph.node:
        if node.op_type in op_types:
            found += [node.input[p] for p in positions if p < len(node.input) and node.input[p] in names]
    return found


def _initializer(model: Any, name: str) -> Any:
    return next(t for t in model.graph.initializer if t.name == name)


def _set_array(tensor: Any, array: np.ndarray) -> None:
    from onnx import numpy_helper

    tensor.CopyFrom(numpy_helper.from_array(array, tensor.name))


def _all_tensor_names(model: Any) -> list[str]:
    names = [i.name for i in model.graph.input] + [t.name for t in model.graph.initializer]
    for node in model.graph.node:
        names += [o for o in node.output if o]
    return names


# --- the mutations: each changes `model` in place and says what it did (None: not applicable) -------
def _dims(model: Any, rng: np.random.Generator) -> str | None:
    infos = [*model.graph.input, *model.graph.output, *model.graph.value_info]
    infos = [i for i in infos if i.type.tensor_type.shape.dim]
    if not infos:
        return None
    info = _pick(rng, infos)
    dims = info.type.tensor_type.shape.dim
    dim = dims[int(rng.integers(0, len(dims)))]
    if rng.random() < 0.2:
        dim.dim_param = _pick(rng, ["N", "batch", "", "?"])
        return f"dim of {info.name} symbolic"
    value = int(_pick(rng, _HUGE_DIMS))
    dim.dim_value = value
    return f"dim of {info.name} = {value}"


def _value_info(model: Any, rng: np.random.Generator) -> str | None:
    """Claim a shape or type for an intermediate tensor that contradicts the graph."""
    from onnx import helper

    outputs = [o for n in model.graph.node for o in n.output if o]
    if not outputs:
        return None
    name = _pick(rng, outputs)
    rank = int(rng.integers(0, 6))
    shape = [int(_pick(rng, [1, 2, 3, 8, 0, 2**31 - 1])) for _ in range(rank)]
    elem = int(_pick(rng, [1, 1, 1, 3, 6, 7, 2, 8, 10, 16]))
    for info in model.graph.value_info:
        if info.name == name:
            model.graph.value_info.remove(info)
            break
    model.graph.value_info.append(helper.make_tensor_value_info(name, elem, shape))
    return f"value_info {name} = type {elem} {shape}"


def _initializer_dims(model: Any, rng: np.random.Generator) -> str | None:
    if not model.graph.initializer:
        return None
    tensor = _pick(rng, list(model.graph.initializer))
    what = rng.random()
    if what < 0.5 and tensor.dims:
        k = int(rng.integers(0, len(tensor.dims)))
        tensor.dims[k] = int(_pick(rng, _HUGE_DIMS))
    elif what < 0.75:
        tensor.dims.append(int(_pick(rng, [1, 2, 0, 2**31 - 1])))
    elif tensor.dims:
        del tensor.dims[-1]
    else:
        return None
    return f"initializer {tensor.name} dims {list(tensor.dims)}"


def _initializer_data(model: Any, rng: np.random.Generator) -> str | None:
    if not model.graph.initializer:
        return None
    tensor = _pick(rng, list(model.graph.initializer))
    what = rng.random()
    if what < 0.4 and tensor.raw_data:
        cut = int(rng.integers(0, len(tensor.raw_data)))
        tensor.raw_data = tensor.raw_data[:cut]
        return f"initializer {tensor.name} raw_data cut to {cut} B"
    if what < 0.55:
        tensor.raw_data = tensor.raw_data + bytes(int(rng.integers(1, 9)))
        return f"initializer {tensor.name} raw_data too long"
    if what < 0.85:
        tensor.data_type = int(_pick(rng, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 21, 23, 999]))
        return f"initializer {tensor.name} data_type {tensor.data_type}"
    tensor.ClearField("raw_data")
    return f"initializer {tensor.name} without data"


def _node_input(model: Any, rng: np.random.Generator) -> str | None:
    nodes = [n for n in model.graph.node if n.input]
    if not nodes:
        return None
    node = _pick(rng, nodes)
    k = int(rng.integers(0, len(node.input)))
    later = [o for n in model.graph.node[list(model.graph.node).index(node):] for o in n.output if o]
    choices = [("missing", "no_such_tensor"), ("omitted", ""), ("own output", node.output[0] if node.output else ""),
               ("later output (cycle)", _pick(rng, later) if later else ""),
               ("another tensor", _pick(rng, _all_tensor_names(model)))]
    kind, name = _pick(rng, choices)
    node.input[k] = name
    return f"{node.op_type} {node.name} input {k} -> {kind}"


def _node_output(model: Any, rng: np.random.Generator) -> str | None:
    nodes = [n for n in model.graph.node if n.output]
    if not nodes:
        return None
    node = _pick(rng, nodes)
    k = int(rng.integers(0, len(node.output)))
    name = _pick(rng, [*_all_tensor_names(model), ""])
    node.output[k] = name
    if rng.random() < 0.3:
        node.output.append(_pick(rng, [name, "extra_output"]))
    return f"{node.op_type} {node.name} output {k} -> {name!r} (duplicate)"


def _attribute(model: Any, rng: np.random.Generator) -> str | None:
    from onnx import helper

    if not model.graph.node:
        return None
    node = _pick(rng, list(model.graph.node))
    names = [a.name for a in node.attribute]
    name = _pick(rng, names) if names and rng.random() < 0.7 else _pick(rng, _ATTRIBUTE_NAMES)
    kind = rng.random()
    if kind < 0.45:
        value: Any = _ints(rng)
        if name == "perm" and rng.random() < 0.5:
            value = [*(int(v) for v in rng.permutation(int(rng.integers(1, 6)))), int(rng.integers(-2, 6))]
    elif kind < 0.75:
        value = _int(rng)
    elif kind < 0.85:
        value = float(_pick(rng, _FLOATS))
    elif kind < 0.95:
        value = _pick(rng, ["", "SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET", "reflect", "bogus", "\xff"])
    else:
        value = [float(_pick(rng, _FLOATS)) for _ in range(int(rng.integers(0, 4)))]
    for attr in node.attribute:
        if attr.name == name:
            node.attribute.remove(attr)
            break
    if isinstance(value, list) and not value:
        value = [0]
    node.attribute.append(helper.make_attribute(name, value))
    return f"{node.op_type} {node.name} attribute {name} = {value!r}"[:160]


def _nudged_int(value: int, rng: np.random.Generator) -> int:
    return int(_pick(rng, [value + 1, value - 1, -value, 0, -1, 2 * value + 1, 2**31 - 1, -(2**31), 2**40,
                           int(rng.integers(-8, 9))]))


def _nudged_float(value: float, rng: np.random.Generator) -> float:
    return float(_pick(rng, [0.0, -value, value * 1e6, value * 1e-6, float("nan"), float("inf"), float("-inf"),
                             1e-45, 3e38, -1.0, value + 1.0]))


def _nudged_list(values: list, nudge: Callable[[Any, np.random.Generator], Any], rng: np.random.Generator) -> list:
    values = list(values)
    what = rng.random()
    if what < 0.5 and values:
        k = int(rng.integers(0, len(values)))
        values[k] = nudge(values[k], rng)
    elif what < 0.7 and values:
        del values[int(rng.integers(0, len(values)))]
    elif what < 0.9:
        values.append(_pick(rng, values) if values else nudge(1, rng))
    else:
        values = [nudge(v, rng) for v in values]
    return values


def _attribute_value(model: Any, rng: np.random.Generator) -> str | None:
    """One existing attribute's value changed within its type (the attribute space the converters check)."""
    from onnx import AttributeProto

    attributes = [(n, a) for n in model.graph.node for a in n.attribute
                  if a.type in (AttributeProto.INT, AttributeProto.FLOAT, AttributeProto.STRING, AttributeProto.INTS,
                                AttributeProto.FLOATS, AttributeProto.STRINGS)]
    if not attributes:
        return None
    node, attr = _pick(rng, attributes)
    if attr.type == AttributeProto.INT:
        attr.i = _nudged_int(attr.i, rng)
        value: Any = attr.i
    elif attr.type == AttributeProto.FLOAT:
        attr.f = _nudged_float(attr.f, rng)
        value = attr.f
    elif attr.type == AttributeProto.STRING:
        attr.s = str(_pick(rng, _STRINGS)).encode("utf-8", "surrogateescape")
        value = attr.s
    elif attr.type == AttributeProto.INTS:
        value = _nudged_list(list(attr.ints), _nudged_int, rng)
        del attr.ints[:]
        attr.ints.extend(value)
    elif attr.type == AttributeProto.FLOATS:
        value = _nudged_list(list(attr.floats), _nudged_float, rng)
        del attr.floats[:]
        attr.floats.extend(value)
    else:
        value = _nudged_list(list(attr.strings), lambda _, r: str(_pick(r, _STRINGS)).encode(), rng)
        del attr.strings[:]
        attr.strings.extend(value)
    return f"{node.op_type} {node.name} attribute {attr.name} = {value!r}"[:160]


def _constant_tensors(model: Any) -> list[Any]:
    """The initializers and the tensors of Constant / ConstantOfShape nodes."""
    from onnx import AttributeProto

    tensors = list(model.graph.initializer)
    for node in model.graph.node:
        tensors += [a.t for a in node.attribute if a.type == AttributeProto.TENSOR]
    return tensors


def _initializer_values(model: Any, rng: np.random.Generator) -> str | None:
    """A constant's values changed with its dims and dtype kept: what a converter reads as weights,
    axes, indices, shapes, scales or bounds."""
    from onnx import numpy_helper

    tensors = [t for t in _constant_tensors(model) if t.data_location != 1]  # not external
    if not tensors:
        return None
    tensor = _pick(rng, tensors)
    try:
        array = numpy_helper.to_array(tensor).copy()
    except (ValueError, TypeError, KeyError):  # an earlier mutation broke it, or a dtype numpy lacks
        return None
    if array.dtype.kind not in "fiub" or array.size == 0 or array.size > 1 << 20:
        return None
    flat = array.reshape(-1)
    everywhere = rng.random() < 0.3
    index = slice(None) if everywhere else int(rng.integers(0, flat.size))
    if array.dtype.kind == "f":
        value: Any = _pick(rng, [np.nan, np.inf, -np.inf, 0.0, 3e38, -3e38, 1e-45, -1.0, 1e6, 0.5])
    elif array.dtype.kind == "b":
        value = bool(rng.integers(0, 2))
    else:
        info = np.iinfo(array.dtype)
        dim = max(array.shape or (1,))
        value = int(_pick(rng, [info.min, info.max, 0, -1, 1, dim, -dim - 1, 2 * dim + 7, int(rng.integers(-9, 10))]))
        value = min(max(value, int(info.min)), int(info.max))
    flat[index] = value
    name = tensor.name
    tensor.CopyFrom(numpy_helper.from_array(array, name))
    where = "every value" if everywhere else f"value {index}"
    return f"constant {name!r} {where} = {value!r}"[:160]


def _plausible_shape(model: Any, rng: np.random.Generator) -> str | None:
    """A graph input dimension changed to a plausible value, the other declared shapes dropped, so
    that the model is still consistent and reaches the converters and kernels with a new shape."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers and i.type.tensor_type.shape.dim]
    if not inputs:
        return None
    info = _pick(rng, inputs)
    dims = info.type.tensor_type.shape.dim
    k = int(rng.integers(0, len(dims)))
    old = dims[k].dim_value
    dims[k].dim_value = int(_pick(rng, [1, 2, 3, max(old - 1, 1), old + 1, 2 * old, 17]))
    del model.graph.value_info[:]
    for output in model.graph.output:
        if rng.random() < 0.9:  # unknown dims: shape inference fills them in
            for j, dim in enumerate(output.type.tensor_type.shape.dim):
                dim.dim_param = f"{output.name}_{j}"
    return f"input {info.name} dim {k}: {old} -> {dims[k].dim_value}"


def _drop_attribute(model: Any, rng: np.random.Generator) -> str | None:
    nodes = [n for n in model.graph.node if n.attribute]
    if not nodes:
        return None
    node = _pick(rng, nodes)
    attr = _pick(rng, list(node.attribute))
    node.attribute.remove(attr)
    return f"{node.op_type} {node.name} without attribute {attr.name}"


def _shape_constant(model: Any, rng: np.random.Generator) -> str | None:
    names = _initializer_names_of(model, ("Reshape", "Expand", "Tile", "ConstantOfShape", "Slice", "Pad", "Split",
                                          "Unsqueeze", "Squeeze", "ReduceMean", "ReduceSum", "Resize", "Gather"),
                                  (1, 2, 3, 4))
    if not names:
        return None
    tensor = _initializer(model, _pick(rng, names))
    values = _pick(rng, [[-1, -1], [0, 0], [0, -1], [2**40, 1], [-5], [], [1, 2, 3, 4, 5, 6, 7], [1, 0, 8],
                         [2**31 - 1, 2**31 - 1], [-(2**62)], [3, -1, 0]])
    _set_array(tensor, np.array(values, dtype=np.int64))
    return f"shape constant {tensor.name} = {values}"


def _qparams(model: Any, rng: np.random.Generator) -> str | None:
    scales = _initializer_names_of(model, ("QuantizeLinear", "DequantizeLinear"), (1,))
    zero_points = _initializer_names_of(model, ("QuantizeLinear", "DequantizeLinear"), (2,))
    what = rng.random()
    if what < 0.4 and scales:
        tensor = _initializer(model, _pick(rng, scales))
        n = int(np.prod(tensor.dims)) if tensor.dims else 1
        if rng.random() < 0.2 or not 0 <= n <= 4096:  # (an earlier mutation may have made the dims absurd)
            n = int(_pick(rng, [0, 2, 3, 5, 64]))
        value = float(_pick(rng, _FLOATS))
        array = np.full(n, value, np.float32) if tensor.dims or n != 1 else np.array(value, np.float32)
        _set_array(tensor, array)
        return f"scale {tensor.name} = {value} x {n}"
    if what < 0.8 and zero_points:
        tensor = _initializer(model, _pick(rng, zero_points))
        n = int(np.prod(tensor.dims)) if tensor.dims else 1
        if rng.random() < 0.2 or not 0 <= n <= 4096:  # (an earlier mutation may have made the dims absurd)
            n = int(_pick(rng, [0, 2, 3, 5, 64]))
        dtype = _pick(rng, [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64, np.float32])
        value = int(_pick(rng, [-129, 128, 300, -1000, 127, -128, 255, 0, 2**31 - 1]))
        array = np.full(n, value).astype(dtype) if tensor.dims or n != 1 else np.array(value).astype(dtype)
        _set_array(tensor, array)
        return f"zero point {tensor.name} = {value} as {np.dtype(dtype).name} x {n}"
    from onnx import helper

    nodes = [n for n in model.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    if not nodes:
        return None
    node = _pick(rng, nodes)
    axis = int(_pick(rng, [-5, -1, 0, 1, 2, 3, 4, 100]))
    for attr in node.attribute:
        if attr.name == "axis":
            node.attribute.remove(attr)
            break
    node.attribute.append(helper.make_attribute("axis", axis))
    return f"{node.op_type} {node.name} axis = {axis}"


def _opset(model: Any, rng: np.random.Generator) -> str | None:
    what = rng.random()
    if what < 0.4:
        version = int(_pick(rng, [0, 1, 6, 7, 12, 999, -1, 2**40]))
        for entry in model.opset_import:
            if entry.domain in ("", "ai.onnx"):
                entry.version = version
        return f"opset {version}"
    if what < 0.55:
        entry = model.opset_import.add()
        entry.domain, entry.version = _pick(rng, ["com.microsoft", "x.unknown", "ai.onnx.ml", ""]), int(rng.integers(0, 5))
        return f"opset import {entry.domain!r} {entry.version}"
    if what < 0.7:
        model.ir_version = int(_pick(rng, [0, 1, 3, 99, 2**40]))
        return f"ir_version {model.ir_version}"
    if what < 0.8:
        del model.opset_import[:]
        return "no opset import"
    if not model.graph.node:
        return None
    node = _pick(rng, list(model.graph.node))
    node.domain = _pick(rng, ["com.microsoft", "x.unknown", "ai.onnx", "ai.onnx.ml"])
    return f"{node.op_type} {node.name} domain {node.domain}"


def _op_type(model: Any, rng: np.random.Generator) -> str | None:
    if not model.graph.node:
        return None
    node = _pick(rng, list(model.graph.node))
    old, node.op_type = node.op_type, _pick(rng, _OP_TYPES)
    return f"{node.name} op {old} -> {node.op_type}"


def _structure(model: Any, rng: np.random.Generator) -> str | None:
    nodes = model.graph.node
    if not nodes:
        return None
    what = rng.random()
    i, j = int(rng.integers(0, len(nodes))), int(rng.integers(0, len(nodes)))
    if what < 0.25:
        removed = nodes[i]
        del nodes[i]
        return f"node {removed.name} removed"
    if what < 0.45:
        copy = nodes.add()
        copy.CopyFrom(nodes[i])
        return f"node {copy.name} duplicated"
    if what < 0.65:
        a, b = type(nodes[i])(), type(nodes[j])()
        a.CopyFrom(nodes[i])
        b.CopyFrom(nodes[j])
        nodes[i].CopyFrom(b)
        nodes[j].CopyFrom(a)
        return f"nodes {i} and {j} swapped"
    if what < 0.8 and model.graph.input:
        del model.graph.input[int(rng.integers(0, len(model.graph.input)))]
        return "a graph input removed"
    if what < 0.9 and model.graph.output:
        copy = model.graph.output.add()
        copy.CopyFrom(model.graph.output[0])
        return "graph output duplicated"
    del model.graph.output[:]
    return "no graph outputs"


# hostile nodes inserted on an edge: op, extra constant operands (as int64 / float arrays), attributes
_INSERTS: list[tuple[str, Callable[[np.random.Generator], list[np.ndarray]], Callable[[np.random.Generator], dict]]] = [
    ("Expand", lambda r: [np.array(_pick(r, [[1, 2**20, 2**20], [2**31 - 1], [-1, 4], [1, 1, 65536, 65536]]),
                                   np.int64)], lambda r: {}),
    ("Tile", lambda r: [np.array(_pick(r, [[1, 4096, 4096, 64], [0, 1, 1, 1], [-1, 2, 2, 2], [2**31 - 1] * 4]),
                                 np.int64)], lambda r: {}),
    ("Pad", lambda r: [np.array(_pick(r, [[0, 0, 2**20, 2**20, 0, 0, 2**20, 2**20], [0, 0, -3, -3, 0, 0, -3, -3],
                                          [1, 2], [0] * 8]), np.int64)], lambda r: {"mode": _pick(r, ["constant", "edge"])}),
    ("Slice", lambda r: [np.array([_int(r)], np.int64), np.array([_int(r)], np.int64),
                         np.array([_pick(r, [0, 1, 2, 3, 5, -9])], np.int64), np.array([_pick(r, [1, 0, -1, 2**40])], np.int64)],
     lambda r: {}),
    ("Gather", lambda r: [np.array(_pick(r, [[0], [2**31 - 1], [-100], [1, 5, 9]]), np.int64)],
     lambda r: {"axis": _pick(r, [0, 1, 3, -1, 7])}),
    ("Split", lambda r: [np.array(_pick(r, [[1, 1], [0, 100], [-1, 3], [2**40]]), np.int64)],
     lambda r: {"axis": _pick(r, [0, 1, 2, -1, 9])}),
    ("Reshape", lambda r: [np.array(_pick(r, [[-1, -1], [0, 0, 0, 0], [2**31, 2], [1, -1], [0]]), np.int64)],
     lambda r: {}),
    ("Transpose", lambda r: [], lambda r: {"perm": _pick(r, [[0, 0, 1, 2], [3, 2, 1, 0], [0, 1], [0, 1, 2, 9]])}),
    ("Unsqueeze", lambda r: [np.array(_pick(r, [[0], [9], [-1, -1], [0, 1, 2, 3, 4, 5, 6, 7]]), np.int64)],
     lambda r: {}),
    ("Squeeze", lambda r: [np.array(_pick(r, [[0], [1], [9]]), np.int64)], lambda r: {}),
    ("Flatten", lambda r: [], lambda r: {"axis": _pick(r, [0, 1, 4, -9])}),
    ("ReduceSum", lambda r: [np.array(_pick(r, [[0], [9], [-1, -1]]), np.int64)],
     lambda r: {"keepdims": _pick(r, [0, 1])}),
    ("Concat", lambda r: [np.zeros(_pick(r, [(1,), (1, 1, 1, 1), (1, 2**10, 1, 1)]), np.float32)],
     lambda r: {"axis": _pick(r, [0, 1, 3, -1, 9])}),
    ("Resize", lambda r: [np.zeros(0, np.float32), np.array(_pick(r, [[1, 1, 1e6, 1e6], [1, 1, 0, 0], [1, 1, -2, 2]]),
                                                          np.float32)], lambda r: {}),
    ("Cast", lambda r: [], lambda r: {"to": _pick(r, [1, 3, 7, 8, 16, 0, 999])}),
    ("Softmax", lambda r: [], lambda r: {"axis": _pick(r, [-1, 0, 1, 9, -9])}),
    ("MatMul", lambda r: [np.ones(_pick(r, [(3, 5), (1,), (2**10, 2**10)]), np.float32)], lambda r: {}),
    ("Conv", lambda r: [np.ones(_pick(r, [(4, 3, 3, 3), (1, 1, 1, 1), (8, 8, 100, 100), (4, 0, 1, 1)]), np.float32)],
     lambda r: {"group": _pick(r, [1, 0, 3, -1]), "strides": _pick(r, [[1, 1], [0, 0], [-1, 1]])}),
    ("MaxPool", lambda r: [], lambda r: {"kernel_shape": _pick(r, [[2, 2], [0, 0], [2**20, 2**20], [-1, 3], [3]]),
                                         "pads": _pick(r, [[0, 0, 0, 0], [-1, -1, 0, 0], [5, 5, 5, 5]])}),
    ("ConstantOfShape", lambda r: [], lambda r: {}),
    ("QuantizeLinear", lambda r: [np.array(_pick(r, _FLOATS), np.float32),
                                  np.array(_pick(r, [0, 127, -128]), _pick(r, [np.int8, np.uint8, np.int32]))],
     lambda r: {"axis": _pick(r, [1, 0, 9])}),
    ("DequantizeLinear", lambda r: [np.array(_pick(r, _FLOATS), np.float32), np.array(0, np.int8)], lambda r: {}),
]


def _insert(model: Any, rng: np.random.Generator) -> str | None:
    """A hostile node on an edge: consumer input x becomes op(x, hostile constants...)."""
    from onnx import helper, numpy_helper

    nodes = [n for n in model.graph.node if n.input and n.input[0]]
    if not nodes:
        return None
    consumer = _pick(rng, nodes)
    op, make_inputs, make_attrs = _pick(rng, _INSERTS)
    source = consumer.input[0]
    k = sum(1 for n in model.graph.node if n.name.startswith("fuzz_"))
    names = [source]
    if op == "ConstantOfShape":
        shape = np.array(_pick(rng, [[2**31 - 1, 2**31 - 1], [1, 2**40], [-3], [0, 4], [2**15, 2**15, 4]]), np.int64)
        names = [f"fuzz_{k}_shape"]
        model.graph.initializer.append(numpy_helper.from_array(shape, names[0]))
    for m, array in enumerate(make_inputs(rng)):
        names.append(f"fuzz_{k}_in{m}")
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(array), names[-1]))
    out = f"fuzz_{k}_out"
    position = list(model.graph.node).index(consumer)
    node = helper.make_node(op, names, [out], name=f"fuzz_{k}_{op}", **make_attrs(rng))
    model.graph.node.insert(position, node)
    consumer.input[0] = out
    return f"{op} inserted before {consumer.op_type} {consumer.name}"


def _external_data(model: Any, rng: np.random.Generator) -> str | None:
    import onnx

    tensors = list(model.graph.initializer)
    for node in model.graph.node:
        tensors += [a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR]
    if not tensors:
        return None
    tensor = _pick(rng, tensors)
    location = _pick(rng, _EXTERNAL_LOCATIONS)
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in (("location", location), ("offset", str(_pick(rng, [0, 4, 2**40, -1]))),
                       ("length", str(_pick(rng, [4, 864, 2**40, 0])))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return f"initializer {tensor.name} external data at {location!r}"


MUTATIONS: dict[str, Callable[[Any, np.random.Generator], str | None]] = {
    "dims": _dims, "value_info": _value_info, "initializer.dims": _initializer_dims,
    "initializer.data": _initializer_data, "node.input": _node_input, "node.output": _node_output,
    "attribute": _attribute, "attribute.drop": _drop_attribute, "shape_constant": _shape_constant,
    "qparams": _qparams, "opset": _opset, "op_type": _op_type, "structure": _structure, "insert": _insert,
    "external_data": _external_data, "attribute.value": _attribute_value,
    "initializer.values": _initializer_values, "shape.plausible": _plausible_shape,
}
# how often each kind is chosen: the kinds that reach the converters most are the most frequent
_WEIGHTS = {"dims": 3, "value_info": 1, "initializer.dims": 2, "initializer.data": 2, "node.input": 2,
            "node.output": 1, "attribute": 4, "attribute.drop": 1, "shape_constant": 2, "qparams": 3, "opset": 1,
            "op_type": 2, "structure": 1, "insert": 4, "external_data": 1, "attribute.value": 5,
            "initializer.values": 4, "shape.plausible": 3}
_KINDS = list(MUTATIONS)
_P = np.array([_WEIGHTS[k] for k in _KINDS], dtype=np.float64) / sum(_WEIGHTS.values())


def mutate(data: bytes, rng: np.random.Generator, model: Any = None) -> tuple[bytes, str]:
    """One mutated copy of `data` (a serialized ModelProto) and a short description of what was done."""
    choice = rng.random()
    if choice < 0.08:
        cut = int(rng.integers(0, len(data)))
        return data[:cut], f"truncated to {cut} B"
    if choice < 0.18 or model is None:
        buf = bytearray(data)
        flips = int(rng.integers(1, 16))
        for _ in range(flips):
            buf[int(rng.integers(0, len(buf)))] = int(rng.integers(0, 256))
        return bytes(buf), f"{flips} random bytes"
    mutant = type(model)()
    mutant.CopyFrom(model)
    done: list[str] = []
    wanted, tries = int(rng.integers(1, 4)), 0
    while len(done) < wanted and tries < 10:  # a mutation may not apply to this seed: draw another
        tries += 1
        kind = _KINDS[int(rng.choice(len(_KINDS), p=_P))]
        try:
            what = MUTATIONS[kind](mutant, rng)
        except (ValueError, TypeError, OverflowError, IndexError):  # a value the protobuf field refuses
            what = None
        if what:
            done.append(f"{kind}: {what}")
    return mutant.SerializeToString(), "; ".join(done) or "unchanged"
