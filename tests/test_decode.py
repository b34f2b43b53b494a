"""TFLM's DECODE operator (weight compression), decoded at import (frontends/tflite_decode.py).

The oracle is TFLite Micro running the *compressed* model. LUT models are made by TFLM's own
compressor (compression/compress.py with a spec). The installed compressor's Huffman and pruning
plug-ins are stubs, but TFLM's runtime decodes both: those tensors are encoded here (a canonical
Huffman code in TFLM's Xtensa table format; a pruning bit mask), inserted with TFLM's own
decode_insert, and checked against what TFLM decodes from them.

Real models have more distinct weights per channel than 2^7, so they are first re-binned (each
value moved to the nearest of 2^bits of its channel's values): the compression of the re-binned
model is lossless, and the compressed model must then give TFLM's outputs of the uncompressed one.
"""

from __future__ import annotations

import heapq
import json
import re
import warnings
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import load_model
from nn2c.errors import InvalidModelError, NN2CError, UnsupportedOpError
from nn2c.frontends import tflite_decode
from nn2c.verify.inputs import random_records
from nn2c.verify.oracle import run_tflm
from tests.conftest import model_path
from tests.oracle_check import assert_matches_tflm
from tests.test_errors import assert_one_line_error, nn2c
from tests.tflite_builder import ModelBuilder

compression = pytest.importorskip("tflite_micro.tensorflow.lite.micro.compression.compress",
                                  reason="SKIPPED LOUDLY: tflite_micro has no compression module; pip install "
                                  "a tflite-micro wheel built with compression (0.dev2026 or later)")
from tflite_micro.python.tflite_micro import runtime  # noqa: E402
from tflite_micro.tensorflow.lite.micro.compression import (  # noqa: E402
    compressor,
    decode,
    decode_insert,
    lut,
    model_editor,
    spec,
)

WEIGHTED = {"CONV_2D": 3, "DEPTHWISE_CONV_2D": 4, "FULLY_CONNECTED": 9}  # builtin codes


# --- models ---------------------------------------------------------------------------------------
def _editable(data: bytes) -> model_editor.Model:
    """TFLM's model editor on `data`. Its operator codes are keyed by the int32 builtin_code field
    alone; files from older converters leave it 0 and hold the code in deprecated_builtin_code, and
    the compressor then writes every operator as the same one. The codes are set as TFLM's runtime
    reads them (the larger field) before compressing."""
    model = model_editor.read(data)
    for code in model.operator_codes:
        code.builtin_code = max(code.builtin_code, code._fb.deprecatedBuiltinCode)
    for sub in model.subgraphs:
        for op in sub.operators:
            op.opcode = model.operator_codes[op.opcode_index].builtin_code
    return model


def _bytes(model: model_editor.Model) -> bytes:
    """The model serialised and aligned as compress() writes it."""
    return bytes(compression._apply_flatbuffer_alignment(model.build()))


def _rebin(array: np.ndarray, axis: int | None, levels: int) -> np.ndarray:
    """`array` with at most `levels` distinct values per slice along `axis` (the whole array if None):
    each value moved to the nearest of `levels` evenly spaced (by rank) distinct values of its slice."""
    out = array.copy()
    slices = [out] if axis is None else list(np.moveaxis(out, axis, 0))
    for s in slices:
        distinct = np.unique(s)
        if len(distinct) > levels:
            centres = distinct[np.round(np.linspace(0, len(distinct) - 1, levels)).astype(int)]
            nearest = np.abs(s.astype(np.float64)[..., None] - centres.astype(np.float64)).argmin(-1)
            s[...] = centres[nearest]
    return out


def _weights(model: model_editor.Model) -> list[tuple[int, int | None]]:
    """(tensor index, per-channel axis or None) of every constant weight and bias of the first subgraph."""
    sub = model.subgraphs[0]
    found: dict[int, int | None] = {}
    for op in sub.operators:
        if op.opcode not in WEIGHTED.values():
            continue
        for t in op.inputs[1:3]:
            if t is None or t.buffer is None or not t.buffer.data or t.dtype not in (9, 2, 0):
                continue
            q = t.quantization
            per_channel = q is not None and len(q.scales) > 1
            axis = (q.axis or 0) if per_channel else None
            if axis is not None and axis >= len(t.shape):
                continue  # a stale axis on a 1-D bias (person_detect): TFLM's DECODE would reject it
            found[sub.tensors.index(t)] = axis
    return sorted(found.items())


