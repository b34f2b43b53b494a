"""Element-wise operators: ADD, MUL, DIV, MAXIMUM, MINIMUM, QUANTIZE, DEQUANTIZE, CAST.

Binary operators broadcast numpy-style (up to 8 dimensions). At compile time the two input shapes
are folded into a loop nest over the output (`broadcast_loops`): unit output dimensions are dropped
and neighbouring dimensions fused wherever every tensor is contiguous across them, so equal shapes
become one flat loop and an SE block's [N,H,W,C] * [N,1,1,C] becomes two loops.

Quantized parameters are computed as TFLite Micro's Prepare computes them:
  ADD int8/int16 (CalculateOpDataAdd), left_shift = 20 (int8) or 15 (int16), in double:
      twice_max = 2 * max(s1, s2);  m1 = s1 / twice_max;  m2 = s2 / twice_max;
      m_out = twice_max / (2^left_shift * s_out)        (each QuantizeMultiplierSmallerThanOneExp)
      y = clamp(zp_out + M(M1((x1 - zp1) << ls) + M2((x2 - zp2) << ls)))
  MUL int8/int16 (CalculateOpDataMul): m = s1 * s2 / s_out in double;
      y = clamp(zp_out + M((x1 - zp1) * (x2 - zp2)))
  DIV int8 (CalculateOpDataDiv): m = (double)(float)(s1 / (s2 * s_out)), evaluated in float;
      y = clamp(zp_out + M'((x1 - zp1) / (x2 - zp2)))  with TFLite's reciprocal-based quotient.
  QUANTIZE float -> int: y = clamp(round(x / s_out) + zp_out) in float (AffineQuantize);
      int -> int: m = s_in / s_out in double (QuantizeMultiplier); y = clamp(M(x - zp_in) + zp_out).
  DEQUANTIZE: y = (float)(s_in * (x - zp_in)).
  CAST: C conversions; float -> integer truncates and saturates (NaN -> 0), anything -> bool is x != 0.
Integer tensors without quantization parameters (ONNX arithmetic on int8 / uint8 / int16 / int64,
as onnxruntime computes it): ADD, SUB and MUL wrap modulo 2^bits, DIV truncates towards zero (a zero
divisor gives 0, MIN / -1 gives MIN), no fused activation (`nn2c_<op>_wrap_<suffix>`).
M(.) is the fixed-point multiply by a (mantissa, shift) pair (MultiplyByQuantizedMultiplier). Fused
activations become integer clamps (CalculateActivationRangeQuantized), float clamps, or int32 clamps
(CalculateActivationRange<int32_t>; TFLite Micro's int32 ADD ignores its activation).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nn2c.codegen.context import EmitContext, format_field
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import float_activation_range, int_activation_range, scale, zero_point
from nn2c.ir import Node, Value
from nn2c.quant.fixedpoint import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    quantize_multiplier_smaller_than_one,
    rescale_smaller_than_one,
)

MAX_DIMS = 8  # NN2C_EW_MAX_DIMS in nn2c_elementwise.h
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# dtype -> suffix of the kernel functions
_SUFFIX = {"int8": "s8", "int16": "s16", "int32": "i32", "int64": "i64", "float32": "f32", "uint8": "u8",
           "bool": "b8"}
_REQUANTIZE_PAIRS = {
    ("int8", "int8"), ("int8", "int16"), ("int8", "uint8"), ("int8", "int32"),
    ("int16", "int8"), ("int16", "int16"), ("int16", "int32"),
    ("uint8", "int8"), ("int32", "int8"), ("int32", "int16"),
}
_CAST_TYPES = ("int8", "uint8", "int16", "int32", "float32", "bool")

Loop = tuple[int, int, int]  # (extent, input-1 stride, input-2 stride), in elements


# --- broadcasting --------------------------------------------------------------------------------
def broadcast_loops(shape1: Sequence[int], shape2: Sequence[int], out_shape: Sequence[int]) -> list[Loop]:
    """The fused loop nest (outermost first) that walks the output and both broadcast inputs.

    Raises ValueError when the shapes do not broadcast to out_shape. The innermost loop's input
    strides are 0 (broadcast) or 1 (contiguous).
    """
    rank = max(len(shape1), len(shape2), len(out_shape), 1)
    a, b, o = ((1,) * (rank - len(s)) + tuple(int(d) for d in s) for s in (shape1, shape2, out_shape))
    for da, db, do in zip(a, b, o, strict=True):
        if da not in (do, 1) or db not in (do, 1) or do != max(da, db):
            raise ValueError(f"shapes {tuple(shape1)} and {tuple(shape2)} do not broadcast to {tuple(out_shape)}")
    loops: list[Loop] = []  # innermost first while building
    stride_a = stride_b = 1
    for da, db, do in reversed(list(zip(a, b, o, strict=True))):
        if do != 1:
            loop = (do, stride_a if da != 1 else 0, stride_b if db != 1 else 0)
            if loops and _fusable(loops[-1], loop):
                inner = loops.pop()
                loop = (inner[0] * do, inner[1], inner[2])
            loops.append(loop)
        stride_a *= da
        stride_b *= db
    if not loops:
        loops = [(1, 1, 1)]
    return loops[::-1]


def _fusable(inner: Loop, outer: Loop) -> bool:
    """An outer loop folds into the inner one when each input steps on as if the two were one loop."""
    extent, sa, sb = inner
    return outer[1] == sa * extent and outer[2] == sb * extent


def broadcast_field(ctx: EmitContext, a: Value, b: Value, out: Value) -> str:
    try:
        loops = broadcast_loops(a.type.shape, b.type.shape, out.type.shape)
    except ValueError as exc:
        raise ctx.unsupported(str(exc)) from None
    if len(loops) > MAX_DIMS:
        raise ctx.unsupported(f"broadcast needs {len(loops)} loops; at most {MAX_DIMS} are supported")
    dims = [d for d, _, _ in loops]
    s1 = [s for _, s, _ in loops]
    s2 = [s for _, _, s in loops]
    return (f"{{.rank = {len(loops)}, .dims = {loop_array(dims)}, .stride1 = {loop_array(s1)}, "
            f".stride2 = {loop_array(s2)}}}")


def loop_array(values: list[int]) -> str:
    """A broadcast loop nest's array (nn2c_ew_bcast_t): a constant of its own as long as the nest (a compound
    literal, static as its struct; at least one element)."""
    return f"(const int32_t[]){format_field(list(values) or [0])}"


# --- operand checks ------------------------------------------------------------------------------
def _binary_operands(node: Node, ctx: EmitContext) -> tuple[Value, Value, Value]:
    a, b = node.input(0), node.input(1)
    if a is None or b is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected two inputs and one output")
    return a, b, node.outputs[0]


def _require_dtypes(ctx: EmitContext, values: Sequence[Value], dtype: str) -> None:
    bad = [v for v in values if v.type.dtype != dtype]
    if bad:
        kinds = ", ".join(f"{v.name!r}: {v.type.dtype}" for v in bad)
        raise ctx.unsupported(f"all operands must be {dtype} here; got {kinds}")


def _require_per_tensor(ctx: EmitContext, values: Sequence[Value]) -> None:
    for v in values:
        if v.type.quant is None:
            raise ctx.unsupported(f"{v.name!r} ({v.type.dtype}) has no quantization parameters")
        if v.type.quant.per_channel:
            raise ctx.unsupported(f"{v.name!r} is quantized per channel; TFLite Micro needs per-tensor here")


def _f32(x: float) -> np.float32:
    return np.float32(x)


def _smaller_than_one(ctx: EmitContext, real: float, what: str) -> tuple[int, int]:
    try:
        return quantize_multiplier_smaller_than_one(real)
    except ValueError:
        raise ctx.unsupported(f"{what} multiplier {real:g} is not in (0, 1) as TFLite requires") from None


def _multiplier(ctx: EmitContext, real: float, what: str) -> tuple[int, int]:
    """QuantizeMultiplier, refusing multipliers whose shift TFLite's double-rounding path cannot apply."""
    if not 0.0 <= real < 2.0**30:
        raise ctx.unsupported(f"{what} multiplier {real:g} is out of range")
    return quantize_multiplier(real)


