"""Remove channels that are constant (int8) or that nothing reads: structured pruning, bit-exact.

A CONV_2D / FULLY_CONNECTED / DEPTHWISE_CONV_2D output channel o whose filter is all zero has the
accumulator acc = bias[o] at every position (TFLM: acc = sum(w * (x - zp_in)) + bias, and every
w is 0), so it outputs the same int8 k[o] = clamp(MBQM(bias[o], M[o], s[o]) + zp_out) everywhere.
k[o] is computed here with TFLM's own integer steps (QuantizeMultiplier of in_scale * w_scale /
out_scale in double, MultiplyByQuantizedMultiplier with its two roundings, the fused activation as
CalculateActivationRangeQuantized clamps), not with the float reference evaluator, whose rounding of
ties differs from TFLM's.

A channel c of a tensor T is removed (from the producer's weights, bias, per-channel scales and
T's shape, and from every consumer) only when each consumer can do without it exactly:
- CONV_2D / FULLY_CONNECTED reading T: if its weights for c are all zero, c contributes nothing;
  else, if c is constant k and the convolution reads no padding (1x1, VALID, or SAME / explicit
  padding that works out to zero), every output position sees w * (k - zp_in) for every tap of c,
  an integer the bias absorbs: bias[o] += sum(w[o, ..., c]) * (k - zp_in). Integer addition
  commutes, so the int32 accumulator is the same (modulo 2^32, as TFLM's wrapping sum is).
  With padding, a padded tap reads zp_in (contributes 0), not k: the channel stays dense, unless
  k = zp_in (a ReLU channel whose bias is <= 0), which contributes 0 at every tap, padded or not.
- DEPTHWISE_CONV_2D (multiplier 1) reading T: its channel c goes too (its input and output channel
  are the same c). Its output channel is constant when its filter is zero, or when its input is
  constant and it reads no padding (or the constant is zp_in); otherwise it must be unread downstream.
- AVERAGE_POOL_2D / MAX_POOL_2D with the same input and output quantization, RESHAPE keeping the
  last axis, CONCATENATION on the last axis with one quantization and no activation: each output
  element copies (or, for a constant window, averages to) the input channel's value, so channel c
  maps to one output channel, which goes too. The pools' clamp is applied to the constant.
- anything else (ADD, whose requantisation of a per-channel constant is not a bias; graph outputs;
  a padded kxk convolution reading a constant that is not zero-filtered): the channel stays.
The producer side must agree: a DEPTHWISE / pool / RESHAPE / CONCATENATION producer loses the same
channel of its input, recursively; a CONV_2D / FULLY_CONNECTED producer just loses the filter row.
So a zeroed depthwise filter also removes the channel of the convolution before it, which nothing
else reads. Channels are found as closed sets (every tensor-channel a removal implies); a set that
would empty a tensor or reach a graph input or output is left dense.

Float32 layers lose only channels that nothing reads: a channel whose every reader has all-zero
weights for it (0.0 * x = +-0, and adding +-0 to a sum changes no finite value; with SAME padding too),
and the channels of a zero depthwise filter whose output is unread. A float constant channel is
never folded: bias + sum(w * k) would change the order of float additions.
"""

from __future__ import annotations

import math

import numpy as np

from nn2c.ir import Graph, Node, QuantParams, TensorType, Value
from nn2c.ir.cost import macs
from nn2c.passes.base import PassResult
from nn2c.quant.fixedpoint import activation_range_quantized, quantize_multiplier

MATMULS = ("CONV_2D", "FULLY_CONNECTED", "DEPTHWISE_CONV_2D")
POOLS = ("AVERAGE_POOL_2D", "MAX_POOL_2D")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


# --- TFLM integer arithmetic ---------------------------------------------------------------------
def _wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def _srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul (kernels/nn2c_common.h nn2c_srdhm)."""
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    total = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    quotient = abs(total) >> 31  # C division truncates toward zero
    return quotient if total >= 0 else -quotient


def _rdbpot(x: int, exponent: int) -> int:
    """gemmlowp RoundingDivideByPOT: halves away from zero."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def _mbqm(x: int, multiplier: int, shift: int) -> int:
    """TFLite MultiplyByQuantizedMultiplier, TFLM's default (double rounding) build."""
    shifted = _wrap32(x << max(shift, 0))
    return _rdbpot(_srdhm(shifted, multiplier), max(-shift, 0))


