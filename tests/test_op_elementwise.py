"""Element-wise operators against TFLite Micro: ADD, MUL, DIV, MAXIMUM, MINIMUM, QUANTIZE, DEQUANTIZE, CAST.

A C build costs seconds, so each test puts a whole sweep (shapes, broadcasts, scales, zero points,
activations) into one model of independent operators and compares every output with TFLM: integers
and floats alike exactly, on seeded full-range inputs or on chosen ones with extremes (saturating
values, rounding ties, infinities, NaN).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.codegen.ops.elementwise import broadcast_loops
from nn2c.errors import UnsupportedOpError
from nn2c.verify.build import build, run
from nn2c.verify.inputs import random_records
from nn2c.verify.oracle import run_tflm
from tests.conftest import model_path
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]

# (input 1 shape, input 2 shape, output shape)
BROADCASTS = [
    ((1, 6, 6, 8), (1, 6, 6, 8), (1, 6, 6, 8)),      # equal shapes: one flat loop
    ((1, 6, 6, 8), (1, 1, 1, 8), (1, 6, 6, 8)),      # per-channel (SE block)
    ((1, 1, 1, 8), (1, 6, 6, 8), (1, 6, 6, 8)),      # the broadcast operand first
    ((1, 5, 7, 3), (), (1, 5, 7, 3)),                # scalar
    ((2, 1, 3), (1, 4, 1), (2, 4, 3)),               # both broadcast, alternating
    ((4, 1), (1, 5), (4, 5)),                        # outer product
    ((3, 4, 5), (5,), (3, 4, 5)),                    # lower rank
    ((2, 3, 1, 4, 1), (1, 3, 2, 1, 5), (2, 3, 2, 4, 5)),  # rank 5
]


def _scale(rng: np.random.Generator, lo: float = -2.5, hi: float = -0.7) -> float:
    return float(10 ** rng.uniform(lo, hi))


def _zp(rng: np.random.Generator, dtype: str) -> int:
    if dtype == "int8":
        return int(rng.integers(-128, 128))
    if dtype == "uint8":
        return int(rng.integers(0, 256))
    if dtype == "int16":
        return int(rng.choice([0, 0, int(rng.integers(-300, 300))]))
    return 0


def _tensor(b: ModelBuilder, rng: np.random.Generator, dtype: str, shape, zp: bool = True) -> int:
    if dtype in ("int8", "int16", "uint8"):
        return b.tensor(dtype, shape, scale=_scale(rng), zero_point=_zp(rng, dtype) if zp else 0)
    return b.tensor(dtype, shape)


def _binary(b: ModelBuilder, rng: np.random.Generator, op: str, dtype: str, shapes, activation: str | None,
            inputs: list[int], outputs: list[int], zp: bool = True, const2: bool = False) -> None:
    s1, s2, so = shapes
    x = _tensor(b, rng, dtype, s1, zp)
    if const2:
        info = np.iinfo(np.dtype(dtype))
        data = rng.integers(info.min, info.max, s2, endpoint=True)
        y = b.tensor(dtype, s2, scale=_scale(rng), zero_point=_zp(rng, dtype) if zp else 0, data=data)
    else:
        y = _tensor(b, rng, dtype, s2, zp)
    o = _tensor(b, rng, dtype, so, zp)
    b.op(op, [x, y], [o], {} if activation is None else {"fused_activation_function": activation})
    inputs.extend([x] if const2 else [x, y])
    outputs.append(o)


def _sweep(op: str, dtype: str, seed: int, activations=ACTIVATIONS, broadcasts=BROADCASTS, zp: bool = True,
           const2: bool = False) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for k, shapes in enumerate(broadcasts):
        activation = None if activations is None else activations[k % len(activations)]
        _binary(b, rng, op, dtype, shapes, activation, inputs, outputs, zp, const2 and k == 0)
    return b.build(inputs, outputs)


def _check(model: bytes, tmp_path: Path, records: list[list[np.ndarray]] | None = None, seed: int = 0) -> None:
    _check_options(model, tmp_path, records, CompileOptions(plan_time_limit=1.0), seed)


def _check_options(model: bytes, tmp_path: Path, records: list[list[np.ndarray]] | None, options: CompileOptions,
                   seed: int = 0) -> None:
    """Compile, build and run (chosen, or 4 seeded full-range) inputs; assert exact equality with TFLM.

    Integers and floats alike must be identical (these kernels do single IEEE operations as TFLM
    does); NaNs compare equal. The exact memory planner gets a short time limit: these models hold
    many independent operators, and in-place overlaps are still planned.
    """
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    result = compile_model(path, options)
    if records is None:
        records = random_records(result.graph.inputs, 4, seed)
    out_dir = tmp_path / "model_c"
    result.write(out_dir, force=True)
    exe = build(out_dir, tmp_path / "runner")
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)
    theirs = run_tflm(path, records, len(result.graph.outputs))
    for r, (o_rec, t_rec) in enumerate(zip(ours, theirs, strict=True)):
        for k, (o, t) in enumerate(zip(o_rec, t_rec, strict=True)):
            np.testing.assert_array_equal(o, np.asarray(t).reshape(o.shape), err_msg=f"record {r}, output {k}")


# --- broadcasting ------------------------------------------------------------------------------
@pytest.mark.parametrize(("s1", "s2", "so", "loops"), [
    ((1, 8, 8, 16), (1, 8, 8, 16), (1, 8, 8, 16), [(1024, 1, 1)]),
    ((1, 8, 8, 16), (1, 1, 1, 16), (1, 8, 8, 16), [(64, 16, 0), (16, 1, 1)]),
    ((1, 8, 8, 16), (), (1, 8, 8, 16), [(1024, 1, 0)]),
    ((2, 1, 3), (1, 4, 1), (2, 4, 3), [(2, 3, 0), (4, 0, 1), (3, 1, 0)]),
    ((1,), (1,), (1,), [(1, 1, 1)]),
    ((), (), (), [(1, 1, 1)]),
])
def test_broadcast_loops_fuse_contiguous_dimensions(s1, s2, so, loops):
    assert broadcast_loops(s1, s2, so) == loops


def test_broadcast_loops_reject_incompatible_shapes():
    with pytest.raises(ValueError):
        broadcast_loops((2, 3), (3, 2), (2, 3))
    with pytest.raises(ValueError):
        broadcast_loops((1, 3), (1, 3), (2, 3))  # the output is larger than the broadcast


# --- ADD ---------------------------------------------------------------------------------------
def test_add_int8_broadcasts_scales_activations(tmp_path):
    _check(_sweep("ADD", "int8", seed=1, const2=True), tmp_path)


def test_add_int16_float32_int32(tmp_path):
    rng = np.random.default_rng(2)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for k, shapes in enumerate(BROADCASTS[:5]):
        _binary(b, rng, "ADD", "int16", shapes, ACTIVATIONS[k % 4], inputs, outputs)
    for k, shapes in enumerate(BROADCASTS):
        _binary(b, rng, "ADD", "float32", shapes, ACTIVATIONS[k % 4], inputs, outputs)
    # int32 sums of full-range inputs wrap; TFLite Micro ignores the fused activation of int32 ADD
    for shapes, act in zip(BROADCASTS[:3], ["RELU", "RELU6", "NONE"], strict=True):
        _binary(b, rng, "ADD", "int32", shapes, act, inputs, outputs)
    _check(b.build(inputs, outputs), tmp_path)


def test_simple_add_model_is_bit_exact(tmp_path):
    assert_matches_tflm(model_path("tflite_micro/simple_add_model.tflite"), tmp_path, records=2)


def test_broadcast_structs_hold_their_loops_only(tmp_path):
    """An ADD / MUL parameter struct holds its broadcast loop nest's arrays as long as the nest (constants of their
    own, not NN2C_EW_MAX_DIMS-long arrays: mcunetv2_large's 39 ADD and MUL took 2.6 KB more of code on the Cortex-M4):
    an ADD's struct is its 11 words of quantization, the rank and three pointers, on this host's C compiler."""
    import re
    import shutil
    import subprocess

    cc = shutil.which("cc") or "gcc"  # (the autouse fixture skips loudly without one)
    path = tmp_path / "add.tflite"
    path.write_bytes(_sweep("ADD", "int8", seed=1, const2=True))
    result = compile_model(path, CompileOptions())
    out = result.write(tmp_path / "out")
    source = result.files[f"{result.name}.c"]
    nests = re.findall(r"\.rank = (\d+), \.dims = \(const int32_t\[\]\)\{([^}]*)\}", source)
    assert nests and all(len(dims.split(",")) == int(rank) for rank, dims in nests), nests
    obj = tmp_path / "model.o"
    subprocess.run([cc, "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(out), "-I",
                    str(out / "nn2c_kernels"), "-c", str(out / f"{result.name}.c"), "-o", str(obj)], check=True)
    symbols = subprocess.run(["nm", "-S", str(obj)], check=True, capture_output=True, text=True).stdout
    sizes = [int(line.split()[1], 16) for line in symbols.splitlines() if re.search(r"\bop\d+_params$", line)]
    # 80 bytes with 64-bit pointers, 60 with 32-bit ones; the rank and three arrays of 8 alone took 100
    assert sizes and max(sizes) <= 80, sizes


# --- MUL ---------------------------------------------------------------------------------------
def test_mul_int8_broadcasts_scales_activations(tmp_path):
    _check(_sweep("MUL", "int8", seed=3, const2=True), tmp_path)


def test_mul_int16_float32_int32(tmp_path):
    rng = np.random.default_rng(4)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for k, shapes in enumerate(BROADCASTS[:5]):  # int16 MUL needs zero points of 0
        _binary(b, rng, "MUL", "int16", shapes, ACTIVATIONS[k % 4], inputs, outputs, zp=False)
    for k, shapes in enumerate(BROADCASTS):
        _binary(b, rng, "MUL", "float32", shapes, ACTIVATIONS[k % 4], inputs, outputs)
    for k, shapes in enumerate(BROADCASTS[:4]):  # products wrap, then the int32 activation clamps
        _binary(b, rng, "MUL", "int32", shapes, ACTIVATIONS[k % 4], inputs, outputs)
    _check(b.build(inputs, outputs), tmp_path)


# --- int8 ADD / MUL by a one-element constant: tables ------------------------------------------------
# (constant shape, constant first, constant value or None for a random one, activation)
_SCALAR_CASES = [((), False, None, "NONE"), ((1,), True, None, "RELU"), ((1, 1, 1, 1), False, -128, "RELU6"),
                 ((1,), False, 127, "RELU_N1_TO_1"), ((), True, 0, "NONE"), ((1, 1), False, None, "RELU")]


def _scalar_model(op: str, seed: int) -> bytes:
    """int8 ADD or MUL of a [1, 4, 8, 8] input (256 elements: every int8 value in one record) by one-element
    constants of random scales and zero points, the constant first or second."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for shape, first, value, activation in _SCALAR_CASES:
        x = _tensor(b, rng, "int8", (1, 4, 8, 8))
        data = np.full(shape, int(rng.integers(-128, 128)) if value is None else value, dtype=np.int64)
        c = b.tensor("int8", shape, scale=_scale(rng), zero_point=_zp(rng, "int8"), data=data)
        o = _tensor(b, rng, "int8", (1, 4, 8, 8))
        b.op(op, [c, x] if first else [x, c], [o], {"fused_activation_function": activation})
        inputs.append(x)
        outputs.append(o)
    return b.build(inputs, outputs)


