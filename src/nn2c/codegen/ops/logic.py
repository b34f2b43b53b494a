"""Comparisons, logical / bitwise operators, selection and binary arithmetic beyond ADD/SUB/MUL/DIV:
EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT,
SELECT_V2, SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD, ADD_N, PRELU, and the nn2c-internal FMOD,
BITSHIFT, BITWISE_AND / OR / XOR / NOT that ONNX operators map onto.

Operands broadcast numpy-style (up to 8 fused loops, up to three operands; see `broadcast_nest`).
Parameters follow TFLite Micro's Prepare, in double from the float32 scales:
  comparisons int8 (ComparisonsPrepare): left_shift 8; per input (M_k, shift_k) =
      QuantizeMultiplierSmallerThanOneExp(s_k); compare M_k((x_k - zp_k) << 8) (int32 values).
      Other types compare the stored values (TFLM: bool, float32, int32, int64; nn2c also int8 /
      uint8 / int16 without quantization, which ONNX brings). Quantized int16 is refused: TFLM's
      int16 GREATER (its only int16 comparison) rescales with unset parameters (all false).
  SQUARED_DIFFERENCE int8 / int16 (PrepareQuantized, left_shift 7 / 0; int16 needs zero points 0):
      twice_max = 2 max(s1, s2); M1 = s1 / twice_max, M2 = s2 / twice_max (SmallerThanOneExp);
      M_out = twice_max^2 / float((1 << 2 left_shift) * s_out) (QuantizeMultiplier);
      y = clamp(zp_out + M_out((M1((x1 - zp1) << ls) - M2((x2 - zp2) << ls))^2)).
      float32 and int32 (wrapping) compute (x1 - x2)^2.
  ADD_N int8 (left_shift 20; every input shares one scale s and zero point): M_in = s / (2 s),
      M_out = 2 s / (2^20 s_out) (both SmallerThanOneExp); float32 sums from 0 in input order.
  PRELU int8 / int16 with int8 alpha (CalculatePreluParams): M1 = s_in / s_out,
      M2 = s_in * s_alpha / s_out (QuantizeMultiplier); y = zp_out + M1(x - zp_in) for x >= zp_in,
      else zp_out + M2((x - zp_in)(alpha - zp_alpha)), saturated to the output type.
  SELECT_V2 copies stored elements (any type: x, y and the output must share quantization).
  FLOOR_DIV float32 (TFLM) is floor(double(x1) / double(x2)); FLOOR_MOD float32 (TFLM) is fmodf
      moved to the divisor's sign. nn2c adds int32 FLOOR_DIV and integer FLOOR_MOD / FMOD (ONNX Mod);
      an integer division by 0 gives 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import int_activation_range, scale, zero_point
from nn2c.codegen.ops.elementwise import loop_array
from nn2c.ir import Node, Value, dtype_bytes
from nn2c.quant.fixedpoint import quantize_multiplier, quantize_multiplier_smaller_than_one

MAX_DIMS = 8  # NN2C_LOGIC_MAX_DIMS
MAX_OPERANDS = 3  # NN2C_LOGIC_MAX_OPERANDS

_SUFFIX = {"float32": "f32", "int8": "s8", "uint8": "u8", "int16": "s16", "int32": "i32", "int64": "i64",
           "bool": "b8"}
_COMPARE_TYPES = ("float32", "int8", "uint8", "int16", "int32", "int64", "bool")
_BIT_TYPES = ("int8", "uint8", "int16", "int32", "int64")
_MOD_TYPES = ("float32", "int8", "uint8", "int16", "int32", "int64")
_COPY_SUFFIX = {1: "x8", 2: "x16", 4: "x32", 8: "x64"}

Loop = tuple[int, tuple[int, ...]]  # (extent, element stride of each operand)


# --- broadcasting --------------------------------------------------------------------------------
def broadcast_nest(shapes: Sequence[Sequence[int]], out_shape: Sequence[int]) -> list[Loop]:
    """The fused loop nest (outermost first) walking the output and every broadcast operand.

    Unit output dimensions are dropped and neighbouring loops fused where every operand steps on
    as if they were one loop. Raises ValueError when the shapes do not broadcast to out_shape.
    """
    rank = max([len(out_shape), 1, *(len(s) for s in shapes)])
    padded = [(1,) * (rank - len(s)) + tuple(int(d) for d in s) for s in shapes]
    out = (1,) * (rank - len(out_shape)) + tuple(int(d) for d in out_shape)
    for axis, size in enumerate(out):
        dims = [p[axis] for p in padded]
        if any(d not in (size, 1) for d in dims) or (dims and size != max(dims) and size != 0):
            raise ValueError(f"shapes {[tuple(s) for s in shapes]} do not broadcast to {tuple(out_shape)}")
    loops: list[Loop] = []  # innermost first while building
    strides = [1] * len(shapes)
    for axis in reversed(range(rank)):
        if out[axis] != 1:
            loop = (out[axis], tuple(st if p[axis] != 1 else 0 for st, p in zip(strides, padded, strict=True)))
            if loops and all(o == i * loops[-1][0] for o, i in zip(loop[1], loops[-1][1], strict=True)):
                inner = loops.pop()
                loop = (inner[0] * out[axis], inner[1])
            loops.append(loop)
        strides = [st * p[axis] for st, p in zip(strides, padded, strict=True)]
    if not loops:
        loops = [(1, (1,) * len(shapes))]
    return loops[::-1]


def bcast_field(ctx: EmitContext, operands: Sequence[Value], out: Value) -> str:
    """The nn2c_logic_bcast_t initializer of these operands (at most three) and the output."""
    try:
        loops = broadcast_nest([v.type.shape for v in operands], out.type.shape)
    except ValueError as exc:
        raise ctx.unsupported(str(exc)) from None
    if len(loops) > MAX_DIMS:
        raise ctx.unsupported(f"broadcast needs {len(loops)} loops; at most {MAX_DIMS} are supported")
    assert len(operands) <= MAX_OPERANDS
    dims = loop_array([extent for extent, _ in loops])
    rows = [loop_array([strides[k] for _, strides in loops]) for k in range(len(operands))]
    return f"{{.rank = {len(loops)}, .dims = {dims}, .stride = {{{', '.join(rows)}}}}}"


# --- operand checks ------------------------------------------------------------------------------
def _operands(node: Node, ctx: EmitContext, count: int) -> tuple[list[Value], Value]:
    inputs = [node.input(i) for i in range(count)]
    if len(node.inputs) != count or any(v is None for v in inputs) or len(node.outputs) != 1:
        raise ctx.unsupported(f"expected {count} input{'s' if count > 1 else ''} and one output")
    return [v for v in inputs if v is not None], node.outputs[0]


def _require(ctx: EmitContext, values: Sequence[Value], allowed: Sequence[str], what: str) -> str:
    """The one dtype every value has, which must be one of `allowed`."""
    dtypes = sorted({v.type.dtype for v in values})
    if len(dtypes) != 1:
        raise ctx.unsupported(f"{what} must share one type; got {', '.join(dtypes)}")
    if dtypes[0] not in allowed:
        raise ctx.unsupported(f"{what} of type {dtypes[0]} are not supported ({', '.join(allowed)} are)")
    return dtypes[0]


def _require_bool_output(ctx: EmitContext, out: Value) -> None:
    if out.type.dtype != "bool":
        raise ctx.unsupported(f"the output must be bool; got {out.type.dtype}")


def _per_tensor(ctx: EmitContext, values: Sequence[Value]) -> None:
    for v in values:
        if v.type.quant is None:
            raise ctx.unsupported(f"{v.name!r} ({v.type.dtype}) has no quantization parameters")
        if v.type.quant.per_channel:
            raise ctx.unsupported(f"{v.name!r} is quantized per channel; TFLite Micro needs per-tensor here")


def _unquantized_or_equal(ctx: EmitContext, values: Sequence[Value], what: str) -> None:
    """Kernels that use stored values as they are need one quantization (or none) on all of them."""
    if len({v.type.quant for v in values}) > 1:
        raise ctx.unsupported(f"{what} must share one quantization (this kernel does not rescale)")


def _f64(x: float) -> float:
    """A float32 tensor scale widened to double, as TFLite's static_cast<double>(params.scale)."""
    return float(np.float32(x))


