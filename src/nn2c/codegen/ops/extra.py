"""Operators that ONNX models bring and no other family lowers: IDENTITY, RELU, RELU6,
RELU_N1_TO_1, RELU_0_TO_1, LEAKY_RELU, HARD_SWISH, SUB, SPLIT, SPLIT_V.

Parameters follow TFLite Micro's Prepare:
- RELU int8 / int16 (CalculateReluOpData): M = in_scale / out_scale in double (QuantizeMultiplier);
  y = clamp(zp_out + M(x - zp_in), max(qmin, zp_out), qmax).
- RELU6 int8 / int16 (Relu6Prepare): clamp(x, zp_in, zp_in + round(6 / in_scale)) with the
  division in float; the output keeps the input's quantization.
- LEAKY_RELU int8 / int16 (CalculateOpDataLeakyRelu): identity M = s_in / s_out, alpha M =
  s_in * alpha / s_out (float32 values, ratios in double); y = clamp(zp_out + M(x - zp_in)).
- SUB int8 / int16 (CalculateOpDataSub): as ADD, left shift 20 (int8) or 15 (int16), multipliers
  s1 / (2 max(s1, s2)), s2 / (2 max(s1, s2)), 2 max(s1, s2) / (2^shift s_out), ratios in double.
- HARD_SWISH int8 (HardSwishPrepare): hires scale s_in / 128, output multiplier hires / s_out and
  "relu-ish" multiplier hires / (3 / 32768), each QuantizeMultiplier then rounded to 16 bits; the
  kernel is TFLite's 16-bit fixed-point reference.
- Float kernels are the reference formulas; RELU_N1_TO_1 and RELU_0_TO_1 are float clamps.
- IDENTITY is a zero-copy alias; SPLIT / SPLIT_V copy blocks (any dtype, raw elements).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import LOWERINGS, Lowering, lowering
from nn2c.codegen.ops.common import float_activation_range, int_activation_range, scale, zero_point
from nn2c.codegen.ops.elementwise import broadcast_field, emit_wrapping, plain_integer
from nn2c.ir import Node, Value, dtype_bytes
from nn2c.ir.ops import op_info
from nn2c.quant.fixedpoint import (
    quantize_multiplier,
    quantize_multiplier_smaller_than_one,
    round_half_away,
)

# nn2c_extra_bcast_t has the layout of nn2c_elementwise.h's broadcast struct (NN2C_EXTRA_MAX_DIMS = NN2C_EW_MAX_DIMS = 8),
# so the elementwise lowering's broadcast_field fills it
_SUFFIX = {"int8": "s8", "int16": "s16"}
_QRANGE = {"int8": (-128, 127), "int16": (-32768, 32767)}


def _register(*ops: str) -> Callable[[Lowering], Lowering]:
    """Register unless another family already lowers the op (that one then wins)."""
    def wrap(function: Lowering) -> Lowering:
        free = [op for op in ops if op not in LOWERINGS]
        return lowering(*free)(function) if free else function

    return wrap


def _unary(node: Node, ctx: EmitContext) -> tuple[Value, Value]:
    x = node.input(0)
    if x is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected one input and one output")
    out = node.outputs[0]
    if x.type.shape != out.type.shape and x.type.num_elements != out.type.num_elements:
        raise ctx.unsupported(f"input {x.type} and output {out.type} differ in size")
    if x.type.dtype != out.type.dtype:
        raise ctx.unsupported(f"input {x.type.dtype} and output {out.type.dtype} differ in type")
    return x, out


def _per_tensor(ctx: EmitContext, *values: Value) -> None:
    for v in values:
        if v.type.quant is None or v.type.quant.per_channel:
            raise ctx.unsupported(f"{v.name!r} must be quantized per tensor")


def _f32(x: float) -> float:
    return float(np.float32(x))


@_register("IDENTITY")
def identity(node: Node, ctx: EmitContext) -> None:
    x, out = _unary(node, ctx)
    if x.type.quant != out.type.quant:
        raise ctx.unsupported("IDENTITY may not change the quantization")
    if x.is_constant or x.is_variable:
        ctx.use_kernel("layout")
        ctx.call("nn2c_copy_blocks", ctx.ptr(out), ctx.ptr(x), "1", str(x.type.num_bytes), "0", "0")
        return
    ctx.alias(out, x)


@_register("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")
def relu(node: Node, ctx: EmitContext) -> None:
    x, out = _unary(node, ctx)
    count = out.type.num_elements
    if count == 0:
        return
    ctx.use_kernel("extra")
    dtype = x.type.dtype
    if dtype == "float32":
        clamp = op_info(node.op).clamp
        assert clamp is not None
        lo, hi = clamp[0], float("inf") if clamp[1] is None else clamp[1]
        params = ctx.params_struct("nn2c_extra_clamp_f32_params_t",
                                   {"count": count, "act_min": lo, "act_max": hi})
        ctx.call("nn2c_extra_clamp_f32", params, ctx.ptr(x), ctx.ptr(out))
        return
    if dtype not in _SUFFIX or node.op not in ("RELU", "RELU6"):
        raise ctx.unsupported(f"{node.op} of {dtype} (float32, and int8 / int16 RELU and RELU6 are supported)")
    _per_tensor(ctx, x, out)
    if dtype == "int16" and (zero_point(x) or zero_point(out)):
        raise ctx.unsupported("int16 RELU needs zero points of 0 (TFLite Micro requires it)")
    qmin, qmax = _QRANGE[dtype]
    if node.op == "RELU":
        multiplier, shift = quantize_multiplier(float(np.float64(_f32(scale(x))) / np.float64(_f32(scale(out)))))
        fields = {"count": count, "input_zero_point": zero_point(x), "output_zero_point": zero_point(out),
                  "multiplier": multiplier, "shift": shift,
                  "act_min": max(qmin, zero_point(out)), "act_max": qmax}
        function = f"nn2c_extra_relu_{_SUFFIX[dtype]}"
    else:
        six = round_half_away(float(np.float32(6.0) / np.float32(scale(x)))) + zero_point(x)
        six = min(max(six, qmin), qmax)
        fields = {"count": count, "input_zero_point": zero_point(x), "output_zero_point": zero_point(x),
                  "multiplier": 0, "shift": 0, "act_min": zero_point(x), "act_max": six}
        function = f"nn2c_extra_relu6_{_SUFFIX[dtype]}"
    ctx.call(function, ctx.params_struct("nn2c_extra_relu_q_params_t", fields), ctx.ptr(x), ctx.ptr(out))


@_register("LEAKY_RELU")
def leaky_relu(node: Node, ctx: EmitContext) -> None:
    x, out = _unary(node, ctx)
    count = out.type.num_elements
    alpha = float(node.attrs.get("alpha", 0.2))
    if count == 0:
        return
    ctx.use_kernel("extra")
    if x.type.dtype == "float32":
        params = ctx.params_struct("nn2c_extra_leaky_f32_params_t", {"count": count, "alpha": alpha})
        ctx.call("nn2c_extra_leaky_relu_f32", params, ctx.ptr(x), ctx.ptr(out))
        return
    if x.type.dtype not in _SUFFIX:
        raise ctx.unsupported(f"LEAKY_RELU of {x.type.dtype} (float32, int8, int16 are supported)")
    _per_tensor(ctx, x, out)
    # float32 parameters, ratios in double (what the TFLM build computes; float division is off by
    # one step on ties such as scale 0.05 * 0.5 / 0.04)
    s_in, s_out, a32 = (float(np.float32(v)) for v in (scale(x), scale(out), alpha))
    identity_m, identity_s = quantize_multiplier(s_in / s_out)
    alpha_real = s_in * a32 / s_out
    if alpha_real < 0:
        raise ctx.unsupported("a negative alpha is not supported for quantized LEAKY_RELU")
    alpha_m, alpha_s = quantize_multiplier(alpha_real)
    fields = {"count": count, "input_zero_point": zero_point(x), "output_zero_point": zero_point(out),
              "identity_multiplier": identity_m, "identity_shift": identity_s,
              "alpha_multiplier": alpha_m, "alpha_shift": alpha_s}
    ctx.call(f"nn2c_extra_leaky_relu_{_SUFFIX[x.type.dtype]}",
             ctx.params_struct("nn2c_extra_leaky_q_params_t", fields), ctx.ptr(x), ctx.ptr(out))


def _int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier, then DownScaleInt32ToInt16Multiplier: (Q0.15 mantissa, exponent)."""
    mantissa, exponent = quantize_multiplier(real)
    if mantissa >= 2**31 - 1 - (1 << 15):
        return 2**15 - 1, exponent
    return (mantissa + (1 << 15)) >> 16, exponent


