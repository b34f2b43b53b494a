"""ONNX operators added for the backend conformance suite (issue 20), beyond the suite's own cases.

Each test builds one model of many variants, compiles it once, builds the C with AddressSanitizer
and UndefinedBehaviorSanitizer, and compares every output with onnxruntime on chosen records:
- integer Add / Sub / Mul / Div without quantization (int8, uint8, int16, int64; broadcasting;
  wrapping at the type's limits, truncating division, MIN / -1), Max / Min of uint8 and casts to
  and from uint8 (in range: onnxruntime's out-of-range float casts are undefined): exact;
- HannWindow / HammingWindow / BlackmanWindow (periodic and symmetric) and MelWeightMatrix with
  run-time operands, a Range of a run-time limit whose length the declared output fixes, DFT (real / complex, forward / inverse, one-sided, inverse real, zero-padded
  and truncated lengths, other axes), LRN (odd sizes, up to wider than the channels; onnxruntime
  runs 4-D odd sizes only), CumProd (constant and
  run-time axes, exclusive, reverse, int32 wrapping), Det (batches, singular): floats within the
  suite's relative tolerance (1e-3); the absolute tolerance is onnxruntime's own float32 rounding
  (its DFT is float32 while nn2c's kernel sums in double);
- LinearAttention (every update rule, grouped and multi-query heads, per-head and per-key decay,
  scalar beta, with and without past state, an explicit scale) and CausalConvWithState (bias,
  past state, SiLU, kernel of one), DeformConv (groups, offset groups, strides, dilations, pads,
  mask and bias, offsets that leave the image), TfIdfVectorizer (TF / IDF / TFIDF, with and
  without weights, skips, unigrams to trigrams, a batch of rows);
- attributes out of their range: one NN2CError line naming the node, no traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="SKIPPED LOUDLY: the onnx package is not installed (pip install nn2c[test])")
ort = pytest.importorskip("onnxruntime", reason="SKIPPED LOUDLY: onnxruntime is not installed (pip install nn2c[test])")

from onnx import TensorProto, helper  # noqa: E402

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.errors import NN2CError  # noqa: E402
from nn2c.verify.build import build, run  # noqa: E402
from nn2c.verify.onnx_oracle import run_onnxruntime  # noqa: E402

SANITIZE = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
RTOL = 1e-3  # the backend suite's relative tolerance
INT_TYPES = {TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT16: np.int16,
             TensorProto.INT64: np.int64}


def _model(nodes: list[Any], inputs: list[tuple[str, int, list[int]]], outputs: list[tuple[str, int, list[int]]],
           opset: int, initializers: list[Any] | None = None) -> Any:
    graph = helper.make_graph(nodes, "more_ops", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], initializers or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _compile_and_compare(model: Any, tmp_path: Path, records: list[list[np.ndarray]], atol: float = 1e-6) -> None:
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    # many independent outputs: no memory-aware order search, row groups or exact planning (seconds
    # spent on what these tests do not check)
    result = compile_model(path, CompileOptions(name="model", planner="greedy", schedule="layer", reorder=False))
    result.write(tmp_path / "model", force=True)
    # -O1: the sanitized build in about half the time (the backend cases build these kernels at -O2)
    exe = build(tmp_path / "model", tmp_path / "runner", extra_flags=SANITIZE, opt="-O1")
    graph = result.graph
    ours = run(exe, records, graph.inputs, graph.outputs)
    theirs = run_onnxruntime(path, graph, records)
    names = [o.name for o in model.graph.output]
    for k, (got_record, want_record) in enumerate(zip(ours, theirs, strict=True)):
        for name, got, want in zip(names, got_record, want_record, strict=True):
            where = f"record {k}, output {name}"
            assert got.shape == want.shape, where
            if np.asarray(want).dtype.kind in "iub":
                assert got.dtype == want.dtype and np.array_equal(got, want), (where, got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=atol, equal_nan=True, err_msg=where)


# --- integer arithmetic ---------------------------------------------------------------------------
def _int_values(dtype: type, shape: tuple[int, ...], rng: np.random.Generator, nonzero: bool = False) -> np.ndarray:
    info = np.iinfo(dtype)
    special = [info.min, info.max, -1 if info.min < 0 else 1, 0, 1, info.min + 1, info.max - 1]
    values = rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), size=shape, endpoint=True).reshape(-1)
    count = min(len(special), values.size)
    values[:count] = special[:count]
    if nonzero:
        values[values == 0] = 3
        if dtype == np.int64:  # onnxruntime traps (SIGFPE) on INT64_MIN / -1; the narrow types promote
            values[values == -1] = -3
    return values.astype(dtype).reshape(shape)


def _divisor(dtype: np.dtype) -> int:
    return 1 if dtype.kind == "u" else (-3 if dtype == np.int64 else -1)


def test_integer_arithmetic_wraps_and_truncates_as_onnxruntime(tmp_path):
    nodes, inputs, outputs = [], [], []
    for elem, dtype in INT_TYPES.items():
        tag = np.dtype(dtype).name
        a, b, d = f"a_{tag}", f"b_{tag}", f"d_{tag}"
        inputs += [(a, elem, [2, 3, 4]), (b, elem, [3, 1]), (d, elem, [2, 3, 4])]
        for op, operands in (("Add", [a, b]), ("Sub", [b, a]), ("Mul", [a, b]), ("Mul", [a, a]), ("Div", [a, d]),
                             ("Div", [b, d])):
            name = f"{op.lower()}_{tag}_{len(nodes)}"
            nodes.append(helper.make_node(op, operands, [name]))
            outputs.append((name, elem, [2, 3, 4]))
    for op in ("Max", "Min"):
        nodes.append(helper.make_node(op, ["a_uint8", "b_uint8"], [f"{op.lower()}_u8"]))
        outputs.append((f"{op.lower()}_u8", TensorProto.UINT8, [2, 3, 4]))
    # casts to and from uint8 (DynamicQuantizeLinear's body): float saturates, integers wrap
    for source, elem, name in (("a_int8", TensorProto.UINT8, "s8_to_u8"), ("a_uint8", TensorProto.INT16, "u8_to_s16"),
                               ("a_uint8", TensorProto.FLOAT, "u8_to_f32"), ("f", TensorProto.UINT8, "f32_to_u8")):
        nodes.append(helper.make_node("Cast", [source], [name], to=elem))
        outputs.append((name, elem, [2, 3, 4]))
    inputs.append(("f", TensorProto.FLOAT, [2, 3, 4]))
    model = _model(nodes, inputs, outputs, opset=14)
    rng = np.random.default_rng(20)
    records = []
    for _ in range(2):
        record = []
        for elem in INT_TYPES.values():
            record += [_int_values(elem, (2, 3, 4), rng), _int_values(elem, (3, 1), rng),
                       _int_values(elem, (2, 3, 4), rng, nonzero=True)]
        record.append(np.clip(rng.standard_normal((2, 3, 4)) * 200.0, -0.5, 255.4).astype(np.float32))
        records.append(record)
    # MIN / -1 everywhere (wraps back to MIN; int64: MIN / -3, see above)
    records.append([np.full(np.shape(x), np.iinfo(x.dtype).min if k % 3 != 2 else _divisor(x.dtype), dtype=x.dtype)
                    for k, x in enumerate(records[0][:-1])] + [np.full((2, 3, 4), 255.0, dtype=np.float32)])
    _compile_and_compare(model, tmp_path, records)


# --- window functions and the mel weight matrix ------------------------------------------------------
def test_windows_and_mel_matrix_of_run_time_operands(tmp_path):
    nodes, outputs = [], []
    for op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        for size, length in (("n16", 16), ("n7", 7)):
            for periodic in (0, 1):
                name = f"{op}_{size}_{periodic}"
                nodes.append(helper.make_node(op, [size], [name], periodic=periodic))
                outputs.append((name, TensorProto.FLOAT, [length]))
        nodes.append(helper.make_node(op, ["n1"], [f"{op}_one"]))  # periodic window of one sample
        outputs.append((f"{op}_one", TensorProto.FLOAT, [1]))
    nodes.append(helper.make_node("MelWeightMatrix", ["bins", "dft", "rate", "lower", "upper"], ["mel"]))
    outputs.append(("mel", TensorProto.FLOAT, [33, 10]))
    # the window functions' bodies: a Range of a run-time limit, its length fixed by the declared output
    nodes += [helper.make_node("Cast", ["n7"], ["n7f"], to=TensorProto.FLOAT),
              helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])),
              helper.make_node("Constant", [], ["half"], value=helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])),
              helper.make_node("Range", ["zero", "n7f", "half"], ["ramp"]),
              helper.make_node("Cos", ["ramp"], ["cos_ramp"])]
    outputs.append(("cos_ramp", TensorProto.FLOAT, [14]))
    scalars = [("n16", TensorProto.INT32), ("n7", TensorProto.INT32), ("n1", TensorProto.INT32),
               ("bins", TensorProto.INT32), ("dft", TensorProto.INT32), ("rate", TensorProto.INT32),
               ("lower", TensorProto.FLOAT), ("upper", TensorProto.FLOAT)]
    model = _model(nodes, [(n, t, []) for n, t in scalars], outputs, opset=17)

    def record(rate: int, lower: float, upper: float) -> list[np.ndarray]:
        ints = [np.array(v, dtype=np.int32) for v in (16, 7, 1, 10, 64, rate)]
        return [*ints, np.array(lower, dtype=np.float32), np.array(upper, dtype=np.float32)]

    records = [record(16000, 20.0, 8000.0), record(8000, 0.0, 4000.0), record(44100, 300.0, 3000.0)]
    _compile_and_compare(model, tmp_path, records, atol=1e-6)


# --- DFT ------------------------------------------------------------------------------------------------
def test_dft_variants_match_onnxruntime(tmp_path):
    def const(name: str, value: int) -> Any:
        return helper.make_tensor(name, TensorProto.INT64, [], [value])

    initializers = [const("axis1", 1), const("axis2", 2), const("axis_neg", -3), const("len16", 16), const("len8", 8),
                    const("len9", 9)]
    variants = [  # (input, dft_length, axis, attrs, output shape)
        ("real", "", "axis1", {}, [2, 12, 3, 2]),
        ("real", "", "axis1", {"onesided": 1}, [2, 7, 3, 2]),
        ("real", "len16", "axis1", {"onesided": 1}, [2, 9, 3, 2]),  # zero-padded
        ("real", "len8", "axis1", {}, [2, 8, 3, 2]),  # truncated
        ("real", "", "axis2", {}, [2, 12, 3, 2]),
        ("real", "", "axis_neg", {}, [2, 12, 3, 2]),
        ("cplx", "", "axis1", {}, [1, 9, 2]),
        ("cplx", "", "axis1", {"inverse": 1}, [1, 9, 2]),
        ("cplx", "len16", "axis1", {"inverse": 1}, [1, 16, 2]),
        ("half", "", "axis1", {"inverse": 1, "onesided": 1}, [1, 8, 2, 1]),  # inverse real, even length
        ("half", "len9", "axis1", {"inverse": 1, "onesided": 1}, [1, 9, 2, 1]),  # odd length
    ]
    nodes, outputs = [], []
    for k, (x, length, axis, attrs, shape) in enumerate(variants):
        nodes.append(helper.make_node("DFT", [x, length, axis], [f"y{k}"], **attrs))
        outputs.append((f"y{k}", TensorProto.FLOAT, shape))
    inputs = [("real", TensorProto.FLOAT, [2, 12, 3, 1]), ("cplx", TensorProto.FLOAT, [1, 9, 2]),
              ("half", TensorProto.FLOAT, [1, 5, 2, 2])]
    model = _model(nodes, inputs, outputs, opset=20, initializers=initializers)
    rng = np.random.default_rng(5)
    records = [[rng.standard_normal(shape).astype(np.float32) for _, _, shape in inputs] for _ in range(2)]
    records.append([np.full(shape, 10.0, dtype=np.float32) for _, _, shape in inputs])  # exact zeros expected
    # onnxruntime's float32 FFT rounds to about 1e-7 of the inputs' sum; nn2c sums in double
    _compile_and_compare(model, tmp_path, records, atol=1e-4)


# --- LRN, CumProd, Det -----------------------------------------------------------------------------------
def test_lrn_cumprod_det_match_onnxruntime(tmp_path):
    nodes = [
        helper.make_node("LRN", ["x4"], ["lrn3"], size=3, alpha=1e-2, beta=0.75, bias=1.0),
        helper.make_node("LRN", ["x4"], ["lrn7"], size=7, alpha=0.5, beta=0.5, bias=2.0),  # wider than C
        helper.make_node("LRN", ["x4"], ["lrn1"], size=1),
        helper.make_node("CumProd", ["p", "axis_rt"], ["cp_rt"]),
        helper.make_node("CumProd", ["p", "axis_c"], ["cp_ex"], exclusive=1),
        helper.make_node("CumProd", ["p", "axis_c"], ["cp_rev"], reverse=1, exclusive=1),
        helper.make_node("CumProd", ["pi", "axis_rt"], ["cp_int"], reverse=1),
        helper.make_node("Det", ["m3"], ["det3"]),
        helper.make_node("Det", ["m4"], ["det4"]),
        helper.make_node("Det", ["m1"], ["det1"]),
    ]
    inputs = [("x4", TensorProto.FLOAT, [2, 6, 3, 3]), ("p", TensorProto.FLOAT, [3, 4]),
              ("pi", TensorProto.INT32, [3, 4]), ("axis_rt", TensorProto.INT32, []),
              ("m3", TensorProto.FLOAT, [3, 3]), ("m4", TensorProto.FLOAT, [2, 4, 4]), ("m1", TensorProto.FLOAT, [1, 1])]
    outputs = [("lrn3", TensorProto.FLOAT, [2, 6, 3, 3]), ("lrn7", TensorProto.FLOAT, [2, 6, 3, 3]),
               ("lrn1", TensorProto.FLOAT, [2, 6, 3, 3]), ("cp_rt", TensorProto.FLOAT, [3, 4]),
               ("cp_ex", TensorProto.FLOAT, [3, 4]), ("cp_rev", TensorProto.FLOAT, [3, 4]),
               ("cp_int", TensorProto.INT32, [3, 4]), ("det3", TensorProto.FLOAT, []),
               ("det4", TensorProto.FLOAT, [2]), ("det1", TensorProto.FLOAT, [])]
    axis_c = helper.make_tensor("axis_c", TensorProto.INT32, [], [-1])
    model = _model(nodes, inputs, outputs, opset=26, initializers=[axis_c])
    rng = np.random.default_rng(7)

    def record(axis: int, scale: float) -> list[np.ndarray]:
        floats = [(rng.standard_normal(shape) * scale).astype(np.float32) for _, _, shape in inputs[:2]]
        ints = rng.integers(-2000, 2000, size=(3, 4)).astype(np.int32)  # products that wrap int32
        mats = [rng.standard_normal(shape).astype(np.float32) for _, _, shape in inputs[4:]]
        return [*floats, ints, np.array(axis, dtype=np.int32), *mats]

    records = [record(1, 1.0), record(0, 30.0), record(-2, 0.1)]
    singular = records[1][4].copy()
    singular[2] = singular[0] * 2.0  # exactly dependent rows: a zero pivot
    records[1][4] = singular
    _compile_and_compare(model, tmp_path, records, atol=1e-5)


# --- LinearAttention, CausalConvWithState ---------------------------------------------------------
def test_linear_attention_and_causal_conv_match_onnxruntime(tmp_path):
    b, t, dk, dv = 2, 3, 4, 3
    inputs: dict[str, list[int]] = {}
    nodes, outputs = [], []

    def tensor(name: str, shape: list[int]) -> str:
        inputs[name] = shape
        return name

    variants = [  # (rule, hq, hkv, past, decay width, beta width, scale)
        ("linear", 2, 2, False, 0, 0, 0.0), ("gated", 4, 2, True, 2, 0, 0.5), ("gated", 2, 2, False, 2 * dk, 0, 0.0),
        ("delta", 2, 1, True, 0, 1, 0.0), ("gated_delta", 4, 2, True, 2 * dk, 2, 0.0),
        ("gated_delta", 4, 1, False, 1, 1, 2.0)]
    for n, (rule, hq, hkv, past, dw, bw, scale) in enumerate(variants):
        operands = [tensor(f"q{n}", [b, t, hq * dk]), tensor(f"k{n}", [b, t, hkv * dk]), tensor(f"v{n}", [b, t, hkv * dv]),
                    tensor(f"s{n}", [b, hkv, dk, dv]) if past else "", tensor(f"g{n}", [b, t, dw]) if dw else "",
                    tensor(f"beta{n}", [b, t, bw]) if bw else ""]
        while operands[-1] == "":
            operands.pop()
        nodes.append(helper.make_node("LinearAttention", operands, [f"la{n}", f"state{n}"], q_num_heads=hq,
                                      kv_num_heads=hkv, update_rule=rule, scale=scale))
        outputs += [(f"la{n}", TensorProto.FLOAT, [b, t, hq * dv]), (f"state{n}", TensorProto.FLOAT, [b, hkv, dk, dv])]
    for n, (k, bias, past, activation) in enumerate([(3, True, True, "silu"), (4, False, False, "none"),
                                                     (1, True, False, "swish"), (2, False, True, "none")]):
        operands = [tensor(f"cx{n}", [2, 3, 5]), tensor(f"cw{n}", [3, 1, k]), tensor(f"cb{n}", [3]) if bias else "",
                    tensor(f"cs{n}", [2, 3, k - 1]) if past else ""]
        while operands[-1] == "":
            operands.pop()
        nodes.append(helper.make_node("CausalConvWithState", operands, [f"cc{n}", f"cstate{n}"], activation=activation))
        outputs += [(f"cc{n}", TensorProto.FLOAT, [2, 3, 5]), (f"cstate{n}", TensorProto.FLOAT, [2, 3, k - 1])]
    model = _model(nodes, [(name, TensorProto.FLOAT, shape) for name, shape in inputs.items()], outputs, opset=27)
    rng = np.random.default_rng(27)
    records = []
    for spread in (0.5, 2.0):
        record = []
        for name, shape in inputs.items():
            x = rng.standard_normal(shape) * spread
            record.append((-np.abs(x) if name.startswith("g") else x).astype(np.float32))  # decays are log-gates
        records.append(record)
    _compile_and_compare(model, tmp_path, records, atol=1e-5)


def test_deform_conv_matches_onnxruntime(tmp_path):
    variants = [  # (channels, out channels, kernel, attrs, mask, bias)
        (2, 4, (3, 3), {"pads": [1, 1, 1, 1]}, True, True),
        (4, 4, (2, 3), {"group": 2, "offset_group": 2, "strides": [2, 1]}, False, True),
        (4, 2, (3, 2), {"dilations": [2, 1], "offset_group": 4, "pads": [2, 0, 1, 1]}, True, False),
    ]
    nodes, inputs, outputs = [], [], []
    for k, (channels, oc, (kh, kw), attrs, mask, bias) in enumerate(variants):
        height, width = 6, 5
        pads = attrs.get("pads", [0, 0, 0, 0])
        sh, sw = attrs.get("strides", [1, 1])
        dh, dw = attrs.get("dilations", [1, 1])
        group, offset_group = attrs.get("group", 1), attrs.get("offset_group", 1)
        oh = (height + pads[0] + pads[2] - (kh - 1) * dh - 1) // sh + 1
        ow = (width + pads[1] + pads[3] - (kw - 1) * dw - 1) // sw + 1
        operands = [(f"x{k}", [1, channels, height, width]), (f"w{k}", [oc, channels // group, kh, kw]),
                    (f"off{k}", [1, offset_group * kh * kw * 2, oh, ow])]
        operands += [(f"b{k}", [oc])] if bias else [("", [])]
        operands += [(f"m{k}", [1, offset_group * kh * kw, oh, ow])] if mask else []
        while operands[-1][0] == "":
            operands.pop()
        nodes.append(helper.make_node("DeformConv", [name for name, _ in operands], [f"y{k}"], kernel_shape=[kh, kw],
                                      **attrs))
        inputs += [(name, TensorProto.FLOAT, shape) for name, shape in operands if name]
        outputs.append((f"y{k}", TensorProto.FLOAT, [1, oc, oh, ow]))
    model = _model(nodes, inputs, outputs, opset=22)
    rng = np.random.default_rng(19)
    records = [[(rng.standard_normal(shape) * (2.5 if name.startswith("off") else 1.0)).astype(np.float32)
                for name, _, shape in inputs] for _ in range(2)]
    _compile_and_compare(model, tmp_path, records, atol=1e-5)


def test_tfidf_vectorizer_matches_onnxruntime(tmp_path):
    pool = [2, 3, 5, 4,  5, 6, 7, 8, 6, 7, 3, 3,  1, 2, 3, 3, 3, 7]  # 4 unigrams, 4 bigrams, 2 trigrams
    common = {"ngram_counts": [0, 4, 12], "ngram_indexes": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "pool_int64s": pool}
    variants = [("TF", 1, 3, 2, None), ("IDF", 2, 2, 0, None), ("TFIDF", 1, 2, 3, [0.5 + k for k in range(10)]),
                ("IDF", 1, 3, 1, [1.0 + 2 * k for k in range(10)]), ("TF", 3, 3, 5, None)]
    nodes, outputs = [], []
    for k, (mode, low, high, skip, weights) in enumerate(variants):
        attrs = dict(common, mode=mode, min_gram_length=low, max_gram_length=high, max_skip_count=skip)
        if weights is not None:
            attrs["weights"] = weights
        for x, shape in (("tokens", [12]), ("batch", [2, 7])):
            nodes.append(helper.make_node("TfIdfVectorizer", [x], [f"y{k}_{x}"], **attrs))
            outputs.append((f"y{k}_{x}", TensorProto.FLOAT, [*shape[:-1], 10]))
    model = _model(nodes, [("tokens", TensorProto.INT32, [12]), ("batch", TensorProto.INT32, [2, 7])], outputs,
                   opset=9)
    rng = np.random.default_rng(9)
    records = [[np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], dtype=np.int32),
                np.array([[2, 3, 5, 4, 5, 6, 7], [7, 8, 6, 7, 3, 3, 3]], dtype=np.int32)]]
    records += [[rng.integers(1, 9, size=(12,)).astype(np.int32), rng.integers(1, 9, size=(2, 7)).astype(np.int32)]
                for _ in range(2)]
    _compile_and_compare(model, tmp_path, records, atol=0.0)


# --- bad attributes: one line naming the node -----------------------------------------------------
@pytest.mark.parametrize("op, attrs, inputs, shape, words", [
    ("DFT", {"axis": 2}, [("x", [1, 8, 1])], [1, 8, 2], "not the last"),
    ("DFT", {"axis": 1, "inverse": 2}, [("x", [1, 8, 1])], [1, 8, 2], "must be 0 or 1"),
    ("LRN", {"size": 0}, [("x", [1, 3, 2, 2])], [1, 3, 2, 2], "positive size"),
    ("HannWindow", {"periodic": 3}, [("n", [])], [8], "must be 0 or 1"),
    ("Det", {}, [("x", [2, 3])], [], "square matrices"),
])
def test_bad_attributes_are_one_clear_line(tmp_path, op, attrs, inputs, shape, words):
    types = {"n": TensorProto.INT32}
    node = helper.make_node(op, [name for name, _ in inputs], ["y"], name="the_node", **attrs)
    model = _model([node], [(name, types.get(name, TensorProto.FLOAT), dims) for name, dims in inputs],
                   [("y", TensorProto.FLOAT, shape)], opset=17 if op != "Det" else 22)
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    with pytest.raises(NN2CError) as info:
        compile_model(path, CompileOptions(name="model"))
    message = str(info.value)
    assert "\n" not in message.strip() and "the_node" in message and words in message, message
