"""SVDF against TFLite Micro: single-op models with random weights, several invocations in sequence
(the activation state carries over between them), int8 with int16 or int8 state, and float32."""

from __future__ import annotations

import numpy as np
import pytest
import tflite

from nn2c.api import CompileOptions, compile_model, load_model
from nn2c.errors import UnsupportedOpError
from nn2c.ir import Graph, Node, Value
from nn2c.verify.compare import verify_model
from tests.conftest import model_path
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder, _snake, options_table_name


def _int8_svdf(seed: int, batches: int, input_size: int, units: int, rank: int, memory: int, state_dtype: str,
               input_zp: int, output_zp: int, state_zp: int, activation: str) -> bytes:
    rng = np.random.default_rng(seed)
    filters = units * rank
    in_scale = float(rng.uniform(0.01, 0.1))
    wf_scale = float(rng.uniform(0.002, 0.02))
    if state_dtype == "int16":
        wt_range, state_target = 2000, 3000.0
    else:
        wt_range, state_target = 127, 30.0
    wt_scale = float(rng.uniform(0.001, 0.01))
    # a feature dot product of random int8 data has a spread of about sqrt(n) * 74 * 73
    state_scale = in_scale * wf_scale * np.sqrt(input_size) * 5400.0 / state_target * float(rng.uniform(0.5, 2))
    acc_spread = np.sqrt(rank * memory) * (wt_range / 1.7) * state_target * state_scale * wt_scale
    out_scale = float(acc_spread / 40.0 * rng.uniform(0.5, 2))
    b = ModelBuilder()
    x = b.tensor("int8", (batches, input_size), scale=in_scale, zero_point=input_zp)
    wf = b.tensor("int8", (filters, input_size), scale=wf_scale, data=rng.integers(-127, 128, (filters, input_size)))
    wt = b.tensor(state_dtype, (filters, memory), scale=wt_scale,
                  data=rng.integers(-wt_range, wt_range + 1, (filters, memory)))
    bias_scale = float(np.float32(state_scale) * np.float32(wt_scale))
    bias_range = int(acc_spread / bias_scale / 4) + 1
    bias = b.tensor("int32", (units,), scale=bias_scale, data=rng.integers(-bias_range, bias_range + 1, units))
    state = b.tensor(state_dtype, (batches, filters * memory), scale=state_scale, zero_point=state_zp,
                     variable=True)
    y = b.tensor("int8", (batches, units), scale=out_scale, zero_point=output_zp)
    b.op("SVDF", [x, wf, wt, bias, state], [y], {"rank": rank, "fused_activation_function": activation})
    return b.build([x], [y])


@pytest.mark.parametrize(
    ("batches", "input_size", "units", "rank", "memory", "input_zp", "output_zp", "activation"),
    [
        (1, 16, 8, 1, 4, -128, -128, "RELU"),
        (1, 24, 4, 2, 3, 5, 10, "NONE"),
        (2, 10, 6, 1, 8, -3, 0, "RELU"),
        (3, 7, 3, 3, 2, 0, -20, "NONE"),
        (1, 5, 4, 1, 1, 17, -128, "RELU"),
    ],
)
def test_svdf_int8_int16_state(tmp_path, batches, input_size, units, rank, memory, input_zp, output_zp, activation):
    model = _int8_svdf(batches * 31 + rank, batches, input_size, units, rank, memory, "int16",
                       input_zp, output_zp, 0, activation)
    assert_matches_tflm(model, tmp_path, records=6, seed=batches)


@pytest.mark.parametrize(
    ("batches", "input_size", "units", "rank", "memory", "state_zp", "output_zp"),
    [
        (1, 16, 8, 1, 4, -50, -128),
        (2, 12, 4, 2, 5, 13, 3),
        (1, 9, 5, 1, 10, 0, -7),
        (2, 6, 2, 3, 3, 100, 0),
    ],
)
def test_svdf_int8_int8_state(tmp_path, batches, input_size, units, rank, memory, state_zp, output_zp):
    model = _int8_svdf(batches * 7 + memory, batches, input_size, units, rank, memory, "int8",
                       -11, output_zp, state_zp, "RELU")
    assert_matches_tflm(model, tmp_path, records=6, seed=memory)