def _smaller_than_one(ctx: EmitContext, real: float, what: str) -> tuple[int, int]:
    try:
        return quantize_multiplier_smaller_than_one(real)
    except ValueError:
        raise ctx.unsupported(f"{what} {real:g} is not in (0, 1) as TFLite Micro requires") from None


def _multiplier(ctx: EmitContext, real: float, what: str) -> tuple[int, int]:
    if not 0.0 <= real < 2.0**30:
        raise ctx.unsupported(f"{what} multiplier {real:g} is out of range")
    return quantize_multiplier(real)


def _emit(ctx: EmitContext, function: str, ctype: str, fields: dict, operands: Sequence[Value], out: Value) -> None:
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("logic")
    params = ctx.params_struct(ctype, {"bc": bcast_field(ctx, operands, out), **fields})
    ctx.call(function, params, *(ctx.ptr(v) for v in operands), ctx.ptr(out))


def _emit_unary(ctx: EmitContext, function: str, x: Value, out: Value) -> None:
    if x.type.num_elements != out.type.num_elements:
        raise ctx.unsupported(f"input {x.type} and output {out.type} differ in size")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("logic")
    ctx.call(function, str(out.type.num_elements), ctx.ptr(x), ctx.ptr(out))


# --- comparisons ---------------------------------------------------------------------------------
@lowering("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
def compare(node: Node, ctx: EmitContext) -> None:
    (a, b), out = _operands(node, ctx, 2)
    _require_bool_output(ctx, out)
    dtype = _require(ctx, [a, b], _COMPARE_TYPES, f"{node.op} operands")
    name = node.op.lower()
    if dtype == "int8" and (a.type.quant is not None or b.type.quant is not None):
        _per_tensor(ctx, [a, b])
        _emit(ctx, f"nn2c_{name}_q_s8", "nn2c_compare_q_params_t", _compare_q_fields(ctx, a, b), [a, b], out)
        return
    if dtype == "int16" and (a.type.quant is not None or b.type.quant is not None):
        raise ctx.unsupported(f"{node.op} of quantized int16 is not supported (TFLite Micro's int16 GREATER "
                              "leaves its rescale parameters unset and returns false everywhere)")
    if dtype not in ("float32", "bool"):
        # stored values order like the reals only when both share one quantization
        _unquantized_or_equal(ctx, [a, b], f"quantized {dtype} {node.op} operands")
    _emit(ctx, f"nn2c_{name}_{_SUFFIX[dtype]}", "nn2c_logic_params_t", {}, [a, b], out)


def _compare_q_fields(ctx: EmitContext, a: Value, b: Value) -> dict:
    m1, sh1 = _smaller_than_one(ctx, _f64(scale(a)), "input 1 scale")
    m2, sh2 = _smaller_than_one(ctx, _f64(scale(b)), "input 2 scale")
    return {"left_shift": 8,
            "input1_offset": -zero_point(a), "input1_multiplier": m1, "input1_shift": sh1,
            "input2_offset": -zero_point(b), "input2_multiplier": m2, "input2_shift": sh2}


# --- logical and bitwise operators ---------------------------------------------------------------
@lowering("LOGICAL_AND", "LOGICAL_OR")
def logical(node: Node, ctx: EmitContext) -> None:
    (a, b), out = _operands(node, ctx, 2)
    _require(ctx, [a, b, out], ("bool",), f"{node.op} operands")
    _emit(ctx, f"nn2c_{node.op.lower()}_b8", "nn2c_logic_params_t", {}, [a, b], out)


@lowering("LOGICAL_NOT")
def logical_not(node: Node, ctx: EmitContext) -> None:
    (x,), out = _operands(node, ctx, 1)
    _require(ctx, [x, out], ("bool",), "LOGICAL_NOT operands")
    _emit_unary(ctx, "nn2c_logical_not_b8", x, out)


@lowering("BITWISE_AND", "BITWISE_OR", "BITWISE_XOR")
def bitwise(node: Node, ctx: EmitContext) -> None:
    (a, b), out = _operands(node, ctx, 2)
    dtype = _require(ctx, [a, b, out], _BIT_TYPES, f"{node.op} operands")
    _unquantized_or_equal(ctx, [a, b, out], f"{node.op} operands")
    _emit(ctx, f"nn2c_{node.op.lower()}_{_SUFFIX[dtype]}", "nn2c_logic_params_t", {}, [a, b], out)


@lowering("BITWISE_NOT")
def bitwise_not(node: Node, ctx: EmitContext) -> None:
    (x,), out = _operands(node, ctx, 1)
    dtype = _require(ctx, [x, out], _BIT_TYPES, "BITWISE_NOT operands")
    _unquantized_or_equal(ctx, [x, out], "BITWISE_NOT operands")
    _emit_unary(ctx, f"nn2c_bitwise_not_{_SUFFIX[dtype]}", x, out)


@lowering("BITSHIFT")
def bitshift(node: Node, ctx: EmitContext) -> None:
    (a, b), out = _operands(node, ctx, 2)
    dtype = _require(ctx, [a, b, out], _BIT_TYPES, "BITSHIFT operands")
    _unquantized_or_equal(ctx, [a, b, out], "BITSHIFT operands")
    direction = str(node.attrs.get("direction", "")).upper()
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.unsupported(f"direction {node.attrs.get('direction')!r} is neither LEFT nor RIGHT")
    _emit(ctx, f"nn2c_shift_{direction.lower()}_{_SUFFIX[dtype]}", "nn2c_logic_params_t", {}, [a, b], out)


# --- SELECT_V2 -----------------------------------------------------------------------------------
@lowering("SELECT_V2")
def select(node: Node, ctx: EmitContext) -> None:
    (cond, a, b), out = _operands(node, ctx, 3)
    if cond.type.dtype != "bool":
        raise ctx.unsupported(f"the condition must be bool; got {cond.type.dtype}")
    dtype = _require(ctx, [a, b, out], tuple(_SUFFIX), "SELECT_V2 values")
    _unquantized_or_equal(ctx, [a, b, out], "SELECT_V2 values and output")
    width = _COPY_SUFFIX[dtype_bytes(dtype)]
    _emit(ctx, f"nn2c_select_{width}", "nn2c_logic_params_t", {}, [cond, a, b], out)


# --- SQUARED_DIFFERENCE --------------------------------------------------------------------------
@lowering("SQUARED_DIFFERENCE")
def squared_difference(node: Node, ctx: EmitContext) -> None:
    (a, b), out = _operands(node, ctx, 2)
    dtype = _require(ctx, [a, b, out], ("float32", "int32", "int8", "int16"), "SQUARED_DIFFERENCE operands")
    if dtype in ("float32", "int32"):
        _emit(ctx, f"nn2c_squared_difference_{_SUFFIX[dtype]}", "nn2c_logic_params_t", {}, [a, b], out)
        return
    _per_tensor(ctx, [a, b, out])
    if dtype == "int16" and any(zero_point(v) != 0 for v in (a, b, out)):
        raise ctx.unsupported("int16 SQUARED_DIFFERENCE needs zero points of 0 (TFLite Micro requires it)")
    _emit(ctx, f"nn2c_squared_difference_{_SUFFIX[dtype]}", "nn2c_squared_difference_q_params_t",
          _squared_difference_fields(ctx, a, b, out), [a, b], out)


def _squared_difference_fields(ctx: EmitContext, a: Value, b: Value, out: Value) -> dict:
    left_shift = 7 if out.type.dtype == "int8" else 0
    s1, s2 = _f64(scale(a)), _f64(scale(b))
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = _smaller_than_one(ctx, s1 / twice_max, "input 1 multiplier")
    m2, sh2 = _smaller_than_one(ctx, s2 / twice_max, "input 2 multiplier")
    # TFLite: (1 << 2 * left_shift) * output scale is an int times a float, so a float
    denominator = float(np.float32(1 << (2 * left_shift)) * np.float32(scale(out)))
    mo, sho = _multiplier(ctx, twice_max * twice_max / denominator, "output")
    lo, hi = int_activation_range(ctx, "NONE", out)
    return {"input1_offset": -zero_point(a), "input2_offset": -zero_point(b), "output_offset": zero_point(out),
            "left_shift": left_shift, "input1_multiplier": m1, "input1_shift": sh1,
            "input2_multiplier": m2, "input2_shift": sh2, "output_multiplier": mo, "output_shift": sho,
            "act_min": lo, "act_max": hi}


# --- FLOOR_DIV, FLOOR_MOD, FMOD ------------------------------------------------------------------
@lowering("FLOOR_DIV", "FLOOR_MOD", "FMOD")
def division(node: Node, ctx: EmitContext) -> None:
    (a, b), out = _operands(node, ctx, 2)
    allowed = ("float32", "int32") if node.op == "FLOOR_DIV" else _MOD_TYPES
    dtype = _require(ctx, [a, b, out], allowed, f"{node.op} operands")
    if dtype != "float32" and any(v.type.quant is not None for v in (a, b, out)):
        raise ctx.unsupported(f"{node.op} of quantized {dtype} is not supported (TFLite Micro has float32 only)")
    _emit(ctx, f"nn2c_{node.op.lower()}_{_SUFFIX[dtype]}", "nn2c_logic_params_t", {}, [a, b], out)


# --- ADD_N ---------------------------------------------------------------------------------------
@lowering("ADD_N")
def add_n(node: Node, ctx: EmitContext) -> None:
    inputs = [v for v in node.inputs if v is not None]
    if len(inputs) < 2 or len(inputs) != len(node.inputs) or len(node.outputs) != 1:
        raise ctx.unsupported("expected two or more inputs and one output")
    out = node.outputs[0]
    dtype = _require(ctx, [*inputs, out], ("float32", "int8"), "ADD_N operands")
    if any(v.type.shape != out.type.shape for v in inputs):
        raise ctx.unsupported("ADD_N inputs must all have the output's shape (TFLite Micro does not broadcast)")
    count = out.type.num_elements
    if count == 0:
        return
    fields: dict = {"count": count, "num_inputs": len(inputs)}
    ctype = "nn2c_add_n_params_t"
    if dtype == "int8":
        fields.update(_add_n_fields(ctx, inputs, out))
        ctype = "nn2c_add_n_q_params_t"
    ctx.use_kernel("logic")
    c_type = "float" if dtype == "float32" else "int8_t"
    pointers = f"(const {c_type} *const[]){{{', '.join(ctx.ptr(v) for v in inputs)}}}"
    ctx.call(f"nn2c_add_n_{_SUFFIX[dtype]}", ctx.params_struct(ctype, fields), pointers, ctx.ptr(out))


def _add_n_fields(ctx: EmitContext, inputs: Sequence[Value], out: Value) -> dict:
    _per_tensor(ctx, [*inputs, out])
    first = inputs[0]
    if any(scale(v) != scale(first) or zero_point(v) != zero_point(first) for v in inputs):
        raise ctx.unsupported("int8 ADD_N inputs must share one scale and zero point (TFLite Micro requires it)")
    left_shift = 20
    s = _f64(scale(first))
    twice_max = 2.0 * s
    mi, shi = _smaller_than_one(ctx, s / twice_max, "input multiplier")
    mo, sho = _smaller_than_one(ctx, twice_max / ((1 << left_shift) * _f64(scale(out))), "output multiplier")
    lo, hi = int_activation_range(ctx, "NONE", out)
    return {"input_offset": -zero_point(first), "output_offset": zero_point(out), "left_shift": left_shift,
            "input_multiplier": mi, "input_shift": shi, "output_multiplier": mo, "output_shift": sho,
            "act_min": lo, "act_max": hi}


# --- PRELU ---------------------------------------------------------------------------------------
@lowering("PRELU")
def prelu(node: Node, ctx: EmitContext) -> None:
    (x, alpha), out = _operands(node, ctx, 2)
    dtype = _require(ctx, [x, out], ("float32", "int8", "int16"), "PRELU input and output")
    if dtype == "float32":
        _require(ctx, [alpha], ("float32",), "PRELU alpha")
        _emit(ctx, "nn2c_prelu_f32", "nn2c_logic_params_t", {}, [x, alpha], out)
        return
    _require(ctx, [alpha], ("int8",), f"{dtype} PRELU alpha")
    _per_tensor(ctx, [x, alpha, out])
    s_in, s_alpha, s_out = (_f64(scale(v)) for v in (x, alpha, out))
    m1, sh1 = _multiplier(ctx, s_in / s_out, "identity")
    m2, sh2 = _multiplier(ctx, s_in * s_alpha / s_out, "alpha")
    fields = {"input_offset": -zero_point(x), "alpha_offset": -zero_point(alpha), "output_offset": zero_point(out),
              "multiplier_positive": m1, "shift_positive": sh1, "multiplier_negative": m2, "shift_negative": sh2}
    _emit(ctx, f"nn2c_prelu_{_SUFFIX[dtype]}", "nn2c_prelu_q_params_t", fields, [x, alpha], out)
