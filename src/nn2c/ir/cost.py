"""Per-operator cost figures: multiply-accumulates and weight bytes."""

from __future__ import annotations

from math import prod

from nn2c.ir.graph import Node


def macs(node: Node) -> int:
    """Multiply-accumulate count of one inference of this node (0 for data movement)."""
    if node.op == "WHILE":  # one iteration (its condition and body): the count is run-time data
        return sum(macs(n) for key in ("cond", "body") for n in node.attrs[key].nodes)
    out = node.outputs[0].type.shape if node.outputs else ()
    w = node.input(1)
    if node.op == "CONV_2D" and w is not None:
        # output elements x (kh * kw * in_channels)
        return prod(out) * prod(w.type.shape[1:])
    # slices, not indices: a malformed filter (a fuzzed rank) counts what its shape has; the lowering refuses it
    if node.op == "DEPTHWISE_CONV_2D" and w is not None:
        return prod(out) * prod(w.type.shape[1:3])
    if node.op == "FULLY_CONNECTED" and w is not None:
        return prod(out) * prod(w.type.shape[-1:])
    if node.op == "SVDF" and w is not None:
        time_w = node.input(2)
        batch = prod(node.inputs[0].type.shape[:1]) if node.inputs[0] else 1
        feature = prod(w.type.shape[:2])
        memory = prod(time_w.type.shape[1:2]) if time_w is not None else 0
        return batch * (feature + prod(w.type.shape[:1]) * memory)
    if node.op == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        x = node.inputs[0]
        if x is None:
            return 0
        steps = prod(x.type.shape[:-1])
        total = 0
        for i in range(1, 9):  # input-to-gate and recurrent-to-gate weight matrices
            weight = node.input(i)
            if weight is not None:
                total += prod(weight.type.shape)
        return steps * total
    return 0


def weight_bytes(node: Node) -> int:
    own = sum(v.type.num_bytes for v in node.inputs if v is not None and v.is_constant)
    if node.op == "WHILE":  # and its condition's and body's constants
        return own + sum(weight_bytes(n) for key in ("cond", "body") for n in node.attrs[key].nodes)
    return own
