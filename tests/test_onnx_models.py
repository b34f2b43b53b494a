"""Helpers to make small ONNX models in the test suite, and the frontend's own model-level tests.

Models are built with onnx.helper (fast, deterministic) and compared with onnxruntime: float
within 1e-4 relative, QDQ int8 within one quantization step of the output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="SKIPPED LOUDLY: the onnx package is not installed (pip install nn2c[test])")
ort = pytest.importorskip("onnxruntime", reason="SKIPPED LOUDLY: onnxruntime is not installed (pip install nn2c[test])")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.verify.compare import run_compiled  # noqa: E402
from nn2c.verify.inputs import random_records  # noqa: E402
from nn2c.verify.onnx_oracle import run_onnxruntime, verify_onnx  # noqa: E402

FLOAT = TensorProto.FLOAT


class OnnxBuilder:
    """A tiny graph builder: b.input(...), b.node(...), b.const(...), b.save(path, outputs)."""

    def __init__(self, opset: int = 17, seed: int = 0) -> None:
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inputs: list[Any] = []
        self.initializers: list[Any] = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def input(self, shape: list[int | str], dtype: int = FLOAT, name: str | None = None) -> str:
        name = name or self.name("x")
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def const(self, array: np.ndarray, name: str | None = None) -> str:
        name = name or self.name("c")
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weights(self, shape: tuple[int, ...], scale: float = 0.5) -> str:
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op: str, inputs: list[str], outputs: int = 1, **attrs: Any) -> Any:
        names = [self.name(op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=self.name(op), **attrs))
        return names[0] if outputs == 1 else names

    def model(self, outputs: list[str]) -> Any:
        """The model, with the output types taken from ONNX shape inference."""
        graph = helper.make_graph(self.nodes, "test", self.inputs, [], self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        inferred = onnx.shape_inference.infer_shapes(model)
        infos = {v.name: v for v in inferred.graph.value_info}
        model.graph.output.extend([infos[o] for o in outputs])
        return model

    def save(self, path: Path, outputs: list[str]) -> Path:
        model = self.model(outputs)
        onnx.checker.check_model(model)
        onnx.save(model, path)
        return path


def assert_matches_ort(path: Path, tmp_path: Path, rtol: float = 1e-4, atol: float = 1e-5, count: int = 3,
                       **options: Any) -> Any:
    report = verify_onnx(path, CompileOptions(**options), count=count, rtol=rtol, atol=atol,
                         workdir=tmp_path / f"{path.stem}_c")
    bad = [c for c in report.comparisons if c.mismatches]
    assert not bad, "; ".join(f"output {c.output}: {c.mismatches}/{c.elements} differ, max abs {c.max_abs_diff:g}, "
                              f"max rel {c.max_rel_diff:g}" for c in bad)
    return report


def ops_after(path: Path, **options: Any) -> list[str]:
    return [n.op for n in compile_model(path, CompileOptions(**options)).graph.nodes]


def quantized_lsb_error(path: Path, count: int = 8, optimized: bool = False, **options: Any) -> float:
    """Largest |ours - onnxruntime| over the outputs, in units of each output's quantization step."""
    result = compile_model(path, CompileOptions(**options))
    graph = result.graph
    steps = []
    for out in graph.outputs:
        producer = out.producer
        assert producer is not None and producer.op == "DEQUANTIZE", "the model should end in a DequantizeLinear"
        quant = producer.inputs[0].type.quant  # type: ignore[union-attr]
        steps.append(quant.scale[0])
    records = random_records(graph.inputs, count, seed=1)
    ours = run_compiled(result, records)
    theirs = run_onnxruntime(path, graph, records, optimized=optimized)
    worst = 0.0
    for o_rec, t_rec in zip(ours, theirs, strict=True):
        for k, step in enumerate(steps):
            worst = max(worst, float(np.abs(o_rec[k].astype(np.float64) - t_rec[k]).max()) / step)
    return worst