@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_int8_add_mul_by_a_scalar_constant_are_tables(op, tmp_path):
    """Each layer becomes a 256-entry table computed with the kernel's arithmetic (not at --optimize size, where
    the arithmetic runs): both match TFLM on every int8 input value."""
    model = _scalar_model(op, seed=11 if op == "ADD" else 12)
    path = tmp_path / "scalar.tflite"
    path.write_bytes(model)
    source = compile_model(path, CompileOptions()).files["scalar.c"]
    assert source.count("nn2c_extra_lut_s8(256,") == len(_SCALAR_CASES), source
    assert f"nn2c_{op.lower()}_s8(" not in source
    sized = compile_model(path, CompileOptions(optimize="size")).files["scalar.c"]
    assert "nn2c_extra_lut_s8(" not in sized and sized.count(f"nn2c_{op.lower()}_s8(") == len(_SCALAR_CASES)
    every_value = [np.arange(-128, 128, dtype=np.int8).reshape(1, 4, 8, 8)] * len(_SCALAR_CASES)
    records = [every_value, [np.roll(v, 7) for v in every_value]]
    _check(model, tmp_path / "balanced", records=records)
    _check_options(model, tmp_path / "size", records, CompileOptions(optimize="size", plan_time_limit=1.0))


# (full shape, per-channel shape, per-channel operand first, activation): int8 MUL by one value per channel
_CHANNEL_CASES = [((1, 7, 5, 24), (1, 1, 1, 24), False, "NONE"), ((1, 3, 3, 13), (13,), True, "NONE"),
                  ((1, 4, 4, 1), (1, 1, 1, 1), False, "NONE"), ((2, 6, 40), (1, 1, 40), True, "NONE"),
                  ((1, 5, 5, 8), (1, 1, 1, 8), False, "RELU")]


