"""SVDF: a rank-r factored recurrent filter with a persistent activation state (TFLite Micro semantics).

Per step, with state S[b, f, 0..M-1] (M = memory_size, f over num_filters = units * rank):
    S <- S shifted one column left;  S[b, f, M-1] = weights_feature[f] . x[b]
    y[b, u] = act(bias[u] + sum_{r < rank} weights_time[u*rank + r] . S[b, u*rank + r, :])

Quantized (int8 input, int16 or int8 state and time weights), as TFLM's PrepareSvdf computes it:
    effective_scale_1 = input_scale * weights_feature_scale / state_scale        (float32 arithmetic)
    effective_scale_2 = state_scale * weights_time_scale / output_scale          (float32 arithmetic)
each turned into a Q31 multiplier and shift by QuantizeMultiplier. The integer kernel, like TFLM's,
ignores the fused activation and only clamps to int8.
"""

from __future__ import annotations

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import scale, zero_point
from nn2c.codegen.ops.conv import folded_bias, pack_rows
from nn2c.ir import Node, Value
from nn2c.quant.fixedpoint import quantize_multiplier

# TFLM ActivationValFloat cases -> the kernel's NN2C_SVDF_ACT_* codes
FLOAT_ACTIVATIONS = {
    "NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4, "SIGN_BIT": 5,
}


def _float32_scale(a: float, b: float, c: float) -> float:
    """a * b / c evaluated in float32, then widened to double, as TFLM's Prepare does."""
    return float(np.float32(np.float32(np.float32(a) * np.float32(b)) / np.float32(c)))


def _check_shapes(ctx: EmitContext, x: Value, wf: Value, wt: Value, bias: Value, state: Value,
                  out: Value, rank: int) -> dict[str, int]:
    if len(x.type.shape) != 2 or len(wf.type.shape) != 2 or len(wt.type.shape) != 2:
        raise ctx.unsupported("SVDF needs a 2-D input, feature weights and time weights")
    batches, input_size = x.type.shape
    filters, memory = wt.type.shape
    if rank <= 0 or filters % rank or wf.type.shape != (filters, input_size):
        raise ctx.unsupported(f"inconsistent SVDF shapes: weights_feature {wf.type.shape}, "
                              f"weights_time {wt.type.shape}, rank {rank}")
    units = filters // rank
    if bias.type.num_elements != units or out.type.shape != (batches, units):
        raise ctx.unsupported(f"SVDF bias {bias.type.shape} / output {out.type.shape} do not match {units} units")
    if state.type.num_elements != batches * filters * memory:
        raise ctx.unsupported(f"SVDF state has {state.type.num_elements} elements, expected "
                              f"{batches * filters * memory}")
    return {"batches": batches, "input_size": input_size, "filters": filters, "rank": rank, "memory": memory}


@lowering("SVDF")
def svdf(node: Node, ctx: EmitContext) -> None:
    x, wf, wt = node.inputs[0], node.inputs[1], node.inputs[2]
    bias, state = node.input(3), node.input(4)
    out = node.outputs[0]
    assert x is not None and wf is not None and wt is not None
    if state is None or not state.is_variable:
        raise ctx.unsupported("the SVDF activation state (input 4) must be a variable tensor")
    if bias is None:
        raise ctx.unsupported("SVDF without a bias tensor is not supported (TFLite Micro requires one)")
    if not (wf.is_constant and wt.is_constant and bias.is_constant):
        raise ctx.unsupported("SVDF weights and bias must be constant")
    dims = _check_shapes(ctx, x, wf, wt, bias, state, out, int(node.attrs.get("rank", 1)))
    ctx.use_kernel("svdf")
    dtypes = (x.type.dtype, wf.type.dtype, wt.type.dtype, state.type.dtype, bias.type.dtype, out.type.dtype)

    if dtypes[0] == "int8":
        _svdf_int8(node, ctx, dims, x, wf, wt, bias, state, out)
        return
    if dtypes == ("float32",) * 6:
        activation = node.fused_activation
        if activation not in FLOAT_ACTIVATIONS:
            raise ctx.unsupported(f"fused activation {activation} is not supported by SVDF")
        params = ctx.params_struct("nn2c_svdf_f32_params_t", {**dims, "activation": FLOAT_ACTIVATIONS[activation]})
        ctx.call("nn2c_svdf_f32", params, ctx.ptr(x), ctx.ptr(wf), ctx.ptr(wt), ctx.ptr(bias), ctx.ptr(state),
                 ctx.ptr(out))
        return
    raise ctx.unsupported("SVDF types (input, weights_feature, weights_time, state, bias, output) = "
                          f"{dtypes} are not supported")


def _svdf_int8(node: Node, ctx: EmitContext, dims: dict[str, int], x: Value, wf: Value, wt: Value,
               bias: Value, state: Value, out: Value) -> None:
    if wf.type.dtype != "int8" or bias.type.dtype != "int32" or out.type.dtype != "int8":
        raise ctx.unsupported("int8 SVDF needs int8 feature weights, an int32 bias and an int8 output")
    if wt.type.dtype not in ("int16", "int8") or state.type.dtype != wt.type.dtype:
        raise ctx.unsupported(f"int8 SVDF needs time weights and state of the same type (int16 or int8), got "
                              f"{wt.type.dtype} and {state.type.dtype}")
    for value in (x, wf, wt, state, out):
        if value.type.quant is None or value.type.quant.per_channel:
            raise ctx.unsupported(f"SVDF tensor {value.name!r} must be quantized per tensor")
    features = np.asarray(wf.data, dtype=np.int8).reshape(dims["filters"], dims["input_size"])
    # widened to int16 on the Arm DSP but with --optimize size
    packed, layout = pack_rows(ctx, features, wf.name, wide=ctx.optimize != "size")
    if ctx.optimize == "size":
        ctx.take_path("SVDF_INPUT_OFFSET")
    m1, s1 = quantize_multiplier(_float32_scale(scale(x), scale(wf), scale(state)))
    m2, s2 = quantize_multiplier(_float32_scale(scale(state), scale(wt), scale(out)))
    params = ctx.params_struct("nn2c_svdf_s8_params_t", {
        **dims,
        "input_zero_point": zero_point(x),
        "state_zero_point": zero_point(state),
        "output_zero_point": zero_point(out),
        "multiplier1": m1, "shift1": s1,
        "multiplier2": m2, "shift2": s2,
        # the zero points folded: sum w (x - zx) = sum w x - zx sum w (nn2c_svdf.c), likewise for the state; at
        # --optimize size the input's applied at run time (its int8 layout: 2 SADD16 per 4 inputs and 4 filters)
        "feature_offsets": "NULL" if ctx.optimize == "size" else ctx.const_array(
            folded_bias(None, features, -zero_point(x), dims["filters"], 1), "int32_t",
            f"{wf.name} input offset folded"),
        "weights_layout": layout,
    })
    units, rank = dims["filters"] // dims["rank"], dims["rank"]
    time_rows = np.asarray(wt.data, dtype=np.int64).reshape(units, rank * dims["memory"])
    folded = ctx.const_array(folded_bias(bias.data, time_rows, -zero_point(state), units, 1), "int32_t",
                             f"{bias.name} state offset folded")
    function = "nn2c_svdf_s8_s16" if wt.type.dtype == "int16" else "nn2c_svdf_s8_s8"
    ctx.call(function, params, ctx.ptr(x), packed, ctx.ptr(wt), folded,
             ctx.ptr(state), ctx.ptr(out))
