"""`nn2c compile --prune`: compile-time weight pruning, its report, --write-tflite and its errors.

The zeroed model nn2c compiles is written with --write-tflite; TFLM runs that file dense and must agree
bit for bit with the C compiled from it, and the C of `--prune` must be that C (same files, byte for byte,
but for the model's file name in comments).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nn2c.api import CompileOptions, compile_model
from nn2c.cli import main
from nn2c.errors import UsageError
from nn2c.prune import parse_spec, prune_weights
from tests.conftest import model_path, require_cc
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder

KWS = model_path("mlcommons_tiny/kws_ref_model.tflite")
KWS_FLOAT = model_path("mlcommons_tiny/kws_ref_model_float32.tflite")


def _compile_json(tmp_path: Path, model: Path, *args: str) -> dict:
    result = CliRunner().invoke(main, ["compile", str(model), "-o", str(tmp_path / "out"), "--force", "--json",
                                       *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _macs(graph) -> int:
    from nn2c.ir.cost import macs

    return sum(macs(n) for n in graph.nodes)


def test_structured_half_of_kws_removes_channels_and_matches_tflm(tmp_path):
    require_cc()
    written = tmp_path / "kws_pruned.tflite"
    payload = _compile_json(tmp_path, KWS, "--prune", "structured:0.5", "--write-tflite", str(written))
    prune = payload["pruning"]
    assert prune["method"] == "structured" and prune["amount"] == 0.5
    assert "seeded random inputs" in prune["inputs"]
    before, after = prune["before"], prune["after"]
    assert after["macs"] < before["macs"] and after["weight_bytes"] < before["weight_bytes"]
    assert after["arena_bytes"] <= before["arena_bytes"]
    assert payload["arena_bytes"] == after["arena_bytes"] and payload["weight_bytes"] == after["weight_bytes"]
    layers = prune["layers"]
    assert {x["op"] for x in layers} == {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}
    for layer in layers:
        assert layer["filters_zeroed"] == layer["filters"] // 2 and layer["zeroed_fraction"] >= 0.5
    assert sum(x["channels_removed"] for x in layers) > 0
    assert isinstance(prune["output_sqnr_db"], float) and math.isfinite(prune["output_sqnr_db"])
    assert payload["tflite"] == str(written)

    # the written model is the one compiled: same C, and TFLM running it dense agrees bit for bit
    ours = compile_model(KWS, CompileOptions(name="kws", prune="structured:0.5"))
    again = compile_model(written, CompileOptions(name="kws"))
    assert sorted(ours.files) == sorted(again.files)
    for name, text in ours.files.items():
        assert text.replace(KWS.name, written.name) == again.files[name], name
    assert _macs(again.graph) == after["macs"] < _macs(compile_model(KWS).graph)
    assert_matches_tflm(written, tmp_path, records=3, name="kws_pruned")


def test_sqnr_falls_as_sparsity_rises_on_a_float_model(tmp_path):
    figures = []
    for sparsity in (0.3, 0.6, 0.9):
        payload = _compile_json(tmp_path, KWS_FLOAT, "--prune", f"magnitude:{sparsity}")
        prune = payload["pruning"]
        assert all(math.isfinite(o["sqnr_db"]) for o in prune["outputs"])
        zero = sum(x["weights"] * x["zeroed_fraction"] for x in prune["layers"])
        assert zero / sum(x["weights"] for x in prune["layers"]) == pytest.approx(sparsity, abs=0.01)
        assert prune["after"]["macs"] == prune["before"]["macs"]  # dense kernels: magnitude zeros save no MAC
        assert any("multiply only the nonzero weights" in note for note in prune["notes"])
        figures.append(prune["output_sqnr_db"])
    assert figures[0] > figures[1] > figures[2]


def test_zero_fraction_changes_nothing_and_calibration_data_is_used(tmp_path):
    calibration = tmp_path / "cal.npz"
    np.savez(calibration, np.random.default_rng(3).uniform(-128, 127, (5, 1, 49, 10, 1)).round().astype(np.int8))
    payload = _compile_json(tmp_path, KWS, "--prune", "magnitude:0", "--calibration", str(calibration))
    prune = payload["pruning"]
    assert prune["inputs"] == "5 calibration sample(s)" and prune["output_sqnr_db"] == "inf"
    assert prune["before"] == prune["after"]


def test_prune_skip_keeps_a_layer_dense(tmp_path):
    payload = _compile_json(tmp_path, KWS, "--prune", "structured:0.5", "--prune-skip", "11")
    fc = [x for x in payload["pruning"]["layers"] if x["index"] == 11]
    assert fc and fc[0]["filters_zeroed"] == 0 and "--prune-skip" in fc[0]["note"]


def test_structured_keeps_one_filter_and_ranks_by_l1():
    from nn2c.compile import load_model

    graph = load_model(KWS_FLOAT)
    fc = next(n for n in graph.nodes if n.op == "FULLY_CONNECTED")
    weights = np.asarray(fc.inputs[1].data, dtype=np.float64)
    report = prune_weights(graph, "structured", 0.99)
    pruned = np.asarray(fc.inputs[1].data)
    kept = np.flatnonzero(np.abs(pruned).sum(axis=1))
    assert kept.tolist() == [int(np.argmax(np.abs(weights).sum(axis=1)))]  # one filter kept: the largest L1
    assert all(x.filters_zeroed == x.filters - 1 for x in report.layers)


def _tiny_onnx(path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 1, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((4, 8 * 6 * 6)).astype(np.float32), "fw"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "fb")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def test_magnitude_on_an_onnx_model(tmp_path):
    path = tmp_path / "tiny.onnx"
    _tiny_onnx(path)
    payload = _compile_json(tmp_path, path, "--prune", "magnitude:0.5")
    prune = payload["pruning"]
    assert {x["op"] for x in prune["layers"]} == {"CONV_2D", "FULLY_CONNECTED"}
    assert all(x["zeroed_fraction"] == pytest.approx(0.5, abs=0.02) for x in prune["layers"])
    assert math.isfinite(prune["output_sqnr_db"])


def test_report_has_a_pruning_section(tmp_path):
    result = CliRunner().invoke(main, ["compile", str(KWS), "-o", str(tmp_path / "out"), "--prune", "structured:0.25",
                                       "--report"])
    assert result.exit_code == 0, result.output
    assert "pruned structured:0.25: output 'Identity' SQNR" in result.stdout
    assert "MACs" in result.stdout and "output channel(s) removed" in result.stdout
    assert 'id="pruning"' in (tmp_path / "out" / "report.html").read_text()
    assert "## Pruning" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize("spec,message", [
    ("lottery:0.5", "unknown method 'lottery'"),
    ("structured:1", "needs a fraction in [0, 1)"),
    ("magnitude:-0.1", "needs a fraction in [0, 1)"),
    ("structured", "needs a fraction in [0, 1)"),
    ("magnitude:half", "needs a fraction in [0, 1)"),
])
def test_malformed_spec_is_one_line_exit_7(tmp_path, spec, message):
    result = CliRunner().invoke(main, ["compile", str(KWS), "-o", str(tmp_path / "out"), "--prune", spec])
    assert result.exit_code == 7
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output
    with pytest.raises(UsageError):
        parse_spec(spec)


def test_bad_skip_and_skip_without_prune_exit_7(tmp_path):
    for args, message in ((["--prune", "structured:0.5", "--prune-skip", "a,b"], "give operator indices"),
                          (["--prune-skip", "3"], "--prune-skip is only used with --prune")):
        result = CliRunner().invoke(main, ["compile", str(KWS), "-o", str(tmp_path / "out"), *args])
        assert result.exit_code == 7 and message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_nothing_to_prune_is_a_note(tmp_path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 10))
    y = b.tensor("float32", (1, 10))
    b.op("SOFTMAX", [x], [y], {"beta": 1.0})
    path = tmp_path / "softmax.tflite"
    path.write_bytes(b.build([x], [y]))
    payload = _compile_json(tmp_path, path, "--prune", "structured:0.5")
    prune = payload["pruning"]
    assert prune["layers"] == [] and prune["output_sqnr_db"] == "inf"
    assert any(note.startswith("nothing to prune") for note in prune["notes"])
