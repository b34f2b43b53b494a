"""FULLY_CONNECTED: y = x W^T + b with a fused activation (int8, float32, float32 with int8 weights).

Quantized parameters follow TFLite Micro's CalculateOpDataFullyConnected: the real multiplier is
input_scale * filter_scale / output_scale in double (per output channel when the filter is).
Run-time weights (TFLite Micro allows them) take the portable kernels, which read [out, in] as
stored; only constant weights are re-laid out for the Cortex-M SIMD kernel.
"""

from __future__ import annotations

from math import prod

import numpy as np

from nn2c.codegen.context import EmitContext, format_field
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import (
    float_activation_range,
    int_activation_range,
    multiplier_arrays,
    requant_multipliers,
    scales,
    zero_point,
)
from nn2c.codegen.ops.conv import (
    check_bias,
    folded_bias,
    gemm_fields,
    pack_rows,
    simd_layout,
    takes_dual,
    takes_records,
)
from nn2c.codegen.ops.sparse import (
    row_pairs_fit,
    sparse_candidate,
    sparse_fields,
    sparse_plan,
    table_plan,
)
from nn2c.errors import InvalidModelError
from nn2c.ir import Node
from nn2c.quant.fixedpoint import quantize_multipliers


def _fc_rows(ctx: EmitContext, node: Node, real: list[float], act_min: int, act_max: int, batches: int) -> bool:
    """--optimize speed / size on a SIMD core: the filter as row sums (nn2c_fc_s8_rows), for speed widened
    to int16 in SMLAD order on the Arm DSP (twice the filter's flash; Helium's row sums read int8, so its
    speed is the balanced kernel), for size in exactly the model's bytes (filter and folded bias), a
    per-tensor filter's multiplier in the parameter struct, no rounding tables. False where the balanced
    kernel runs."""
    wide = ctx.optimize == "speed" and ctx.target.row_sums_int16
    if not wide and ctx.optimize != "size":
        return False
    x, w, bias, out = node.inputs[0], node.inputs[1], node.input(2), node.outputs[0]
    assert x is not None and w is not None and w.data is not None
    out_c, depth = w.type.shape[0], w.type.shape[-1]
    rows = np.asarray(w.data, dtype=np.int8).reshape(out_c, depth)
    mantissas, shifts = quantize_multipliers(real)
    if wide and dual_candidate(ctx, batches, depth, out_c) and takes_records(shifts, act_min, act_max) and takes_dual(
            ctx, rows, folded_bias(None if bias is None else np.asarray(bias.data), rows, -zero_point(x), out_c)):
        # the balanced kernel's dual filter: as fast as the int16 rows (17 instructions per 16 MACs) with
        # less around them, in the int8 flash (ad01_int8 at speed on the M4 in QEMU: 319,985 against 344,176
        # with the rows)
        return False
    what = "filter as row sums, " + ("int16 in SMLAD order (--optimize speed)" if wide else "int8 (--optimize size)")
    packed, layout = pack_rows(ctx, rows, what, wide)
    ctx.use_kernel("simd")
    params = ctx.params_struct("nn2c_fc_rows_params_t", {
        "batches": batches, "depth": depth, "out_c": out_c,
        "filter": packed,
        "layout": layout,
        "bias": ctx.const_array(folded_bias(None if bias is None else np.asarray(bias.data), rows, -zero_point(x),
                                            out_c, pad_to=1), "int32_t", "bias with the input offset folded in"),
        # one multiplier for a per-tensor filter: in the struct, as the model keeps its scale beside the tensor
        "multipliers": ctx.const_array(mantissas, "int32_t", "output multipliers") if len(real) > 1 else "NULL",
        "shifts": ctx.const_array(shifts, "int32_t", "output shifts") if len(real) > 1 else "NULL",
        "multiplier": int(mantissas[0]), "shift": int(shifts[0]),
        "output_offset": zero_point(out), "act_min": act_min, "act_max": act_max,
    })
    ctx.call("nn2c_fc_s8_rows", params, ctx.ptr(x), ctx.ptr(out))
    return True


