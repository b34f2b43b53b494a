"""Lowerings of the element-wise math family (ir/ops/math.py) onto kernels/nn2c_math.c.

Float32: one kernel per function (C99 single-precision <math.h>), with the operator's constants
in nn2c_math_f32_params_t. TFLite Micro registers these builtins for float32 only, except:
- ABS int8 / int16 (PrepareAbsRsqrt): per-tensor quantization, int16 zero points 0; the output is
  rescaled only when the float32 scales differ, by QuantizeMultiplier(double(s_in) / double(s_out)).
  int16 without quantization is a plain abs.
- RSQRT int8 (RsqrtEvalQuantized): only 256 inputs exist, so the kernel is a table computed here
  with TFLM's integer arithmetic: v = x - zp_in (0 gives 127); (m, e) =
  GetInvSqrtQuantizedMultiplierExp(v, -1); d = MBQM(1, m, e + 20); y = MBQM(d, M, shift - 20) + zp_out
  with (M, shift) = QuantizeMultiplier(1 / (sqrt(double(s_in)) * double(s_out))). TFLM fails on
  x < zp_in (the square root of a negative number); the table gives 127 there.
- ELU int8 (PopulateLookupTable): the table TFLM builds, in float32: d = s_in * (q - zp_in);
  f = d < 0 ? exp(d) - 1 : d; y = clamp((int)(round_half_away(f * (1 / s_out)) + zp_out)).
ONNX brings integer ABS / NEG / SIGN (two's-complement kernels) and POW with int32 operands.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import scale, zero_point
from nn2c.codegen.ops.elementwise import broadcast_field, emit_table_s8
from nn2c.ir import Node, Value
from nn2c.quant.fixedpoint import quantize_multiplier, round_half_away

# IR op -> the kernel's function name (nn2c_math_<name>_f32)
_FLOAT_KERNELS = {
    "EXP": "exp", "LOG": "log", "SQRT": "sqrt", "RSQRT": "rsqrt", "NEG": "neg", "ABS": "abs",
    "SQUARE": "square", "FLOOR": "floor", "CEIL": "ceil", "ROUND": "round", "SIGN": "sign",
    "SIN": "sin", "COS": "cos", "TAN": "tan", "ASIN": "asin", "ACOS": "acos", "ATAN": "atan",
    "SINH": "sinh", "COSH": "cosh", "ASINH": "asinh", "ACOSH": "acosh", "ATANH": "atanh", "ERF": "erf", "RECIPROCAL": "reciprocal",
    "GELU": "gelu", "SOFTPLUS": "softplus", "SOFTSIGN": "softsign", "ELU": "elu", "SELU": "selu",
    "CELU": "celu", "MISH": "mish", "SWISH": "swish", "THRESHOLDED_RELU": "thresholded_relu",
    "SHRINK": "shrink",
}
_INTEGER_KERNELS = {"ABS": "abs", "NEG": "neg", "SIGN": "sign"}  # integers without quantization
_INT_SUFFIX = {"int8": "i8", "int16": "i16", "int32": "i32"}
_SELU_ALPHA, _SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875  # ONNX's float defaults


def _unary_operands(node: Node, ctx: EmitContext) -> tuple[Value, Value]:
    x = node.input(0)
    if x is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected one input and one output")
    out = node.outputs[0]
    if x.type.num_elements != out.type.num_elements:
        raise ctx.unsupported(f"input {x.type} and output {out.type} differ in size")
    return x, out


def _float_constants(node: Node, ctx: EmitContext) -> dict[str, float]:
    """The kernel's alpha / beta / gamma for this operator (see nn2c_math.h)."""
    a = node.attrs
    if node.op in ("ELU", "CELU", "SWISH"):
        alpha = float(a.get("alpha", 1.0))
        if node.op == "CELU" and alpha == 0.0:
            raise ctx.unsupported("CELU with alpha 0 (it divides by alpha)")
        return {"alpha": alpha}
    if node.op == "THRESHOLDED_RELU":
        return {"alpha": float(a.get("alpha", 1.0))}
    if node.op == "SELU":
        return {"alpha": float(a.get("alpha", _SELU_ALPHA)), "gamma": float(a.get("gamma", _SELU_GAMMA))}
    if node.op == "SHRINK":
        return {"alpha": float(a.get("lambd", 0.5)), "beta": float(a.get("bias", 0.0))}
    return {}