# --- model-level tests of the frontend ---------------------------------------------------------------
def _small_cnn(path: Path, opset: int = 17) -> Path:
    b = OnnxBuilder(opset)
    x = b.input([1, 3, 10, 10])
    y = b.node("Conv", [x, b.weights((6, 3, 3, 3)), b.weights((6,))], pads=[1, 1, 1, 1])
    y = b.node("BatchNormalization", [y, b.const(np.linspace(0.5, 1.5, 6).astype(np.float32)),
                                      b.weights((6,)), b.weights((6,)),
                                      b.const(np.linspace(0.5, 2, 6).astype(np.float32))], epsilon=1e-3)
    y = b.node("Relu", [y])
    y = b.node("Identity", [y])
    y = b.node("Conv", [y, b.weights((6, 1, 3, 3)), b.weights((6,))], group=6, strides=[2, 2], pads=[1, 1, 1, 1])
    y = b.node("Clip", [y, b.const(np.array(0, np.float32)), b.const(np.array(6, np.float32))])
    y = b.node("Dropout", [y])
    y = b.node("GlobalAveragePool", [y])
    y = b.node("Flatten", [y])
    y = b.node("Gemm", [y, b.weights((4, 6)), b.weights((4,))], transB=1)
    return b.save(path, [y])


@pytest.mark.parametrize("opset", [11, 13, 17, 21])
def test_small_cnn_matches_onnxruntime_at_every_level(tmp_path, opset):
    path = _small_cnn(tmp_path / f"cnn{opset}.onnx", opset)
    for level in (0, 1, 2):
        assert_matches_ort(path, tmp_path, opt_level=level)
    # the stride-2 depthwise conv pads 1 pixel at the top: not TFLite's SAME, so an explicit PAD
    expected = ["CONV_2D", "PAD", "DEPTHWISE_CONV_2D", "MEAN", "FULLY_CONNECTED"]
    assert [op for op in ops_after(path, opt_level=2, nhwc_io=True) if op != "PAD"] == [
        op for op in expected if op != "PAD"]
    # in the model's own NCHW layout only the input transpose is left
    assert ops_after(path, opt_level=2)[0] == "TRANSPOSE"
    assert ops_after(path, opt_level=2)[1:] == ops_after(path, opt_level=2, nhwc_io=True)
    assert_matches_ort(path, tmp_path, nhwc_io=True)


def test_nhwc_io_changes_the_c_api_shapes(tmp_path):
    path = _small_cnn(tmp_path / "cnn.onnx")
    nchw = compile_model(path, CompileOptions())
    nhwc = compile_model(path, CompileOptions(nhwc_io=True))
    assert nchw.graph.inputs[0].type.shape == (1, 3, 10, 10)
    assert nhwc.graph.inputs[0].type.shape == (1, 10, 10, 3)
    assert nchw.graph.outputs[0].type.shape == nhwc.graph.outputs[0].type.shape == (1, 4)


def test_symbolic_batch_is_fixed_to_one(tmp_path):
    b = OnnxBuilder()
    x = b.input(["batch", 8])
    y = b.node("Gemm", [x, b.weights((8, 3))])
    y = b.node("Sigmoid", [y])
    path = b.save(tmp_path / "dyn.onnx", [y])
    result = compile_model(path, CompileOptions())
    assert result.graph.inputs[0].type.shape == (1, 8)
    assert_matches_ort(path, tmp_path)


def test_graph_output_names_are_kept(tmp_path):
    path = _small_cnn(tmp_path / "cnn.onnx")
    model = onnx.load(path)
    result = compile_model(path, CompileOptions())
    assert [v.name for v in result.graph.outputs] == [o.name for o in model.graph.output]
    assert [v.name for v in result.graph.inputs] == [i.name for i in model.graph.input]


def test_two_outputs_and_an_unused_branch(tmp_path):
    b = OnnxBuilder()
    x = b.input([1, 4, 6, 6])
    a = b.node("Conv", [x, b.weights((4, 4, 1, 1))])
    unused = b.node("Conv", [x, b.weights((8, 4, 3, 3))])
    b.node("Relu", [unused])
    s = b.node("Sigmoid", [a])
    m = b.node("MaxPool", [a], kernel_shape=[2, 2], strides=[2, 2])
    path = b.save(tmp_path / "two.onnx", [s, m])
    assert_matches_ort(path, tmp_path)
    assert_matches_ort(path, tmp_path, nhwc_io=True)
    assert ops_after(path, nhwc_io=True).count("CONV_2D") == 1
