"""UNIDIRECTIONAL_SEQUENCE_LSTM, exactly the variants TFLite Micro's lstm_eval supports.

The standard (Keras) LSTM only: all four gates with input and recurrent weights and a bias, no
peephole (inputs 9-11), projection (16-17) or layer norm (20-23); the cell-gate activation is the
fused activation (TANH). Per step: gate = act(W_x x + b + W_h h); c = f*c + i*g (clipped to
+-cell_clip when > 0); h = o * tanh(c); the step's output row is h. Inputs 18 (h) and 19 (c) are
variable tensors kept across invocations.

Quantized parameters follow lstm_eval_common.cc (PrepareGateParametersInteger):
    FC(x) of gate k: real multiplier = s_x * s_wx[k] / 2^-12      (double; gate input is Q3.12)
    FC(h) of gate k: real multiplier = s_h * s_wh[k] / 2^-12
    f * c -> c:      2^-15 * s_c / s_c;   i * g -> c: 2^-15 * 2^-15 / s_c;   tanh(c) * o -> h: 2^-30 / s_h
    tanh(c) input scaling from p = round(log2 s_c) (CheckedLog2): shift 12 + p, applied as the
    multiplier 3 << (12 + p), or multiplier 3 and a right shift of -(12 + p) when negative;
    cell_clip quantized as int16(clamp(cell_clip / s_c)) in double, truncated.
Variants: int8 x/h with int8 weights, int32 bias and int16 c ("8x8->16"); int16 x/h with int8
weights, int64 bias and int16 c ("16x8->16"); float32 throughout.
"""

from __future__ import annotations

import numpy as np

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.codegen.ops.common import scale, zero_point
from nn2c.codegen.ops.conv import folded_bias, pack_rows
from nn2c.ir import Node, Value
from nn2c.quant.fixedpoint import quantize_multiplier, round_half_away

INPUT_WEIGHTS = range(1, 5)  # input, forget, cell, output gate
RECURRENT_WEIGHTS = range(5, 9)
BIASES = range(12, 16)
UNSUPPORTED_OPTIONALS = {9: "peephole", 10: "peephole", 11: "peephole", 16: "projection", 17: "projection",
                         20: "layer norm", 21: "layer norm", 22: "layer norm", 23: "layer norm"}
HIDDEN, CELL = 18, 19
GATE_INPUT_SCALE = 2.0**-12  # Q3.12
GATE_OUTPUT_SCALE = 2.0**-15  # Q0.15

# activation dtype -> (kernel, params type, bias dtype)
INTEGER_VARIANTS = {
    "int8": ("nn2c_lstm_s8", "nn2c_lstm_s8_params_t", "int32"),
    "int16": ("nn2c_lstm_s16", "nn2c_lstm_s16_params_t", "int64"),
}


def _sizes(ctx: EmitContext, node: Node, x: Value, hidden: Value, cell: Value, out: Value,
           weights: list[Value], biases: list[Value]) -> dict[str, int]:
    """TFLM's CreateLstmSizeInfo and ValidateTensorSize."""
    if len(x.type.shape) != 3:
        raise ctx.unsupported(f"the LSTM input must be 3-D, got {x.type.shape}")
    time_major = bool(node.attrs.get("time_major", False))
    d0, d1, input_size = x.type.shape
    batches, time_steps = (d1, d0) if time_major else (d0, d1)
    if len(hidden.type.shape) < 2:
        raise ctx.unsupported(f"the LSTM hidden state must be 2-D, got {hidden.type.shape}")
    state_size = hidden.type.shape[1]
    for w in weights[:4]:
        if w.type.shape != (state_size, input_size):
            raise ctx.unsupported(f"input weights {w.name!r} {w.type.shape} != {(state_size, input_size)}")
    for w in weights[4:]:
        if w.type.shape != (state_size, state_size):
            raise ctx.unsupported(f"recurrent weights {w.name!r} {w.type.shape} != {(state_size, state_size)}")
    for b in biases:
        if b.type.shape != (state_size,):
            raise ctx.unsupported(f"gate bias {b.name!r} {b.type.shape} != {(state_size,)}")
    for state in (hidden, cell):
        if state.type.num_elements != batches * state_size:
            raise ctx.unsupported(f"state {state.name!r} has {state.type.num_elements} elements, expected "
                                  f"{batches * state_size}")
    if out.type.shape != (d0, d1, state_size):
        raise ctx.unsupported(f"the LSTM output {out.type.shape} does not match {(d0, d1, state_size)}")
    return {"time_major": int(time_major), "batches": batches, "time_steps": time_steps,
            "input_size": input_size, "state_size": state_size}


