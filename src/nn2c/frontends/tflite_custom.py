"""TFLite custom operators nn2c compiles: TFLite Micro's Signal library (the micro_speech front end)
and TFLite_Detection_PostProcess (the end of SSD detection models; options read by key, as TFLM does).

A custom operator carries its options as a FlexBuffers map. TFLM's kernels read them by position
in the map's sorted key order (FlexbufferWrapper::ElementAsInt32(i)), so an option map is accepted
only with exactly the keys TFLM's converter writes, each an integer (or a bool) in the range the
kernel can execute without undefined behaviour; anything else is refused with one line naming the
operator, the option and what to do. The parsed options become plain int attributes of the node:
nothing from the model reaches the generated C but these numbers.

Unsigned tensors: the Signal operators pass uint32 and uint64 tensors between each other (energy,
filter bank, noise estimate); the model converts them to and from int32 with CAST. The IR has no
unsigned 32/64-bit types, so such a tensor becomes an int32 / int64 value with the same bits:
allowed only when every operator touching it is a Signal operator or a CAST between uint32 and
int32 (which TFLM performs as a bit-preserving static_cast), and it is neither a constant nor a
model input or output. The Signal kernels read those buffers as unsigned.

SignalFilterBankSpectralSubtraction keeps its noise estimate across invocations (TFLM: a
persistent buffer, zeroed by Prepare and Reset): the frontend gives the node a state value
(`Value.is_variable`) as its input 1, zeroed by `<name>_reset()` as TFLM's Reset does. The streaming
operators (SignalDelay, SignalFramer, SignalStacker, SignalOverlapAdd) get their circular buffers
and counters the same way, as inputs after the data input, in layouts whose all-zero state is the
one TFLM's Prepare and Reset leave (ir/ops/signal.py).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import tflite
from flatbuffers import flexbuffers

from nn2c.errors import InvalidModelError, UnsupportedOpError
from nn2c.ir import Graph, Node, TensorType, Value
from nn2c.reference.signal import framer_capacity

# TFLM's registration name -> nn2c operator name
SIGNAL_OPS: dict[str, str] = {
    "SignalWindow": "SIGNAL_WINDOW",
    "SignalFftAutoScale": "SIGNAL_FFT_AUTO_SCALE",
    "SignalRfft": "SIGNAL_RFFT",
    "SignalEnergy": "SIGNAL_ENERGY",
    "SignalFilterBank": "SIGNAL_FILTER_BANK",
    "SignalFilterBankSquareRoot": "SIGNAL_FILTER_BANK_SQUARE_ROOT",
    "SignalFilterBankSpectralSubtraction": "SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION",
    "SignalPCAN": "SIGNAL_PCAN",
    "SignalFilterBankLog": "SIGNAL_FILTER_BANK_LOG",
    "SignalIrfft": "SIGNAL_IRFFT",
    "SignalDelay": "SIGNAL_DELAY",
    "SignalFramer": "SIGNAL_FRAMER",
    "SignalStacker": "SIGNAL_STACKER",
    "SignalOverlapAdd": "SIGNAL_OVERLAP_ADD",
}
DETECTION_CODE = "TFLite_Detection_PostProcess"
# every custom operator nn2c compiles: TFLM's registration name -> nn2c operator name
CUSTOM_OPS: dict[str, str] = {**SIGNAL_OPS, DETECTION_CODE: "DETECTION_POSTPROCESS"}

_INT32_MAX = 2**31 - 1

# per operator: option key -> (lowest, highest) accepted value, "bool" for a boolean
_OPTIONS: dict[str, dict[str, tuple[int, int] | str]] = {
    "SignalWindow": {"shift": (0, 31)},
    "SignalFftAutoScale": {},
    "SignalRfft": {"T": (0, 255), "fft_length": (2, 1 << 16)},
    "SignalEnergy": {"end_index": (0, _INT32_MAX), "start_index": (0, _INT32_MAX)},
    "SignalFilterBank": {"num_channels": (1, 1 << 14)},
    "SignalFilterBankSquareRoot": {},
    "SignalFilterBankSpectralSubtraction": {
        "alternate_one_minus_smoothing": (0, _INT32_MAX),
        "alternate_smoothing": (0, _INT32_MAX),
        "clamping": "bool",
        "min_signal_remaining": (0, _INT32_MAX),
        "num_channels": (1, 1 << 14),
        "one_minus_smoothing": (0, _INT32_MAX),
        "smoothing": (0, _INT32_MAX),
        "smoothing_bits": (0, 31),
        "spectral_subtraction_bits": (0, 63),
    },
    "SignalPCAN": {"snr_shift": (0, 63)},
    "SignalFilterBankLog": {"input_correction_bits": (0, 31), "output_scale": (-(2**31), _INT32_MAX)},
    "SignalIrfft": {"T": (0, 255), "fft_length": (2, 1 << 16)},
    # lengths and counts: at least what the kernel needs to make progress (TFLM's circular buffers
    # assert, or overrun, below that), at most 2^16 (the state stays a static array of sane size)
    "SignalDelay": {"delay_length": (0, 1 << 16)},
    "SignalFramer": {"frame_size": (1, 1 << 16), "frame_step": (1, 1 << 16), "prefill": "bool"},
    "SignalStacker": {"num_channels": (1, 1 << 14), "stacker_left_context": (0, 1 << 10),
                      "stacker_right_context": (0, 1 << 10), "stacker_step": (1, 1 << 11)},
    "SignalOverlapAdd": {"T": (0, 255), "frame_step": (1, 1 << 16)},
}
_MAX_STATE_BYTES = 1 << 24  # a streaming operator's state; no microcontroller front end keeps more

_UINT32 = tflite.TensorType.UINT32
_UINT64 = tflite.TensorType.UINT64
_INT32 = tflite.TensorType.INT32


def custom_code(op_name: str) -> str:
    return op_name.split(":", 1)[1] if op_name.startswith("CUSTOM:") else op_name


def refused(names: list[str]) -> list[str]:
    """The custom operators of `names` (operator names as the frontend gives them) nn2c cannot compile."""
    return sorted({custom_code(n) for n in names if n.startswith("CUSTOM:") and custom_code(n) not in CUSTOM_OPS})


def parse_options(code: str, raw: bytes, where: str) -> dict[str, int]:
    """The validated options of Signal operator `code` from its FlexBuffers bytes."""
    spec = _OPTIONS[code]
    if not spec:
        return {}
    fix = "re-export it with TFLite Micro's signal ops (tflite_micro.python.tflite_micro.signal)"
    options = _flex_map(raw, where, fix)
    if set(options) != set(spec):
        keys = sorted(options)
        raise InvalidModelError(f"{where}: custom options have keys {keys}, TFLite Micro reads exactly "
                                f"{sorted(spec)} (by position); {fix}")
    attrs: dict[str, int] = {}
    for key, rule in spec.items():
        value = options[key]
        if isinstance(rule, str):  # "bool"
            if not isinstance(value, bool | int):
                raise InvalidModelError(f"{where}: option {key!r} must be a boolean, got {type(value).__name__}")
            attrs[key] = int(bool(value))
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidModelError(f"{where}: option {key!r} must be an integer, got {type(value).__name__}")
        lo, hi = rule
        if not lo <= value <= hi:
            raise UnsupportedOpError(f"{where}: option {key!r} = {value} is outside [{lo}, {hi}], the range "
                                     "nn2c's kernel (and TFLite Micro's, without undefined behaviour) takes; "
                                     "fix the option in the model")
        attrs[key] = int(value)
    return attrs


def declare_unsigned(reader: Any, ops: list[tflite.Operator], names: list[str]) -> None:
    """Give the uint32 / uint64 tensors exchanged by Signal operators int32 / int64 values of the same
    bits (see the module docstring); other unsigned tensors are left to the reader's own refusal."""
    sub = reader.subgraph
    touching: dict[int, list[tuple[str, int]]] = {}  # tensor -> (op name, op index)
    for op_index, (op, name) in enumerate(zip(ops, names, strict=True)):
        tensors = [int(t) for t in (op.InputsAsNumpy() if op.InputsLength() else [])]
        tensors += [int(t) for t in (op.OutputsAsNumpy() if op.OutputsLength() else [])]
        for t in tensors:
            if 0 <= t < sub.TensorsLength():
                touching.setdefault(t, []).append((name, op_index))
    io = {int(t) for t in sub.InputsAsNumpy()} | {int(t) for t in sub.OutputsAsNumpy()}
    for index, users in touching.items():
        tensor = sub.Tensors(index)
        kind = tensor.Type()
        if kind not in (_UINT32, _UINT64) or index in io or tensor.IsVariable():
            continue
        if reader.buffer_bytes(tensor.Buffer()) is not None:
            continue
        if not all(_keeps_bits(reader, ops[op_index], name, kind) for name, op_index in users):
            continue
        shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
        if any(d < 0 for d in shape):
            continue
        raw_name = tensor.Name()
        name = raw_name.decode("utf-8", "replace") if raw_name else f"tensor_{index}"
        reader.values[index] = Value(name=name, type=TensorType("int32" if kind == _UINT32 else "int64", shape))


