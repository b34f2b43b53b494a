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
from nn2c.frontends import tflite_while
from nn2c.ir import Graph
from nn2c.verify.build import build, run
from nn2c.verify.compare import verify_model
from nn2c.verify.inputs import random_input
from tests.c_safety import extreme_records
from tests.keras_zoo import tf_build
from tests.oracle_check import assert_matches_tflm, assert_records_match, tflm_with_reset
from tests.test_op_state import _serialize, _Subgraph

STEPS, FEATURES, UNITS = 5, 3, 4


def _quant(dtype: str, scale: float, zero_point: int) -> dict[str, Any]:
    return {"scale": scale, "zero_point": zero_point} if dtype == "int8" else {}


def _loop_values(sub: _Subgraph, dtype: str, length_input: bool = False) -> list[int]:
    state_q = _quant(dtype, 1 / 128, 0)  # TANH's int8 output quantization
    values = [sub.tensor("int32", (1,), name="i"), sub.tensor(dtype, (1, UNITS), name="h", **state_q),
              sub.tensor(dtype, (STEPS, 1, FEATURES), name="x", **_quant(dtype, 0.02, 3)),
              sub.tensor(dtype, (STEPS, UNITS), name="out", **state_q)]
    return [*values, sub.tensor("int32", (1,), name="n")] if length_input else values