@pytest.mark.parametrize("optimize", ["balanced", "size"])
def test_int8_mul_by_one_value_per_channel(optimize, tmp_path):
    """An SE block's MUL runs channel by channel (nn2c_mul_s8_channels) where its output stage fits a doubled
    record, at every --optimize level; a fused RELU keeps the broadcast walk. Both match TFLM on full-range
    inputs and zero points (the output scale above the inputs' product: shifts within the record's range)."""
    rng = np.random.default_rng(21)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for full_shape, per_shape, first, activation in _CHANNEL_CASES:
        x = b.tensor("int8", full_shape, scale=_scale(rng, -2.5, -1.5), zero_point=_zp(rng, "int8"))
        s = b.tensor("int8", per_shape, scale=_scale(rng, -2.5, -1.5), zero_point=_zp(rng, "int8"))
        o = b.tensor("int8", full_shape, scale=_scale(rng, -2.0, -1.0), zero_point=_zp(rng, "int8"))
        b.op("MUL", [s, x] if first else [x, s], [o], {"fused_activation_function": activation})
        inputs += [x, s]
        outputs.append(o)
    model = b.build(inputs, outputs)
    path = tmp_path / "channels.tflite"
    path.write_bytes(model)
    options = CompileOptions(optimize=optimize, plan_time_limit=1.0)
    source = compile_model(path, options).files["channels.c"]
    assert source.count("nn2c_mul_s8_channels(") == len(_CHANNEL_CASES) - 1, source
    assert source.count("nn2c_mul_s8(") == 1
    _check_options(model, tmp_path / optimize, None, options, seed=3)


