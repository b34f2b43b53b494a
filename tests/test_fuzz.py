"""Bounded fuzz campaigns on mutated real models: every input compiles or ends in one nn2c error.

No traceback, no hang (30 s per input), no MemoryError; 60 s of TFLite mutants and 60 s of ONNX
mutants (the two tests run in parallel under -n 2), 40 s of person_detect and vww_96_int8 mutants, and 60 s of
mutants of the ONNX backend suite's cases; those of the last two that compile are in part built with ASan + UBSan
and run on extreme inputs. A longer campaign
is bench/fuzz.py. The regression tests below are the bugs the ONNX campaign found, each reduced to
one edit of a seed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.errors import InvalidModelError, NN2CError, UnsupportedOpError
from nn2c.fuzz.campaign import run_campaign
from nn2c.fuzz.tflite_mutator import locate_fields, mutate
from tests.conftest import model_path, require_cc

FUZZ_MODELS = [
    "tflite_micro/hello_world_int8.tflite",
    "mlcommons_tiny/ad01_int8.tflite",
    "tflite_micro/keyword_scrambled.tflite",
    "tinyengine/ptq_mnist_lenet-300-100.tflite",
    "mlcommons_tiny/kws_ref_model.tflite",
    "tflite_micro/micro_speech_quantized.tflite",
]
ONNX_SEEDS = ["onnx/cnn_float.onnx", "onnx/audio_conv1d.onnx", "onnx/qdq_int8.onnx"]


def _assert_clean(result, fmt: str, min_inputs: int) -> None:
    assert result.inputs > min_inputs, "the campaign ran too few inputs to mean anything"
    assert result.failures == [], "\n".join(result.failures[:20])
    assert result.hangs == result.memory_errors == result.tracebacks == 0
    assert result.compiled + result.rejected == result.inputs
    share = result.formats[fmt]
    assert share.inputs == result.inputs
    assert share.compiled > 0, "no mutant compiled: the mutations never get past the parser"
    assert share.rejected > 0


def test_fuzz_campaign_has_no_crash_hang_or_traceback():
    result = run_campaign([model_path(m) for m in FUZZ_MODELS], seconds=30, seed=2026)
    _assert_clean(result, "tflite", 200)


def test_fuzz_campaign_tflite_builds_and_runs_accepted_mutants():
    """Mutants of person_detect and vww_96_int8 that compile are built with ASan + UBSan and run on a random and the
    extreme records half of the time: the generated code must neither report nor crash (such campaigns found a
    1x1 convolution declared larger than its input, which read past it)."""
    require_cc()
    from tests.onnx_backend_sanitize import build_and_run_sanitized

    seeds = [model_path("tflite_micro/person_detect.tflite"), model_path("mlcommons_tiny/vww_96_int8.tflite")]
    result = run_campaign(seeds, seconds=40, seed=2028, execute=build_and_run_sanitized, execute_share=0.5)
    _assert_clean(result, "tflite", 60)
    assert result.executed >= 3, "too few accepted mutants were built and run to mean anything"


def test_fuzz_campaign_onnx_has_no_crash_hang_or_traceback():
    pytest.importorskip("onnx", reason="SKIPPED LOUDLY: the onnx package is not installed (pip install nn2c[test])")
    result = run_campaign([model_path(m) for m in ONNX_SEEDS], seconds=30, seed=2026)
    _assert_clean(result, "onnx", 500)
    assert result.errors["InvalidModelError"] > 0 and result.errors["UnsupportedOpError"] > 0


def test_fuzz_campaign_onnx_operator_cases_has_no_crash_hang_or_traceback(tmp_path):
    """Seeds: one model per applicable case of the ONNX backend suite (every operator type and
    attribute the suite exercises, including the ones nn2c refuses), so that the mutations reach
    every converter and lowering, not just the repo's three CNNs. A quarter of the time, accepted
    mutants are built with ASan + UBSan and run on random and extreme inputs: the generated code
    must neither report nor crash."""
    pytest.importorskip("onnx", reason="SKIPPED LOUDLY: the onnx package is not installed (pip install nn2c[test])")
    from tests.onnx_backend_cases import applicable_cases
    from tests.onnx_backend_sanitize import build_and_run_sanitized

    seeds = []
    for case in applicable_cases()[::3]:  # every third case: each operator type still appears
        path = tmp_path / f"{case.name}.onnx"
        path.write_bytes(case.model.SerializeToString())
        seeds.append(path)
    assert len({c.op_type for c in applicable_cases()[::3]}) >= 100
    result = run_campaign(seeds, seconds=40, seed=2027, execute=build_and_run_sanitized, execute_share=0.25)
    _assert_clean(result, "onnx", 400)
    assert result.executed >= 3, "too few accepted mutants were built and run to mean anything"


def test_campaign_reports_per_format_and_keeps_failing_mutants(tmp_path, monkeypatch):
    import nn2c.api

    def broken(path, options=None):
        if Path(path).suffix == ".onnx":
            raise KeyError("planted")
        return compile_model(path, options)

    monkeypatch.setattr(nn2c.api, "compile_model", broken)
    result = run_campaign([model_path("tflite_micro/hello_world_int8.tflite"), model_path(ONNX_SEEDS[1])],
                          seconds=3, seed=1, keep_failures=tmp_path / "kept")
    assert set(result.formats) == {"tflite", "onnx"}
    assert result.formats["onnx"].tracebacks == result.formats["onnx"].inputs > 0
    assert result.formats["tflite"].failures == []
    kept = sorted((tmp_path / "kept").iterdir())
    assert len(kept) == result.formats["onnx"].inputs and all(p.suffix == ".onnx" for p in kept)
    assert "KeyError at test_fuzz.py" in result.failures[0] and str(kept[0]) in result.failures[0]


def test_campaign_counts_only_the_mutants_it_ran(tmp_path):
    """An executor's NOT_RUN (build_and_run_sanitized's answer for inputs too large to draw) is neither a failure nor
    an executed mutant; the others count as executed."""
    from nn2c.fuzz.campaign import NOT_RUN

    calls = []

    def every_other(result, workdir):
        calls.append(workdir)
        return NOT_RUN if len(calls) % 2 else None

    result = run_campaign([model_path("tflite_micro/hello_world_int8.tflite")], seconds=3, seed=1,
                          execute=every_other, execute_share=1.0)
    assert len(calls) >= 2 and result.executed == len(calls) // 2
    assert result.failures == []


def test_mutator_reaches_every_field_kind():
    fields = locate_fields(model_path("mlcommons_tiny/kws_ref_model.tflite").read_bytes())
    kinds = {f.kind for f in fields}
    assert {"tensor.shape", "tensor.buffer", "quant.scale", "quant.zero_point", "quant.axis", "op.inputs",
            "op.outputs", "op.opcode_index", "opcode.version"} <= kinds


def test_onnx_mutator_applies_every_mutation_kind():
    pytest.importorskip("onnx")
    from nn2c.fuzz import onnx_mutator

    data = model_path("onnx/qdq_int8.onnx").read_bytes()
    model = onnx_mutator.prepare(data)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(400):
        _, what = onnx_mutator.mutate(data, rng, model)
        seen.update(part.split(":")[0] for part in what.split("; "))
    assert set(onnx_mutator.MUTATIONS) <= seen
    assert any(s.startswith("truncated") for s in seen) and any(s.endswith("random bytes") for s in seen)


@pytest.mark.parametrize("seed,suffix,mutator", [("mlcommons_tiny/ad01_int8.tflite", ".tflite", "tflite"),
                                                 ("onnx/qdq_int8.onnx", ".onnx", "onnx")])
def test_cli_on_mutants_prints_one_line(tmp_path, seed, suffix, mutator):
    data = model_path(seed).read_bytes()
    rng = np.random.default_rng(5)
    if mutator == "tflite":
        fields = locate_fields(data)
        mutants = [mutate(data, rng, fields)[0] for _ in range(6)]
    else:
        from nn2c.fuzz import onnx_mutator

        model = onnx_mutator.prepare(data)
        mutants = [onnx_mutator.mutate(data, rng, model)[0] for _ in range(6)]
    for k, mutant in enumerate(mutants):
        path = tmp_path / f"m{k}{suffix}"
        path.write_bytes(mutant)
        out = tmp_path / f"out{k}"
        result = subprocess.run([sys.executable, "-m", "nn2c", "compile", str(path), "-o", str(out)],
                                capture_output=True, text=True, timeout=120)
        assert "Traceback" not in result.stderr
        if result.returncode:
            assert len(result.stderr.strip().splitlines()) == 1, result.stderr
            assert not out.exists()
        else:
            assert (out / f"m{k}.c").is_file()


# --- regressions: the ONNX fuzzer's findings, each one edit of a seed --------------------------------
def _edited(tmp_path: Path, seed: str, edit: Callable[[object], None]) -> Path:
    onnx = pytest.importorskip("onnx")
    model = onnx.load(model_path(f"onnx/{seed}.onnx"))
    edit(model)
    path = tmp_path / f"{seed}_edited.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _init(model, name: str):
    return next(t for t in model.graph.initializer if t.name == name)


def _node(model, name: str):
    return next(n for n in model.graph.node if n.name == name)


def _set(model, name: str, array) -> None:
    from onnx import numpy_helper

    _init(model, name).CopyFrom(numpy_helper.from_array(np.asarray(array), name))


def _set_attr(model, node: str, attr: str, value) -> None:
    from onnx import helper

    n = _node(model, node)
    for a in list(n.attribute):
        if a.name == attr:
            n.attribute.remove(a)
    if value is not None:
        n.attribute.append(helper.make_attribute(attr, value))


def _huge_constant_of_shape(model) -> None:
    from onnx import helper, numpy_helper

    model.graph.initializer.append(numpy_helper.from_array(np.array([2**31 - 1, 2**31 - 1], np.int64), "huge"))
    model.graph.node.insert(9, helper.make_node("ConstantOfShape", ["huge"], ["filled"], name="fill"))
    _node(model, "gemm_10").input[2] = "filled"


REGRESSIONS = [
    # (id, seed, edit, error, words in the message); each was a traceback, a MemoryError or a hang
    ("initializer dims disagree with data (ValueError in numpy_helper)", "cnn_float",
     lambda m: _init(m, "bn1.gamma").ClearField("dims"), InvalidModelError, ["initializer 'bn1.gamma'", "dims []"]),
    ("initializer raw_data one byte too long (ValueError)", "cnn_float",
     lambda m: setattr(_init(m, "bn1.var"), "raw_data", _init(m, "bn1.var").raw_data + b"\0"), InvalidModelError,
     ["initializer 'bn1.var'", "does not match"]),
    ("initializer of type uint16 (internal _NodeError escaped)", "cnn_float",
     lambda m: _set(m, "conv1.b", np.zeros(8, np.uint16)), UnsupportedOpError, ["initializer 'conv1.b'", "uint16"]),
    ("input dimension 2**40 (OverflowError)", "audio_conv1d",
     lambda m: setattr(m.graph.input[0].type.tensor_type.shape.dim[2], "dim_value", 2**40), InvalidModelError,
     ["'audio'", "corrupt"]),
    ("input dimension 2**31-1 (MemoryError)", "cnn_float",
     lambda m: setattr(m.graph.input[0].type.tensor_type.shape.dim[2], "dim_value", 2**31 - 1), InvalidModelError,
     ["'input'", "corrupt"]),
    ("ConstantOfShape of 2**62 elements (MemoryError)", "cnn_float", _huge_constant_of_shape, UnsupportedOpError,
     ["ONNX node #9 'fill' (ConstantOfShape)", "byte constant"]),
    ("QuantizeLinear with no scale (IndexError in passes/qdq.py)", "qdq_int8",
     lambda m: _set(m, "gap_scale", np.zeros(0, np.float32)), InvalidModelError,
     ["'gap_QuantizeLinear'", "0 scales"]),
    ("64 zero points for 8 scales (ValueError in passes/qdq.py)", "qdq_int8",
     lambda m: _set(m, "ConvBnFusion_BN_B_bn1.beta_quantized_zero_point", np.zeros(64, np.int32)), InvalidModelError,
     ["8 scales and 64 zero points"]),
    ("per-channel scales on the wrong axis (ValueError in passes/qdq.py)", "qdq_int8",
     lambda m: _set_attr(m, "fc.w_DequantizeLinear", "axis", None), InvalidModelError,
     ["'fc.w_DequantizeLinear'", "4 per-channel scales do not match axis 1 of shape [4, 8]"]),
    ("quantization axis out of range (silently wrapped to axis 0)", "qdq_int8",
     lambda m: _set_attr(m, "ConvBnFusion_W_conv1.w_DequantizeLinear", "axis", 4), InvalidModelError,
     ["do not match axis 4 of shape [8, 3, 3, 3]"]),
    ("Conv bias of shape [8, 1] (ValueError in passes/qdq.py)", "qdq_int8",
     lambda m: _init(m, "ConvBnFusion_BN_B_bn1.beta_quantized").dims.append(1), InvalidModelError,
     ["'conv_0' (Conv)", "bias of shape [8, 1]"]),
    ("BatchNormalization with a negative variance (NaN weights)", "cnn_float",
     lambda m: _set(m, "bn1.var", -np.ones(8, np.float32)), InvalidModelError, ["variance + epsilon must be positive"]),
    ("DequantizeLinear of float weights (NaN cast to int8)", "qdq_int8",
     lambda m: _set(m, "ConvBnFusion_W_conv1.w_quantized", np.ones((8, 3, 3, 3), np.float32)), InvalidModelError,
     ["DequantizeLinear of a float32 tensor"]),
]


@pytest.mark.parametrize("seed,edit,error,words", [r[1:] for r in REGRESSIONS], ids=[r[0] for r in REGRESSIONS])
def test_fuzzer_finding_is_one_clean_error(tmp_path, seed, edit, error, words):
    path = _edited(tmp_path, seed, edit)
    with pytest.raises(error) as info:
        compile_model(path)
    for word in words:
        assert word in str(info.value)


def test_non_utf8_node_name_is_rejected(tmp_path):
    """A flipped byte in a node name: protobuf hands out bytes, which reached the C writer (TypeError)."""
    data = model_path("onnx/cnn_float.onnx").read_bytes()
    assert data.count(b"globalaveragepool_8") == 1
    path = tmp_path / "flipped.onnx"
    path.write_bytes(data.replace(b"globalaveragepool_8", b"globalaverage\x88ool_8"))
    with pytest.raises(InvalidModelError, match="the name of node #8 is not valid UTF-8"):
        compile_model(path)


def test_absurd_declared_shape_is_rejected_before_shape_inference(tmp_path):
    """value_info declaring a 2**31-element tensor: ONNX shape inference ran for minutes (a hang)."""
    from onnx import TensorProto, helper

    def edit(model):
        model.graph.value_info.append(helper.make_tensor_value_info("bn1", TensorProto.INT32, [2**31 - 1]))
        _node(model, "reshape_9").op_type = "QuantizeLinear"

    path = _edited(tmp_path, "cnn_float", edit)
    start = time.monotonic()
    with pytest.raises(InvalidModelError, match="tensor 'bn1' is declared with shape"):
        compile_model(path)
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("location", ["weights.bin", "../outside.bin", "/etc/passwd", "model.onnx"])
@pytest.mark.parametrize("where", ["initializer", "Constant node"])
def test_external_data_is_never_read(tmp_path, monkeypatch, location, where):
    """Tensors whose data is in another file are refused, even when that file exists next to the model
    or in the working directory (the onnx checker and numpy_helper resolve it from the working directory)."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    folder = tmp_path / "models"
    folder.mkdir()
    weights = np.ones(8, np.float32).tobytes()
    for place in (folder / "weights.bin", tmp_path / "outside.bin", tmp_path / "weights.bin"):
        place.write_bytes(weights)
    monkeypatch.chdir(folder)

    def edit(model):
        if where == "initializer":
            tensor = _init(model, "conv1.b")
        else:
            _init(model, "conv1.b").name = "unused"
            model.graph.node.insert(0, helper.make_node("Constant", [], ["conv1.b"], name="const",
                                                        value=helper.make_tensor("v", 1, [8], np.zeros(8))))
            tensor = model.graph.node[0].attribute[0].t
        tensor.ClearField("raw_data")
        tensor.ClearField("float_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", "0"), ("length", str(len(weights)))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value

    path = _edited(tmp_path, "cnn_float", edit).rename(folder / "model.onnx")
    with pytest.raises(InvalidModelError, match="external file, which nn2c does not read"):
        compile_model(path)