@cache
def _lut_model(relative: str, bits: int) -> tuple[bytes, bytes]:
    """(uncompressed, LUT-compressed) copies of a model whose weights and biases were re-binned to
    2^bits values per channel; compressed by TFLM's compressor, per channel along the quantization axis."""
    model = _editable(model_path(relative).read_bytes())
    specs = []
    for index, axis in _weights(model):
        tensor = model.subgraphs[0].tensors[index]
        tensor.array = _rebin(tensor.array, axis, 2**bits)
        mode = spec.PerTensor() if axis is None else spec.PerChannel(axis=axis)
        specs.append(spec.Tensor(0, index, [spec.LookUpTableCompression(bits, mode)]))
    base = _bytes(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "resulted in expansion": a 1-byte bias table per channel
        return base, bytes(compression.compress(base, specs))


def _insert(model: model_editor.Model, encodings: dict[int, tuple[bytes, bytes]]) -> bytes:
    """The model with DECODEs of (encoded, ancillary) inserted for tensors of subgraph 0, by TFLM's
    decode_insert (what compress() does after its plug-ins ran)."""
    results = {(0, t): compressor.CompressionResult(encoded_data=e, ancillary_data=a)
               for t, (e, a) in encodings.items()}
    decode_insert.insert_decode_operators(model, results)
    return _bytes(model)


# --- encoders for what the installed compressor does not write ------------------------------------
def _dcm(kind: decode.DecodeType, user: bytes) -> bytes:
    return decode.DecodeCommonMetadata(decode_type=kind, user_data=user).to_bytes()


def _lut(array: np.ndarray, axis: int | None, bits: int) -> tuple[bytes, bytes]:
    """A LUT encoding by the functions of TFLM's LUT plug-in (for bool, which the plug-in does not read)."""
    packed = lut.compress_array(array, axis)
    stride = max(len(t) for t in packed.lookup_tables)
    metadata = lut.LutAncillaryData(bitwidth=bits, axis=lut.LutAncillaryData.PER_TENSOR_AXIS if axis is None else axis,
                                    value_table_stride=stride,
                                    value_tables=lut.pack_lookup_tables(packed.lookup_tables, stride))
    encoded = lut.pack_indices(packed.indices, bits)
    return encoded, _dcm(decode.DecodeType.LUT, metadata.to_user_data()) + metadata.to_bytes()


def _prune(array: np.ndarray, zero_points: np.ndarray) -> tuple[bytes, bytes]:
    """DecodeStatePrune's format: a bit mask (1 = stored value), the stored values after the DCM.
    `zero_points` holds each element's zero point (broadcast to the array)."""
    raw = array.reshape(-1)
    bits = raw.view(f"u{raw.dtype.itemsize}") if raw.dtype.kind in "fb" else raw
    keep = bits != np.broadcast_to(zero_points, array.shape).reshape(-1).astype(bits.dtype)
    return np.packbits(keep).tobytes(), _dcm(decode.DecodeType.PRUNING, bytes([1])) + raw[keep].tobytes()


def _huffman_lengths(symbols: list[int]) -> dict[int, int]:
    counts = Counter(symbols)
    if len(counts) == 1:
        return {next(iter(counts)): 1}
    heap: list[tuple[int, int, list[int]]] = [(n, s, [s]) for s, n in sorted(counts.items())]
    heapq.heapify(heap)
    lengths = dict.fromkeys(counts, 0)
    while len(heap) > 1:
        n1, k1, a = heapq.heappop(heap)
        n2, k2, b = heapq.heappop(heap)
        for s in a + b:
            lengths[s] += 1
        heapq.heappush(heap, (n1 + n2, min(k1, k2), a + b))
    return lengths


def _huffman(array: np.ndarray, wide: bool, first_bits: int, pad_bits: int = 32) -> tuple[bytes, bytes]:
    """A canonical Huffman code of the array's values in TFLM's Xtensa decode-table format: a first
    table of 2^first_bits entries; longer codes go through one sub-table per prefix. The stream is
    padded to a multiple of `pad_bits` (TFLM reads 32-bit words)."""
    unsigned = array.reshape(-1).view(f"u{array.dtype.itemsize}").tolist()
    lengths = _huffman_lengths(unsigned)
    codes: dict[int, tuple[int, int]] = {}
    code, previous = 0, 0
    for s in sorted(lengths, key=lambda s: (lengths[s], s)):
        code <<= lengths[s] - previous
        codes[s], previous = (code, lengths[s]), lengths[s]
        code += 1
    found, shift = (1 << 31, 27) if wide else (1 << 15, 11)
    table = [0] * (1 << first_bits)
    long_codes: dict[int, list[tuple[int, int, int]]] = {}
    for s, (c, n) in codes.items():
        if n <= first_bits:
            for fill in range(1 << (first_bits - n)):
                table[(c << (first_bits - n)) | fill] = found | (n << shift) | s
        else:
            long_codes.setdefault(c >> (n - first_bits), []).append((s, c, n - first_bits))
    for prefix, members in sorted(long_codes.items()):
        width = max(rest for _, _, rest in members)
        start = len(table)
        table += [0] * (1 << width)
        table[prefix] = ((width - 1) << shift) | (start - prefix)
        for s, c, rest in members:
            for fill in range(1 << (width - rest)):
                table[start + (((c & ((1 << rest) - 1)) << (width - rest)) | fill)] = found | (rest << shift) | s
    stream = "".join(format(codes[s][0], f"0{codes[s][1]}b") for s in unsigned)
    stream += "0" * (-len(stream) % pad_bits)
    encoded = int(stream, 2).to_bytes(len(stream) // 8, "big") if stream else b""
    params = ((first_bits - 1) << 4) | int(wide)
    entries = np.array(table, dtype="<u4" if wide else "<u2").tobytes()
    return encoded, _dcm(decode.DecodeType.HUFFMAN, bytes([1, params])) + entries


# --- TFLM and nn2c on one decoded tensor -----------------------------------------------------------
def _carrier(dtype: str, data: np.ndarray, scale: list[float] | None = None, zero_point: list[int] | None = None,
             axis: int = 0) -> tuple[bytes, int]:
    """A model whose second output is the constant `data` (ABS of the input is the first): once the
    constant is compressed, TFLM appends a DECODE and that output is the decoded tensor."""
    b = ModelBuilder()
    x, y = b.tensor("float32", (1, 2)), b.tensor("float32", (1, 2))
    b.op("ABS", [x], [y])
    c = b.tensor(dtype, data.shape, scale=scale, zero_point=zero_point, axis=axis, data=data, name="weights")
    return b.build(inputs=[x], outputs=[y, c]), c


def _decoded(model: bytes, tmp_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(TFLM's, nn2c's) decoded constant of a carrier model."""
    theirs = run_tflm(model, [[np.ones((1, 2), np.float32)]], 2)[0][1]
    path = tmp_path / "carrier.tflite"
    path.write_bytes(model)
    graph = load_model(path)
    assert "CUSTOM" not in str([n.op for n in graph.nodes])
    ours = graph.outputs[1].data
    assert ours is not None and graph.outputs[1].is_constant
    return theirs, ours


def _values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], distinct: int) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "float32":
        return rng.choice(rng.normal(size=distinct).astype(np.float32), shape)
    info = np.iinfo(dtype)
    pool = rng.choice(np.arange(max(info.min, -5000), min(info.max, 5000)), distinct, replace=False)
    return rng.choice(pool, shape).astype(dtype)


# LUT, by TFLM's compressor: dtype, shape, quantization axis (None: per tensor), bits
LUT_CASES = [("int8", (5, 7), None, b) for b in range(1, 8)] + [
    ("int8", (3, 37), 0, 2), ("int8", (3, 37), 0, 3), ("int8", (3, 37), 0, 4),  # TFLM's int8 fast paths
    ("int8", (4, 70), 0, 6), ("int8", (2, 3, 4), 2, 2), ("int8", (3, 3, 6), 2, 5), ("int16", (3, 9), 0, 4),
    ("int32", (2, 5, 3), 2, 3), ("int32", (8,), 0, 1), ("int64", (4, 6), None, 6), ("float32", (6, 5), None, 5),
    ("bool", (3, 11), None, 1),
]


@pytest.mark.parametrize(("dtype", "shape", "axis", "bits"), LUT_CASES)
def test_lut_decoding_matches_tflm(tmp_path, dtype, shape, axis, bits):
    rng = np.random.default_rng(bits * 31 + len(shape))
    channels = 1 if axis is None else shape[axis]
    data = _values(rng, dtype, shape, min(2**bits, int(np.prod(shape))))
    if axis is not None:  # at most 2^bits values per channel, different tables per channel
        data = _rebin(_values(rng, dtype, shape, 3 * 2**bits), axis, 2**bits)
    quantized = dtype.startswith("int")
    model, index = _carrier(dtype, data, [0.5] * channels if quantized else None,
                            [0] * channels if quantized else None, axis or 0)
    mode = spec.PerTensor() if axis is None else spec.PerChannel(axis=axis)
    if dtype == "bool":  # TFLM's runtime decodes bool tables, its compressor cannot read bool tensors
        compressed = _insert(model_editor.read(model), {index: _lut(data.view(np.uint8), axis, bits)})
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "resulted in expansion": the tensors are tiny
            specs = [spec.Tensor(0, index, [spec.LookUpTableCompression(bits, mode)])]
            compressed = bytes(compression.compress(model, specs))
    theirs, ours = _decoded(compressed, tmp_path)
    assert ours.dtype == np.dtype(dtype) and ours.shape == shape
    assert theirs.tobytes() == ours.tobytes()
    assert np.array_equal(ours, data)  # the compression was lossless


PRUNE_CASES: list[tuple[str, tuple[int, ...], list[int] | None, int]] = [
    ("int8", (4, 9), [-3], 0), ("int8", (3, 10), [0, 5, -7], 0), ("int8", (2, 5, 4), [1, 0, -2, 9], 2),
    ("int8", (3, 6), [0, 0, 0], 0), ("int16", (5, 7), [0], 0), ("int32", (3, 4), [0, 0, 0], 0),
    ("int64", (13,), None, 0), ("float32", (6, 6), None, 0), ("bool", (21,), None, 0),
]


@pytest.mark.parametrize(("dtype", "shape", "zero_points", "axis"), PRUNE_CASES)
def test_prune_decoding_matches_tflm(tmp_path, dtype, shape, zero_points, axis):
    rng = np.random.default_rng(len(shape) * 7 + (zero_points or [0])[0])
    data = _values(rng, dtype, shape, 12)
    zp = np.zeros(shape, dtype=np.int64)
    if zero_points is not None:
        zp = np.moveaxis(np.broadcast_to(np.array(zero_points), np.moveaxis(zp, axis, -1).shape), -1, axis)
    drop = rng.random(shape) < 0.6  # most elements pruned to their zero point
    data = np.where(drop, zp.astype(data.dtype), data)
    scales = None if zero_points is None else [0.25] * len(zero_points)
    model, index = _carrier(dtype, data, scales, zero_points, axis)
    compressed = _insert(model_editor.read(model), {index: _prune(data, zp)})
    theirs, ours = _decoded(compressed, tmp_path)
    assert theirs.tobytes() == ours.tobytes() and np.array_equal(ours, data)


# dtype, 32-bit table entries, first lookup width, stream padding (8: the last lookups read past the data,
# as TFLM's look-ahead does at the end of any stream; a prefix-code table makes those bits irrelevant)
HUFFMAN_CASES = [("int8", False, 8, 32), ("int8", False, 3, 32), ("int8", True, 2, 32), ("int16", True, 4, 32),
                 ("int16", True, 9, 32), ("int8", False, 8, 8), ("int16", True, 5, 8)]


@pytest.mark.parametrize(("dtype", "wide", "first_bits", "pad_bits"), HUFFMAN_CASES)
def test_huffman_decoding_matches_tflm(tmp_path, dtype, wide, first_bits, pad_bits):
    rng = np.random.default_rng(first_bits)
    symbols = _values(rng, dtype, (40,), 9)
    data = symbols[np.minimum(rng.geometric(0.35, (6, 23)) - 1, 8)]  # skewed: codes of 1 to 8 bits
    model, index = _carrier(dtype, data, [0.1], [0])
    encoded, ancillary = _huffman(data, wide, first_bits, pad_bits)
    if pad_bits == 8:  # the last symbol's first lookup reads past the data
        symbols = data.reshape(-1).view(f"u{data.dtype.itemsize}").tolist()
        lengths = _huffman_lengths(symbols)
        assert sum(lengths[v] for v in symbols[:-1]) + first_bits > 8 * len(encoded)
    compressed = _insert(model_editor.read(model), {index: (encoded, ancillary)})
    theirs, ours = _decoded(compressed, tmp_path)
    assert theirs.tobytes() == ours.tobytes() and np.array_equal(ours, data)


def test_tflm_decode_types_are_the_ones_nn2c_decodes():
    """The decode states TFLM's runtime library creates (DecodeState::CreateDecodeState<TYPE>) are the
    three nn2c decodes: a new one in a later tflite-micro fails here instead of being refused at import."""
    library = next(Path(runtime.__file__).parent.glob("_runtime*.so")).read_bytes()
    assert b"TFLM_DECODE" in library and b"Register_DECODE" in library
    created = {m.decode() for m in re.findall(rb"CreateDecodeState([A-Za-z]+?)EPK", library)}
    assert created == {"LUT", "Prune", "Huffman"}, created
    assert tflite_decode.DECODE == "CUSTOM:TFLM_DECODE"


# --- real models -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6, 7])
def test_lossless_lut_compression_keeps_tflm_results(bits):
    """A property of TFLM's compressor and runtime, which the end-to-end tests below rely on: every
    tensor TFLM computes (read back with kPreserveAllTensors) is the same with and without compression."""
    base, compressed = _lut_model("mlcommons_tiny/kws_ref_model.tflite", bits)
    tensors_of_base = model_editor.read(base).subgraphs[0].tensors
    computed = [t for t, tensor in enumerate(tensors_of_base) if tensor.buffer is None or not tensor.buffer.data]
    record = random_records(load_model(model_path("mlcommons_tiny/kws_ref_model.tflite")).inputs, 1, seed=bits)[0]
    tensors = []
    for data in (base, compressed):
        interpreter = runtime.Interpreter.from_bytes(data, arena_size=1 << 22,
                                                     intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
        interpreter.set_input(record[0], 0)
        interpreter.invoke()
        tensors.append([interpreter.GetTensor(t, 0)["tensor_data"] for t in computed])
    assert len(computed) > 10 and all(np.array_equal(a, b) for a, b in zip(*tensors, strict=True))


@pytest.mark.parametrize(("relative", "bits"), [("mlcommons_tiny/kws_ref_model.tflite", 2),
                                                ("mlcommons_tiny/kws_ref_model.tflite", 7),
                                                ("tflite_micro/person_detect.tflite", 3)])
def test_compressed_models_match_tflm(tmp_path, relative, bits):
    """nn2c on the compressed model is bit-exact with TFLM on it, and its weights are the dense
    weights of the uncompressed model, each once (flash holds the decoded tensors)."""
    base, compressed = _lut_model(relative, bits)
    assert_matches_tflm(compressed, tmp_path, records=3, name="compressed")
    for name, data in (("base", base), ("compressed", compressed)):
        (tmp_path / f"{name}.tflite").write_bytes(data)
    dense, decoded = (load_model(tmp_path / f"{n}.tflite") for n in ("base", "compressed"))
    assert [n.op for n in decoded.nodes] == [n.op for n in dense.nodes]
    for a, b in zip(dense.nodes, decoded.nodes, strict=True):
        for x, y in zip(a.inputs, b.inputs, strict=True):
            assert (x is None) == (y is None)
            if x is not None and y is not None and x.is_constant:
                assert y.is_constant and x.type == y.type and np.array_equal(x.data, y.data)
    summary = decoded.metadata["decode"]
    assert summary["tensors"] == len(_weights(_editable(base)))
    assert summary["decoded_bytes"] == sum(v.type.num_bytes for v in decoded.constants() if "_decoded" in v.name)


def test_pruned_and_huffman_coded_model_matches_tflm(tmp_path):
    """kws with its pointwise convolutions pruned (60% of each filter set to the zero point), its
    depthwise filters and first convolution Huffman-coded (after re-binning to 16 values), its biases
    pruned: TFLM gives the uncompressed model's outputs, nn2c TFLM's."""
    model = _editable(model_path("mlcommons_tiny/kws_ref_model.tflite").read_bytes())
    sub = model.subgraphs[0]
    encodings: dict[int, tuple[bytes, bytes]] = {}
    rng = np.random.default_rng(3)
    for index, _ in _weights(model):
        tensor = sub.tensors[index]
        array = tensor.array
        if tensor.dtype == 2:  # int32 bias: zero point 0
            array = np.where(rng.random(array.shape) < 0.3, 0, array).astype(np.int32)
            tensor.array, encodings[index] = array, _prune(array, np.zeros(1, np.int64))
        elif len(array.shape) == 4 and array.shape[1:3] == (1, 1):  # pointwise: prune the smallest
            cut = np.quantile(np.abs(array.astype(np.int64)), 0.6, axis=(1, 2, 3), keepdims=True)
            array = np.where(np.abs(array.astype(np.int64)) <= cut, 0, array).astype(np.int8)
            tensor.array, encodings[index] = array, _prune(array, np.zeros(1, np.int64))
        elif len(array.shape) == 4:  # depthwise / first convolution: Huffman
            array = _rebin(array, None, 16)  # at most 16 symbols: codes of at most 15 bits
            tensor.array, encodings[index] = array, _huffman(array, wide=index % 2 == 0, first_bits=4)
    assert {(a[0], a[5] & 1) for _, a in encodings.values()} == {(1, 0), (1, 1), (2, 0)}  # Huffman x2, prune
    base = _bytes(model)
    compressed = _insert(_editable(base), encodings)
    records = random_records(load_model(model_path("mlcommons_tiny/kws_ref_model.tflite")).inputs, 3, seed=5)
    outputs = [run_tflm(data, records, 1) for data in (base, compressed)]
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(*outputs, strict=True))
    report = assert_matches_tflm(compressed, tmp_path, records=3, name="pruned")
    assert report.comparisons


def test_float_model_matches_tflm(tmp_path):
    base, compressed = _lut_model("tflite_micro/hello_world_float.tflite", 3)
    assert_matches_tflm(compressed, tmp_path, records=4, name="float")
    graph_path = tmp_path / "float.tflite"
    graph_path.write_bytes(compressed)
    assert load_model(graph_path).metadata["decode"]["tensors"] == len(_weights(_editable(base))) == 6
    # the summary says what was decoded and what it costs in flash
    result = nn2c("compile", str(graph_path), "-o", str(tmp_path / "out"), "--json")
    assert result.returncode == 0, result.stderr
    decoded = json.loads(result.stdout)["decoded"]
    assert decoded["tensors"] == 6 and 0 < decoded["encoded_bytes"] < decoded["decoded_bytes"]


def test_shared_weights_decode_once(tmp_path):
    """The compressor puts one DECODE before each reader of a tensor; nn2c keeps one constant."""
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.tensor("int8", (1, 6), scale=0.05, zero_point=-2)
    w = b.tensor("int8", (4, 6), scale=[0.02] * 4, zero_point=[0] * 4, data=rng.integers(-8, 8, (4, 6)))
    bias = b.tensor("int32", (4,), scale=[0.001] * 4, zero_point=[0] * 4, data=rng.integers(-300, 300, 4))
    ys = [b.tensor("int8", (1, 4), scale=0.1, zero_point=k) for k in range(2)]
    for k, y in enumerate(ys):
        b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": ["NONE", "RELU"][k]})
    model = b.build(inputs=[x], outputs=ys)
    specs = [spec.Tensor(0, t, [spec.LookUpTableCompression(4, spec.PerChannel(axis=0))]) for t in (w, bias)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "resulted in expansion": a tiny model
        compressed = bytes(compression.compress(model, specs))
    assert_matches_tflm(compressed, tmp_path, records=4, name="shared")
    path = tmp_path / "shared.tflite"
    path.write_bytes(compressed)
    graph = load_model(path)
    fcs = [n for n in graph.nodes if n.op == "FULLY_CONNECTED"]
    assert fcs[0].inputs[1] is fcs[1].inputs[1] and fcs[0].inputs[2] is fcs[1].inputs[2]
    summary = graph.metadata["decode"]
    assert summary["tensors"] == 2 and summary["decoded_bytes"] == 4 * 6 + 4 * 4


def test_decode_inside_if_branches_matches_tflm(tmp_path):
    """Compressed weights in both branches of an IF (the compressor puts each DECODE in its subgraph)."""
    from tests.test_op_state import _serialize, _Subgraph

    rng = np.random.default_rng(4)
    branches, weights = [], []
    for k in range(2):
        branch = _Subgraph()
        a, y = branch.tensor("float32", (1, 4), name="a"), branch.tensor("float32", (1, 3), name="y")
        w = branch.tensor("float32", (3, 4), data=rng.choice([-0.5, 0.25, 1.0], (3, 4)) * (k + 1), name=f"w{k}")
        branch.op("FULLY_CONNECTED", [a, w, -1], [y], {"fused_activation_function": "NONE"})
        branch.inputs, branch.outputs = [a], [y]
        branches.append(branch)
        weights.append(w)
    main = _Subgraph()
    flag, x = main.tensor("bool", (1,), name="flag"), main.tensor("float32", (1, 4), name="x")
    out = main.tensor("float32", (1, 3), name="out")
    main.op("IF", [flag, x], [out], {"then_subgraph_index": 1, "else_subgraph_index": 2})
    main.inputs, main.outputs = [flag, x], [out]
    specs = [spec.Tensor(k + 1, w, [spec.LookUpTableCompression(2, spec.PerTensor())]) for k, w in enumerate(weights)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compressed = bytes(compression.compress(_serialize([main, *branches]), specs))
    assert_matches_tflm(compressed, tmp_path, records=6, name="if_decode")
    path = tmp_path / "if_decode.tflite"
    path.write_bytes(compressed)
    assert load_model(path).metadata["decode"]["tensors"] == 2


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_decode_inside_a_while_body_matches_tflm(tmp_path, dtype):
    """The loop a converter writes for an RNN (tests/test_op_while.py) with its body's two weight
    matrices compressed by TFLM's compressor (the DECODEs land in the body subgraph): unrolled, every
    copy of the body reads one decoded constant each, and the outputs equal TFLM's."""
    from tests.test_op_while import _rnn_model

    model = _rnn_model(dtype)
    body = model_editor.read(model).subgraphs[2]
    weights = [k for k, t in enumerate(body.tensors) if t.name in ("W", "U")]
    assert len(weights) == 2
    mode = spec.PerChannel(axis=0) if dtype == "int8" else spec.PerTensor()
    specs = [spec.Tensor(2, k, [spec.LookUpTableCompression(7, mode)]) for k in weights]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compressed = bytes(compression.compress(model, specs))
    assert_matches_tflm(compressed, tmp_path, records=4, name=f"while_decode_{dtype}")
    path = tmp_path / "while_decode.tflite"
    path.write_bytes(compressed)
    graph = load_model(path)
    assert graph.metadata["decode"]["tensors"] == 2
    constants = {id(v) for n in graph.nodes if n.op == "FULLY_CONNECTED" for v in n.inputs[1:2]}
    assert len(constants) == 2  # 5 iterations x 2 layers read 2 decoded weight tensors


# --- refusals --------------------------------------------------------------------------------------
def _lut_carrier(data: np.ndarray, bits: int = 2) -> tuple[bytes, int, bytes, bytes]:
    """A carrier of a per-channel (axis 0) int8 tensor and its LUT encoding by TFLM's compressor plug-in."""
    model, index = _carrier("int8", data, [0.1] * data.shape[0], [0] * data.shape[0])
    tensor = model_editor.read(model).subgraphs[0].tensors[index]
    result = lut.LutCompressor().compress(tensor, spec.LookUpTableCompression(bits, spec.PerChannel(axis=0)))
    return model, index, result.encoded_data, result.ancillary_data


SMALL = np.array([[1, -2, 1, 3, -2], [0, 4, 4, 0, 4], [-9, -9, 7, 7, 2]], dtype=np.int8)


def _patched(data: bytes, at: int, value: int) -> bytes:
    out = bytearray(data)
    out[at] = value
    return bytes(out)


def _corrupt_lut(kind: str) -> bytes:
    model, index, encoded, ancillary = _lut_carrier(SMALL)
    changes: dict[str, Callable[[], tuple[bytes, bytes]]] = {
        "version": lambda: (encoded, _patched(ancillary, 1, 2)),
        "lut version": lambda: (encoded, _patched(ancillary, 4, 3)),
        "unknown type": lambda: (encoded, _patched(ancillary, 0, 9)),
        "custom type": lambda: (encoded, _patched(ancillary, 0, 200)),
        "bit width 0": lambda: (encoded, _patched(ancillary, 5, ancillary[5] & 0xF8)),
        "short indices": lambda: (encoded[:-1], ancillary),
        "index past table": lambda: (encoded, _patched(ancillary, 6, 1)),
        "short table": lambda: (encoded, ancillary[:-1]),
        "short header": lambda: (encoded, ancillary[:12]),
    }
    return _insert(model_editor.read(model), {index: changes[kind]()})


def _corrupt_other(kind: str) -> bytes:
    rng = np.random.default_rng(1)
    if kind.startswith("huffman"):
        dtype = "int16" if kind == "huffman int16 16-bit table" else "int8"
        data = rng.integers(-3, 3, (4, 8)).astype(dtype)
        model, index = _carrier(dtype, data, [0.1], [0])
        encoded, ancillary = _huffman(data, wide=False, first_bits=2)
        if kind == "huffman short stream":
            encoded = encoded[:5]
        elif kind == "huffman entry past table":  # the first sub-table pointer sent far away
            table = np.frombuffer(ancillary[16:], dtype="<u2").copy()
            table[int(np.argmax(table < 0x8000))] |= 0x7FF
            ancillary = ancillary[:16] + table.tobytes()
        return _insert(model_editor.read(model), {index: (encoded, ancillary)})
    dtype = "int16" if kind == "prune int16 zero point" else "int8"
    data = rng.integers(-3, 3, (4, 8)).astype(dtype)
    model, index = _carrier(dtype, data, [0.1], [2])
    encoded, ancillary = _prune(data, np.full(1, 2))
    if kind == "prune short mask":
        encoded = encoded[:3]
    elif kind == "prune short values":
        ancillary = ancillary[:-1]
    return _insert(model_editor.read(model), {index: (encoded, ancillary)})


def _quant_axis_1() -> bytes:
    data = np.arange(24, dtype=np.int8).reshape(2, 3, 4) % 4
    model, index = _carrier("int8", data, [0.1] * 3, [0] * 3, axis=1)
    return _insert(model_editor.read(model), {index: (np.packbits(np.zeros(24 * 2, bool)).tobytes(),
                                                      _dcm(decode.DecodeType.LUT, bytes([1, 2, 4])) + bytes(16))})


def _decode_op_edit(kind: str) -> bytes:
    model, index, encoded, ancillary = _lut_carrier(SMALL)
    editor = model_editor.read(_insert(model_editor.read(model), {index: (encoded, ancillary)}))
    sub = editor.subgraphs[0]
    op = next(o for o in sub.operators if o.custom_code == "TFLM_DECODE")
    if kind == "three inputs":
        op.inputs = [*op.inputs, op.inputs[0]]
    elif kind == "empty output":  # found by fuzzing: a zero-size filter reached the memory planner
        op.outputs[0].shape = (3, 0)
    else:  # the encoded input is the model input, not a constant
        op.inputs = [sub.inputs[0], op.inputs[1]]
    return _bytes(editor)


# (model maker, argument, error type, what the message says, whether TFLM's Prepare rejects it too)
REFUSALS: list[tuple[Callable[[str], bytes], str, type[NN2CError], str, bool]] = [
    (_corrupt_lut, "version", InvalidModelError, "DECODE header version 2", True),
    (_corrupt_lut, "lut version", InvalidModelError, "LUT metadata version 3", True),
    (_corrupt_lut, "unknown type", InvalidModelError, "unknown decode type 9", True),
    (_corrupt_lut, "custom type", UnsupportedOpError, "custom decode type 200", True),
    (_corrupt_lut, "bit width 0", InvalidModelError, "LUT index bit width 0", False),
    (_corrupt_lut, "short indices", InvalidModelError, "need 4 bytes, the encoded tensor holds 3", False),
    (_corrupt_lut, "index past table", InvalidModelError, "past its channel's table of 1 values", False),
    (_corrupt_lut, "short table", InvalidModelError, "needs 9 int8 table values, the ancillary tensor holds 8", False),
    (_corrupt_lut, "short header", InvalidModelError, "fewer than the 16-byte DECODE header", False),
    (_corrupt_other, "huffman short stream", InvalidModelError, "Huffman stream ends inside symbol", False),
    (_corrupt_other, "huffman entry past table", InvalidModelError, "past the table of", False),
    (_corrupt_other, "huffman int16 16-bit table", UnsupportedOpError, "16-bit entries decodes int8", True),
    (_corrupt_other, "prune short mask", InvalidModelError, "prune mask of 32 elements needs 4 bytes", False),
    (_corrupt_other, "prune short values", InvalidModelError, "int8 table values, the ancillary tensor holds", False),
    (_corrupt_other, "prune int16 zero point", UnsupportedOpError, "non-zero zero point", True),
    (lambda _: _quant_axis_1(), "axis 1", UnsupportedOpError, "quantized_dimension 1 (rank 3, 3 scales)", True),
    (_decode_op_edit, "three inputs", InvalidModelError, "it has 3 inputs and 1 outputs", True),
    (_decode_op_edit, "variable input", InvalidModelError, "is not a constant", True),
    (_decode_op_edit, "empty output", InvalidModelError, "decodes into an empty tensor of shape [3, 0]", False),
]


@pytest.mark.parametrize(("make", "kind", "error", "message", "tflm_rejects"), REFUSALS,
                         ids=[r[1] for r in REFUSALS])
def test_malformed_decode_is_refused(tmp_path, make, kind, error, message, tflm_rejects):
    path = tmp_path / "bad.tflite"
    path.write_bytes(make(kind))
    with pytest.raises(error) as caught:
        load_model(path)
    text = str(caught.value)
    assert "\n" not in text and message in text, text
    assert "op #1 CUSTOM:TFLM_DECODE" in text, text  # the DECODE appended after the ABS
    if kind not in ("three inputs", "variable input"):
        assert "'weights_decoded'" in text, text  # the tensor it decodes
    if tflm_rejects:  # only where TFLM's Prepare checks it: the other encodings make TFLM read out of bounds
        with pytest.raises(RuntimeError, match="failed to allocate tensors"):
            run_tflm(path.read_bytes(), [[np.ones((1, 2), np.float32)]], 2)


def test_metadata_compression_is_refused(tmp_path):
    """TFLM's earlier scheme (weights holding packed indices, listed in COMPRESSION_METADATA)."""
    model, _ = _carrier("int8", SMALL, [0.1] * 3, [0] * 3)
    editor = model_editor.read(model)
    editor.metadata["COMPRESSION_METADATA"] = b"\0" * 16
    path = tmp_path / "legacy.tflite"
    path.write_bytes(_bytes(editor))
    with pytest.raises(UnsupportedOpError, match="earlier COMPRESSION_METADATA scheme"):
        load_model(path)


def test_cli_refusal_is_one_line(tmp_path):
    path = tmp_path / "bad.tflite"
    path.write_bytes(_corrupt_lut("index past table"))
    result = nn2c("compile", str(path), "-o", str(tmp_path / "out"))
    assert result.returncode == InvalidModelError.exit_code
    assert_one_line_error(result, "op #1 CUSTOM:TFLM_DECODE", "LUT index", "re-run TFLM's compressor")
    assert not (tmp_path / "out").exists()


def test_mutated_encodings_load_or_fail_in_one_error():
    """A small fuzz of the DECODE inputs: hostile bytes in the header and the data of a LUT, a pruned
    and a Huffman-coded tensor end in a decoded constant or in one nn2c error, never another exception."""
    rng = np.random.default_rng(11)
    data = rng.integers(-4, 4, (3, 16)).astype(np.int8)
    encodings = [_lut_carrier(data, 3)[2:], _prune(data, np.zeros(1, np.int64)), _huffman(data, False, 2)]
    outcomes: Counter[str] = Counter()
    for trial in range(150):
        encoded, ancillary = (bytearray(b) for b in encodings[trial % 3])
        for _ in range(int(rng.integers(1, 4))):
            header = rng.random() < 0.7 or not encoded  # mostly the DCM and the first table entries
            target = ancillary if header else encoded
            spot = int(rng.integers(0, min(len(target), 24) if header else len(target)))
            target[spot] = int(rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF, int(rng.integers(0, 256))]))
        if rng.random() < 0.2:
            encoded = encoded[: int(rng.integers(0, len(encoded) + 1))]
        channels = tflite_decode._Channels(3, False, (0, 0, 0))
        try:
            tflite_decode.decode(bytes(encoded), bytes(ancillary), "int8", (3, 16), channels, "op #0 DECODE")
            outcomes["decoded"] += 1
        except NN2CError as exc:
            assert "\n" not in str(exc)
            outcomes[type(exc).__name__] += 1
    assert outcomes["decoded"] and outcomes["InvalidModelError"], outcomes


