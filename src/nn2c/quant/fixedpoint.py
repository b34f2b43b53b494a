"""Compile-time fixed-point parameters, computed exactly as TFLite / TFLite Micro compute them.

TFLite turns a real multiplier into (int32 mantissa in Q0.31, power-of-two exponent) with frexp and
round-half-away-from-zero; kernels then apply it with nn2c_mbqm (kernels/nn2c_common.h). TFLite has
more than one such conversion, and nn2c matches each where TFLite Micro uses it:

- quantize_multiplier: QuantizeMultiplier with the exponent saturated at 30 (the
  TFLITE_SINGLE_ROUNDING build's rule), refusing negative and non-finite multipliers; the
  rescales of conv, fully-connected, pooling, element-wise and the other arithmetic kernels;
- quantize_multiplier_uncapped: QuantizeMultiplier as TFLite Micro's default (double-rounding)
  build compiles it, exponent not capped (softmax, log-softmax, whose Prepare checks look at it);
- round_frexp_q31: the int8 LOGISTIC / TANH Prepare's own frexp + TfLiteRound (no
  renormalisation, flush or cap);
- int16_lut_input_multiplier: the int16 LOGISTIC / TANH Prepare's 15-bit multiplier (doubling,
  truncation);
- downscale_int32_to_int16_multiplier: DownScaleInt32ToInt16Multiplier (HARD_SWISH int16 rescales).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nn2c.ir.ops import FUSED_ACTIVATIONS


def round_half_away(x: float) -> int:
    """C's std::round / TfLiteRound: halves go away from zero (Python's round goes to even)."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def _quantize_multiplier_steps(real_multiplier: float) -> tuple[int, int]:
    """The steps of TFLite QuantizeMultiplier that every build shares: frexp, the fraction rounded to
    Q31 (half away from zero), 2^31 renormalised to 2^30 with the exponent + 1, exponents below -31
    flushed to (0, 0)."""
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    q_fixed = round_half_away(fraction * (1 << 31))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:  # too small to represent: TFLite flushes to zero
        return 0, 0
    return q_fixed, shift


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier (quantization_util.cc) with the exponent saturated as the
    TFLITE_SINGLE_ROUNDING build does: real = mantissa * 2^(shift - 31), mantissa in [2^30, 2^31),
    shift <= 30 (a larger one becomes mantissa 2^31 - 1, shift 30, so that left shifts stay in range).
    Negative or non-finite multipliers raise ValueError (no kernel applies them)."""
    if not math.isfinite(real_multiplier) or real_multiplier < 0.0:
        raise ValueError(f"quantization multiplier {real_multiplier} is not a finite non-negative number")
    q_fixed, shift = _quantize_multiplier_steps(real_multiplier)
    if shift > 30:  # TFLite caps it so that left shifts stay in range
        shift = 30
        q_fixed = (1 << 31) - 1
    return int(q_fixed), int(shift)


# A requantisation multiplier from which TFLite Micro's default build (double rounding: QuantizeMultiplier's
# exponent not capped) shifts left by 31 or more in MultiplyByQuantizedMultiplier (1 << 31 and beyond, undefined in
# C++): no reference result exists, so the layers that requantise so refuse it (defined_requant_multipliers)
REQUANT_MULTIPLIER_LIMIT = 2.0**30


def defined_requant_multipliers(real_multipliers: Sequence[float]) -> list[float]:
    """A layer's per-channel requantisation multipliers (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
    TRANSPOSE_CONV, BATCH_MATMUL), as given; ValueError naming the first channel whose multiplier is
    REQUANT_MULTIPLIER_LIMIT or more."""
    real = list(real_multipliers)
    for channel, value in enumerate(real):
        if value >= REQUANT_MULTIPLIER_LIMIT:
            raise ValueError(f"channel {channel}'s output multiplier, input x filter / output scale, is "
                             f"{value:.3g}: TFLite's requantisation is undefined from 2^30")
    return real


def quantize_multipliers(real_multipliers: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """quantize_multiplier of each (int32 mantissas, int32 shifts), on arrays: the same IEEE double
    steps (frexp, the product by 2^31, + 0.5 and floor), so the same integers, for a layer's channels
    at once."""
    real = np.asarray(real_multipliers, dtype=np.float64).reshape(-1)
    bad = ~np.isfinite(real) | (real < 0.0)
    if bad.any():
        raise ValueError(f"quantization multiplier {real[bad][0]} is not a finite non-negative number")
    fraction, shift = np.frexp(real)
    scaled = fraction * float(1 << 31)
    q_fixed = (np.floor(np.abs(scaled) + 0.5) * np.where(scaled >= 0, 1.0, -1.0)).astype(np.int64)
    shift = shift.astype(np.int64)
    full = q_fixed == (1 << 31)
    q_fixed = np.where(full, q_fixed // 2, q_fixed)
    shift = np.where(full, shift + 1, shift)
    flushed = (real == 0.0) | (shift < -31)  # zero, or too small to represent: TFLite flushes to zero
    q_fixed, shift = np.where(flushed, 0, q_fixed), np.where(flushed, 0, shift)
    capped = shift > 30  # TFLite caps it so that left shifts stay in range
    q_fixed, shift = np.where(capped, (1 << 31) - 1, q_fixed), np.where(capped, 30, shift)
    return q_fixed.astype(np.int32), shift.astype(np.int32)


def quantize_multiplier_uncapped(real_multiplier: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier as TFLite Micro's default build compiles it (TFLITE_SINGLE_ROUNDING 0,
    double rounding): as quantize_multiplier but the exponent is not capped (31 for multipliers in
    [2^30, 2^31), more above) and the input is not checked. Softmax and log-softmax Prepare use it:
    their checks (an int16 softmax shift above 31, PreprocessSoftmaxScaling's left shift) see the
    uncapped exponent."""
    return _quantize_multiplier_steps(real_multiplier)