def _rnn_model(dtype: str, start: int = 0, length_input: bool = False) -> bytes:
    """`length_input`: a model input n also bounds the loop (i < STEPS and i < n): the number of
    iterations is run-time data."""
    rng = np.random.default_rng(7)
    cond = _Subgraph()
    cond.inputs = _loop_values(cond, dtype, length_input)
    limit = cond.tensor("int32", (1,), data=np.array([STEPS]), name="limit")
    flag = cond.tensor("bool", (1,), name="flag")
    cond.op("LESS", [cond.inputs[0], limit], [flag])
    if length_input:
        within, both = cond.tensor("bool", (1,), name="within"), cond.tensor("bool", (1,), name="both")
        cond.op("LESS", [cond.inputs[0], cond.inputs[4]], [within])
        cond.op("LOGICAL_AND", [flag, within], [both])
        flag = both
    cond.outputs = [flag]

    body = _Subgraph()
    body.inputs = _loop_values(body, dtype, length_input)
    i, h, x, out = body.inputs[:4]
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
    body.outputs = [i_next, h_next, x, out_next, *body.inputs[4:]]

    main = _Subgraph()
    counter = main.tensor("int32", (1,), data=np.array([start]), name="start")
    h0 = main.tensor(dtype, (1, UNITS), name="h0", **state_q)
    seq = main.tensor(dtype, (STEPS, 1, FEATURES), name="sequence", **x_q)
    out0 = main.tensor(dtype, (STEPS, UNITS), data=np.zeros((STEPS, UNITS)), name="out0", **state_q)
    results = _loop_values(main, dtype, length_input)
    length = [main.tensor("int32", (1,), name="length")] if length_input else []
    main.op("WHILE", [counter, h0, seq, out0, *length], results, {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    # with no iteration the outputs are the loop's initial values: the constant out0 cannot be a model output
    main.inputs, main.outputs = [seq, h0, *length], [results[1], results[2] if start >= STEPS else results[3]]
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


def _graph_of(model: bytes, tmp_path: Path) -> Graph:
    """The model as nn2c imports it."""
    path = tmp_path / "imported.tflite"
    path.write_bytes(model)
    return load_model(path)


def _run_against_tflm(model: bytes, tmp_path: Path, records: list[list[np.ndarray]], sanitize: bool = False
                      ) -> list[list[np.ndarray]]:
    """Compile, build (optionally with ASan/UBSan), run the records in sequence; assert TFLM's outputs."""
    path = tmp_path / "loop.tflite"
    path.write_bytes(model)
    result = compile_model(path)
    flags = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"] if sanitize else None
    exe = build(result.write(tmp_path / "out"), tmp_path / "runner", opt="-O1" if sanitize else "-O2",
                extra_flags=flags)
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    assert_records_match(ours, tflm_with_reset(model, records, len(result.graph.outputs), reset_at=-1))
    return ours


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_runtime_trip_count_matches_tflm(tmp_path, dtype):
    """The loop runs min(n, STEPS) times for a model input n: one WHILE node, compiled once, looping in C."""
    model = _rnn_model(dtype, length_input=True)
    graph = _graph_of(model, tmp_path)
    assert [n.op for n in graph.nodes] == ["WHILE"]
    body = graph.nodes[0].attrs["body"]
    assert [n.op for n in body.nodes].count("FULLY_CONNECTED") == 2  # one copy of the body, not STEPS
    rng = np.random.default_rng(1)
    lengths = [0, 1, 2, 3, STEPS, STEPS + 3, -7, 2**31 - 1]
    sequence_and_state = [random_input(v, rng) for v in graph.inputs[:2]]  # one input for every length
    records = [[*sequence_and_state, np.array([n], np.int32)] for n in lengths]
    ours = _run_against_tflm(model, tmp_path, records)
    sequences = [rec[1].tobytes() for rec in ours]
    # on one input, each length up to STEPS gives its own sequence; longer runs stop at STEPS, negative at 0
    assert len(set(sequences[:5])) == 5
    assert sequences[5] == sequences[7] == sequences[4] and sequences[6] == sequences[0]


def _converging_model(dtype: str) -> bytes:
    """x <- 0.75 x while max(x) > 0.5 (at most 16 times), counting the iterations in k: how often the
    loop runs depends on the input's values."""
    q = _quant(dtype, 0.05, 0)

    def loop_values(sub: _Subgraph) -> list[int]:
        return [sub.tensor(dtype, (1, 8), name="x", **q), sub.tensor("int32", (1,), name="k")]

    def const(sub: _Subgraph, real: float, name: str, scale: float = 0.05) -> int:
        if dtype == "int8":
            return sub.tensor("int8", (1,), data=np.array([round(real / scale)]), name=name, scale=scale, zero_point=0)
        return sub.tensor("float32", (1,), data=np.array([real]), name=name)

    cond = _Subgraph()
    x, k = cond.inputs = loop_values(cond)
    peak = cond.tensor(dtype, (1,), name="peak", **q)
    cond.op("REDUCE_MAX", [x, cond.tensor("int32", (1,), data=np.array([1]), name="axis")], [peak],
            {"keep_dims": False})
    big, few, go = (cond.tensor("bool", (1,), name=n) for n in ("big", "few", "go"))
    cond.op("GREATER", [peak, const(cond, 0.5, "threshold")], [big])
    cond.op("LESS", [k, cond.tensor("int32", (1,), data=np.array([16]), name="most")], [few])
    cond.op("LOGICAL_AND", [big, few], [go])
    cond.outputs = [go]
    body = _Subgraph()
    x, k = body.inputs = loop_values(body)
    x_next, k_next = body.tensor(dtype, (1, 8), name="x_next", **q), body.tensor("int32", (1,), name="k_next")
    body.op("MUL", [x, const(body, 0.75, "factor", scale=0.01)], [x_next], {"fused_activation_function": "NONE"})
    body.op("ADD", [k, body.tensor("int32", (1,), data=np.array([1]), name="one")], [k_next],
            {"fused_activation_function": "NONE"})
    body.outputs = [x_next, k_next]
    main = _Subgraph()
    x0 = main.tensor(dtype, (1, 8), name="x0", **q)
    results = loop_values(main)
    main.op("WHILE", [x0, main.tensor("int32", (1,), data=np.array([0]), name="k0")], results,
            {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    main.inputs, main.outputs = [x0], results
    return _serialize([main, cond, body])


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_loop_until_converged_matches_tflm(tmp_path, dtype):
    model = _converging_model(dtype)
    graph = _graph_of(model, tmp_path)
    records = [[random_input(graph.inputs[0], np.random.default_rng(seed))] for seed in range(6)]
    ours = _run_against_tflm(model, tmp_path, records)
    counts = {int(rec[1][0]) for rec in ours}
    assert len(counts) > 1, counts  # the inputs ran the loop different numbers of times


def test_runtime_loop_sanitizers(tmp_path):
    """ASan/UBSan on extreme inputs: lengths INT32_MIN / INT32_MAX, every other input at its extreme."""
    model = _rnn_model("int8", length_input=True)
    _run_against_tflm(model, tmp_path, extreme_records(_graph_of(model, tmp_path)), sanitize=True)


def test_too_many_iterations_become_a_loop(tmp_path, monkeypatch):
    """Beyond MAX_ITERATIONS copies, a loop of known length is compiled like a run-time one: one body."""
    monkeypatch.setattr(tflite_while, "MAX_ITERATIONS", 3)
    path = tmp_path / "long.tflite"
    path.write_bytes(_rnn_model("float32"))
    graph = load_model(path)
    assert [n.op for n in graph.nodes] == ["WHILE"]
    assert_matches_tflm(path, tmp_path, records=2, name="while_long")


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


def test_scalar_loop_on_runtime_data_matches_tflm(tmp_path):
    """while x < 0: x = x + 1, on a model input: from none to four iterations."""
    cond_sub, body = _Subgraph(), _Subgraph()
    c_in = cond_sub.tensor("float32", (1,), name="x")
    flag = cond_sub.tensor("bool", (1,), name="flag")
    zero = cond_sub.tensor("float32", (1,), data=np.zeros(1), name="zero")
    cond_sub.op("LESS", [c_in, zero], [flag])
    cond_sub.inputs, cond_sub.outputs = [c_in], [flag]
    b_in = body.tensor("float32", (1,), name="x")
    one = body.tensor("float32", (1,), data=np.ones(1), name="one")
    b_out = body.tensor("float32", (1,), name="y")
    body.op("ADD", [b_in, one], [b_out], {"fused_activation_function": "NONE"})
    body.inputs, body.outputs = [b_in], [b_out]
    main = _Subgraph()
    x, y = main.tensor("float32", (1,), name="x"), main.tensor("float32", (1,), name="y")
    main.op("WHILE", [x], [y], {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    main.inputs, main.outputs = [x], [y]
    records = [[np.array([x], np.float32)] for x in (-3.5, -0.25, 0.0, 2.0, -1.0)]
    ours = _run_against_tflm(_serialize([main, cond_sub, body]), tmp_path, records)
    assert [float(rec[0][0]) for rec in ours] == [0.5, 0.75, 0.0, 2.0, 0.0]


@pytest.fixture(scope="module")
def converted_loops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/while_tflite_build.py run by tensorflow's python: tf.while_loop exports, float and int8."""
    return tf_build(tmp_path_factory, "while_tflite_build.py")


@pytest.mark.parametrize("kind", ["float", "int8"])
def test_converter_loop_of_requested_length_matches_tflm(converted_loops, kind, tmp_path):
    """The converter's WHILE for `for i < min(n, 12): h = tanh(h W + b)`: lengths 0 to 13 and extremes."""
    model = (converted_loops / f"steps_{kind}.tflite").read_bytes()
    graph = _graph_of(model, tmp_path)
    assert "WHILE" in [n.op for n in graph.nodes]
    rng = np.random.default_rng(5)
    lengths = [*range(14), -(2**31), 2**31 - 1]
    start = random_input(graph.inputs[0], rng)  # one input for every length
    records = [[start, np.array([n], np.int32)] for n in lengths]
    states = [rec[0].tobytes() for rec in _run_against_tflm(model, tmp_path, records)]
    # each length up to 12 gives its own state; 13 and INT32_MAX stop at 12, INT32_MIN runs none
    assert len(set(states[:13])) == 13
    assert states[13] == states[15] == states[12] and states[14] == states[0]


@pytest.mark.parametrize("kind", ["float", "int8"])
def test_converter_loop_until_converged_matches_tflm(converted_loops, kind, tmp_path):
    """The converter's WHILE for `while max|x| > 0.25: x = x / 2 + c`, with the iteration count as an output."""
    model = (converted_loops / f"converge_{kind}.tflite").read_bytes()
    graph = _graph_of(model, tmp_path)
    records = [[random_input(graph.inputs[0], np.random.default_rng(seed))] for seed in range(8)]
    ours = _run_against_tflm(model, tmp_path, records)
    assert len({int(rec[1][0]) for rec in ours}) > 1  # inputs of different sizes converge in different counts
