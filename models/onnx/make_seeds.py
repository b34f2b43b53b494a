"""Writes the small ONNX models in this folder: nn2c's own, made here from seeded random weights.

    .venv/bin/python models/onnx/make_seeds.py

They are the ONNX seeds of the fuzzer (src/nn2c/fuzz/onnx_mutator.py) and small end-to-end test
models; no third-party weights. The output is byte-for-byte deterministic for a given onnx and
onnxruntime version (the QDQ model is quantized by onnxruntime.quantization.quantize_static):
- cnn_float.onnx: Conv + BatchNormalization + Relu, a residual Add, MaxPool, GlobalAveragePool,
  Reshape and Gemm + Softmax (opset 17).
- audio_conv1d.onnx: a 1-D audio net: Conv1d, depthwise Conv1d, Clip, AveragePool, pointwise
  Conv1d, Transpose, ReduceMean, MatMul + Add, Sigmoid (opset 13).
- qdq_int8.onnx: cnn_float.onnx after onnxruntime's quant_pre_process (BatchNormalization folded)
  and static int8 QDQ quantization (per-channel conv weights), calibrated on 8 seeded random inputs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent


class _Graph:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weights(self, name: str, shape: tuple[int, ...]) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        return self.const(name, (self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32))

    def node(self, op: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=f"{op.lower()}_{len(self.nodes)}", **attrs))
        return output

    def batch_norm(self, x: str, name: str, channels: int) -> str:
        gamma = self.const(f"{name}.gamma", (1 + 0.1 * self.rng.standard_normal(channels)).astype(np.float32))
        beta = self.const(f"{name}.beta", (0.1 * self.rng.standard_normal(channels)).astype(np.float32))
        mean = self.const(f"{name}.mean", (0.1 * self.rng.standard_normal(channels)).astype(np.float32))
        var = self.const(f"{name}.var", self.rng.uniform(0.5, 1.5, channels).astype(np.float32))
        return self.node("BatchNormalization", [x, gamma, beta, mean, var], name, epsilon=1e-5)

    def model(self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[str], opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, [], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="nn2c models/onnx/make_seeds.py")
        model.ir_version = 8
        inferred = onnx.shape_inference.infer_shapes(model)
        infos = {v.name: v for v in inferred.graph.value_info}
        model.graph.output.extend([infos[o] for o in outputs])
        onnx.checker.check_model(model)
        return model


def cnn_float() -> onnx.ModelProto:
    g = _Graph(seed=1)
    x = "input"
    y = g.node("Conv", [x, g.weights("conv1.w", (8, 3, 3, 3)), g.weights("conv1.b", (8,))], "conv1",
               pads=[1, 1, 1, 1], strides=[2, 2], kernel_shape=[3, 3])
    y = g.node("Relu", [g.batch_norm(y, "bn1", 8)], "relu1")
    r = g.node("Conv", [y, g.weights("conv2.w", (8, 8, 3, 3))], "conv2", pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    r = g.batch_norm(r, "bn2", 8)
    y = g.node("Relu", [g.node("Add", [y, r], "residual")], "relu2")
    y = g.node("MaxPool", [y], "pool", kernel_shape=[2, 2], strides=[2, 2])
    y = g.node("GlobalAveragePool", [y], "gap")
    y = g.node("Reshape", [y, g.const("flat_shape", np.array([1, -1], dtype=np.int64))], "flat")
    y = g.node("Gemm", [y, g.weights("fc.w", (4, 8)), g.weights("fc.b", (4,))], "logits", transB=1)
    g.node("Softmax", [y], "probs", axis=-1)
    return g.model("cnn_float", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, 16, 16])], ["probs"], 17)


def audio_conv1d() -> onnx.ModelProto:
    g = _Graph(seed=2)
    x = "audio"
    y = g.node("Conv", [x, g.weights("c1.w", (8, 1, 5)), g.weights("c1.b", (8,))], "c1", strides=[2], pads=[2, 2])
    y = g.node("Relu", [y], "r1")
    y = g.node("Conv", [y, g.weights("dw.w", (8, 1, 3)), g.weights("dw.b", (8,))], "dw", group=8, pads=[1, 1])
    y = g.node("Clip", [y, g.const("lo", np.array(0, np.float32)), g.const("hi", np.array(6, np.float32))], "r2")
    y = g.node("AveragePool", [y], "pool", kernel_shape=[2], strides=[2])
    y = g.node("Conv", [y, g.weights("pw.w", (12, 8, 1))], "pw")
    y = g.node("Transpose", [y], "nwc", perm=[0, 2, 1])
    y = g.node("ReduceMean", [y], "mean", axes=[1], keepdims=0)
    y = g.node("MatMul", [y, g.weights("fc.w", (12, 3))], "mm")
    y = g.node("Add", [y, g.weights("fc.b", (3,))], "fc")
    g.node("Sigmoid", [y], "scores")
    return g.model("audio_conv1d", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 1, 64])], ["scores"], 13)


def qdq_int8(float_model: onnx.ModelProto) -> onnx.ModelProto:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(3)
            self.data = iter([{"input": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    with tempfile.TemporaryDirectory() as tmp:
        src, pre, dst = Path(tmp) / "float.onnx", Path(tmp) / "pre.onnx", Path(tmp) / "qdq.onnx"
        onnx.save(float_model, src)
        quant_pre_process(str(src), str(pre))  # folds BatchNormalization into the convolutions
        quantize_static(str(pre), str(dst), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
        model = onnx.load(dst)
    model.producer_name = "nn2c models/onnx/make_seeds.py (onnxruntime.quantization.quantize_static)"
    model.producer_version = ""
    del model.metadata_props[:]
    onnx.checker.check_model(model)
    return model


def main() -> None:
    cnn = cnn_float()
    for name, model in (("cnn_float", cnn), ("audio_conv1d", audio_conv1d()), ("qdq_int8", qdq_int8(cnn))):
        path = HERE / f"{name}.onnx"
        path.write_bytes(model.SerializeToString(deterministic=True))
        print(f"{path.relative_to(HERE.parent.parent)}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