def fc_s8_params(ctx: EmitContext, node: Node) -> str:
    """The nn2c_fc_s8_params_t of an int8 FULLY_CONNECTED (portable kernels; also the row-streamed
    accumulation of codegen/stream.py)."""
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and w is not None
    output_depth = w.type.shape[0]
    real = requant_multipliers(x, out, scales(w))
    act_min, act_max = int_activation_range(ctx, node.fused_activation, out)
    mult, shift = multiplier_arrays(ctx, real)
    return ctx.params_struct("nn2c_fc_s8_params_t", {
        "batches": prod(out.type.shape) // output_depth,
        "accum_depth": w.type.shape[-1],
        "output_depth": output_depth,
        "input_offset": -zero_point(x),
        "filter_offset": -zero_point(w),
        "output_offset": zero_point(out),
        "multipliers": mult,
        "shifts": shift,
        "per_channel": int(len(real) > 1),
        "act_min": act_min,
        "act_max": act_max,
    })


# An Arm DSP FULLY_CONNECTED of batch 1 from records runs its groups of 4 channels in one assembly loop
# (nn2c_gemm_rows1_groups: some 40 instructions a group fewer, 470 B more code) from this many channels, its
# depth an even count of whole words (the loop's steps come in pairs, without a tail).
FC_GROUPS_MIN_CHANNELS = 16


def takes_fc_groups(depth: int, channels: int) -> bool:
    """Whether a FULLY_CONNECTED of batch 1 with records takes nn2c_config.h's DSP_FC_GROUPS path."""
    return depth >= 8 and depth % 8 == 0 and channels >= FC_GROUPS_MIN_CHANNELS


def dual_candidate(ctx: EmitContext, batches: int, depth: int, channels: int) -> bool:
    """Whether an Arm DSP FULLY_CONNECTED's kernel reads a dual filter (nn2c_gemm_rows1_groups_dual: batch 1, the
    groups' loop over whole groups of 4 channels); the filter then is dual where takes_dual says so."""
    return (ctx.target.simd == "dsp" and batches == 1 and takes_fc_groups(depth, channels)
            and channels % 4 == 0)


