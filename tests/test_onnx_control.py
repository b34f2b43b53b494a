"""ONNX If nodes: a condition that static shapes decide compiles as the branch taken (checked
against onnxruntime); a run-time condition is refused in one line; AffineGrid, whose ONNX function
body branches on the rank, compiles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

import onnx
from onnx import TensorProto, helper

from nn2c.api import CompileOptions, compile_model
from nn2c.errors import UnsupportedOpError
from tests.test_onnx_models import OnnxBuilder, assert_matches_ort

F = TensorProto.FLOAT


def _branch(name: str, nodes: list, outputs: list[str], initializers: list | None = None) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(o, F, None) for o in outputs],
                             initializers or [])


def _shape_if_model(path: Path, runtime_condition: bool = False, channels: int = 3) -> Path:
    """y = x.shape[1] == 3 ? relu(x) * 2 : -x, with a second output that reads an outer value (then)
    or a branch initializer (else); the condition from Shape, or from x's values."""
    two = onnx.numpy_helper.from_array(np.array(2.0, np.float32), "two")
    then = _branch("then", [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "two"], ["t"]),
                            helper.make_node("Identity", ["x"], ["xi"])], ["t", "xi"], [two])
    other = _branch("else", [helper.make_node("Neg", ["x"], ["e"]), helper.make_node("Identity", ["zero"], ["zi"])],
                    ["e", "zi"], [onnx.numpy_helper.from_array(np.zeros((1, channels, 4), np.float32), "zero")])
    if runtime_condition:
        nodes = [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
                 helper.make_node("Greater", ["m", "limit"], ["cond"])]
        inits = [onnx.numpy_helper.from_array(np.array(0.0, np.float32), "limit")]
    else:
        nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "one"], ["c"]),
                 helper.make_node("Equal", ["c", "three"], ["cond"])]
        inits = [onnx.numpy_helper.from_array(np.array(1, np.int64), "one"),
                 onnx.numpy_helper.from_array(np.array(3, np.int64), "three")]
    nodes.append(helper.make_node("If", ["cond"], ["y", "z"], then_branch=then, else_branch=other))
    nodes.append(helper.make_node("Add", ["y", "z"], ["out"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, channels, 4])],
                              [helper.make_tensor_value_info("out", F, [1, channels, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("channels", [3, 2], ids=["then", "else"])
def test_if_on_a_static_shape_compiles_as_the_branch_taken(tmp_path: Path, channels: int) -> None:
    path = _shape_if_model(tmp_path / "if.onnx", channels=channels)
    result = compile_model(path, CompileOptions())
    assert "IF" not in [n.op for n in result.graph.nodes]
    assert_matches_ort(path, tmp_path, count=2)


def test_if_on_runtime_values_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedOpError, match="If whose condition depends on run-time values") as info:
        compile_model(_shape_if_model(tmp_path / "if.onnx", runtime_condition=True), CompileOptions())
    assert "\n" not in str(info.value)


def test_affine_grid_compiles_through_its_function_body(tmp_path: Path) -> None:
    b = OnnxBuilder(opset=20, seed=1)
    theta = b.input([2, 2, 3])
    size = b.const(np.array([2, 3, 4, 5], np.int64))
    outs = [b.node("AffineGrid", [theta, size], align_corners=0), b.node("AffineGrid", [theta, size], align_corners=1)]
    assert_matches_ort(b.save(tmp_path / "grid.onnx", outs), tmp_path, count=2)
