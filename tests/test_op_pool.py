"""AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SUM and REDUCE_MAX: single-op models, bit-exact against TFLM."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.errors import UnsupportedOpError
from nn2c.frontends.tflite_frontend import load_tflite
from nn2c.ir import Graph
from nn2c.verify.build import build, run
from nn2c.verify.compare import verify_model
from nn2c.verify.inputs import random_records
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder


def assert_matches_litert(model: bytes, tmp_path: Path) -> None:
    """For variants TFLM refuses but TFLite defines: compare with LiteRT's reference kernels."""
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    report = verify_model(path, count=3, references=("litert",), workdir=tmp_path / "model_c")
    assert "litert" not in report.skipped, report.skipped
    assert report.comparisons and not any(c.mismatches for c in report.comparisons), report.comparisons


# ---- pooling --------------------------------------------------------------------------------------

# (input NHWC, (filter_h, filter_w), (stride_h, stride_w), padding, activation)
POOL_CASES = [
    ((1, 8, 8, 3), (2, 2), (2, 2), "VALID", "NONE"),
    ((1, 9, 9, 4), (3, 3), (2, 2), "SAME", "NONE"),
    ((1, 10, 7, 5), (3, 2), (1, 1), "SAME", "RELU"),
    ((2, 7, 9, 3), (3, 3), (3, 2), "VALID", "RELU6"),
    ((1, 6, 6, 8), (6, 6), (1, 1), "VALID", "NONE"),  # global pooling
    ((1, 5, 11, 2), (2, 4), (2, 3), "SAME", "RELU_N1_TO_1"),
    ((1, 12, 12, 16), (3, 3), (3, 3), "VALID", "NONE"),  # vww_96 head
    ((1, 4, 4, 1), (5, 5), (1, 1), "SAME", "NONE"),  # window larger than the input
]


def _pooled(size: int, k: int, s: int, padding: str) -> int:
    return (size + s - 1) // s if padding == "SAME" else (size + s - k) // s


def _pool_model(op: str, dtype: str, case: tuple, scale: float | None = None, zp: int = 0,
                out_q: tuple[float, int] | None = None) -> tuple[bytes, ModelBuilder]:
    shape, (kh, kw), (sh, sw), padding, activation = case
    n, h, w, c = shape
    out_shape = (n, _pooled(h, kh, sh, padding), _pooled(w, kw, sw, padding), c)
    b = ModelBuilder()
    oscale, ozp = out_q if out_q else (scale, zp)
    x = b.tensor(dtype, shape, scale=scale, zero_point=zp if scale else None)
    y = b.tensor(dtype, out_shape, scale=oscale, zero_point=ozp if oscale else None)
    b.op(op, [x], [y], {"padding": padding, "stride_h": sh, "stride_w": sw, "filter_height": kh,
                        "filter_width": kw, "fused_activation_function": activation})
    return b.build([x], [y]), b


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"_{c[3]}_{c[4]}")
def test_pool_int8(op: str, case: tuple, tmp_path: Path) -> None:
    rng = np.random.default_rng(sum(case[0]))
    model, _ = _pool_model(op, "int8", case, scale=float(rng.uniform(0.01, 0.1)),
                           zp=int(rng.integers(-20, 20)))
    assert_matches_tflm(model, tmp_path)


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("case", POOL_CASES[1:5], ids=lambda c: "x".join(map(str, c[0])) + f"_{c[3]}_{c[4]}")
def test_pool_float32(op: str, case: tuple, tmp_path: Path) -> None:
    model, _ = _pool_model(op, "float32", case)
    assert_matches_tflm(model, tmp_path)


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("case", [POOL_CASES[1], POOL_CASES[3]], ids=["same", "valid_relu6"])
def test_pool_int16(op: str, case: tuple, tmp_path: Path) -> None:
    model, _ = _pool_model(op, "int16", case, scale=0.001, zp=0)
    assert_matches_tflm(model, tmp_path)


