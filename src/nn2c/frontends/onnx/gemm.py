"""Gemm, MatMul -> FULLY_CONNECTED (constant weights) or BATCH_MATMUL (run-time operands).

Gemm is Y = alpha * A' B' + beta * C with A' = A or A^T, B' = B or B^T. With a constant B,
FULLY_CONNECTED computes x W^T + bias, so its weights are W = B'^T (B^T, or B itself when transB),
times alpha (folded into constant weights), and a transA becomes a TRANSPOSE of the input. beta * C
is the bias when it has one value per output (shape [N], [1, N], ...); any other broadcastable C is
an ADD after the product (a run-time C with beta != 1 is a MUL by beta first). With a run-time B,
the product is BATCH_MATMUL(A, B, adj_x = transA, adj_y = transB), then MUL by alpha, ADD of C.

MatMul with a constant (or dequantized constant) 2-D B and an input of rank >= 2 is
FULLY_CONNECTED with W = B^T (keep_num_dims keeps the leading axes of a rank > 2 input). Anything
else (two run-time operands, a constant of rank > 2, 1-D operands) is BATCH_MATMUL with numpy
broadcasting of the batch axes: a 1-D A is a [1, K] row, a 1-D B a [K, 1] column, and the unit axis
is dropped from the result by a RESHAPE.
Det -> DET: the determinant of each [n, n] matrix of a float32 [..., n, n] input.
CausalConvWithState -> CAUSAL_CONV (activation "none", or "silu" / "swish": the same x sigmoid(x)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import ConversionContext, converts, invalid, unsupported
from nn2c.ir import Value

_NONE = {"fused_activation_function": "NONE"}


def _constant_weights(c: ConversionContext, b: Value) -> bool:
    return c.data(b) is not None or (b.producer is not None and b.producer.op == "DEQUANTIZE")


def _scaled(c: ConversionContext, x: Value, factor: float, name: str) -> Value:
    """x * factor: folded into a constant, a MUL by a scalar otherwise."""
    if factor == 1.0:
        return x
    data = c.data(x)
    if data is not None and x.type.quant is None:
        return c.const(np.asarray(data, dtype=np.float32) * np.float32(factor), name)
    if x.type.dtype != "float32":
        raise unsupported(f"a factor {factor:g} on the {x.type.dtype} tensor {x.name!r}")
    out = c.new(name, "float32", x.type.shape)
    c.emit("MUL", [x, c.const(np.array(factor, dtype=np.float32), f"{name}/factor")], [out], _NONE)
    return out


@converts("Gemm")
def _gemm(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, b = c.value(node.input[0]), c.value(node.input[1])
    if len(x.type.shape) != 2 or len(b.type.shape) != 2:
        raise invalid("Gemm needs 2-D inputs")
    if not _constant_weights(c, b):
        _gemm_runtime(c, node, a, x, b)
        return
    name = node.output[0]
    if a.get("transA", 0):
        x = c.transpose(x, (1, 0), f"{name}/a_t")
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    weights = c.relayout(b, b.type.shape, (0, 1) if a.get("transB", 0) else (1, 0), f"{name}/weights")
    if alpha != 1.0:
        data = c.data(weights)
        if data is None or weights.type.quant is not None:
            raise unsupported("alpha != 1 with quantized weights")
        weights = c.const(data * np.float32(alpha), f"{name}/weights_alpha")
    n_out = weights.type.shape[0]
    bias = c.optional(node, 2)
    bias_in: Value | None = None
    add_after: Value | None = None
    if bias is not None:
        if beta != 1.0:
            if bias.type.quant is not None:
                raise unsupported("beta != 1 with a quantized C")
            bias = _scaled(c, bias, beta, f"{name}/bias_beta")
        if bias.type.num_elements == n_out and bias.type.shape[-1:] == (n_out,):
            bias_in = bias if len(bias.type.shape) == 1 else c.relayout(bias, (n_out,), (0,), f"{name}/bias")
        else:
            add_after = bias
    out_dtype, out_shape = c.out_type(name)
    if add_after is None:
        out = c.output(node)
        c.emit("FULLY_CONNECTED", [x, weights, bias_in], [out], _NONE)
        return
    mm = c.new(f"{name}/mm", out_dtype, out_shape)
    c.emit("FULLY_CONNECTED", [x, weights, None], [mm], _NONE)
    c.emit("ADD", [mm, add_after], [c.output(node)], _NONE)


def _gemm_runtime(c: ConversionContext, node: Any, a: dict[str, Any], x: Value, b: Value) -> None:
    """Gemm with a run-time B: BATCH_MATMUL, then alpha and beta * C as element-wise operators."""
    name = node.output[0]
    out_dtype, out_shape = c.out_type(name)
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    bias = c.optional(node, 2)
    steps = int(alpha != 1.0) + int(bias is not None)
    product = c.output(node) if steps == 0 else c.new(f"{name}/mm", out_dtype, out_shape)
    c.emit("BATCH_MATMUL", [x, b], [product], {"adj_x": bool(a.get("transA", 0)), "adj_y": bool(a.get("transB", 0))})
    if alpha != 1.0:
        scaled = c.output(node) if bias is None else c.new(f"{name}/alpha", out_dtype, out_shape)
        c.emit("MUL", [product, c.const(np.array(alpha, dtype=np.float32), f"{name}/alpha_factor")], [scaled], _NONE)
        product = scaled
    if bias is not None:
        c.emit("ADD", [product, _scaled(c, bias, beta, f"{name}/bias_beta")], [c.output(node)], _NONE)


@converts("MatMul")
def _matmul(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, b = c.value(node.input[0]), c.value(node.input[1])
    if len(b.type.shape) == 2 and len(x.type.shape) >= 2 and _constant_weights(c, b):
        weights = c.relayout(b, b.type.shape, (1, 0), f"{node.output[0]}/weights")
        out = c.output(node)
        c.emit("FULLY_CONNECTED", [x, weights, None], [out],
               {"fused_activation_function": "NONE", "keep_num_dims": len(x.type.shape) > 2})
        return
    batch_matmul(c, node, x, b)


def batch_matmul(c: ConversionContext, node: Any, x: Value, b: Value) -> None:
    """numpy matmul of two values (any rank >= 1) into the node's first output."""
    name = node.output[0]
    if not x.type.shape or not b.type.shape:
        raise invalid("MatMul of a scalar")
    if len(x.type.shape) == 1:
        x = c.reshape(x, (1, x.type.shape[0]), f"{name}/a_row")
    if len(b.type.shape) == 1:
        b = c.reshape(b, (b.type.shape[0], 1), f"{name}/b_column")
    out = c.output(node)
    ls, rs = x.type.shape, b.type.shape
    rank = max(len(ls), len(rs))
    lb, rb = (1,) * (rank - len(ls)) + ls[:-2], (1,) * (rank - len(rs)) + rs[:-2]
    if any(p != q and 1 not in (p, q) for p, q in zip(lb, rb, strict=True)):
        raise invalid(f"MatMul batch dimensions {list(ls[:-2])} and {list(rs[:-2])} do not broadcast")
    shape = (*tuple(max(p, q) if min(p, q) else 0 for p, q in zip(lb, rb, strict=True)), ls[-2], rs[-1])
    if shape == out.type.shape:
        c.emit("BATCH_MATMUL", [x, b], [out], {"adj_x": False, "adj_y": False})
        return
    product = c.new(f"{name}/mm", out.type.dtype, shape)
    c.emit("BATCH_MATMUL", [x, b], [product], {"adj_x": False, "adj_y": False})
    c.emit("RESHAPE", [product, c.int32(list(out.type.shape), f"{name}/shape")], [out])