def _channel_model(path: Path) -> Path:
    """int8 MULs by one value per channel for the Cortex-M: 24 and 40 channels (the assembly's groups of 4, one
    with the per-channel operand first), 13 (C), extreme zero points (-128 and 127: offsets 128 and -127) and an
    output scale that leaves most outputs unsaturated. Every output is a model output."""
    rng = np.random.default_rng(22)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for (full_shape, per_shape, first), (zx, zs, zo) in zip(
            [((1, 7, 5, 24), (1, 1, 1, 24), False), ((1, 3, 3, 40), (1, 1, 1, 40), True),
             ((1, 4, 6, 13), (1, 1, 1, 13), False)], [(-128, 127, 5), (127, -128, -128), (3, -9, 127)], strict=True):
        x = b.tensor("int8", full_shape, scale=0.02, zero_point=zx)
        s = b.tensor("int8", per_shape, scale=0.01, zero_point=zs)
        o = b.tensor("int8", full_shape, scale=float(rng.uniform(0.05, 0.1)), zero_point=zo)
        b.op("MUL", [s, x] if first else [x, s], [o], {"fused_activation_function": "NONE"})
        inputs += [x, s]
        outputs.append(o)
    path.write_bytes(b.build(inputs, outputs))
    return path


def test_int8_mul_by_one_value_per_channel_in_qemu(tmp_path, monkeypatch):
    """nn2c_mul_s8_channels on the Cortex-M4, four channels at a time in assembly (and in C without it): bit-exact
    with TFLM in QEMU on inputs all -128, all 127, and at random."""
    from tests.test_sparse import assert_bit_exact_in_qemu

    path = _channel_model(tmp_path / "channels.tflite")
    options = CompileOptions(target="cortex-m4")
    assert compile_model(path, options).files["channels.c"].count("nn2c_mul_s8_channels(") == 3
    shapes = [((1, 7, 5, 24), (1, 1, 1, 24)), ((1, 3, 3, 40), (1, 1, 1, 40)), ((1, 4, 6, 13), (1, 1, 1, 13))]
    records = [[np.full(shape, value, np.int8) for pair in shapes for shape in pair] for value in (-128, 127)]
    assert_bit_exact_in_qemu(path, options, records, 3, 23, tmp_path, monkeypatch)