def test_onnx_seeds_compile():
    pytest.importorskip("onnx")
    for seed in ONNX_SEEDS:
        try:
            compile_model(model_path(seed))
        except NN2CError as exc:  # pragma: no cover - the message is the failure
            pytest.fail(f"{seed}: {exc}")


def test_tflite_fuzzer_finding_fc_bias_of_wrong_length(tmp_path):
    """A mutant of hello_world_int8 (op #1's bias input re-pointed at op #2's one-value bias): an IndexError
    in passes/prune_channels.py, and before that pass, C that read 16 biases from a 1-value array."""
    path = Path(__file__).parent / "assets" / "fuzz" / "hello_world_int8_fc_bias_of_1.tflite"
    with pytest.raises(UnsupportedOpError, match=r"op #1 FULLY_CONNECTED .* has 1 values for 16 channels"):
        compile_model(path)


# --- regressions: mutants of ONNX backend cases (bench/fuzz.py seeds them from the suite), kept as found --
FUZZ_ASSETS = Path(__file__).parent / "assets" / "fuzz"


@pytest.mark.parametrize("asset,words", [
    # Attention right_window_size = 2**40: the C failed to build (-Werror=overflow in the params struct)
    ("onnx_attention_right_window_2e40.onnx", ["ATTENTION", "right_window = 1099511627776", "32-bit parameter"]),
    # LpPool kernel_shape [2, 2**40] with the declared output kept: the same build failure (now refused by the
    # window pool's geometry check before the params struct is made)
    ("onnx_lppool_kernel_2e40.onnx", ["WINDOW_POOL", "kernel 1099511627776", "does not follow from input 32"]),
    # ConvTranspose dilations [2**31 - 1, 2] over 1000 taps: compiled, and the kernel's index arithmetic
    # overflowed int32 (UBSan: signed integer overflow in nn2c_tconv_source)
    ("onnx_convtranspose_dilation_2e31.onnx", ["TRANSPOSE_CONV", "1000 taps dilated by 2147483647",
                                               "32-bit indices"]),
    # MaxPool kernel_shape [2**31 - 1, 2] over 32 rows, the seed's declared output [1, 3, 31, 31] kept: it
    # compiled, and the generated program looped over 2**31 taps per output (no result within 30 s)
    ("onnx_maxpool_kernel_2e31_declared_output.onnx", ["WINDOW_POOL", "output extent 31 of spatial dim 0",
                                                       "kernel 2147483647"]),
    # a 3-D AveragePool with a stride of 2**31 - 1: the kernel's tap positions overflowed int32 (UBSan)
    ("onnx_averagepool_stride_2e31.onnx", ["WINDOW_POOL", "stride 2147483647", "32-bit positions"]),
    # OneHot whose axis became -1 while the declared output [2, 10, 2] was kept: the kernel read 20
    # indices from a 4-index tensor (ASan: global-buffer-overflow in nn2c_one_hot_index)
    ("onnx_onehot_axis_declared_output.onnx", ["ONE_HOT", "output shape [2, 10, 2]", "indices' shape [2, 2]"]),
    # RotaryEmbedding with a sin cache of batch 1 and a cos cache of batch 2: the kernel walked both with
    # the cos cache's strides (ASan: global-buffer-overflow in nn2c_rotary_embedding_f32)
    ("onnx_rotary_sin_cache_batch_1.onnx", ["ROTARY_EMBEDDING", "cos cache [2, 3, 4] and sin cache [1, 3, 4]"]),
    # MaxPool with its Indices output and storage_order 2**40: the C failed to build (-Werror=overflow)
    ("onnx_maxpool_indices_storage_order_2e40.onnx", ["MaxPool", "storage_order 1099511627776"]),
    # Gather with run-time indices whose axis became -1 while the declared output [3, 4, 3, 2] was kept: the
    # kernel wrote 180 values for 72 (ASan: global-buffer-overflow)
    ("onnx_gather_axis_declared_output.onnx", ["GATHER", "output shape [3, 4, 3, 2] is not [5, 4, 3, 3]"]),
    # GatherND whose batch_dims became 0, the declared output kept: the same (ASan)
    ("onnx_gathernd_batch_dims_declared_output.onnx", ["GATHER_ND", "output shape [2, 2] is not [2, 2, 2]"]),
])
def test_backend_mutant_with_out_of_range_attribute_is_one_clean_error(asset, words):
    pytest.importorskip("onnx")
    with pytest.raises(InvalidModelError) as info:
        compile_model(FUZZ_ASSETS / asset)
    for word in words:
        assert word in str(info.value)


