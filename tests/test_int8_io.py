"""--io int8 without --quantize (passes/int8_io.py): an already quantized model with float32 edges
(input -> QUANTIZE, DEQUANTIZE -> output) takes and returns the int8 tensors instead.

The property checked on real models: the int8 build's outputs, dequantized with the scale and zero
point the manifest and header give, equal the float-I/O build's outputs bit for bit when the int8
build gets the int8 input the float build's QUANTIZE computes. (The float-I/O build is checked
against TFLite Micro in test_models.py.) Edges that cannot be exposed stay float32 and say why.

Until compile_model calls expose_int8_io itself, `_compile_int8` patches it in right after the
optimiser, where compile_model is to call it; once it does, the second call finds int8 edges and
changes nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import nn2c.compile
from nn2c.api import CompileOptions, compile_model, load_model
from nn2c.cli import main
from nn2c.errors import UsageError
from nn2c.ir import Value, verify
from nn2c.passes.int8_io import expose_int8_io
from nn2c.passes.pipeline import optimize
from nn2c.verify.runner import run_folder
from tests.conftest import model_path
from tests.tflite_builder import ModelBuilder

RECORDS = 4  # inferences per build


def _compile_int8(path: Path, monkeypatch: pytest.MonkeyPatch, **options) -> tuple[object, list[str]]:
    """compile_model(--io int8) with expose_int8_io run after the optimiser; returns (result, its lines)."""
    lines: list[str] = []
    real = nn2c.compile.optimize

    def optimize_then_expose(graph, level=2, *args, **kwargs):
        report = real(graph, level, *args, **kwargs)
        lines.extend(expose_int8_io(graph))
        return report

    with monkeypatch.context() as patch:
        patch.setattr(nn2c.compile, "optimize", optimize_then_expose)
        result = compile_model(path, CompileOptions(io="int8", **options))
    return result, lines


def _edge_params(value: Value) -> tuple[str, float, int] | None:
    """(dtype, scale, zero point) of the int8 tensor behind a float edge: its QUANTIZE's or DEQUANTIZE's."""
    node = value.producer if value.producer is not None else value.users[0] if value.users else None
    if node is None or node.op not in ("QUANTIZE", "DEQUANTIZE"):
        return None
    t = node.outputs[0].type if node.op == "QUANTIZE" else node.inputs[0].type  # type: ignore[union-attr]
    assert t.quant is not None
    return t.dtype, t.quant.scale[0], t.quant.zero_point[0]


def _tflm_quantize(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """What QUANTIZE computes (kernels/nn2c_elementwise.c, TFLM's AffineQuantize): roundf(x / scale)
    in float32, half away from zero, + zero point, clamped."""
    ratio = (x.astype(np.float32) / np.float32(scale)).astype(np.float64)
    rounded = np.sign(ratio) * np.floor(np.abs(ratio) + 0.5)
    return np.clip(rounded + zero_point, -128, 127).astype(np.int8)


def _dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """The DEQUANTIZE kernel's float32 arithmetic: scale * (float)(q - zero point)."""
    return np.float32(scale) * (q.astype(np.int32) - zero_point).astype(np.float32)


def _float_inputs(shape: tuple[int, ...], scale: float, zero_point: int) -> np.ndarray:
    """RECORDS random inputs over the int8 range of the input QUANTIZE, a little beyond (clamping)."""
    lo, hi = scale * (-128 - zero_point), scale * (127 - zero_point)
    margin = 0.05 * (hi - lo)
    rng = np.random.default_rng(11)
    return rng.uniform(lo - margin, hi + margin, size=(RECORDS, *shape)).astype(np.float32)


def _header_macro(folder: Path, name: str, macro: str) -> str:
    found = re.search(rf"^#define {name.upper()}_{macro} (.+)$", (folder / f"{name}.h").read_text(), re.M)
    assert found, f"{name}.h has no {name.upper()}_{macro}"
    return found.group(1).strip()


def _check_io_description(folder: Path, name: str, kind: str, index: int, params: tuple[str, float, int]) -> None:
    """The manifest and the header give the int8 tensor's scale and zero point (float32-exact)."""
    spec = json.loads((folder / "nn2c_manifest.json").read_text())[f"{kind}s"][index]
    dtype, scale, zero_point = params
    assert (spec["dtype"], spec["zero_point"]) == (dtype, zero_point)
    assert np.float32(spec["scale"]) == np.float32(scale)
    macro = f"{kind.upper()}{index}"
    assert _header_macro(folder, name, f"{macro}_TYPE") == "int8_t"
    assert np.float32(_header_macro(folder, name, f"{macro}_SCALE").rstrip("f")) == np.float32(scale)
    assert int(_header_macro(folder, name, f"{macro}_ZERO_POINT")) == zero_point


def _run_cli(folder: Path, array: np.ndarray, tmp_path: Path) -> list[np.ndarray]:
    """`nn2c run FOLDER --input x.npy --output y.npz` (builds main.c with the host compiler)."""
    np.save(tmp_path / "x.npy", array)
    done = CliRunner().invoke(main, ["run", str(folder), "--input", str(tmp_path / "x.npy"),
                                     "--output", str(tmp_path / "y.npz")])
    assert done.exit_code == 0, done.output
    with np.load(tmp_path / "y.npz") as saved:
        return [saved[f"output_{k}"] for k in range(len(saved.files))]


E2E_MODELS = [
    "tinyengine/vww.tflite",
    "tinyengine/detection.tflite",
    "tinyengine/ptq_mnist_lenet-300-100.tflite",  # int8 input, float output (LOG_SOFTMAX) kept
    "onnx/qdq_int8.onnx",  # QuantizeLinear / DequantizeLinear at the edges of an ONNX QDQ model
    pytest.param("tinyengine/mcunetv2_large.tflite", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("model", E2E_MODELS)
def test_int8_build_equals_float_build_bit_for_bit(model, tmp_path, monkeypatch):
    path = model_path(model)
    plain = compile_model(path, CompileOptions())
    exposed, lines = _compile_int8(path, monkeypatch)
    float_dir, int8_dir = plain.write(tmp_path / "float"), exposed.write(tmp_path / "int8")
    name = exposed.name

    source = plain.graph.inputs[0]
    in_params = _edge_params(source)
    assert in_params is not None and in_params[0] == "int8", "the float build's input goes into a QUANTIZE"
    assert exposed.graph.inputs[0].type.dtype == "int8"
    assert "QUANTIZE" not in [n.op for n in exposed.graph.nodes[:1]]
    _check_io_description(int8_dir, name, "input", 0, in_params)
    assert lines[0].startswith(f"input 0 {source.name!r}: int8[")

    x = _float_inputs(source.type.shape, in_params[1], in_params[2])
    q = _tflm_quantize(x, in_params[1], in_params[2])
    want = run_folder(float_dir, [x])
    got = _run_cli(int8_dir, q, tmp_path)  # the CLI and the host main.c, on int8 bytes
    assert len(got) == len(want) == len(plain.graph.outputs)
    for k, (value, y_float, y) in enumerate(zip(plain.graph.outputs, want, got, strict=True)):
        params = _edge_params(value)
        if params is None:  # an output no DEQUANTIZE makes stays float32, unchanged
            assert y.dtype == np.float32 and "kept float32" in lines[1 + k]
            assert np.array_equal(y.view(np.uint32), y_float.view(np.uint32))
            continue
        _check_io_description(int8_dir, name, "output", k, params)
        assert y.dtype == np.int8 and y.shape == y_float.shape
        assert len(np.unique(y)) > 1, f"output {k} is constant: the comparison would prove little"
        back = _dequantize(y, params[1], params[2])
        assert np.array_equal(back.view(np.uint32), y_float.view(np.uint32)), f"output {k} differs"
    # the float input buffer (4 bytes an element) is gone from the arena
    assert exposed.arena_bytes <= plain.arena_bytes


@pytest.mark.parametrize("model", ["tinyengine/vww.tflite", "tinyengine/detection.tflite",
                                   pytest.param("tinyengine/mcunetv2_large.tflite", marks=pytest.mark.slow)])
def test_arena_no_longer_floored_by_the_float_input(model, monkeypatch):
    """With float I/O the float input (4 bytes an element) is the arena's floor; with int8 I/O the
    arena is smaller than that buffer alone."""
    path = model_path(model)
    plain = compile_model(path, CompileOptions())
    exposed, _ = _compile_int8(path, monkeypatch)
    float_input = plain.graph.inputs[0].type.num_bytes
    assert plain.arena_bytes >= float_input
    assert exposed.arena_bytes < float_input


def test_run_refuses_float_data_for_an_int8_input(tmp_path, monkeypatch):
    """`nn2c run` on an int8 build: float32 .npy data is one line, exit code 7 (not silently cast)."""
    exposed, _ = _compile_int8(model_path("tinyengine/ptq_mnist_lenet-300-100.tflite"), monkeypatch)
    folder = exposed.write(tmp_path / "out")
    np.save(tmp_path / "x.npy", np.zeros((1, 28, 28, 1), np.float32))
    done = CliRunner().invoke(main, ["run", str(folder), "--input", str(tmp_path / "x.npy"),
                                     "--output", str(tmp_path / "y.npz")])
    assert done.exit_code == 7
    assert done.stderr.count("\n") == 1 and "expected int8" in done.stderr


# --- the rewrite itself, on real and on small built models -------------------------------------------
def _optimized(relative: str):
    graph = load_model(model_path(relative))
    optimize(graph, 2)
    return graph


def test_already_int8_model_is_left_alone():
    graph = _optimized("mlcommons_tiny/kws_ref_model.tflite")
    ops = [n.op for n in graph.nodes]
    lines = expose_int8_io(graph)
    assert [n.op for n in graph.nodes] == ops
    assert lines == [f"input 0 {graph.inputs[0].name!r}: already int8", f"output 0 {graph.outputs[0].name!r}: already int8"]


def test_exposing_twice_changes_nothing_the_second_time():
    graph = _optimized("tinyengine/vww.tflite")
    first = expose_int8_io(graph)
    assert [ln.split(": ")[1].split("[")[0] for ln in first] == ["int8", "int8"]
    assert "removed" in first[0] and "removed" in first[1]
    ops = [n.op for n in graph.nodes]
    assert ops[0] != "QUANTIZE" and ops[-1] != "DEQUANTIZE"
    assert expose_int8_io(graph) == [ln.split(": ")[0] + ": already int8" for ln in first]
    assert [n.op for n in graph.nodes] == ops
    verify(graph)


def test_partly_exposed_model_is_no_error_the_second_time():
    """ptq_mnist: the input becomes int8, the LOG_SOFTMAX output cannot; exposing again finds an
    int8 input and keeps the same reason for the output (no "nothing to expose" error)."""
    graph = _optimized("tinyengine/ptq_mnist_lenet-300-100.tflite")
    first = expose_int8_io(graph)
    assert first[0].startswith("input 0 'input_0_f.1': int8[1x28x28x1]")
    assert first[1] == "output 0 '83': kept float32: it comes from op #6 LOG_SOFTMAX ('83'), not from a DEQUANTIZE"
    assert expose_int8_io(graph) == ["input 0 'input_0_f.1': already int8", first[1]]


def test_io_names_are_kept():
    original = _optimized("tinyengine/detection.tflite")
    names = [v.name for v in original.inputs + original.outputs]
    expose_int8_io(original)
    assert [v.name for v in original.inputs + original.outputs] == names
    assert all(v.type.dtype == "int8" for v in original.inputs + original.outputs)


def test_float_model_is_one_usage_error_naming_its_edges():
    graph = _optimized("tflite_micro/hello_world_float.tflite")
    with pytest.raises(UsageError) as error:
        expose_int8_io(graph)
    message = str(error.value)
    assert "\n" not in message
    assert f"input 0 {graph.inputs[0].name!r}" in message and f"output 0 {graph.outputs[0].name!r}" in message
    assert "--quantize int8 --calibration" in message


def test_cli_float_model_exits_7_with_one_line(tmp_path, monkeypatch):
    real = nn2c.compile.optimize

    def optimize_then_expose(graph, level=2, *args, **kwargs):
        report = real(graph, level, *args, **kwargs)
        expose_int8_io(graph)
        return report

    monkeypatch.setattr(nn2c.compile, "optimize", optimize_then_expose)
    out = tmp_path / "out"
    done = CliRunner().invoke(main, ["compile", str(model_path("tflite_micro/hello_world_float.tflite")),
                                     "-o", str(out), "--io", "int8"])
    assert done.exit_code == 7
    assert done.stderr.startswith("nn2c: error: --io int8 without --quantize") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.output and not out.exists()


def _relu_chain(b: ModelBuilder, x: int, scale: float, zero_point: int, name: str) -> int:
    """x -> QUANTIZE -> int8 RELU -> DEQUANTIZE; returns the float result."""
    q = b.tensor("int8", (1, 8), scale=scale, zero_point=zero_point, name=f"{name}_q")
    b.op("QUANTIZE", [x], [q])
    r = b.tensor("int8", (1, 8), scale=scale, zero_point=zero_point, name=f"{name}_relu")
    b.op("RELU", [q], [r])
    y = b.tensor("float32", (1, 8), name=f"{name}_y")
    b.op("DEQUANTIZE", [r], [y])
    return y


def _load(tmp_path: Path, b: ModelBuilder, inputs: list[int], outputs: list[int]):
    path = tmp_path / "model.tflite"
    path.write_bytes(b.build(inputs, outputs))
    return path, load_model(path)


def test_input_with_two_different_quantizes_stays_float(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 8), name="x")
    outputs = [_relu_chain(b, x, 0.1, 3, "a"), _relu_chain(b, x, 0.2, 3, "b")]
    _, graph = _load(tmp_path, b, [x], outputs)
    lines = expose_int8_io(graph)
    verify(graph)
    assert lines[0].startswith("input 0 'x': kept float32: it is read by QUANTIZEs with different parameters")
    assert graph.inputs[0].type.dtype == "float32" and [n.op for n in graph.nodes].count("QUANTIZE") == 2
    assert [v.type.dtype for v in graph.outputs] == ["int8", "int8"]


def test_input_with_two_equal_quantizes_becomes_one_int8_input(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 8), name="x")
    outputs = [_relu_chain(b, x, 0.1, 3, "a"), _relu_chain(b, x, 0.1, 3, "b")]
    _, graph = _load(tmp_path, b, [x], outputs)  # not optimised: both QUANTIZEs are still there
    lines = expose_int8_io(graph)
    verify(graph)
    assert "op #0 QUANTIZE ('a_q'), op #3 QUANTIZE ('b_q') removed" in lines[0]
    q = graph.inputs[0]
    assert (q.name, q.type.dtype) == ("x", "int8")
    assert [n.op for n in graph.nodes] == ["RELU", "RELU"] and all(n.inputs[0] is q for n in graph.nodes)


def test_input_read_by_another_operator_stays_float(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 8), name="x")
    y = _relu_chain(b, x, 0.1, 3, "a")
    z = b.tensor("float32", (1, 8), name="z")
    b.op("RELU", [x], [z])
    _, graph = _load(tmp_path, b, [x], [y, z])
    lines = expose_int8_io(graph)
    verify(graph)
    assert lines[0] == "input 0 'x': kept float32: it is also read by op #3 RELU ('z'), not only by QUANTIZE"
    assert lines[2] == "output 1 'z': kept float32: it comes from op #3 RELU ('z'), not from a DEQUANTIZE"
    assert [v.type.dtype for v in graph.inputs + graph.outputs] == ["float32", "int8", "float32"]


