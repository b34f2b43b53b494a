"""Quantization parameters of the TFLite int8 scheme, as TFLite's converter chooses them.

- Activations: per-tensor asymmetric int8. A real range [lo, hi] is widened to contain 0 (so that
  zero padding and ReLU are exact), scale = (hi - lo) / 255 and the zero point is -128 - lo / scale
  rounded and clamped to [-128, 127] (GetAsymmetricQuantizationParams).
- Weights of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED: per output channel symmetric, zero point
  0, scale = max|w_c| / 127, values in [-127, 127] (the narrow range TFLite uses for weights).
- Biases: int32, zero point 0, scale = input_scale * weight_scale[c].
Scales are rounded to float32, the precision a .tflite file stores and TFLite Micro computes with.
"""

from __future__ import annotations

import math

import numpy as np

from nn2c.ir import QuantParams

QMIN, QMAX = -128, 127
WEIGHT_QMAX = 127
# Below this a scale is a constant (or dead) tensor: any scale represents it, but the kernels'
# fixed-point rescales need a sane one (softmax needs scale * 2^26 > 1, logistic scale >= 2^-28).
MIN_SCALE = 1e-7


def f32(x: float) -> float:
    return float(np.float32(x))


def round_half_away(x: np.ndarray) -> np.ndarray:
    """std::round, as TFLite's converter rounds (numpy's rint rounds halves to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def activation_params(lo: float, hi: float) -> QuantParams:
    """Per-tensor asymmetric int8 parameters covering [lo, hi] (0 is always representable)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"range [{lo}, {hi}] is not finite")
    scale = max((hi - lo) / (QMAX - QMIN), MIN_SCALE)
    scale = f32(scale)
    zero_from_min = QMIN - lo / scale
    zero_point = int(min(max(float(round_half_away(np.asarray(zero_from_min))), QMIN), QMAX))
    return QuantParams((scale,), (zero_point,))


def fixed_params(scale: float, zero_point: int) -> QuantParams:
    return QuantParams((f32(scale),), (int(zero_point),))


def representable_range(quant: QuantParams) -> tuple[float, float]:
    s, z = quant.scale[0], quant.zero_point[0]
    return s * (QMIN - z), s * (QMAX - z)


def quantize_array(data: np.ndarray, quant: QuantParams, dtype: str = "int8") -> np.ndarray:
    """real -> stored integers (per tensor, or per channel along quant.axis), with saturation."""
    data = np.asarray(data, dtype=np.float64)
    scales = np.asarray(quant.scale, dtype=np.float64)
    zps = np.asarray(quant.zero_point, dtype=np.float64)
    if quant.per_channel:
        shape = [1] * data.ndim
        shape[quant.axis] = len(scales)
        scales, zps = scales.reshape(shape), zps.reshape(shape)
    else:  # scalars: a 0-d constant (an ONNX scalar operand) must keep its shape (), not become (1,)
        scales, zps = scales.reshape(()), zps.reshape(())
    q = round_half_away(data / scales) + zps
    info = np.iinfo(np.dtype(dtype))
    lo = -WEIGHT_QMAX if dtype == "int8" and quant.per_channel else info.min
    return np.asarray(np.clip(q, lo, info.max)).astype(dtype)


def weight_params(w: np.ndarray, axis: int) -> QuantParams:
    """Per-channel symmetric int8 parameters of a filter along its output-channel axis."""
    moved = np.moveaxis(np.asarray(w, dtype=np.float64), axis, 0).reshape(w.shape[axis], -1)
    peak = np.abs(moved).max(axis=1) if moved.size else np.zeros(w.shape[axis])
    scales = np.where(peak > 0, peak / WEIGHT_QMAX, 1.0)  # an all-zero channel: any scale is exact
    return QuantParams(tuple(f32(s) for s in scales), (0,) * len(scales), axis)


def bias_params(input_scale: float, weight_quant: QuantParams, channels: int) -> QuantParams:
    w_scales = list(weight_quant.scale) * (channels if not weight_quant.per_channel else 1)
    return QuantParams(tuple(float(np.float64(np.float32(input_scale)) * np.float64(s)) for s in w_scales),
                       (0,) * channels, 0)


def quantize_bias(bias: np.ndarray, quant: QuantParams) -> np.ndarray:
    scales = np.asarray(quant.scale, dtype=np.float64)
    q = round_half_away(np.asarray(bias, dtype=np.float64).reshape(-1) / scales)
    return np.clip(q, -(2**31) + 1, 2**31 - 1).astype(np.int32)