def _float_kernel(node: Node, ctx: EmitContext) -> str:
    name = _FLOAT_KERNELS[node.op]
    if node.op == "GELU":
        approximate = str(node.attrs.get("approximate", "none"))
        if approximate not in ("none", "tanh"):
            raise ctx.unsupported(f"GELU approximate={approximate!r} (none and tanh are defined)")
        name = "gelu_tanh" if approximate == "tanh" else "gelu"
    return f"nn2c_math_{name}_f32"


@lowering(*_FLOAT_KERNELS)
def unary(node: Node, ctx: EmitContext) -> None:
    x, out = _unary_operands(node, ctx)
    if x.type.dtype != out.type.dtype:
        raise ctx.unsupported(f"input {x.type.dtype} and output {out.type.dtype} differ in type")
    count = out.type.num_elements
    if count == 0:
        return
    dtype = x.type.dtype
    if dtype == "float32":
        ctx.use_kernel("math")
        fields = {"count": count, "alpha": 0.0, "beta": 0.0, "gamma": 0.0, **_float_constants(node, ctx)}
        ctx.call(_float_kernel(node, ctx), ctx.params_struct("nn2c_math_f32_params_t", fields),
                 ctx.ptr(x), ctx.ptr(out))
        return
    quantized = x.type.quant is not None or out.type.quant is not None
    if node.op == "ABS" and quantized and dtype in ("int8", "int16"):
        _quantized_abs(ctx, x, out, count)
    elif node.op == "RSQRT" and quantized and dtype == "int8":
        emit_table_s8(ctx, x, out, count, _rsqrt_table(ctx, x, out), "RSQRT")
    elif node.op == "ELU" and quantized and dtype == "int8" and float(node.attrs.get("alpha", 1.0)) == 1.0:
        emit_table_s8(ctx, x, out, count, _elu_table(ctx, x, out), "ELU")
    elif node.op == "GELU" and quantized and dtype == "int8":
        emit_table_s8(ctx, x, out, count, _gelu_table(ctx, x, out, str(node.attrs.get("approximate", "none"))), "GELU")
    elif node.op in _INTEGER_KERNELS and not quantized and dtype in _INT_SUFFIX:
        ctx.use_kernel("math")
        ctx.call(f"nn2c_math_{_INTEGER_KERNELS[node.op]}_{_INT_SUFFIX[dtype]}", str(count), ctx.ptr(x), ctx.ptr(out))
    else:
        raise ctx.unsupported(f"{node.op} of {'quantized ' if quantized else ''}{dtype} ({_supported(node.op)})")


def _supported(op: str) -> str:
    extra = {"ABS": "; int8 / int16 quantized; int8, int16, int32", "RSQRT": "; int8 quantized",
             "ELU": "; int8 quantized with alpha 1", "NEG": "; int8, int16, int32", "SIGN": "; int8, int16, int32"}
    return f"float32{extra.get(op, '')} are supported"


def _per_tensor(ctx: EmitContext, *values: Value) -> None:
    for v in values:
        if v.type.quant is None or v.type.quant.per_channel:
            raise ctx.unsupported(f"{v.name!r} must be quantized per tensor")


def _f32(x: float) -> float:
    return float(np.float32(x))