# --- facts about nodes -----------------------------------------------------------------------------
def _is_int8(value: Value | None) -> bool:
    return value is not None and value.type.dtype == "int8" and value.type.quant is not None


def _is_activation(value: Value | None) -> bool:
    """An int8 (quantized) or float32 tensor: the two kinds whose channels this pass removes."""
    return _is_int8(value) or (value is not None and value.type.dtype == "float32" and value.type.quant is None)


def _zp(value: Value) -> int:
    assert value.type.quant is not None
    return int(value.type.quant.zero_point[0])


def _filter_axis(node: Node) -> int:
    return 3 if node.op == "DEPTHWISE_CONV_2D" else 0


def _same_kind(a: Value, b: Value) -> bool:
    return a.type.dtype == b.type.dtype and a.type.quant == b.type.quant


def _matmul_ok(node: Node) -> bool:
    """An int8 or float32 CONV_2D / FULLY_CONNECTED / DEPTHWISE_CONV_2D whose channels this pass
    understands (not hybrid: weights, input and output of one kind)."""
    if node.op not in MATMULS or len(node.outputs) != 1:
        return False
    x, w, out = node.input(0), node.input(1), node.outputs[0]
    bias = node.input(2)
    if x is None or w is None or not w.is_constant or (bias is not None and not bias.is_constant):
        return False
    if _is_int8(x):
        if not (_is_int8(out) and _is_int8(w) and (bias is None or bias.type.dtype == "int32")):
            return False
        assert w.type.quant is not None
        if any(w.type.quant.zero_point) or (w.type.quant.per_channel and (
                w.type.quant.axis != _filter_axis(node) or len(w.type.quant.scale) != w.type.shape[_filter_axis(node)])):
            return False  # a zero weight is a zero real only with zero point 0 (TFLM's int8 kernels' rule)
    elif not all(v.type.dtype == "float32" and v.type.quant is None for v in (x, w, out, *([bias] if bias else []))):
        return False  # hybrid (float activations, int8 weights) or another type
    if not out.type.shape or (bias is not None and bias.type.num_elements != out.type.shape[-1]):
        return False  # a malformed bias: left to the lowering, which reports it
    if node.op == "FULLY_CONNECTED":
        return len(w.type.shape) == 2 and bool(x.type.shape) and x.type.shape[-1] == w.type.shape[1] and \
            out.type.shape[-1] == w.type.shape[0]
    if len(x.type.shape) != 4 or len(w.type.shape) != 4:
        return False
    if node.op == "CONV_2D":
        return w.type.shape[3] == x.type.shape[3] and w.type.shape[0] == out.type.shape[3]  # no groups
    return int(node.attrs.get("depth_multiplier", 1)) == 1 and x.type.shape[3] == w.type.shape[3] == out.type.shape[3]


def _reads_padding(node: Node) -> bool:
    """Whether some tap of this convolution falls outside its input (and so reads zp_in, not x)."""
    if node.op == "FULLY_CONNECTED":
        return False
    if "explicit_padding" in node.attrs:
        return any(int(p) for p in node.attrs["explicit_padding"])
    if node.attrs.get("padding", "SAME") == "VALID":
        return False
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and w is not None
    for axis, name in ((1, "h"), (2, "w")):
        stride = int(node.attrs.get(f"stride_{name}", 1))
        dilation = int(node.attrs.get(f"dilation_{name}_factor", node.attrs.get(f"dilation_{name}factor", 1)))
        effective = (w.type.shape[axis] - 1) * dilation + 1
        if (out.type.shape[axis] - 1) * stride + effective - x.type.shape[axis] > 0:
            return True
    return False


def _channel_rows(node: Node) -> np.ndarray:
    """The filter as [out_channel, taps, in_channel] (a depthwise filter: [c, taps, 1]), a view of the
    weights (numpy sums int8 in the platform's int64)."""
    w = node.inputs[1]
    assert w is not None and w.data is not None
    data = np.asarray(w.data)
    if node.op == "FULLY_CONNECTED":
        return data[:, None, :]
    if node.op == "CONV_2D":
        return data.reshape(data.shape[0], -1, data.shape[3])
    return np.moveaxis(data, 3, 0).reshape(data.shape[3], -1, 1)


