"""ONNX model -> IR (TFLite operator names, NHWC layout), through the `onnx` package.

The IR computes in TFLite's conventions, so each ONNX node becomes the TFLite-style nodes that
compute the same function:
- Tensors keep their ONNX (NCHW) layout between nodes. A layout-sensitive operator (Conv, pools)
  is wrapped in explicit TRANSPOSE nodes: NCHW -(0,2,3,1)-> NHWC, op, NHWC -(0,3,1,2)-> NCHW (1-D
  operators: NCW -(0,2,1)-> NWC, reshaped to N,1,W,C). The layout pass (passes/layout.py) sinks
  these transposes through element-wise operators and cancels inverse pairs.
- Conv weights O,I,kH,kW become OHWI (CONV_2D) or 1,kH,kW,O (DEPTHWISE_CONV_2D, group = C);
  ONNX pads become SAME when they equal TFLite's SAME padding, else an explicit PAD before a VALID
  operator (-O2 folds it into the conv as explicit_padding).
- BatchNormalization is y = x * s + t with s = gamma / sqrt(var + eps), t = beta - mean * s:
  a MUL and an ADD by per-channel constants, which passes/fold_affine.py merges into a conv.
- Gemm / MatMul with constant B become FULLY_CONNECTED (weights [out, in] = B^T, times alpha).
- QuantizeLinear / DequantizeLinear become QUANTIZE / DEQUANTIZE with the scale and zero point on
  the integer tensor; uint8 is shifted to int8 (q - 128 with zero point - 128: same real values).
- Shape is a constant (static shapes); Constant, ConstantOfShape are constants; Gather, Cast,
  Concat, Unsqueeze... on constants become nodes that the constant-folding pass evaluates.
- Identity and Dropout become IDENTITY nodes (removed by passes/simplify.py).

Shapes come from ONNX shape inference (symbolic dimensions are fixed to 1). Errors name the ONNX
node: `ONNX node #index 'name' (OpType): ...`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.errors import InvalidModelError, NN2CError, UnsupportedOpError
from nn2c.ir import Graph, GraphInvariantError, Node, QuantParams, TensorType, Value, verify
from nn2c.passes.rewrite import reset_fresh_names
from nn2c.reference.evaluate import SUPPORTED_OPS, ReferenceError, evaluate_node

MIN_OPSET, MAX_OPSET = 7, 28
NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)
NCW_TO_NWC = (0, 2, 1)
FLOAT_LOWEST = float(np.finfo(np.float32).min)
# no microcontroller model has a 1 GiB tensor: a larger one is a corrupt or hostile shape (as in
# the TFLite frontend); constants the importer computes itself (ConstantOfShape, folded shape
# arithmetic) are capped lower, since they end up as C arrays in the weights file
MAX_TENSOR_BYTES = 1 << 30
MAX_COMPUTED_CONSTANT_BYTES = 64 << 20

# ONNX TensorProto element type -> IR dtype (float64 / float16 constants are narrowed to float32)
_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
           10: "float32", 11: "float32"}
_DTYPE_NAMES = {0: "UNDEFINED", 4: "UINT16", 8: "STRING", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
                15: "COMPLEX128", 16: "BFLOAT16"}


class _NodeError(Exception):
    """A problem in the ONNX node being converted; the caller adds which node."""

    def __init__(self, message: str, unsupported: bool = True) -> None:
        super().__init__(message)
        self.unsupported = unsupported


def _unsupported(message: str) -> _NodeError:
    return _NodeError(message, unsupported=True)


def _invalid(message: str) -> _NodeError:
    return _NodeError(message, unsupported=False)


def to_nhwc_perm(rank: int) -> tuple[int, ...]:
    """Channels-first -> channels-last permutation of a rank-3 or rank-4 tensor."""
    return (0, *range(2, rank), 1)


def to_nchw_perm(rank: int) -> tuple[int, ...]:
    return (0, rank - 1, *range(1, rank - 1))


class _Converter:
    def __init__(self, model: Any, source: str, nhwc_io: bool) -> None:
        import onnx

        self.onnx = onnx
        self.model = model
        self.source = source
        self.nhwc_io = nhwc_io
        self.graph = Graph(re.sub(r"\W", "_", Path(source).stem) or "model")
        self.values: dict[str, Value] = {}
        self.types: dict[str, tuple[str, tuple[int, ...]]] = {}
        self.used_names: set[str] = set()
        self.folded: dict[int, np.ndarray] = {}
        self.node_index = -1
        self.node_name = ""
        self.opset = 1
        for entry in model.opset_import:
            if entry.domain in ("", "ai.onnx"):
                self.opset = int(entry.version)

    # --- values ----------------------------------------------------------------------------
    def unique(self, name: str) -> str:
        base, k = name or "t", 1
        while name in self.used_names or not name:
            name = f"{base}_{k}"
            k += 1
        self.used_names.add(name)
        return name

    def new(self, name: str, dtype: str, shape: Sequence[int], quant: QuantParams | None = None) -> Value:
        ttype = TensorType(dtype, tuple(int(d) for d in shape), quant)
        _check_size(name, ttype)
        return Value(self.unique(name), ttype)

    def const(self, array: np.ndarray, name: str, quant: QuantParams | None = None) -> Value:
        array = np.asarray(array)
        if array.dtype in (np.float64, np.float16):
            array = array.astype(np.float32)
        dtype = {np.dtype(np.bool_): "bool"}.get(array.dtype, str(array.dtype))
        if dtype not in ("float32", "int8", "uint8", "int16", "int32", "int64", "bool"):
            raise _unsupported(f"constant {name!r} has type {array.dtype}")
        ttype = TensorType(dtype, tuple(array.shape), quant)
        _check_size(name, ttype)
        return Value(self.unique(name), ttype, data=array.copy())

    def int32(self, values: Sequence[int] | np.ndarray, name: str) -> Value:
        return self.const(np.asarray(values, dtype=np.int32), name)

    def value(self, name: str) -> Value:
        if name not in self.values:
            raise _invalid(f"input {name!r} is not produced by any earlier node")
        return self.values[name]

    def optional(self, node: Any, i: int) -> Value | None:
        if i >= len(node.input) or not node.input[i]:
            return None
        return self.value(node.input[i])

    def data(self, value: Value | None) -> np.ndarray | None:
        """The value's array if it is a constant or computable from constants alone."""
        if value is None:
            return None
        if value.data is not None and not value.is_variable:
            return value.data
        if id(value) in self.folded:
            return self.folded[id(value)]
        producer = value.producer
        if producer is None or producer.op not in SUPPORTED_OPS or producer.op in ("QUANTIZE", "DEQUANTIZE"):
            return None
        if sum(v.type.num_bytes for v in producer.outputs) > MAX_COMPUTED_CONSTANT_BYTES:
            return None  # not worth computing at import time (and it would not be folded later either)
        arrays: list[np.ndarray | None] = []
        for v in producer.inputs:
            if v is None:
                arrays.append(None)
                continue
            array = self.data(v)
            if array is None:
                return None
            arrays.append(array)
        try:
            results = evaluate_node(producer, arrays)
        except (ReferenceError, ValueError, IndexError):
            return None
        for out, result in zip(producer.outputs, results, strict=True):
            self.folded[id(out)] = result
        return self.folded[id(value)]

    def const_input(self, node: Any, i: int, what: str) -> np.ndarray:
        value = self.optional(node, i)
        array = self.data(value)
        if array is None:
            raise _unsupported(f"the {what} input must be a constant (computed at run time here)")
        return array

    def out_type(self, name: str) -> tuple[str, tuple[int, ...]]:
        if name not in self.types:
            raise _unsupported(f"the shape of {name!r} could not be inferred; export the model with static "
                               "input shapes")
        return self.types[name]

    def output(self, node: Any, k: int = 0, dtype: str | None = None, shape: Sequence[int] | None = None,
               quant: QuantParams | None = None) -> Value:
        """A new value for ONNX output k, typed from shape inference unless given."""
        name = node.output[k]
        if dtype is None or shape is None:
            inferred_dtype, inferred_shape = self.out_type(name)
            dtype = dtype or inferred_dtype
            shape = inferred_shape if shape is None else shape
        value = self.new(name, dtype, shape, quant)
        self.values[name] = value
        return value

    def emit(self, op: str, inputs: Sequence[Value | None], outputs: Sequence[Value],
             attrs: dict[str, Any] | None = None) -> Node:
        node = Node(op, list(inputs), list(outputs), dict(attrs or {}), name=self.node_name, index=self.node_index)
        self.graph.add_node(node)
        return node

    def unary(self, op: str, x: Value, node: Any, attrs: dict[str, Any] | None = None) -> Value:
        out = self.output(node)
        self.emit(op, [x], [out], attrs)
        return out

    def transpose(self, x: Value, perm: Sequence[int], name: str) -> Value:
        shape = [x.type.shape[p] for p in perm]
        out = self.new(name, x.type.dtype, shape, _permuted_quant(x.type.quant, perm))
        self.emit("TRANSPOSE", [x, self.int32(list(perm), f"{name}/perm")], [out])
        return out

    def reshape(self, x: Value, shape: Sequence[int], name: str) -> Value:
        out = self.new(name, x.type.dtype, shape, _reshaped_quant(x.type.quant, x.type.shape, shape))
        self.emit("RESHAPE", [x, self.int32(list(shape), f"{name}/shape")], [out])
        return out

    def pad_nhwc(self, x: Value, tblr: Sequence[int], name: str, fill: float = 0.0) -> Value:
        """PAD (or PADV2 with a fill value) of the two spatial axes of an NHWC tensor."""
        top, bottom, left, right = (int(v) for v in tblr)
        n, h, w, ch = x.type.shape
        table = np.array([[0, 0], [top, bottom], [left, right], [0, 0]], dtype=np.int32)
        padded = self.new(f"{name}/padded", x.type.dtype, (n, h + top + bottom, w + left + right, ch), x.type.quant)
        if fill == 0.0:
            self.emit("PAD", [x, self.const(table, f"{name}/pads")], [padded])
        else:
            value = self.const(np.array([fill], dtype=np.float32), f"{name}/fill")
            self.emit("PADV2", [x, self.const(table, f"{name}/pads"), value], [padded])
        return padded

    # --- layout helpers -----------------------------------------------------------------------
    def to_channels_last(self, x: Value, name: str) -> Value:
        """NCHW -> NHWC, or NCW -> N,1,W,C for 1-D operators."""
        rank = len(x.type.shape)
        y = self.transpose(x, to_nhwc_perm(rank), f"{name}/nhwc")
        if rank == 3:
            n, w, c = y.type.shape
            y = self.reshape(y, (n, 1, w, c), f"{name}/nhwc4")
        return y

    def from_channels_last(self, y: Value, rank: int, node: Any) -> Value:
        """The inverse of to_channels_last, into a new value for the node's first output."""
        out = self.output(node)
        if rank == 3:
            n, _, w, c = y.type.shape
            y = self.reshape(y, (n, w, c), f"{out.name}/nwc")
        self.emit("TRANSPOSE", [y, self.int32(list(to_nchw_perm(rank)), f"{out.name}/perm")], [out])
        return out

    def relayout(self, value: Value, shape: Sequence[int], perm: Sequence[int], name: str) -> Value:
        """A weight reshaped (unit dims inserted) and permuted; through Q/DQ of constants too."""
        if value.data is not None:
            quant = _permuted_quant(_reshaped_quant(value.type.quant, value.type.shape, shape), perm)
            data = np.ascontiguousarray(value.data.reshape(shape).transpose(perm))
            return self.const(data, name, quant)
        producer = value.producer
        if producer is not None and producer.op in ("DEQUANTIZE", "QUANTIZE") and len(value.users) <= 1:
            source = producer.inputs[0]
            assert source is not None
            inner = self.relayout(source, shape, perm, f"{name}/q")
            out_shape = [shape[p] for p in perm]
            quant = _permuted_quant(_reshaped_quant(value.type.quant, value.type.shape, shape), perm)
            out = self.new(name, value.type.dtype, out_shape, quant)
            self.emit(producer.op, [inner], [out], producer.attrs)
            return out
        if tuple(shape) != value.type.shape:
            value = self.reshape(value, shape, f"{name}/r")
        return self.transpose(value, perm, name)


