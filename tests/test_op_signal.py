"""TFLite Micro's Signal custom operators (the micro_speech audio front end), against TFLite Micro.

The two audio_preprocessor models run over consecutive frames of seeded audio (silence, sine +
noise, a full-scale square wave, white noise, full-range random samples), so that the spectral
subtraction's noise estimate carries over between invocations as in a streaming front end. The
single-operator models cover the option space the models do not: window shift; FFT lengths using
each kissfft butterfly (radix 2, 3, 4 and 5; TFLM's kissfft has no working generic one) in int16,
int32 and float; energy range; filter-bank tables; spectral subtraction with clamping; PCAN
snr_shift; log scale and correction bits. tests/tflite_builder.py writes no custom operators or
unsigned tensors, so CustomOpModel below writes them (tests/test_errors.py uses it too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import pytest
import tflite
from flatbuffers import flexbuffers

from nn2c.api import compile_model, load_model
from nn2c.errors import InvalidModelError, NN2CError, UnsupportedOpError
from nn2c.export import tflite_writer as tw
from nn2c.options import CompileOptions
from nn2c.reference.evaluate import run_graph
from nn2c.verify.build import build, run
from nn2c.verify.compare import run_compiled
from nn2c.verify.oracle import run_tflm
from tests.c_safety import assert_no_injected_code, build_sanitized
from tests.conftest import model_path
from tests.oracle_check import assert_records_match, tflm_with_reset

# many small outputs: the exact (ILP) memory planner would spend its whole time limit, and the plan is
# not what these tests are about
_QUICK = CompileOptions(planner="greedy", schedule="layer")
MODELS = ["tflite_micro/audio_preprocessor_int8.tflite", "tflite_micro/audio_preprocessor_float.tflite"]
_TYPES = {"int16": tflite.TensorType.INT16, "int32": tflite.TensorType.INT32, "uint32": tflite.TensorType.UINT32,
          "uint64": tflite.TensorType.UINT64, "float32": tflite.TensorType.FLOAT32, "int8": tflite.TensorType.INT8,
          "bool": tflite.TensorType.BOOL}


def _tflm(model: bytes, records: list[list[np.ndarray]], outputs: int) -> list[list[np.ndarray]]:
    """Records in sequence on one interpreter (state carries over, as in the C runner)."""
    pytest.importorskip("tflite_micro", reason="SKIPPED LOUDLY: tflite_micro (the TFLM Python interpreter, the oracle "
                        "of these tests) is not installed; `pip install -e .[oracle]`")
    return run_tflm(model, records, outputs)


def audio_frames(count: int, seed: int = 0, length: int = 480) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    frames = []
    for k in range(count):
        kind = k % 5
        if kind == 0:
            x = np.zeros(length)
        elif kind == 1:
            x = 8000 * np.sin(2 * np.pi * (300 + 170 * k) * t / 16000) + rng.normal(0, 300, length)
        elif kind == 2:
            x = np.where(np.sin(2 * np.pi * 1000 * t / 16000) >= 0, 32767, -32768)
        elif kind == 3:
            x = rng.normal(0, 2000, length)
        else:
            x = rng.integers(-32768, 32768, length)
        frames.append(np.clip(np.round(x), -32768, 32767).astype(np.int16))
    return frames


# --- the two real models --------------------------------------------------------------------------
@pytest.mark.parametrize("relative", MODELS, ids=lambda r: r.split("/")[-1])
def test_audio_preprocessor_matches_tflm(tmp_path, relative):
    """12 consecutive frames: int8 output bit-exact, float within 1e-5 relative (it is exact too)."""
    path = model_path(relative)
    result = compile_model(path)
    assert {n.op for n in result.graph.nodes} >= {"SIGNAL_RFFT", "SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION"}
    records = [[f.reshape(1, 480)] for f in audio_frames(12)]
    ours = run_compiled(result, records, tmp_path / "c")
    theirs = _tflm(path.read_bytes(), records, 1)
    assert_records_match(ours, theirs)
    assert any(np.any(o[0] != ours[0][0]) for o in ours[1:])  # the frames are not all alike


def test_reference_evaluator_matches_tflm():
    """nn2c's reference (used by constant folding) on first invocations: the state starts at zero."""
    path = model_path(MODELS[0])
    graph = load_model(path)
    for frame in audio_frames(5, seed=3)[1:]:
        record = [frame.reshape(1, 480)]
        ours = run_graph(graph, record)
        assert isinstance(ours, list)
        assert_records_match([ours], _tflm(path.read_bytes(), [record], 1))