# --- DIV ---------------------------------------------------------------------------------------
def test_div_float32_int32(tmp_path):
    rng = np.random.default_rng(5)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for k, shapes in enumerate(BROADCASTS):
        _binary(b, rng, "DIV", "float32", shapes, ACTIVATIONS[k % 4], inputs, outputs)
    for k, shapes in enumerate(BROADCASTS[:4]):
        _binary(b, rng, "DIV", "int32", shapes, ACTIVATIONS[k % 4], inputs, outputs)
    _check(b.build(inputs, outputs), tmp_path)


def test_div_int8_every_input_pair(tmp_path):
    """All 65536 (x1, x2) pairs, divisors at the zero point included, for several quantizations."""
    configs = [  # s1, zp1, s2, zp2, s_out, zp_out, activation
        (0.05, 3, 0.02, -5, 0.1, 2, "NONE"),
        (0.5, 0, 0.01, 0, 0.5, 0, "NONE"),
        (0.01, -10, 0.5, 7, 0.001, -3, "RELU"),
        (0.2, -128, 0.003, 127, 0.9, 100, "RELU6"),
        (0.0004, 60, 0.08, -90, 0.00002, -7, "NONE"),
    ]
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for s1, z1, s2, z2, so, zo, act in configs:
        x = b.tensor("int8", (256, 256), scale=s1, zero_point=z1)
        y = b.tensor("int8", (256, 256), scale=s2, zero_point=z2)
        o = b.tensor("int8", (256, 256), scale=so, zero_point=zo)
        b.op("DIV", [x, y], [o], {"fused_activation_function": act})
        inputs += [x, y]
        outputs.append(o)
    grid = np.arange(-128, 128, dtype=np.int8)
    record = [np.repeat(grid, 256).reshape(256, 256), np.tile(grid, 256).reshape(256, 256)] * len(configs)
    _check(b.build(inputs, outputs), tmp_path, [record])


def test_div_int8_broadcast(tmp_path):
    _check(_sweep("DIV", "int8", seed=6, broadcasts=BROADCASTS[1:6]), tmp_path)


# --- MAXIMUM / MINIMUM -------------------------------------------------------------------------
def test_maximum_minimum_all_types(tmp_path):
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for op in ("MAXIMUM", "MINIMUM"):
        for k, dtype in enumerate(["int8", "int16", "int32", "int64", "float32"]):
            shapes = BROADCASTS[(k + (op == "MINIMUM")) % len(BROADCASTS)]
            _binary(b, rng, op, dtype, shapes, None, inputs, outputs)
    _check(b.build(inputs, outputs), tmp_path)


def test_float_binary_ops_on_extreme_values(tmp_path):
    """inf, NaN, signed zeros, huge and tiny values through every float binary operator."""
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-38, 1e-45, 0.5, 6.0, -6.5],
                       np.float32)
    n = special.size
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for op, act in [("ADD", "NONE"), ("ADD", "RELU6"), ("MUL", "NONE"), ("MUL", "RELU"), ("DIV", "NONE"),
                    ("DIV", "RELU_N1_TO_1"), ("MAXIMUM", None), ("MINIMUM", None)]:
        x = b.tensor("float32", (n, n))
        y = b.tensor("float32", (n, n))
        o = b.tensor("float32", (n, n))
        b.op(op, [x, y], [o], {} if act is None else {"fused_activation_function": act})
        inputs += [x, y]
        outputs.append(o)
    record = [np.repeat(special, n).reshape(n, n), np.tile(special, n).reshape(n, n)] * 8
    _check(b.build(inputs, outputs), tmp_path, [record])