# int8 averages on the Cortex-M cores: sums in int16 lanes, division by a reciprocal (kernels/nn2c_pool.c)
CORTEX_M_AVG_CASES = [
    *POOL_CASES,
    ((1, 25, 5, 64), (25, 5), (1, 1), "VALID", "NONE"),  # kws_ref_model's global pool: 125 pixels
    ((1, 7, 7, 36), (7, 7), (1, 1), "SAME", "RELU"),  # windows of 16 to 49 pixels, 36 channels
    ((2, 8, 8, 13), (2, 2), (2, 2), "VALID", "RELU6"),  # channels in no whole group of 4
    ((1, 16, 16, 8), (16, 16), (1, 1), "VALID", "NONE"),  # 256 pixels: the most int16 lanes hold
    ((1, 17, 17, 8), (17, 17), (1, 1), "VALID", "NONE"),  # 289: the portable loop
    ((2, 3, 3, 255), (3, 3), (1, 1), "VALID", "RELU6"),  # person_detect's global pool, 2 batches, clamped
]


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("opt", ["-O2", "-O0"])
def test_avg_pool_int8_in_qemu(target: str, opt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Arm DSP and Helium branches of the int8 average, every case side by side in one model,
    bit-exact with TFLM in QEMU (each input drawn from the whole int8 range); -O0 builds the DSP
    branch without its inline assembly."""
    from nn2c.targets import cortexm_build
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    flags = [opt if flag == "-O2" else flag for flag in cortexm_build.COMPILE_FLAGS]
    assert flags.count(opt) == 1
    monkeypatch.setattr(cortexm_build, "COMPILE_FLAGS", flags)
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    pairs = []
    for shape, (kh, kw), (sh, sw), padding, activation in CORTEX_M_AVG_CASES:
        n, h, w, c = shape
        quant = {"scale": float(rng.uniform(0.01, 0.1)), "zero_point": int(rng.integers(-128, 20))}
        x = b.tensor("int8", shape, **quant)
        y = b.tensor("int8", (n, _pooled(h, kh, sh, padding), _pooled(w, kw, sw, padding), c), **quant)
        b.op("AVERAGE_POOL_2D", [x], [y], {"padding": padding, "stride_h": sh, "stride_w": sw,
                                           "filter_height": kh, "filter_width": kw,
                                           "fused_activation_function": activation})
        pairs.append((x, y))
    path = tmp_path / "pools.tflite"
    path.write_bytes(b.build([x for x, _ in pairs], [y for _, y in pairs]))
    # global pools outside the SIMD lanes (289 pixels; 255 channels on the DSP) run nn2c_avg_pool_s8_global
    source = compile_model(path, CompileOptions(target=target)).files["pools.c"]
    assert source.count("nn2c_avg_pool_s8_global(") == (2 if target == "cortex-m4" else 1)
    report = bench_model(path, target=target, count=3, seed=5, workdir=tmp_path / "qemu")
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert len(report.comparisons) == len(CORTEX_M_AVG_CASES)  # one per output
    assert all(c.max_abs_diff == 0 for c in report.comparisons)


def test_int8_pool_with_requantization_is_rejected(tmp_path: Path) -> None:
    model, _ = _pool_model("AVERAGE_POOL_2D", "int8", POOL_CASES[0], scale=0.05, zp=1, out_q=(0.1, 1))
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    with pytest.raises(UnsupportedOpError, match="scale and zero point"):
        compile_model(path)


# ---- reductions -----------------------------------------------------------------------------------


def _reduced_shape(shape: tuple[int, ...], axes: list[int], keep_dims: bool) -> tuple[int, ...]:
    axes = [a % len(shape) for a in axes]
    if keep_dims:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _reduce_model(op: str, dtype: str, shape: tuple[int, ...], axes: list[int], keep_dims: bool,
                  in_q: tuple[float, int] | None = None, out_q: tuple[float, int] | None = None) -> bytes:
    b = ModelBuilder()
    x = b.tensor(dtype, shape, scale=in_q[0] if in_q else None, zero_point=in_q[1] if in_q else None)
    axis = b.tensor("int32", (len(axes),), data=np.array(axes))
    out_q = out_q or in_q
    y = b.tensor(dtype, _reduced_shape(shape, axes, keep_dims), scale=out_q[0] if out_q else None,
                 zero_point=out_q[1] if out_q else None)
    b.op(op, [x, axis], [y], {"keep_dims": keep_dims})
    return b.build([x], [y])


# (shape, axes, keep_dims)
MEAN_CASES = [
    ((1, 7, 7, 16), [1, 2], True),  # spatial mean (mobilenet_v2 head)
    ((1, 7, 7, 16), [2, 1], False),
    ((1, 28, 28, 8), [2], True),  # mcunet SE block: width first ...
    ((1, 28, 1, 8), [1], True),  # ... then height
    ((1, 16, 3, 3), [3], False),  # vww after TRANSPOSE
    ((2, 3, 4, 5), [0, 2], True),
    ((3, 5, 6), [-1], False),
    ((4, 9), [0], False),
    ((1, 5, 6, 7), [1, -3], True),  # duplicate after wrapping
    ((2, 3, 4, 5), [0, 1, 3], True),  # three axes
]
CASE_IDS = ["x".join(map(str, c[0])) + "_ax" + "_".join(map(str, c[1])) + ("_keep" if c[2] else "") for c in MEAN_CASES]


@pytest.mark.parametrize("case", MEAN_CASES[1::2], ids=CASE_IDS[1::2])  # the real models add many more
def test_mean_int8_same_quantization(case: tuple, tmp_path: Path) -> None:
    shape, axes, keep = case
    assert_matches_tflm(_reduce_model("MEAN", "int8", shape, axes, keep, in_q=(0.05, -7)), tmp_path)


@pytest.mark.parametrize("case", MEAN_CASES, ids=CASE_IDS)
def test_mean_int8_requantized(case: tuple, tmp_path: Path) -> None:
    shape, axes, keep = case
    rng = np.random.default_rng(len(shape) * 10 + len(axes))
    in_scale = float(rng.uniform(0.005, 0.1))
    out_q = (in_scale * float(rng.uniform(0.2, 1.5)), int(rng.integers(-30, 30)))
    model = _reduce_model("MEAN", "int8", shape, axes, keep, in_q=(in_scale, int(rng.integers(-50, 50))),
                          out_q=out_q)
    assert_matches_tflm(model, tmp_path)


@pytest.mark.parametrize("case", MEAN_CASES[::3], ids=CASE_IDS[::3])
def test_mean_float32(case: tuple, tmp_path: Path) -> None:
    shape, axes, keep = case
    assert_matches_tflm(_reduce_model("MEAN", "float32", shape, axes, keep), tmp_path)


@pytest.mark.parametrize("out_q", [(0.002, 0), (0.0007, 0)], ids=["same", "requantized"])
def test_mean_int16(out_q: tuple[float, int], tmp_path: Path) -> None:
    model = _reduce_model("MEAN", "int16", (1, 6, 5, 4), [1, 2], True, in_q=(0.002, 0), out_q=out_q)
    assert_matches_tflm(model, tmp_path)


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
@pytest.mark.parametrize("op", ["SUM", "REDUCE_MAX"])
def test_sum_and_reduce_max(op: str, dtype: str, tmp_path: Path) -> None:
    in_q = {"int8": (0.01, 3), "int16": (0.001, 0), "float32": None}[dtype]
    out_q = in_q
    if op == "SUM" and in_q is not None:
        out_q = (0.3, -5) if dtype == "int8" else (0.02, 0)
    model = _reduce_model(op, dtype, (2, 5, 4, 3), [1, 2], False, in_q=in_q, out_q=out_q)
    if op == "REDUCE_MAX" and dtype == "int16":  # TFLM has no int16 REDUCE_MAX
        assert_matches_litert(model, tmp_path)
    else:
        assert_matches_tflm(model, tmp_path)


def test_kernels_are_clean_under_sanitizers(tmp_path: Path) -> None:
    """A pool -> mean chain built with -fsanitize=address,undefined runs without a report."""
    b = ModelBuilder()
    x = b.tensor("int8", (1, 9, 9, 4), scale=0.05, zero_point=-3)
    p = b.tensor("int8", (1, 5, 5, 4), scale=0.05, zero_point=-3)
    m = b.tensor("int8", (1, 5, 5, 4), scale=0.05, zero_point=-3)
    axis = b.tensor("int32", (2,), data=np.array([1, 2]))
    y = b.tensor("int8", (1, 1, 1, 4), scale=0.02, zero_point=4)
    b.op("AVERAGE_POOL_2D", [x], [p], {"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_height": 3,
                                       "filter_width": 3})
    b.op("MAX_POOL_2D", [p], [m], {"padding": "SAME", "stride_h": 1, "stride_w": 1, "filter_height": 2,
                                   "filter_width": 2})
    b.op("MEAN", [m, axis], [y], {"keep_dims": True})
    path = tmp_path / "chain.tflite"
    path.write_bytes(b.build([x], [y]))
    result = compile_model(path)
    out_dir = result.write(tmp_path / "out")
    exe = build(out_dir, tmp_path / "runner", extra_flags=["-fsanitize=address,undefined",
                                                           "-fno-sanitize-recover=all"], opt="-O1")
    outputs = run(exe, random_records(result.graph.inputs, 3), result.graph.inputs, result.graph.outputs)
    assert len(outputs) == 3
    assert_matches_tflm(path, tmp_path)


# ---- the configurations of the real models -------------------------------------------------------

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
REAL_MODELS = ["mlcommons_tiny/vww_96_int8", "mlcommons_tiny/vww_96_float", "mlcommons_tiny/kws_ref_model",
               "mlcommons_tiny/pretrainedResnet_quant", "tflite_micro/person_detect",
               "tflite_micro/mobilenet_v2_quantized_1x3x224x224", "tinyengine/detection",
               "tinyengine/mcunetv2_large", "tinyengine/vww"]
POOL_OPS = {"AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN", "SUM", "REDUCE_MAX"}


def single_op_model(node) -> bytes:
    """A model holding only `node`, with the same tensor types, quantization, constants and options."""
    b = ModelBuilder()

    def add(value) -> int:
        q = value.type.quant
        return b.tensor(value.type.dtype, value.type.shape, scale=list(q.scale) if q else None,
                        zero_point=list(q.zero_point) if q else None, axis=q.axis if q else 0,
                        data=value.data if value.is_constant else None)

    inputs = [add(v) if v is not None else -1 for v in node.inputs]
    outputs = [add(v) for v in node.outputs]
    options = {k: v for k, v in node.attrs.items() if k != "version"}
    b.op(node.op, inputs, outputs, options, version=node.attrs.get("version", 1))
    runtime = [i for i, v in zip(inputs, node.inputs, strict=True) if v is not None and not v.is_constant]
    return b.build(runtime, outputs)


@cache
def real_model(name: str) -> Graph:
    return load_tflite(MODELS_DIR / f"{name}.tflite")


def real_configurations(ops: set[str]) -> list[tuple[str, int]]:
    """(model, node index) of each distinct configuration of `ops` in the real models."""
    found, seen = [], set()
    for name in REAL_MODELS:
        if not (MODELS_DIR / f"{name}.tflite").is_file():
            continue
        for node in real_model(name).nodes:
            if node.op not in ops:
                continue
            key = (node.op, repr(node.attrs), tuple(
                (str(v.type), None if v.data is None or not v.is_constant else v.data.tobytes())
                for v in node.inputs if v is not None), str(node.outputs[0].type))
            if key not in seen:
                seen.add(key)
                found.append((name, node.index))
    return found


@pytest.mark.parametrize("model,index", real_configurations(POOL_OPS), ids=lambda v: str(v).replace("/", "-"))
def test_real_model_configuration(model: str, index: int, tmp_path: Path) -> None:
    node = real_model(model).nodes[index]
    assert_matches_tflm(single_op_model(node), tmp_path, records=2)
