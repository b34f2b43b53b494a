"""CONV_2D and DEPTHWISE_CONV_2D (NHWC input, OHWI / 1HWO filters).

    y[b, oy, ox, oc] = act(bias[oc] + sum_{fy, fx, ic} x[b, oy*sh - ph + fy*dh, ox*sw - pw + fx*dw, ic] * w[...])

with out-of-image taps skipped. Padding is TFLite's ComputePaddingHeightWidth (output size from
ComputeOutSize, pad = total // 2, the odd pixel at the bottom/right), or the (top, bottom, left,
right) attrs["explicit_padding"] of a folded PAD: skipping out-of-image taps equals padding with the
input zero point.

int8 (TFLite Micro's Prepare, PopulateConvolutionQuantizationParams): per output channel c the real
multiplier double(input_scale) * double(filter_scale[c]) / double(output_scale) (a per-tensor filter
scale is broadcast) is quantized with QuantizeMultiplier; acc = sum w * (x - input_zp) + bias,
y = clamp(MultiplyByQuantizedMultiplier(acc, c) + output_zp). The filter zero point is ignored, as
the reference kernels do. int16x8: no offsets; 64-bit accumulation and rescale with an int64 bias or
none, 32-bit with an int32 bias (as TFLite Micro's ConvPerChannel instantiations).

Hybrid (float32 activations, int8 weights), as TFLite's reference kernels (TFLite Micro refuses
hybrids): each batch of the input is quantized on the fly, symmetrically for CONV_2D with one filter
scale (optimized_ops::HybridConv: y = float(acc) * (s_in * s_w) + bias) and asymmetrically otherwise
(per-channel conv and every depthwise: y = float(acc) * s_w[c] * s_in + bias, resp.
float(acc) * (s_w[c] * s_in) + bias for depthwise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nn2c.codegen.context import EmitContext, format_field
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import (
    float_activation_range,
    int_activation_range,
    multiplier_arrays,
    requant_multipliers,
    zero_point,
)
from nn2c.codegen.ops.matmul import conv_f32_runtime_filter
from nn2c.errors import InvalidModelError
from nn2c.ir import Node, Value
from nn2c.quant.fixedpoint import quantize_multipliers

LANES = 8  # output channels per float block (NN2C_CONV_LANES)

DW_SIMD_MAX_TAPS = 64  # NN2C_DW_SIMD_MAX_TAPS


@dataclass(frozen=True)
class Geometry:
    batches: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_h: int
    pad_w: int

    def initializer(self) -> str:
        """A designated initializer of nn2c_conv_geom_t."""
        fields = ", ".join(f".{name} = {getattr(self, name)}" for name in self.__dataclass_fields__)
        return "{" + fields + "}"


def compute_out_size(padding: str, image: int, filter_size: int, stride: int, dilation: int) -> int:
    """TFLite ComputeOutSize (C integer division; operands are non-negative in valid models)."""
    effective = (filter_size - 1) * dilation + 1
    if padding == "SAME":
        return (image + stride - 1) // stride
    return max(image + stride - effective, 0) // stride


def compute_padding(stride: int, dilation: int, image: int, filter_size: int, out_size: int) -> int:
    """TFLite ComputePaddingWithOffset: the leading half of the total padding."""
    effective = (filter_size - 1) * dilation + 1
    total = max((out_size - 1) * stride + effective - image, 0)
    return total // 2


def _geometry(ctx: EmitContext, node: Node, x: Value, out: Value, filter_h: int, filter_w: int) -> Geometry:
    if len(x.type.shape) != 4 or len(out.type.shape) != 4:
        raise ctx.unsupported(f"{node.op} needs 4-D NHWC input and output, got {x.type} -> {out.type}")
    padding = node.attrs.get("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        raise ctx.unsupported(f"padding {padding!r} is not SAME or VALID")
    stride_h, stride_w = int(node.attrs.get("stride_h", 1)), int(node.attrs.get("stride_w", 1))
    dilation_h = int(node.attrs.get("dilation_h_factor", node.attrs.get("dilation_hfactor", 1)))
    dilation_w = int(node.attrs.get("dilation_w_factor", node.attrs.get("dilation_wfactor", 1)))
    if min(stride_h, stride_w, dilation_h, dilation_w) < 1:
        raise ctx.unsupported(f"strides {stride_h}x{stride_w} and dilations {dilation_h}x{dilation_w} must be >= 1")
    batches, in_h, in_w, in_c = x.type.shape
    out_b, out_h, out_w, out_c = out.type.shape
    if out_b != batches:
        raise ctx.unsupported(f"input batch {batches} differs from output batch {out_b}")
    if "explicit_padding" in node.attrs:  # a zero-point PAD folded in (passes/fuse_pad.py)
        pad_h, bottom, pad_w, right = (int(v) for v in node.attrs["explicit_padding"])
        rows = compute_out_size("VALID", pad_h + in_h + bottom, filter_h, stride_h, dilation_h)
        columns = compute_out_size("VALID", pad_w + in_w + right, filter_w, stride_w, dilation_w)
    else:
        # TFLite computes the padding from its own output size; the loops use the output tensor's
        rows = compute_out_size(padding, in_h, filter_h, stride_h, dilation_h)
        columns = compute_out_size(padding, in_w, filter_w, stride_w, dilation_w)
        pad_h = compute_padding(stride_h, dilation_h, in_h, filter_h, rows)
        pad_w = compute_padding(stride_w, dilation_w, in_w, filter_w, columns)
    if out_h > rows or out_w > columns:  # (fewer: TFLM computes those alone, and so do the kernels)
        # windows past the padding would read past the input (TFLM skips such taps; nn2c's kernels do not)
        raise InvalidModelError(f"{node.where()}: output {out_h}x{out_w} is larger than the {rows}x{columns} "
                                f"that the {in_h}x{in_w} input, the filter, strides, dilations and padding make; "
                                "the model's shapes are inconsistent, re-export it")
    return Geometry(batches, in_h, in_w, in_c, out_h, out_w, out_c, filter_h, filter_w, stride_h, stride_w,
                    dilation_h, dilation_w, pad_h, pad_w)


def _channel_scales(ctx: EmitContext, w: Value, channels: int, axis: int) -> list[float]:
    """Filter scales broadcast to one per output channel (TFLite broadcasts a per-tensor scale)."""
    quant = w.type.quant
    if quant is None:
        raise ctx.unsupported(f"the int8 filter {w.name!r} has no quantization parameters")
    found = list(quant.scale)
    if len(found) == 1:
        return found * channels
    if len(found) != channels or quant.axis != axis:
        raise ctx.unsupported(f"filter {w.name!r} has {len(found)} scales on axis {quant.axis}; expected "
                              f"1 or {channels} on axis {axis}")
    return found


def _quantized_multipliers(ctx: EmitContext, x: Value, out: Value, filter_scales: list[float]) -> tuple[str, str]:
    return multiplier_arrays(ctx, requant_multipliers(x, out, filter_scales))


def _check_int8_offsets(ctx: EmitContext, x: Value) -> None:
    # the kernels form x - zero_point in int16; int8 zero points keep it within +-255
    if not -128 <= zero_point(x) <= 127:
        raise ctx.unsupported(f"input zero point {zero_point(x)} is outside the int8 range")


def check_bias(ctx: EmitContext, bias: Value | None, allowed: tuple[str, ...], channels: int) -> None:
    if bias is None:
        return
    if bias.type.dtype not in allowed:
        raise ctx.unsupported(f"bias {bias.name!r} is {bias.type.dtype}; expected {' or '.join(allowed)}")
    if bias.type.num_elements != channels:
        raise ctx.unsupported(f"bias {bias.name!r} has {bias.type.num_elements} values for {channels} channels")


def _hybrid(ctx: EmitContext, node: Node, geom: Geometry, x: Value, w: Value, bias: Value | None, out: Value,
            *, groups: int, depth_multiplier: int, depthwise: bool) -> None:
    axis = 3 if depthwise else 0
    filter_scales = _channel_scales(ctx, w, geom.out_c, axis)
    check_bias(ctx, bias, ("float32",), geom.out_c)
    stored = w.type.quant.scale if w.type.quant else ()
    # TFLite's conv takes the per-tensor (symmetric) path unless the scales differ or there are groups
    per_channel = len(set(stored)) > 1 or groups != 1
    asymmetric = depthwise or per_channel
    act_min, act_max = float_activation_range(ctx, node.fused_activation)
    params = ctx.params_struct("nn2c_conv_hybrid_params_t", {
        "g": geom.initializer(),
        "groups": groups,
        "depth_multiplier": depth_multiplier,
        "asymmetric": int(asymmetric),
        "filter_scales": ctx.const_array(np.array(filter_scales, dtype=np.float32), "float", "filter scales"),
        "act_min": act_min,
        "act_max": act_max,
    })
    scratch = ctx.scratch(geom.in_h * geom.in_w * geom.in_c)
    function = "nn2c_dwconv_hybrid" if depthwise else "nn2c_conv_hybrid"
    ctx.call(function, params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out), scratch)


def simd_layout(ctx: EmitContext) -> tuple[int, int] | None:
    """(G, KB) of the target's int8 matrix-product kernels (kernels/nn2c_simd.*: channels per group,
    bytes per block), None without SIMD kernels (the host's portable ones)."""
    return ctx.target.gemm_layout


def pack_gemm_filter(rows: np.ndarray, group: int, block: int) -> np.ndarray:
    """[out_c, depth] int8 -> [out_c / G][depth_padded / KB][G][KB], zero-padded (nn2c_simd.h)."""
    out_c, depth = rows.shape
    groups, blocks = -(-out_c // group), -(-depth // block)
    padded = np.zeros((groups * group, blocks * block), dtype=np.int8)
    padded[:out_c, :depth] = rows
    packed = padded.reshape(groups, group, blocks, block).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(packed).reshape(-1)


# dual filters (nn2c_gemm_s8_t.dual): B's sum times 256 must stay an exact int32
DUAL_LIMIT = 1 << 23


def dual_fits(rows: np.ndarray, folded_bias: np.ndarray, odd: bool = False) -> bool:
    """Whether an [out_c, depth] int8 filter can be stored dual (nn2c_gemm_s8_t.dual) with these folded biases:
    whole pairs of channels (A, B), or an odd count where `odd` (the convolutions' kernels: the last pair's B a zero
    channel, never stored); no input where A < 0 and B = -128 (B - 1 would not fit a byte); and for each B,
    |bias| + 128 sum |B| < 2^23, so that 256 (bias + sum of B x input) is an exact int32 for any int8 input."""
    out_c = rows.shape[0]
    if out_c % 2 and not odd:
        return False
    rows = _whole_pairs(rows)
    a, b = rows[0::2].astype(np.int64), rows[1::2].astype(np.int64)
    if np.any((a < 0) & (b == -128)):
        return False
    bound = np.abs(_whole_pairs(np.asarray(folded_bias[:out_c], dtype=np.int64))[1::2]) + 128 * np.abs(b).sum(axis=1)
    return bool(np.all(bound < DUAL_LIMIT))


def _whole_pairs(rows: np.ndarray) -> np.ndarray:
    """rows (or per-channel values) with a zero channel appended to an odd count."""
    return rows if rows.shape[0] % 2 == 0 else np.concatenate([rows, np.zeros_like(rows[:1])])


def takes_dual(ctx: EmitContext, rows: np.ndarray, folded_bias: np.ndarray, odd: bool = False) -> bool:
    """Whether an Arm DSP matrix product whose kernel reads dual filters, and whose output stage is records (the
    caller's test: the doubled ones of a convolution, takes_records for a FULLY_CONNECTED), stores this [out_c,
    depth] filter dual: dual_fits (`odd`: as there), and a block count of 4 inputs that is even or, padded to pairs, at least 5 (the
    kernels' loops take two blocks a step, with no odd entry: a dual step is 13 instructions a block, the int8
    layout's 15 with 5 a channel pair for its odd entry, so the padding pays from 5 blocks on; at --optimize size
    only where it adds no flash)."""
    blocks = -(-rows.shape[1] // 4)
    return (simd_layout(ctx) == (2, 4) and (blocks % 2 == 0 or (blocks >= 5 and ctx.optimize != "size"))
            and dual_fits(rows, folded_bias, odd))


def pack_dual_filter(rows: np.ndarray) -> np.ndarray:
    """[out_c, depth] int8 -> the G = 2, KB = 4 blocks of a dual filter (nn2c_simd.h): per channel pair and block
    of 4 inputs the int16 halves A + 256 B of inputs 0, 2, 1, 3, little-endian (an odd count's last B a zero
    channel); the depth zero-padded to a multiple of 8 (the kernels' loops take two blocks a step)."""
    rows = _whole_pairs(rows)
    out_c, depth = rows.shape
    blocks = 2 * -(-depth // 8)
    padded = np.zeros((out_c, blocks * 4), dtype=np.int64)
    padded[:, :depth] = rows
    halves = padded[0::2] + 256 * padded[1::2]  # [pairs, blocks * 4], each within int16
    halves = halves.reshape(out_c // 2, blocks, 4)[:, :, [0, 2, 1, 3]]
    return np.ascontiguousarray(halves.astype("<i2")).view(np.int8).reshape(-1)


ROWS_PLAIN, ROWS_NARROW, ROWS_WIDE = 0, 1, 2  # nn2c_simd.h NN2C_ROWS_*: the layouts nn2c_rows_sums reads


def pack_rows(ctx: EmitContext, rows: np.ndarray, comment: str, wide: bool) -> tuple[str, int]:
    """A constant [rows, depth] int8 matrix for nn2c_rows_sums, and its layout (nn2c_simd.h). On the Arm
    DSP, groups of 4 rows per 4 inputs [4 rows][4], then the last depth % 4 inputs as [4 rows][depth % 4]:
    `wide` (the fastest, twice the flash) widened to int16 in SMLAD order [w0 w2 w1 w3], zero rows padding
    the last group; else int8 in exactly the matrix's bytes, the last rows % 4 rows as they are.
    Elsewhere the rows as they are."""
    rows = np.ascontiguousarray(np.asarray(rows, dtype=np.int8))
    if not ctx.target.row_sums_int16:
        return ctx.const_array(rows.reshape(-1), "int8_t", comment), ROWS_PLAIN
    count, depth = rows.shape
    if wide:
        padded = np.zeros((-(-count // 4) * 4, depth), dtype=np.int16)
        padded[:count] = rows
        packed = _row_groups(padded, (0, 2, 1, 3))
        return ctx.const_array(packed, "int16_t", comment), ROWS_WIDE
    whole = count // 4 * 4
    packed = np.concatenate([_row_groups(rows[:whole], (0, 1, 2, 3)), rows[whole:].reshape(-1)])
    return ctx.const_array(packed, "int8_t", comment), ROWS_NARROW


def _row_groups(rows: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    """[4 g, depth] -> per group of 4 rows, per 4 inputs [4 rows][the 4 in `order`], then [4 rows][depth % 4]."""
    groups, depth = len(rows) // 4, rows.shape[1]
    words = depth // 4
    quads = rows.reshape(groups, 4, depth)  # [group][row][depth]
    body = quads[:, :, :4 * words].reshape(groups, 4, words, 4)[..., list(order)].transpose(0, 2, 1, 3)
    tail = quads[:, :, 4 * words:]
    return np.ascontiguousarray(np.concatenate([body.reshape(groups, 16 * words),
                                                tail.reshape(groups, 4 * (depth % 4))], axis=1)).reshape(-1)


def folded_bias(bias: np.ndarray | None, rows: np.ndarray, input_offset: int, channels: int,
                pad_to: int = 4) -> np.ndarray:
    """bias + input_offset * sum(filter row) per channel, wrapped to int32 as the kernels' sums are,
    zero-padded to whole groups of pad_to channels."""
    total = rows.reshape(channels, -1).astype(np.int64).sum(axis=1) * int(input_offset)
    if bias is not None:
        total += np.asarray(bias, dtype=np.int64).reshape(-1)
    wrapped = ((total + 2**31) % 2**32 - 2**31).astype(np.int32)
    return pad_channels(wrapped, pad_to)


def pad_channels(array: np.ndarray, pad_to: int = 4) -> np.ndarray:
    """A per-channel int32 array zero-padded to a multiple of pad_to entries (vector loads)."""
    array = np.asarray(array, dtype=np.int32).reshape(-1)
    size = -(-array.size // pad_to) * pad_to
    return np.concatenate([array, np.zeros(size - array.size, dtype=np.int32)])


def requant_rounding(shifts: np.ndarray) -> np.ndarray:
    """Per channel 2^30 + 2^(30 - shift) and that - 2^31 (for negative accumulators) when shift < 0,
    else 0, 0: both roundings of TFLite's MultiplyByQuantizedMultiplier in one 64-bit constant
    (nn2c_simd_requant)."""
    shift = np.asarray(shifts, dtype=np.int64).reshape(-1)
    negative = shift < 0  # (quantize_multiplier's shifts are >= -31: 2^61 at most)
    up = np.where(negative, (1 << 30) + np.left_shift(np.int64(1), np.where(negative, 30 - shift, 0)), 0)
    down = np.where(negative, up - (1 << 31), 0)
    return np.stack([up, down], axis=1).reshape(-1).astype(np.int64)


def simd_multipliers(ctx: EmitContext, real: list[float]) -> tuple[str, str, str]:
    """Q31 multipliers, shifts and roundings (NULL where the target's kernels read none), zero-padded to whole
    groups of 4 channels."""
    mantissas, shifts = (pad_channels(a) for a in quantize_multipliers(real))
    return (ctx.const_array(mantissas, "int32_t", "output multipliers"),
            ctx.const_array(shifts, "int32_t", "output shifts"), rounding_array(ctx, shifts))


def rounding_array(ctx: EmitContext, shifts: np.ndarray) -> str:
    """The flash array of requant_rounding(shifts), or NULL on a target whose kernels read none
    (Target.rounding_tables)."""
    return (ctx.const_array(requant_rounding(shifts), "int64_t", "output rounding constants")
            if ctx.target.rounding_tables else "NULL")


def gemm_fields(ctx: EmitContext, rows: np.ndarray, bias: Value | None, input_offset: int, real: list[float],
                output_offset: int, act_min: int, act_max: int, records: bool = False,
                dual: bool = False, doubled: bool = False, odd_dual: bool = False) -> tuple[dict, str]:
    """The nn2c_gemm_s8_t initializer and the packed filter of an int8 matrix product; `records`: the output
    stage as records where the kernel reads them (an Arm DSP convolution, or FULLY_CONNECTED of batch 1:
    nn2c_gemm_s8_t.records); `dual`: the kernel reads dual filters, the filter then dual where takes_dual says so
    (fields["dual"] 1); `doubled`: the kernel's records are doubled ones (the convolutions' pixel pairs:
    nn2c_gemm_s8_t.doubled), where doubled_records_fit says so; `odd_dual`: an odd channel count may be dual (the
    convolutions' kernels, dual_fits)."""
    layout = simd_layout(ctx)
    assert layout is not None
    group, block = layout
    out_c, depth = rows.shape
    bias_data = None if bias is None else np.asarray(bias.data)
    folded = folded_bias(bias_data, rows, input_offset, out_c)
    mantissas, shifts = quantize_multipliers(real)
    if doubled:  # (the kernel reads doubled records or none)
        doubled = records = records and group == 2 and doubled_records_fit(rows, bias_data, input_offset, shifts,
                                                                           output_offset, act_min, act_max)
    else:
        records = records and group == 2 and takes_records(shifts, act_min, act_max)
    record_bias = folded
    dual = dual and records and takes_dual(ctx, rows, folded, odd_dual)
    if dual:
        packed = ctx.const_array(pack_dual_filter(rows), "int8_t",
                                 "filter, channel pairs as int16 halves A + 256 B, 2x4 blocks (dual)")
        # each pair's second bias word: A's + 256 B's, wrapping (the kernels read only its difference to A's)
        both = _whole_pairs(np.asarray(folded[:out_c], dtype=np.int64))
        both[1::2] = both[0::2] + 256 * both[1::2]
        record_bias = ((both + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    else:
        packed = ctx.const_array(pack_gemm_filter(rows, group, block), "int8_t", f"filter, {group}x{block} blocks")
    pad = 2 * block if dual else block  # (a dual filter's blocks in pairs: pack_dual_filter)
    fields: dict[str, object] = {
        "out_c": out_c, "depth": depth, "depth_padded": -(-depth // pad) * pad,
        "rows_per_group": group, "k_block": block, "output_offset": output_offset, "act_min": act_min,
        "act_max": act_max, "right": _right_shifts(shifts),
    }
    if dual:
        fields["dual"] = 1
    if doubled:
        fields.update(doubled=1, bias="NULL", multipliers="NULL", shifts="NULL", rounding="NULL", records=ctx.const_array(
            doubled_records(record_bias, mantissas, shifts, output_offset, group=2, double_bias=False), "int32_t",
            "output stage per group of 2 channels: 2 biases, then per channel multiplier, rounding with the output "
            "offset, shift (doubled)"))
    elif records:
        fields.update(bias="NULL", multipliers="NULL", shifts="NULL", rounding="NULL", records=ctx.const_array(
            output_records(record_bias, mantissas, shifts, output_offset, 2), "int32_t",
            "output stage per group of 2 channels: 2 biases, then per channel multiplier, rounding high word with "
            "the output offset, shift"))
    else:
        mult, shift, rounding = simd_multipliers(ctx, real)
        fields.update(bias=ctx.const_array(folded, "int32_t", "bias with the input offset folded in"),
                      multipliers=mult, shifts=shift, rounding=rounding, records="NULL")
    return fields, packed


def _pack_float_filter(w: np.ndarray, groups: int) -> np.ndarray:
    """OHWI -> [group][block of LANES output channels][H][W][I][LANES], zero-padded lanes."""
    out_c, fh, fw, fic = w.shape
    per_group = out_c // groups
    blocks = -(-per_group // LANES)
    packed = np.zeros((groups, blocks * LANES, fh, fw, fic), dtype=np.float32)
    packed[:, :per_group] = w.reshape(groups, per_group, fh, fw, fic)
    packed = packed.reshape(groups, blocks, LANES, fh, fw, fic).transpose(0, 1, 3, 4, 5, 2)
    return np.ascontiguousarray(packed)


@lowering("CONV_2D")
def conv_2d(node: Node, ctx: EmitContext) -> None:
    x, w = node.inputs[0], node.inputs[1]
    bias = node.input(2)
    out = node.outputs[0]
    assert x is not None and w is not None
    if len(w.type.shape) != 4:
        raise ctx.unsupported(f"the filter must be 4-D OHWI, got {w.type}")
    out_c, filter_h, filter_w, fic = w.type.shape
    geom = _geometry(ctx, node, x, out, filter_h, filter_w)
    if geom.out_c != out_c:
        raise ctx.unsupported(f"filter has {out_c} output channels, output has {geom.out_c}")
    if fic <= 0 or geom.in_c % fic or out_c % (geom.in_c // fic):
        raise ctx.unsupported(f"input depth {geom.in_c} is not a multiple of filter depth {fic} "
                              f"with {out_c} output channels")
    groups = geom.in_c // fic
    activation = node.fused_activation
    dtypes = (x.type.dtype, w.type.dtype, out.type.dtype)
    ctx.use_kernel("conv")

    if dtypes == ("int8", "int8", "int8"):
        _check_int8_offsets(ctx, x)
        check_bias(ctx, bias, ("int32",), out_c)
        act_min, act_max = int_activation_range(ctx, activation, out)
        if _conv_s8_sparse(ctx, geom, groups, x, w, bias, out, act_min, act_max):
            return
        if simd_layout(ctx) and groups == 1 and w.is_constant and (bias is None or bias.is_constant):
            _conv_s8_simd(ctx, geom, x, w, bias, out, act_min, act_max)
            return
        mult, shift = _quantized_multipliers(ctx, x, out, _channel_scales(ctx, w, out_c, 0))
        params = ctx.params_struct("nn2c_conv_s8_params_t", {
            "g": geom.initializer(), "groups": groups,
            "input_offset": -zero_point(x), "output_offset": zero_point(out),
            "multipliers": mult, "shifts": shift, "act_min": act_min, "act_max": act_max,
        })
        ctx.call("nn2c_conv_s8", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))
        return

    if dtypes == ("int16", "int8", "int16"):
        check_bias(ctx, bias, ("int64", "int32"), out_c)
        mult, shift = _quantized_multipliers(ctx, x, out, _channel_scales(ctx, w, out_c, 0))
        act_min, act_max = int_activation_range(ctx, activation, out)
        params = ctx.params_struct("nn2c_conv_s16_params_t", {
            "g": geom.initializer(), "groups": groups,
            "multipliers": mult, "shifts": shift, "act_min": act_min, "act_max": act_max,
        })
        # TFLite Micro rescales in 64 bits with an int64 bias or none, in 32 bits with an int32 bias
        function = "nn2c_conv_s16_b32" if bias is not None and bias.type.dtype == "int32" else "nn2c_conv_s16_b64"
        ctx.call(function, params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))
        return

    if dtypes == ("float32", "float32", "float32"):
        check_bias(ctx, bias, ("float32",), out_c)
        if not w.is_constant:  # a run-time filter cannot be re-laid out: the plain OHWI kernel
            conv_f32_runtime_filter(ctx, geom.initializer(), groups, activation, x, w, bias, out)
            return
        f_min, f_max = float_activation_range(ctx, activation)
        packed = ctx.weight(w, _pack_float_filter(np.asarray(w.data, dtype=np.float32), groups), "float")
        params = ctx.params_struct("nn2c_conv_f32_params_t", {
            "g": geom.initializer(), "groups": groups, "act_min": f_min, "act_max": f_max,
        })
        ctx.call("nn2c_conv_f32", params, ctx.ptr(x), packed, ctx.ptr(bias), ctx.ptr(out))
        return

    if dtypes == ("float32", "int8", "float32"):
        _hybrid(ctx, node, geom, x, w, bias, out, groups=groups, depth_multiplier=1, depthwise=False)
        return

    raise ctx.unsupported(f"input {dtypes[0]}, filter {dtypes[1]}, output {dtypes[2]} is not a supported combination")


@lowering("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(node: Node, ctx: EmitContext) -> None:
    x, w = node.inputs[0], node.inputs[1]
    bias = node.input(2)
    out = node.outputs[0]
    assert x is not None and w is not None
    if len(w.type.shape) != 4 or w.type.shape[0] != 1:
        raise ctx.unsupported(f"the depthwise filter must be 1HWO, got {w.type}")
    _, filter_h, filter_w, out_c = w.type.shape
    geom = _geometry(ctx, node, x, out, filter_h, filter_w)
    if geom.out_c != out_c or geom.in_c <= 0 or out_c % geom.in_c:
        raise ctx.unsupported(f"output depth {geom.out_c} / filter depth {out_c} is not a multiple of "
                              f"input depth {geom.in_c}")
    multiplier = out_c // geom.in_c
    declared = int(node.attrs.get("depth_multiplier", multiplier) or multiplier)
    if declared != multiplier:
        raise ctx.unsupported(f"depth_multiplier {declared} disagrees with the shapes ({multiplier})")
    activation = node.fused_activation
    dtypes = (x.type.dtype, w.type.dtype, out.type.dtype)
    ctx.use_kernel("conv")

    if dtypes == ("int8", "int8", "int8"):
        _check_int8_offsets(ctx, x)
        check_bias(ctx, bias, ("int32",), out_c)
        act_min, act_max = int_activation_range(ctx, activation, out)
        constant = w.is_constant and (bias is None or bias.is_constant)
        if simd_layout(ctx) and constant and geom.in_c == 1:
            # one input channel: a CONV_2D with out_c filters of depth 1 (1HWO is OHWI transposed)
            _conv_s8_simd(ctx, geom, x, w, bias, out, act_min, act_max,
                          rows=np.asarray(w.data, dtype=np.int8).reshape(-1, out_c).T, filter_axis=3)
            return
        if simd_layout(ctx) and constant and multiplier == 1 and filter_h * filter_w <= DW_SIMD_MAX_TAPS:
            _dw_s8_simd(ctx, geom, x, w, bias, out, act_min, act_max)
            return
        mult, shift = _quantized_multipliers(ctx, x, out, _channel_scales(ctx, w, out_c, 3))
        params = ctx.params_struct("nn2c_dwconv_s8_params_t", {
            "g": geom.initializer(), "depth_multiplier": multiplier,
            "input_offset": -zero_point(x), "output_offset": zero_point(out),
            "multipliers": mult, "shifts": shift, "act_min": act_min, "act_max": act_max,
        })
        ctx.call("nn2c_dwconv_s8", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))
        return

    if dtypes == ("int16", "int8", "int16"):
        check_bias(ctx, bias, ("int64",), out_c)
        mult, shift = _quantized_multipliers(ctx, x, out, _channel_scales(ctx, w, out_c, 3))
        act_min, act_max = int_activation_range(ctx, activation, out)
        params = ctx.params_struct("nn2c_dwconv_s16_params_t", {
            "g": geom.initializer(), "depth_multiplier": multiplier,
            "multipliers": mult, "shifts": shift, "act_min": act_min, "act_max": act_max,
        })
        ctx.call("nn2c_dwconv_s16", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))
        return

    if dtypes == ("float32", "float32", "float32"):
        check_bias(ctx, bias, ("float32",), out_c)
        f_min, f_max = float_activation_range(ctx, activation)
        params = ctx.params_struct("nn2c_dwconv_f32_params_t", {
            "g": geom.initializer(), "depth_multiplier": multiplier, "act_min": f_min, "act_max": f_max,
        })
        ctx.call("nn2c_dwconv_f32", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))
        return

    if dtypes == ("float32", "int8", "float32"):
        _hybrid(ctx, node, geom, x, w, bias, out, groups=1, depth_multiplier=multiplier, depthwise=True)
        return

    raise ctx.unsupported(f"input {dtypes[0]}, filter {dtypes[1]}, output {dtypes[2]} is not a supported combination")


def _conv_s8_sparse(ctx: EmitContext, geom: Geometry, groups: int, x: Value, w: Value, bias: Value | None,
                    out: Value, act_min: int, act_max: int) -> bool:
    """A 1x1, unpadded, single-group int8 CONV_2D with a mostly-zero filter on the sparse kernel
    (codegen/ops/sparse.py decides); False when the layer stays dense."""
    from nn2c.codegen.ops.sparse import (  # it imports folded_bias
        row_pairs_fit,
        sparse_candidate,
        sparse_fields,
        sparse_plan,
    )

    if (groups != 1 or (geom.filter_h, geom.filter_w, geom.pad_h, geom.pad_w) != (1, 1, 0, 0)
            or not sparse_candidate(w, bias)):
        return False
    rows = np.asarray(w.data, dtype=np.int8).reshape(geom.out_c, geom.in_c)
    real = requant_multipliers(x, out, _channel_scales(ctx, w, geom.out_c, 0))
    pairs = row_pairs_fit(ctx, rows, bias, -zero_point(x), real, zero_point(out), act_min, act_max)
    layout = sparse_plan(ctx, rows, geom.batches * geom.out_h * geom.out_w, pairs=pairs, four_rows_only=True)
    if layout is None:
        return False
    ctx.use_kernel("sparse")
    ctx.take_path("SPARSE_PACKED4" if layout.packed else "SPARSE_ROWS4")
    initializer, pair_bytes = sparse_fields(ctx, layout, rows, bias, -zero_point(x), real, zero_point(out),
                                            act_min, act_max, row_pairs=pairs, call_rows=geom.out_h * geom.out_w)
    params = ctx.params_struct("nn2c_conv_sparse_params_t", {"m": initializer, "g": geom.initializer()})
    # (the row pairs, if any, then) a block's outputs (4 pixels, 8 in eight-row pairs): where an in-place plan puts
    # them over their inputs, computed there first
    scratch = ctx.scratch(pair_bytes or 4 * geom.out_c)
    ctx.call("nn2c_conv_s8_sparse", params, ctx.ptr(x), ctx.ptr(out), scratch)
    return True


def _conv_s8_simd(ctx: EmitContext, geom: Geometry, x: Value, w: Value, bias: Value | None, out: Value,
                  act_min: int, act_max: int, rows: np.ndarray | None = None, filter_axis: int = 0) -> None:
    """int8 CONV_2D as im2col pixel pairs x the re-laid-out filter (kernels/nn2c_simd.c); rows =
    the filter as [out_c][filter_h * filter_w * in_c] (default: the OHWI filter itself)."""
    ctx.use_kernel("simd")
    if rows is None:
        rows = np.asarray(w.data, dtype=np.int8).reshape(geom.out_c, -1)
    rows = np.ascontiguousarray(rows)
    real = requant_multipliers(x, out, _channel_scales(ctx, w, geom.out_c, filter_axis))
    if _conv_rows(ctx, geom, x, rows, bias, out, real, act_min, act_max):
        return
    fields, packed = gemm_fields(ctx, rows, bias, -zero_point(x), real, zero_point(out), act_min, act_max,
                                 records=bool(ctx.target.conv_pair_int16), dual=bool(ctx.target.conv_pair_int16),
                                 doubled=bool(ctx.target.conv_pair_int16),
                                 odd_dual=ctx.optimize != "size")  # (a zero channel more of flash)
    pointwise = (geom.filter_h == geom.filter_w == geom.stride_h == geom.stride_w == 1
                 and geom.pad_h == geom.pad_w == 0 and (geom.in_h, geom.in_w) == (geom.out_h, geom.out_w))
    pixels = geom.batches * geom.out_h * geom.out_w
    # (over 1, 2 or 4 pixels the triples take as many steps as the pairs, each dearer: a 1x1-pixel layer of
    # str_ww_ref_model ran its pixel three times)
    fewer_steps = -(-pixels // PIXELS_PER_STEP[True]) < -(-pixels // PIXELS_PER_STEP[False])
    triples = pointwise and bool(fields.get("dual")) and fewer_steps and _takes_triples(ctx)
    params = ctx.params_struct("nn2c_conv_simd_params_t", {
        "m": "{" + ", ".join(f".{k} = {format_field(v)}" for k, v in fields.items()) + "}",
        "g": geom.initializer(), "pad_value": zero_point(x), "pointwise": int(pointwise), "triples": int(triples),
    })
    depth = rows.shape[1]
    if ctx.target.conv_pair_int16 and not _assembly_output(real, act_min, act_max):
        ctx.variant("generic-output")
    if ctx.target.conv_pair_int16:  # DSP: a pixel pair as int16, + an int8 im2col row
        # (none for a 1x1 filter without padding, which reads the pixels, or for filter rows of whole
        # words, expanded straight from the image: nn2c_dsp_expand_window)
        direct = geom.filter_h == geom.filter_w == 1 and geom.pad_h == geom.pad_w == 0
        word_rows = not direct and (geom.filter_w * geom.in_c) % 4 == 0
        # the pixel pair's blocks of the depth, then the im2col staging row; a dual filter's padding block (zero
        # weights, its 16 bytes read, never written) reads into the staging row, or past the blocks where none
        blocks_bytes = 16 * -(-depth // 4)
        staging = 0 if direct or word_rows else depth
        pixels = PIXELS_PER_STEP[triples]
        scratch = ctx.scratch(max(blocks_bytes + staging, 2 * pixels * int(fields["depth_padded"])))
        if not direct:
            ctx.take_path("DSP_EXPAND_WINDOW" if word_rows else "DSP_IM2COL")
        if fields["records"] == "NULL":
            ctx.take_path("DSP_GEMM_ARRAYS")
        elif geom.out_c % 2:
            ctx.take_path("DSP_GEMM_ODD")
        if triples:  # (a row group feeding a FULLY_CONNECTED runs it in pairs: codegen/stream.py takes those then)
            ctx.take_path("DSP_GEMM_TRIPLES")
            ctx.variant("triples")
        else:
            ctx.take_path("DSP_GEMM_PAIRS")
            if fields.get("dual"):
                ctx.take_path("DSP_GEMM_DUAL")
            elif fields["records"] != "NULL":
                ctx.take_path("DSP_GEMM_PLAIN")
    else:
        scratch = ctx.scratch(2 * depth)
    ctx.call("nn2c_conv_s8_simd", params, ctx.ptr(x), packed, ctx.ptr(out), scratch)


# the widest filter row nn2c_conv_s8_rows reads, in input words (nn2c_simd.h NN2C_CONV_ROWS_MAX_BLOCKS)
CONV_ROWS_MAX_BLOCKS = 4


def conv_rows_tail(geom: Geometry) -> int:
    """nn2c_conv_rows_params_t.row_tail: 1 where a filter row's last input word holds one byte of it."""
    return int(geom.filter_w * geom.in_c % 4 == 1)


def conv_rows_blocks(ctx: EmitContext, geom: Geometry) -> int:
    """Input words per filter row where an int8 CONV_2D's shape suits nn2c_conv_s8_rows (Arm DSP), else 0: a
    filter row of 1 to CONV_ROWS_MAX_BLOCKS words that are not whole (those the pixel-pair kernel expands
    straight from the image), more than one tap, dilation 1, whole groups of 4 output channels, where it is
    predicted cheaper than im2col and the pixel pair (the layer also needs doubled records: _conv_rows). The
    first layers over 1-3 channels: person_detect's took 414 instructions a pixel through im2col."""
    row_bytes = geom.filter_w * geom.in_c
    blocks = -(-row_bytes // 4)
    if (not ctx.target.conv_pair_int16 or blocks > CONV_ROWS_MAX_BLOCKS or row_bytes % 4 == 0
            or geom.filter_h * geom.filter_w == 1 or (geom.dilation_h, geom.dilation_w) != (1, 1)
            or geom.out_c % 4):
        return 0
    # Instructions a pixel, fitted to Cortex-M4 QEMU counts: this kernel per group of 4 channels 15 a word (6 for
    # a last word of one byte) and 3 a filter row, 57 for the output stage and the loop; im2col and the int16
    # pixel pair about 320, then 4.4 per channel and word of depth. Without the one-byte tail the pixel pair won
    # from some 16 channels on (pretrainedResnet_quant's first layer, 3x3 over 3: 823 against 843; with the tail
    # this kernel took it, 13,879,252 -> 13,752,944 for the model); person_detect's 8 over one channel: 414
    # against 261.
    word_cost = 15 * blocks - 9 * conv_rows_tail(geom)
    rows_cost = 40 + geom.out_c // 4 * (geom.filter_h * (word_cost + 3) + 57)
    im2col_cost = 320 + 4.4 * geom.out_c * -(-geom.filter_h * row_bytes // 4)
    return blocks if rows_cost < im2col_cost else 0


def pack_conv_rows(rows: np.ndarray, filter_h: int, blocks: int, tail: int) -> np.ndarray:
    """[out_c][filter_h * row bytes] int8 -> nn2c_conv_s8_rows' int16 filter: per group of 4 output channels,
    per filter row, per input word, per channel its weights w0 w2 w1 w3 (zero past the row's bytes); a last word
    of one byte of the row (`tail`: conv_rows_tail) as that byte's weight of each channel, in order."""
    out_c = rows.shape[0]
    by_row = rows.reshape(out_c, filter_h, -1)
    padded = np.zeros((out_c, filter_h, 4 * blocks), dtype=np.int16)
    padded[:, :, :by_row.shape[2]] = by_row
    words = padded.reshape(out_c // 4, 4, filter_h, blocks, 4)[..., [0, 2, 1, 3]]
    per_word = np.ascontiguousarray(words.transpose(0, 2, 3, 1, 4))  # [groups][rows][blocks][4 channels][4]
    if not tail:
        return per_word.reshape(-1)
    full = per_word[:, :, :blocks - 1].reshape(out_c // 4, filter_h, -1)
    last = per_word[:, :, blocks - 1, :, 0]  # the last word's first byte: its weight w0 per channel
    return np.concatenate([full, last], axis=2).reshape(-1)


def _conv_rows(ctx: EmitContext, geom: Geometry, x: Value, rows: np.ndarray, bias: Value | None, out: Value,
               real: list[float], act_min: int, act_max: int) -> bool:
    """An int8 CONV_2D on nn2c_conv_s8_rows where conv_rows_blocks allows it and its output stage fits doubled
    records; False otherwise."""
    blocks = conv_rows_blocks(ctx, geom)
    if not blocks:
        return False
    mantissas, shifts = quantize_multipliers(real)
    bias_data = None if bias is None else np.asarray(bias.data)
    if not doubled_records_fit(rows, bias_data, -zero_point(x), shifts, zero_point(out), act_min, act_max):
        return False
    folded = folded_bias(bias_data, rows, -zero_point(x), geom.out_c)
    records = ctx.const_array(doubled_records(folded, mantissas, shifts, zero_point(out)), "int32_t",
                              "output stage per group of 4 channels: 4 doubled biases, then per channel multiplier, "
                              "rounding with the output offset, shift")
    tail = conv_rows_tail(geom)
    packed = ctx.const_array(2 * pack_conv_rows(rows, geom.filter_h, blocks, tail), "int16_t",
                             "filter per group of 4 channels, filter row, input word: w0 w2 w1 w3 as int16, doubled")
    params = ctx.params_struct("nn2c_conv_rows_params_t", {
        "g": geom.initializer(), "pad_value": zero_point(x), "row_blocks": blocks, "row_tail": tail,
        "records": records,
    })
    scratch = ctx.scratch(geom.filter_h * 4 * blocks)
    if (blocks, tail, geom.filter_h) == (3, 1, 3) and geom.out_c % 8 == 0:
        ctx.take_path("DSP_CONV_ROWS8_3X9")  # (a 3x3 filter over 3 channels: 8 channels at a time)
        ctx.variant("rows8")
    else:
        ctx.take_path(f"DSP_CONV_ROWS_{blocks}" + ("_BYTE" if tail else ""))
    ctx.call("nn2c_conv_s8_rows", params, ctx.ptr(x), packed, ctx.ptr(out), scratch)
    return True


def _right_shifts(shifts: np.ndarray) -> int:
    """nn2c_gemm_s8_t.right: 2 every shift negative, 1 none positive, 0 some left shift."""
    return 2 if bool((shifts < 0).all()) else 1 if bool((shifts <= 0).all()) else 0


def _assembly_output(real: list[float], act_min: int, act_max: int) -> bool:
    """Whether the DSP convolution requantises in assembly (nn2c_gemm_pair16: every shift negative,
    nn2c_gemm_s8_t.right 2, and int8's whole range, not `narrow`). Elsewhere its C output stage costs some 25
    instructions more a channel pair: a variant the cost model fits apart."""
    return act_min == -128 and act_max == 127 and bool((quantize_multipliers(real)[1] < 0).all())


def _dw_s8_simd(ctx: EmitContext, geom: Geometry, x: Value, w: Value, bias: Value | None, out: Value,
                act_min: int, act_max: int) -> None:
    """int8 DEPTHWISE_CONV_2D, depth multiplier 1, 4 (DSP) or 16 (MVE) channels at a time (nn2c_simd.c)."""
    ctx.use_kernel("simd")
    lanes = ctx.target.dw_lanes
    assert lanes is not None, f"{ctx.target.name} has no depthwise SIMD kernel"
    data = np.asarray(w.data, dtype=np.int8).reshape(-1, geom.out_c)  # [taps][channels]
    real = requant_multipliers(x, out, _channel_scales(ctx, w, geom.out_c, 3))
    mantissas, shifts = quantize_multipliers(real)
    bias_data = None if bias is None else np.asarray(bias.data)
    per_channel = {
        "bias": folded_bias(bias_data, np.ascontiguousarray(data.T), -zero_point(x), geom.out_c, lanes),
        "multipliers": pad_channels(mantissas, lanes),
        "shifts": pad_channels(shifts, lanes),
    }
    if lanes == 16:  # even channels first in each group of 8 (VMULLB / VMULLT lanes)
        order = (np.arange(0, per_channel["bias"].size).reshape(-1, 4, 2).transpose(0, 2, 1)).reshape(-1)
        per_channel = {k: v[order] for k, v in per_channel.items()}
    comments = {"bias": "bias with the input offset folded in", "multipliers": "output multipliers",
                "shifts": "output shifts"}
    doubled = lanes == 4 and doubled_records_fit(np.ascontiguousarray(data.T), bias_data, -zero_point(x), shifts,
                                                 zero_point(out), act_min, act_max)
    # --optimize size: the int8 filter, half the int16 one's bytes, its sums doubled before the output stage
    filter8 = doubled and ctx.optimize == "size"
    if doubled:
        idents = {k: "NULL" for k in (*per_channel, "rounding")}  # (the records hold the output stage)
        records = ctx.const_array(
            doubled_records(per_channel["bias"], mantissas, shifts, zero_point(out), double_bias=not filter8),
            "int32_t", "depthwise output stage per group of 4 channels: 4 " + ("" if filter8 else "doubled ")
            + "biases, then per channel multiplier, rounding with the output offset, shift")
        ctx.take_path("DSP_DW_INT8" if filter8 else "DSP_DW_INT16")
        if filter8:  # (bench/costmodel.py measures balanced builds: nn2c.profile predicts it as the int16 filter)
            ctx.variant("int8-filter")
        if geom.out_c % 4:
            ctx.take_path("DSP_DW_PARTIAL")
    else:
        idents = {k: ctx.const_array(v, "int32_t", comments[k]) for k, v in per_channel.items()}
        idents["rounding"] = rounding_array(ctx, per_channel["shifts"])
        records = "NULL"
        if lanes == 4:
            ctx.take_path("DSP_DW_ARRAYS")
    band = dw_plane_band(ctx, geom) if doubled and not filter8 else 0
    params = ctx.params_struct("nn2c_dw_simd_params_t", {
        "g": geom.initializer(), "pad_value": zero_point(x), **idents,
        "output_offset": zero_point(out), "act_min": act_min, "act_max": act_max, "lanes": lanes,
        "right": _right_shifts(shifts),
        "records": records, **({"filter8": 1} if filter8 else {}), **({"band": band} if band else {}),
    })
    if lanes == 16 and _right_shifts(shifts) and not (
            (geom.filter_h, geom.filter_w) == (3, 3) and geom.out_c % 16 == 0):
        ctx.take_path("MVE_DW_ANY")
    scratch = ctx.scratch(dw_plane_scratch(geom, band) if band else geom.in_c)
    if filter8:  # DSP at size: int8 in channel order per group of 4 (SXTB16 of a word: c0 c2 and c1 c3)
        packed = ctx.const_array(pack_dw_filter(data, 4).reshape(-1), "int8_t",
                                 "depthwise filter, groups of 4 channels as int8 (--optimize size)")
    elif lanes == 4:  # DSP: int16, c0 c2 c1 c3 per group (the halves of SXTB16 of an input word); doubled records:
        # the weights doubled (the sums twice TFLite's)
        packed = ctx.const_array(
            (pack_dw_filter(data, 4)[..., [0, 2, 1, 3]].astype(np.int16) * (2 if doubled else 1)).reshape(-1),
            "int16_t", "depthwise filter, groups of 4 channels as int16 (c0 c2 c1 c3)" + (", doubled" if doubled else ""))
    else:  # MVE: groups of 16 channels, the last one zero-padded (its loads and stores predicated)
        packed = ctx.const_array(pack_dw_filter(data, 16).reshape(-1), "int8_t", "depthwise filter, groups of 16 channels")
    filter_arg = f"(const int8_t *){packed}" if lanes == 4 and not filter8 else packed
    ctx.call("nn2c_dw_s8_simd", params, ctx.ptr(x), filter_arg, ctx.ptr(out), scratch)


# The pixels a DSP convolution's step expands (nn2c_conv_s8_run): a pair, or a 1x1 layer's triple (nn2c_gemm_triple16)
PIXELS_PER_STEP = {False: 2, True: 3}


def _takes_triples(ctx: EmitContext) -> bool:
    """Whether a 1x1 convolution of a dual filter (Arm DSP) runs over pixel triples (nn2c_gemm_triple16: a third
    fewer output stages, 18 instructions per 24 MACs where a pair takes 13 per 16; 2 * depth_padded more bytes of
    scratch): --optimize speed always, balanced where the arena allows the scratch (EmitContext.extra_scratch,
    compile.plan_stages), size never (its code)."""
    if ctx.optimize == "balanced" and ctx.allows_extra_scratch():
        ctx.take_triples()
        return True
    return ctx.optimize == "speed"


# Output rows a band of a depthwise layer over channel planes (nn2c_dw_planes): its halo (two input rows read
# again from scratch) and weight set-up spread over 4 rows; its scratch a few KB on vww_96_int8's layers.
DW_PLANE_BAND = 4
# The narrowest output row the planes take: each channel's row costs some 45 instructions of set-up, which a row of
# 12 outputs (108 MACs) about pays for (vww_96_int8 on the Cortex-M4, QEMU: its 12-wide layer 2% fewer instructions
# over planes, its 6-wide ones 18-26% more)
DW_PLANE_MIN_WIDTH = 12
# ... at --optimize balanced: where the planes save more than their code costs
DW_PLANE_BALANCED_MIN_WIDTH = 24


def dw_plane_band(ctx: EmitContext, geom: Geometry) -> int:
    """The band of a DSP depthwise layer with doubled records over the int16 filter that runs over channel planes
    (nn2c_dw_simd_params_t.band): a 3x3 filter at stride 1, dilation 1, padding at most 1, one batch, more than one
    output row of at least DW_PLANE_MIN_WIDTH and a multiple of 4 (the output stage's step); 0 else. --optimize
    size never (the planes' code is about 1.3 KB on the Cortex-M4); balanced from DW_PLANE_BALANCED_MIN_WIDTH and
    where the arena allows their scratch (EmitContext.extra_scratch; a speed build keeps every layer's)."""
    shape = (geom.filter_h, geom.filter_w, geom.stride_h, geom.stride_w, geom.dilation_h, geom.dilation_w)
    if not (ctx.target.simd == "dsp" and shape == (3, 3, 1, 1, 1, 1) and geom.pad_h <= 1 and geom.pad_w <= 1
            and geom.batches == 1 and geom.out_h > 1 and geom.out_w >= DW_PLANE_MIN_WIDTH and geom.out_w % 4 == 0):
        return 0
    if ctx.optimize == "balanced" and geom.out_w >= DW_PLANE_BALANCED_MIN_WIDTH and ctx.allows_extra_scratch():
        ctx.take_extra_scratch()
    elif ctx.optimize != "speed":
        return 0
    ctx.take_path("DSP_DW_PLANES")
    ctx.variant("planes")
    return min(DW_PLANE_BAND, geom.out_h)


def dw_plane_pitch(out_w: int) -> int:
    """A plane row's bytes (nn2c_dw_plane_pitch): the output row's columns (a multiple of 4) plus a word."""
    return out_w + 4


def dw_plane_scratch(geom: Geometry, band: int) -> int:
    """nn2c_dw_planes' scratch: the zero-point row (a word multiple), the channels' planes of band + 2 rows, the
    sums of a band's outputs."""
    return -(-geom.in_c // 4) * 4 + geom.in_c * (band + 2) * dw_plane_pitch(geom.out_w) + 4 * band * geom.out_w


# Shifts of a layer whose output stage fits records (nn2c_record_requant): r = -shift >= 2 makes the rounding's
# low word 2^30, r <= 24 keeps the offset-folded high word and the 64-bit sum in range.
OUTPUT_RECORD_SHIFTS = (-24, -2)


def takes_records(shifts: np.ndarray, act_min: int, act_max: int) -> bool:
    """Whether an Arm DSP matrix product's output stage is read from records (nn2c_gemm_s8_t.records, group 2):
    int8's whole activation range and every shift within OUTPUT_RECORD_SHIFTS. A last, partial group of channels
    (a pruned layer's) has its records padded. (The depthwise kernel's are doubled_records.)"""
    return (act_min, act_max) == (-128, 127) and bool(
        np.all((shifts >= OUTPUT_RECORD_SHIFTS[0]) & (shifts <= OUTPUT_RECORD_SHIFTS[1])))


# Shifts of a layer whose output stage fits doubled records (nn2c_record_requant_doubled): r = -shift >= 1 (a
# rounding divide), r <= 24 keeps 2^(r - 1) + offset 2^r inside int32.
DOUBLED_RECORD_SHIFTS = (-24, -1)


def doubled_records_fit(rows: np.ndarray, bias: np.ndarray | None, input_offset: int, shifts: np.ndarray,
                        output_offset: int, act_min: int, act_max: int) -> bool:
    """Whether an Arm DSP layer's output stage can be doubled records (the depthwise kernel, nn2c_conv_s8_rows):
    int8's whole activation range, every shift within DOUBLED_RECORD_SHIFTS, and per channel (rows: its
    filter, [channels][taps]) the doubled sum 2x and the high word c - 1 + x of SMMLAR inside int32, for any
    int8 input: |x| <= |bias + input_offset sum(w)| + 128 sum|w|."""
    if (act_min, act_max) != (-128, 127) or not bool(
            np.all((shifts >= DOUBLED_RECORD_SHIFTS[0]) & (shifts <= DOUBLED_RECORD_SHIFTS[1]))):
        return False
    w = rows.astype(np.int64)
    base = w.sum(axis=1) * int(input_offset)
    if bias is not None:
        base = base + np.asarray(bias, dtype=np.int64).reshape(-1)[:w.shape[0]]
    largest = np.abs(base) + 128 * np.abs(w).sum(axis=1)
    c = doubled_record_high(-shifts.astype(np.int64), output_offset)
    return bool(np.all(2 * largest < 2**31) and np.all(largest + 2 + np.abs(c) < 2**31))


def doubled_record_high(r: np.ndarray, output_offset: int) -> np.ndarray:
    """A doubled record's second word per right shift r (nn2c_requant_doubled's c): 2^(r - 1) + output_offset 2^r,
    in int64."""
    return np.left_shift(np.int64(1), r - 1) + int(output_offset) * np.left_shift(np.int64(1), r)


def doubled_records(bias: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, output_offset: int,
                    group: int = 4, double_bias: bool = True) -> np.ndarray:
    """Per group of `group` channels (4: the depthwise kernel and nn2c_conv_s8_rows, whose filters and biases are
    doubled; 2: the convolutions' pixel pairs, which double each sum: double_bias False) 4 x group int32 words: the
    biases (folded, int32), then per channel its multiplier, 2^(r - 1) + output_offset 2^r and r, r = -shift
    (nn2c_record_requant_doubled; doubled_records_fit). A last, partial group is padded with channels of bias 0,
    multiplier 0 and r = 1, whose outputs the kernels compute but do not store."""
    channels = multipliers.size
    pad = (0, -channels % group)
    r = np.pad(-shifts.astype(np.int64), pad, constant_values=1)
    biases = (2 if double_bias else 1) * np.pad(np.asarray(bias[:channels], dtype=np.int64), pad)
    return _group_records(biases, group, [
        np.pad(multipliers.astype(np.int64), pad),
        doubled_record_high(r, output_offset), r])


def _group_records(biases: np.ndarray, group: int, words: list[np.ndarray]) -> np.ndarray:
    """The records' layout (output_records, doubled_records) from per-channel arrays padded to whole groups: per
    group of `group` channels their biases, then per channel its words, as int32."""
    stage = np.stack(words, axis=1).reshape(-1, len(words) * group)
    return np.concatenate([biases.reshape(-1, group), stage], axis=1).reshape(-1).astype(np.int32)


def output_records(bias: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, output_offset: int,
                   group: int) -> np.ndarray:
    """Per group of `group` channels (2: the matrix product's) 4 x group int32 words: the folded biases,
    then per channel its multiplier, the high word 2^(r - 2) + output_offset 2^(r - 1) of its rounding constant
    (nn2c_mbqm_rounded's 2^30 + 2^(30 + r), plus the offset times 2^(31 + r)) and r - 1, r = -shift in
    OUTPUT_RECORD_SHIFTS' range (nn2c_record_requant). A last, partial group is padded with channels of bias 0,
    multiplier 0 and r = 2, whose outputs the kernels compute but do not store."""
    channels = multipliers.size
    pad = (0, -channels % group)
    r = np.pad(-shifts.astype(np.int64), pad, constant_values=-OUTPUT_RECORD_SHIFTS[1])
    return _group_records(np.pad(np.asarray(bias[:channels], dtype=np.int64), pad), group, [
        np.pad(multipliers.astype(np.int64), pad),
        np.left_shift(np.int64(1), r - 2) + int(output_offset) * np.left_shift(np.int64(1), r - 1), r - 1])


def pack_dw_filter(taps_by_channel: np.ndarray, lanes: int) -> np.ndarray:
    """[taps][channels] int8 -> [channels / L, taps, L], zero-padded channels (nn2c_simd.h)."""
    taps, channels = taps_by_channel.shape
    groups = -(-channels // lanes)
    padded = np.zeros((taps, groups * lanes), dtype=np.int8)
    padded[:, :channels] = taps_by_channel
    return np.ascontiguousarray(padded.reshape(taps, groups, lanes).transpose(1, 0, 2))
