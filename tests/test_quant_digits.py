"""Post-training int8 quantization end to end: a CNN trained on scikit-learn's digits (seeded, a few
seconds), exported to ONNX, compiled by nn2c with --quantize int8, and run as generated C on the
host. The int8 build may lose at most one percentage point of test accuracy against float.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.verify.runner import run_folder

torch = pytest.importorskip("torch", reason="SKIPPED LOUDLY: PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("onnx")
sklearn_datasets = pytest.importorskip("sklearn.datasets",
                                       reason="SKIPPED LOUDLY: scikit-learn is not installed (pip install scikit-learn)")
nn = torch.nn


class DigitsNet(nn.Module):
    """conv-ReLU, conv-ReLU, max-pool, conv-ReLU, global average pool, dense: a tiny MCU-style CNN."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 12, 3, padding=1), nn.BatchNorm2d(12), nn.ReLU(),
            nn.Conv2d(12, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 24, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(24 * 4 * 4, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


@pytest.fixture(scope="module")
def digits():
    data = sklearn_datasets.load_digits()
    x = (data.images / 16.0).astype(np.float32)[:, None]  # [N, 1, 8, 8] in [0, 1]
    y = data.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.7 * len(x))
    return x[:split], y[:split], x[split:], y[split:]


@pytest.fixture(scope="module")
def trained(digits, tmp_path_factory):
    """The trained float model as ONNX, its float test predictions and the calibration archive."""
    x_train, y_train, x_test, _ = digits
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DigitsNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    generator = torch.Generator().manual_seed(0)
    for _ in range(12):
        for batch in torch.randperm(len(xt), generator=generator).split(64):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xt[batch]), yt[batch]).backward()
            optimizer.step()
    model.eval()
    folder = tmp_path_factory.mktemp("digits")
    path = folder / "digits.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(1, 1, 8, 8),), str(path), dynamo=False, opset_version=13,
                          input_names=["image"], output_names=["logits"])
    with torch.no_grad():
        float_logits = model(torch.from_numpy(x_test)).numpy()
    calibration = folder / "calibration.npz"
    np.savez(calibration, image=x_train[:200])  # by input name
    return path, float_logits, calibration


def _int8_logits(path: Path, calibration: Path, x: np.ndarray, out: Path, **options) -> tuple[np.ndarray, object]:
    result = compile_model(path, CompileOptions(quantize="int8", calibration=str(calibration), **options))
    folder = result.write(out)
    return run_folder(folder, [x])[0].reshape(len(x), -1), result


@pytest.mark.parametrize("method", ["mse", "minmax"])
def test_int8_digits_cnn_keeps_float_accuracy(digits, trained, tmp_path, method):
    _, _, x_test, y_test = digits
    path, float_logits, calibration = trained
    int8_logits, result = _int8_logits(path, calibration, x_test, tmp_path / "out", calibration_method=method)
    float_acc = float(np.mean(float_logits.argmax(1) == y_test))
    int8_acc = float(np.mean(int8_logits.argmax(1) == y_test))
    print(f"\ndigits CNN ({method}): float accuracy {float_acc:.2%}, nn2c int8 accuracy {int8_acc:.2%}, "
          f"output SQNR (reference, calibration set) {result.quant.output_sqnr_db:.1f} dB")
    assert float_acc > 0.9, "the float model did not train"
    assert int8_acc >= float_acc - 0.01
    # the generated code computes in int8 from the first operator to the last
    ops = [(n.op, n.outputs[0].type.dtype) for n in result.graph.nodes]
    assert ops[0] == ("QUANTIZE", "int8") and ops[-1] == ("DEQUANTIZE", "float32")
    assert all(dtype == "int8" for op, dtype in ops[1:-1]), ops
    assert {"CONV_2D", "MAX_POOL_2D", "FULLY_CONNECTED"} <= {op for op, _ in ops}
    # the C build and the report's reference simulation of it agree closely
    sqnr = 10 * np.log10(np.sum(float_logits**2) / np.sum((float_logits - int8_logits) ** 2))
    assert sqnr > 25 and abs(sqnr - result.quant.output_sqnr_db) < 6


def test_int8_io_exposes_the_int8_tensors(digits, trained, tmp_path):
    _, _, x_test, y_test = digits
    path, float_logits, calibration = trained
    result = compile_model(path, CompileOptions(quantize="int8", calibration=str(calibration), io="int8"))
    (x_in,), (y_out,) = result.graph.inputs, result.graph.outputs
    assert (x_in.name, x_in.type.dtype, y_out.name, y_out.type.dtype) == ("image", "int8", "logits", "int8")
    assert "QUANTIZE" not in [n.op for n in result.graph.nodes] and "DEQUANTIZE" not in [n.op for n in result.graph.nodes]
    s_in, z_in = x_in.type.quant.scale[0], x_in.type.quant.zero_point[0]
    s_out, z_out = y_out.type.quant.scale[0], y_out.type.quant.zero_point[0]
    assert [(p[0], p[2], p[3]) for p in result.quant.io_params] == [("image", s_in, z_in), ("logits", s_out, z_out)]
    q = np.clip(np.round(x_test / s_in) + z_in, -128, 127).astype(np.int8)
    got = run_folder(result.write(tmp_path / "out"), [q])[0]
    assert got.dtype == np.int8
    logits = (got.reshape(len(q), -1).astype(np.float64) - z_out) * s_out
    float_acc = float(np.mean(float_logits.argmax(1) == y_test))
    assert float(np.mean(logits.argmax(1) == y_test)) >= float_acc - 0.01


def test_keep_float_leaves_chosen_operators_float(digits, trained, tmp_path):
    _, _, x_test, y_test = digits
    path, float_logits, calibration = trained
    plain = compile_model(path, CompileOptions(quantize="int8", calibration=str(calibration)))
    pool = next(n for n in plain.graph.nodes if n.op == "MAX_POOL_2D")
    # by type (the pool) and by output tensor name (the dense head, the model output)
    logits, result = _int8_logits(path, calibration, x_test, tmp_path / "out",
                                  keep_float=("MAX_POOL_2D", "logits"))
    dtypes = {n.op: n.outputs[0].type.dtype for n in result.graph.nodes}
    assert dtypes["MAX_POOL_2D"] == "float32" and dtypes["FULLY_CONNECTED"] == "float32"
    assert dtypes["CONV_2D"] == "int8"
    fc = next(n for n in result.graph.nodes if n.op == "FULLY_CONNECTED")
    assert fc.inputs[1].type.dtype == "float32"
    kinds = [n.op for n in result.graph.nodes]
    assert kinds.count("DEQUANTIZE") == 2 and kinds.count("QUANTIZE") == 2, kinds  # around the pool, before the head
    assert {op for op, _, _ in result.quant.float_ops} == {"MAX_POOL_2D", "FULLY_CONNECTED"}
    assert pool.outputs[0].name  # the pool kept its name through the rewrite
    float_acc = float(np.mean(float_logits.argmax(1) == y_test))
    assert float(np.mean(logits.argmax(1) == y_test)) >= float_acc - 0.01
