"""--quantize int8: bad calibration data and bad options end in one clear nn2c error, never a
traceback; the calibration loaders accept every documented form; TFLite float models quantize too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model, load_model
from nn2c.errors import UsageError
from nn2c.quant.calibration import load_calibration
from nn2c.verify.runner import run_folder

MODELS = Path(__file__).resolve().parent.parent / "models"
HELLO = MODELS / "tflite_micro" / "hello_world_float.tflite"  # input [1, 1], output [1, 1]
HELLO_INT8 = MODELS / "tflite_micro" / "hello_world_int8.tflite"


def _quantize(model: Path, data: Path, **options) -> object:
    return compile_model(model, CompileOptions(quantize="int8", calibration=str(data), **options))


def _hello_samples(n: int = 64) -> np.ndarray:
    return np.linspace(0, 2 * np.pi, n, dtype=np.float32).reshape(n, 1)


def _two_input_onnx(path: Path) -> Path:
    """relu(a + b) * 0.5 with inputs 'a' and 'b' of shape [1, 4]."""
    onnx = pytest.importorskip("onnx")
    h = onnx.helper
    graph = h.make_graph(
        [h.make_node("Add", ["a", "b"], ["s"]), h.make_node("Relu", ["s"], ["r"]),
         h.make_node("Mul", ["r", "half"], ["y"])],
        "two_inputs",
        [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [1, 4]) for n in ("a", "b")],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])],
        [h.make_tensor("half", onnx.TensorProto.FLOAT, [1], [0.5])])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(path))
    return path


# --- bad calibration data -------------------------------------------------------------------------
def _write(path: Path, content) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, dict):
        np.savez(path, **content)
    else:
        np.save(path, content)
    return path


BAD_DATA = {
    "wrong shape": ("bad.npy", np.zeros((10, 3), np.float32), "shape [10, 3] does not match the input; expected [N, 1, 1] or [N, 1]"),
    "wrong dtype": ("bad.npy", np.zeros((10, 1), np.int32), "dtype int32"),
    "empty": ("bad.npy", np.zeros((0, 1), np.float32), "the array is empty"),
    "NaN": ("bad.npy", np.array([[0.0], [np.nan], [1.0]], np.float32), "sample 1 holds NaN or infinite"),
    "inf": ("bad.npy", np.array([[0.0], [1.0], [np.inf]], np.float32), "sample 2 holds NaN or infinite"),
    "single sample": ("bad.npy", np.zeros((1, 1), np.float32), "a single sample"),
    "one-record batch": ("bad.npy", np.zeros((1, 1, 1), np.float32), "a single sample"),
    "wrong input name": ("bad.npz", {"images": np.zeros((10, 1), np.float32)}, "array 'images' names no model input"),
    "unreadable npy": ("bad.npy", b"this is not numpy", "cannot read it as a .npy array"),
    "unreadable npz": ("bad.npz", b"PK\x03\x04 truncated", "cannot read it as an .npz archive"),
    "pickled objects": ("bad.npy", np.array([{"a": 1}, None], dtype=object), "cannot read it as a .npy array"),
    "too many arrays": ("bad.npz", {"arr_0": np.zeros((4, 1), np.float32), "arr_1": np.zeros((4, 1), np.float32)},
                        "2 array(s) for a model with 1 input(s)"),
    "wrong extension": ("bad.csv", b"1,2,3", "expected an .npz or .npy file"),
}


@pytest.mark.parametrize("case", sorted(BAD_DATA))
def test_bad_calibration_data_is_a_one_line_usage_error(tmp_path, case):
    name, content, message = BAD_DATA[case]
    path = _write(tmp_path / name, content)
    with pytest.raises(UsageError) as info:
        _quantize(HELLO, path)
    text = str(info.value)
    assert message in text and "\n" not in text, text


def test_missing_and_odd_options_are_usage_errors(tmp_path):
    data = _write(tmp_path / "ok.npy", _hello_samples())
    (tmp_path / "empty").mkdir()
    cases = [
        (CompileOptions(quantize="int8"), "needs --calibration"),
        (CompileOptions(quantize="int4", calibration=str(data)), "only int8"),
        (CompileOptions(quantize="int8", calibration=str(data), calibration_method="kl"), "choose one of minmax"),
        (CompileOptions(quantize="int8", calibration=str(data), io="int16"), "choose float or int8"),
        (CompileOptions(quantize="int8", calibration=str(data), keep_float=("CONV_3D",)), "matches no operator"),
        (CompileOptions(quantize="int8", calibration=str(tmp_path / "nowhere.npz")), "no such file"),
        (CompileOptions(quantize="int8", calibration=str(tmp_path / "empty")), "no .npy files"),
    ]
    for options, message in cases:
        with pytest.raises(UsageError, match=message):
            compile_model(HELLO, options)


def test_an_already_quantized_model_is_refused(tmp_path):
    data = _write(tmp_path / "ok.npy", _hello_samples())
    with pytest.raises(UsageError, match="already quantized"):
        _quantize(HELLO_INT8, data)


def test_nan_inside_the_model_is_reported(tmp_path):
    onnx = pytest.importorskip("onnx")
    h = onnx.helper
    graph = h.make_graph([h.make_node("Log", ["x"], ["l"]), h.make_node("Relu", ["l"], ["y"])], "log",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "log.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(path))
    data = _write(tmp_path / "neg.npy", -np.ones((4, 1, 4), np.float32))  # log(-1) = NaN
    with pytest.raises(UsageError, match="becomes NaN or infinite"):
        _quantize(path, data)


def test_cli_prints_one_line_and_exits_with_the_usage_code(tmp_path):
    data = _write(tmp_path / "bad.npy", np.zeros((10, 3), np.float32))
    command = [sys.executable, "-m", "nn2c", "compile", str(HELLO), "-o", str(tmp_path / "out"),
               "--quantize", "int8", "--calibration", str(data)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == UsageError.exit_code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nn2c: error: calibration data bad.npy"), result.stderr
    assert "Traceback" not in result.stderr


# --- accepted forms -------------------------------------------------------------------------------
def test_calibration_forms_by_name_by_order_and_folder(tmp_path):
    path = _two_input_onnx(tmp_path / "two.onnx")
    graph = load_model(path)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(8, 1, 4)).astype(np.float32), rng.normal(size=(8, 4)).astype(np.float64)
    by_name = load_calibration(_write(tmp_path / "named.npz", {"b": b, "a": a}), graph)
    by_order = load_calibration(_write(tmp_path / "ordered.npz", {"arr_0": a, "arr_1": b}), graph)
    folder = tmp_path / "folder"
    folder.mkdir()
    np.save(folder / "a.npy", a)
    np.save(folder / "b.npy", b)
    from_folder = load_calibration(folder, graph)
    for records in (by_name, by_order, from_folder):
        assert [r.shape for r in records] == [(8, 1, 4), (8, 1, 4)]
        assert all(r.dtype == np.float32 for r in records)
        np.testing.assert_array_equal(records[0], a)
        np.testing.assert_array_equal(records[1], b.astype(np.float32).reshape(8, 1, 4))
    uneven = _write(tmp_path / "uneven.npz", {"a": a, "b": b[:5]})
    with pytest.raises(UsageError, match="different sample counts"):
        load_calibration(uneven, graph)
    with pytest.raises(UsageError, match=r"one \.npy array for a model with 2 inputs"):
        load_calibration(_write(tmp_path / "one.npy", a), graph)
    single = tmp_path / "single"
    single.mkdir()
    for k in range(3):  # a single-input model: one sample per file
        np.save(single / f"{k:03d}.npy", np.full((1, 1), k, np.float32))
    records = load_calibration(single, load_model(HELLO))
    assert records[0].shape == (3, 1, 1) and records[0].ravel().tolist() == [0.0, 1.0, 2.0]


def test_two_input_int8_add_runs_in_c(tmp_path):
    path = _two_input_onnx(tmp_path / "two.onnx")
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(32, 1, 4)).astype(np.float32), rng.normal(size=(32, 1, 4)).astype(np.float32)
    result = _quantize(path, _write(tmp_path / "cal.npz", {"a": a, "b": b}))
    assert [(n.op, n.outputs[0].type.dtype) for n in result.graph.nodes if n.op in ("ADD", "MUL")] == \
        [("ADD", "int8"), ("MUL", "int8")]
    got = run_folder(result.write(tmp_path / "out"), [a, b])[0].reshape(a.shape)
    want = np.maximum(a + b, 0) * 0.5
    step = max(q.scale[0] for q in (n.outputs[0].type.quant for n in result.graph.nodes) if q is not None)
    assert np.max(np.abs(got - want)) <= 2 * step


# --- a TFLite float model -------------------------------------------------------------------------
def test_tflite_float_model_quantizes_and_reports(tmp_path):
    data = _write(tmp_path / "x.npy", _hello_samples(100))
    result = _quantize(HELLO, data, calibration_method="percentile")
    ops = [(n.op, n.outputs[0].type.dtype) for n in result.graph.nodes]
    assert ops == [("QUANTIZE", "int8")] + [("FULLY_CONNECTED", "int8")] * 3 + [("DEQUANTIZE", "float32")]
    fc = [n for n in result.graph.nodes if n.op == "FULLY_CONNECTED"]
    for node in fc:
        w, bias = node.inputs[1], node.inputs[2]
        assert w.type.dtype == "int8" and w.type.quant.axis == 0 and set(w.type.quant.zero_point) == {0}
        assert len(w.type.quant.scale) == w.type.shape[0] and int(np.abs(w.data).max()) == 127
        assert bias.type.dtype == "int32"
        expected = np.float64(np.float32(node.inputs[0].type.quant.scale[0])) * np.array(w.type.quant.scale)
        np.testing.assert_allclose(bias.type.quant.scale, expected)
    # fused ReLU folded into the range: the first two layers' outputs start at zero
    assert [n.outputs[0].type.quant.zero_point[0] for n in fc[:2]] == [-128, -128]
    report = result.quant
    assert report.samples == 100 and report.int8_ops == 3 and not report.float_ops
    assert report.output_sqnr_db > 25
    text = report.format_text()
    assert "SQNR" in text and "FULLY_CONNECTED" in text
    json.dumps(report.to_dict())
    x = _hello_samples(100)
    got = run_folder(result.write(tmp_path / "out"), [x])[0].reshape(-1)
    float_result = compile_model(HELLO)
    want = run_folder(float_result.write(tmp_path / "float"), [x])[0].reshape(-1)
    sqnr = 10 * np.log10(np.sum(want**2) / np.sum((want - got) ** 2))
    assert sqnr > 25 and abs(sqnr - report.output_sqnr_db) < 3, (sqnr, report.output_sqnr_db)