def _keeps_bits(reader: Any, op: tflite.Operator, name: str, kind: int) -> bool:
    if custom_code(name) in SIGNAL_OPS:
        return True
    if name != "CAST" or kind != _UINT32 or op.InputsLength() != 1 or op.OutputsLength() != 1:
        return False
    sub = reader.subgraph
    pair = [int(op.InputsAsNumpy()[0]), int(op.OutputsAsNumpy()[0])]
    if not all(0 <= t < sub.TensorsLength() for t in pair):
        return False
    return sorted(sub.Tensors(t).Type() for t in pair) == sorted([_INT32, _UINT32])


def add_signal_node(graph: Graph, op: tflite.Operator, op_name: str, op_index: int, inputs: list[Value | None],
                    outputs: list[Value], attrs: dict[str, Any], where: str) -> None:
    """Append the node of Signal custom operator `op_name` ("CUSTOM:Signal...")."""
    code = custom_code(op_name)
    raw = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
    attrs = {**attrs, **parse_options(code, raw, where)}
    for value in [*inputs, *outputs]:
        if value is not None and value.type.dtype not in ("int16", "int32", "int64", "float32", "bool"):
            raise UnsupportedOpError(f"{where}: tensor {value.name!r} has type {value.type.dtype}, which "
                                     f"{code} does not take; check the model")
    signal_op = SIGNAL_OPS[code]
    label = outputs[0].name if outputs else code
    if signal_op == "SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION":
        channels = attrs["num_channels"]
        inputs = [*inputs, _state(f"{label}_noise_state", "int32", (channels,), where)]
    elif signal_op in _STREAMING:
        inputs = [*inputs, *_streaming_state(signal_op, inputs, attrs, label, where)]
    graph.add_node(Node(signal_op, inputs, outputs, attrs, name=outputs[0].name if outputs else "", index=op_index))