def _int32_activation_range(ctx: EmitContext, activation: str) -> tuple[int, int]:
    ranges = {"NONE": (INT32_MIN, INT32_MAX), "RELU": (0, INT32_MAX), "RELU6": (0, 6), "RELU_N1_TO_1": (-1, 1)}
    if activation not in ranges:
        raise ctx.unsupported(f"fused activation {activation} is not a clamp")
    return ranges[activation]


def _activation(node: Node) -> str:
    return node.fused_activation


def _emit_binary(ctx: EmitContext, function: str, ctype: str, fields: dict, a: Value, b: Value, out: Value) -> None:
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("elementwise")
    params = ctx.params_struct(ctype, {"bc": broadcast_field(ctx, a, b, out), **fields})
    ctx.call(function, params, ctx.ptr(a), ctx.ptr(b), ctx.ptr(out))


_WRAP_DTYPES = ("int8", "uint8", "int16", "int64")


def plain_integer(values: Sequence[Value]) -> bool:
    """Integer operands without quantization: arithmetic on the stored integers themselves."""
    return all(v.type.dtype in _WRAP_DTYPES and v.type.quant is None for v in values)


def emit_wrapping(ctx: EmitContext, node: Node, a: Value, b: Value, out: Value) -> None:
    """ADD / SUB / MUL / DIV of unquantized integers: two's-complement wrapping, truncating division."""
    _require_dtypes(ctx, [a, b, out], out.type.dtype)
    if _activation(node) != "NONE":
        raise ctx.unsupported(f"{node.op} of unquantized {out.type.dtype} with a fused activation "
                              f"({_activation(node)}); apply the activation as its own operator")
    _emit_binary(ctx, f"nn2c_{node.op.lower()}_wrap_{_SUFFIX[out.type.dtype]}", "nn2c_ew_minmax_params_t", {},
                 a, b, out)