def _quantized_abs(ctx: EmitContext, x: Value, out: Value, count: int) -> None:
    _per_tensor(ctx, x, out)
    dtype = x.type.dtype
    if dtype == "int16" and (zero_point(x) or zero_point(out)):
        raise ctx.unsupported("int16 ABS needs zero points of 0 (TFLite Micro requires it)")
    s_in, s_out = _f32(scale(x)), _f32(scale(out))
    multiplier, shift = quantize_multiplier(s_in / s_out) if s_in != s_out else (0, 0)
    fields = {"count": count, "input_offset": zero_point(x), "output_offset": zero_point(out),
              "multiplier": multiplier, "shift": shift, "needs_rescale": int(s_in != s_out)}
    ctx.use_kernel("math")
    ctx.call(f"nn2c_math_abs_{'s8' if dtype == 'int8' else 's16'}",
             ctx.params_struct("nn2c_math_abs_q_params_t", fields), ctx.ptr(x), ctx.ptr(out))


# --- TFLite's integer arithmetic on Python ints, for the RSQRT table ------------------------------
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def _srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul."""
    if a == b == _INT32_MIN:
        return _INT32_MAX
    ab = a * b
    nudged = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    quotient = abs(nudged) >> 31  # C's division truncates towards zero
    return quotient if nudged >= 0 else -quotient


def _rdbpot(x: int, exponent: int) -> int:
    """gemmlowp RoundingDivideByPOT."""
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if (x & mask) > threshold else 0)


def _mbqm(x: int, multiplier: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier (double rounding), as nn2c_mbqm."""
    shifted = _wrap32(x << max(shift, 0))
    return _rdbpot(_srdhm(shifted, multiplier), max(-shift, 0))


def _saturating_shift_left(x: int, exponent: int) -> int:
    """gemmlowp SaturatingRoundingMultiplyByPOT for a positive exponent."""
    threshold = (1 << (31 - exponent)) - 1
    if x > threshold:
        return _INT32_MAX
    if x < -threshold:
        return _INT32_MIN
    return x << exponent


