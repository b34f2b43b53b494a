"""BATCH_MATMUL, TRANSPOSE_CONV, L2_NORMALIZATION and run-time weights (FULLY_CONNECTED, CONV_2D)
against TFLite Micro: float32 within 1e-5, int8 / int16 bit-exact.

A C build costs seconds, so each test puts a sweep of independent operators into one model.
Output scales follow the accumulator's spread so that int outputs cover the range instead of
saturating. The last test builds the new kernels with ASan / UBSan and runs them on extreme inputs.
"""

from __future__ import annotations

from math import sqrt
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.errors import InvalidModelError, UnsupportedOpError
from nn2c.verify.build import build, run
from tests.c_safety import extreme_records
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder

# (lhs shape, rhs shape, adj_x, adj_y): ranks 2..5, broadcast batch axes, every adjoint combination
MATMULS = [
    ((3, 4), (4, 5), False, False),
    ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True),
    ((4, 3), (5, 4), True, True),
    ((2, 3, 4), (2, 4, 5), False, False),
    ((2, 3, 4), (4, 5), False, False),            # rhs broadcast over the batch
    ((3, 4), (2, 4, 5), False, False),            # lhs broadcast over the batch
    ((2, 1, 3, 6), (1, 3, 6, 2), False, False),   # both broadcast
    ((2, 1, 6, 3), (1, 3, 2, 6), True, True),
    ((1, 2, 2, 3, 4), (2, 1, 2, 4, 3), False, False),  # rank 5
    ((1, 7), (7, 1), False, False),
]

QRANGE = {"int8": (-128, 127), "int16": (-32768, 32767)}


def _depth(lhs: tuple[int, ...], adj_x: bool) -> int:
    return lhs[-2] if adj_x else lhs[-1]


def _out_shape(lhs, rhs, adj_x, adj_y) -> tuple[int, ...]:
    batch = np.broadcast_shapes(lhs[:-2], rhs[:-2])
    rows = lhs[-1] if adj_x else lhs[-2]
    cols = rhs[-2] if adj_y else rhs[-1]
    return (*batch, rows, cols)


def _matmul_model(dtype: str, seed: int, constant_rhs: bool = False) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    inputs, outputs = [], []
    for lhs, rhs, adj_x, adj_y in MATMULS:
        out = _out_shape(lhs, rhs, adj_x, adj_y)
        data = None
        if dtype == "float32":
            if constant_rhs:
                data = rng.standard_normal(rhs)
            x, y, o = b.tensor(dtype, lhs), b.tensor(dtype, rhs, data=data), b.tensor(dtype, out)
        else:
            lo, hi = QRANGE[dtype]
            zp = (lambda: int(rng.integers(-100, 100))) if dtype == "int8" else (lambda: 0)
            sl, sr = float(rng.uniform(0.01, 0.1)), float(rng.uniform(0.01, 0.1))
            spread = 74.0 if dtype == "int8" else 19000.0
            so = sl * sr * spread * spread * sqrt(_depth(lhs, adj_x)) / (40.0 if dtype == "int8" else 8000.0)
            if constant_rhs:
                data = rng.integers(lo, hi, rhs, endpoint=True)
            x = b.tensor(dtype, lhs, scale=sl, zero_point=zp())
            y = b.tensor(dtype, rhs, scale=sr, zero_point=zp(), data=data)
            o = b.tensor(dtype, out, scale=so * float(rng.uniform(0.7, 1.4)), zero_point=zp())
        b.op("BATCH_MATMUL", [x, y], [o], {"adj_x": adj_x, "adj_y": adj_y})
        inputs += [x] if constant_rhs else [x, y]
        outputs.append(o)
    return b.build(inputs, outputs)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
def test_batch_matmul_matches_tflm(tmp_path: Path, dtype: str) -> None:
    assert_matches_tflm(_matmul_model(dtype, seed=1), tmp_path, name=f"bmm_{dtype}")


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_batch_matmul_with_a_constant_operand_matches_tflm(tmp_path: Path, dtype: str) -> None:
    assert_matches_tflm(_matmul_model(dtype, seed=2, constant_rhs=True), tmp_path, name=f"bmm_const_{dtype}")