def quantize_multiplier_smaller_than_one(real_multiplier: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplierSmallerThanOneExp: returns (mantissa, shift <= 0)."""
    if not 0.0 < real_multiplier < 1.0:
        raise ValueError(f"multiplier {real_multiplier} is not in (0, 1)")
    return quantize_multiplier(real_multiplier)


def round_frexp_q31(real_multiplier: float) -> tuple[int, int]:
    """(mantissa, exponent) = (TfLiteRound(fraction * 2^31), exponent) of std::frexp, as TFLite Micro's
    int8 LOGISTIC and TANH Prepare compute input_multiplier / input_left_shift
    (CalculateArithmeticOpDataLogistic, tanh's CalculateArithmeticOpData). Unlike QuantizeMultiplier:
    a fraction that rounds up to 2^31 stays 2^31 (no renormalisation), tiny multipliers are not
    flushed, the exponent is not capped; the caller checks the range."""
    fraction, shift = math.frexp(real_multiplier)
    return round_half_away(fraction * (1 << 31)), shift


def int16_lut_input_multiplier(input_scale: float) -> tuple[int, int]:
    """TFLite Micro's int16 LOGISTIC / TANH Prepare for an input scale that is not a usable power of two:
    the multiplier that takes the input to units of 1 / (3 * 4096) (the lookup table's), as
    (multiplier, left shift): input_scale * 4096 * 3 doubled (shift + 1 each time, at most 31 times)
    until it exceeds 32767 / 2, then truncated to an integer (static_cast, no rounding). The caller
    refuses a multiplier above 32767."""
    real = float(input_scale) * 4096.0 * 3.0
    shift = 0
    while real <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        real *= 2.0
    return int(real), shift


def downscale_int32_to_int16_multiplier(multiplier: int) -> int:
    """TFLite DownScaleInt32ToInt16Multiplier: a Q0.31 mantissa (>= 0) rounded to Q0.15, saturated at
    2^15 - 1 (the int16 rescales of HARD_SWISH)."""
    if multiplier >= 2**31 - 1 - (1 << 15):
        return 2**15 - 1
    return (multiplier + (1 << 15)) >> 16


def preprocess_softmax_scaling(beta: float, input_scale: float, integer_bits: int) -> tuple[int, int] | None:
    """TFLite PreprocessSoftmaxScaling: QuantizeMultiplierGreaterThanOne(min(beta * input_scale *
    2^(31 - integer_bits), 2^31 - 1)) as (multiplier, left_shift >= 0), or None where TFLite's checks
    fail (a multiplier not above one, a negative shift)."""
    real = min(beta * input_scale * float(1 << (31 - integer_bits)), float((1 << 31) - 1))
    if not real > 1.0:
        return None
    multiplier, shift = quantize_multiplier_uncapped(real)
    return (multiplier, shift) if shift >= 0 else None


def log_softmax_reverse_scaling(multiplier: int, left_shift: int) -> tuple[int, int] | None:
    """The second half of TFLite PreprocessLogSoftmaxScalingExp: QuantizeMultiplierSmallerThanOneExp of
    2^(31 - left_shift) / multiplier, as (reverse_scaling_divisor, reverse_scaling_right_shift >= 0),
    or None where TFLite's checks fail (a divisor not in (0, 1), a positive shift)."""
    reverse = float(1 << (31 - left_shift)) / float(multiplier)
    if not 0.0 < reverse < 1.0:
        return None
    divisor, divisor_shift = quantize_multiplier_uncapped(reverse)
    if divisor_shift > 0:
        return None
    return divisor, -divisor_shift


def calculate_input_radius(integer_bits: int, left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLite CalculateInputRadius: the largest |input| whose rescale does not overflow."""
    rescaled = 1.0 * ((1 << integer_bits) - 1) * float(1 << (total_signed_bits - integer_bits)) / float(1 << left_shift)
    return math.floor(rescaled)


def f32(x: float) -> float:
    """Round a Python float to float32 precision (TFLite computes many scales in float)."""
    return float(np.float32(x))


def activation_range_quantized(
    activation: str, scale: float, zero_point: int, qmin: int, qmax: int
) -> tuple[int, int]:
    """TFLite CalculateActivationRangeQuantized: the fused activation as an integer clamp."""

    def quantize(value: float) -> int:
        # f / scale is evaluated in float32 in TFLite
        return zero_point + round_half_away(float(np.float32(value) / np.float32(scale)))

    if activation == "RELU":
        return max(qmin, quantize(0.0)), qmax
    if activation == "RELU6":
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    if activation == "RELU_N1_TO_1":
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    if activation in ("NONE", "", None):
        return qmin, qmax
    raise ValueError(f"fused activation {activation} has no integer range")


def activation_range_float(activation: str) -> tuple[float, float]:
    """TFLite CalculateActivationRange<float>."""
    inf = float("inf")
    if activation in ("NONE", "", None):
        return -inf, inf
    if activation not in FUSED_ACTIVATIONS:
        raise ValueError(f"fused activation {activation} is not a clamp")
    low, high = FUSED_ACTIVATIONS[activation]
    return low, inf if high is None else high


def rescale_smaller_than_one(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp (shift <= 0) on int32 values, exactly:
    SaturatingRoundingDoublingHighMul(x, multiplier), then RoundingDivideByPOT by -shift (halves away from
    zero both times). For tables a kernel reads instead of multiplying (the int8 ADD's rescaled inputs)."""
    if shift > 0:
        raise ValueError(f"shift {shift} is positive")
    v = np.asarray(x, dtype=np.int64)
    if multiplier == -(1 << 31) and np.any(v == -(1 << 31)):
        raise ValueError("SaturatingRoundingDoublingHighMul saturates: both operands are INT32_MIN")
    product = v * np.int64(multiplier)
    nudged = product + np.where(product >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))  # C's division: toward zero
    exponent = -shift
    mask = np.int64((1 << exponent) - 1)
    threshold = (mask >> 1) + (high < 0)
    return ((high >> exponent) + ((high & mask) > threshold)).astype(np.int64)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier (double rounding) on int32 values, exactly, as nn2c_mbqm: x shifted
    left by a positive shift (wrapping at 32 bits, as the kernel's shift does), then
    rescale_smaller_than_one by the rest."""
    v = np.asarray(x, dtype=np.int64) << max(shift, 0)
    wrapped = (v + (1 << 31)) % (1 << 32) - (1 << 31)
    return rescale_smaller_than_one(wrapped, multiplier, min(shift, 0))
