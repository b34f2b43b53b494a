"""The generated-code safety properties of tests/test_generated_code.py for the ONNX path: the repo's
ONNX models compile deterministically and run clean under ASan + UBSan on extreme inputs (still
matching onnxruntime), and hostile ONNX names, doc strings and metadata never reach the C code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="SKIPPED LOUDLY: the onnx package is not installed (pip install nn2c[test])")
pytest.importorskip("onnxruntime", reason="SKIPPED LOUDLY: onnxruntime is not installed (pip install nn2c[test])")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.verify.build import build, run  # noqa: E402
from nn2c.verify.onnx_oracle import run_onnxruntime  # noqa: E402
from tests.c_safety import assert_no_injected_code, extreme_records  # noqa: E402

ONNX_MODELS = sorted((Path(__file__).resolve().parent.parent / "models" / "onnx").glob("*.onnx"))
SANITIZE = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def test_the_repo_has_onnx_models():
    assert len(ONNX_MODELS) >= 3, ONNX_MODELS


@pytest.mark.parametrize("path", ONNX_MODELS, ids=lambda p: p.stem)
@pytest.mark.parametrize("nhwc_io", [False, True])
def test_onnx_compile_is_deterministic(path, nhwc_io):
    first = compile_model(path, CompileOptions(nhwc_io=nhwc_io)).files
    second = compile_model(path, CompileOptions(nhwc_io=nhwc_io)).files
    assert first.keys() == second.keys()
    for name in first:
        assert first[name] == second[name], f"{name} differs between two compiles"


@pytest.mark.parametrize("path", ONNX_MODELS, ids=lambda p: p.stem)
def test_onnx_models_sanitizer_clean_on_extreme_and_random_inputs(path, tmp_path):
    result = compile_model(path)
    out = result.write(tmp_path / "out")
    exe = build(out, tmp_path / "asan_runner", opt="-O1", extra_flags=SANITIZE)
    rng = np.random.default_rng(7)
    records = [*extreme_records(result.graph),
               [rng.standard_normal(v.type.shape).astype(np.float32) * 2 for v in result.graph.inputs]]
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    theirs = run_onnxruntime(path, result.graph, records)
    # float outputs within 1e-4; a QDQ model's dequantized outputs within one quantization step
    steps = [_quant_step(v) for v in result.graph.outputs]
    for our_rec, their_rec in zip(ours, theirs, strict=True):
        for a, b, step in zip(our_rec, their_rec, steps, strict=True):
            if step is None:
                np.testing.assert_allclose(a, b.reshape(a.shape), rtol=1e-4, atol=1e-5)
            else:
                assert np.max(np.abs(a.astype(np.float64) - b.reshape(a.shape))) <= step * 1.001


def _quant_step(value) -> float | None:
    """The scale of the int8 tensor a DEQUANTIZE output comes from (None for float computations)."""
    node = value.producer
    if node is None or node.op != "DEQUANTIZE" or node.inputs[0].type.quant is None:
        return None
    return float(node.inputs[0].type.quant.scale[0])


HOSTILE = 'x */ int evil; /* \n #include <stdlib.h> // "q" \\ ??/ é \u202e'


def _hostile_model(path: Path) -> None:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "w" + HOSTILE)
    b = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b */ exit(1); /*")
    nodes = [
        helper.make_node("Gemm", [HOSTILE, w.name, b.name], ["mid ??= #define X"], name="gemm" + HOSTILE,
                         transB=1, doc_string=HOSTILE),
        helper.make_node("Relu", ["mid ??= #define X"], ["*/ exit(1); /*"], name="relu\\\nsplice"),
    ]
    graph = helper.make_graph(nodes, "graph" + HOSTILE,
                              [helper.make_tensor_value_info(HOSTILE, TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("*/ exit(1); /*", TensorProto.FLOAT, [1, 3])],
                              initializer=[w, b], doc_string=HOSTILE)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name=HOSTILE,
                              doc_string=HOSTILE)
    helper.set_model_props(model, {"author": HOSTILE})
    model.ir_version = 8
    onnx.save(model, str(path))


def test_hostile_onnx_names_cannot_inject_code(tmp_path):
    path = tmp_path / "hostile.onnx"
    _hostile_model(path)
    result = compile_model(path)
    assert_no_injected_code(result.files, ("evil", "exit(1)", "stdlib", "#define X"))
    for name in result.files:  # file names come from --name / the file stem, never from the model
        assert "/" not in name.replace("nn2c_kernels/", "") and ".." not in name, name
    out = result.write(tmp_path / "out")
    exe = build(out, tmp_path / "runner", extra_flags=["-Wall", "-Wextra", "-Werror"])
    x = np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 4)
    ours = run(exe, [[x]], result.graph.inputs, result.graph.outputs)
    theirs = run_onnxruntime(path, result.graph, [[x]])
    np.testing.assert_allclose(ours[0][0], theirs[0][0].reshape(ours[0][0].shape), rtol=1e-5, atol=1e-6)