@_register("HARD_SWISH")
def hard_swish(node: Node, ctx: EmitContext) -> None:
    x, out = _unary(node, ctx)
    count = out.type.num_elements
    if count == 0:
        return
    ctx.use_kernel("extra")
    if x.type.dtype == "float32":
        ctx.call("nn2c_extra_hard_swish_f32", str(count), ctx.ptr(x), ctx.ptr(out))
        return
    if x.type.dtype != "int8":
        raise ctx.unsupported(f"HARD_SWISH of {x.type.dtype} (float32 and int8 are supported)")
    _per_tensor(ctx, x, out)
    # HardSwishPrepare: scales in float, each ratio widened to double
    hires = np.float32(1.0 / 128.0) * np.float32(scale(x))
    out_m, out_e = _int16_multiplier(float(hires / np.float32(scale(out))))
    relu_m, relu_e = _int16_multiplier(float(hires / np.float32(3.0 / 32768.0)))
    if out_e > 0:
        raise ctx.unsupported("the output scale is too small for TFLite's int8 HARD_SWISH (output exponent > 0)")
    fields = {"count": count, "input_zero_point": zero_point(x), "output_zero_point": zero_point(out),
              "output_multiplier": out_m, "output_exponent": out_e,
              "reluish_multiplier": relu_m, "reluish_exponent": relu_e}
    ctx.call("nn2c_extra_hard_swish_s8", ctx.params_struct("nn2c_extra_hard_swish_q_params_t", fields),
             ctx.ptr(x), ctx.ptr(out))