def _requantize(node: Node, channel: int, acc: int) -> int | None:
    """The int8 that TFLM's CONV_2D / DEPTHWISE / FULLY_CONNECTED outputs for accumulator `acc`; None
    where the scales or the fused activation are ones the kernels refuse (nothing is assumed then)."""
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and w is not None and x.type.quant and w.type.quant and out.type.quant
    scales = w.type.quant.scale
    w_scale = scales[channel] if len(scales) > 1 else scales[0]
    real = float(np.float64(x.type.quant.scale[0]) * np.float64(w_scale) / np.float64(out.type.quant.scale[0]))
    try:
        multiplier, shift = quantize_multiplier(real)
        low, high = activation_range_quantized(node.fused_activation, out.type.quant.scale[0], _zp(out), -128, 127)
    except ValueError:
        return None
    return min(max(_mbqm(_wrap32(acc), multiplier, shift) + _zp(out), low), high)


def _pass_through(node: Node) -> bool:
    """A pool / RESHAPE / CONCATENATION that moves each channel to one output channel unchanged."""
    out = node.outputs[0] if len(node.outputs) == 1 else None
    if out is None or not _is_activation(out):
        return False
    data = [v for v in node.inputs if v is not None]
    if not data:
        return False  # a malformed operator: left to the lowering, which reports it
    if node.op in POOLS:
        return _is_activation(data[0]) and _same_kind(data[0], out) and len(out.type.shape) == 4
    if node.op == "RESHAPE":
        return _is_activation(data[0]) and _same_kind(data[0], out) and \
            data[0].type.shape[-1:] == out.type.shape[-1:] and not data[0].is_constant and \
            all(v.is_constant for v in data[1:])  # a shape computed at run time is not rewritten
    if node.op == "CONCATENATION":
        rank = len(out.type.shape)
        axis = int(node.attrs.get("axis", -1))
        return (axis in (-1, rank - 1) and node.fused_activation == "NONE" and
                all(_is_activation(v) and _same_kind(v, out) and not v.is_constant for v in data))
    return False


def _concat_offsets(node: Node) -> list[tuple[int, Value]]:
    offsets, start = [], 0
    for value in node.inputs:
        if value is not None:
            offsets.append((start, value))
            start += value.type.shape[-1]
    return offsets


# --- constants -------------------------------------------------------------------------------------
def _constant_channels(graph: Graph) -> dict[int, dict[int, int]]:
    """id(tensor) -> {channel: the int8 it holds at every position}, for int8 tensors, in graph order."""
    known: dict[int, dict[int, int]] = {}
    for node in graph.nodes:
        out = node.outputs[0] if node.outputs else None
        if out is None:
            continue
        if _matmul_ok(node) and _is_int8(out):  # float constants would need float folding: none
            x, bias = node.inputs[0], node.input(2)
            assert x is not None
            rows = _channel_rows(node)
            inputs = known.get(id(x), {})
            padded = _reads_padding(node)
            found: dict[int, int] = {}
            zp = _zp(x)
            used: np.ndarray = np.asarray(rows.any(axis=1))  # [out, in]: the input channels each filter reads
            if node.op == "DEPTHWISE_CONV_2D":  # output o reads input channel o alone
                reads = used[:, 0]
                constant = np.array([o in inputs for o in range(rows.shape[0])], dtype=bool)
                zero_taps = np.array([inputs.get(o, zp) == zp for o in range(rows.shape[0])], dtype=bool)
                ok = ~reads | (constant & (zero_taps | (not padded)))
                offset_rows = np.array([inputs.get(o, zp) - zp for o in range(rows.shape[0])], dtype=np.int64)
                sums = rows.sum(axis=1)[:, 0] * offset_rows * reads
            else:
                constant = np.zeros(rows.shape[2], dtype=bool)
                offset = np.zeros(rows.shape[2], dtype=np.int64)  # k - zp_in of each constant input channel
                for i, k in inputs.items():
                    if 0 <= i < rows.shape[2]:
                        constant[i], offset[i] = True, k - zp
                ok = ~(used & ~constant).any(axis=1)  # every channel it reads is constant
                if padded:  # a padded tap reads zp_in, the rest read k: one value only where k = zp_in
                    ok &= ~(used & (offset != 0)).any(axis=1)
                sums = np.zeros(rows.shape[0], dtype=np.int64)  # unread channels' sums are 0
                if inputs and ok.any():
                    sums = (rows.sum(axis=1) * offset).sum(axis=1)
            bias_data = np.asarray(bias.data).reshape(-1) if bias is not None else None
            for o in np.flatnonzero(ok):
                acc = int(bias_data[o]) if bias_data is not None else 0
                constant_out = _requantize(node, int(o), acc + int(sums[o]))
                if constant_out is not None:
                    found[int(o)] = constant_out
            if found:
                known[id(out)] = found
        elif _pass_through(node) and _is_int8(out):
            assert out.type.quant is not None
            if node.op == "CONCATENATION":
                found = {start + c: k for start, v in _concat_offsets(node) for c, k in known.get(id(v), {}).items()}
            else:
                x = node.inputs[0]
                assert x is not None
                found = dict(known.get(id(x), {}))
                if node.op in POOLS:
                    try:
                        low, high = activation_range_quantized(node.fused_activation, out.type.quant.scale[0],
                                                               _zp(out), -128, 127)
                    except ValueError:
                        continue
                    found = {c: min(max(k, low), high) for c, k in found.items()}
            if found:
                known[id(out)] = found
    return known