_STREAMING = ("SIGNAL_DELAY", "SIGNAL_FRAMER", "SIGNAL_STACKER", "SIGNAL_OVERLAP_ADD")


def _state(name: str, dtype: str, shape: tuple[int, ...], where: str) -> Value:
    """A state value (kept across invocations, zeroed by reset) of an operator."""
    ttype = TensorType(dtype, shape)
    if ttype.num_bytes > _MAX_STATE_BYTES:
        raise UnsupportedOpError(f"{where}: its state would take {ttype.num_bytes} bytes (more than "
                                 f"{_MAX_STATE_BYTES}); check the model's shapes and options")
    return Value(name=name, type=ttype, data=np.zeros(shape, dtype=np.dtype(dtype)), is_variable=True)


def _streaming_state(op: str, inputs: list[Value | None], attrs: dict[str, Any], label: str, where: str
                     ) -> list[Value]:
    """The state inputs of a streaming Signal operator (ir/ops/signal.py: their layouts), sized from
    its data input (the lowering checks the rest of the shapes against TFLM's Prepare)."""
    x = inputs[0] if len(inputs) == 1 else None
    if x is None:
        raise UnsupportedOpError(f"{where}: {op} takes exactly one input (given: {len(inputs)}, "
                                 f"{sum(v is not None for v in inputs)} present); check the model")
    shape = x.type.shape
    need = 2 if op == "SIGNAL_OVERLAP_ADD" else 1
    if len(shape) < need or any(d < 1 for d in shape):
        raise UnsupportedOpError(f"{where}: input {x.name!r} has shape {list(shape)}; {op} needs at least {need} "
                                 "non-empty dimension(s)")
    rows = x.type.num_elements // shape[-1]
    if op == "SIGNAL_DELAY":
        length = attrs["delay_length"]
        return [_state(f"{label}_delay_line", "int16", (rows, length), where)] if length else []
    if op == "SIGNAL_FRAMER":
        capacity = framer_capacity(attrs["frame_size"], attrs["frame_step"])
        return [_state(f"{label}_pending", "int16", (rows, capacity), where),
                _state(f"{label}_fill", "int32", (1,), where)]
    if op == "SIGNAL_STACKER":
        depth = attrs["stacker_left_context"] + attrs["stacker_right_context"] + 1
        return [_state(f"{label}_frames", "int16", (depth * attrs["num_channels"],), where),
                _state(f"{label}_counters", "int32", (2,), where)]
    rows = x.type.num_elements // (shape[-1] * shape[-2])  # SIGNAL_OVERLAP_ADD: [..., frames, frame_size]
    return [_state(f"{label}_sums", x.type.dtype, (rows, shape[-1]), where)]


# --- TFLite_Detection_PostProcess (SSD box decoding + non-max suppression) ---------------------------
_DETECTION_LIMIT = 1 << 16  # boxes, classes and detections: keeps every scratch size well inside int32
_DETECTION_INTS: dict[str, tuple[int, int]] = {
    "max_detections": (1, _DETECTION_LIMIT),
    "max_classes_per_detection": (0, _DETECTION_LIMIT),
    "detections_per_class": (0, _DETECTION_LIMIT),
    "num_classes": (1, _DETECTION_LIMIT),
}
_DETECTION_FLOATS = ("nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale")