@_register("LUT")
def lookup_table(node: Node, ctx: EmitContext) -> None:
    """int8 -> int8 through a 256-entry table (the QDQ rewrite builds it for unary activations)."""
    x, table = node.input(0), node.input(1)
    if x is None or table is None or table.data is None or table.type.num_elements != 256 or len(node.outputs) != 1:
        raise ctx.unsupported("LUT needs an input and a constant 256-entry table")
    out = node.outputs[0]
    if x.type.dtype != "int8" or out.type.dtype != "int8" or table.type.dtype != "int8":
        raise ctx.unsupported("LUT maps int8 to int8")
    if x.type.num_elements != out.type.num_elements:
        raise ctx.unsupported(f"input {x.type} and output {out.type} differ in size")
    count = out.type.num_elements
    if count == 0:
        return
    ctx.use_kernel("extra")
    ctx.call("nn2c_extra_lut_s8", str(count), ctx.weight(table), ctx.ptr(x), ctx.ptr(out))


@_register("SUB")
def sub(node: Node, ctx: EmitContext) -> None:
    a, b = node.input(0), node.input(1)
    if a is None or b is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected two inputs and one output")
    out = node.outputs[0]
    dtype = out.type.dtype
    if a.type.dtype != dtype or b.type.dtype != dtype:
        raise ctx.unsupported("all operands must have the same type")
    if plain_integer([a, b, out]):
        emit_wrapping(ctx, node, a, b, out)
        return
    if out.type.num_elements == 0:
        return
    activation = str(node.fused_activation)
    ctx.use_kernel("extra")
    fields: dict = {"bc": broadcast_field(ctx, a, b, out)}
    if dtype == "float32":
        lo, hi = float_activation_range(ctx, activation)
        fields.update(act_min=lo, act_max=hi)
        ctype, function = "nn2c_extra_sub_f32_params_t", "nn2c_extra_sub_f32"
    elif dtype == "int32":
        if activation != "NONE":
            raise ctx.unsupported("int32 SUB with a fused activation")
        ctype, function = "nn2c_extra_sub_i32_params_t", "nn2c_extra_sub_i32"
    elif dtype in _SUFFIX:
        _per_tensor(ctx, a, b, out)
        fields.update(_sub_q_fields(ctx, activation, a, b, out))
        ctype, function = "nn2c_extra_sub_q_params_t", f"nn2c_extra_sub_{_SUFFIX[dtype]}"
    else:
        raise ctx.unsupported(f"SUB of {dtype} (float32, int32, int8, int16 are supported)")
    ctx.call(function, ctx.params_struct(ctype, fields), ctx.ptr(a), ctx.ptr(b), ctx.ptr(out))