# --- removal closures ------------------------------------------------------------------------------
class _Closure:
    """Every (tensor, channel) that removing one channel implies, or None where it cannot be removed."""

    def __init__(self, graph: Graph, known: dict[int, dict[int, int]]) -> None:
        self.graph = graph
        self.known = known
        self.outputs = {id(v) for v in graph.outputs}
        self.zero_columns: dict[int, np.ndarray] = {}  # id(node) -> [in_channel] bool: no weight reads it
        # id(node) -> _matmul_ok(node), asked for every channel of every neighbour: the graph does not
        # change while closures are computed
        self.understood = {id(n): _matmul_ok(n) for n in graph.nodes}
        self._removable_memo: dict[int, np.ndarray] = {}

    def _unread(self, node: Node) -> np.ndarray:
        """Per input channel of `node`: True where no weight reads it."""
        if id(node) not in self.zero_columns:
            rows = _channel_rows(node)
            self.zero_columns[id(node)] = np.asarray(~rows.any(axis=(0, 1)))
        return self.zero_columns[id(node)]

    def candidates(self, value: Value) -> list[int]:
        """The channels of `value` whose closure may exist: a cheap superset of those `close` accepts,
        so that the closure runs only where it can succeed."""
        return [int(c) for c in np.flatnonzero(self._removable(value))]

    def _removable(self, value: Value) -> np.ndarray:
        """Per channel of `value`: False where some reader certainly keeps it. A convolution or
        FULLY_CONNECTED reader needs the channel constant or unread; a depthwise or pass-through reader
        passes the question on to its own output's channel (memoised: an expanded channel of an
        inverted bottleneck is otherwise closed, and refused, once per channel)."""
        key = id(value)
        if key in self._removable_memo:
            return self._removable_memo[key]
        channels = value.type.shape[-1] if value.type.shape else 0
        mask = np.zeros(channels, dtype=bool)
        self._removable_memo[key] = mask
        if key in self.outputs or value.producer is None or not _is_activation(value):
            return mask
        known = self.known.get(key, {})
        mask[:] = True
        for user in value.users:
            positions = [i for i, v in enumerate(user.inputs) if v is value]
            out = user.outputs[0] if user.outputs else None
            if self.understood.get(id(user), False) and positions == [0]:
                if user.op == "DEPTHWISE_CONV_2D":
                    assert out is not None
                    passed = self._removable(out)
                    if passed.shape != mask.shape:
                        mask[:] = False
                        break
                    mask &= passed
                    continue
                unread = self._unread(user)
                if unread.shape != mask.shape:
                    mask[:] = False
                    break
                constant = np.zeros(channels, dtype=bool)
                constant[[c for c in known if 0 <= c < channels]] = True
                mask &= unread | constant
            elif _pass_through(user) and out is not None and positions == [0] and user.op != "CONCATENATION":
                passed = self._removable(out)
                if passed.shape != mask.shape:
                    mask[:] = False
                    break
                mask &= passed
            elif _pass_through(user) and out is not None and user.op == "CONCATENATION" and len(positions) == 1:
                start = next(s for s, v in _concat_offsets(user) if v is value)
                passed = self._removable(out)[start : start + channels]
                if passed.shape != mask.shape:
                    mask[:] = False
                    break
                mask &= passed
            else:
                mask[:] = False
                break
        return mask

    def close(self, start: Value, channel: int) -> dict[int, tuple[Value, set[int]]] | None:
        found: dict[int, tuple[Value, set[int]]] = {}
        work = [(start, channel)]
        while work:
            value, c = work.pop()
            entry = found.setdefault(id(value), (value, set()))
            if c in entry[1]:
                continue
            entry[1].add(c)
            implied = self._implied(value, c)
            if implied is None:
                return None
            work += implied
        return found

    def _implied(self, value: Value, c: int) -> list[tuple[Value, int]] | None:
        """The other tensor-channels that must go with channel c of value, None if it must stay."""
        producer = value.producer
        if id(value) in self.outputs or producer is None or value.is_constant or not _is_activation(value):
            return None
        if producer.outputs[0] is not value:
            return None
        implied: list[tuple[Value, int]] = []
        if self.understood.get(id(producer), False):
            if producer.op == "DEPTHWISE_CONV_2D":
                implied.append((producer.inputs[0], c))  # type: ignore[arg-type]
        elif _pass_through(producer):
            if producer.op == "CONCATENATION":
                start, source = [(s, v) for s, v in _concat_offsets(producer) if s <= c][-1]
                implied.append((source, c - start))
            else:
                implied.append((producer.inputs[0], c))  # type: ignore[arg-type]
        else:
            return None
        for user in value.users:
            positions = [i for i, v in enumerate(user.inputs) if v is value]
            if self.understood.get(id(user), False) and positions == [0]:
                if user.op == "DEPTHWISE_CONV_2D":
                    implied.append((user.outputs[0], c))
                elif not self._unread(user)[c]:
                    k = self.known.get(id(value), {}).get(c)
                    if k is None or (k != _zp(value) and _reads_padding(user)):
                        return None
            elif _pass_through(user) and user.op != "CONCATENATION" and positions == [0]:
                implied.append((user.outputs[0], c))
            elif _pass_through(user) and user.op == "CONCATENATION" and len(positions) == 1:
                start = next(s for s, v in _concat_offsets(user) if v is value)
                implied.append((user.outputs[0], start + c))
            else:
                return None
        return implied