def _float_params(ctx: EmitContext, node: Node) -> dict:
    lo, hi = float_activation_range(ctx, _activation(node))
    return {"act_min": lo, "act_max": hi}


# --- ADD -----------------------------------------------------------------------------------------
@lowering("ADD")
def add(node: Node, ctx: EmitContext) -> None:
    a, b, out = _binary_operands(node, ctx)
    if plain_integer([a, b, out]):
        emit_wrapping(ctx, node, a, b, out)
        return
    dtype = out.type.dtype
    if dtype in ("int8", "int16"):
        _require_dtypes(ctx, [a, b, out], dtype)
        _require_per_tensor(ctx, [a, b, out])
        fields = _add_q_fields(ctx, node, a, b, out)
        if dtype == "int8" and _scalar_table(ctx, "ADD", a, b, out, fields, _add_table):
            return
        if (ctx.target.simd is not None and dtype == "int8" and a.type.shape == b.type.shape == out.type.shape
                and out.type.num_elements > 0):
            _add_s8_simd(ctx, fields, a, b, out)
            return
        _emit_binary(ctx, f"nn2c_add_{_SUFFIX[dtype]}", "nn2c_add_q_params_t", fields, a, b, out)
    elif dtype == "float32":
        _require_dtypes(ctx, [a, b, out], dtype)
        _emit_binary(ctx, "nn2c_add_f32", "nn2c_ew_f32_params_t", _float_params(ctx, node), a, b, out)
    elif dtype == "int32":
        _require_dtypes(ctx, [a, b, out], dtype)
        # TFLite Micro runs int32 ADD without its fused activation (the sum wraps)
        fields = {"act_min": INT32_MIN, "act_max": INT32_MAX}
        _emit_binary(ctx, "nn2c_add_i32", "nn2c_ew_i32_params_t", fields, a, b, out)
    else:
        raise ctx.unsupported(f"ADD of {dtype} is not supported (int8, int16, int32, float32 are)")


