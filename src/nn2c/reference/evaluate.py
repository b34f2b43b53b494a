"""Numpy reference semantics of IR nodes, for constant folding, pass tests and calibration.

Every node is evaluated on the arrays of its inputs as stored (int8 data stays int8) and returns
arrays in its outputs' dtypes. Arithmetic is done on real numbers: a quantized input is
dequantized, real = scale * (q - zero_point) (per channel along quant.axis), the operator is
applied in float64, and a quantized output is re-quantized, q = clamp(round(real / scale) + zp).
This is the float model of the graph, not TFLite's integer arithmetic: int8 kernels agree with it
to about one quantization step. Data movement (reshape, transpose, slices, concatenation, pad,
gather, split) copies raw elements when the quantization does not change.

Layout conventions follow TFLite: NHWC activations, CONV_2D filters OHWI, DEPTHWISE_CONV_2D
filters 1HWO (output channel c * multiplier + k reads input channel c), FULLY_CONNECTED weights
[out, in], SAME padding puts the odd pixel at the end, average pooling divides by the number of
in-bounds taps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

import numpy as np

from nn2c.ir import Graph, Node, numpy_dtype
from nn2c.ir.ops import ops_where
from nn2c.reference.registry import EVALUATORS, load_families
from nn2c.reference.values import Arrays, ReferenceError, real, store


def _activation(x: np.ndarray, name: str | None) -> np.ndarray:
    name = name or "NONE"
    if name == "NONE":
        return x
    if name == "RELU":
        return np.maximum(x, 0.0)
    if name == "RELU6":
        return np.clip(x, 0.0, 6.0)
    if name == "RELU_N1_TO_1":
        return np.clip(x, -1.0, 1.0)
    if name == "RELU_0_TO_1":
        return np.clip(x, 0.0, 1.0)
    if name == "TANH":
        return np.tanh(x)
    if name == "SIGN_BIT":
        return np.signbit(x).astype(x.dtype)
    raise ReferenceError(f"fused activation {name} is not known")


def _ints(array: np.ndarray | None, what: str) -> list[int]:
    if array is None:
        raise ReferenceError(f"the {what} input is missing")
    return [int(v) for v in np.asarray(array).reshape(-1)]


# --- data movement -------------------------------------------------------------------------------
def _same_quant(node: Node) -> bool:
    """Raw element copies are right only when no tensor changes its quantization."""
    quants = {v.type.quant for v in node.inputs[:1] if v is not None} | {v.type.quant for v in node.outputs}
    if node.op == "CONCATENATION":
        quants |= {v.type.quant for v in node.inputs if v is not None}
    return len(quants) <= 1


def _moved(node: Node, arrays: Arrays, move: Callable[[list[np.ndarray]], list[np.ndarray]]) -> list[np.ndarray]:
    """Apply a data movement on raw arrays, or on reals when quantization changes."""
    data_inputs = _data_input_positions(node)
    if _same_quant(node):
        picked = [np.asarray(arrays[i]) for i in data_inputs]
        return [np.asarray(r).reshape(o.type.shape).astype(numpy_dtype(o.type.dtype), copy=False)
                for r, o in zip(move(picked), node.outputs, strict=True)]
    picked = [real(node.inputs[i], np.asarray(arrays[i])) for i in data_inputs]  # type: ignore[arg-type]
    return [store(o, r) for r, o in zip(move(picked), node.outputs, strict=True)]


def _data_input_positions(node: Node) -> list[int]:
    if node.op in ("CONCATENATION", "PACK"):
        return [i for i, v in enumerate(node.inputs) if v is not None]
    if node.op == "SPLIT":
        return [1]
    return [0]


def _strided_slice(node: Node, x: np.ndarray, arrays: Arrays) -> np.ndarray:
    a = node.attrs
    if a.get("ellipsis_mask", 0) or a.get("new_axis_mask", 0):
        raise ReferenceError("STRIDED_SLICE with ellipsis or new-axis masks")
    begin, end, strides = (_ints(arrays[i], n) for i, n in ((1, "begin"), (2, "end"), (3, "strides")))
    index = []
    for axis, size in enumerate(x.shape):
        b, e, s = begin[axis], end[axis], strides[axis]
        if a.get("shrink_axis_mask", 0) >> axis & 1:
            index.append(b + size if b < 0 else b)
            continue
        if a.get("begin_mask", 0) >> axis & 1:
            b = 0 if s > 0 else size - 1
        else:
            b = b + size if b < 0 else b
            b = min(max(b, 0), size) if s > 0 else min(max(b, -1), size - 1)
        if a.get("end_mask", 0) >> axis & 1:
            stop = range(b, size, s) if s > 0 else range(b, -1, s)
        else:
            e = e + size if e < 0 else e
            e = min(max(e, 0), size) if s > 0 else min(max(e, -1), size - 1)
            stop = range(b, e, s)
        index.append(list(stop))
    out = x
    for axis in reversed(range(x.ndim)):
        out = np.take(out, index[axis], axis=axis)
    return out


def _slice(x: np.ndarray, begin: list[int], size: list[int]) -> np.ndarray:
    return x[tuple(slice(b, x.shape[d] if s < 0 else b + s) for d, (b, s) in enumerate(zip(begin, size, strict=True)))]


def _pad(node: Node, x: np.ndarray, arrays: Arrays, raw: bool) -> np.ndarray:
    pads = np.asarray(_ints(arrays[1], "paddings")).reshape(-1, 2)
    if node.op == "PADV2" and node.input(2) is not None:
        fill = np.asarray(arrays[2]).reshape(-1)[0]
        if not raw:
            fill = real(node.inputs[2], np.asarray(arrays[2])).reshape(-1)[0]  # type: ignore[arg-type]
    else:
        quant = node.outputs[0].type.quant
        fill = quant.zero_point[0] if raw and quant is not None and node.outputs[0].type.dtype == "int8" else 0
    return np.pad(x, [tuple(p) for p in pads.tolist()], constant_values=fill)


def _movement(node: Node, arrays: Arrays) -> list[np.ndarray]:
    op, a = node.op, node.attrs
    raw = _same_quant(node)
    if op in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "IDENTITY"):
        return _moved(node, arrays, lambda xs: [xs[0].reshape(node.outputs[0].type.shape)])
    if op == "TRANSPOSE":
        perm = _ints(arrays[1], "perm")
        return _moved(node, arrays, lambda xs: [np.transpose(xs[0], perm)])
    if op == "CONCATENATION":
        return _moved(node, arrays, lambda xs: [np.concatenate(xs, axis=int(a.get("axis", 0)))])
    if op == "PACK":  # TFLite's stack: the converter packs shape pieces for a RESHAPE
        return _moved(node, arrays, lambda xs: [np.stack(xs, axis=int(a.get("axis", 0)))])
    if op == "SPLIT":
        axis = _ints(arrays[0], "axis")[0]
        return _moved(node, arrays, lambda xs: np.split(xs[0], int(a.get("num_splits", len(node.outputs))), axis=axis))
    if op == "SPLIT_V":
        sizes, axis = _ints(arrays[1], "size_splits"), _ints(arrays[2], "axis")[0]
        def split_v(xs: list[np.ndarray]) -> list[np.ndarray]:
            ax = axis % xs[0].ndim
            total = xs[0].shape[ax]
            sizes_ = [total - (sum(sizes) + 1) if s < 0 else s for s in sizes]
            return np.split(xs[0], np.cumsum(sizes_)[:-1], axis=ax)
        return _moved(node, arrays, split_v)
    if op == "STRIDED_SLICE":
        return _moved(node, arrays, lambda xs: [_strided_slice(node, xs[0], arrays)])
    if op == "SLICE":
        begin, size = _ints(arrays[1], "begin"), _ints(arrays[2], "size")
        return _moved(node, arrays, lambda xs: [_slice(xs[0], begin, size)])
    if op in ("PAD", "PADV2"):
        return _moved(node, arrays, lambda xs: [_pad(node, xs[0], arrays, raw)])
    if op == "GATHER":
        indices = np.asarray(arrays[1]).astype(np.int64)
        axis = int(a.get("axis", 0))
        if int(a.get("batch_dims", 0)):
            raise ReferenceError("GATHER with batch_dims")
        def gather(xs: list[np.ndarray]) -> list[np.ndarray]:
            idx = np.where(indices < 0, indices + xs[0].shape[axis], indices)
            return [np.take(xs[0], idx, axis=axis)]
        return _moved(node, arrays, gather)
    raise ReferenceError(f"{op} is not a data movement")


MOVEMENT_OPS = ops_where(lambda info: info.kind in ("movement", "reshape"))


# --- arithmetic ----------------------------------------------------------------------------------
def _binary(op: str, a: np.ndarray, b: np.ndarray, integer: bool) -> np.ndarray:
    if op == "ADD":
        return a + b
    if op == "SUB":
        return a - b
    if op == "MUL":
        return a * b
    if op == "DIV":
        if integer:
            return np.trunc(a / b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return a / b
    if op == "MAXIMUM":
        return np.maximum(a, b)
    if op == "MINIMUM":
        return np.minimum(a, b)
    raise ReferenceError(op)


_INTEGER_DTYPES = ("int8", "uint8", "int16", "int32", "int64")


def _integer_binary(op: str, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """Unquantized integers exactly, as the kernels compute them: ADD / SUB / MUL wrap modulo
    2^bits (in int64, then narrowed; int64 itself wraps), DIV truncates towards zero with 0 for a
    zero divisor and MIN for MIN / -1."""
    a64, b64 = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if op == "DIV":
            safe = np.where(b64 == 0, 1, b64)
            quotient = np.abs(a64) // np.abs(safe)  # MIN / -1 overflows back to MIN, as the kernel
            y = np.where(b64 == 0, 0, np.where((a64 < 0) != (safe < 0), -quotient, quotient))
        else:
            y = _binary(op, a64, b64, integer=True)
    return np.asarray(y).astype(numpy_dtype(dtype))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _softmax(x: np.ndarray, beta: float, log: bool = False) -> np.ndarray:
    z = (x - x.max(axis=-1, keepdims=True)) * beta
    if log:
        return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


_UNARY: dict[str, Callable[[np.ndarray, dict], np.ndarray]] = {
    "RELU": lambda x, a: np.maximum(x, 0.0),
    "RELU6": lambda x, a: np.clip(x, 0.0, 6.0),
    "RELU_N1_TO_1": lambda x, a: np.clip(x, -1.0, 1.0),
    "RELU_0_TO_1": lambda x, a: np.clip(x, 0.0, 1.0),
    "LEAKY_RELU": lambda x, a: np.where(x >= 0, x, x * float(a.get("alpha", 0.2))),
    "LOGISTIC": lambda x, a: _sigmoid(x),
    "TANH": lambda x, a: np.tanh(x),
    "HARD_SWISH": lambda x, a: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
    "SOFTMAX": lambda x, a: _softmax(x, float(a.get("beta", 1.0))),
    "LOG_SOFTMAX": lambda x, a: _softmax(x, 1.0, log=True),
    "QUANTIZE": lambda x, a: x,
    "DEQUANTIZE": lambda x, a: x,
}


def _explicit_pads(node: Node, in_hw: tuple[int, int], out_hw: tuple[int, int], k_hw: tuple[int, int],
                   s_hw: tuple[int, int], d_hw: tuple[int, int]) -> tuple[int, int]:
    """Top and left padding: explicit, or TFLite's SAME (odd pixel at the end), or 0 for VALID."""
    if "explicit_padding" in node.attrs:
        top, _, left, _ = node.attrs["explicit_padding"]
        return int(top), int(left)
    if node.attrs.get("padding", "VALID") != "SAME":
        return 0, 0
    pads = []
    for size, out, k, s, d in zip(in_hw, out_hw, k_hw, s_hw, d_hw, strict=True):
        pads.append(max((out - 1) * s + (k - 1) * d + 1 - size, 0) // 2)
    return pads[0], pads[1]


def _windows(x: np.ndarray, out_hw: tuple[int, int], k_hw: tuple[int, int], s_hw: tuple[int, int],
             d_hw: tuple[int, int], pads: tuple[int, int], fill: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Padded NHWC patches [N, Ho, Wo, Kh, Kw, C] and a mask of which taps are in bounds."""
    _, h, w, _ = x.shape
    (ho, wo), (kh, kw), (sh, sw), (dh, dw), (pt, pl) = out_hw, k_hw, s_hw, d_hw, pads
    need_h = (ho - 1) * sh + (kh - 1) * dh + 1
    need_w = (wo - 1) * sw + (kw - 1) * dw + 1
    pb, pr = max(need_h - h - pt, 0), max(need_w - w - pl, 0)
    padded = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)], constant_values=fill)
    mask = np.pad(np.ones((h, w), dtype=bool), [(pt, pb), (pl, pr)])
    rows = (np.arange(ho) * sh)[:, None] + np.arange(kh) * dh  # [Ho, Kh]
    cols = (np.arange(wo) * sw)[:, None] + np.arange(kw) * dw  # [Wo, Kw]
    patches = padded[:, rows[:, None, :, None], cols[None, :, None, :], :]  # [N, Ho, Wo, Kh, Kw, C]
    valid = mask[rows[:, None, :, None], cols[None, :, None, :]]  # [Ho, Wo, Kh, Kw]
    return patches, valid


def _conv(node: Node, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    a = node.attrs
    out_shape = node.outputs[0].type.shape
    k_hw = (w.shape[1], w.shape[2])
    s_hw = (int(a.get("stride_h", 1)), int(a.get("stride_w", 1)))
    d_hw = (int(a.get("dilation_hfactor", 1)), int(a.get("dilation_wfactor", 1)))
    out_hw = (out_shape[1], out_shape[2])
    pads = _explicit_pads(node, (x.shape[1], x.shape[2]), out_hw, k_hw, s_hw, d_hw)
    patches, _ = _windows(x, out_hw, k_hw, s_hw, d_hw, pads)
    n, ho, wo = x.shape[0], out_hw[0], out_hw[1]
    if node.op == "DEPTHWISE_CONV_2D":
        cout = w.shape[3]
        mult = cout // x.shape[3]
        rep = np.repeat(patches, mult, axis=-1)  # channel c*mult+k reads input channel c
        y = np.einsum("nhwijc,ijc->nhwc", rep, w[0])
    else:
        cout, _, _, cin_g = w.shape
        groups = x.shape[3] // cin_g
        per = cout // groups
        parts = []
        for g in range(groups):
            xp = patches[..., g * cin_g:(g + 1) * cin_g]
            wg = w[g * per:(g + 1) * per]
            parts.append(np.einsum("nhwijc,oijc->nhwo", xp, wg))
        y = np.concatenate(parts, axis=-1)
    if b is not None:
        y = y + b.reshape(-1)
    assert y.shape == (n, ho, wo, cout)
    return _activation(y, a.get("fused_activation_function"))


def _pool(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    out_shape = node.outputs[0].type.shape
    k_hw = (int(a.get("filter_height", 1)), int(a.get("filter_width", 1)))
    s_hw = (int(a.get("stride_h", 1)), int(a.get("stride_w", 1)))
    out_hw = (out_shape[1], out_shape[2])
    pads = _explicit_pads(node, (x.shape[1], x.shape[2]), out_hw, k_hw, s_hw, (1, 1))
    if node.op == "MAX_POOL_2D":
        patches, valid = _windows(x, out_hw, k_hw, s_hw, (1, 1), pads, fill=-np.inf)
        y = patches.max(axis=(3, 4))
    else:
        patches, valid = _windows(x, out_hw, k_hw, s_hw, (1, 1), pads)
        count = valid.sum(axis=(2, 3))[None, :, :, None]
        y = patches.sum(axis=(3, 4)) / np.maximum(count, 1)
    return _activation(y, a.get("fused_activation_function"))


def _fully_connected(node: Node, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    y = x.reshape(-1, w.shape[-1]) @ w.T
    if b is not None:
        y = y + b.reshape(-1)
    return _activation(y, node.fused_activation)


def _reduce(node: Node, x: np.ndarray, arrays: Arrays) -> np.ndarray:
    axes = tuple(sorted({d % x.ndim for d in _ints(arrays[1], "axes")})) if x.ndim else ()
    functions: dict[str, Callable[..., np.ndarray]] = {
        "MEAN": np.mean, "SUM": np.sum, "REDUCE_MAX": np.max, "REDUCE_MIN": np.min, "REDUCE_PROD": np.prod}
    return functions[node.op](x, axis=axes, keepdims=True)


def _arith(node: Node, arrays: Arrays) -> list[np.ndarray]:
    op = node.op
    out = node.outputs[0]
    if op in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM") and all(
            v is not None and v.type.dtype in _INTEGER_DTYPES and v.type.quant is None for v in [*node.inputs[:2], out]):
        if node.fused_activation != "NONE":
            raise ReferenceError(f"{op} of unquantized integers with a fused activation")
        a, b = (np.asarray(arr) for arr in arrays[:2])
        return [_integer_binary(op, a, b, out.type.dtype).reshape(out.type.shape)]
    xs = [None if v is None or arr is None else real(v, np.asarray(arr))
          for v, arr in zip(node.inputs, arrays, strict=False)]
    if op in _UNARY:
        assert xs[0] is not None
        y = _UNARY[op](xs[0], node.attrs)
    elif op in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM"):
        assert xs[0] is not None and xs[1] is not None
        integer = out.type.dtype in ("int32", "int64") and out.type.quant is None
        y = _activation(_binary(op, xs[0], xs[1], integer), node.fused_activation)
    elif op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        assert xs[0] is not None and xs[1] is not None
        y = _conv(node, xs[0], xs[1], xs[2] if len(xs) > 2 else None)
    elif op == "FULLY_CONNECTED":
        assert xs[0] is not None and xs[1] is not None
        y = _fully_connected(node, xs[0], xs[1], xs[2] if len(xs) > 2 else None)
    elif op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        assert xs[0] is not None
        y = _pool(node, xs[0])
    elif op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
        assert xs[0] is not None
        y = _reduce(node, xs[0], arrays)
    else:
        raise ReferenceError(f"the reference evaluator does not know {op}")
    return [store(out, y)]


def _cast(node: Node, arrays: Arrays) -> list[np.ndarray]:
    out = node.outputs[0]
    x = np.asarray(arrays[0])
    if out.type.dtype != "bool" and out.type.dtype != "float32" and x.dtype.kind == "f":
        x = np.trunc(np.nan_to_num(x))
    return [x.astype(numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


def _shape(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = node.inputs[0]
    assert x is not None
    out = node.outputs[0]
    return [np.asarray(x.type.shape, dtype=numpy_dtype(out.type.dtype)).reshape(out.type.shape)]


# the operators constant folding may evaluate; WHILE has an evaluator (whole-graph runs) but is
# never folded, since a loop on constants need not end
SUPPORTED_OPS = (frozenset(MOVEMENT_OPS | set(_UNARY) | {
    "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "CONV_2D",
    "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN", "SUM",
    "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "CAST", "SHAPE",
}) | frozenset(load_families())) - {"WHILE"}


def evaluate_node(node: Node, arrays: Arrays) -> list[np.ndarray]:
    """The node's outputs, given its input arrays (None for omitted optionals), in their dtypes."""
    if node.op in EVALUATORS:
        return EVALUATORS[node.op](node, arrays)
    if node.op in MOVEMENT_OPS:
        return _movement(node, arrays)
    if node.op == "CAST":
        return _cast(node, arrays)
    if node.op == "SHAPE":
        return _shape(node, arrays)
    if node.op == "LUT":  # int8 -> int8 through the stored table
        x, table = arrays[0], arrays[1]
        assert x is not None and table is not None
        return [table.reshape(-1)[x.astype(np.int32) + 128].astype(np.int8)]
    return _arith(node, arrays)


def run_graph(graph: Graph, inputs: Sequence[np.ndarray], keep: bool = False) -> list[np.ndarray] | dict[int, np.ndarray]:
    """Evaluate the whole graph on one record; `keep` returns every value by id() instead."""
    env: dict[int, np.ndarray] = {}
    for given, array in zip(graph.inputs, inputs, strict=True):
        env[id(given)] = np.asarray(array).reshape(given.type.shape)
    for node in graph.nodes:
        arrays: Arrays = []
        for value in node.inputs:
            if value is None:
                arrays.append(None)
            elif id(value) in env:
                arrays.append(env[id(value)])
            elif value.data is not None:
                arrays.append(value.data)
            else:
                raise ReferenceError(f"{node.where()}: input {value.name!r} has no value yet")
        for value, result in zip(node.outputs, evaluate_node(node, arrays), strict=True):
            env[id(value)] = result
    if keep:
        return env
    return [env[id(v)] if id(v) in env else np.asarray(v.data) for v in graph.outputs]


def num_elements(shape: Sequence[int]) -> int:
    return int(prod(shape))