def _operands(ctx: EmitContext, node: Node) -> tuple[Value, Value, Value, Value, list[Value], list[Value]]:
    """The tensors TFLM's LstmTensors::ValidateTensorStatus accepts, or ctx.unsupported."""
    if len(node.inputs) != 24:
        raise ctx.unsupported(f"UNIDIRECTIONAL_SEQUENCE_LSTM needs 24 inputs, got {len(node.inputs)}")
    present = sorted({kind for i, kind in UNSUPPORTED_OPTIONALS.items() if node.input(i) is not None})
    if present:
        raise ctx.unsupported(f"{' and '.join(present)} LSTM variants are not supported (nor by TFLite Micro)")
    x, out = node.inputs[0], node.outputs[0]
    hidden, cell = node.input(HIDDEN), node.input(CELL)
    weights = [node.input(i) for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS)]
    biases = [node.input(i) for i in BIASES]
    if x is None or hidden is None or cell is None or not hidden.is_variable or not cell.is_variable:
        raise ctx.unsupported("the LSTM hidden state (input 18) and cell state (19) must be variable tensors")
    if any(w is None for w in weights) or any(b is None for b in biases):
        raise ctx.unsupported("every LSTM gate needs input and recurrent weights and a bias (CIFG is not supported)")
    if not all(v.is_constant for v in (*weights, *biases)):  # type: ignore[union-attr]
        raise ctx.unsupported("LSTM weights and biases must be constant")
    if len({w.type.dtype for w in weights}) != 1 or len({b.type.dtype for b in biases}) != 1:  # type: ignore[union-attr]
        raise ctx.unsupported("all LSTM weights must share one type, and all biases another")
    if hidden.type.dtype != x.type.dtype or out.type.dtype != x.type.dtype:
        raise ctx.unsupported("the LSTM input, hidden state and output must have the same type")
    activation = node.attrs.get("fused_activation_function", "TANH")
    if activation != "TANH":
        raise ctx.unsupported(f"LSTM cell activation {activation} is not supported (TFLite Micro needs TANH)")
    return x, hidden, cell, out, weights, biases  # type: ignore[return-value]


