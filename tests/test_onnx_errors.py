"""ONNX input that nn2c cannot compile ends in one clear error naming the ONNX node; the CLI options."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from nn2c.api import CompileOptions, compile_model, load_model
from nn2c.cli import main
from nn2c.errors import InvalidModelError, UnsupportedOpError
from tests.test_onnx_models import OnnxBuilder, _small_cnn


def test_unsupported_operator_names_the_onnx_node(tmp_path):
    b = OnnxBuilder()
    x = b.input([3, 3])
    y = b.node("Relu", [x])
    y = b.node("NonZero", [y])
    path = b.save(tmp_path / "nonzero.onnx", [y])
    with pytest.raises(UnsupportedOpError, match=r"ONNX node #1 'NonZero_\d+' \(NonZero\): operator NonZero is not "
                       "supported"):
        load_model(path)


def test_unsupported_variant_names_the_onnx_node(tmp_path):
    b = OnnxBuilder()
    x = b.input([1, 2, 3, 3, 3])
    y = b.node("ConvTranspose", [x, b.const(np.ones((2, 2, 2, 2, 2), np.float32))])
    path = b.save(tmp_path / "convtranspose3d.onnx", [y])
    with pytest.raises(UnsupportedOpError, match=r"ONNX node #0 'ConvTranspose_\d+' \(ConvTranspose\): "
                       "ConvTranspose over 3 spatial dimensions"):
        load_model(path)


def test_corrupt_file_is_an_invalid_model(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x08\x07garbage that is not a protobuf \xff\xff\xff")
    with pytest.raises(InvalidModelError, match="not a valid ONNX model"):
        load_model(path)


def test_checker_failure_is_an_invalid_model(tmp_path):
    b = OnnxBuilder()
    y = b.node("Relu", [b.input([1, 4])])
    model = b.model([y])
    model.graph.node[0].input[0] = "missing"  # reads a tensor nothing produces
    path = tmp_path / "broken.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(InvalidModelError, match="not a valid ONNX model"):
        load_model(path)


def test_cli_compile_with_nhwc_io_and_passes_report(tmp_path):
    path = _small_cnn(tmp_path / "cnn.onnx")
    runner = CliRunner()
    result = runner.invoke(main, ["compile", str(path), "-o", str(tmp_path / "out"), "--nhwc-io", "--passes-report"])
    assert result.exit_code == 0, result.output
    assert "passes -O2" in result.output and "fold-batchnorm" in result.output
    assert "operator(s) removed or fused" in result.output and "activation bytes saved" in result.output
    header = (tmp_path / "out" / "cnn.h").read_text()
    assert "10" in header
    json_run = runner.invoke(main, ["compile", str(path), "-o", str(tmp_path / "out2"), "--json", "--passes-report"])
    assert json_run.exit_code == 0 and '"passes"' in json_run.output


def test_cli_reports_unsupported_onnx_with_exit_code_3(tmp_path):
    b = OnnxBuilder()
    path = b.save(tmp_path / "nonzero.onnx", [b.node("NonZero", [b.input([3, 3])])])
    result = CliRunner().invoke(main, ["compile", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3
    assert "ONNX node #0" in result.output


def test_compile_options_nhwc_io_default_is_the_models_layout(tmp_path):
    path = _small_cnn(tmp_path / "cnn.onnx")
    assert CompileOptions().nhwc_io is False
    assert compile_model(path).graph.inputs[0].type.shape == (1, 3, 10, 10)


def test_cli_verify_runs_onnx_models_against_onnxruntime(tmp_path):
    import json

    path = _small_cnn(tmp_path / "cnn.onnx")
    result = CliRunner().invoke(main, ["verify", str(path), "--inputs", "2", "--json", "-"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["passed"] is True
    assert [c["reference"] for c in report["comparisons"]] == ["onnxruntime"]
    assert report["comparisons"][0]["mismatches"] == 0 and report["comparisons"][0]["elements"] > 0