def _add_q_fields(ctx: EmitContext, node: Node, a: Value, b: Value, out: Value) -> dict:
    left_shift = 15 if out.type.dtype == "int16" else 20
    s1, s2, so = (float(_f32(scale(v))) for v in (a, b, out))
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = _smaller_than_one(ctx, s1 / twice_max, "input 1")
    m2, sh2 = _smaller_than_one(ctx, s2 / twice_max, "input 2")
    mo, sho = _smaller_than_one(ctx, twice_max / ((1 << left_shift) * so), "output")
    act_min, act_max = int_activation_range(ctx, _activation(node), out)
    return {
        "input1_offset": -zero_point(a), "input2_offset": -zero_point(b), "output_offset": zero_point(out),
        "left_shift": left_shift,
        "input1_multiplier": m1, "input1_shift": sh1,
        "input2_multiplier": m2, "input2_shift": sh2,
        "output_multiplier": mo, "output_shift": sho,
        "act_min": act_min, "act_max": act_max,
    }


def _add_s8_simd(ctx: EmitContext, fields: dict, a: Value, b: Value, out: Value) -> None:
    """Cortex-M: same-shape int8 ADD without the broadcast walk (kernels/nn2c_simd.c; MVE: 4 lanes); fields:
    _add_q_fields'."""
    from nn2c.codegen.ops.conv import requant_rounding

    shifts = [fields["input1_shift"], fields["input2_shift"], fields["output_shift"]]
    ctx.use_kernel("simd")
    params = ctx.params_struct("nn2c_add_simd_params_t", {
        "count": out.type.num_elements,
        "input1_offset": fields["input1_offset"], "input2_offset": fields["input2_offset"],
        "output_offset": fields["output_offset"],
        "multipliers": [fields["input1_multiplier"], fields["input2_multiplier"], fields["output_multiplier"]],
        "shifts": shifts,
        "rounding": [int(r) for r in requant_rounding(np.array(shifts))],
        "act_min": fields["act_min"], "act_max": fields["act_max"],
        **_add_scaled_tables(ctx, fields, out.type.num_elements),
    })
    ctx.call("nn2c_add_s8_simd", params, ctx.ptr(a), ctx.ptr(b), ctx.ptr(out))


# An Arm DSP ADD of at least this many elements reads its inputs' rescaled values from two tables of 256
# int32 (2 KB of flash, or less where two ADDs share a table): 28 instructions fewer per element (resnet's ADDs
# on Cortex-M4: 43 -> 15, measured in QEMU); below it, and at --optimize size, they are computed.
ADD_TABLE_MIN_ELEMENTS = 1024


def _add_scaled_tables(ctx: EmitContext, fields: dict[str, int], count: int) -> dict[str, str]:
    """nn2c_add_simd_params_t.scaled1 / scaled2: per input the table of ((x + offset) << left_shift) rescaled
    by its multiplier for x = -128..127 (rescale_smaller_than_one: TFLite's arithmetic, exactly), pointed at
    its entry for x = 0; NULL where computed per element."""
    if ctx.target.simd != "dsp" or ctx.optimize == "size" or count < ADD_TABLE_MIN_ELEMENTS:
        return {"scaled1": "NULL", "scaled2": "NULL"}
    x = np.arange(-128, 128, dtype=np.int64)
    tables = {}
    for k in ("1", "2"):
        shifted = (x + fields[f"input{k}_offset"]) * (1 << fields["left_shift"])
        values = rescale_smaller_than_one(shifted, fields[f"input{k}_multiplier"], fields[f"input{k}_shift"])
        ident = ctx.const_array(values.astype(np.int32), "int32_t",
                                f"ADD input {k} rescaled, ((x + offset) << {fields['left_shift']}) times its multiplier, "
                                "x = -128..127")
        tables[f"scaled{k}"] = f"{ident} + 128"
    return tables