def test_backend_mutant_with_int64_min_constant_builds_and_runs_clean(tmp_path):
    """NegativeLogLikelihoodLoss's expanded body with an int64 constant set to INT64_MIN: written as
    -9223372036854775808LL, which C reads as the negation of a literal too large for long long (the C
    failed to build)."""
    pytest.importorskip("onnx")
    from tests.onnx_backend_sanitize import build_and_run_sanitized

    result = compile_model(FUZZ_ASSETS / "onnx_nllloss_expanded_int64_min.onnx")
    assert build_and_run_sanitized(result, tmp_path / "out") is None


def test_backend_mutant_with_huge_pool_kernel_compiles_in_bounded_memory(tmp_path):
    """MaxPool kernel_shape [2**31 - 1, 3] with SAME_UPPER pads over 17 rows: the in-place planner
    listed every tap of every window (a 16 GiB array: MemoryError); it now finds each window's first
    input row in closed form, and the program (whose pool clamps the window to the input) runs clean."""
    pytest.importorskip("onnx")
    import resource

    from tests.onnx_backend_sanitize import build_and_run_sanitized

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, hard))
    try:
        result = compile_model(FUZZ_ASSETS / "onnx_maxpool_kernel_2e31_same_upper.onnx")
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert build_and_run_sanitized(result, tmp_path / "out") is None