@converts("Det")
def _det(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x = c.value(node.input[0])
    shape = list(x.type.shape)
    if x.type.dtype != "float32":
        raise unsupported(f"Det of {x.type.dtype} (float32 is supported)")
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise invalid(f"Det of shape {shape}; it needs square matrices [..., n, n]")
    c.emit("DET", [x], [c.output(node, 0, "float32", shape[:-2])])


@converts("CausalConvWithState")
def _causal_conv(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, w = c.value(node.input[0]), c.value(node.input[1])
    bias, past = c.optional(node, 2), c.optional(node, 3)
    activation = str(a.get("activation", "none")).lower()
    if activation not in ("none", "silu", "swish"):
        raise invalid(f"activation {activation!r}; it must be none, silu or swish")
    if len(x.type.shape) != 3 or len(w.type.shape) != 3:
        raise invalid(f"input {list(x.type.shape)} and weight {list(w.type.shape)} must both be rank 3")
    batch, channels, length = x.type.shape
    k = w.type.shape[2]
    if w.type.shape[:2] != (channels, 1) or k < 1:
        raise invalid(f"weight {list(w.type.shape)} must be [channels={channels}, 1, kernel >= 1]")
    if bias is not None and bias.type.shape != (channels,):
        raise invalid(f"bias {list(bias.type.shape)} must be [{channels}]")
    if past is not None and past.type.shape != (batch, channels, k - 1):
        raise invalid(f"past_state {list(past.type.shape)} must be [{batch}, {channels}, {k - 1}]")
    if any(v is not None and v.type.dtype != "float32" for v in (x, w, bias, past)):
        raise unsupported("CausalConvWithState of a non-float32 tensor (float32 is supported)")
    out = c.output(node, 0, "float32", (batch, channels, length))
    if len(node.output) > 1 and node.output[1]:
        present = c.output(node, 1, "float32", (batch, channels, k - 1))
    else:
        present = c.new(f"{node.output[0]}/present_state", "float32", (batch, channels, k - 1))
    c.emit("CAUSAL_CONV", [x, w, bias, past], [out, present],
           {"activation": "none" if activation == "none" else "silu"})