# --- rewriting -------------------------------------------------------------------------------------
def _drop(quant: QuantParams | None, keep: np.ndarray) -> QuantParams | None:
    if quant is None or not quant.per_channel:
        return quant
    return QuantParams(tuple(quant.scale[i] for i in keep), tuple(quant.zero_point[i] for i in keep), quant.axis)


def _retype(value: Value, channels: int) -> None:
    value.type = TensorType(value.type.dtype, (*value.type.shape[:-1], channels), value.type.quant)


def _rewrite_matmul(graph: Graph, node: Node, removed_in: set[int], removed_out: set[int],
                    known: dict[int, dict[int, int]]) -> None:
    x, w, bias = node.inputs[0], node.inputs[1], node.input(2)
    assert x is not None and w is not None and w.data is not None
    if not _is_int8(x):  # float: only unread channels and zero weights go, nothing is folded
        _drop_float_channels(graph, node, removed_in, removed_out)
        return
    axis = _filter_axis(node)
    data = np.asarray(w.data)
    out_channels = data.shape[axis]
    acc = (np.asarray(bias.data).astype(np.int64).reshape(-1).copy() if bias is not None
           else np.zeros(out_channels, dtype=np.int64))
    if node.op != "DEPTHWISE_CONV_2D" and removed_in:
        rows = _channel_rows(node)
        constants = known.get(id(x), {})
        for c in sorted(removed_in):
            if c in constants:  # else no weight reads it (checked by the closure)
                acc += rows[:, :, c].sum(axis=1) * (constants[c] - _zp(x))
    keep_out = np.array([o for o in range(out_channels) if o not in removed_out])
    if node.op == "DEPTHWISE_CONV_2D":
        data = data[..., keep_out]
    else:
        keep_in = np.array([i for i in range(data.shape[-1]) if i not in removed_in])
        data = data[keep_out][..., keep_in]
    w_quant = _drop(w.type.quant, keep_out)
    graph.set_input(node, 1, graph.const(data.astype(np.int8), w.name, w_quant))
    wrapped = ((acc[keep_out] + 2**31) % 2**32 - 2**31).astype(np.int32)  # TFLM's int32 sum wraps
    if bias is not None:
        graph.set_input(node, 2, graph.const(wrapped, bias.name, _drop(bias.type.quant, keep_out)))
    elif wrapped.any():
        assert x.type.quant is not None
        scales = tuple(float(np.float32(x.type.quant.scale[0] * s)) for s in (w_quant.scale if w_quant else (1.0,)))
        quant = QuantParams(scales, (0,) * len(scales), 0)
        new_bias = graph.const(wrapped, f"{node.name or node.op}_bias", quant)
        if len(node.inputs) > 2:
            graph.set_input(node, 2, new_bias)
        else:
            graph.set_inputs(node, [*node.inputs, new_bias])
    _retype(node.outputs[0], len(keep_out))