# --- int8 ADD / MUL by a one-element constant: a table ------------------------------------------------
# The output is then a function of one int8 input: its 256 values are computed here with the kernel's
# integer arithmetic (TFLite's, exactly) and the layer becomes a table lookup (nn2c_extra_lut_s8): some 5
# instructions an element on a Cortex-M4 instead of some 40 through the broadcast walk, for 256 bytes of flash
# in place of the layer's parameter struct. Not at --optimize size, where the struct is smaller.
def _scalar_table(ctx: EmitContext, op: str, a: Value, b: Value, out: Value, fields: dict,
                  values: Callable[[dict, np.ndarray, np.ndarray], np.ndarray]) -> bool:
    """Emit an int8 binary operator as a table where one operand is a one-element constant and the other has the
    output's shape; False (nothing emitted) otherwise. values(fields, x1, x2): the unclamped outputs."""
    if ctx.optimize == "size" or out.type.num_elements == 0:
        return False
    if b.is_constant and b.type.num_elements == 1 and a.type.shape == out.type.shape:
        tensor, constant, first = a, b, True
    elif a.is_constant and a.type.num_elements == 1 and b.type.shape == out.type.shape:
        tensor, constant, first = b, a, False
    else:
        return False
    assert constant.data is not None
    x = np.arange(-128, 128, dtype=np.int64)
    c = np.full(256, int(np.asarray(constant.data).reshape(-1)[0]), dtype=np.int64)
    raw = values(fields, x, c) if first else values(fields, c, x)
    table = np.clip(raw, fields["act_min"], fields["act_max"]).astype(np.int8)
    emit_table_s8(ctx, tensor, out, out.type.num_elements, table,
                  f"{op} by the constant {int(c[0])}, x = -128..127")
    return True