def test_backend_mutant_whose_exact_plan_overlaps_falls_back_to_the_checked_plan():
    """An expanded Attention case with a Q dimension of 65536: the MILP planner returned offsets
    whose buffers overlap (floating-point tolerance on offsets of millions of bytes), and the
    planner's own check raised an AssertionError (a traceback); the checked greedy plan is kept
    (compile_model checks every plan it keeps)."""
    pytest.importorskip("onnx")
    result = compile_model(FUZZ_ASSETS / "onnx_attention_q_65536_planner_overlap.onnx")
    assert result.arena_bytes >= 25_000_000  # two 2**24-byte tensors live at once, at least


def test_backend_mutant_with_nan_constant_builds_and_runs_clean(tmp_path):
    """RMSNormalization's expanded body with its epsilon Constant set to NaN: a NaN weight was written
    as NAN in the weights file, which did not include <math.h> (the C failed to build)."""
    pytest.importorskip("onnx")
    from tests.onnx_backend_sanitize import build_and_run_sanitized

    result = compile_model(FUZZ_ASSETS / "onnx_rmsnorm_expanded_nan_epsilon.onnx")
    weights = next(text for name, text in result.files.items() if name.endswith("_weights.c"))
    assert "NAN" in weights and "#include <math.h>" in weights
    assert build_and_run_sanitized(result, tmp_path / "out") is None