@pytest.mark.parametrize("target", ["host", "cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("state_dtype", ["int16", "int8"])
def test_svdf_at_size_applies_the_input_offset_at_run_time(tmp_path, target, state_dtype):
    """--optimize size: the feature sums take the input's zero point at run time (nn2c_sums_s8_offset) instead
    of a folded constant per filter, so the weights are exactly the model's tensors; bit-exact with TFLM on
    the host, for each target's lowering (its int8 row layout: 4 rows interleaved on the Arm DSP, read by the
    host's portable reader here; the QEMU runs are tests/test_cortexm.py's), with 10 filters (a partial group
    of 4) and 13 inputs (a tail of 1 after whole words)."""
    batches, input_size, units, rank, memory = 2, 13, 5, 2, 4
    model = _int8_svdf(41, batches, input_size, units, rank, memory, state_dtype, -37, 6, 0, "NONE")
    path = tmp_path / "svdf.tflite"
    path.write_bytes(model)
    options = CompileOptions(target=target, optimize="size")
    compiled = compile_model(path, options)
    filters, element = units * rank, 2 if state_dtype == "int16" else 1
    assert compiled.code.weight_bytes == filters * input_size + filters * memory * element + 4 * units
    assert "feature_offsets = NULL" in compiled.files["svdf.c"]
    report = verify_model(path, count=5, seed=3, references=("tflm",), workdir=tmp_path / "c", options=options)
    assert report.passed() and all(c.max_abs_diff == 0 for c in report.comparisons), report.comparisons


def _float_svdf(seed: int, batches: int, input_size: int, units: int, rank: int, memory: int,
                activation: str) -> bytes:
    rng = np.random.default_rng(seed)
    filters = units * rank
    b = ModelBuilder()
    x = b.tensor("float32", (batches, input_size))
    wf = b.tensor("float32", (filters, input_size), data=rng.standard_normal((filters, input_size)) * 0.3)
    wt = b.tensor("float32", (filters, memory), data=rng.standard_normal((filters, memory)) * 0.3)
    bias = b.tensor("float32", (units,), data=rng.standard_normal(units) * 0.1)
    state = b.tensor("float32", (batches, filters * memory), variable=True)
    y = b.tensor("float32", (batches, units))
    b.op("SVDF", [x, wf, wt, bias, state], [y], {"rank": rank, "fused_activation_function": activation})
    return b.build([x], [y])


@pytest.mark.parametrize(
    ("batches", "input_size", "units", "rank", "memory", "activation"),
    [
        (1, 16, 8, 1, 4, "NONE"),
        (2, 10, 4, 2, 3, "RELU"),
        (1, 8, 6, 3, 5, "TANH"),
        (3, 5, 3, 1, 2, "SIGN_BIT"),
        (1, 12, 4, 2, 6, "RELU6"),
        (2, 4, 2, 1, 1, "RELU_N1_TO_1"),
    ],
)
def test_svdf_float(tmp_path, batches, input_size, units, rank, memory, activation):
    model = _float_svdf(input_size + memory, batches, input_size, units, rank, memory, activation)
    assert_matches_tflm(model, tmp_path, records=6, seed=rank)


def test_svdf_mixed_state_and_time_weight_types_are_unsupported(tmp_path):
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.tensor("int8", (1, 4), scale=0.05)
    wf = b.tensor("int8", (4, 4), scale=0.01, data=rng.integers(-127, 128, (4, 4)))
    wt = b.tensor("int8", (4, 2), scale=0.01, data=rng.integers(-127, 128, (4, 2)))
    bias = b.tensor("int32", (4,), scale=1e-4, data=np.zeros(4))
    state = b.tensor("int16", (1, 8), scale=0.01, variable=True)
    y = b.tensor("int8", (1, 4), scale=0.1)
    b.op("SVDF", [x, wf, wt, bias, state], [y], {"rank": 1})
    path = tmp_path / "mixed.tflite"
    path.write_bytes(b.build([x], [y]))
    with pytest.raises(UnsupportedOpError, match="same type"):
        compile_model(path)


def submodel(graph: Graph, nodes: list[Node]) -> bytes:
    """A .tflite model of some consecutive nodes of a real model, with their real weights and state.

    Its input is the first node's first input and its output the last node's first output.
    """
    b = ModelBuilder()
    index: dict[int, int] = {}

    def tensor(value: Value | None) -> int:
        if value is None:
            return -1
        if id(value) not in index:
            quant = value.type.quant
            data = value.data if value.is_constant else None
            index[id(value)] = b.tensor(
                value.type.dtype, value.type.shape, scale=list(quant.scale) if quant else None,
                zero_point=list(quant.zero_point) if quant else None, axis=quant.axis if quant else 0,
                data=data, variable=value.is_variable, name=value.name)
        return index[id(value)]

    for node in nodes:
        table = options_table_name(node.op)
        fields = {_snake(n[len(table) + 3:]) for n in dir(tflite) if table and n.startswith(table + "Add")}
        options = {k: v for k, v in node.attrs.items() if k in fields}
        b.op(node.op, [tensor(v) for v in node.inputs], [tensor(v) for v in node.outputs], options,
             version=int(node.attrs.get("version", 1)))
    return b.build([tensor(nodes[0].inputs[0])], [tensor(nodes[-1].outputs[0])])


@pytest.mark.parametrize("name", ["keyword_scrambled.tflite", "keyword_scrambled_8bit.tflite"])
def test_keyword_model_svdf_stack_matches_tflm(tmp_path, name):
    """The keyword models' SVDF / FULLY_CONNECTED stack (all but the QUANTIZE / SOFTMAX ends), real weights."""
    graph = load_model(model_path(f"tflite_micro/{name}"))
    body = [n for n in graph.nodes if n.op in ("SVDF", "FULLY_CONNECTED")]
    assert sum(n.op == "SVDF" for n in body) == 7
    assert_matches_tflm(submodel(graph, body), tmp_path, records=8, seed=3)
