"""Lowerings of TFLite Micro's Signal operators (ir/ops/signal.py) onto kernels/nn2c_signal.c.

Each lowering checks what TFLM's Prepare checks (ranks, types) and, beyond it, every size the
kernel indexes with, so that a model TFLM would run past a buffer's end is refused here instead:
the window divides the input, the FFT output holds fft_length / 2 + 1 complex values per row, the
energy range lies inside the spectrum, the filter bank's band tables stay inside the spectrum and
the weight arrays, PCAN's gain table has the 125 entries its lookup reaches. uint32 / uint64
tensors are int32 / int64 values of the IR; the calls pass them as unsigned pointers.
"""

from __future__ import annotations

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.ir import Node, Value, c_type, dtype_bytes
from nn2c.reference.signal import framer_capacity, kiss_factors, kiss_twiddles

_PCAN_LUT_ENTRIES = 125  # WideDynamicFunction reads lut[4 * 32 - 6 + 2] for the largest input


def _inputs(node: Node, ctx: EmitContext, count: int) -> list[Value]:
    values = [node.input(i) for i in range(count)]
    if len(node.inputs) != count or any(v is None for v in values):
        raise ctx.unsupported(f"{node.op} needs {count} inputs, got {len(node.inputs)}")
    return [v for v in values if v is not None]


def _outputs(node: Node, ctx: EmitContext, count: int) -> list[Value]:
    if len(node.outputs) != count:
        raise ctx.unsupported(f"{node.op} needs {count} outputs, got {len(node.outputs)}")
    return list(node.outputs)


def _check(ctx: EmitContext, value: Value, dtype: str, rank: int | None, what: str) -> None:
    if value.type.dtype != dtype:
        raise ctx.unsupported(f"{what} {value.name!r} is {value.type.dtype}, TFLite Micro requires {dtype}")
    if rank is not None and len(value.type.shape) != rank:
        raise ctx.unsupported(f"{what} {value.name!r} has rank {len(value.type.shape)}, TFLite Micro requires {rank}")


def _const(ctx: EmitContext, value: Value, what: str) -> np.ndarray:
    if not value.is_constant or value.data is None:
        raise ctx.unsupported(f"{what} {value.name!r} must be a constant tensor for nn2c to check its ranges")
    return np.asarray(value.data).reshape(-1).astype(np.int64)


def _u32(ctx: EmitContext, value: Value) -> str:
    return f"(uint32_t *){ctx.ptr(value)}"


@lowering("SIGNAL_WINDOW")
def window(node: Node, ctx: EmitContext) -> None:
    x, w = _inputs(node, ctx, 2)
    (y,) = _outputs(node, ctx, 1)
    _check(ctx, x, "int16", None, "input")
    _check(ctx, w, "int16", 1, "window")
    _check(ctx, y, "int16", len(x.type.shape), "output")
    size, count = w.type.num_elements, x.type.num_elements
    if size == 0 or count % size or y.type.num_elements != count or len(x.type.shape) < 1:
        raise ctx.unsupported(f"the input ({count} values) must be whole windows of {size} values, "
                              f"as many as the output's {y.type.num_elements}")
    ctx.use_kernel("signal")
    ctx.call("nn2c_signal_window", ctx.ptr(x), ctx.ptr(w), str(size), str(count), str(int(node.attrs["shift"])),
             ctx.ptr(y))


@lowering("SIGNAL_FFT_AUTO_SCALE")
def fft_auto_scale(node: Node, ctx: EmitContext) -> None:
    (x,) = _inputs(node, ctx, 1)
    y, bits = _outputs(node, ctx, 2)
    _check(ctx, x, "int16", 1, "input")
    _check(ctx, y, "int16", 1, "output")
    _check(ctx, bits, "int32", 0, "scale bits output")
    if y.type.shape != x.type.shape:
        raise ctx.unsupported(f"output shape {list(y.type.shape)} differs from the input's {list(x.type.shape)}")
    ctx.use_kernel("signal")
    ctx.call("nn2c_signal_fft_auto_scale", ctx.ptr(x), str(x.type.num_elements), ctx.ptr(y), ctx.ptr(bits))