def test_sanitizers_and_reset(tmp_path):
    """ASan + UBSan build of the int8 front end on extreme frames; `<name>_reset()` clears the noise
    estimate as TFLM's MicroInterpreter::Reset does."""
    path = model_path(MODELS[0])
    result = compile_model(path)
    exe = build_sanitized(result, tmp_path / "out", tmp_path / "asan_runner", reset_at=4)
    frames = [np.full(480, -32768, np.int16), np.full(480, 32767, np.int16),
              np.tile(np.array([-32768, 32767], np.int16), 240), *audio_frames(5, seed=5)]
    records = [[f.reshape(1, 480)] for f in frames]
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    assert_records_match(ours, tflm_with_reset(path.read_bytes(), records, 1, reset_at=4))


# --- single-operator models ---------------------------------------------------------------------------
@dataclass
class CustomOpModel:
    """One subgraph with custom (FlexBuffers) options and any TFLite tensor type."""

    tensors: list[tuple[str, tuple[int, ...], str, np.ndarray | None]] = field(default_factory=list)
    ops: list[tuple[str, list[int], list[int], bytes | None]] = field(default_factory=list)
    quant: dict[int, tuple[float, int]] = field(default_factory=dict)  # tensor -> (scale, zero point)

    def tensor(self, dtype: str, shape: tuple[int, ...], data: Any = None, name: str | None = None) -> int:
        array = None if data is None else np.asarray(data).astype(np.dtype(dtype)).reshape(shape)
        self.tensors.append((dtype, tuple(shape), name or f"t{len(self.tensors)}", array))
        return len(self.tensors) - 1

    def custom(self, code: str, inputs: list[int], outputs: list[int], options: dict[str, Any] | bytes) -> None:
        raw = options if isinstance(options, bytes) else bytes(flexbuffers.Dumps(options))
        self.ops.append((code, inputs, outputs, raw))

    def builtin(self, op: str, inputs: list[int], outputs: list[int]) -> None:
        self.ops.append((op, inputs, outputs, None))

    def cast(self, x: int, dtype: str) -> int:
        _, shape, name, _ = self.tensors[x]
        y = self.tensor(dtype, shape, name=f"{name}_{dtype}")
        self.builtin("CAST", [x], [y])
        return y

    def serialize(self, inputs: list[int], outputs: list[int]) -> bytes:
        b = flatbuffers.Builder(4096)
        buffers = [tw._buffer(b, None)]
        tensor_offsets = []
        for index, (dtype, shape, name, data) in enumerate(self.tensors):
            buffer = 0
            if data is not None:
                buffer = len(buffers)
                buffers.append(tw._buffer(b, np.ascontiguousarray(data).tobytes()))
            if index in self.quant:  # the writer's tensor table knows quantization parameters
                scale, zero = self.quant[index]
                tensor_offsets.append(tw._tensor(b, tw.TensorSpec(dtype, shape, name, [scale], [zero]), buffer))
                continue
            name_off = b.CreateString(name)
            shape_off = tw._ints(b, tflite.TensorStartShapeVector, list(shape))
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape_off)
            tflite.TensorAddType(b, _TYPES[dtype])
            tflite.TensorAddBuffer(b, buffer)
            tflite.TensorAddName(b, name_off)
            tensor_offsets.append(tflite.TensorEnd(b))
        codes = list(dict.fromkeys(op[0] for op in self.ops))
        op_offsets = []
        for code, ins, outs, raw in self.ops:
            ins_off = tw._ints(b, tflite.OperatorStartInputsVector, ins)
            outs_off = tw._ints(b, tflite.OperatorStartOutputsVector, outs)
            custom = b.CreateByteVector(raw) if raw is not None else None
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, codes.index(code))
            tflite.OperatorAddInputs(b, ins_off)
            tflite.OperatorAddOutputs(b, outs_off)
            if custom is not None:
                tflite.OperatorAddCustomOptions(b, custom)
            op_offsets.append(tflite.OperatorEnd(b))
        code_offsets = []
        for code in codes:
            custom_name = None if code == code.upper() else b.CreateString(code)
            builtin = getattr(tflite.BuiltinOperator, code) if custom_name is None else tflite.BuiltinOperator.CUSTOM
            tflite.OperatorCodeStart(b)
            tflite.OperatorCodeAddBuiltinCode(b, builtin)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(builtin, 127))
            if custom_name is not None:
                tflite.OperatorCodeAddCustomCode(b, custom_name)
            tflite.OperatorCodeAddVersion(b, 1)
            code_offsets.append(tflite.OperatorCodeEnd(b))
        tensors = tw._offsets(b, tflite.SubGraphStartTensorsVector, tensor_offsets)
        ins_vec = tw._ints(b, tflite.SubGraphStartInputsVector, inputs)
        outs_vec = tw._ints(b, tflite.SubGraphStartOutputsVector, outputs)
        ops_vec = tw._offsets(b, tflite.SubGraphStartOperatorsVector, op_offsets)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors)
        tflite.SubGraphAddInputs(b, ins_vec)
        tflite.SubGraphAddOutputs(b, outs_vec)
        tflite.SubGraphAddOperators(b, ops_vec)
        sub = tflite.SubGraphEnd(b)
        subs = tw._offsets(b, tflite.ModelStartSubgraphsVector, [sub])
        codes_vec = tw._offsets(b, tflite.ModelStartOperatorCodesVector, code_offsets)
        buffers_vec = tw._offsets(b, tflite.ModelStartBuffersVector, buffers)
        description = b.CreateString("nn2c signal test")
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, codes_vec)
        tflite.ModelAddSubgraphs(b, subs)
        tflite.ModelAddDescription(b, description)
        tflite.ModelAddBuffers(b, buffers_vec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _compare(tmp_path, model: bytes, records: list[list[np.ndarray]], name: str) -> None:
    """The C code on the records in sequence, and nn2c's reference evaluator on each, against TFLM
    (the model is stateless)."""
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(model)
    result = compile_model(path, _QUICK)
    ours = run_compiled(result, records, tmp_path / name)
    theirs = _tflm(model, records, len(result.graph.outputs))
    assert_records_match(ours, theirs)
    graph = load_model(path)
    reference = [run_graph(graph, record) for record in records]
    assert all(isinstance(r, list) for r in reference)
    assert_records_match(reference, theirs)  # type: ignore[arg-type]


# FFT lengths (fft_length / 2 complex points) by input length, and the kissfft radices they use
_FFT_LENGTHS = {
    6: [6, 8, 12, 20],  # 3 | 4 | 2,3 | 2,5
    60: [60, 64, 72, 100, 120],  # 2,3,5 | 4,4,2 | 4,3,3 | 2,5,5 | 4,3,5
}


def _time_model(shift: int) -> bytes:
    """Window (2 rows of 60), FFT auto scale, and int16 RFFTs of each length, side by side."""
    m = CustomOpModel()
    rng = np.random.default_rng(shift)
    x = m.tensor("int16", (2, 60), name="x")
    flat = m.tensor("int16", (60,), name="flat")
    window = m.tensor("int16", (60,), data=rng.integers(-32768, 32768, 60))
    windowed = m.tensor("int16", (2, 60))
    m.custom("SignalWindow", [x, window], [windowed], {"shift": shift})
    scaled, bits = m.tensor("int16", (60,)), m.tensor("int32", ())
    m.custom("SignalFftAutoScale", [flat], [scaled, bits], {})
    short = m.tensor("int16", (2, 6), name="short")
    outputs = [windowed, scaled, bits]
    for source, length in ((short, 6), (x, 60)):
        for n in _FFT_LENGTHS[length]:
            y = m.tensor("int16", (2, 2 * (n // 2 + 1)), name=f"rfft{n}")
            m.custom("SignalRfft", [source], [y], {"T": 7, "fft_length": n})
            outputs.append(y)
    return m.serialize([x, flat, short], outputs)


@pytest.mark.parametrize("shift", [0, 31])  # 12: the audio preprocessors
def test_window_auto_scale_rfft(tmp_path, shift):
    rng = np.random.default_rng(10 + shift)
    def full(shape: tuple[int, ...]) -> np.ndarray:
        return rng.integers(-32768, 32768, shape).astype(np.int16)

    records = [
        [np.full((2, 60), -32768, np.int16), np.full(60, -32768, np.int16), np.full((2, 6), -32768, np.int16)],
        [np.full((2, 60), 32767, np.int16), np.zeros(60, np.int16), np.full((2, 6), 32767, np.int16)],
        [full((2, 60)), rng.integers(-300, 300, 60).astype(np.int16), full((2, 6))],
        [audio_frames(2, 0, 120)[1].reshape(2, 60), np.r_[np.int16(-32768), rng.integers(-9, 9, 59)].astype(np.int16),
         rng.integers(-40, 40, (2, 6)).astype(np.int16)],
        [rng.integers(-200, 200, (2, 60)).astype(np.int16), full((60,)), full((2, 6))],
    ]
    _compare(tmp_path, _time_model(shift), records, f"time_{shift}")


def _rfft_model(dtype: str) -> bytes:
    m = CustomOpModel()
    x = m.tensor(dtype, (2, 60), name="x")
    outputs = []
    for n in _FFT_LENGTHS[60]:
        y = m.tensor(dtype, (2, 2 * (n // 2 + 1)), name=f"rfft{n}")
        m.custom("SignalRfft", [x], [y], {"T": {"int32": 2, "float32": 0}[dtype], "fft_length": n})
        outputs.append(y)
    return m.serialize([x], outputs)


def _rfft_records(dtype: str) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(4)
    if dtype == "float32":
        return [[rng.normal(0, 1, (2, 60)).astype(np.float32)], [rng.uniform(-1e4, 1e4, (2, 60)).astype(np.float32)],
                [np.zeros((2, 60), np.float32)], [np.sin(np.arange(120) / 3).astype(np.float32).reshape(2, 60)]]
    info = np.iinfo(np.int32)
    return [[rng.integers(info.min, info.max, (2, 60), endpoint=True).astype(np.int32)],
            [np.full((2, 60), info.min, np.int32)], [np.full((2, 60), info.max, np.int32)],
            [rng.integers(-1000, 1000, (2, 60)).astype(np.int32)]]


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_rfft_int32_and_float(tmp_path, dtype):
    """kissfft with FIXED_POINT 32 and in float (TFLM's Register_RFFT_INT32 / _FLOAT variants)."""
    _compare(tmp_path, _rfft_model(dtype), _rfft_records(dtype), f"rfft_{dtype}")


def _bank_model(options: dict[str, Any], bins: int = 65, channels: int = 12, seed: int = 0) -> bytes:
    """energy -> filter bank -> square root -> spectral subtraction -> PCAN -> log, every stage an output
    (unsigned ones through CAST to int32, as the audio preprocessors do)."""
    rng = np.random.default_rng(seed)
    m = CustomOpModel()
    spectrum = m.tensor("int16", (2 * bins,), name="spectrum")
    scale = m.tensor("int32", (), name="scale_bits")
    energy = m.tensor("uint32", (bins,))
    m.custom("SignalEnergy", [spectrum], [energy], {"start_index": options["start"], "end_index": options["end"]})
    # bands inside [start, end): TFLM leaves the energy outside that range unwritten (stale arena bytes)
    span = options["end"] - options["start"]
    widths = rng.integers(0, min(9, span + 1), channels + 1)
    freq_starts = options["start"] + np.minimum(np.cumsum(np.r_[0, widths[:-1]]) // 2, span - widths)
    weight_starts = np.r_[0, np.cumsum(widths[:-1])]
    n_weights = int(widths.sum())
    tables = [m.tensor("int16", (n_weights,), data=rng.integers(0, 4097, n_weights)),
              m.tensor("int16", (n_weights,), data=rng.integers(0, 4097, n_weights)),
              m.tensor("int16", (channels + 1,), data=freq_starts),
              m.tensor("int16", (channels + 1,), data=weight_starts),
              m.tensor("int16", (channels + 1,), data=widths)]
    bank = m.tensor("uint64", (channels,))
    m.custom("SignalFilterBank", [energy, *tables], [bank], {"num_channels": channels})
    root = m.tensor("uint32", (channels,))
    m.custom("SignalFilterBankSquareRoot", [bank, scale], [root], {})
    clean, noise = m.tensor("uint32", (channels,)), m.tensor("uint32", (channels,))
    m.custom("SignalFilterBankSpectralSubtraction", [root], [clean, noise], {
        "alternate_one_minus_smoothing": 15401, "alternate_smoothing": 983, "clamping": options["clamping"],
        "min_signal_remaining": options["min_signal_remaining"], "num_channels": channels,
        "one_minus_smoothing": 15975, "smoothing": 409, "smoothing_bits": options["smoothing_bits"],
        "spectral_subtraction_bits": 14})
    lut = m.tensor("int16", (125,), data=options["lut"](rng))
    gained = m.tensor("uint32", (channels,))
    m.custom("SignalPCAN", [clean, noise, lut], [gained], {"snr_shift": options["snr_shift"]})
    logged = m.tensor("int16", (channels,), name="log")
    m.custom("SignalFilterBankLog", [gained], [logged], {"input_correction_bits": options["correction_bits"],
                                                         "output_scale": options["output_scale"]})
    outputs = [m.cast(v, "int32") for v in (energy, root, clean, noise, gained)] + [logged]  # energy: see below
    return m.serialize([spectrum, scale], outputs)


def _model_lut() -> np.ndarray:
    """The gain table of the int8 audio preprocessor (its PCAN's constant input)."""
    graph = load_model(model_path(MODELS[0]))
    node = next(n for n in graph.nodes if n.op == "SIGNAL_PCAN")
    data = node.inputs[2].data if node.inputs[2] is not None else None
    assert data is not None
    return np.asarray(data)


_BANK_CASES = {
    "micro_speech": {"start": 5, "end": 61, "clamping": False, "min_signal_remaining": 819, "smoothing_bits": 10,
                     "snr_shift": 6, "correction_bits": 3, "output_scale": 64,
                     "lut": lambda rng: _model_lut()},
    "clamping_extremes": {"start": 0, "end": 65, "clamping": True, "min_signal_remaining": 16383,
                          "smoothing_bits": 0, "snr_shift": 0, "correction_bits": 31, "output_scale": 2**31 - 1,
                          "lut": lambda rng: rng.integers(-32768, 32768, 125)},
    "wide": {"start": 20, "end": 45, "clamping": True, "min_signal_remaining": 0, "smoothing_bits": 31,
             "snr_shift": 40, "correction_bits": 0, "output_scale": -5,
             "lut": lambda rng: rng.integers(-32768, 32768, 125)},
}


@pytest.mark.parametrize("case", list(_BANK_CASES))
def test_filter_bank_chain_streams(tmp_path, case):
    """Six consecutive spectra (the noise estimate carries over), quiet to full-scale."""
    rng = np.random.default_rng(7)
    records = []
    for k, amplitude in enumerate([3000, 300, 32768, 0, 32768, 50]):
        spectrum = rng.integers(-amplitude, amplitude + 1, 130).clip(-32768, 32767).astype(np.int16)
        if k == 2:
            spectrum[:] = -32768
        records.append([spectrum, np.array(k * 3 % 16, np.int32)])
    options = _BANK_CASES[case]
    model = _bank_model(options)
    path = tmp_path / "bank.tflite"
    path.write_bytes(model)
    result = compile_model(path, _QUICK)
    ours = run_compiled(result, records, tmp_path / "bank")
    theirs = _tflm(model, records, len(result.graph.outputs))
    # the energy output is defined on [start_index, end_index) only (TFLM does not write the rest; nn2c
    # writes zeros there)
    defined = slice(options["start"], options["end"])
    for rec in ours:
        assert not np.any(rec[0][: options["start"]]) and not np.any(rec[0][options["end"]:])
    reference = run_graph(load_model(path), records[0])  # the first invocation: the state starts at zero
    assert isinstance(reference, list)
    for rec in (*ours, *theirs, reference):
        rec[0] = rec[0][defined]
    assert_records_match(ours, theirs)
    assert_records_match([reference], theirs[:1])


@pytest.mark.parametrize("which", ["time", "rfft_int32", "bank"])
def test_single_op_sanitizers(tmp_path, which):
    """ASan + UBSan builds on extreme inputs: every FFT radix (int16 and int32, whose sums wrap), the
    chain's extreme options."""
    if which == "rfft_int32":
        model, records = _rfft_model("int32"), _rfft_records("int32")
    elif which == "time":
        model = _time_model(12)
        records = [[np.full(shape, v, np.int16) for shape in ((2, 60), (60,), (2, 6))] for v in (-32768, 32767)]
        records.append([np.tile(np.array([-32768, 32767], np.int16), n // 2).reshape(shape)
                        for n, shape in ((120, (2, 60)), (60, (60,)), (12, (2, 6)))])
    else:
        model = _bank_model(_BANK_CASES["clamping_extremes"])
        records = [[np.full(130, v, np.int16), np.array(s, np.int32)] for v, s in ((-32768, 0), (32767, 15), (0, 31))]
    path = tmp_path / f"{which}.tflite"
    path.write_bytes(model)
    result = compile_model(path, _QUICK)
    exe = build(result.write(tmp_path / "out"), tmp_path / "asan_runner", opt="-O1",
                extra_flags=["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    theirs = _tflm(model, records, len(result.graph.outputs))
    if which == "bank":  # the energy output is defined on [start_index, end_index) only; here that is all of it
        assert _BANK_CASES["clamping_extremes"]["start"] == 0 and _BANK_CASES["clamping_extremes"]["end"] == 65
    assert_records_match(ours, theirs)


# --- what nn2c refuses, in one line ----------------------------------------------------------------------
def _one_op(code: str, options: dict[str, Any] | bytes, dtype: str = "int16", name: str = "x") -> bytes:
    m = CustomOpModel()
    x = m.tensor(dtype, (16,), name=name)
    if code == "SignalWindow":
        y = m.tensor(dtype, (16,))
        m.custom(code, [x, m.tensor("int16", (16,), data=np.ones(16))], [y], options)
    elif code == "SignalRfft":
        length = options.get("fft_length", 16) if isinstance(options, dict) else 16
        y = m.tensor(dtype, (2 * (min(length, 1 << 10) // 2 + 1),))
        m.custom(code, [x], [y], options)
    else:
        y = m.tensor(dtype, (16,))
        m.custom(code, [x], [y], options)
    return m.serialize([x], [y])


@pytest.mark.parametrize(("code", "options", "error", "message"), [
    ("SignalWindow", {"shift": 40}, UnsupportedOpError, r"op #0 CUSTOM:SignalWindow: option 'shift' = 40 is outside"),
    ("SignalWindow", {"shift": -1}, UnsupportedOpError, r"'shift' = -1 is outside \[0, 31\]"),
    ("SignalWindow", {"shift": 1.5}, InvalidModelError, "option 'shift' must be an integer"),
    ("SignalWindow", {"shifts": 3}, InvalidModelError, r"keys \['shifts'\], TFLite Micro reads exactly \['shift'\]"),
    ("SignalWindow", {}, InvalidModelError, "keys"),
    ("SignalWindow", b"\x01\x02\x03", InvalidModelError, "not valid FlexBuffers|not a FlexBuffers map"),
    ("SignalWindow", b"", InvalidModelError, "not valid FlexBuffers"),
    ("SignalRfft", {"T": 7, "fft_length": 15}, UnsupportedOpError, "fft_length 15 must be even"),
    ("SignalRfft", {"T": 7, "fft_length": 1 << 20}, UnsupportedOpError, "'fft_length' = 1048576 is outside"),
    ("SignalRfft", {"T": 1, "fft_length": 32}, UnsupportedOpError, "T=1 is not a type TFLite Micro's FFT takes"),
    ("SignalRfft", {"T": 0, "fft_length": 32}, UnsupportedOpError,
     r"input \(T=0\) 'x' is int16, TFLite Micro requires float32"),
    ("SignalRfft", {"T": 7, "fft_length": 28}, UnsupportedOpError, "needs the kissfft radix 7"),
    ("SignalRfft", {"T": 7, "fft_length": 2}, UnsupportedOpError, "fft_length 2 must be even and at least"),
])
def test_bad_options_are_refused_in_one_line(tmp_path, code, options, error, message):
    path = tmp_path / "bad.tflite"
    path.write_bytes(_one_op(code, options))
    with pytest.raises(error, match=message) as info:
        compile_model(path)
    assert "\n" not in str(info.value)


def test_other_custom_ops_stay_refused(tmp_path):
    m = CustomOpModel()
    x, y = m.tensor("int16", (4,)), m.tensor("int16", (4,))
    m.custom("SignalResampler", [x], [y], {"ratio": 2})  # not one of TFLM's Signal ops
    path = tmp_path / "resampler.tflite"
    path.write_bytes(m.serialize([x], [y]))
    with pytest.raises(UnsupportedOpError, match=r"not supported: SignalResampler \(first at op #0\)"):
        load_model(path)


def test_unsigned_graph_io_is_refused(tmp_path):
    """A uint32 model input is not a Signal-internal tensor: the reader refuses its type."""
    m = CustomOpModel()
    x, y = m.tensor("uint32", (4,)), m.tensor("int16", (4,))
    m.custom("SignalFilterBankLog", [x], [y], {"input_correction_bits": 0, "output_scale": 1})
    path = tmp_path / "uio.tflite"
    path.write_bytes(m.serialize([x], [y]))
    with pytest.raises(NN2CError, match="UINT32"):
        load_model(path)


def test_tensor_names_never_reach_the_code(tmp_path):
    payload = "*/ int injected = 1; /*"
    m = CustomOpModel()
    x = m.tensor("int16", (2, 8), name=payload)
    y = m.tensor("int16", (2, 18), name=payload + "2")
    m.custom("SignalRfft", [x], [y], {"T": 7, "fft_length": 16})
    path = tmp_path / "names.tflite"
    path.write_bytes(m.serialize([x], [y]))
    out = compile_model(path).write(tmp_path / "out")
    files = {p.name: p.read_text() for p in out.rglob("*") if p.is_file() and p.suffix in (".c", ".h")}
    assert_no_injected_code(files, ("int injected",))