# --- QUANTIZE / DEQUANTIZE ---------------------------------------------------------------------
def test_quantize_float_to_int8_int16_extremes(tmp_path):
    rng = np.random.default_rng(8)
    configs = [("int8", 0.05, -3), ("int8", 0.0078125, -128), ("int8", 0.3, 127), ("int16", 0.001, 0),
               ("int16", 0.5, -20)]
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    record: list[np.ndarray] = []
    for dtype, s, zp in configs:
        values = np.concatenate([
            rng.uniform(-300, 300, 200) * s,                      # in range and saturating
            (np.arange(-40, 40) + 0.5) * np.float32(s),            # ties: round half away from zero
            np.array([0.0, -0.0, 3e9, -3e9, 1e30, -1e30, np.inf, -np.inf, np.nan, 2.0**31, -(2.0**31)]),
        ]).astype(np.float32)
        x = b.tensor("float32", values.shape)
        o = b.tensor(dtype, values.shape, scale=s, zero_point=zp)
        b.op("QUANTIZE", [x], [o])
        inputs.append(x)
        outputs.append(o)
        record.append(values)
    _check(b.build(inputs, outputs), tmp_path, [record])


def test_quantize_rounding_equals_roundf_on_every_97th_float(tmp_path):
    """The QUANTIZE kernel rounds without the C library on cores without VRINTA (the Cortex-M4; the host
    build takes the same path): on every 97th of the 2^32 float bit patterns (zeros, denormals, ties,
    NaNs, infinities among them) it must give what TFLite's static_cast<int32_t>(roundf(x)) gives on
    x86 (INT32_MIN outside the int32 range), here with the host's roundf as the reference."""
    import shutil
    import subprocess
    from importlib import resources

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("SKIPPED LOUDLY: no host C compiler")
    kernels = Path(str(resources.files("nn2c") / "kernels"))
    harness = tmp_path / "round.c"
    harness.write_text(
        '#include "nn2c_elementwise.c"\n#include <math.h>\n#include <stdio.h>\n'
        "int main(void) {\n"
        "    unsigned long long bad = 0, seen = 0;\n"
        "    for (unsigned long long u = 0; u <= 0xFFFFFFFFull; u += 97, ++seen) {\n"
        "        const uint32_t bits = (uint32_t)u; float x; memcpy(&x, &bits, 4);\n"
        "        const float r = roundf(x);\n"
        "        const int32_t want = r >= -2147483648.0f && r < 2147483648.0f ? (int32_t)r : INT32_MIN;\n"
        "        bad += nn2c_ew_f32_round_to_i32(x) != want;\n"
        "        bad += nn2c_ew_f32_round_to_i32((float)(int32_t)(u >> 9) + 0.5f) !=\n"
        "               (int32_t)roundf((float)(int32_t)(u >> 9) + 0.5f);\n"
        "    }\n"
        '    printf("%llu %llu\\n", seen, bad);\n'
        "    return 0;\n"
        "}\n")
    exe = tmp_path / "round"
    subprocess.run([compiler, "-std=c99", "-O2", "-I", str(kernels), str(harness), "-o", str(exe), "-lm"],
                   check=True, capture_output=True)
    seen, bad = map(int, subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split())
    assert seen == 2**32 // 97 + 1 and bad == 0


def test_requantize_every_type_pair(tmp_path):
    rng = np.random.default_rng(9)
    pairs = [("int8", "int8"), ("int8", "int16"), ("int8", "uint8"), ("int8", "int32"), ("int16", "int8"),
             ("int16", "int16"), ("int16", "int32"), ("uint8", "int8"), ("int32", "int8"), ("int32", "int16")]
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for k, (src, dst) in enumerate(pairs):
        shape = (3, 37)
        s_in = _scale(rng, -3, 0)
        s_out = s_in * float(rng.choice([1.0, 0.5, 3.0, 1000.0, 0.001])) * float(rng.uniform(0.8, 1.25))
        z_in = _zp(rng, src) if src != "int32" else int(rng.integers(-1000, 1000))
        z_out = _zp(rng, dst) if dst != "int32" else 0
        if k == 2:  # int8 -> uint8 with the same scale: TFLite's shift-by-128 fast path
            s_out, z_in, z_out = s_in, -5, 123
        x = b.tensor(src, shape, scale=s_in, zero_point=z_in)
        o = b.tensor(dst, shape, scale=s_out, zero_point=z_out)
        b.op("QUANTIZE", [x], [o])
        inputs.append(x)
        outputs.append(o)
    _check(b.build(inputs, outputs), tmp_path)


