"""Reference semantics of the spectral family (ir/ops/spectral.py), as onnx.reference defines them.

WINDOW, of the run-time size n and the static length L: N = n (periodic) or n - 1 (symmetric),
for i in [0, L): hann sin^2(pi i / N); hamming a - (1 - a) cos(2 pi i / N) with a = 25 / 46;
blackman 0.42 - 0.5 cos(2 pi i / N) + 0.08 cos(4 pi i / N); computed in double.

MEL_WEIGHT_MATRIX: mel(f) = 2595 log10(1 + f / 700); num_mel_bins + 2 points equally spaced by
(mel(upper) - mel(lower)) / (num_mel_bins + 2) from mel(lower), back in Hz, each mapped to the
bin floor((dft_length + 1) f / sample_rate) (truncated to an integer); mel bin i is the triangle
rising from point i to point i + 1 (a single 1 there when they coincide) and falling to point i + 2.
Entries outside the static output are not written (the C kernel bounds every write).

DFT along `axis` of length N: X[k] = sum_{t < min(n, N)} x[t] e^(-2 pi i k t / N) (inverse: the
conjugate exponent, divided by N); onesided keeps bins 0..N/2 of a forward transform; inverse and
onesided is the inverse real transform (numpy's irfft: the half spectrum extended by Hermitian
symmetry, the imaginary parts of bins 0 and N/2 ignored), a real output of length N.
"""

from __future__ import annotations

import math

import numpy as np

from nn2c.ir import Node
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays, ReferenceError

WINDOWS = {"hann": 0, "hamming": 1, "blackman": 2}


def window(kind: str, size: int, periodic: bool, length: int) -> np.ndarray:
    n_1 = float(size if periodic else size - 1)
    i = np.arange(length, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "hann":
            y = np.sin(i * math.pi / n_1) ** 2
        elif kind == "hamming":
            alpha = 25.0 / 46.0
            y = alpha - np.cos(i * math.pi * 2.0 / n_1) * (1.0 - alpha)
        elif kind == "blackman":
            y = 0.42 - np.cos(i * math.pi * 2.0 / n_1) * 0.5 + np.cos(i * math.pi * 4.0 / n_1) * 0.08
        else:
            raise ReferenceError(f"unknown window {kind!r}")
    return y.astype(np.float32)


def mel_weight_matrix(num_mel_bins: int, dft_length: int, sample_rate: int, lower: float, upper: float,
                      shape: tuple[int, int]) -> np.ndarray:
    out = np.zeros(shape, dtype=np.float64)
    if num_mel_bins <= 0 or sample_rate == 0:
        return out.astype(np.float32)
    points = np.arange(num_mel_bins + 2, dtype=np.float64)
    low_mel = 2595.0 * math.log1p(lower / 700.0) / math.log(10.0)
    high_mel = 2595.0 * math.log1p(upper / 700.0) / math.log(10.0)
    step = (high_mel - low_mel) / (num_mel_bins + 2)
    hertz = 700.0 * np.expm1((points * step + low_mel) / 2595.0 * math.log(10.0))
    with np.errstate(invalid="ignore", over="ignore"):
        bins = np.floor((dft_length + 1) * hertz / sample_rate)
    bins = np.where(np.isfinite(bins), np.clip(bins, -(2**31), 2**31 - 1), 0).astype(np.int64)
    rows, cols = shape

    def put(j: int, i: int, v: float) -> None:
        if 0 <= j < rows and 0 <= i < cols:
            out[j, i] = v

    for i in range(min(num_mel_bins, cols)):
        left, center, right = int(bins[i]), int(bins[i + 1]), int(bins[i + 2])
        if center == left:
            put(center, i, 1.0)
        else:
            for j in range(max(left, 0), min(center, rows - 1) + 1):
                put(j, i, (j - left) / (center - left))
        if right > center:
            for j in range(max(center, 0), min(right, rows)):
                put(j, i, (right - j) / (right - center))
    return out.astype(np.float32)


def dft(x: np.ndarray, axis: int, length: int, inverse: bool, onesided: bool) -> np.ndarray:
    data = np.asarray(x, dtype=np.float64)
    signal = data[..., 0] + (1j * data[..., 1] if data.shape[-1] == 2 else 0.0)
    if inverse and onesided:
        return np.fft.irfft(signal, n=length, axis=axis)[..., np.newaxis].astype(np.float32)
    result = np.fft.ifft(signal, n=length, axis=axis) if inverse else np.fft.fft(signal, n=length, axis=axis)
    if onesided:
        result = np.take(result, np.arange(length // 2 + 1), axis=axis)
    return np.stack([result.real, result.imag], axis=-1).astype(np.float32)


@evaluator("WINDOW")
def _window(node: Node, arrays: Arrays) -> list[np.ndarray]:
    size = arrays[0]
    assert size is not None
    out = node.outputs[0]
    kind = str(node.attrs.get("window", ""))
    return [window(kind, int(np.asarray(size).reshape(-1)[0]), bool(node.attrs.get("periodic", True)),
                   out.type.shape[0])]


@evaluator("MEL_WEIGHT_MATRIX")
def _mel(node: Node, arrays: Arrays) -> list[np.ndarray]:
    if any(a is None for a in arrays[:5]):
        raise ReferenceError("MEL_WEIGHT_MATRIX needs its five operands")
    bins, length, rate = (int(np.asarray(a).reshape(-1)[0]) for a in arrays[:3])
    lower, upper = (float(np.asarray(a).reshape(-1)[0]) for a in arrays[3:5])
    shape = node.outputs[0].type.shape
    return [mel_weight_matrix(bins, length, rate, lower, upper, (shape[0], shape[1]))]


@evaluator("DFT")
def _dft(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x = arrays[0]
    assert x is not None
    a = node.attrs
    return [dft(x, int(a["axis"]), int(a["length"]), bool(a.get("inverse", False)), bool(a.get("onesided", False)))]