@lowering("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(node: Node, ctx: EmitContext) -> None:
    x, hidden, cell, out, weights, biases = _operands(ctx, node)
    sizes = _sizes(ctx, node, x, hidden, cell, out, weights, biases)
    rows = sizes["batches"] if sizes["time_major"] else 1
    scratch_elements = 3 * rows * sizes["state_size"]
    clip = float(node.attrs.get("cell_clip", 0.0))
    weight_type, bias_type = weights[0].type.dtype, biases[0].type.dtype
    ctx.use_kernel("lstm")

    if x.type.dtype == "float32":
        if weight_type != "float32" or bias_type != "float32" or cell.type.dtype != "float32":
            raise ctx.unsupported(f"float LSTM needs float32 weights, biases and cell state (got {weight_type}, "
                                  f"{bias_type}, {cell.type.dtype}); hybrid LSTMs are not supported")
        params = ctx.params_struct("nn2c_lstm_f32_params_t", {
            **sizes,
            "input_weights": [ctx.ptr(w) for w in weights[:4]],
            "recurrent_weights": [ctx.ptr(w) for w in weights[4:]],
            "bias": [ctx.ptr(b) for b in biases],
            "use_cell_clip": int(clip > 0.0), "cell_clip": clip,
        })
        scratch = ctx.scratch(scratch_elements * 4)
        ctx.call("nn2c_lstm_f32", params, ctx.ptr(x), ctx.ptr(hidden), ctx.ptr(cell), ctx.ptr(out),
                 f"(float *){scratch}")
        return

    if x.type.dtype not in INTEGER_VARIANTS:
        raise ctx.unsupported(f"{x.type.dtype} LSTM is not supported (int8, int16 and float32 are)")
    kernel, params_type, expected_bias = INTEGER_VARIANTS[x.type.dtype]
    if weight_type != "int8" or bias_type != expected_bias or cell.type.dtype != "int16":
        raise ctx.unsupported(f"{x.type.dtype} LSTM needs int8 weights, {expected_bias} biases and an int16 cell "
                              f"state (got {weight_type}, {bias_type}, {cell.type.dtype})")
    for value in (x, hidden, cell, *weights):
        if value.type.quant is None or value.type.quant.per_channel:
            raise ctx.unsupported(f"LSTM tensor {value.name!r} must be quantized per tensor")
    fields = {**sizes, **_integer_fields(ctx, x, hidden, cell, weights, clip)}
    if x.type.dtype == "int8":
        # the int8 kernel sums plain products (nn2c_rows_sums): offsets folded here (nn2c_lstm.h), and only
        # the re-laid-out weights are emitted (widened to int16 on the Arm DSP but with --optimize size)
        wide = ctx.optimize != "size"
        packed = [pack_rows(ctx, _rows(w), w.name, wide) for w in weights]
        fields["input_weights"] = [ident for ident, _ in packed[:4]]
        fields["recurrent_weights"] = [ident for ident, _ in packed[4:]]
        fields["weights_layout"] = packed[0][1]
        fields["bias"] = [_folded(ctx, w, b, -zero_point(x)) for w, b in zip(weights[:4], biases, strict=True)]
        fields["recurrent_bias"] = [_folded(ctx, w, None, -zero_point(hidden)) for w in weights[4:]]
    else:
        fields["input_weights"] = [ctx.ptr(w) for w in weights[:4]]
        fields["recurrent_weights"] = [ctx.ptr(w) for w in weights[4:]]
        fields["bias"] = [ctx.ptr(b) for b in biases]
    operands = [ctx.ptr(x), ctx.ptr(hidden), ctx.ptr(cell), ctx.ptr(out)]
    params = ctx.params_struct(params_type, fields)
    scratch = ctx.scratch(scratch_elements * 2)
    ctx.call(kernel, params, *operands, f"(int16_t *){scratch}")


def _rows(weights: Value) -> np.ndarray:
    return np.asarray(weights.data, dtype=np.int8).reshape(weights.type.shape[0], -1)


def _folded(ctx: EmitContext, weights: Value, bias: Value | None, offset: int) -> str:
    """bias + offset * (sum of each weight row) as a flash array (nn2c_lstm_s8_params_t); NULL where all 0."""
    data = folded_bias(None if bias is None else bias.data, _rows(weights), offset, weights.type.shape[0], 1)
    return ctx.const_array(data, "int32_t", f"{weights.name} offset folded") if data.any() else "NULL"


def _multiplier(a: float, b: float, c: float) -> tuple[int, int]:
    """QuantizeMultiplier(double(a) * double(b) / double(c)), as TFLM's FC and Mul parameters."""
    return quantize_multiplier(float(np.float64(a) * np.float64(b) / np.float64(c)))


def checked_log2(x: float) -> int:
    """TFLite's CheckedLog2 exponent: round(logf(x) * (1 / logf(2))) in float32 arithmetic."""
    log2 = np.float32(np.log(np.float32(x))) * np.float32(np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    return round_half_away(float(np.float32(log2)))


def _integer_fields(ctx: EmitContext, x: Value, hidden: Value, cell: Value, weights: list[Value],
                    clip: float) -> dict[str, object]:
    gates = [_multiplier(scale(x), scale(w), GATE_INPUT_SCALE) for w in weights[:4]]
    recurrent = [_multiplier(scale(hidden), scale(w), GATE_INPUT_SCALE) for w in weights[4:]]
    cell_scale = scale(cell)  # its zero point is ignored, as in TFLite Micro
    forget_cell = _multiplier(GATE_OUTPUT_SCALE, cell_scale, cell_scale)
    input_cell = _multiplier(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, cell_scale)
    hidden_mul = _multiplier(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, scale(hidden))
    tanh_shift = 12 + checked_log2(cell_scale)
    if not -31 <= tanh_shift <= 14:  # 3 << 14 still keeps int16 * multiplier inside int32
        raise ctx.unsupported(f"cell state scale {cell_scale:g} is outside the int16 tanh's range")
    tanh_multiplier, tanh_right_shift = (3 << tanh_shift, 0) if tanh_shift >= 0 else (3, -tanh_shift)
    quantized_clip = int(min(max(clip / cell_scale, -32768.0), 32767.0)) if clip > 0.0 else 0
    if x.type.dtype == "int16":
        for m, s in gates + recurrent:
            if not -31 <= s < 8 or m < 0:
                raise ctx.unsupported("an int16 LSTM gate multiplier is outside TFLite's 64-bit rescaling range")
    return {
        "input_offset": -zero_point(x), "hidden_offset": -zero_point(hidden),
        "input_weight_offset": [-zero_point(w) for w in weights[:4]],
        "recurrent_weight_offset": [-zero_point(w) for w in weights[4:]],
        "input_multiplier": [m for m, _ in gates], "input_shift": [s for _, s in gates],
        "recurrent_multiplier": [m for m, _ in recurrent], "recurrent_shift": [s for _, s in recurrent],
        "forget_cell_multiplier": forget_cell[0], "forget_cell_shift": forget_cell[1],
        "input_cell_multiplier": input_cell[0], "input_cell_shift": input_cell[1],
        "hidden_multiplier": hidden_mul[0], "hidden_shift": hidden_mul[1],
        "hidden_zero_point": zero_point(hidden),
        "tanh_multiplier": tanh_multiplier, "tanh_shift": tanh_right_shift,
        "use_cell_clip": int(clip > 0.0), "cell_clip": quantized_clip,
    }