@lowering("FULLY_CONNECTED")
def fully_connected(node: Node, ctx: EmitContext) -> None:
    x, w = node.inputs[0], node.inputs[1]
    bias = node.input(2)
    out = node.outputs[0]
    assert x is not None and w is not None
    if node.attrs.get("weights_format", 0) not in (0, "DEFAULT"):
        raise ctx.unsupported("shuffled weight formats are not supported")
    accum_depth = w.type.shape[-1]
    output_depth = w.type.shape[0]
    # the kernels read one bias per output, int32 beside int8 activations, float32 beside float ones
    bias_types = {"int8": ("int32",), "float32": ("float32",)}.get(x.type.dtype)
    if bias_types is not None:  # (other input types are refused below)
        check_bias(ctx, bias, bias_types, output_depth)
    batches = prod(out.type.shape) // output_depth if output_depth else 0
    # every kernel reads batches x accum_depth inputs and writes batches x output_depth outputs (TFLM derives
    # the batches from the input the same way); a malformed model must not make them read past a buffer
    if accum_depth <= 0 or x.type.num_elements != batches * accum_depth or out.type.num_elements != batches * output_depth:
        raise InvalidModelError(f"{node.where()}: input {x.name!r} {list(x.type.shape)} and output "
                                f"{list(out.type.shape)} do not fit the filter {list(w.type.shape)} (inputs x "
                                "[outputs, depth]); the model is malformed, re-export it")
    activation = node.fused_activation
    ctx.use_kernel("fully_connected")
    dims = {"batches": batches, "accum_depth": accum_depth, "output_depth": output_depth}

    if x.type.dtype == "int8" and w.type.dtype == "int8" and out.type.dtype == "int8":
        real = requant_multipliers(x, out, scales(w))
        act_min, act_max = int_activation_range(ctx, activation, out)
        constant = sparse_candidate(w, bias)  # also what the SIMD kernel needs: the offset folded into the bias
        # a [1, H, W, C] input stays on the dense kernels, which row groups can stream (codegen/stream.py)
        streamable = len(x.type.shape) == 4 and x.type.shape[0] == 1 and x.type.shape[1] > 1
        if constant and not streamable:
            rows = np.asarray(w.data, dtype=np.int8).reshape(output_depth, accum_depth)
            pairs = batches >= 4 and row_pairs_fit(ctx, rows, bias, -zero_point(x), real, zero_point(out),
                                                   act_min, act_max)
            table = table_plan(ctx, rows, batches)
            rows_layout = None if table else sparse_plan(ctx, rows, batches, pairs=pairs)
            layout = table or rows_layout
            if layout is not None:
                ctx.use_kernel("sparse")
                if batches >= 4:
                    ctx.take_path("SPARSE_PACKED4" if rows_layout is not None and rows_layout.packed
                                  else "SPARSE_ROWS4")
                if table is not None:
                    ctx.take_path("SPARSE_TABLE")
                initializer, pair_bytes = sparse_fields(ctx, layout, rows, bias, -zero_point(x), real,
                                                        zero_point(out), act_min, act_max, row_pairs=pairs,
                                                        call_rows=batches)
                params = ctx.params_struct("nn2c_fc_sparse_params_t", {"m": initializer, "batches": batches})
                ctx.call("nn2c_fc_s8_sparse", params, ctx.ptr(x), ctx.ptr(out),
                         ctx.scratch(pair_bytes) if pair_bytes else "NULL")  # (the row pairs, their last rows' outputs)
                return
        # run-time weights (TFLM allows them) cannot be re-laid out: the portable kernel reads them as they are
        if simd_layout(ctx) and constant:
            if _fc_rows(ctx, node, real, act_min, act_max, batches):
                return
            # Cortex-M: the input offset folded into the bias, the filter re-laid out (nn2c_simd.c)
            ctx.use_kernel("simd")
            rows = np.asarray(w.data, dtype=np.int8).reshape(output_depth, accum_depth)
            per_channel = real if len(real) > 1 else real * output_depth
            # the Arm DSP kernel reads a batch of 1 with records (nn2c_gemm_rows1_records); two rows at a time
            # read the arrays
            dsp = ctx.target.simd == "dsp"
            groups = dsp and batches == 1 and takes_fc_groups(accum_depth, output_depth)
            fields, packed = gemm_fields(ctx, rows, bias, -zero_point(x), per_channel, zero_point(out),
                                         act_min, act_max, records=dsp and batches == 1,
                                         dual=dual_candidate(ctx, batches, accum_depth, output_depth))
            params = ctx.params_struct("nn2c_fc_simd_params_t", {
                "m": "{" + ", ".join(f".{k} = {format_field(v)}" for k, v in fields.items()) + "}",
                "batches": batches,
            })
            if dsp and batches >= 2:
                ctx.take_path("DSP_FC_BATCH_PAIRS")
            if dsp and fields["records"] == "NULL":
                ctx.take_path("DSP_FC_ARRAYS")
            elif fields.get("dual"):
                ctx.take_path("DSP_FC_DUAL")
            elif groups:
                ctx.take_path("DSP_FC_GROUPS")
            ctx.call("nn2c_fc_s8_simd", params, ctx.ptr(x), packed, ctx.ptr(out))
            return
        params = fc_s8_params(ctx, node)
        ctx.call("nn2c_fully_connected_s8", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))
        return

    if x.type.dtype == "float32" and out.type.dtype == "float32":
        lo, hi = float_activation_range(ctx, activation)
        if w.type.dtype == "float32":
            params = ctx.params_struct("nn2c_fc_f32_params_t", {
                **dims, "act_min": lo, "act_max": hi, "filter_scales": "NULL", "per_channel": 0,
            })
            ctx.call("nn2c_fully_connected_f32", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))
            return
        if w.type.dtype == "int8":  # hybrid: int8 weights, float activations
            filter_scales = ctx.const_array(np.array(scales(w), dtype=np.float32), "float", "filter scales")
            params = ctx.params_struct("nn2c_fc_f32_params_t", {
                **dims, "act_min": lo, "act_max": hi,
                "filter_scales": filter_scales, "per_channel": int(len(scales(w)) > 1),
            })
            ctx.call("nn2c_fully_connected_f32_i8w", params, ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias), ctx.ptr(out))
            return
    raise ctx.unsupported(
        f"input {x.type.dtype}, weights {w.type.dtype}, output {out.type.dtype} is not a supported combination"
    )