# --- regressions of the sparse-kernel campaign (session 10: pruned and sparse-format seeds) ------------------

def test_fully_connected_whose_shapes_do_not_fit_its_filter_is_one_clean_error():
    """A FULLY_CONNECTED of the converter's sparse MLP whose output shape became [1, 7] for 64 units: the
    next one read 64 inputs from a 7-value tensor (ASan: global-buffer-overflow in the sparse and the
    dense kernels alike)."""
    with pytest.raises(InvalidModelError) as info:
        compile_model(FUZZ_ASSETS / "sparse_mlp_fc_input_shape_7.tflite")
    assert "FULLY_CONNECTED" in str(info.value) and "output [1, 7] do not fit the filter [64, 32]" in str(info.value)


def test_depthwise_filter_of_rank_1_is_one_clean_error():
    """kws with a DEPTHWISE_CONV_2D reading a 1-D tensor as its filter: the MAC count of prune-channels
    raised IndexError (a traceback) before the lowering could refuse the filter."""
    with pytest.raises(UnsupportedOpError) as info:
        compile_model(FUZZ_ASSETS / "kws_depthwise_filter_rank_1.tflite")
    assert "the depthwise filter must be 1HWO" in str(info.value)


def test_huge_output_multiplier_wraps_instead_of_overflowing(tmp_path):
    """A 1x1 CONV_2D whose output scale became 1e-30 (a multiplier of 2**70): the requantised value plus
    the zero point overflowed int32 (UBSan, found on person_detect); it now wraps as TFLM's sum does, up to a
    multiplier just under 2^30 (an output scale of 4e-10: 6.25e8). From 2^30 TFLite Micro's requantisation
    shifts left by 31 bits or more, which is undefined: 1e-30 is refused in one error naming the channel."""
    from tests.onnx_backend_sanitize import build_and_run_sanitized
    from tests.tflite_builder import ModelBuilder

    require_cc()

    def model(out_scale: float) -> Path:
        b = ModelBuilder()
        x = b.tensor("int8", (1, 2, 2, 4), scale=0.5, zero_point=0)
        w = b.tensor("int8", (3, 1, 1, 4), scale=[0.5] * 3, zero_point=[0] * 3, axis=0,
                     data=np.arange(12).reshape(3, 1, 1, 4) - 6)
        y = b.tensor("int8", (1, 2, 2, 3), scale=out_scale, zero_point=-128)
        b.op("CONV_2D", [x, w, -1], [y], {"padding": "VALID", "stride_w": 1, "stride_h": 1})
        path = tmp_path / f"multiplier_{out_scale:g}.tflite"
        path.write_bytes(b.build(inputs=[x], outputs=[y]))
        return path

    for options in (CompileOptions(), CompileOptions(sparse="always")):
        assert build_and_run_sanitized(compile_model(model(4e-10), options), tmp_path / options.sparse) is None
        with pytest.raises(InvalidModelError, match=r"op #0 CONV_2D .*channel 0's output multiplier.* is 2.5e\+29"):
            compile_model(model(1e-30), options)