def test_batch_matmul_refuses_an_undefined_requantisation(tmp_path: Path) -> None:
    """An int8 BATCH_MATMUL whose output scale makes its multiplier 2^30 or more: TFLite Micro's requantisation
    shifts left by 31 bits or more there (undefined), so nn2c refuses it in one error, as it does for CONV_2D."""
    b = ModelBuilder()
    x = b.tensor("int8", (1, 2, 3), scale=0.5, zero_point=0)
    y = b.tensor("int8", (1, 3, 2), scale=0.5, zero_point=0)
    o = b.tensor("int8", (1, 2, 2), scale=1e-12, zero_point=0)
    b.op("BATCH_MATMUL", [x, y], [o], {"adj_x": False, "adj_y": False})
    with pytest.raises(InvalidModelError, match=r"op #0 BATCH_MATMUL .*output multiplier.* is 2.5e\+11"):
        path = tmp_path / "bmm_huge_multiplier.tflite"
        path.write_bytes(b.build([x, y], [o]))
        compile_model(path)


# (input NHWC, output channels, kernel, stride, padding, bias, fused activation)
TCONVS = [
    ((1, 4, 4, 3), 2, (3, 3), (2, 2), "SAME", True, "NONE"),
    ((1, 4, 4, 3), 2, (3, 3), (2, 2), "VALID", True, "RELU"),
    ((2, 3, 5, 2), 4, (2, 3), (1, 2), "SAME", False, "NONE"),
    ((1, 5, 3, 4), 3, (4, 2), (3, 1), "VALID", True, "RELU6"),
    ((1, 2, 2, 1), 1, (1, 1), (1, 1), "SAME", True, "NONE"),
    ((1, 3, 3, 2), 5, (5, 5), (2, 3), "SAME", True, "NONE"),
]


def _tconv_out(shape, kernel, stride, padding) -> tuple[int, int]:
    _, h, w, _ = shape
    if padding == "SAME":
        return h * stride[0], w * stride[1]
    return (h - 1) * stride[0] + kernel[0], (w - 1) * stride[1] + kernel[1]