def _check_size(name: str, ttype: TensorType) -> None:
    if any(d < 0 for d in ttype.shape):
        raise _invalid(f"tensor {name!r} has a negative dimension in its shape {list(ttype.shape)}")
    if ttype.num_bytes > MAX_TENSOR_BYTES:
        raise _invalid(f"tensor {name!r} of shape {list(ttype.shape)} would need {ttype.num_bytes:,} bytes; the shape "
                       "is corrupt (nn2c compiles for microcontrollers)")


# --- quantization helpers ----------------------------------------------------------------------
def _permuted_quant(quant: QuantParams | None, perm: Sequence[int]) -> QuantParams | None:
    if quant is None or not quant.per_channel:
        return quant
    return QuantParams(quant.scale, quant.zero_point, list(perm).index(quant.axis))


def _reshaped_quant(quant: QuantParams | None, old: Sequence[int], new: Sequence[int]) -> QuantParams | None:
    """Per-channel axis after a reshape that only inserts or removes unit dims."""
    if quant is None or not quant.per_channel:
        return quant
    kept_old = [d for d, n in enumerate(old) if n != 1]
    kept_new = [d for d, n in enumerate(new) if n != 1]
    if [old[d] for d in kept_old] != [new[d] for d in kept_new] or quant.axis not in kept_old:
        raise _unsupported(f"cannot reshape a per-channel quantized tensor from {list(old)} to {list(new)}")
    return QuantParams(quant.scale, quant.zero_point, kept_new[kept_old.index(quant.axis)])