_FFT_TYPES = {7: ("int16", "s16"), 2: ("int32", "s32"), 0: ("float32", "f32")}  # T: TFLite TensorType


def _fft_type(node: Node, ctx: EmitContext, op: str) -> tuple[str, str]:
    t = int(node.attrs["T"])
    if t not in _FFT_TYPES:
        raise ctx.unsupported(f"{op} T={t} is not a type TFLite Micro's FFT takes (INT16=7, INT32=2, FLOAT32=0); "
                              "fix the option")
    return _FFT_TYPES[t]


def _fft_plan(node: Node, ctx: EmitContext, dtype: str, rows: int, input_length: int, inverse: bool
              ) -> tuple[str, str, str, str]:
    """The params struct, twiddles, super twiddles and scratch of kissfft's plan for fft_length."""
    fft_length = int(node.attrs["fft_length"])
    factors = kiss_factors(fft_length // 2)
    radix = max(factors[0::2])
    if radix > 5 or 1 in factors[0::2]:
        raise ctx.unsupported(f"fft_length {fft_length}: fft_length / 2 = {fft_length // 2} needs the kissfft "
                              f"radix {radix}; TFLite Micro's kissfft runs only radices 2, 3, 4 and 5 (its generic "
                              "butterfly allocates memory and crashes), choose a length of the form 2 * 2^a 3^b 5^c")
    twiddles, super_twiddles = kiss_twiddles(fft_length, dtype, inverse)
    ctype = c_type(dtype)
    ctx.use_kernel("signal")
    params = ctx.params_struct("nn2c_signal_rfft_params_t", {
        "rows": rows, "input_length": input_length, "fft_length": fft_length, "num_factors": len(factors) // 2,
        "factors": factors + [0] * (64 - len(factors)),
    })
    scratch = ctx.scratch((1 if inverse else 2) * fft_length * dtype_bytes(dtype))
    kind = "inverse " if inverse else ""
    tw = ctx.const_array(twiddles, ctype, f"kissfft {kind}twiddles, nfft {fft_length // 2}")
    super_tw = ctx.const_array(super_twiddles if super_twiddles.size else np.zeros(2, twiddles.dtype), ctype,
                               f"kiss_fftr {kind}super twiddles, nfft {fft_length // 2}")
    return params, tw, super_tw, f"({ctype} *){scratch}"


@lowering("SIGNAL_RFFT")
def rfft(node: Node, ctx: EmitContext) -> None:
    (x,) = _inputs(node, ctx, 1)
    (y,) = _outputs(node, ctx, 1)
    fft_length = int(node.attrs["fft_length"])
    t = int(node.attrs["T"])
    dtype, suffix = _fft_type(node, ctx, "SignalRfft")
    _check(ctx, x, dtype, None, f"input (T={t})")
    _check(ctx, y, dtype, len(x.type.shape), f"output (T={t})")
    if len(x.type.shape) < 1:
        raise ctx.unsupported("the input must have at least one dimension")
    length = x.type.shape[-1]
    rows = x.type.num_elements // length if length else 0
    if fft_length % 2 or length < 1 or length > fft_length:
        raise ctx.unsupported(f"fft_length {fft_length} must be even and at least the input length {length}")
    if y.type.shape[:-1] != x.type.shape[:-1] or y.type.shape[-1] != 2 * (fft_length // 2 + 1):
        raise ctx.unsupported(f"output shape {list(y.type.shape)} must be the input's with last dimension "
                              f"{2 * (fft_length // 2 + 1)} (fft_length / 2 + 1 complex values)")
    params, tw, super_tw, scratch = _fft_plan(node, ctx, dtype, rows, length, inverse=False)
    ctx.call(f"nn2c_signal_rfft_{suffix}", params, tw, super_tw, ctx.ptr(x), ctx.ptr(y), scratch)


@lowering("SIGNAL_IRFFT")
def irfft(node: Node, ctx: EmitContext) -> None:
    (x,) = _inputs(node, ctx, 1)
    (y,) = _outputs(node, ctx, 1)
    fft_length = int(node.attrs["fft_length"])
    t = int(node.attrs["T"])
    dtype, suffix = _fft_type(node, ctx, "SignalIrfft")
    _check(ctx, x, dtype, None, f"input (T={t})")
    _check(ctx, y, dtype, len(x.type.shape), f"output (T={t})")
    if len(x.type.shape) < 1 or x.type.shape[-1] < 2 or x.type.shape[-1] % 2:
        raise ctx.unsupported(f"input shape {list(x.type.shape)}: the last dimension must hold (re, im) pairs "
                              "(even, at least 2)")
    bins = x.type.shape[-1] // 2
    if fft_length % 2 or bins < fft_length // 2 + 1:
        raise ctx.unsupported(f"fft_length {fft_length} must be even, and the input must hold its fft_length / 2 + 1 "
                              f"= {fft_length // 2 + 1} complex values per row (it has {bins}): kiss_fftri reads "
                              "them all")
    if y.type.shape[:-1] != x.type.shape[:-1] or y.type.shape[-1] != fft_length:
        raise ctx.unsupported(f"output shape {list(y.type.shape)} must be the input's with last dimension "
                              f"fft_length = {fft_length} (TFLite Micro writes fft_length samples per row)")
    rows = x.type.num_elements // x.type.shape[-1]
    params, tw, super_tw, scratch = _fft_plan(node, ctx, dtype, rows, bins, inverse=True)
    ctx.call(f"nn2c_signal_irfft_{suffix}", params, tw, super_tw, ctx.ptr(x), ctx.ptr(y), scratch)


@lowering("SIGNAL_ENERGY")
def energy(node: Node, ctx: EmitContext) -> None:
    (x,) = _inputs(node, ctx, 1)
    (y,) = _outputs(node, ctx, 1)
    _check(ctx, x, "int16", 1, "input")
    _check(ctx, y, "int32", 1, "output")
    start, end = int(node.attrs["start_index"]), int(node.attrs["end_index"])
    count = y.type.num_elements
    if not 0 <= start <= end <= min(count, x.type.num_elements // 2):
        raise ctx.unsupported(f"start_index {start} / end_index {end} must satisfy 0 <= start <= end <= "
                              f"{min(count, x.type.num_elements // 2)} (the spectrum's and output's length)")
    ctx.use_kernel("signal")
    ctx.call("nn2c_signal_energy", ctx.ptr(x), str(start), str(end), str(count), _u32(ctx, y))


@lowering("SIGNAL_FILTER_BANK")
def filter_bank(node: Node, ctx: EmitContext) -> None:
    x, w, uw, fs, ws, widths = _inputs(node, ctx, 6)
    (y,) = _outputs(node, ctx, 1)
    _check(ctx, x, "int32", 1, "input")
    for value, what in ((w, "weights"), (uw, "unweights"), (fs, "channel frequency starts"),
                        (ws, "channel weight starts"), (widths, "channel widths")):
        _check(ctx, value, "int16", 1, what)
    _check(ctx, y, "int64", 1, "output")
    channels = int(node.attrs["num_channels"])
    if y.type.num_elements != channels:
        raise ctx.unsupported(f"the output has {y.type.num_elements} values, num_channels is {channels}")
    starts, wstarts, width = _const(ctx, fs, "channel frequency starts"), _const(ctx, ws, "channel weight "
                                    "starts"), _const(ctx, widths, "channel widths")
    _const(ctx, w, "weights")
    _const(ctx, uw, "unweights")
    if not starts.size == wstarts.size == width.size == channels + 1:
        raise ctx.unsupported(f"the channel tables must have num_channels + 1 = {channels + 1} entries")
    n_weights = min(w.type.num_elements, uw.type.num_elements)
    bad = [i for i in range(channels + 1)
           if min(starts[i], wstarts[i], width[i]) < 0 or starts[i] + width[i] > x.type.num_elements
           or wstarts[i] + width[i] > n_weights]
    if bad:
        raise ctx.unsupported(f"channel {bad[0]}'s band (start {starts[bad[0]]}, weight start {wstarts[bad[0]]}, "
                              f"width {width[bad[0]]}) reaches past the spectrum ({x.type.num_elements}) or the "
                              f"weights ({n_weights}); fix the filter bank tables")
    ctx.use_kernel("signal")
    ctx.call("nn2c_signal_filter_bank", _u32(ctx, x), ctx.ptr(w), ctx.ptr(uw), ctx.ptr(fs), ctx.ptr(ws),
             ctx.ptr(widths), str(channels), f"(uint64_t *){ctx.ptr(y)}")


@lowering("SIGNAL_FILTER_BANK_SQUARE_ROOT")
def filter_bank_sqrt(node: Node, ctx: EmitContext) -> None:
    x, bits = _inputs(node, ctx, 2)
    (y,) = _outputs(node, ctx, 1)
    _check(ctx, x, "int64", 1, "input")
    _check(ctx, bits, "int32", 0, "scale bits")
    _check(ctx, y, "int32", 1, "output")
    if y.type.num_elements != x.type.num_elements:
        raise ctx.unsupported("the output must have as many channels as the input")
    ctx.use_kernel("signal")
    ctx.call("nn2c_signal_filter_bank_sqrt", f"(const uint64_t *){ctx.ptr(x)}", ctx.ptr(bits),
             str(x.type.num_elements), _u32(ctx, y))


@lowering("SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION")
def spectral_subtraction(node: Node, ctx: EmitContext) -> None:
    x, state = _inputs(node, ctx, 2)
    y, noise = _outputs(node, ctx, 2)
    a = node.attrs
    channels = int(a["num_channels"])
    for value, what in ((x, "input"), (y, "output"), (noise, "noise estimate output"), (state, "noise state")):
        _check(ctx, value, "int32", 1, what)
        if value.type.num_elements != channels:
            raise ctx.unsupported(f"{what} {value.name!r} has {value.type.num_elements} values, "
                                  f"num_channels is {channels}")
    if not state.is_variable:
        raise ctx.unsupported("the noise state (input 1) must be a state tensor")
    ctx.use_kernel("signal")
    params = ctx.params_struct("nn2c_signal_spectral_subtraction_params_t", {
        "channels": channels,
        "smoothing": f"{int(a['smoothing'])}u",
        "one_minus_smoothing": f"{int(a['one_minus_smoothing'])}u",
        "alternate_smoothing": f"{int(a['alternate_smoothing'])}u",
        "alternate_one_minus_smoothing": f"{int(a['alternate_one_minus_smoothing'])}u",
        "min_signal_remaining": f"{int(a['min_signal_remaining'])}u",
        "smoothing_bits": int(a["smoothing_bits"]),
        "spectral_subtraction_bits": int(a["spectral_subtraction_bits"]),
        "clamping": int(a["clamping"]),
    })
    ctx.call("nn2c_signal_spectral_subtraction", params, _u32(ctx, x), _u32(ctx, state), _u32(ctx, y),
             _u32(ctx, noise))


@lowering("SIGNAL_PCAN")
def pcan(node: Node, ctx: EmitContext) -> None:
    x, noise, lut = _inputs(node, ctx, 3)
    (y,) = _outputs(node, ctx, 1)
    _check(ctx, x, "int32", 1, "input")
    _check(ctx, noise, "int32", 1, "noise estimate")
    _check(ctx, lut, "int16", 1, "gain lut")
    _check(ctx, y, "int32", 1, "output")
    channels = x.type.num_elements
    if noise.type.num_elements != channels or y.type.num_elements != channels:
        raise ctx.unsupported("input, noise estimate and output must have the same number of channels")
    if lut.type.num_elements < _PCAN_LUT_ENTRIES:
        raise ctx.unsupported(f"the gain lut has {lut.type.num_elements} entries; PCAN's lookup reads up to "
                              f"{_PCAN_LUT_ENTRIES}")
    ctx.use_kernel("signal")
    ctx.call("nn2c_signal_pcan", _u32(ctx, x), _u32(ctx, noise), ctx.ptr(lut), str(int(node.attrs["snr_shift"])),
             str(channels), _u32(ctx, y))


@lowering("SIGNAL_FILTER_BANK_LOG")
def filter_bank_log(node: Node, ctx: EmitContext) -> None:
    (x,) = _inputs(node, ctx, 1)
    (y,) = _outputs(node, ctx, 1)
    _check(ctx, x, "int32", 1, "input")
    _check(ctx, y, "int16", 1, "output")
    if y.type.num_elements != x.type.num_elements:
        raise ctx.unsupported("the output must have as many channels as the input")
    scale = int(node.attrs["output_scale"]) & 0xFFFFFFFF
    ctx.use_kernel("signal")
    ctx.call("nn2c_signal_filter_bank_log", _u32(ctx, x), str(x.type.num_elements), f"{scale}u",
             str(int(node.attrs["input_correction_bits"])), ctx.ptr(y))


# --- streaming operators: their state inputs come from the frontend (frontends/tflite_custom.py) ------
def _states(node: Node, ctx: EmitContext, shapes: list[tuple[str, tuple[int, ...]]]) -> list[Value]:
    """The node's state inputs (after the data input), checked against the layouts of ir/ops/signal.py."""
    values = _inputs(node, ctx, 1 + len(shapes))[1:]
    for value, (dtype, shape) in zip(values, shapes, strict=True):
        if not value.is_variable or value.type.dtype != dtype or value.type.shape != shape:
            raise ctx.unsupported(f"state {value.name!r} must be a {dtype} state tensor of shape {list(shape)}")
    return values


def _outer_rows(ctx: EmitContext, x: Value, inner: int) -> int:
    shape = x.type.shape
    if len(shape) < inner or any(d < 1 for d in shape):
        raise ctx.unsupported(f"input {x.name!r} has shape {list(shape)}; it needs at least {inner} non-empty "
                              "dimension(s)")
    return x.type.num_elements // int(np.prod(shape[len(shape) - inner:]))


@lowering("SIGNAL_DELAY")
def delay(node: Node, ctx: EmitContext) -> None:
    x = node.input(0)
    if x is None:
        raise ctx.unsupported("the input is missing")
    (y,) = _outputs(node, ctx, 1)
    _check(ctx, x, "int16", None, "input")
    _check(ctx, y, "int16", None, "output")
    rows, frame = _outer_rows(ctx, x, 1), x.type.shape[-1]
    length = int(node.attrs["delay_length"])
    if y.type.shape != x.type.shape:
        raise ctx.unsupported(f"output shape {list(y.type.shape)} differs from the input's {list(x.type.shape)}")
    line = _states(node, ctx, [("int16", (rows, length))] if length else [])
    ctx.use_kernel("signal")
    ctx.call("nn2c_signal_delay", ctx.ptr(x), str(rows), str(frame), str(length), ctx.ptr(line[0] if line else None),
             ctx.ptr(y))


@lowering("SIGNAL_FRAMER")
def framer(node: Node, ctx: EmitContext) -> None:
    x = node.input(0)
    if x is None:
        raise ctx.unsupported("the input is missing")
    y, valid = _outputs(node, ctx, 2)
    _check(ctx, x, "int16", None, "input")
    _check(ctx, y, "int16", len(x.type.shape) + 1, "output")
    _check(ctx, valid, "bool", 0, "output valid flag")
    size, step, prefill = (int(node.attrs[k]) for k in ("frame_size", "frame_step", "prefill"))
    rows, length = _outer_rows(ctx, x, 1), x.type.shape[-1]
    if length % step:
        raise ctx.unsupported(f"the input's last dimension {length} must be a multiple of frame_step {step} "
                              "(TFLite Micro's Prepare requires it)")
    if prefill and step > size:
        raise ctx.unsupported(f"prefill with frame_step {step} > frame_size {size}: TFLite Micro would write "
                              "frame_size - frame_step (negative) zeros; use frame_step <= frame_size or no prefill")
    n_frames = length // step
    if y.type.shape != (*x.type.shape[:-1], n_frames, size):
        raise ctx.unsupported(f"output shape {list(y.type.shape)} must be "
                              f"{[*x.type.shape[:-1], n_frames, size]} (input rows, frames, frame_size)")
    capacity = framer_capacity(size, step)
    pending, fill = _states(node, ctx, [("int16", (rows, capacity)), ("int32", (1,))])
    ctx.use_kernel("signal")
    params = ctx.params_struct("nn2c_signal_framer_params_t", {
        "rows": rows, "n_frames": n_frames, "frame_size": size, "frame_step": step, "capacity": capacity,
        "initial": size - step if prefill else 0,
    })
    ctx.call("nn2c_signal_framer", params, ctx.ptr(x), ctx.ptr(pending), ctx.ptr(fill), ctx.ptr(y), ctx.ptr(valid))


@lowering("SIGNAL_STACKER")
def stacker(node: Node, ctx: EmitContext) -> None:
    x = node.input(0)
    if x is None:
        raise ctx.unsupported("the input is missing")
    y, valid = _outputs(node, ctx, 2)
    _check(ctx, x, "int16", 1, "input")
    _check(ctx, y, "int16", 1, "output")
    _check(ctx, valid, "bool", 0, "output valid flag")
    a = {k: int(v) for k, v in node.attrs.items() if k != "version"}
    channels, left, step = a["num_channels"], a["stacker_left_context"], a["stacker_step"]
    depth = left + a["stacker_right_context"] + 1
    if x.type.num_elements != channels:
        raise ctx.unsupported(f"the input has {x.type.num_elements} values, num_channels is {channels} (TFLite "
                              "Micro reads num_channels values)")
    if y.type.num_elements != depth * channels:
        raise ctx.unsupported(f"the output has {y.type.num_elements} values; it must hold (left + right context + 1) "
                              f"x num_channels = {depth * channels}")
    if step > depth:
        raise ctx.unsupported(f"stacker_step {step} is more than the {depth} frames an output stacks: TFLite "
                              f"Micro's circular buffer would discard frames it does not hold; use 1..{depth}")
    frames, counters = _states(node, ctx, [("int16", (depth * channels,)), ("int32", (2,))])
    ctx.use_kernel("signal")
    params = ctx.params_struct("nn2c_signal_stacker_params_t", {
        "channels": channels, "depth": depth, "left_context": left, "step": step,
    })
    ctx.call("nn2c_signal_stacker", params, ctx.ptr(x), ctx.ptr(frames), ctx.ptr(counters), ctx.ptr(y),
             ctx.ptr(valid))


_OVERLAP_ADD_TYPES = {7: ("int16", "s16"), 0: ("float32", "f32")}  # T: TFLite TensorType


@lowering("SIGNAL_OVERLAP_ADD")
def overlap_add(node: Node, ctx: EmitContext) -> None:
    x = node.input(0)
    if x is None:
        raise ctx.unsupported("the input is missing")
    (y,) = _outputs(node, ctx, 1)
    t = int(node.attrs["T"])
    if t not in _OVERLAP_ADD_TYPES:
        raise ctx.unsupported(f"SignalOverlapAdd T={t} is not a type TFLite Micro's kernel takes (INT16=7, "
                              "FLOAT32=0); fix the option")
    dtype, suffix = _OVERLAP_ADD_TYPES[t]
    _check(ctx, x, dtype, None, f"input (T={t})")
    _check(ctx, y, dtype, len(x.type.shape) - 1, f"output (T={t})")
    rows = _outer_rows(ctx, x, 2)
    n_frames, size = x.type.shape[-2], x.type.shape[-1]
    step = int(node.attrs["frame_step"])
    if step > size:
        raise ctx.unsupported(f"frame_step {step} is more than the frame size {size}: TFLite Micro's kernel would "
                              "move a negative number of samples; use frame_step <= frame size")
    if y.type.shape != (*x.type.shape[:-2], n_frames * step):
        raise ctx.unsupported(f"output shape {list(y.type.shape)} must be {[*x.type.shape[:-2], n_frames * step]} "
                              "(input rows, frames x frame_step)")
    (sums,) = _states(node, ctx, [(dtype, (rows, size))])
    ctx.use_kernel("signal")
    ctx.call(f"nn2c_signal_overlap_add_{suffix}", ctx.ptr(x), str(rows), str(n_frames), str(size), str(step),
             ctx.ptr(sums), ctx.ptr(y))
