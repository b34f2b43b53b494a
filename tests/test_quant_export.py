"""--quantize int8 --write-tflite: the quantized model written as a .tflite flatbuffer runs in TFLite
Micro and LiteRT, and TFLM's int8 outputs equal the generated C's bit for bit (both with --io int8,
so both sides take and return the same int8 tensors). Graphs TFLite cannot hold end in one
UnsupportedOpError naming the operator, never a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model, load_model
from nn2c.errors import UnsupportedOpError, UsageError
from nn2c.export import graph_to_tflite
from nn2c.ir import Graph, Node, QuantParams, TensorType, Value
from nn2c.verify.oracle import run_litert, run_tflm
from nn2c.verify.runner import run_folder

MODELS = Path(__file__).resolve().parent.parent / "models"
TINY = MODELS / "mlcommons_tiny"
CALIBRATION_SAMPLES = 24
TEST_INPUTS = 6
LITERT_TOLERANCE = 4  # int8 codes: LiteRT's reference kernels round some requantizations differently


def _smooth_samples(shape: tuple[int, ...], count: int, seed: int) -> np.ndarray:
    """count smooth random fields in [0, 1] of the input shape (batch dimension included)."""
    rng = np.random.default_rng(seed)
    body = shape[1:]
    coarse = tuple(max(d // 8, 1) if i < len(body) - 1 or len(body) == 1 else d for i, d in enumerate(body))
    samples = []
    for _ in range(count):
        x = rng.uniform(size=coarse)
        for axis, (n_out, n_in) in enumerate(zip(body, coarse, strict=True)):
            x = np.repeat(x, -(-n_out // n_in), axis=axis).take(range(n_out), axis=axis)
        x = 0.8 * x + 0.2 * rng.uniform(size=body)
        samples.append(x)
    return np.stack(samples).reshape((count, *shape)).astype(np.float32)


def _quantize_and_export(model: Path, tmp_path: Path, **options) -> tuple[object, Path, Path, np.ndarray]:
    """Quantize with io=int8, write the C folder and the .tflite; returns (result, folder, .tflite, test inputs)."""
    shape = load_model(model).inputs[0].type.shape
    np.save(tmp_path / "calibration.npy", _smooth_samples(shape, CALIBRATION_SAMPLES, seed=1))
    exported = tmp_path / f"{model.stem}_int8.tflite"
    result = compile_model(model, CompileOptions(quantize="int8", calibration=str(tmp_path / "calibration.npy"),
                                                 io="int8", write_tflite=str(exported), **options))
    folder = result.write(tmp_path / "out")
    return result, folder, exported, _smooth_samples(shape, TEST_INPUTS, seed=2)


def _as_int8(value: Value, x: np.ndarray) -> np.ndarray:
    quant = value.type.quant
    assert value.type.dtype == "int8" and quant is not None
    return np.clip(np.round(x / quant.scale[0]) + quant.zero_point[0], -128, 127).astype(np.int8)


def _check_against_c(result, folder: Path, exported: Path, x: np.ndarray) -> int:
    """TFLM == C bit for bit, LiteRT within a few codes; returns the number of int8 values compared."""
    assert exported.read_bytes() == result.tflite
    graph = load_model(exported)  # nn2c's own frontend reads it back
    assert [v.type.dtype for v in graph.inputs + graph.outputs] == ["int8"] * (1 + len(graph.outputs))
    assert {n.op for n in graph.nodes} <= {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "MEAN",
                                            "AVERAGE_POOL_2D", "MAX_POOL_2D", "PAD", "PADV2", "RESHAPE", "TRANSPOSE",
                                            "SOFTMAX", "RELU", "QUANTIZE", "DEQUANTIZE"}
    # the exported file carries the same input/output parameters as the compiled C
    io = {name: (scale, zp) for name, _dtype, scale, zp in result.quant.io_params}
    for value in graph.inputs + graph.outputs:
        assert value.type.quant is not None
        assert io[value.name] == pytest.approx((value.type.quant.scale[0], value.type.quant.zero_point[0]))
    xq = _as_int8(graph.inputs[0], x)
    records = [[r.reshape(graph.inputs[0].type.shape)] for r in xq]
    count = len(graph.outputs)
    c_outputs = run_folder(folder, [np.stack([r[0] for r in records])])
    tflm = run_tflm(exported, records, count)
    litert = run_litert(exported, records, count)
    compared = 0
    for k in range(count):
        got_c = c_outputs[k].reshape(len(records), -1)
        got_tflm = np.stack([r[k] for r in tflm]).reshape(len(records), -1)
        got_litert = np.stack([r[k] for r in litert]).reshape(len(records), -1)
        assert got_tflm.dtype == got_c.dtype == np.int8
        np.testing.assert_array_equal(got_tflm, got_c)
        assert np.abs(got_litert.astype(np.int32) - got_c).max() <= LITERT_TOLERANCE
        assert len(np.unique(got_c)) > 1, "degenerate test: the outputs are constant"
        compared += got_c.size
    return compared


@pytest.mark.parametrize("model", ["ad01_fp32", "vww_96_float", "pretrainedResnet"])
def test_quantized_tflite_model_exports_bit_exact_with_the_c(tmp_path, model):
    pytest.importorskip("tflite_micro")
    result, folder, exported, x = _quantize_and_export(TINY / f"{model}.tflite", tmp_path)
    assert _check_against_c(result, folder, exported, x) >= TEST_INPUTS


def _onnx_cnn(path: Path) -> Path:
    """Conv with asymmetric pads (an explicit PAD, folded at -O2), ReLU, an Identity read twice
    (a graph output and the next layer), depthwise Conv, global average pool, Gemm, Softmax."""
    onnx = pytest.importorskip("onnx")
    h, tp = onnx.helper, onnx.TensorProto
    rng = np.random.default_rng(0)

    def init(name: str, *shape: int) -> object:
        return h.make_tensor(name, tp.FLOAT, list(shape), (rng.normal(size=shape) * 0.4).astype(np.float32).ravel())

    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 0, 2, 1], strides=[1, 1], kernel_shape=[3, 3]),
        h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("Identity", ["r1"], ["features"]),
        h.make_node("Conv", ["features", "w2", "b2"], ["c2"], group=6, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        h.make_node("GlobalAveragePool", ["c2"], ["g"]),
        h.make_node("Flatten", ["g"], ["f"]),
        h.make_node("Gemm", ["f", "w3", "b3"], ["logits"], transB=1),
        h.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    graph = h.make_graph(nodes, "cnn", [h.make_tensor_value_info("x", tp.FLOAT, [1, 3, 12, 12])],
                         [h.make_tensor_value_info("probs", tp.FLOAT, [1, 5]),
                          h.make_tensor_value_info("features", tp.FLOAT, [1, 6, 13, 11])],
                         [init("w1", 6, 3, 3, 3), init("b1", 6), init("w2", 6, 1, 3, 3), init("b2", 6),
                          init("w3", 5, 6), init("b3", 5)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model = onnx.shape_inference.infer_shapes(model)
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("opt_level", [0, 2])
def test_onnx_float_model_exports_bit_exact_with_the_c(tmp_path, opt_level):
    pytest.importorskip("tflite_micro")
    model = _onnx_cnn(tmp_path / "cnn.onnx")
    result, folder, exported, x = _quantize_and_export(model, tmp_path, opt_level=opt_level)
    ops = [n.op for n in load_model(exported).nodes]
    assert "PAD" in ops  # at -O2 the PAD nn2c folded into the convolution is written out again
    compiled = {n.op for n in result.graph.nodes}
    if opt_level == 2:
        assert "PAD" not in compiled
    else:
        assert "IDENTITY" in compiled and "IDENTITY" not in ops  # written as a RESHAPE to its own shape
    assert _check_against_c(result, folder, exported, x) >= 2 * TEST_INPUTS


def _onnx_padded_max_pool(path: Path) -> Path:
    """A ResNet stem: Conv, ReLU, MaxPool 3x3 / 2 with pads 1 (which nn2c imports as a PADV2 filling
    -FLT_MAX before a VALID MAX_POOL_2D), Conv, global average pool."""
    onnx = pytest.importorskip("onnx")
    h, tp = onnx.helper, onnx.TensorProto
    rng = np.random.default_rng(3)

    def init(name: str, *shape: int) -> object:
        return h.make_tensor(name, tp.FLOAT, list(shape), (rng.normal(size=shape) * 0.3).astype(np.float32).ravel())

    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("Conv", ["p1", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
        h.make_node("GlobalAveragePool", ["c2"], ["y"]),
    ]
    graph = h.make_graph(nodes, "stem", [h.make_tensor_value_info("x", tp.FLOAT, [1, 3, 16, 16])],
                         [h.make_tensor_value_info("y", tp.FLOAT, [1, 6, 1, 1])],
                         [init("w1", 8, 3, 3, 3), init("b1", 8), init("w2", 6, 8, 1, 1), init("b2", 6)])
    model = onnx.shape_inference.infer_shapes(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]))
    onnx.save(model, str(path))
    return path


def test_padded_max_pool_keeps_its_range_and_exports_bit_exact(tmp_path):
    """The -FLT_MAX padding of an ONNX MaxPool must not set the int8 range (it left no code for the
    data: ResNet-18 at 2 dB output SQNR); it saturates to the lowest code, exact for max pooling."""
    pytest.importorskip("tflite_micro")
    model = _onnx_padded_max_pool(tmp_path / "stem.onnx")
    result, folder, exported, x = _quantize_and_export(model, tmp_path)
    assert "PADV2" in [n.op for n in load_model(exported).nodes]
    pooled = next(t for t in result.quant.tensors if t.op == "MAX_POOL_2D")
    assert pooled.range_min >= -1e-6 and pooled.range_max < 1e3  # the ReLU's range, not the fill's
    assert pooled.sqnr_db > 30 and result.quant.output_sqnr_db > 25
    assert _check_against_c(result, folder, exported, x) >= TEST_INPUTS


def test_convolutions_without_bias_export_with_a_zero_bias(tmp_path):
    """ONNX Conv without a bias (depthwise and 1x1): the quantizer writes a zero bias, as TFLite's
    converter does. Without it TFLite Micro crashed (SIGSEGV) on the int8 DEPTHWISE_CONV_2D and
    LiteRT refused to prepare the int8 CONV_2D."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("tflite_micro")
    h, tp = onnx.helper, onnx.TensorProto
    rng = np.random.default_rng(5)
    weights = [h.make_tensor("dw", tp.FLOAT, [4, 1, 3, 3], rng.normal(size=36).astype(np.float32)),
               h.make_tensor("pw", tp.FLOAT, [6, 4, 1, 1], rng.normal(size=24).astype(np.float32))]
    nodes = [h.make_node("Conv", ["x", "dw"], ["d"], group=4, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             h.make_node("Relu", ["d"], ["r"]),
             h.make_node("Conv", ["r", "pw"], ["y"], kernel_shape=[1, 1])]
    graph = h.make_graph(nodes, "nobias", [h.make_tensor_value_info("x", tp.FLOAT, [1, 4, 8, 8])],
                         [h.make_tensor_value_info("y", tp.FLOAT, [1, 6, 8, 8])], weights)
    model = tmp_path / "nobias.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(model))
    result, folder, exported, x = _quantize_and_export(model, tmp_path)
    convolutions = [n for n in load_model(exported).nodes if n.op in ("CONV_2D", "DEPTHWISE_CONV_2D")]
    assert len(convolutions) == 2
    for conv in convolutions:
        bias = conv.input(2)
        assert bias is not None and bias.data is not None and not bias.data.any()
    assert _check_against_c(result, folder, exported, x) >= TEST_INPUTS


def test_onnx_model_from_the_repo_exports(tmp_path):
    pytest.importorskip("tflite_micro")
    result, folder, exported, x = _quantize_and_export(MODELS / "onnx" / "cnn_float.onnx", tmp_path)
    assert _check_against_c(result, folder, exported, x) >= TEST_INPUTS


# --- the command line -------------------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nn2c", *args], capture_output=True, text=True)


def test_cli_writes_the_tflite_and_names_it_in_json(tmp_path):
    model = MODELS / "onnx" / "cnn_float.onnx"
    np.save(tmp_path / "cal.npy", _smooth_samples(load_model(model).inputs[0].type.shape, 8, seed=1))
    target = tmp_path / "sub" / "q.tflite"
    run = _cli("compile", str(model), "-o", str(tmp_path / "out"), "--quantize", "int8", "--calibration",
               str(tmp_path / "cal.npy"), "--write-tflite", str(target), "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["tflite"] == str(target)
    graph = load_model(target)
    assert graph.inputs[0].type.dtype == "float32"  # --io float: QUANTIZE at the input edge
    assert graph.nodes[0].op == "QUANTIZE" and graph.nodes[-1].op == "DEQUANTIZE"
    assert "--write-tflite" in _cli("compile", "--help").stdout


@pytest.mark.parametrize(("extra", "message"), [
    ((), "--write-tflite writes the model nn2c quantized; it needs --quantize int8"),
    (("--quantize", "int8", "--calibration", "CAL"), "give a file name for the .tflite model, not a folder"),
])
def test_cli_usage_errors_are_one_line(tmp_path, extra, message):
    model = MODELS / "tflite_micro" / "hello_world_float.tflite"
    np.save(tmp_path / "cal.npy", np.linspace(0, 6, 16, dtype=np.float32).reshape(16, 1))
    extra = tuple(str(tmp_path / "cal.npy") if a == "CAL" else a for a in extra)
    target = tmp_path / "q.tflite" if not extra else tmp_path
    run = _cli("compile", str(model), "-o", str(tmp_path / "out"), "--write-tflite", str(target), *extra)
    assert run.returncode == UsageError.exit_code, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


def test_the_float_model_itself_is_not_overwritten(tmp_path):
    model = tmp_path / "hello.tflite"
    model.write_bytes((MODELS / "tflite_micro" / "hello_world_float.tflite").read_bytes())
    np.save(tmp_path / "cal.npy", np.linspace(0, 6, 16, dtype=np.float32).reshape(16, 1))
    with pytest.raises(UsageError, match="that is the float model being compiled"):
        compile_model(model, CompileOptions(quantize="int8", calibration=str(tmp_path / "cal.npy"),
                                            write_tflite=str(model)))


# --- graphs TFLite cannot hold ------------------------------------------------------------------------
def _int8(name: str, shape: tuple[int, ...], data: np.ndarray | None = None) -> Value:
    return Value(name, TensorType("int8", shape, QuantParams((0.05,), (-3,))), data)


def test_nn2c_only_operator_is_one_clear_error():
    x, y = _int8("x", (1, 8)), _int8("y", (1, 8))
    table = Value("act/lut", TensorType("int8", (256,)), np.arange(-128, 128, dtype=np.int8))
    graph = Graph("lut")
    graph.inputs = [x]
    graph.add_node(Node("LUT", [x, table], [y], name="act", index=7))
    graph.outputs = [y]
    with pytest.raises(UnsupportedOpError) as caught:
        graph_to_tflite(graph)
    text = str(caught.value)
    assert "op #7 LUT ('act')" in text and "no TFLite form" in text and "drop --write-tflite" in text
    assert "\n" not in text


def test_option_tflite_cannot_hold_is_one_clear_error():
    x, y = _int8("x", (1, 2, 2, 1)), _int8("y", (1, 1, 1, 1))
    graph = Graph("pool")
    graph.inputs = [x]
    graph.add_node(Node("AVERAGE_POOL_2D", [x], [y], {"padding": "VALID", "filter_height": 2, "filter_width": 2,
                                                       "count_include_pad": True}, name="pool", index=2))
    graph.outputs = [y]
    with pytest.raises(UnsupportedOpError, match=r"op #2 AVERAGE_POOL_2D \('pool'\) has the attribute "
                                                 r"count_include_pad=True, which TFLite's Pool2DOptions"):
        graph_to_tflite(graph)
    graph.nodes[0].attrs = {"padding": "VALID", "filter_height": "two", "filter_width": 2}
    with pytest.raises(UnsupportedOpError, match=r"op #2 AVERAGE_POOL_2D \('pool'\) has options TFLite cannot hold"):
        graph_to_tflite(graph)
