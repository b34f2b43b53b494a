"""Helpers shared by lowerings: quantization lookups and parameter arrays."""

from __future__ import annotations

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.ir import Value
from nn2c.quant.fixedpoint import (
    activation_range_float,
    activation_range_quantized,
    defined_requant_multipliers,
    quantize_multipliers,
)

INT_RANGES = {"int8": (-128, 127), "int16": (-32768, 32767), "uint8": (0, 255)}


def scale(value: Value) -> float:
    quant = value.type.quant
    return quant.scale[0] if quant else 1.0


def zero_point(value: Value) -> int:
    quant = value.type.quant
    return quant.zero_point[0] if quant else 0


def scales(value: Value) -> list[float]:
    quant = value.type.quant
    return list(quant.scale) if quant else [1.0]


def int_activation_range(ctx: EmitContext, activation: str, output: Value) -> tuple[int, int]:
    qmin, qmax = INT_RANGES[output.type.dtype]
    try:
        return activation_range_quantized(activation, scale(output), zero_point(output), qmin, qmax)
    except ValueError as exc:
        raise ctx.unsupported(str(exc)) from None


def float_activation_range(ctx: EmitContext, activation: str) -> tuple[float, float]:
    try:
        return activation_range_float(activation)
    except ValueError as exc:
        raise ctx.unsupported(str(exc)) from None


def requant_multipliers(x: Value, out: Value, filter_scales: list[float]) -> list[float]:
    """A layer's per-channel requantisation multipliers, input scale x filter scale / output scale in double (the
    same IEEE steps as TFLite's), each checked by defined_requant_multipliers."""
    in_scale, out_scale = np.float64(scale(x)), np.float64(scale(out))
    return defined_requant_multipliers((in_scale * np.asarray(filter_scales, dtype=np.float64) / out_scale).tolist())


def multiplier_arrays(ctx: EmitContext, real_multipliers: list[float]) -> tuple[str, str]:
    """Flash arrays of the Q31 mantissas and shifts of real multipliers (TFLite QuantizeMultiplier)."""
    mantissas, shifts = quantize_multipliers(real_multipliers)
    return (
        ctx.const_array(mantissas, "int32_t", "output multipliers"),
        ctx.const_array(shifts, "int32_t", "output shifts"),
    )


def require_dtypes(ctx: EmitContext, values: list[Value | None], allowed: set[str], what: str) -> None:
    for value in values:
        if value is not None and value.type.dtype not in allowed:
            raise ctx.unsupported(f"{what} {value.name!r} has dtype {value.type.dtype}; supported: "
                                  f"{', '.join(sorted(allowed))}")