def test_dequantize_int8_int16_uint8(tmp_path):
    rng = np.random.default_rng(10)
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    for dtype in ["int8", "int16", "uint8", "int8", "int16"]:
        x = b.tensor(dtype, (2, 50), scale=_scale(rng, -4, 1), zero_point=_zp(rng, dtype))
        o = b.tensor("float32", (2, 50))
        b.op("DEQUANTIZE", [x], [o])
        inputs.append(x)
        outputs.append(o)
    _check(b.build(inputs, outputs), tmp_path)


# --- CAST --------------------------------------------------------------------------------------
def test_cast_every_type_pair(tmp_path):
    rng = np.random.default_rng(11)
    types = ["int8", "int16", "int32", "float32", "bool"]
    floats = np.concatenate([
        rng.uniform(-70000, 70000, 40), rng.uniform(-3, 3, 20),
        np.array([0.0, -0.0, 0.5, -0.5, 127.9, -128.9, 255.5, 32767.5, -32768.9, 2.0**31, -(2.0**31), 3e9, -3e9,
                  np.inf, -np.inf, np.nan, 1e-40]),
    ]).astype(np.float32)
    n = floats.size
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []
    record: list[np.ndarray] = []
    for src in types:
        for dst in types:
            x = b.tensor(src, (n,))
            o = b.tensor(dst, (n,))
            b.op("CAST", [x], [o])
            inputs.append(x)
            outputs.append(o)
            if src == "float32":
                record.append(floats)
            elif src == "bool":
                record.append(rng.integers(0, 2, n).astype(np.bool_))
            else:
                info = np.iinfo(np.dtype(src))
                record.append(rng.integers(info.min, info.max, n, endpoint=True).astype(src))
    _check(b.build(inputs, outputs), tmp_path, [record])


# --- in place ----------------------------------------------------------------------------------
def test_chain_with_outputs_over_their_inputs(tmp_path):
    """The planner lets element-wise outputs overlap their inputs (QUANTIZE in place, ADD over an
    operand, a broadcast operand first, DEQUANTIZE's float output below its int8 input)."""
    rng = np.random.default_rng(12)
    b = ModelBuilder()
    x = b.tensor("float32", (1, 16, 16, 8), scale=0.02, zero_point=-4)  # input range ~ int8 range
    q = b.tensor("int8", (1, 16, 16, 8), scale=0.02, zero_point=-4)
    c = b.tensor("int8", (1, 1, 1, 8), scale=0.01, zero_point=3, data=rng.integers(-128, 128, (1, 1, 1, 8)))
    m = b.tensor("int8", (1, 16, 16, 8), scale=0.03, zero_point=1)
    s = b.tensor("int8", (1, 1, 16, 8), scale=0.04, zero_point=0)
    a = b.tensor("int8", (1, 16, 16, 8), scale=0.05, zero_point=-2)
    a2 = b.tensor("int8", (1, 16, 16, 8), scale=0.06, zero_point=5)
    d = b.tensor("float32", (1, 16, 16, 8))
    b.op("QUANTIZE", [x], [q])
    b.op("MUL", [q, c], [m], {"fused_activation_function": "RELU"})
    b.op("ADD", [m, q], [a])
    b.op("ADD", [s, a], [a2], {"fused_activation_function": "RELU6"})
    b.op("DEQUANTIZE", [a2], [d])
    _check(b.build([x, s], [d]), tmp_path)


# --- what nn2c refuses -------------------------------------------------------------------------
def _one_op(op: str, tensors: list[tuple], options: dict | None = None) -> bytes:
    b = ModelBuilder()
    idx = [b.tensor(dtype, shape, **kw) for dtype, shape, kw in tensors]
    b.op(op, idx[:-1], idx[-1:], options or {})
    return b.build(idx[:-1], idx[-1:])


