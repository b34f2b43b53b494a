"""Lowerings of QUANTIZE_LINEAR / DEQUANTIZE_LINEAR (ir/ops/quant.py) onto kernels/nn2c_quant.c.

No TFLite builtin has run-time quantization parameters; the semantics are ONNX's (onnxruntime's
and the ONNX reference's): quantize divides in float32, rounds half to even, adds the zero point
and saturates; dequantize multiplies the exact x - zero_point by the scale. The scale indexing
(per tensor, per axis, blocked) is ir/ops/quant.scale_layout.
"""

from __future__ import annotations

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.ir import Node, Value
from nn2c.ir.ops.quant import MAX_INTEGER_DEPTH, scale_layout

_SUFFIX = {"int8": "s8", "uint8": "u8", "int16": "s16", "int32": "s32"}


def _layout_fields(node: Node, ctx: EmitContext, x: Value, scale: Value, zero_point: Value | None,
                   integer: Value) -> dict[str, int]:
    if scale.type.dtype != "float32":
        raise ctx.unsupported(f"a {scale.type.dtype} scale (float32 is supported)")
    if zero_point is not None and (zero_point.type.dtype != integer.type.dtype
                                   or zero_point.type.shape != scale.type.shape):
        raise ctx.unsupported(f"zero point {zero_point.type} for scale {scale.type} and integer tensor "
                              f"{integer.type.dtype} (the zero point needs the scale's shape and the integer type)")
    try:
        layout = scale_layout(x.type.shape, scale.type.shape, int(node.attrs.get("axis", 0)),
                              int(node.attrs.get("block_size", 0)))
    except ValueError as error:
        raise ctx.unsupported(str(error)) from None
    return {"outer": layout.outer, "axis_len": layout.axis_len, "inner": layout.inner, "block": layout.block,
            "s_outer": layout.s_outer, "s_axis": layout.s_axis, "s_inner": layout.s_inner}


def _operands(node: Node, ctx: EmitContext) -> tuple[Value, Value, Value | None, Value]:
    x, scale = node.input(0), node.input(1)
    if x is None or scale is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected an input, a scale, an optional zero point and one output")
    out = node.outputs[0]
    if out.type.shape != x.type.shape:
        raise ctx.unsupported(f"input {x.type} and output {out.type} differ in shape")
    return x, scale, node.input(2), out


@lowering("QUANTIZE_LINEAR")
def quantize_linear(node: Node, ctx: EmitContext) -> None:
    x, scale, zero_point, out = _operands(node, ctx)
    if x.type.dtype != "float32" or out.type.dtype not in _SUFFIX:
        raise ctx.unsupported(f"quantizing {x.type.dtype} to {out.type.dtype} (float32 to int8, uint8, int16 "
                              "or int32 is supported)")
    _emit_linear(node, ctx, f"nn2c_quant_quantize_f32_{_SUFFIX[out.type.dtype]}", (x, scale, zero_point, out), out)


@lowering("DEQUANTIZE_LINEAR")
def dequantize_linear(node: Node, ctx: EmitContext) -> None:
    x, scale, zero_point, out = _operands(node, ctx)
    if x.type.dtype not in _SUFFIX or out.type.dtype != "float32":
        raise ctx.unsupported(f"dequantizing {x.type.dtype} to {out.type.dtype} (int8, uint8, int16 or int32 "
                              "to float32 is supported)")
    _emit_linear(node, ctx, f"nn2c_quant_dequantize_{_SUFFIX[x.type.dtype]}_f32", (x, scale, zero_point, out), x)


def _emit_linear(node: Node, ctx: EmitContext, function: str,
                 operands: tuple[Value, Value, Value | None, Value], quantized: Value) -> None:
    """One QuantizeLinear / DequantizeLinear call; the zero point has the quantized tensor's type."""
    x, scale, zero_point, out = operands
    fields = _layout_fields(node, ctx, x, scale, zero_point, quantized)
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("quant")
    ctx.call(function, ctx.params_struct("nn2c_quant_layout_t", fields), ctx.ptr(x), ctx.ptr(scale),
             ctx.ptr(zero_point), ctx.ptr(out))


_MATMUL_SUFFIX = {"uint8": "u8", "int8": "s8"}


@lowering("MATMUL_INTEGER")
def matmul_integer(node: Node, ctx: EmitContext) -> None:
    a, b = node.input(0), node.input(1)
    a_zp, b_zp = node.input(2), node.input(3)
    if a is None or b is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected two operands, optional zero points and one output")
    out = node.outputs[0]
    if a.type.dtype not in _MATMUL_SUFFIX or b.type.dtype not in _MATMUL_SUFFIX or out.type.dtype != "int32":
        raise ctx.unsupported(f"{a.type.dtype} x {b.type.dtype} -> {out.type.dtype} (int8 / uint8 operands, int32 "
                              "result are supported)")
    if len(b.type.shape) != 2 or not a.type.shape or a.type.shape[-1] != b.type.shape[0]:
        raise ctx.unsupported(f"operands {a.type} and {b.type} (a [..., K] and a 2-D b [K, N] are supported)")
    depth, cols = b.type.shape
    if depth > MAX_INTEGER_DEPTH:
        raise ctx.unsupported(f"a depth of {depth} (sums of more than {MAX_INTEGER_DEPTH} products may overflow int32)")
    if a_zp is not None and (a_zp.type.dtype != a.type.dtype or a_zp.type.num_elements != 1):
        raise ctx.unsupported(f"a zero point {a_zp.type} for a {a.type.dtype} operand (one value of its type)")
    if b_zp is not None and (b_zp.type.dtype != b.type.dtype or b_zp.type.num_elements not in (1, cols)):
        raise ctx.unsupported(f"b zero point {b_zp.type} for {cols} columns of {b.type.dtype}")
    rows = a.type.num_elements // depth if depth else 0
    if out.type.num_elements != rows * cols:
        raise ctx.unsupported(f"output {out.type} for {rows} rows and {cols} columns")
    if out.type.num_elements == 0:
        return
    if depth == 0:
        raise ctx.unsupported("a depth of 0")
    fields = {"rows": rows, "depth": depth, "cols": cols,
              "b_zero_point_per_column": int(b_zp is not None and b_zp.type.num_elements > 1)}
    ctx.use_kernel("quant")
    ctx.call(f"nn2c_quant_matmul_integer_{_MATMUL_SUFFIX[a.type.dtype]}{_MATMUL_SUFFIX[b.type.dtype]}",
             ctx.params_struct("nn2c_quant_matmul_params_t", fields), ctx.ptr(a), ctx.ptr(b), ctx.ptr(a_zp),
             ctx.ptr(b_zp), ctx.ptr(out))