def test_pooling_without_its_options_is_one_clean_error():
    """kws_ref_model_float32 with an operator's opcode index moved to AVERAGE_POOL_2D, its options still
    Conv2DOptions (bench/fuzz.py, --seed 1): the in-place analysis read the pooling's filter size and raised
    KeyError (a traceback); TFLM would pool over a window of 0. Now one error naming the operator."""
    with pytest.raises(InvalidModelError, match=r"op #3 AVERAGE_POOL_2D .*no Pool2DOptions"):
        compile_model(FUZZ_ASSETS / "kws_float_average_pool_without_its_options.tflite")


def test_model_output_marked_variable_is_one_clean_error():
    """The converter's sparse MLP with its output tensor's is_variable flag set (6 random bytes): the
    arena planner kept it with the state, and writing the C raised KeyError (a traceback)."""
    with pytest.raises(InvalidModelError) as info:
        compile_model(FUZZ_ASSETS / "sparse_mlp_output_is_variable.tflite")
    assert "'StatefulPartitionedCall_1:0' is marked as a variable (state) tensor" in str(info.value)


def test_fully_connected_bias_of_the_wrong_type_is_one_clean_error():
    """ad01 with an int8 activation wired in as a FULLY_CONNECTED's bias (third sparse campaign): the
    generated C passed an int8_t pointer where the kernel takes int32_t (the build failed)."""
    with pytest.raises(UnsupportedOpError, match=r"op #7 FULLY_CONNECTED .* is int8; expected int32"):
        compile_model(FUZZ_ASSETS / "ad01_fc_bias_int8_activation.tflite")