@pytest.mark.parametrize(("model", "message"), [
    (_one_op("MUL", [("int16", (4,), {"scale": 0.1, "zero_point": 3}), ("int16", (4,), {"scale": 0.1}),
                     ("int16", (4,), {"scale": 0.1})]), "zero points of 0"),
    (_one_op("ADD", [("int8", (2, 3), {"scale": 0.1}), ("int8", (3, 2), {"scale": 0.1}),
                     ("int8", (2, 3), {"scale": 0.1})]), "do not broadcast"),
    (_one_op("QUANTIZE", [("float32", (2, 4), {}),
                          ("int8", (2, 4), {"scale": [0.1, 0.2], "zero_point": [0, 0], "axis": 0})]), "per channel"),
    (_one_op("DEQUANTIZE", [("int32", (4,), {"scale": 0.1}), ("float32", (4,), {})]), "DEQUANTIZE from int32"),
    (_one_op("ADD", [("int8", (4,), {"scale": 0.1}), ("int8", (4,), {"scale": 0.1}),
                     ("int8", (4,), {"scale": 0.1})], {"fused_activation_function": "TANH"}), "TANH"),
])
def test_unsupported_variants_are_refused(tmp_path, model, message):
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    with pytest.raises(UnsupportedOpError, match=message):
        compile_model(path)


# --- real models -------------------------------------------------------------------------------
@pytest.mark.parametrize("model", [
    "mlcommons_tiny/pretrainedResnet_quant.tflite", "mlcommons_tiny/pretrainedResnet.tflite",
    "tinyengine/vww.tflite", "tinyengine/detection.tflite", "tinyengine/mcunetv2_large.tflite",
    "tinyengine/ptq_mnist_lenet-300-100.tflite", "tflite_micro/keyword_scrambled.tflite",
])
def test_real_models_elementwise_ops_lower(model):
    """Every element-wise operator of these models compiles (their other operators are not checked)."""
    from nn2c.api import load_model
    from nn2c.codegen.context import EmitContext
    from nn2c.codegen.ops import load_all

    lowerings = load_all()
    graph = load_model(model_path(model))
    ctx = EmitContext("m")
    ours = [n for n in graph.nodes
            if n.op in ("ADD", "MUL", "DIV", "MAXIMUM", "MINIMUM", "QUANTIZE", "DEQUANTIZE", "CAST")]
    assert ours
    for node in ours:
        ctx.begin(node)
        lowerings[node.op](node, ctx)
        assert ctx.code[-1].statements, node


@pytest.mark.parametrize("model", [
    "mlcommons_tiny/pretrainedResnet_quant.tflite", "mlcommons_tiny/pretrainedResnet.tflite",
    "tinyengine/vww.tflite", "tinyengine/detection.tflite", "tinyengine/mcunetv2_large.tflite",
])
def test_real_models_elementwise_nodes_match_tflm(model, tmp_path):
    """Each element-wise node of a real model (same shapes, quantization, constants and activation),
    cut out as an independent operator of one test model, matches TFLM on full-range inputs."""
    from nn2c.api import load_model

    graph = load_model(model_path(model))
    b = ModelBuilder()
    inputs: list[int] = []
    outputs: list[int] = []

    def copy(value) -> int:
        q = value.type.quant
        kw = {} if q is None else {"scale": list(q.scale), "zero_point": list(q.zero_point), "axis": q.axis}
        index = b.tensor(value.type.dtype, value.type.shape, data=value.data if value.is_constant else None, **kw)
        if not value.is_constant:
            inputs.append(index)
        return index

    for node in graph.nodes:
        if node.op not in ("ADD", "MUL", "QUANTIZE", "DEQUANTIZE"):
            continue
        ins = [copy(v) for v in node.inputs if v is not None]
        out = copy(node.outputs[0])
        inputs.remove(out)
        options = {}
        if node.op in ("ADD", "MUL"):
            options["fused_activation_function"] = node.attrs.get("fused_activation_function", "NONE")
        b.op(node.op, ins, [out], options)
        outputs.append(out)
    assert outputs
    _check(b.build(inputs, outputs), tmp_path, seed=13)