def _flex_map(raw: bytes, where: str, fix: str) -> dict[str, Any]:
    try:
        root = flexbuffers.GetRoot(bytearray(raw))
        if not root.IsMap:
            raise InvalidModelError(f"{where}: custom options are not a FlexBuffers map; {fix}")
        options = root.AsMap.Value
    except (ValueError, IndexError, KeyError, TypeError, struct.error, OverflowError, RecursionError):
        raise InvalidModelError(f"{where}: custom options are not valid FlexBuffers; {fix}") from None
    if not isinstance(options, dict):
        raise InvalidModelError(f"{where}: custom options are not a FlexBuffers map; {fix}")
    return {str(k): v for k, v in options.items()}


def parse_detection_options(raw: bytes, where: str) -> dict[str, Any]:
    """The validated options of TFLite_Detection_PostProcess. TFLM reads them by key (absent
    detections_per_class: 100, absent use_regular_nms: false; other keys, such as the converter's
    _output_quantized, are ignored); the floats become float32 as TFLM's AsFloat() makes them."""
    fix = "re-export the model with the TFLite converter's SSD post-processing options"
    options = _flex_map(raw, where, fix)
    options.setdefault("detections_per_class", 100)
    options.setdefault("use_regular_nms", False)
    attrs: dict[str, Any] = {}
    for key, (lo, hi) in _DETECTION_INTS.items():
        if key not in options:
            raise InvalidModelError(f"{where}: custom option {key!r} is missing (TFLite Micro would read 0); {fix}")
        value = options[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidModelError(f"{where}: option {key!r} must be an integer, got {type(value).__name__}")
        if not lo <= value <= hi:
            raise UnsupportedOpError(f"{where}: option {key!r} = {value} is outside [{lo}, {hi}], the range nn2c "
                                     "compiles; fix the option in the model")
        attrs[key] = int(value)
    regular = options["use_regular_nms"]
    if not isinstance(regular, bool | int):
        raise InvalidModelError(f"{where}: option 'use_regular_nms' must be a boolean, got {type(regular).__name__}")
    attrs["use_regular_nms"] = int(bool(regular))
    for key in _DETECTION_FLOATS:
        if key not in options:
            raise InvalidModelError(f"{where}: custom option {key!r} is missing (TFLite Micro would read 0); {fix}")
        value = options[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidModelError(f"{where}: option {key!r} must be a number, got {type(value).__name__}")
        as_float = float(np.float32(value)) if abs(float(value)) < 3.5e38 else float("inf")
        if not np.isfinite(as_float):
            raise UnsupportedOpError(f"{where}: option {key!r} = {value} is not a finite float32; fix the option "
                                     "in the model")
        attrs[key] = as_float
    if not 0.0 < attrs["nms_iou_threshold"] <= 1.0:
        raise UnsupportedOpError(f"{where}: option 'nms_iou_threshold' = {attrs['nms_iou_threshold']} is outside "
                                 "(0, 1], where TFLite Micro's kernel fails; set it in (0, 1]")
    for key in ("y_scale", "x_scale", "h_scale", "w_scale"):
        if attrs[key] == 0.0:
            raise UnsupportedOpError(f"{where}: option {key!r} is 0 (the box decoding divides by it); set the "
                                     "scale the model was trained with")
    if attrs["use_regular_nms"] and attrs["detections_per_class"] < 1:
        raise UnsupportedOpError(f"{where}: option 'detections_per_class' = {attrs['detections_per_class']} with "
                                 "use_regular_nms: TFLite Micro's kernel fails unless it is at least 1; fix the option")
    if not attrs["use_regular_nms"] and attrs["max_classes_per_detection"] < 1:
        raise UnsupportedOpError(f"{where}: option 'max_classes_per_detection' = "
                                 f"{attrs['max_classes_per_detection']} without use_regular_nms: TFLite Micro's "
                                 "kernel fails unless it is at least 1; fix the option")
    return attrs


def add_custom_node(graph: Graph, op: tflite.Operator, op_name: str, op_index: int, inputs: list[Value | None],
                    outputs: list[Value], attrs: dict[str, Any], where: str) -> None:
    """Append the node of custom operator `op_name` ("CUSTOM:<code>", one of CUSTOM_OPS)."""
    code = custom_code(op_name)
    if code in SIGNAL_OPS:
        add_signal_node(graph, op, op_name, op_index, inputs, outputs, attrs, where)
        return
    raw = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
    attrs = {**attrs, **parse_detection_options(raw, where)}
    graph.add_node(Node(CUSTOM_OPS[code], inputs, outputs, attrs, name=outputs[0].name if outputs else "",
                        index=op_index))