# --- attributes ------------------------------------------------------------------------------------
def _attributes(onnx: Any, node: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for attr in node.attribute:
        value = onnx.helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        attrs[attr.name] = value
    return attrs


def _spatial(rank: int, values: Sequence[int] | None, default: int) -> list[int]:
    count = rank - 2
    return [int(v) for v in values] if values else [default] * count


def _resolve_pads(attrs: dict[str, Any], in_hw: Sequence[int], out_hw: Sequence[int], kernel: Sequence[int],
                  strides: Sequence[int], dilations: Sequence[int]) -> list[int]:
    """[begin..., end...] padding of each spatial axis, as ONNX defines it."""
    auto_pad = attrs.get("auto_pad", "NOTSET")
    count = len(in_hw)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for size, out, k, s, d in zip(in_hw, out_hw, kernel, strides, dilations, strict=True):
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            small = total // 2
            begins.append(small if auto_pad == "SAME_UPPER" else total - small)
            ends.append(total - begins[-1])
        return begins + ends
    if auto_pad == "VALID":
        return [0] * (2 * count)
    if auto_pad != "NOTSET":
        raise _invalid(f"auto_pad {auto_pad!r} is not an ONNX value")
    pads = [int(p) for p in attrs.get("pads", [0] * (2 * count))]
    if len(pads) != 2 * count:
        raise _invalid(f"pads has {len(pads)} values for {count} spatial axes")
    if any(p < 0 for p in pads):
        raise _unsupported("negative pads")
    return pads


def _padding_attrs(pads_hw: Sequence[int], in_hw: Sequence[int], out_hw: Sequence[int], kernel: Sequence[int],
                   strides: Sequence[int], dilations: Sequence[int]) -> dict[str, Any]:
    """TFLite padding attributes for 2-D (top, left, bottom, right) pads: SAME, VALID or explicit."""
    top, left, bottom, right = pads_hw
    if not any(pads_hw):
        return {"padding": "VALID"}
    same = True
    for size, out, k, s, d, begin in zip(in_hw, out_hw, kernel, strides, dilations, (top, left), strict=True):
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        same &= out == (size + s - 1) // s and begin == total // 2
    if same:
        return {"padding": "SAME"}
    return {"padding": "VALID", "explicit_padding": (top, bottom, left, right)}


def _geometry(attrs: dict[str, Any], x_shape: Sequence[int], out_shape: Sequence[int],
              kernel: Sequence[int]) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """(in_hw, out_hw, strides, dilations, pads top/left/bottom/right) in 2-D form (1-D: H = 1)."""
    rank = len(x_shape)
    strides = _spatial(rank, attrs.get("strides"), 1)
    dilations = _spatial(rank, attrs.get("dilations"), 1)
    in_sp, out_sp = list(x_shape[2:]), list(out_shape[2:])
    pads = _resolve_pads(attrs, in_sp, out_sp, kernel, strides, dilations)
    if rank == 3:
        return [1, in_sp[0]], [1, out_sp[0]], [1, strides[0]], [1, dilations[0]], [0, pads[0], 0, pads[1]]
    return in_sp, out_sp, strides, dilations, pads


# --- operator converters ---------------------------------------------------------------------------
Converter = Callable[[_Converter, Any, dict[str, Any]], None]
_CONVERTERS: dict[str, Converter] = {}


def _converts(*op_types: str) -> Callable[[Converter], Converter]:
    def register(function: Converter) -> Converter:
        for op in op_types:
            _CONVERTERS[op] = function
        return function

    return register


def _spatial_rank_check(x: Value, what: str) -> int:
    rank = len(x.type.shape)
    if rank not in (3, 4):
        raise _unsupported(f"{what} over {rank - 2} spatial dimensions (1-D and 2-D are supported)")
    return rank


@_converts("Conv")
def _conv(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x, w = c.value(node.input[0]), c.value(node.input[1])
    rank = _spatial_rank_check(x, "Conv")
    if len(w.type.shape) != rank:
        raise _invalid(f"weights of rank {len(w.type.shape)} for a rank-{rank} input")
    _, out_shape = c.out_type(node.output[0])
    o, i_per_group = w.type.shape[0], w.type.shape[1]
    kernel = list(w.type.shape[2:])
    in_hw, out_hw, strides, dilations, pads = _geometry(a, x.type.shape, out_shape, kernel)
    k_hw = [1, kernel[0]] if rank == 3 else kernel
    group = int(a.get("group", 1))
    channels = x.type.shape[1]
    if channels != i_per_group * group or o % group:
        raise _invalid(f"{channels} input channels, {group} groups and weights {list(w.type.shape)} do not match")
    w4 = (o, i_per_group, *k_hw)
    depthwise = group > 1 and group == channels and i_per_group == 1
    name = node.output[0]
    attrs: dict[str, Any] = {}
    if depthwise:
        weights = c.relayout(w, w4, (1, 2, 3, 0), f"{name}/weights")  # [1, kH, kW, O]
        op, attrs["depth_multiplier"] = "DEPTHWISE_CONV_2D", o // channels
    else:
        weights = c.relayout(w, w4, (0, 2, 3, 1), f"{name}/weights")  # [O, kH, kW, I/group]
        op = "CONV_2D"
    bias = c.optional(node, 2)
    if bias is not None and bias.type.shape != (o,):
        raise _invalid(f"bias of shape {list(bias.type.shape)} for {o} output channels (needs [{o}])")
    attrs.update(_padding_attrs(pads, in_hw, out_hw, k_hw, strides, dilations))
    attrs.update({"stride_h": strides[0], "stride_w": strides[1], "dilation_hfactor": dilations[0],
                  "dilation_wfactor": dilations[1], "fused_activation_function": "NONE"})
    xn = c.to_channels_last(x, name)
    if "explicit_padding" in attrs:
        # an explicit PAD keeps every conv lowering right; passes/fuse_pad.py folds it back in
        xn = c.pad_nhwc(xn, attrs.pop("explicit_padding"), name)
    y = c.new(f"{name}/conv", "float32", (x.type.shape[0], *out_hw, o))
    c.emit(op, [xn, weights, bias], [y], attrs)
    c.from_channels_last(y, rank, node)


@_converts("MaxPool", "AveragePool")
def _pool(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    rank = _spatial_rank_check(x, node.op_type)
    if len(node.output) > 1 and node.output[1]:
        raise _unsupported("the Indices output of MaxPool is not supported")
    _, out_shape = c.out_type(node.output[0])
    kernel = [int(k) for k in a["kernel_shape"]]
    in_hw, out_hw, strides, dilations, pads = _geometry(a, x.type.shape, out_shape, kernel)
    k_hw = [1, kernel[0]] if rank == 3 else kernel
    if any(d != 1 for d in dilations):
        raise _unsupported("dilated pooling")
    if a.get("ceil_mode", 0):
        floor_out = [(i + p0 + p1 - k) // s + 1 for i, p0, p1, k, s in
                     zip(in_hw, pads[:2], pads[2:], k_hw, strides, strict=True)]
        if floor_out != out_hw:
            raise _unsupported("ceil_mode that changes the output size")
    name = node.output[0]
    xn = c.to_channels_last(x, name)
    include_pad = bool(a.get("count_include_pad", 0))
    attrs: dict[str, Any] = {"stride_h": strides[0], "stride_w": strides[1], "filter_height": k_hw[0],
                             "filter_width": k_hw[1], "fused_activation_function": "NONE"}
    padding = _padding_attrs(pads, in_hw, out_hw, k_hw, strides, [1, 1])
    average = node.op_type == "AveragePool"
    correction = None
    if "explicit_padding" in padding or (average and include_pad and any(pads)):
        top, left, bottom, right = pads
        if average:
            xn = c.pad_nhwc(xn, (top, bottom, left, right), name)
            if not include_pad:
                correction = _average_correction(in_hw, out_hw, k_hw, strides, (top, left))
        else:
            if xn.type.dtype != "float32":
                raise _unsupported("explicitly padded max pooling of integers")
            xn = c.pad_nhwc(xn, (top, bottom, left, right), name, fill=FLOAT_LOWEST)
        padding = {"padding": "VALID"}
    attrs.update(padding)
    y = c.new(f"{name}/pool", xn.type.dtype, (x.type.shape[0], *out_hw, x.type.shape[1]), xn.type.quant)
    c.emit("AVERAGE_POOL_2D" if average else "MAX_POOL_2D", [xn], [y], attrs)
    if correction is not None:
        scaled = c.new(f"{name}/pool_excl", "float32", y.type.shape)
        c.emit("MUL", [y, c.const(correction, f"{name}/count_scale")], [scaled], {"fused_activation_function": "NONE"})
        y = scaled
    c.from_channels_last(y, rank, node)


def _average_correction(in_hw: Sequence[int], out_hw: Sequence[int], k_hw: Sequence[int], strides: Sequence[int],
                        begin: Sequence[int]) -> np.ndarray:
    """kH*kW / in-bounds taps per output pixel: turns an average over a zero-padded window into
    ONNX's average over the in-bounds taps only (count_include_pad = 0)."""
    counts = []
    for size, out, k, s, b in zip(in_hw, out_hw, k_hw, strides, begin, strict=True):
        start = np.arange(out) * s - b
        counts.append(np.clip(start + k, 0, size) - np.clip(start, 0, size))
    valid = np.outer(counts[0], counts[1]).astype(np.float64)
    return (k_hw[0] * k_hw[1] / np.maximum(valid, 1)).astype(np.float32).reshape(1, out_hw[0], out_hw[1], 1)


@_converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    axes = list(range(2, len(x.type.shape)))
    op = "MEAN" if node.op_type == "GlobalAveragePool" else "REDUCE_MAX"
    out = c.output(node)
    c.emit(op, [x, c.int32(axes, f"{out.name}/axes")], [out], {"keep_dims": True})


@_converts("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd")
def _reduce(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    rank = len(x.type.shape)
    axes_from_input = (node.op_type == "ReduceSum" and c.opset >= 13) or c.opset >= 18
    if axes_from_input and len(node.input) > 1 and node.input[1]:
        axes = [int(v) for v in c.const_input(node, 1, "axes").reshape(-1)]
    else:
        axes = [int(v) for v in a.get("axes", [])]
    if not axes:
        if a.get("noop_with_empty_axes", 0):
            c.unary("IDENTITY", x, node)
            return
        axes = list(range(rank))
    axes = sorted({ax % rank for ax in axes}) if rank else []
    op = {"ReduceMean": "MEAN", "ReduceSum": "SUM", "ReduceMax": "REDUCE_MAX", "ReduceMin": "REDUCE_MIN",
          "ReduceProd": "REDUCE_PROD"}[node.op_type]
    out = c.output(node)
    c.emit(op, [x, c.int32(axes, f"{out.name}/axes")], [out], {"keep_dims": bool(a.get("keepdims", 1))})


@_converts("BatchNormalization")
def _batch_norm(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if a.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        raise _unsupported("BatchNormalization in training mode")
    gamma, beta, mean, var = (c.const_input(node, i, n).astype(np.float64) for i, n in
                              ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")))
    eps = float(a.get("epsilon", 1e-5))
    if not np.all(var + eps > 0):
        raise _invalid(f"variance + epsilon must be positive (epsilon {eps:g}, smallest variance {var.min():g})")
    s = gamma / np.sqrt(var + eps)
    t = beta - mean * s
    shape = (x.type.shape[1], *([1] * (len(x.type.shape) - 2)))
    name = node.output[0]
    scaled = c.new(f"{name}/scaled", "float32", x.type.shape)
    c.emit("MUL", [x, c.const(s.astype(np.float32).reshape(shape), f"{name}/bn_scale")], [scaled],
           {"fused_activation_function": "NONE"})
    out = c.output(node)
    c.emit("ADD", [scaled, c.const(t.astype(np.float32).reshape(shape), f"{name}/bn_shift")], [out],
           {"fused_activation_function": "NONE"})


@_converts("Gemm")
def _gemm(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x, b = c.value(node.input[0]), c.value(node.input[1])
    name = node.output[0]
    if len(x.type.shape) != 2 or len(b.type.shape) != 2:
        raise _invalid("Gemm needs 2-D inputs")
    if a.get("transA", 0):
        x = c.transpose(x, (1, 0), f"{name}/a_t")
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    weights = c.relayout(b, b.type.shape, (0, 1) if a.get("transB", 0) else (1, 0), f"{name}/weights")
    if alpha != 1.0:
        data = c.data(weights)
        if data is None or weights.type.quant is not None:
            raise _unsupported("alpha != 1 with run-time or quantized weights")
        weights = c.const(data * np.float32(alpha), f"{name}/weights_alpha")
    n_out = weights.type.shape[0]
    bias = c.optional(node, 2)
    bias_in: Value | None = None
    add_after: Value | None = None
    if bias is not None:
        if beta != 1.0:
            data = c.data(bias)
            if data is None or bias.type.quant is not None:
                raise _unsupported("beta != 1 with a run-time or quantized C")
            bias = c.const(data * np.float32(beta), f"{name}/bias_beta")
        if bias.type.num_elements == n_out and bias.type.shape[-1:] == (n_out,):
            bias_in = bias if len(bias.type.shape) == 1 else c.relayout(bias, (n_out,), (0,), f"{name}/bias")
        else:
            add_after = bias
    out_dtype, out_shape = c.out_type(name)
    if add_after is None:
        out = c.output(node)
        c.emit("FULLY_CONNECTED", [x, weights, bias_in], [out], {"fused_activation_function": "NONE"})
        return
    mm = c.new(f"{name}/mm", out_dtype, out_shape)
    c.emit("FULLY_CONNECTED", [x, weights, None], [mm], {"fused_activation_function": "NONE"})
    c.emit("ADD", [mm, add_after], [c.output(node)], {"fused_activation_function": "NONE"})


@_converts("MatMul")
def _matmul(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x, b = c.value(node.input[0]), c.value(node.input[1])
    if len(b.type.shape) != 2 or len(x.type.shape) < 2:
        raise _unsupported("MatMul is supported with a 2-D constant right operand only")
    if c.data(b) is None and (b.producer is None or b.producer.op != "DEQUANTIZE"):
        raise _unsupported("MatMul of two run-time tensors (the right operand must be constant weights)")
    weights = c.relayout(b, b.type.shape, (1, 0), f"{node.output[0]}/weights")
    out = c.output(node)
    c.emit("FULLY_CONNECTED", [x, weights, None], [out],
           {"fused_activation_function": "NONE", "keep_num_dims": len(x.type.shape) > 2})


_ELEMENTWISE = {"Add": "ADD", "Sub": "SUB", "Mul": "MUL", "Div": "DIV", "Max": "MAXIMUM", "Min": "MINIMUM",
                "Pow": "POW"}


@_converts(*_ELEMENTWISE)
def _binary(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    inputs = [c.value(n) for n in node.input if n]
    if node.op_type in ("Max", "Min", "Sum") and len(inputs) == 1:
        c.unary("IDENTITY", inputs[0], node)
        return
    if len(inputs) != 2:
        raise _unsupported(f"{node.op_type} with {len(inputs)} inputs (2 are supported)")
    attrs = {"fused_activation_function": "NONE"} if node.op_type in ("Add", "Sub", "Mul", "Div") else {}
    out = c.output(node)
    c.emit(_ELEMENTWISE[node.op_type], inputs, [out], attrs)


@_converts("Sum")
def _sum(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    inputs = [c.value(n) for n in node.input if n]
    if len(inputs) == 1:
        c.unary("IDENTITY", inputs[0], node)
        return
    acc = inputs[0]
    dtype, _ = c.out_type(node.output[0])
    for k, term in enumerate(inputs[1:], start=1):
        last = k == len(inputs) - 1
        out = c.output(node) if last else c.new(f"{node.output[0]}/sum{k}", dtype,
                                               np.broadcast_shapes(acc.type.shape, term.type.shape))
        c.emit("ADD", [acc, term], [out], {"fused_activation_function": "NONE"})
        acc = out


_UNARY = {"Relu": "RELU", "Sigmoid": "LOGISTIC", "Tanh": "TANH", "HardSwish": "HARD_SWISH", "Exp": "EXP",
          "Log": "LOG", "Sqrt": "SQRT", "Neg": "NEG", "Abs": "ABS", "Floor": "FLOOR", "Ceil": "CEIL"}


@_converts(*_UNARY)
def _unary(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    c.unary(_UNARY[node.op_type], c.value(node.input[0]), node)


@_converts("Identity")
def _identity(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    c.unary("IDENTITY", c.value(node.input[0]), node, {"source": "Identity"})


@_converts("Dropout")
def _dropout(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    if len(node.output) > 1 and node.output[1]:
        mask_used = any(node.output[1] in n.input for n in c.model.graph.node) or \
            node.output[1] in [o.name for o in c.model.graph.output]
        if mask_used:
            raise _unsupported("the mask output of Dropout is used")
    c.unary("IDENTITY", c.value(node.input[0]), node, {"source": "Dropout"})


@_converts("LeakyRelu")
def _leaky_relu(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    c.unary("LEAKY_RELU", c.value(node.input[0]), node, {"alpha": float(a.get("alpha", 0.01))})


@_converts("HardSigmoid")
def _hard_sigmoid(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    """max(0, min(1, alpha * x + beta)) as MUL, ADD and RELU_0_TO_1."""
    x = c.value(node.input[0])
    alpha, beta = float(a.get("alpha", 0.2)), float(a.get("beta", 0.5))
    name = node.output[0]
    scaled = c.new(f"{name}/scaled", "float32", x.type.shape)
    c.emit("MUL", [x, c.const(np.array(alpha, dtype=np.float32), f"{name}/alpha")], [scaled],
           {"fused_activation_function": "NONE"})
    shifted = c.new(f"{name}/shifted", "float32", x.type.shape)
    c.emit("ADD", [scaled, c.const(np.array(beta, dtype=np.float32), f"{name}/beta")], [shifted],
           {"fused_activation_function": "NONE"})
    c.unary("RELU_0_TO_1", shifted, node)


_CLAMPS = {(0.0, 6.0): "RELU6", (0.0, math.inf): "RELU", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, 1.0): "RELU_0_TO_1"}


@_converts("Clip")
def _clip(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    if c.opset >= 11:
        lo_v, hi_v = c.optional(node, 1), c.optional(node, 2)
        lo = float(c.const_input(node, 1, "min").reshape(-1)[0]) if lo_v is not None else -math.inf
        hi = float(c.const_input(node, 2, "max").reshape(-1)[0]) if hi_v is not None else math.inf
    else:
        lo, hi = float(a.get("min", -math.inf)), float(a.get("max", math.inf))
    lo = -math.inf if lo <= FLOAT_LOWEST else lo
    hi = math.inf if hi >= -FLOAT_LOWEST else hi
    if (lo, hi) in _CLAMPS:
        c.unary(_CLAMPS[(lo, hi)], x, node)
        return
    name = node.output[0]
    current = x
    steps = [(op, bound) for op, bound in (("MAXIMUM", lo), ("MINIMUM", hi)) if math.isfinite(bound)]
    if not steps:
        c.unary("IDENTITY", x, node)
        return
    for k, (op, bound) in enumerate(steps):
        out = c.output(node) if k == len(steps) - 1 else c.new(f"{name}/lo", x.type.dtype, x.type.shape)
        c.emit(op, [current, c.const(np.array(bound, dtype=np.float32), f"{name}/{op.lower()}")], [out])
        current = out


@_converts("Softmax", "LogSoftmax")
def _softmax(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    rank = len(x.type.shape)
    axis = int(a.get("axis", -1 if c.opset >= 13 else 1)) % max(rank, 1)
    op = "SOFTMAX" if node.op_type == "Softmax" else "LOG_SOFTMAX"
    attrs = {"beta": 1.0} if op == "SOFTMAX" else {}
    name = node.output[0]
    if c.opset < 13 and axis != rank - 1:
        # opsets < 13 normalise over all axes from `axis` on: flatten them into one
        flat = (math.prod(x.type.shape[:axis]), math.prod(x.type.shape[axis:]))
        xr = c.reshape(x, flat, f"{name}/flat")
        y = c.new(f"{name}/{op.lower()}", x.type.dtype, flat)
        c.emit(op, [xr], [y], attrs)
        c.emit("RESHAPE", [y, c.int32(list(x.type.shape), f"{name}/shape")], [c.output(node)])
        return
    if axis == rank - 1:
        c.unary(op, x, node, attrs)
        return
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = list(np.argsort(perm))
    xt = c.transpose(x, perm, f"{name}/last")
    y = c.new(f"{name}/{op.lower()}", x.type.dtype, xt.type.shape)
    c.emit(op, [xt], [y], attrs)
    c.emit("TRANSPOSE", [y, c.int32(inverse, f"{name}/perm")], [c.output(node)])


@_converts("Concat")
def _concat(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    inputs = [c.value(n) for n in node.input if n]
    _, shape = c.out_type(node.output[0])
    axis = int(a["axis"]) % max(len(shape), 1)
    inputs = [v for v in inputs if v.type.num_elements or len(inputs) == 1]
    c.emit("CONCATENATION", inputs, [c.output(node)], {"axis": axis, "fused_activation_function": "NONE"})


@_converts("Split")
def _split(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    rank = len(x.type.shape)
    axis = int(a.get("axis", 0)) % rank
    outputs = [c.output(node, k) for k in range(len(node.output))]
    sizes = [v.type.shape[axis] for v in outputs]
    if sum(sizes) != x.type.shape[axis]:
        raise _invalid(f"split sizes {sizes} do not add up to {x.type.shape[axis]}")
    c.emit("SPLIT_V", [x, c.int32(sizes, f"{node.output[0]}/sizes"), c.int32(np.array(axis), f"{node.output[0]}/axis")],
           outputs, {"num_splits": len(outputs)})


@_converts("Slice")
def _slice(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    shape = x.type.shape
    rank = len(shape)
    if c.opset >= 10:
        starts = [int(v) for v in c.const_input(node, 1, "starts").reshape(-1)]
        ends = [int(v) for v in c.const_input(node, 2, "ends").reshape(-1)]
        axes_v = c.optional(node, 3)
        axes = [int(v) for v in c.const_input(node, 3, "axes").reshape(-1)] if axes_v is not None else \
            list(range(len(starts)))
        steps_v = c.optional(node, 4)
        steps = [int(v) for v in c.const_input(node, 4, "steps").reshape(-1)] if steps_v is not None else \
            [1] * len(starts)
    else:
        starts, ends = [int(v) for v in a["starts"]], [int(v) for v in a["ends"]]
        axes = [int(v) for v in a.get("axes", range(len(starts)))]
        steps = [1] * len(starts)
    begin, end, stride = [0] * rank, list(shape), [1] * rank
    end_mask = 0
    for start, stop, axis, step in zip(starts, ends, axes, steps, strict=True):
        axis %= rank
        size = shape[axis]
        if step == 0:
            raise _invalid("a Slice step is 0")
        # ONNX clamping: start in [0, size] (step > 0) or [0, size - 1] (step < 0), end in [-1, size]
        start = start + size if start < 0 else start
        stop = stop + size if stop < 0 else stop
        if step > 0:
            start, stop = min(max(start, 0), size), min(max(stop, 0), size)
        else:
            start, stop = min(max(start, 0), size - 1), min(max(stop, -1), size - 1)
            if stop < 0:
                end_mask |= 1 << axis  # runs to the first element; a literal -1 would wrap in TFLite
        begin[axis], end[axis], stride[axis] = start, stop, step
    name = node.output[0]
    c.emit("STRIDED_SLICE", [x, c.int32(begin, f"{name}/begin"), c.int32(end, f"{name}/end"),
                             c.int32(stride, f"{name}/strides")], [c.output(node)],
           {"begin_mask": 0, "end_mask": end_mask, "ellipsis_mask": 0, "new_axis_mask": 0,
            "shrink_axis_mask": 0, "offset": False})


@_converts("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def _reshape(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    _, shape = c.out_type(node.output[0])
    if math.prod(shape) != x.type.num_elements:
        raise _invalid(f"reshape of {list(x.type.shape)} into {list(shape)}")
    out = c.output(node, quant=_reshaped_quant_or_none(x, shape))
    c.emit("RESHAPE", [x, c.int32(list(shape), f"{out.name}/shape")], [out], {"new_shape": list(shape)})


def _reshaped_quant_or_none(x: Value, shape: Sequence[int]) -> QuantParams | None:
    try:
        return _reshaped_quant(x.type.quant, x.type.shape, shape)
    except _NodeError:
        return None


@_converts("Transpose")
def _transpose(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    perm = [int(p) for p in a.get("perm", list(reversed(range(len(x.type.shape)))))]
    out = c.output(node, quant=_permuted_quant(x.type.quant, perm))
    c.emit("TRANSPOSE", [x, c.int32(perm, f"{out.name}/perm")], [out])


@_converts("Pad")
def _pad(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    rank = len(x.type.shape)
    mode = a.get("mode", "constant")
    if mode != "constant":
        raise _unsupported(f"Pad mode {mode!r} (only 'constant' is supported)")
    if c.opset >= 11:
        pads = [int(v) for v in c.const_input(node, 1, "pads").reshape(-1)]
        value_v = c.optional(node, 2)
        fill = float(c.const_input(node, 2, "constant_value").reshape(-1)[0]) if value_v is not None else 0.0
        axes_v = c.optional(node, 3)
        axes = [int(v) % rank for v in c.const_input(node, 3, "axes").reshape(-1)] if axes_v is not None else \
            list(range(rank))
    else:
        pads, fill, axes = [int(v) for v in a["pads"]], float(a.get("value", 0.0)), list(range(rank))
    if any(p < 0 for p in pads):
        raise _unsupported("negative pads (cropping)")
    table = np.zeros((rank, 2), dtype=np.int32)
    for k, axis in enumerate(axes):
        table[axis] = (pads[k], pads[k + len(axes)])
    name = node.output[0]
    out = c.output(node, quant=x.type.quant)
    if fill == 0.0:
        c.emit("PAD", [x, c.const(table, f"{name}/pads")], [out])
    else:
        if x.type.dtype != "float32":
            raise _unsupported("a non-zero pad value for a non-float tensor")
        value = c.const(np.array([fill], dtype=np.float32), f"{name}/value")
        c.emit("PADV2", [x, c.const(table, f"{name}/pads"), value], [out])


@_converts("Constant")
def _constant(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    onnx = c.onnx
    if "value" in a:
        array = _tensor_array(onnx, a["value"])
    elif "value_float" in a:
        array = np.array(a["value_float"], dtype=np.float32)
    elif "value_floats" in a:
        array = np.array(a["value_floats"], dtype=np.float32)
    elif "value_int" in a:
        array = np.array(a["value_int"], dtype=np.int64)
    elif "value_ints" in a:
        array = np.array(a["value_ints"], dtype=np.int64)
    else:
        raise _unsupported(f"Constant with attribute {sorted(a)}")
    c.values[node.output[0]] = c.const(array, node.output[0])


@_converts("ConstantOfShape")
def _constant_of_shape(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    shape = [int(v) for v in c.const_input(node, 0, "shape").reshape(-1)]
    fill = _tensor_array(c.onnx, a["value"]).reshape(-1) if "value" in a else np.zeros(1, np.float32)
    if any(d < 0 for d in shape) or fill.size != 1:
        raise _invalid(f"ConstantOfShape of shape {shape} with a {fill.size}-element value (a shape of sizes >= 0 and "
                       "one value are needed)")
    size = math.prod(shape) * fill.dtype.itemsize
    if size > MAX_COMPUTED_CONSTANT_BYTES:
        raise _unsupported(f"ConstantOfShape of shape {shape} would be a {size:,}-byte constant (at most "
                           f"{MAX_COMPUTED_CONSTANT_BYTES:,} are supported)")
    c.values[node.output[0]] = c.const(np.full(shape, fill[0], dtype=fill.dtype), node.output[0])


@_converts("Shape")
def _shape(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    dims = list(x.type.shape)
    rank = len(dims)
    start, end = int(a.get("start", 0)), int(a.get("end", rank))
    start, end = (start + rank if start < 0 else start), (end + rank if end < 0 else end)
    dims = dims[max(start, 0):min(end, rank)]
    c.values[node.output[0]] = c.const(np.array(dims, dtype=np.int64), node.output[0])


@_converts("Size")
def _size(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    c.values[node.output[0]] = c.const(np.array(x.type.num_elements, dtype=np.int64), node.output[0])


@_converts("Gather")
def _gather(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x, indices = c.value(node.input[0]), c.value(node.input[1])
    axis = int(a.get("axis", 0)) % max(len(x.type.shape), 1)
    idx = c.data(indices)
    if idx is not None and indices.type.dtype == "int64":
        indices = c.const(idx.astype(np.int32), f"{node.output[0]}/indices")
    c.emit("GATHER", [x, indices], [c.output(node, quant=x.type.quant)], {"axis": axis, "batch_dims": 0})


@_converts("Cast")
def _cast(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    to = int(a["to"])
    if to not in _DTYPES:
        raise _unsupported(f"Cast to {_DTYPE_NAMES.get(to, to)}")
    dtype = _DTYPES[to]
    if dtype == x.type.dtype:
        c.unary("IDENTITY", x, node, {"source": "Cast"})
        return
    c.unary("CAST", x, node)


def _qparams(c: _Converter, node: Any, a: dict[str, Any], shape: Sequence[int]) -> tuple[QuantParams, str]:
    scale = c.const_input(node, 1, "scale").astype(np.float64).reshape(-1)
    zp_v = c.optional(node, 2)
    zp_array = c.const_input(node, 2, "zero_point").reshape(-1) if zp_v is not None else np.zeros(1, np.int8)
    dtype = str(zp_array.dtype) if zp_v is not None else "int8"
    if dtype not in ("int8", "uint8", "int16", "int32"):
        raise _unsupported(f"quantization to {dtype}")
    if a.get("block_size", 0):
        raise _unsupported("blocked quantization")
    zps = [int(z) for z in zp_array]
    if dtype == "uint8":  # same real values in int8: q - 128 with zero point - 128
        zps, dtype = [z - 128 for z in zps], "int8"
    if len(zps) == 1 and len(scale) > 1:
        zps = zps * len(scale)
    if not len(scale) or len(zps) != len(scale):
        raise _invalid(f"{len(scale)} scales and {len(zps)} zero points (one each per tensor or per channel)")
    rank = len(shape)
    axis = int(a.get("axis", 1)) if len(scale) > 1 else 0
    if len(scale) > 1 and (not -rank <= axis < rank or shape[axis % rank] != len(scale)):
        raise _invalid(f"{len(scale)} per-channel scales do not match axis {axis} of shape {list(shape)}")
    axis %= max(rank, 1)
    if not all(math.isfinite(s) and s > 0 for s in scale):
        raise _invalid("quantization scales must be finite and positive")
    return QuantParams(tuple(float(s) for s in scale), tuple(zps), axis), dtype


@_converts("QuantizeLinear")
def _quantize(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    quant, dtype = _qparams(c, node, a, x.type.shape)
    c.emit("QUANTIZE", [x], [c.output(node, dtype=dtype, shape=x.type.shape, quant=quant)])


@_converts("DequantizeLinear")
def _dequantize(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    quant, dtype = _qparams(c, node, a, x.type.shape)
    if x.type.dtype not in ("int8", "uint8", "int16", "int32"):
        raise _invalid(f"DequantizeLinear of a {x.type.dtype} tensor (an integer tensor is needed)")
    if x.data is not None:
        data = x.data.astype(np.int16) - 128 if x.type.dtype == "uint8" else x.data
        x = c.const(data.astype(np.dtype(dtype)), x.name, quant)
    elif x.type.dtype == "uint8" or x.type.quant != quant:
        if x.type.quant is not None:
            raise _unsupported("DequantizeLinear with other parameters than the QuantizeLinear before it")
        raise _unsupported("DequantizeLinear of a run-time tensor that no QuantizeLinear produced")
    out = c.output(node, dtype="float32", shape=x.type.shape)
    c.emit("DEQUANTIZE", [x], [out])


@_converts("Reciprocal")
def _reciprocal(c: _Converter, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    c.emit("DIV", [c.const(np.array(1.0, dtype=np.float32), f"{node.output[0]}/one"), x], [c.output(node)],
           {"fused_activation_function": "NONE"})


# --- the model -----------------------------------------------------------------------------------
def _fix_symbolic_dims(model: Any) -> None:
    """Fixed shapes: every symbolic or unknown input dimension (usually the batch) becomes 1."""
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        for dim in tensor.shape.dim:
            if not dim.HasField("dim_value") or dim.dim_value <= 0:
                dim.Clear()
                dim.dim_value = 1


def _check_declared_shapes(model: Any, path: str | Path) -> None:
    """Every shape the file declares (inputs, outputs, value_info) is within MAX_TENSOR_BYTES."""
    graph = model.graph
    for info in [*graph.input, *graph.value_info, *graph.output]:
        tensor = info.type.tensor_type
        # (a negative dimension is left to shape inference: some exporters write -1 for "unknown")
        dims = [d.dim_value for d in tensor.shape.dim if d.HasField("dim_value") and d.dim_value >= 0]
        size = math.prod(dims) * _ELEMENT_BYTES.get(tensor.elem_type, 1)
        if size > MAX_TENSOR_BYTES:
            raise InvalidModelError(f"{path}: tensor {info.name!r} is declared with shape {dims}, {size:,} bytes; the "
                                    "shape is corrupt (nn2c compiles for microcontrollers)")


_ELEMENT_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 14: 8, 15: 16, 16: 2}


def _value_types(model: Any) -> dict[str, tuple[str, tuple[int, ...]]]:
    types: dict[str, tuple[str, tuple[int, ...]]] = {}
    graph = model.graph
    for info in [*graph.input, *graph.value_info, *graph.output]:
        tensor = info.type.tensor_type
        if not tensor.HasField("shape") or tensor.elem_type not in _DTYPES:
            continue
        dims = []
        for dim in tensor.shape.dim:
            if not dim.HasField("dim_value") or dim.dim_value < 0:
                break
            dims.append(int(dim.dim_value))
        else:
            types[info.name] = (_DTYPES[tensor.elem_type], tuple(dims))
    return types


def _import(model: Any, source: str, nhwc_io: bool) -> Graph:
    import onnx

    c = _Converter(model, source, nhwc_io)
    if not MIN_OPSET <= c.opset <= MAX_OPSET:
        raise UnsupportedOpError(f"{source}: ONNX opset {c.opset} is not supported "
                                 f"(opsets {MIN_OPSET} to {MAX_OPSET} are)")
    c.types = _value_types(model)
    graph = c.graph
    initializers = {t.name: t for t in model.graph.initializer}
    for name, tensor in initializers.items():
        try:
            c.values[name] = c.const(_tensor_array(onnx, tensor), name)
        except _NodeError as exc:
            kind = UnsupportedOpError if exc.unsupported else InvalidModelError
            raise kind(f"{source}: initializer {name!r}: {exc}") from None
    for info in model.graph.input:
        if info.name in initializers:
            continue
        dtype, shape = _input_type(c, info.name)
        try:
            if nhwc_io and len(shape) in (3, 4) and dtype == "float32":
                nhwc = c.new(info.name, dtype, [shape[p] for p in to_nhwc_perm(len(shape))])
                graph.inputs.append(nhwc)
                c.node_index, c.node_name = -1, f"{info.name}/to_onnx_layout"
                c.values[info.name] = c.transpose(nhwc, to_nchw_perm(len(shape)), f"{info.name}/nchw")
            else:
                value = c.new(info.name, dtype, shape)
                graph.inputs.append(value)
                c.values[info.name] = value
        except _NodeError as exc:
            raise InvalidModelError(f"{source}: graph input {info.name!r}: {exc}") from None
    for index, node in enumerate(model.graph.node):
        c.node_index, c.node_name = index, node.name
        where = f"{source}: ONNX node #{index} {node.name!r} ({node.op_type})"
        if node.domain not in ("", "ai.onnx"):
            raise UnsupportedOpError(f"{where}: operators of domain {node.domain!r} are not supported")
        converter = _CONVERTERS.get(node.op_type)
        if converter is None:
            raise UnsupportedOpError(f"{where}: operator {node.op_type} is not supported by nn2c's ONNX frontend")
        try:
            converter(c, node, _attributes(onnx, node))
        except _NodeError as exc:
            kind = UnsupportedOpError if exc.unsupported else InvalidModelError
            raise kind(f"{where}: {exc}") from None
        except NN2CError:
            raise
        except (KeyError, IndexError, ValueError, TypeError, AssertionError, OverflowError, ZeroDivisionError) as exc:
            detail = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise InvalidModelError(f"{where}: malformed node ({type(exc).__name__}: {detail}); fix or re-export the "
                                    "model") from None
    c.node_index, c.node_name = len(model.graph.node), "graph outputs"
    for info in model.graph.output:
        if info.name not in c.values:
            raise InvalidModelError(f"{source}: graph output {info.name!r} is never produced")
        value = c.values[info.name]
        rank = len(value.type.shape)
        if nhwc_io and rank in (3, 4) and value.type.dtype == "float32" and not value.is_constant:
            value.name = c.unique(f"{info.name}/onnx_layout")
            out = c.transpose(value, to_nhwc_perm(rank), info.name)
            c.used_names.add(info.name)
            out.name = info.name
            value = out
        if value in graph.inputs or value.is_constant or value in graph.outputs:
            copy = c.new(info.name, value.type.dtype, value.type.shape, value.type.quant)
            c.emit("IDENTITY", [value], [copy], {"source": "graph output"})
            value = copy
        graph.outputs.append(value)
    graph.metadata.update({
        "source_format": "onnx", "opset": c.opset, "description": model.doc_string or "",
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "io_layout": "nhwc" if nhwc_io else "model",
        "input_perms": [to_nhwc_perm(len(_input_type(c, i.name)[1])) if nhwc_io and
                        len(_input_type(c, i.name)[1]) in (3, 4) else None
                        for i in model.graph.input if i.name not in initializers],
        "output_perms": [to_nhwc_perm(len(v.type.shape)) if nhwc_io and len(v.type.shape) in (3, 4) and
                         v.type.dtype == "float32" else None for v in graph.outputs],
    })
    return graph


def _tensor_array(onnx: Any, tensor: Any) -> np.ndarray:
    """A TensorProto's array: its data must be in the file and agree with its type and dims."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.external_data:
        raise _invalid("the data is in an external file, which nn2c does not read; save the model as one "
                       "file (onnx.save_model(model, path, save_as_external_data=False))")
    dims = [int(d) for d in tensor.dims]
    if any(d < 0 for d in dims):
        raise _invalid(f"negative dimension in {dims}")
    try:
        array = onnx.numpy_helper.to_array(tensor)
    except Exception as exc:  # data of the wrong length, an unknown data type, ...
        detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise _invalid(f"its data does not match its type {tensor.data_type} and dims {dims} ({detail}); "
                       "re-export the model") from None
    if list(array.shape) != dims:
        raise _invalid(f"its data has shape {list(array.shape)}, its dims say {dims}; re-export the model")
    return array


def _input_type(c: _Converter, name: str) -> tuple[str, tuple[int, ...]]:
    if name not in c.types:
        raise UnsupportedOpError(f"{c.source}: graph input {name!r} has no static shape and type; export the "
                                 "model with fixed input shapes")
    return c.types[name]


def check_onnx(path: str | Path, data: bytes | None = None) -> Any:
    """onnx.load + onnx.checker: a ModelProto, or one InvalidModelError saying what is wrong."""
    import onnx

    path = Path(path)
    try:
        model = onnx.load_from_string(data if data is not None else path.read_bytes())
    except Exception as exc:  # protobuf DecodeError, ...
        detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise InvalidModelError(f"{path}: not a valid ONNX model ({detail}); re-export it") from None
    bad_text = _non_utf8_text(model)
    if bad_text is not None:
        raise InvalidModelError(f"{path}: {bad_text} is not valid UTF-8 text, as ONNX requires; re-export the model")
    # before the checker, which looks external files up (relative to the working directory)
    external = next(_external_tensors(onnx, model.graph), None)
    if external is not None:
        raise InvalidModelError(
            f"{path}: tensor {external!r} keeps its data in an external file, which nn2c does not read (it reads "
            "only the model file); save the model as one file: onnx.save_model(model, path, "
            "save_as_external_data=False)")
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # ValidationError, ...
        detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise InvalidModelError(f"{path}: not a valid ONNX model ({detail}); re-export it") from None
    return model


def _non_utf8_text(model: Any) -> str | None:
    """Which name or text of the model is not UTF-8 (protobuf then hands out bytes instead of str)."""
    graph = model.graph
    texts: list[tuple[str, Any]] = [("the producer name", model.producer_name),
                                    ("the producer version", model.producer_version),
                                    ("the doc string", model.doc_string), ("the graph name", graph.name),
                                    *((f"opset domain #{k}", o.domain) for k, o in enumerate(model.opset_import))]
    for kind, infos in (("graph input", graph.input), ("graph output", graph.output),
                        ("value_info", graph.value_info), ("initializer", graph.initializer)):
        texts += [(f"the name of {kind} #{k}", info.name) for k, info in enumerate(infos)]
    for k, node in enumerate(graph.node):
        texts += [(f"the name of node #{k}", node.name), (f"the op type of node #{k}", node.op_type),
                  (f"the domain of node #{k}", node.domain)]
        texts += [(f"an input name of node #{k}", name) for name in node.input]
        texts += [(f"an output name of node #{k}", name) for name in node.output]
        texts += [(f"an attribute name of node #{k}", attr.name) for attr in node.attribute]
    return next((what for what, text in texts if not isinstance(text, str)), None)


def _external_tensors(onnx: Any, graph: Any) -> Iterator[str]:
    """Names of the tensors of `graph` (and its subgraphs) whose data lives in another file."""
    def external(tensor: Any) -> bool:
        return tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data) > 0

    tensors = [*graph.initializer, *(t for s in graph.sparse_initializer for t in (s.values, s.indices))]
    for node in graph.node:
        for attr in node.attribute:
            tensors += [attr.t, *attr.tensors, *(t for s in (attr.sparse_tensor, *attr.sparse_tensors)
                                                 for t in (s.values, s.indices))]
            for sub in (attr.g, *attr.graphs):
                yield from _external_tensors(onnx, sub)
    for tensor in tensors:
        if external(tensor):
            yield tensor.name or "(unnamed)"


def load_onnx(path: str | Path, data: bytes | None = None, nhwc_io: bool = False) -> Graph:
    """Read an .onnx file into a Graph. nhwc_io: rank-3/4 float inputs and outputs become channels-last."""
    import onnx
    reset_fresh_names()  # a new model: the passes' new tensor names start again (deterministic output)

    model = check_onnx(path, data)
    _fix_symbolic_dims(model)
    _check_declared_shapes(model, path)  # ONNX shape inference can take minutes on absurd shapes
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:
        raise InvalidModelError(f"{path}: ONNX shape inference failed ({str(exc).splitlines()[0][:200]})") from None
    graph = _import(model, str(path), nhwc_io)
    try:
        verify(graph)
    except GraphInvariantError as exc:
        raise InvalidModelError(f"{path}: the model's graph is inconsistent ({exc}); re-export the model") from None
    return graph