def inv_sqrt_multiplier(value: int, reverse_shift: int = -1) -> tuple[int, int]:
    """TFLite GetInvSqrtQuantizedMultiplierExp: 1 / sqrt(value) as (Q31 multiplier, shift); Newton-
    Raphson in gemmlowp fixed point with 3 integer bits, starting at 1, five iterations."""
    if value <= 1:
        return _INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    leading_zeros = 32 - value.bit_length()
    left_shift_pairs = (leading_zeros - 1) // 2 - 1
    shift -= left_shift_pairs
    value <<= 2 * left_shift_pairs
    half_input = _rdbpot(value >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28  # F3 one
    for _ in range(5):
        x3 = _saturating_shift_left(_srdhm(_srdhm(x, x), x), 6)
        x = _saturating_shift_left(_wrap32(_srdhm(half_three, x) - _srdhm(half_input, x3)), 3)
    x = _srdhm(x, 1518500250)  # times sqrt(2) / 2
    if shift < 0:
        x = _wrap32(x << -shift)
        shift = 0
    return x, shift * reverse_shift


def _rsqrt_table(ctx: EmitContext, x: Value, out: Value) -> np.ndarray:
    _per_tensor(ctx, x, out)
    s_in, s_out = _f32(scale(x)), _f32(scale(out))
    multiplier, shift = quantize_multiplier(1.0 / (math.sqrt(s_in) * s_out))
    zp_in, zp_out = zero_point(x), zero_point(out)
    table = []
    for q in range(-128, 128):
        value = q - zp_in
        if value <= 0:  # 0 is the largest output in TFLM; negatives are an error there
            table.append(127)
            continue
        inv_m, inv_s = inv_sqrt_multiplier(value)
        data = _mbqm(1, inv_m, inv_s + 20)
        table.append(min(max(_mbqm(data, multiplier, shift - 20) + zp_out, -128), 127))
    return np.array(table, dtype=np.int8)


def _float_lut(ctx: EmitContext, x: Value, out: Value, f: Callable[[np.float32], np.float32]) -> np.ndarray:
    """TFLite's LUTPopulate for int8: f of each dequantized input in float32, requantized with
    round-half-away and clamped (an infinite result saturates)."""
    _per_tensor(ctx, x, out)
    s_in, inverse = np.float32(scale(x)), np.float32(1.0) / np.float32(scale(out))
    zp_in, zp_out = zero_point(x), zero_point(out)
    table = []
    for q in range(-128, 128):
        rescaled = float(np.float32(f(np.float32(s_in * np.float32(q - zp_in))) * inverse))
        if not math.isfinite(rescaled):
            table.append(127 if rescaled > 0 else -128)
            continue
        quantized = float(np.float32(np.float32(round_half_away(rescaled)) + np.float32(zp_out)))
        table.append(min(max(int(quantized), -128), 127))
    return np.array(table, dtype=np.int8)


def _elu_table(ctx: EmitContext, x: Value, out: Value) -> np.ndarray:
    return _float_lut(ctx, x, out, lambda d: np.float32(np.float32(math.exp(float(d))) - np.float32(1.0))
                      if d < 0 else d)


def _gelu_table(ctx: EmitContext, x: Value, out: Value, approximate: str) -> np.ndarray:
    """TFLite's int8 GELU (kernels/gelu.cc): 0.5 x erfc(-x / sqrt 2), or the tanh approximation."""

    def gelu(d: np.float32) -> np.float32:
        if approximate == "tanh":
            inner = np.float32(np.float32(math.sqrt(2.0 / math.pi)) * np.float32(d + np.float32(0.044715) * d * d * d))
            return np.float32(np.float32(0.5) * d * np.float32(np.float32(1.0) + np.float32(math.tanh(float(inner)))))
        return np.float32(np.float32(0.5) * d * np.float32(math.erfc(float(np.float32(-d * np.float32(math.sqrt(0.5)))))))

    return _float_lut(ctx, x, out, gelu)


@lowering("IS_NAN", "IS_INF")
def predicate(node: Node, ctx: EmitContext) -> None:
    x, out = _unary_operands(node, ctx)
    if x.type.dtype != "float32" or out.type.dtype != "bool":
        raise ctx.unsupported(f"{node.op} of {x.type.dtype} to {out.type.dtype} (float32 to bool is supported)")
    count = out.type.num_elements
    if count == 0:
        return
    ctx.use_kernel("math")
    if node.op == "IS_NAN":
        ctx.call("nn2c_math_isnan_f32", str(count), ctx.ptr(x), ctx.ptr(out))
        return
    fields = {"count": count, "detect_negative": int(bool(node.attrs.get("detect_negative", 1))),
              "detect_positive": int(bool(node.attrs.get("detect_positive", 1)))}
    ctx.call("nn2c_math_isinf_f32", ctx.params_struct("nn2c_math_isinf_params_t", fields), ctx.ptr(x), ctx.ptr(out))


# (base dtype, exponent dtype) -> the POW kernel's suffix; the output has the base's type
_POW_KERNELS = {("float32", "float32"): "f32", ("float32", "int32"): "f32_i32",
                ("int32", "int32"): "i32", ("int32", "float32"): "i32_f32",
                ("float32", "int64"): "f32_i64", ("int64", "int64"): "i64", ("int64", "float32"): "i64_f32"}


@lowering("POW")
def power(node: Node, ctx: EmitContext) -> None:
    base, exponent = node.input(0), node.input(1)
    if base is None or exponent is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected two inputs and one output")
    out = node.outputs[0]
    key = (base.type.dtype, exponent.type.dtype)
    if key not in _POW_KERNELS or out.type.dtype != base.type.dtype:
        raise ctx.unsupported(f"POW of {key[0]} to the power {key[1]} giving {out.type.dtype} "
                              "(float32 / int32 / int64 operands and the base's type out are supported)")
    if any(v.type.quant is not None for v in (base, exponent, out)):
        raise ctx.unsupported("quantized POW")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("math")
    params = ctx.params_struct("nn2c_math_pow_params_t", {"bc": broadcast_field(ctx, base, exponent, out)})
    ctx.call(f"nn2c_math_pow_{_POW_KERNELS[key]}", params, ctx.ptr(base), ctx.ptr(exponent), ctx.ptr(out))