def _tconv_model(dtype: str, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    inputs, outputs = [], []
    for shape, out_c, kernel, stride, padding, with_bias, activation in TCONVS:
        oh, ow = _tconv_out(shape, kernel, stride, padding)
        oshape = (shape[0], oh, ow, out_c)
        wshape = (out_c, *kernel, shape[3])
        depth = kernel[0] * kernel[1] * shape[3]
        out_spec = b.tensor("int32", (4,), data=np.array(oshape))
        if dtype == "float32":
            x = b.tensor(dtype, shape)
            w = b.tensor(dtype, wshape, data=rng.standard_normal(wshape) / sqrt(depth))
            bias = b.tensor(dtype, (out_c,), data=rng.standard_normal(out_c)) if with_bias else -1
            o = b.tensor(dtype, oshape)
        else:
            s_in = float(rng.uniform(0.01, 0.1))
            w_scales = rng.uniform(0.002, 0.02, out_c)
            x_zp = int(rng.integers(-50, 50)) if dtype == "int8" else 0
            x = b.tensor(dtype, shape, scale=s_in, zero_point=x_zp)
            w = b.tensor("int8", wshape, scale=list(w_scales), zero_point=[0] * out_c, axis=0,
                         data=rng.integers(-127, 128, wshape))
            bias_dtype = "int32" if dtype == "int8" else "int64"
            spread = 74.0 if dtype == "int8" else 19000.0
            bias = b.tensor(bias_dtype, (out_c,), scale=[s_in * s for s in w_scales], zero_point=[0] * out_c,
                            data=rng.integers(-3000, 3000, out_c)) if with_bias else -1
            so = s_in * float(np.mean(w_scales)) * 73 * spread * sqrt(depth) / (40.0 if dtype == "int8" else 8000.0)
            o = b.tensor(dtype, oshape, scale=so, zero_point=int(rng.integers(-20, 20)) if dtype == "int8" else 0)
        b.op("TRANSPOSE_CONV", [out_spec, w, x] + ([bias] if with_bias else []), [o],
             {"padding": padding, "stride_h": stride[0], "stride_w": stride[1],
              "fused_activation_function": activation}, version=4)
        inputs.append(x)
        outputs.append(o)
    return b.build(inputs, outputs)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
def test_transpose_conv_matches_tflm(tmp_path: Path, dtype: str) -> None:
    assert_matches_tflm(_tconv_model(dtype, seed=3), tmp_path, name=f"tconv_{dtype}")


def _runtime_weights_model(seed: int) -> bytes:
    """L2_NORMALIZATION (float, int8) and FULLY_CONNECTED / CONV_2D whose weights are model inputs."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    inputs, outputs = [], []
    for shape in [(2, 7), (1, 3, 4, 5), (16,)]:
        x, o = b.tensor("float32", shape), b.tensor("float32", shape)
        b.op("L2_NORMALIZATION", [x], [o])
        inputs.append(x)
        outputs.append(o)
        x = b.tensor("int8", shape, scale=float(rng.uniform(0.01, 0.1)), zero_point=int(rng.integers(-30, 30)))
        o = b.tensor("int8", shape, scale=1.0 / 128, zero_point=0)
        b.op("L2_NORMALIZATION", [x], [o])
        inputs.append(x)
        outputs.append(o)
    # float FULLY_CONNECTED with run-time weights and bias
    x, w, bias, o = (b.tensor("float32", s) for s in [(3, 6), (4, 6), (4,), (3, 4)])
    b.op("FULLY_CONNECTED", [x, w, bias], [o], {"fused_activation_function": "RELU"})
    inputs += [x, w, bias]
    outputs.append(o)
    # int8 FULLY_CONNECTED with run-time weights
    x = b.tensor("int8", (2, 8), scale=0.05, zero_point=3)
    w = b.tensor("int8", (5, 8), scale=0.02, zero_point=0)
    o = b.tensor("int8", (2, 5), scale=0.05 * 0.02 * 74 * 74 * sqrt(8) / 40, zero_point=-4)
    b.op("FULLY_CONNECTED", [x, w, -1], [o])
    inputs += [x, w]
    outputs.append(o)
    # float CONV_2D with a run-time filter (plain OHWI kernel)
    x, w = b.tensor("float32", (1, 5, 5, 3)), b.tensor("float32", (4, 3, 3, 3))
    bias = b.tensor("float32", (4,), data=rng.standard_normal(4))
    o = b.tensor("float32", (1, 3, 3, 4))
    b.op("CONV_2D", [x, w, bias], [o], {"padding": "SAME", "stride_h": 2, "stride_w": 2})
    inputs += [x, w]
    outputs.append(o)
    return b.build(inputs, outputs)


def test_l2_normalization_and_runtime_weights_match_tflm(tmp_path: Path) -> None:
    assert_matches_tflm(_runtime_weights_model(seed=4), tmp_path, name="runtime_weights")


def test_int8_l2_normalization_with_another_output_scale_is_refused(tmp_path: Path) -> None:
    b = ModelBuilder()
    x = b.tensor("int8", (1, 4), scale=0.1, zero_point=0)
    o = b.tensor("int8", (1, 4), scale=0.1, zero_point=0)
    b.op("L2_NORMALIZATION", [x], [o])
    path = tmp_path / "l2.tflite"
    path.write_bytes(b.build([x], [o]))
    with pytest.raises(UnsupportedOpError, match=r"L2_NORMALIZATION.*1/128"):
        compile_model(path, CompileOptions())


_SANITIZED_MODELS = {"bmm8": lambda: _matmul_model("int8", 5), "bmm16": lambda: _matmul_model("int16", 5),
                     "bmmf": lambda: _matmul_model("float32", 5), "tconv8": lambda: _tconv_model("int8", 6),
                     "tconv16": lambda: _tconv_model("int16", 6), "rt": lambda: _runtime_weights_model(7)}


@pytest.mark.parametrize("name", list(_SANITIZED_MODELS))  # one build each, so the workers share them
def test_new_kernels_are_sanitizer_clean_on_extreme_inputs(tmp_path: Path, name: str) -> None:
    """int8 / int16 / float BATCH_MATMUL, TRANSPOSE_CONV and L2 norms at all-min / all-max inputs."""
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(_SANITIZED_MODELS[name]())
    result = compile_model(path, CompileOptions(name="model"))
    result.write(tmp_path / name, force=True)
    exe = build(tmp_path / name, tmp_path / f"{name}_run",
                extra_flags=["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                             "-fno-omit-frame-pointer"])
    outputs = run(exe, extreme_records(result.graph), result.graph.inputs, result.graph.outputs)
    assert len(outputs) == 2