def _sub_q_fields(ctx: EmitContext, activation: str, a: Value, b: Value, out: Value) -> dict:
    left_shift = 15 if out.type.dtype == "int16" else 20
    s1, s2, so = (float(np.float32(scale(v))) for v in (a, b, out))
    twice_max = 2.0 * max(s1, s2)  # float32 scales, ratios in double, as for ADD
    pairs = []
    for real in (s1 / twice_max, s2 / twice_max, twice_max / ((1 << left_shift) * so)):
        try:
            pairs.append(quantize_multiplier_smaller_than_one(real))
        except ValueError:
            raise ctx.unsupported(f"SUB multiplier {real:g} is not in (0, 1) as TFLite requires") from None
    act_min, act_max = int_activation_range(ctx, activation, out)
    return {
        "input1_offset": -zero_point(a), "input2_offset": -zero_point(b), "output_offset": zero_point(out),
        "left_shift": left_shift,
        "input1_multiplier": pairs[0][0], "input1_shift": pairs[0][1],
        "input2_multiplier": pairs[1][0], "input2_shift": pairs[1][1],
        "output_multiplier": pairs[2][0], "output_shift": pairs[2][1],
        "act_min": act_min, "act_max": act_max,
    }


def _const_ints(ctx: EmitContext, value: Value | None, what: str) -> list[int]:
    if value is None or not value.is_constant or value.data is None:
        raise ctx.unsupported(f"the {what} input must be a constant")
    return [int(v) for v in np.asarray(value.data).reshape(-1)]


@_register("SPLIT", "SPLIT_V")
def split(node: Node, ctx: EmitContext) -> None:
    x = node.input(1) if node.op == "SPLIT" else node.input(0)
    if x is None:
        raise ctx.unsupported("the input tensor is missing")
    dims = list(x.type.shape)
    axis = _const_ints(ctx, node.input(0) if node.op == "SPLIT" else node.input(2), "axis")[0]
    axis = axis + len(dims) if axis < 0 else axis
    if not 0 <= axis < len(dims):
        raise ctx.unsupported(f"split axis {axis} is out of range")
    for out in node.outputs:
        if out.type.dtype != x.type.dtype or (out.type.dtype in _SUFFIX and out.type.quant != x.type.quant):
            raise ctx.unsupported(f"output {out.name!r} changes the type or quantization; split copies raw values")
        if list(out.type.shape[:axis]) + list(out.type.shape[axis + 1:]) != dims[:axis] + dims[axis + 1:]:
            raise ctx.unsupported(f"output {out.name!r} {list(out.type.shape)} does not fit input {dims}")
    if sum(o.type.shape[axis] for o in node.outputs) != dims[axis]:
        raise ctx.unsupported("the outputs do not add up to the input along the split axis")
    elem = dtype_bytes(x.type.dtype)
    outer, inner = prod(dims[:axis]), prod(dims[axis + 1:]) * elem
    row = dims[axis] * inner
    ctx.use_kernel("layout")
    offset = 0
    for out in node.outputs:
        block = out.type.shape[axis] * inner
        if block and outer:
            ctx.call("nn2c_copy_blocks", ctx.ptr(out), f"(const uint8_t *)({ctx.ptr(x)}) + {offset}",
                     str(outer), str(block), str(block), str(row))
        offset += block