def _drop_float_channels(graph: Graph, node: Node, removed_in: set[int], removed_out: set[int]) -> None:
    x, w, bias = node.inputs[0], node.inputs[1], node.input(2)
    assert x is not None and w is not None and w.data is not None
    data = np.asarray(w.data)
    keep_out = np.array([o for o in range(data.shape[_filter_axis(node)]) if o not in removed_out])
    if node.op == "DEPTHWISE_CONV_2D":
        data = data[..., keep_out]
    else:
        data = data[keep_out][..., np.array([i for i in range(data.shape[-1]) if i not in removed_in])]
    graph.set_input(node, 1, graph.const(data, w.name, w.type.quant))
    if bias is not None and bias.data is not None:
        graph.set_input(node, 2, graph.const(np.asarray(bias.data).reshape(-1)[keep_out], bias.name, bias.type.quant))
    _retype(node.outputs[0], len(keep_out))


def prune_constant_channels(graph: Graph) -> PassResult:
    result = PassResult(False)
    known = _constant_channels(graph)
    closure = _Closure(graph, known)
    removed: dict[int, tuple[Value, set[int]]] = {}
    for node in graph.nodes:
        if not closure.understood[id(node)]:
            continue
        out = node.outputs[0]
        for c in closure.candidates(out):
            if c in removed.get(id(out), (out, set()))[1]:
                continue
            found = closure.close(out, c)
            if found is None:
                continue
            if any(len(chs | removed.get(key, (v, set()))[1]) >= v.type.shape[-1] for key, (v, chs) in found.items()):
                continue  # a tensor would lose every channel
            for key, (value, channels) in found.items():
                removed.setdefault(key, (value, set()))[1].update(channels)
    if not removed:
        return result
    macs_before = sum(macs(n) for n in graph.nodes)
    bytes_before = sum(v.type.num_bytes for v, _ in removed.values())
    count = sum(len(chs) for v, chs in removed.values() if v.producer is not None and v.producer.op in MATMULS)
    understood = {key for key, ok in closure.understood.items() if ok}  # before any tensor changes shape
    for node in list(graph.nodes):
        y = node.outputs[0] if node.outputs else None
        x = node.input(0)
        removed_out = removed[id(y)][1] if y is not None and id(y) in removed else set()
        removed_in = removed[id(x)][1] if x is not None and id(x) in removed else set()
        if not removed_out and not removed_in:
            continue
        if id(node) in understood:
            assert y is not None
            _rewrite_matmul(graph, node, removed_in, removed_out, known)
            if removed_out:
                result.notes.append(f"removed {len(removed_out)} of {y.type.shape[-1] + len(removed_out)} "
                                    f"output channel(s) of {node.where()}")
        elif node.op in POOLS or node.op == "CONCATENATION":
            assert y is not None
            _retype(y, y.type.shape[-1] - len(removed_out))
        elif node.op == "RESHAPE":
            assert y is not None
            _retype(y, y.type.shape[-1] - len(removed_out))
            shape = node.input(1)
            if shape is not None and shape.is_constant:
                graph.set_input(node, 1, graph.int32_const(list(y.type.shape), shape.name))
            if "new_shape" in node.attrs:
                node.attrs["new_shape"] = list(y.type.shape)
    macs_after = sum(macs(n) for n in graph.nodes)
    result.modified = True
    result.bytes_saved = bytes_before - sum(v.type.num_bytes for v, _ in removed.values())
    ratio = macs_after / macs_before if macs_before else math.nan
    result.notes.insert(0, f"removed {count} constant or unread channel(s): MACs {macs_before:,} -> "
                           f"{macs_after:,} ({ratio:.2f}x)")
    return result