def _add_table(fields: dict, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """nn2c_ew_add_q before its clamp."""
    scaled = [rescale_smaller_than_one((x + fields[f"input{k}_offset"]) << fields["left_shift"],
                                       fields[f"input{k}_multiplier"], fields[f"input{k}_shift"])
              for k, x in (("1", x1), ("2", x2))]
    total = (scaled[0] + scaled[1] + (1 << 31)) % (1 << 32) - (1 << 31)  # (the kernel's wrapping sum)
    return rescale_smaller_than_one(total, fields["output_multiplier"], fields["output_shift"]) + fields["output_offset"]


def _mul_table(fields: dict, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """nn2c_ew_mul_q before its clamp."""
    product = (x1 + fields["input1_offset"]) * (x2 + fields["input2_offset"])
    return fields["output_offset"] + multiply_by_quantized_multiplier(product, fields["output_multiplier"],
                                                                      fields["output_shift"])


def _channel_scaling(ctx: EmitContext, a: Value, b: Value, out: Value, fields: dict) -> bool:
    """Emit an int8 MUL of a tensor by one value per channel (an SE block's [N, H, W, C] * [N, 1, 1, C], either
    operand first) on nn2c_mul_s8_channels where its output stage fits a doubled record (int8's whole activation
    range, a shift in DOUBLED_RECORD_SHIFTS); False (nothing emitted) otherwise."""
    from nn2c.codegen.ops.conv import DOUBLED_RECORD_SHIFTS, doubled_record_high

    shape = out.type.shape
    if not shape or out.type.num_elements == 0 or (fields["act_min"], fields["act_max"]) != (-128, 127):
        return False
    shift = fields["output_shift"]
    if not DOUBLED_RECORD_SHIFTS[0] <= shift <= DOUBLED_RECORD_SHIFTS[1]:
        return False

    def per_channel(v: Value) -> bool:
        return v.type.num_elements == shape[-1] and (not v.type.shape or v.type.shape[-1] == shape[-1])

    if a.type.shape == shape and per_channel(b):
        full, scales, x_offset, s_offset = a, b, fields["input1_offset"], fields["input2_offset"]
    elif b.type.shape == shape and per_channel(a):
        full, scales, x_offset, s_offset = b, a, fields["input2_offset"], fields["input1_offset"]
    else:
        return False
    r = -shift
    high = int(doubled_record_high(np.array(r, dtype=np.int64), fields["output_offset"]))
    if abs(high) + 2 * 255 * 255 + 2 >= 2**31:  # (the record's high word plus the doubled product in int32)
        return False
    ctx.use_kernel("elementwise")
    params = ctx.params_struct("nn2c_mul_channels_params_t", {
        "pixels": out.type.num_elements // shape[-1], "channels": shape[-1], "x_offset": x_offset,
        "s_offset": s_offset, "multiplier": fields["output_multiplier"], "high": high, "shift": r,
    })
    ctx.call("nn2c_mul_s8_channels", params, ctx.ptr(full), ctx.ptr(scales), ctx.ptr(out))
    return True


def emit_table_s8(ctx: EmitContext, x: Value, out: Value, count: int, table: np.ndarray, what: str) -> None:
    """y = table[x + 128] over count int8 elements (nn2c_extra_lut_s8)."""
    ctx.use_kernel("extra")
    ctx.call("nn2c_extra_lut_s8", str(count), ctx.const_array(table, "int8_t", f"{what} table"),
             ctx.ptr(x), ctx.ptr(out))


# --- MUL -----------------------------------------------------------------------------------------
@lowering("MUL")
def mul(node: Node, ctx: EmitContext) -> None:
    a, b, out = _binary_operands(node, ctx)
    if plain_integer([a, b, out]):
        emit_wrapping(ctx, node, a, b, out)
        return
    dtype = a.type.dtype
    _require_dtypes(ctx, [a, b, out], dtype)
    if dtype in ("int8", "int16"):
        _require_per_tensor(ctx, [a, b, out])
        if dtype == "int16" and any(zero_point(v) != 0 for v in (a, b, out)):
            raise ctx.unsupported("int16 MUL needs zero points of 0 (TFLite Micro requires it)")
        real = float(np.float64(_f32(scale(a))) * np.float64(_f32(scale(b))) / np.float64(_f32(scale(out))))
        m, shift = _multiplier(ctx, real, "output")
        act_min, act_max = int_activation_range(ctx, _activation(node), out)
        fields = {
            "input1_offset": -zero_point(a), "input2_offset": -zero_point(b), "output_offset": zero_point(out),
            "output_multiplier": m, "output_shift": shift, "act_min": act_min, "act_max": act_max,
        }
        if dtype == "int8" and (_scalar_table(ctx, "MUL", a, b, out, fields, _mul_table)
                                or _channel_scaling(ctx, a, b, out, fields)):
            return
        _emit_binary(ctx, f"nn2c_mul_{_SUFFIX[dtype]}", "nn2c_mul_q_params_t", fields, a, b, out)
    elif dtype == "float32":
        _emit_binary(ctx, "nn2c_mul_f32", "nn2c_ew_f32_params_t", _float_params(ctx, node), a, b, out)
    elif dtype == "int32":
        lo, hi = _int32_activation_range(ctx, _activation(node))
        _emit_binary(ctx, "nn2c_mul_i32", "nn2c_ew_i32_params_t", {"act_min": lo, "act_max": hi}, a, b, out)
    else:
        raise ctx.unsupported(f"MUL of {dtype} is not supported (int8, int16, int32, float32 are)")


# --- DIV -----------------------------------------------------------------------------------------
@lowering("DIV")
def div(node: Node, ctx: EmitContext) -> None:
    a, b, out = _binary_operands(node, ctx)
    if plain_integer([a, b, out]):
        emit_wrapping(ctx, node, a, b, out)
        return
    dtype = out.type.dtype
    _require_dtypes(ctx, [a, b, out], dtype)
    if dtype == "int8":
        _require_per_tensor(ctx, [a, b, out])
        # TFLite evaluates s1 / (s2 * s_out) in float, then widens it to double
        real = float(_f32(scale(a)) / (_f32(scale(b)) * _f32(scale(out))))
        m, shift = _multiplier(ctx, real, "output")
        act_min, act_max = int_activation_range(ctx, _activation(node), out)
        fields = {
            "input1_offset": -zero_point(a), "input2_offset": -zero_point(b), "output_offset": zero_point(out),
            "output_multiplier": m, "output_shift": shift, "act_min": act_min, "act_max": act_max,
        }
        _emit_binary(ctx, "nn2c_div_s8", "nn2c_mul_q_params_t", fields, a, b, out)
    elif dtype == "float32":
        _emit_binary(ctx, "nn2c_div_f32", "nn2c_ew_f32_params_t", _float_params(ctx, node), a, b, out)
    elif dtype == "int32":
        lo, hi = _int32_activation_range(ctx, _activation(node))
        _emit_binary(ctx, "nn2c_div_i32", "nn2c_ew_i32_params_t", {"act_min": lo, "act_max": hi}, a, b, out)
    else:
        raise ctx.unsupported(f"DIV of {dtype} is not supported (int8, int32, float32 are)")


# --- MAXIMUM / MINIMUM ---------------------------------------------------------------------------
@lowering("MAXIMUM", "MINIMUM")
def maximum_minimum(node: Node, ctx: EmitContext) -> None:
    a, b, out = _binary_operands(node, ctx)
    dtype = out.type.dtype
    if dtype not in ("int8", "uint8", "int16", "int32", "int64", "float32"):
        raise ctx.unsupported(f"{node.op} of {dtype} is not supported (int8, uint8, int16, int32, int64, "
                              "float32 are)")
    _require_dtypes(ctx, [a, b, out], dtype)
    # TFLite Micro compares the raw values, whatever the quantization
    _emit_binary(ctx, f"nn2c_{node.op.lower()}_{_SUFFIX[dtype]}", "nn2c_ew_minmax_params_t", {}, a, b, out)


# --- QUANTIZE / DEQUANTIZE -----------------------------------------------------------------------
def _unary_operands(node: Node, ctx: EmitContext) -> tuple[Value, Value]:
    x = node.input(0)
    if x is None or len(node.outputs) != 1:
        raise ctx.unsupported("expected one input and one output")
    out = node.outputs[0]
    if x.type.num_elements != out.type.num_elements:
        raise ctx.unsupported(f"input {x.type} and output {out.type} differ in size")
    return x, out


@lowering("QUANTIZE")
def quantize(node: Node, ctx: EmitContext) -> None:
    x, out = _unary_operands(node, ctx)
    _require_per_tensor(ctx, [out])
    pair = (x.type.dtype, out.type.dtype)
    count = out.type.num_elements
    if x.type.dtype == "float32" and out.type.dtype in ("int8", "int16"):
        fields = {"count": count, "scale": float(_f32(scale(out))), "zero_point": zero_point(out)}
        function, ctype = f"nn2c_quantize_f32_{_SUFFIX[out.type.dtype]}", "nn2c_quantize_params_t"
    elif pair in _REQUANTIZE_PAIRS:
        _require_per_tensor(ctx, [x])
        real = float(np.float64(_f32(scale(x))) / np.float64(_f32(scale(out))))
        m, shift = _multiplier(ctx, real, "requantization")
        fields = {"count": count, "input_zero_point": zero_point(x), "output_zero_point": zero_point(out),
                  "multiplier": m, "shift": shift}
        function = f"nn2c_requantize_{_SUFFIX[pair[0]]}_{_SUFFIX[pair[1]]}"
        ctype = "nn2c_requantize_params_t"
    else:
        raise ctx.unsupported(f"QUANTIZE from {pair[0]} to {pair[1]} is not supported by TFLite Micro")
    if count == 0:
        return
    ctx.use_kernel("elementwise")
    ctx.call(function, ctx.params_struct(ctype, fields), ctx.ptr(x), ctx.ptr(out))


@lowering("DEQUANTIZE")
def dequantize(node: Node, ctx: EmitContext) -> None:
    x, out = _unary_operands(node, ctx)
    if x.type.dtype not in ("int8", "int16", "uint8") or out.type.dtype != "float32":
        raise ctx.unsupported(f"DEQUANTIZE from {x.type.dtype} to {out.type.dtype} is not supported "
                              "(int8, int16, uint8 to float32 are)")
    _require_per_tensor(ctx, [x])
    count = out.type.num_elements
    if count == 0:
        return
    fields = {"count": count, "scale": float(_f32(scale(x))), "zero_point": zero_point(x)}
    ctx.use_kernel("elementwise")
    ctx.call(f"nn2c_dequantize_{_SUFFIX[x.type.dtype]}_f32", ctx.params_struct("nn2c_quantize_params_t", fields),
             ctx.ptr(x), ctx.ptr(out))


# --- CAST ----------------------------------------------------------------------------------------
@lowering("CAST")
def cast(node: Node, ctx: EmitContext) -> None:
    x, out = _unary_operands(node, ctx)
    for v in (x, out):
        if v.type.dtype not in _CAST_TYPES:
            raise ctx.unsupported(f"CAST of {v.type.dtype} is not supported ({', '.join(_CAST_TYPES)} are)")
    count = out.type.num_elements
    if count == 0:
        return
    ctx.use_kernel("elementwise")
    ctx.call(f"nn2c_cast_{_SUFFIX[x.type.dtype]}_{_SUFFIX[out.type.dtype]}", str(count), ctx.ptr(x), ctx.ptr(out))

