"""WHILE, unrolled at import (frontends/tflite_while.py), against TFLite Micro.

The model is the loop a converter writes for an RNN layer without a fused kernel (Keras GRU /
SimpleRNN, tf.while_loop over a sequence): loop values (counter, state, sequence, outputs so far),
a condition `counter < T`, and a body that gathers step `counter` of the sequence, updates the state
with two FULLY_CONNECTEDs and writes it into the outputs with DYNAMIC_UPDATE_SLICE at an index
concatenated from the counter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nn2c.api import compile_model, load_model
from nn2c.errors import UnsupportedOpError
from nn2c.frontends import tflite_while
from nn2c.verify.build import build, run
from nn2c.verify.compare import verify_model
from tests.c_safety import extreme_records
from tests.oracle_check import assert_matches_tflm, assert_records_match, tflm_with_reset
from tests.test_op_state import _serialize, _Subgraph

STEPS, FEATURES, UNITS = 5, 3, 4


def _quant(dtype: str, scale: float, zero_point: int) -> dict[str, Any]:
    return {"scale": scale, "zero_point": zero_point} if dtype == "int8" else {}


def _loop_values(sub: _Subgraph, dtype: str) -> list[int]:
    state_q = _quant(dtype, 1 / 128, 0)  # TANH's int8 output quantization
    return [sub.tensor("int32", (1,), name="i"), sub.tensor(dtype, (1, UNITS), name="h", **state_q),
            sub.tensor(dtype, (STEPS, 1, FEATURES), name="x", **_quant(dtype, 0.02, 3)),
            sub.tensor(dtype, (STEPS, UNITS), name="out", **state_q)]


def _rnn_model(dtype: str, start: int = 0, limit_from_data: bool = False) -> bytes:
    rng = np.random.default_rng(7)
    cond = _Subgraph()
    cond.inputs = _loop_values(cond, dtype)
    limit = cond.tensor("int32", (1,), data=np.array([STEPS]), name="limit")
    if limit_from_data:  # the loop bound read from the state: not known at compile time
        limit = cond.tensor("int32", (1,), name="bound")
        cond.op("CAST", [cond.inputs[1]], [limit])
    flag = cond.tensor("bool", (1,), name="flag")
    cond.op("LESS", [cond.inputs[0], limit], [flag])
    cond.outputs = [flag]

    body = _Subgraph()
    i, h, x, out = body.inputs = _loop_values(body, dtype)
    one = body.tensor("int32", (1,), data=np.array([1]), name="one")
    zero = body.tensor("int32", (1,), data=np.array([0]), name="zero")
    i_next = body.tensor("int32", (1,), name="i_next")
    body.op("ADD", [i, one], [i_next], {"fused_activation_function": "NONE"})
    x_q, fc_q, sum_q, state_q = (_quant(dtype, 0.02, 3), _quant(dtype, 0.03, -2), _quant(dtype, 0.04, 1),
                                 _quant(dtype, 1 / 128, 0))
    x_t3 = body.tensor(dtype, (1, 1, FEATURES), name="x_t3", **x_q)
    body.op("GATHER", [x, i], [x_t3], {"axis": 0, "batch_dims": 0})
    x_t = body.tensor(dtype, (1, FEATURES), name="x_t", **x_q)
    shape = body.tensor("int32", (2,), data=np.array([1, FEATURES]), name="shape")
    body.op("RESHAPE", [x_t3, shape], [x_t], {"new_shape": [1, FEATURES]})
    projected = []
    for name, source, source_scale, cols in (("W", x_t, 0.02, FEATURES), ("U", h, 1 / 128, UNITS)):
        if dtype == "int8":
            w = body.tensor("int8", (UNITS, cols), data=rng.integers(-127, 128, (UNITS, cols)), name=name,
                            scale=0.01, zero_point=0)
            b = body.tensor("int32", (UNITS,), data=rng.integers(-2000, 2000, UNITS), name=f"{name}_bias",
                            scale=source_scale * 0.01, zero_point=0)
        else:
            w = body.tensor("float32", (UNITS, cols), data=rng.uniform(-1, 1, (UNITS, cols)), name=name)
            b = body.tensor("float32", (UNITS,), data=rng.uniform(-0.5, 0.5, UNITS), name=f"{name}_bias")
        y = body.tensor(dtype, (1, UNITS), name=f"{name}_y", **fc_q)
        body.op("FULLY_CONNECTED", [source, w, b], [y], {"fused_activation_function": "NONE"})
        projected.append(y)
    total = body.tensor(dtype, (1, UNITS), name="sum", **sum_q)
    body.op("ADD", projected, [total], {"fused_activation_function": "NONE"})
    h_next = body.tensor(dtype, (1, UNITS), name="h_next", **state_q)
    body.op("TANH", [total], [h_next])
    index = body.tensor("int32", (2,), name="index")
    body.op("CONCATENATION", [i, zero], [index], {"axis": 0, "fused_activation_function": "NONE"})
    out_next = body.tensor(dtype, (STEPS, UNITS), name="out_next", **state_q)
    body.op("DYNAMIC_UPDATE_SLICE", [out, h_next, index], [out_next])
    body.outputs = [i_next, h_next, x, out_next]

    main = _Subgraph()
    counter = main.tensor("int32", (1,), data=np.array([start]), name="start")
    h0 = main.tensor(dtype, (1, UNITS), name="h0", **state_q)
    seq = main.tensor(dtype, (STEPS, 1, FEATURES), name="sequence", **x_q)
    out0 = main.tensor(dtype, (STEPS, UNITS), data=np.zeros((STEPS, UNITS)), name="out0", **state_q)
    results = _loop_values(main, dtype)
    main.op("WHILE", [counter, h0, seq, out0], results, {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    # with no iteration the outputs are the loop's initial values: the constant out0 cannot be a model output
    main.inputs, main.outputs = [seq, h0], [results[1], results[2] if start >= STEPS else results[3]]
    return _serialize([main, cond, body])


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_rnn_loop_matches_tflm(tmp_path, dtype):
    assert_matches_tflm(_rnn_model(dtype), tmp_path, records=4, name=f"while_{dtype}")


def test_unrolled_graph_shares_weights_and_folds_counters(tmp_path):
    path = tmp_path / "rnn.tflite"
    path.write_bytes(_rnn_model("int8"))
    graph = load_model(path)
    ops = [n.op for n in graph.nodes]
    assert ops.count("FULLY_CONNECTED") == 2 * STEPS and ops.count("TANH") == STEPS
    # the counter arithmetic, the loop condition and the slice indices were evaluated at import
    assert "LESS" not in ops and "CONCATENATION" not in ops
    assert not any(n.op == "ADD" and n.outputs[0].type.dtype == "int32" for n in graph.nodes)
    weights = {id(n.inputs[1]) for n in graph.nodes if n.op == "FULLY_CONNECTED"}
    assert len(weights) == 2  # W and U once each in flash, whatever the number of steps
    names = [v.name for v in graph.values()]
    assert len(names) == len(set(names))


def test_zero_iterations_copy_the_inputs(tmp_path):
    """A condition false from the start: TFLM copies the loop values (here two model inputs) to the outputs."""
    assert_matches_tflm(_rnn_model("float32", start=STEPS), tmp_path, records=2, name="while_zero")


def test_sanitizers(tmp_path):
    path = tmp_path / "rnn.tflite"
    path.write_bytes(_rnn_model("int8"))
    result = compile_model(path)
    exe = build(result.write(tmp_path / "out"), tmp_path / "asan_runner", opt="-O1",
                extra_flags=["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
    records = extreme_records(result.graph)
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    assert_records_match(ours, tflm_with_reset(path.read_bytes(), records, 2, reset_at=-1))


def test_runtime_condition_is_refused(tmp_path):
    path = tmp_path / "dynamic.tflite"
    path.write_bytes(_rnn_model("float32", limit_from_data=True))
    with pytest.raises(UnsupportedOpError, match=r"op #0 WHILE: its condition \(subgraph 1\) depends on run-time"):
        load_model(path)


def test_too_many_iterations_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(tflite_while, "MAX_ITERATIONS", 3)
    path = tmp_path / "long.tflite"
    path.write_bytes(_rnn_model("float32"))
    with pytest.raises(UnsupportedOpError, match="runs more than 3 iterations"):
        load_model(path)


KERAS_RNN = Path(__file__).parent / "assets" / "keras_rnn"


@pytest.mark.parametrize("model", ["gru_float", "simplernn_float"])
def test_keras_rnn_exports_match_litert(tmp_path, model):
    """Keras GRU / SimpleRNN as the TFLite converter writes them (tests/assets/keras_rnn/make.py): two
    WHILE loops of 20 steps whose TensorList writes have placeholder shapes. TFLM gave no result on the
    GRU export (its invoke did not return within 300 s), so LiteRT is the reference."""
    report = verify_model(KERAS_RNN / f"{model}.tflite", count=2, references=("litert",), workdir=tmp_path)
    assert not report.skipped, report.skipped
    bad = [c for c in report.comparisons if c.mismatches]
    assert report.comparisons and not bad, [(c.output, c.mismatches, c.max_abs_diff) for c in bad]


def test_if_inside_the_body_matches_tflm(tmp_path):
    """An IF in the loop body (inlined once per iteration, its tensor names repeating from copy to copy)
    on a run-time flag: three iterations of x <- x + 1 or x - 1."""
    def loop_values(sub: _Subgraph) -> list[int]:
        return [sub.tensor("int32", (1,), name="i"), sub.tensor("float32", (1, 4), name="x"),
                sub.tensor("bool", (1,), name="flag")]

    cond = _Subgraph()
    cond.inputs = loop_values(cond)
    flag = cond.tensor("bool", (1,), name="go")
    cond.op("LESS", [cond.inputs[0], cond.tensor("int32", (1,), data=np.array([3]), name="n")], [flag])
    cond.outputs = [flag]
    body = _Subgraph()
    i, x, run_flag = body.inputs = loop_values(body)
    i_next, x_next = body.tensor("int32", (1,), name="i_next"), body.tensor("float32", (1, 4), name="x_next")
    body.op("ADD", [i, body.tensor("int32", (1,), data=np.array([1]), name="one")], [i_next],
            {"fused_activation_function": "NONE"})
    body.op("IF", [run_flag, x], [x_next], {"then_subgraph_index": 3, "else_subgraph_index": 4})
    body.outputs = [i_next, x_next, run_flag]
    branches = []
    for op in ("ADD", "SUB"):
        branch = _Subgraph()
        a, y = branch.tensor("float32", (1, 4), name="a"), branch.tensor("float32", (1, 4), name="y")
        branch.op(op, [a, branch.tensor("float32", (1, 4), data=np.ones((1, 4)), name="c")], [y],
                  {"fused_activation_function": "NONE"})
        branch.inputs, branch.outputs = [a], [y]
        branches.append(branch)
    main = _Subgraph()
    x0, go = main.tensor("float32", (1, 4), name="x0"), main.tensor("bool", (1,), name="up")
    results = loop_values(main)
    main.op("WHILE", [main.tensor("int32", (1,), data=np.array([0]), name="start"), x0, go], results,
            {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    main.inputs, main.outputs = [x0, go], [results[1]]
    model = _serialize([main, cond, body, *branches])
    assert_matches_tflm(model, tmp_path, records=4, name="while_if")
    path = tmp_path / "while_if.tflite"
    names = [v.name for v in load_model(path).values()]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
