"""Reference semantics of TFLite Micro's Signal operators (ir/ops/signal.py), integer for integer.

Each function follows tflite-micro signal/src/<op>.cc (the RFFT and IRFFT: kissfft v130 with FIXED_POINT
16 or 32, or float, as signal/src/{rfft,irfft}_{int16,int32,float}.cc build it) with Python integers (numpy float32
scalars for the float FFT, rounded after every operation as C does), reproducing TFLM's int16 stores,
int32 wrap-arounds and unsigned arithmetic; the C kernels (kernels/nn2c_signal.c) do the same.
The kissfft plan (factors, twiddles) is computed here once and shared with the lowering, which
writes it into the generated C as constants.

SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION and the streaming operators (delay, framer, stacker,
overlap-add) evaluate one invocation from the state they are given (their state inputs); keeping the
state across invocations is the generated code's business. The streaming functions below also return
the next state, so a test can run a stream through them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nn2c.ir import Node
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays, ReferenceError

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


def s16(v: int) -> int:
    """The int16 an int becomes when stored into int16_t (low 16 bits)."""
    v &= 0xFFFF
    return v - 0x10000 if v >= 0x8000 else v


def s32(v: int) -> int:
    v &= _M32
    return v - (1 << 32) if v >= 0x80000000 else v


def msb32(x: int) -> int:
    """MostSignificantBit32 as TFLM builds it with GCC: 32 - clz(x), and 32 for 0."""
    return 32 if x == 0 else x.bit_length()


def _u32(array: np.ndarray) -> list[int]:
    return [int(v) & _M32 for v in np.asarray(array).reshape(-1)]


def _as_i32(values: list[int], shape: tuple[int, ...]) -> np.ndarray:
    return np.array([s32(v) for v in values], dtype=np.int64).astype(np.int32).reshape(shape)


# --- window, auto scale ----------------------------------------------------------------------
def window(x: np.ndarray, weights: np.ndarray, shift: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.int64).reshape(-1)
    flat = np.asarray(x, dtype=np.int64).reshape(-1, w.size)
    return np.clip((flat * w) >> shift, -32768, 32767).astype(np.int16).reshape(np.shape(x))


def fft_auto_scale(x: np.ndarray) -> tuple[np.ndarray, int]:
    flat = [int(v) for v in np.asarray(x).reshape(-1)]
    peak = 0
    for value in flat:  # MaxAbs16 with its int16 variable (-(-32768) stores as -32768)
        if value > peak:
            peak = value
        elif -value > peak:
            peak = s16(-value)
    scale_bits = max(16 - msb32(peak & _M32) - 1, 0)
    out = [s16(v * (1 << scale_bits)) for v in flat]
    return np.array(out, dtype=np.int16).reshape(np.shape(x)), scale_bits


# --- kissfft v130, FIXED_POINT 16 ------------------------------------------------------------
def kiss_factors(n: int) -> list[int]:
    """kf_factor: powers of 4, then 2, then odd primes; (radix, remaining length) pairs."""
    factors: list[int] = []
    p = 4
    floor_sqrt = math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = 2 if p == 4 else 3 if p == 2 else p + 2
            if p > floor_sqrt:
                p = n
        n //= p
        factors += [p, n]
        if n <= 1:
            return factors


class _Scalar:
    """kissfft's scalar arithmetic for one kiss_fft_scalar type: fixed point (int16: FRACBITS 15,
    int32: FRACBITS 31) with its C_FIXDIV and stores that keep the low bits, or float32."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype
        self.fixed = dtype != "float32"
        self.bits = {"int16": 16, "int32": 32}.get(dtype, 0)
        self.samp_max = (1 << (self.bits - 1)) - 1 if self.fixed else 0

    def store(self, v: Any) -> Any:
        if not self.fixed:
            return np.float32(v)
        v = int(v) & ((1 << self.bits) - 1)
        return v - (1 << self.bits) if v >= 1 << (self.bits - 1) else v

    def twiddle(self, phase: float) -> tuple[Any, Any]:
        if not self.fixed:
            return np.float32(math.cos(phase)), np.float32(math.sin(phase))
        return (math.floor(0.5 + self.samp_max * math.cos(phase)),
                math.floor(0.5 + self.samp_max * math.sin(phase)))

    def sround(self, x: int) -> int:
        frac = self.bits - 1
        return self.store((x + (1 << (frac - 1))) >> frac)

    def smulr(self, a: Any, b: Any) -> Any:
        return self.sround(a * b) if self.fixed else np.float32(a * b)

    def cmul(self, a: list[Any], b: list[Any]) -> list[Any]:
        if self.fixed:
            return [self.sround(a[0] * b[0] - a[1] * b[1]), self.sround(a[0] * b[1] + a[1] * b[0])]
        return [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]]

    def fixdiv(self, c: list[Any], div: int) -> list[Any]:
        if not self.fixed:
            return list(c)
        return [self.sround(c[0] * (self.samp_max // div)), self.sround(c[1] * (self.samp_max // div))]

    def add(self, a: Any, b: Any) -> Any:
        return self.store(a + b)

    def sub(self, a: Any, b: Any) -> Any:
        return self.store(a - b)

    def half(self, x: Any) -> Any:
        """HALF_OF of a stored scalar (or of a sum computed wide, then stored)."""
        return self.store(x >> 1) if self.fixed else np.float32(x * np.float32(0.5))

    def half_of(self, total: Any) -> Any:
        """HALF_OF(a + b): the sum as C computes it (int for int16, wrapped int32, float), halved."""
        if self.fixed and self.bits == 32:
            total = self.store(total)
        return self.half(total)

    def cadd(self, a: list[Any], b: list[Any]) -> list[Any]:
        return [self.add(a[0], b[0]), self.add(a[1], b[1])]

    def csub(self, a: list[Any], b: list[Any]) -> list[Any]:
        return [self.sub(a[0], b[0]), self.sub(a[1], b[1])]


_DTYPE_OF_T = {7: "int16", 2: "int32", 0: "float32"}  # SignalRfft's T: TFLite TensorType


def kiss_twiddles(fft_length: int, dtype: str = "int16", inverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """kiss_fft_alloc's twiddles (fft_length / 2) and kiss_fftr_alloc's super twiddles
    (fft_length / 4), interleaved (re, im) in `dtype`; `inverse`: kiss_fftr_alloc(inverse_fft = 1),
    whose phases are negated (phase *= -1, as v130 does it: the same double, sign flipped)."""
    scalar = _Scalar(dtype)
    nfft = fft_length // 2
    sign = -1.0 if inverse else 1.0
    pi = 3.141592653589793238462643383279502884197169399375105820974944
    tw = [scalar.twiddle(sign * (-2 * pi * i / nfft)) for i in range(nfft)]
    super_tw = [scalar.twiddle(sign * (-3.14159265358979323846264338327 * ((i + 1) / nfft + 0.5)))
                for i in range(nfft // 2)]
    np_dtype = np.dtype(dtype)
    return np.array(tw, dtype=np_dtype).reshape(-1), np.array(super_tw, dtype=np_dtype).reshape(-1)


Cpx = list[Any]  # [re, im]


class _KissFft:
    def __init__(self, fft_length: int, dtype: str, inverse: bool = False) -> None:
        self.nfft = fft_length // 2
        self.inverse = inverse
        self.factors = kiss_factors(self.nfft)
        if not set(self.factors[0::2]) <= {2, 3, 4, 5}:
            raise ReferenceError(f"fft_length {fft_length}: TFLite Micro's kissfft has no butterfly for "
                                 f"radix {max(self.factors[0::2])}")
        self.s = _Scalar(dtype)
        tw, super_tw = kiss_twiddles(fft_length, dtype, inverse)
        conv = float if dtype == "float32" else int
        self.tw = [[self.s.store(conv(tw[2 * i])), self.s.store(conv(tw[2 * i + 1]))] for i in range(self.nfft)]
        self.super_tw = [[self.s.store(conv(super_tw[2 * i])), self.s.store(conv(super_tw[2 * i + 1]))]
                         for i in range(self.nfft // 2)]

    def work(self, out: list[Cpx], base: int, f: list[Cpx], fpos: int, fstride: int, fi: int) -> None:
        p, m = self.factors[fi], self.factors[fi + 1]
        if m == 1:
            for j in range(p):
                out[base + j] = list(f[fpos + j * fstride])
        else:
            for j in range(p):
                self.work(out, base + j * m, f, fpos + j * fstride, fstride * p, fi + 2)
        {2: self._bfly2, 3: self._bfly3, 4: self._bfly4, 5: self._bfly5}[p](out, base, fstride, m)

    def _bfly2(self, o: list[Cpx], b: int, fstride: int, m: int) -> None:
        s = self.s
        for k in range(m):
            o[b + k] = s.fixdiv(o[b + k], 2)
            o[b + k + m] = s.fixdiv(o[b + k + m], 2)
            t = s.cmul(o[b + k + m], self.tw[k * fstride])
            o[b + k + m] = s.csub(o[b + k], t)
            o[b + k] = s.cadd(o[b + k], t)

    def _bfly4(self, o: list[Cpx], b: int, fstride: int, m: int) -> None:
        s = self.s
        for k in range(m):
            i0, i1, i2, i3 = b + k, b + k + m, b + k + 2 * m, b + k + 3 * m
            for i in (i0, i1, i2, i3):
                o[i] = s.fixdiv(o[i], 4)
            s0 = s.cmul(o[i1], self.tw[k * fstride])
            s1 = s.cmul(o[i2], self.tw[2 * k * fstride])
            s2 = s.cmul(o[i3], self.tw[3 * k * fstride])
            s5 = s.csub(o[i0], s1)
            o[i0] = s.cadd(o[i0], s1)
            s3 = s.cadd(s0, s2)
            s4 = s.csub(s0, s2)
            o[i2] = s.csub(o[i0], s3)
            o[i0] = s.cadd(o[i0], s3)
            if self.inverse:  # the one butterfly with a branch on st->inverse
                o[i1] = [s.sub(s5[0], s4[1]), s.add(s5[1], s4[0])]
                o[i3] = [s.add(s5[0], s4[1]), s.sub(s5[1], s4[0])]
            else:
                o[i1] = [s.add(s5[0], s4[1]), s.sub(s5[1], s4[0])]
                o[i3] = [s.sub(s5[0], s4[1]), s.add(s5[1], s4[0])]

    def _bfly3(self, o: list[Cpx], b: int, fstride: int, m: int) -> None:
        s = self.s
        epi3 = self.tw[fstride * m]
        for k in range(m):
            i0, i1, i2 = b + k, b + k + m, b + k + 2 * m
            for i in (i0, i1, i2):
                o[i] = s.fixdiv(o[i], 3)
            s1 = s.cmul(o[i1], self.tw[k * fstride])
            s2 = s.cmul(o[i2], self.tw[2 * k * fstride])
            s3 = s.cadd(s1, s2)
            s0 = s.csub(s1, s2)
            o[i1] = [s.sub(o[i0][0], s.half(s3[0])), s.sub(o[i0][1], s.half(s3[1]))]
            s0 = [s.smulr(s0[0], epi3[1]), s.smulr(s0[1], epi3[1])]
            o[i0] = s.cadd(o[i0], s3)
            o[i2] = [s.add(o[i1][0], s0[1]), s.sub(o[i1][1], s0[0])]
            o[i1] = [s.sub(o[i1][0], s0[1]), s.add(o[i1][1], s0[0])]

    def _bfly5(self, o: list[Cpx], b: int, fstride: int, m: int) -> None:
        s = self.s
        ya, yb = self.tw[fstride * m], self.tw[fstride * 2 * m]
        add, sub, mul = s.add, s.sub, s.smulr
        for u in range(m):
            idx = [b + u + q * m for q in range(5)]
            for i in idx:
                o[i] = s.fixdiv(o[i], 5)
            c: list[Cpx] = [[0, 0] for _ in range(13)]
            c[0] = list(o[idx[0]])
            for q in range(1, 5):
                c[q] = s.cmul(o[idx[q]], self.tw[q * u * fstride])
            c[7], c[10] = s.cadd(c[1], c[4]), s.csub(c[1], c[4])
            c[8], c[9] = s.cadd(c[2], c[3]), s.csub(c[2], c[3])
            o[idx[0]] = [add(o[idx[0]][0], add(c[7][0], c[8][0])), add(o[idx[0]][1], add(c[7][1], c[8][1]))]
            c[5] = [add(add(c[0][0], mul(c[7][0], ya[0])), mul(c[8][0], yb[0])),
                    add(add(c[0][1], mul(c[7][1], ya[0])), mul(c[8][1], yb[0]))]
            c[6] = [add(mul(c[10][1], ya[1]), mul(c[9][1], yb[1])),
                    sub(s.store(-mul(c[10][0], ya[1])), mul(c[9][0], yb[1]))]
            o[idx[1]], o[idx[4]] = s.csub(c[5], c[6]), s.cadd(c[5], c[6])
            c[11] = [add(add(c[0][0], mul(c[7][0], yb[0])), mul(c[8][0], ya[0])),
                     add(add(c[0][1], mul(c[7][1], yb[0])), mul(c[8][1], ya[0]))]
            c[12] = [add(s.store(-mul(c[10][1], yb[1])), mul(c[9][1], ya[1])),
                     sub(mul(c[10][0], yb[1]), mul(c[9][0], ya[1]))]
            o[idx[2]], o[idx[3]] = s.cadd(c[11], c[12]), s.csub(c[11], c[12])

    def rfft(self, samples: list[Any]) -> list[Any]:
        s = self.s
        ncfft = self.nfft
        packed = [[samples[2 * i], samples[2 * i + 1]] for i in range(ncfft)]
        tmp: list[Cpx] = [[0, 0] for _ in range(ncfft)]
        self.work(tmp, 0, packed, 0, 1, 0)
        zero = s.store(0)
        out: list[Cpx] = [[zero, zero] for _ in range(ncfft + 1)]
        tdc = s.fixdiv(tmp[0], 2)
        out[0] = [s.add(tdc[0], tdc[1]), zero]
        out[ncfft] = [s.sub(tdc[0], tdc[1]), zero]
        for k in range(1, ncfft // 2 + 1):
            fpk = s.fixdiv(tmp[k], 2)
            fpnk = s.fixdiv([tmp[ncfft - k][0], s.store(-tmp[ncfft - k][1])], 2)
            f1k, f2k = s.cadd(fpk, fpnk), s.csub(fpk, fpnk)
            tw = s.cmul(f2k, self.super_tw[k - 1])
            out[k] = [s.half_of(f1k[0] + tw[0]), s.half_of(f1k[1] + tw[1])]
            out[ncfft - k] = [s.half_of(f1k[0] - tw[0]), s.half_of(tw[1] - f1k[1])]
        return [v for c in out for v in c]

    def irfft(self, spectrum: list[Cpx]) -> list[Any]:
        """kiss_fftri: ncfft + 1 complex bins -> fft_length real samples (unscaled)."""
        s = self.s
        ncfft = self.nfft
        tmp: list[Cpx] = [[s.store(0), s.store(0)] for _ in range(ncfft)]
        tmp[0] = s.fixdiv([s.add(spectrum[0][0], spectrum[ncfft][0]), s.sub(spectrum[0][0], spectrum[ncfft][0])], 2)
        for k in range(1, ncfft // 2 + 1):
            fk = s.fixdiv(list(spectrum[k]), 2)
            fnkc = s.fixdiv([spectrum[ncfft - k][0], s.store(-spectrum[ncfft - k][1])], 2)
            fek, diff = s.cadd(fk, fnkc), s.csub(fk, fnkc)
            fok = s.cmul(diff, self.super_tw[k - 1])
            tmp[k] = s.cadd(fek, fok)
            low = s.csub(fek, fok)
            tmp[ncfft - k] = [low[0], s.store(-low[1])]  # tmpbuf[ncfft - k].i *= -1
        out: list[Cpx] = [[0, 0] for _ in range(ncfft)]
        self.work(out, 0, tmp, 0, 1, 0)
        return [v for c in out for v in c]


def rfft(x: np.ndarray, fft_length: int, out_shape: tuple[int, ...]) -> np.ndarray:
    """SignalRfft of each row of x (int16, int32 or float32), zero-padded to fft_length."""
    dtype = str(np.asarray(x).dtype)
    fft = _KissFft(fft_length, dtype)
    rows = np.asarray(x).reshape(-1, np.shape(x)[-1])
    conv = float if dtype == "float32" else int
    out = []
    for row in rows:
        samples = [fft.s.store(conv(v)) for v in row] + [fft.s.store(0)] * (fft_length - row.size)
        out.append(fft.rfft(samples))
    return np.array(out, dtype=np.dtype(dtype)).reshape(out_shape)


def irfft(x: np.ndarray, fft_length: int, out_shape: tuple[int, ...]) -> np.ndarray:
    """SignalIrfft of each row of x: (re, im) pairs, of which the first fft_length / 2 + 1 are read;
    fft_length real samples per row (float: divided by fft_length, as irfft_float.cc does)."""
    dtype = str(np.asarray(x).dtype)
    width = np.shape(x)[-1] if np.ndim(x) else 0
    if fft_length % 2 or width % 2 or width // 2 < fft_length // 2 + 1:
        raise ReferenceError(f"SignalIrfft of rows of {width} values with fft_length {fft_length}: TFLite Micro "
                             "reads fft_length / 2 + 1 (re, im) pairs per row")
    fft = _KissFft(fft_length, dtype, inverse=True)
    rows = np.asarray(x).reshape(-1, width)
    conv = float if dtype == "float32" else int
    out = []
    for row in rows:
        values = [fft.s.store(conv(v)) for v in row]
        samples = fft.irfft([[values[2 * k], values[2 * k + 1]] for k in range(fft.nfft + 1)])
        if dtype == "float32":
            samples = [np.float32(v / np.float32(fft_length)) for v in samples]
        out.append(samples)
    return np.array(out, dtype=np.dtype(dtype)).reshape(out_shape)


# --- streaming: delay, framer, stacker, overlap-add ------------------------------------------------
# Each takes the state of one invocation and returns the outputs and the next state, in the
# layouts of the generated code (ir/ops/signal.py), where the zero state is TFLM's after Reset.
def delay(x: np.ndarray, line: np.ndarray, delay_length: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row of x (the last axis) behind its delay line: the stream delayed by delay_length."""
    frame = np.shape(x)[-1]
    rows = np.asarray(x, dtype=np.int16).reshape(-1, frame)
    joined = np.concatenate([np.asarray(line, dtype=np.int16).reshape(rows.shape[0], delay_length), rows], axis=1)
    return joined[:, :frame].reshape(np.shape(x)), joined[:, frame:].copy()


def framer_capacity(frame_size: int, frame_step: int) -> int:
    """The circular buffer's capacity: frame_size rounded up to a multiple of frame_step (framer.cc)."""
    return (frame_size + frame_step - 1) // frame_step * frame_step


def framer(x: np.ndarray, pending: np.ndarray, fill: int, a: dict[str, int]
           ) -> tuple[np.ndarray, bool, np.ndarray, int]:
    """(frames, valid, pending, fill): TFLM's circular buffer as a line of `capacity` samples whose
    last `available` ones are pending; available = fill + (frame_size - frame_step if prefill)."""
    size, step = a["frame_size"], a["frame_step"]
    capacity = framer_capacity(size, step)
    initial = size - step if a["prefill"] else 0
    length = np.shape(x)[-1]
    n_frames = length // step
    rows = np.asarray(x, dtype=np.int16).reshape(-1, length)
    lines = np.asarray(pending, dtype=np.int16).reshape(rows.shape[0], capacity).copy()
    out = np.zeros((rows.shape[0], n_frames, size), np.int16)  # frames TFLM does not write: left 0
    valid = True
    available = initial + fill
    for r, row in enumerate(rows):
        available = initial + fill
        for f in range(n_frames):
            lines[r] = np.concatenate([lines[r, step:], row[f * step:(f + 1) * step]])
            available += step
            if available >= size:
                out[r, f] = lines[r, capacity - available:capacity - available + size]
                available -= step
            else:
                valid = False
    return out.reshape((*np.shape(x)[:-1], n_frames, size)), valid, lines, available - initial


def stacker(x: np.ndarray, frames: np.ndarray, counters: tuple[int, int], a: dict[str, int]
            ) -> tuple[np.ndarray, bool, np.ndarray, tuple[int, int]]:
    """(stacked, valid, frames, (held, started)): the frames held, oldest first; the first frame after
    a reset is held left_context + 1 times (CircularBufferExtend)."""
    channels, step = a["num_channels"], a["stacker_step"]
    depth = a["stacker_left_context"] + a["stacker_right_context"] + 1
    held, started = counters
    line = np.asarray(frames, dtype=np.int16).reshape(depth, channels).copy()
    row = np.asarray(x, dtype=np.int16).reshape(channels)
    for _ in range(1 if started else 1 + a["stacker_left_context"]):
        line[held] = row
        held += 1
    if held < depth:
        return np.zeros(depth * channels, np.int16), False, line, (held, 1)
    out = line.reshape(-1).copy()
    line = np.concatenate([line[step:], np.zeros((step, channels), np.int16)])
    return out, True, line, (held - step, 1)


def overlap_add(x: np.ndarray, sums: np.ndarray, frame_step: int) -> tuple[np.ndarray, np.ndarray]:
    """Each frame added into the running sums (int16: saturated), the first frame_step sums out,
    the rest shifted down with zeros behind."""
    shape = np.shape(x)
    n_frames, size = shape[-2], shape[-1]
    dtype = np.asarray(x).dtype
    frames = np.asarray(x).reshape(-1, n_frames, size)
    lines = np.asarray(sums, dtype=dtype).reshape(frames.shape[0], size).copy()
    out = np.zeros((frames.shape[0], n_frames * frame_step), dtype)
    for r in range(frames.shape[0]):
        for f in range(n_frames):
            if dtype == np.int16:
                total = lines[r].astype(np.int32) + frames[r, f].astype(np.int32)
                lines[r] = np.clip(total, -32768, 32767).astype(np.int16)
            else:
                lines[r] = (lines[r] + frames[r, f]).astype(dtype)
            out[r, f * frame_step:(f + 1) * frame_step] = lines[r, :frame_step]
            lines[r] = np.concatenate([lines[r, frame_step:], np.zeros(frame_step, dtype)])
    return out.reshape((*shape[:-2], n_frames * frame_step)), lines


# --- energy .. log -----------------------------------------------------------------------------
def energy(x: np.ndarray, start: int, end: int, count: int) -> list[int]:
    flat = [int(v) for v in np.asarray(x).reshape(-1)]
    out = [0] * count
    for i in range(start, end):
        out[i] = (flat[2 * i] ** 2 + flat[2 * i + 1] ** 2) & _M32
    return out


def filter_bank(x: list[int], weights: np.ndarray, unweights: np.ndarray, freq_starts: np.ndarray,
                weight_starts: np.ndarray, widths: np.ndarray, channels: int) -> list[int]:
    w = [int(v) for v in weights]
    uw = [int(v) for v in unweights]
    out = []
    weight_acc = unweight_acc = 0
    for i in range(channels + 1):
        fs, ws = int(freq_starts[i]), int(weight_starts[i])
        for j in range(int(widths[i])):
            weight_acc = (weight_acc + (w[ws + j] & _M64) * x[fs + j]) & _M64
            unweight_acc = (unweight_acc + (uw[ws + j] & _M64) * x[fs + j]) & _M64
        out.append(weight_acc)
        weight_acc, unweight_acc = unweight_acc, 0
    return out[1:]


def _sqrt(num: int, bits: int) -> int:
    if num == 0 and bits == 32:
        return 0
    top = (1 << (bits // 2)) - 1
    res = 0
    max_bit_number = (bits - (msb32(num) if bits == 32 else (num.bit_length() or 64))) | 1
    bit = 1 << (bits - 1 - max_bit_number)
    for _ in range((bits - 1 - max_bit_number) // 2 + 1):
        if num >= res + bit:
            num -= res + bit
            res = (res >> 1) + bit
        else:
            res >>= 1
        bit >>= 2
    if num > res and res != top:
        res += 1
    return res


def sqrt64(num: int) -> int:
    """Sqrt64 with its 32-bit shortcut (Sqrt32 when the upper word is clear)."""
    return _sqrt(num, 32) if num >> 32 == 0 else _sqrt(num, 64)


def spectral_subtraction(x: list[int], state: list[int], a: dict[str, int]) -> tuple[list[int], list[int]]:
    out, noise = [], list(state)
    bits, ss_bits = a["smoothing_bits"], a["spectral_subtraction_bits"]
    for i in range(a["num_channels"]):
        odd = i & 1
        smoothing = a["alternate_smoothing"] if odd else a["smoothing"]
        one_minus = a["alternate_one_minus_smoothing"] if odd else a["one_minus_smoothing"]
        scaled = (x[i] << bits) & _M32
        noise[i] = (((scaled * smoothing + noise[i] * one_minus) & _M64) >> ss_bits) & _M32
        estimate = noise[i]
        if estimate > scaled:
            estimate = scaled
            if a["clamping"]:
                noise[i] = estimate
        floor = ((x[i] * a["min_signal_remaining"]) >> ss_bits) & _M32
        subtracted = (scaled - estimate) >> bits
        out.append(max(subtracted, floor))
    return out, noise


def wide_dynamic(x: int, lut: list[int]) -> int:
    if x <= 2:
        return lut[x]
    interval = msb32(x)
    base = 4 * interval - 6
    frac = ((x << (11 - interval)) if interval < 11 else (x >> (interval - 11))) & 0x3FF
    result = (lut[base + 2] * frac) >> 5
    result = s32(result + s32((lut[base + 1] & _M32) << 5))
    result = s32(result * frac)
    result = s32(result + (1 << 14)) >> 15
    result = s32(result + lut[base])
    return s16(result)


def pcan_shrink(x: int) -> int:
    if x < (2 << 12):
        return ((x * x) & _M32) >> (2 + 2 * 12 - 6)
    return ((x >> 6) - 64) & _M32


def pcan(x: list[int], noise: list[int], lut: list[int], snr_shift: int) -> list[int]:
    out = []
    for xi, ni in zip(x, noise, strict=True):
        gain = wide_dynamic(ni, lut) & _M32
        out.append(pcan_shrink(((xi * gain) >> snr_shift) & _M32))
    return out


_LOG_LUT = (
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944, 3087, 3224, 3358,
    3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791, 4864, 4934, 5001, 5063, 5123,
    5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595, 5610, 5622, 5631, 5637, 5640, 5641,
    5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498, 5470, 5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156,
    5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697, 4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848,
    3759, 3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207, 2090, 1971, 1851,
    1729, 1605, 1480, 1353, 1224, 1094, 963, 830, 695, 559, 421, 282, 142, 0, 0,
)


def log32(x: int, out_scale: int) -> int:
    integer = msb32(x) - 1
    frac = x - (1 << integer)
    frac = frac << (16 - integer) if integer < 16 else frac >> (integer - 16)
    base_seg = frac >> 9
    c0, c1 = _LOG_LUT[base_seg], _LOG_LUT[base_seg + 1]
    rel_pos = ((c1 - c0) * (frac - 512 * base_seg)) >> 16
    fraction = (frac + c0 + rel_pos) & _M32
    log2 = ((integer << 16) + fraction) & _M32
    loge = ((45426 * log2 + 32768) >> 16) & _M32
    return (((out_scale & _M32) * loge + 32768) & _M32) >> 16


def filter_bank_log(x: list[int], correction_bits: int, output_scale: int) -> list[int]:
    out = []
    for v in x:
        scaled = (v << correction_bits) & _M32
        out.append(min(log32(scaled, output_scale), 32767) if scaled > 1 else 0)
    return out


# --- evaluators --------------------------------------------------------------------------------
def _need(arrays: Arrays, *positions: int) -> list[np.ndarray]:
    got = [arrays[p] if p < len(arrays) else None for p in positions]
    if any(a is None for a in got):
        raise ReferenceError("a Signal operator input is missing")
    return [np.asarray(a) for a in got if a is not None]


@evaluator("SIGNAL_WINDOW")
def _window(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, w = _need(arrays, 0, 1)
    return [window(x, w, int(node.attrs["shift"]))]


@evaluator("SIGNAL_FFT_AUTO_SCALE")
def _auto_scale(node: Node, arrays: Arrays) -> list[np.ndarray]:
    (x,) = _need(arrays, 0)
    y, bits = fft_auto_scale(x)
    return [y, np.array(bits, dtype=np.int32).reshape(node.outputs[1].type.shape)]


@evaluator("SIGNAL_RFFT")
def _rfft(node: Node, arrays: Arrays) -> list[np.ndarray]:
    (x,) = _need(arrays, 0)
    if str(x.dtype) not in ("int16", "int32", "float32"):
        raise ReferenceError(f"SignalRfft has no {x.dtype} variant")
    return [rfft(x, int(node.attrs["fft_length"]), node.outputs[0].type.shape)]


@evaluator("SIGNAL_ENERGY")
def _energy(node: Node, arrays: Arrays) -> list[np.ndarray]:
    (x,) = _need(arrays, 0)
    shape = node.outputs[0].type.shape
    out = energy(x, int(node.attrs["start_index"]), int(node.attrs["end_index"]), int(np.prod(shape)))
    return [_as_i32(out, shape)]


@evaluator("SIGNAL_FILTER_BANK")
def _filter_bank(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, w, uw, fs, ws, widths = _need(arrays, 0, 1, 2, 3, 4, 5)
    out = filter_bank(_u32(x), w.reshape(-1), uw.reshape(-1), fs.reshape(-1), ws.reshape(-1), widths.reshape(-1),
                      int(node.attrs["num_channels"]))
    return [np.array(out, dtype=np.uint64).view(np.int64).reshape(node.outputs[0].type.shape)]


@evaluator("SIGNAL_FILTER_BANK_SQUARE_ROOT")
def _sqrt_eval(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, bits = _need(arrays, 0, 1)
    shift = int(bits.reshape(-1)[0]) & 31
    values = [int(v) & _M64 for v in x.reshape(-1)]
    return [_as_i32([sqrt64(v) >> shift for v in values], node.outputs[0].type.shape)]


@evaluator("SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION")
def _spectral_subtraction(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, state = _need(arrays, 0, 1)
    out, noise = spectral_subtraction(_u32(x), _u32(state), {k: int(v) for k, v in node.attrs.items()})
    return [_as_i32(out, node.outputs[0].type.shape), _as_i32(noise, node.outputs[1].type.shape)]


@evaluator("SIGNAL_PCAN")
def _pcan(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, noise, lut = _need(arrays, 0, 1, 2)
    out = pcan(_u32(x), _u32(noise), [int(v) for v in lut.reshape(-1)], int(node.attrs["snr_shift"]))
    return [_as_i32(out, node.outputs[0].type.shape)]


@evaluator("SIGNAL_FILTER_BANK_LOG")
def _log(node: Node, arrays: Arrays) -> list[np.ndarray]:
    (x,) = _need(arrays, 0)
    out = filter_bank_log(_u32(x), int(node.attrs["input_correction_bits"]), int(node.attrs["output_scale"]))
    return [np.array(out, dtype=np.int16).reshape(node.outputs[0].type.shape)]


@evaluator("SIGNAL_IRFFT")
def _irfft(node: Node, arrays: Arrays) -> list[np.ndarray]:
    (x,) = _need(arrays, 0)
    if str(x.dtype) not in ("int16", "int32", "float32"):
        raise ReferenceError(f"SignalIrfft has no {x.dtype} variant")
    return [irfft(x, int(node.attrs["fft_length"]), node.outputs[0].type.shape)]


# The streaming evaluators run one invocation from the state they are given (the state inputs);
# carrying it to the next invocation is the generated code's business.
@evaluator("SIGNAL_DELAY")
def _delay(node: Node, arrays: Arrays) -> list[np.ndarray]:
    (x,) = _need(arrays, 0)
    length = int(node.attrs["delay_length"])
    if length == 0:
        return [x.astype(np.int16)]
    (line,) = _need(arrays, 1)
    return [delay(x, line, length)[0]]


@evaluator("SIGNAL_FRAMER")
def _framer(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, pending, fill = _need(arrays, 0, 1, 2)
    frames, valid, _, _ = framer(x, pending, int(fill.reshape(-1)[0]), {k: int(v) for k, v in node.attrs.items()})
    return [frames.reshape(node.outputs[0].type.shape), np.array(valid, dtype=np.bool_)]


@evaluator("SIGNAL_STACKER")
def _stacker(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, frames, counters = _need(arrays, 0, 1, 2)
    held, started = (int(v) for v in counters.reshape(-1)[:2])
    out, valid, _, _ = stacker(x, frames, (held, started), {k: int(v) for k, v in node.attrs.items()})
    return [out.reshape(node.outputs[0].type.shape), np.array(valid, dtype=np.bool_)]


@evaluator("SIGNAL_OVERLAP_ADD")
def _overlap_add(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, sums = _need(arrays, 0, 1)
    return [overlap_add(x, sums, int(node.attrs["frame_step"]))[0].reshape(node.outputs[0].type.shape)]