def test_output_that_is_an_input_stays_float(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 8), name="x")
    y = _relu_chain(b, x, 0.1, 3, "a")
    _, graph = _load(tmp_path, b, [x], [y, x])
    lines = expose_int8_io(graph)
    verify(graph)
    assert lines[0] == "input 0 'x': kept float32: it is also a graph output"
    assert lines[2] == "output 1 'x': kept float32: it is a graph input itself, not computed by a DEQUANTIZE"
    assert graph.outputs[1] is graph.inputs[0] and graph.outputs[0].type.dtype == "int8"


def test_dequantize_read_inside_the_model_stays_for_its_reader(tmp_path, monkeypatch):
    """The float result of the output DEQUANTIZE also feeds a float RELU: the output becomes int8,
    the DEQUANTIZE stays for the RELU; built and run, the values agree with the float build."""
    b = ModelBuilder()
    x = b.tensor("float32", (1, 8), name="x")
    y = _relu_chain(b, x, 0.1, 3, "a")
    z = b.tensor("float32", (1, 8), name="z")
    b.op("RELU", [y], [z])
    path, graph = _load(tmp_path, b, [x], [y, z])
    lines = expose_int8_io(graph)
    verify(graph)
    assert lines[1].endswith("instead of float32 (op #2 DEQUANTIZE ('a_y') stays: op #3 RELU ('z') reads its float result)")
    assert [n.op for n in graph.nodes] == ["RELU", "DEQUANTIZE", "RELU"]
    assert [v.name for v in graph.outputs] == ["a_y", "z"]  # the float copy is now 'a_y/float32'

    plain = compile_model(path, CompileOptions())
    exposed, _ = _compile_int8(path, monkeypatch)
    x_data = np.linspace(-14.0, 14.0, RECORDS * 8, dtype=np.float32).reshape(RECORDS, 1, 8)
    want = run_folder(plain.write(tmp_path / "float"), [x_data])
    got = run_folder(exposed.write(tmp_path / "int8"), [_tflm_quantize(x_data, 0.1, 3)])
    assert got[0].dtype == np.int8 and got[1].dtype == np.float32
    assert np.array_equal(_dequantize(got[0], 0.1, 3).view(np.uint32), want[0].view(np.uint32))
    assert np.array_equal(got[1].view(np.uint32), want[1].view(np.uint32))
