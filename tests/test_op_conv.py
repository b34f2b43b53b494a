"""CONV_2D and DEPTHWISE_CONV_2D against TFLite Micro (int8, int16x8, float32) and against LiteRT's
reference kernels (hybrid float32 activations with int8 weights, which TFLite Micro refuses).

Single-op models with seeded random weights; output scales follow the accumulator's spread so that
outputs cover the int8 range instead of saturating.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from math import sqrt
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.codegen.ops.conv import compute_out_size
from nn2c.errors import UnsupportedOpError
from nn2c.verify.compare import verify_model
from tests.conftest import model_path
from tests.oracle_check import assert_matches_tflm
from tests.tflite_builder import ModelBuilder


@dataclass(frozen=True)
class Case:
    shape: tuple[int, int, int, int]  # N, H, W, C
    out_c: int  # conv: output channels; depthwise: depth multiplier
    kernel: tuple[int, int] = (3, 3)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: str = "SAME"
    activation: str = "NONE"
    per_channel: bool = True
    input_zp: int = 0
    output_zp: int = 0
    groups: int = 1
    bias: bool = True
    equal_scales: bool = False  # one scale per channel, all equal (TFLite treats it as per-tensor)
    gain: float = 1.0  # output scale divided by this: above ~100, some channels' multipliers exceed 0.5 (shift >= 0)
    weight_max: int = 127  # int8 weights drawn from [-weight_max, weight_max]
    weight_min: int | None = None  # the lowest weight drawn instead of -weight_max (-128: int8's whole range)


def _seed(case: Case) -> int:
    # (weight_max and weight_min at their defaults left out: the seeds of the cases written before them stay as
    # they were)
    return zlib.crc32(repr(case).replace(", weight_min=None)", ")").replace(", weight_max=127)", ")").encode()) % 10000


def _out_shape(case: Case, out_c: int) -> tuple[int, int, int, int]:
    n, h, w, _ = case.shape
    oh = compute_out_size(case.padding, h, case.kernel[0], case.stride[0], case.dilation[0])
    ow = compute_out_size(case.padding, w, case.kernel[1], case.stride[1], case.dilation[1])
    return n, oh, ow, out_c


def _options(case: Case, depthwise: bool) -> dict:
    options = {"padding": case.padding, "stride_h": case.stride[0], "stride_w": case.stride[1],
               "dilation_hfactor": case.dilation[0], "dilation_wfactor": case.dilation[1],
               "fused_activation_function": case.activation}
    if depthwise:
        options["depth_multiplier"] = case.out_c
    return options


def _filter_shape(case: Case, depthwise: bool) -> tuple[tuple[int, ...], int, int]:
    """(filter shape, output channels, accumulation depth per output)."""
    c = case.shape[3]
    kh, kw = case.kernel
    if depthwise:
        return (1, kh, kw, c * case.out_c), c * case.out_c, kh * kw
    return (case.out_c, kh, kw, c // case.groups), case.out_c, kh * kw * c // case.groups


def _add_quantized_op(b: ModelBuilder, case: Case, depthwise: bool, act: str, rng: np.random.Generator,
                      bias_dtype: str | None = None) -> tuple[int, int]:
    """Add one int8 (act='int8') or int16x8 (act='int16') op to b; returns its (input, output)."""
    wshape, out_c, depth = _filter_shape(case, depthwise)
    axis = 3 if depthwise else 0
    in_scale = float(rng.uniform(0.01, 0.1))
    w_scales = rng.uniform(0.002, 0.02, out_c) if case.per_channel else np.array([rng.uniform(0.002, 0.02)])
    weights = rng.integers(-case.weight_max if case.weight_min is None else case.weight_min, case.weight_max + 1,
                           wshape)
    x_range = 74.0 if act == "int8" else 19000.0  # std of uniform int8 / int16 data
    target = 40.0 if act == "int8" else 8000.0
    out_scale = float(in_scale * np.mean(w_scales) * sqrt(depth) * 73.0 * x_range / target * rng.uniform(0.7, 1.4))
    out_scale /= case.gain
    izp = case.input_zp if act == "int8" else 0
    ozp = case.output_zp if act == "int8" else 0
    x = b.tensor(act, case.shape, scale=in_scale, zero_point=izp)
    w = b.tensor("int8", wshape, scale=list(w_scales), zero_point=[0] * len(w_scales), axis=axis, data=weights)
    inputs = [x, w]
    if case.bias:
        bias_dtype = bias_dtype or ("int32" if act == "int8" else "int64")
        bias_scales = [float(np.float32(in_scale) * np.float32(s)) for s in w_scales]
        spread = int(sqrt(depth) * 73 * x_range)
        inputs.append(b.tensor(bias_dtype, (out_c,), scale=bias_scales, zero_point=[0] * len(bias_scales),
                               data=rng.integers(-spread, spread + 1, out_c)))
    y = b.tensor(act, _out_shape(case, out_c), scale=out_scale, zero_point=ozp)
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    b.op(op, inputs, [y], _options(case, depthwise), version=3 if act == "int16" else 2)
    return x, y


def _quantized_model(cases: list[tuple[Case, bool]], act: str, seed: int, bias_dtype: str | None = None) -> bytes:
    """(case, depthwise) ops side by side, each with its own model input and output."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    pairs = [_add_quantized_op(b, case, depthwise, act, rng, bias_dtype) for case, depthwise in cases]
    return b.build([x for x, _ in pairs], [y for _, y in pairs])


def _add_float_op(b: ModelBuilder, case: Case, depthwise: bool, rng: np.random.Generator,
                  hybrid: bool) -> tuple[int, int]:
    """Add one float (or hybrid: int8 weights) op to b; returns its (input, output) tensors."""
    wshape, out_c, depth = _filter_shape(case, depthwise)
    x = b.tensor("float32", case.shape)
    if hybrid:
        axis = 3 if depthwise else 0
        w_scales = rng.uniform(0.002, 0.02, out_c) if case.per_channel else np.array([0.01])
        if case.equal_scales:
            w_scales = np.full(out_c, 0.01)
        w = b.tensor("int8", wshape, scale=list(w_scales), zero_point=[0] * len(w_scales), axis=axis,
                     data=rng.integers(-127, 128, wshape))
    else:
        w = b.tensor("float32", wshape, data=rng.standard_normal(wshape) / sqrt(depth))
    inputs = [x, w]
    if case.bias:
        inputs.append(b.tensor("float32", (out_c,), data=rng.standard_normal(out_c) * 0.5))
    y = b.tensor("float32", _out_shape(case, out_c))
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    b.op(op, inputs, [y], _options(case, depthwise), version=1)
    return x, y


def _float_model(cases: list[Case], depthwise: bool, seed: int, hybrid: bool = False) -> bytes:
    """Independent single ops side by side (one model input and output each)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    pairs = [_add_float_op(b, case, depthwise, rng, hybrid) for case in cases]
    return b.build([x for x, _ in pairs], [y for _, y in pairs])


CONV_CASES = [
    Case((1, 8, 8, 3), 4),
    Case((1, 9, 7, 5), 6, stride=(2, 2), activation="RELU", input_zp=-3, output_zp=2),
    Case((1, 10, 10, 16), 8, kernel=(1, 1), input_zp=-128, output_zp=-128, activation="RELU6"),
    Case((2, 6, 6, 20), 7, kernel=(1, 1), input_zp=5, output_zp=-7),
    Case((1, 12, 11, 4), 5, kernel=(3, 2), stride=(2, 3), padding="VALID", per_channel=False, input_zp=-1),
    Case((1, 11, 10, 3), 4, kernel=(3, 3), dilation=(2, 3), input_zp=10, output_zp=-20),
    Case((1, 9, 9, 2), 3, kernel=(5, 5), dilation=(2, 1), padding="VALID", activation="RELU_N1_TO_1"),
    Case((1, 49, 10, 1), 8, kernel=(10, 4), stride=(2, 2), activation="RELU", input_zp=-10),
    Case((3, 5, 5, 6), 6, groups=2, input_zp=4, output_zp=1),
    Case((1, 7, 7, 8), 12, kernel=(3, 3), groups=4, dilation=(1, 2), bias=False),
    Case((1, 6, 6, 40), 9, kernel=(2, 2), stride=(2, 2), input_zp=-128, activation="RELU6"),
    Case((1, 4, 5, 33), 17, kernel=(1, 1), stride=(2, 2), per_channel=False, bias=False),
    Case((1, 3, 3, 3), 2, kernel=(5, 5), padding="SAME"),  # filter larger than the image
    # shifts of both signs: the Helium matrix product's requantisation with its left shift (nn2c_gemm_s8_t.right
    # 0; every other case here has none positive, right 1)
    Case((1, 5, 4, 20), 13, kernel=(1, 1), gain=1000.0, input_zp=-5, output_zp=3),
    # depth below 16 (Helium: nn2c_gemm_rows2_short, its sums stored for 64 channels at a time): 70 channels
    # (two passes, the last group partial), a 3x3 filter on one channel, left shifts
    Case((1, 6, 5, 8), 70, kernel=(1, 1), activation="RELU6", input_zp=-6, output_zp=-128),
    Case((1, 7, 6, 1), 6, kernel=(3, 3), input_zp=2, output_zp=-4),
    Case((1, 3, 5, 12), 9, kernel=(1, 1), gain=500.0, input_zp=3, output_zp=-2),
    # weights of -128 (Arm DSP: some B = -128 beside a negative A, so the filter cannot be dual and its
    # channel pairs run the int8 layout's pair kernel; the other even counts with records are dual)
    Case((1, 5, 5, 32), 8, kernel=(3, 3), input_zp=-3, output_zp=2, weight_min=-128),
    # an odd channel count from records (Arm DSP: the last pair padded) with an odd pixel count (the last
    # pixel alone: nn2c_gemm_one16)
    Case((1, 5, 3, 6), 5, kernel=(3, 3), input_zp=-2, output_zp=3),
    # one multiplier in [0.5, 1): shift 0, none positive (Helium: nn2c_gemm_s8_t.right 1, the rounding's sign
    # fix tested against the shift), with a depth tail (20) and without (16); weights of -1, 0, 1 and no bias,
    # so that many outputs fall inside int8's range
    Case((1, 5, 4, 20), 12, kernel=(1, 1), per_channel=False, gain=420.0, input_zp=1, output_zp=-3, bias=False,
         weight_max=1),
    Case((1, 4, 5, 16), 8, kernel=(1, 1), per_channel=False, gain=380.0, output_zp=4, bias=False,
         weight_max=1),
    Case((1, 5, 4, 12), 9, kernel=(1, 1), per_channel=False, gain=320.0, output_zp=-6, bias=False,
         weight_max=1),  # depth below 16 (nn2c_gemm_rows2_short)
    # narrow filter rows on few channels (Arm DSP: nn2c_conv_s8_rows, the image read in place): a row of 1, 2, 3
    # and 4 input words, those of 2 and 3 with a last word of one byte (5 and 9 bytes); SAME padding at the bottom
    # and right only (stride 2), and a VALID window whose last word would read past the input (both copied into
    # scratch first)
    Case((1, 13, 12, 1), 8, stride=(2, 2), input_zp=-1, output_zp=-128),
    Case((1, 6, 7, 2), 4, input_zp=-7, output_zp=9),
    Case((1, 11, 9, 3), 8, stride=(2, 2), padding="VALID", input_zp=5),
    Case((1, 7, 8, 3), 4, kernel=(5, 5), stride=(1, 2), input_zp=3, output_zp=-2),
    Case((1, 9, 8, 1), 4, kernel=(5, 5), input_zp=-3, output_zp=6),
    # 32 channels over 3: the pixel pair's cheaper there (Arm DSP: a dual filter of 7 blocks, padded to 8)
    Case((1, 6, 7, 3), 32, input_zp=2, output_zp=-5),
]

DEPTHWISE_CASES = [
    Case((1, 8, 8, 16), 1),
    Case((1, 9, 9, 24), 1, stride=(2, 2), activation="RELU6", input_zp=-128, output_zp=-128),
    Case((1, 12, 12, 1), 8, stride=(2, 2), activation="RELU6", input_zp=-1),
    Case((2, 7, 6, 5), 3, kernel=(3, 2), padding="VALID", input_zp=7, output_zp=-3),
    Case((1, 10, 10, 35), 1, dilation=(2, 2), per_channel=False, input_zp=3),
    Case((1, 11, 9, 19), 2, kernel=(5, 5), stride=(1, 2), dilation=(1, 2), activation="RELU"),
    Case((1, 6, 6, 32), 1, kernel=(3, 3), bias=False, activation="RELU_N1_TO_1"),
    Case((3, 4, 4, 17), 1, kernel=(4, 4), padding="VALID", input_zp=-50, output_zp=20),
    # 8 channels: pairs of neighbouring pixels as one group of 16 lanes (Helium), odd widths leave one
    Case((1, 9, 7, 8), 1, activation="RELU6", input_zp=-128, output_zp=-128),
    Case((1, 8, 9, 8), 1, stride=(2, 2), input_zp=6, output_zp=-9),
    # shifts of both signs in one layer: the DSP kernel's requantisation with the shift branch; on the
    # MVE kernel the groups of 8 (12 channels) and of 16 (20) with left shifts (the C requantisation)
    Case((1, 5, 6, 12), 1, gain=250.0),
    Case((1, 6, 5, 20), 1, gain=250.0, input_zp=-5, output_zp=3),
    # whole groups of 16 at stride 2 (Helium: a row's inner windows in one call, 2 * 32 bytes apart), the
    # windows over the border from their table
    Case((1, 9, 11, 32), 1, stride=(2, 2), activation="RELU", input_zp=-3, output_zp=-128),
    # Arm DSP output-stage records (a positive output offset folded into their rounding) read through the
    # tap table of a 5x5 window
    Case((1, 7, 8, 12), 1, kernel=(5, 5), input_zp=4, output_zp=9),
    # Helium: the windows of 5x5 and 7x7 filters inside the image by column and row steps, the table's loop
    # over the border; last, partial groups of 16 above 8 channels (30, 14) and up to 8 (37, 6: predicated
    # loads and stores), clamped and full-range
    Case((1, 9, 10, 30), 1, kernel=(5, 5), activation="RELU6", input_zp=-128, output_zp=-128),
    Case((1, 11, 11, 14), 1, kernel=(7, 7), input_zp=2, output_zp=-1),
    Case((1, 10, 9, 37), 1, kernel=(7, 7), stride=(2, 2), activation="RELU", input_zp=-4, output_zp=-100),
    Case((1, 9, 9, 21), 1, kernel=(5, 5), input_zp=2, output_zp=-3),
    # one input channel times 8, int8's whole range (Arm DSP: a CONV_2D on nn2c_conv_s8_rows)
    Case((1, 10, 9, 1), 8, stride=(2, 2), input_zp=-128, output_zp=4),
    # shifts of -1 beside -2 and below (Arm DSP: doubled records take r = 1 too), a last partial group (14
    # channels), outputs above the lowest so that negative sums show
    Case((1, 7, 6, 14), 1, gain=70.0, input_zp=2, output_zp=5),
    Case((1, 8, 8, 6), 1, input_zp=1, output_zp=5),
    # last groups above 8 channels of 3x3 windows (13 alone, clamped; 16 + 13, full range): inside the image by
    # column and row steps, over the border from the table
    Case((1, 7, 8, 13), 1, activation="RELU6", input_zp=-5, output_zp=-128),
    Case((1, 6, 9, 29), 1, input_zp=3, output_zp=-2),
    # one multiplier in [0.5, 1): shift 0, none positive (Helium: the rounding's sign fix tested against the
    # shift, nn2c_dw_window_t.right 1; the other cases with right shifts only take the fix from the sign)
    Case((1, 7, 9, 32), 1, per_channel=False, gain=280.0, input_zp=-2, output_zp=1, bias=False, weight_max=1),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c.shape}-{c.out_c}-{c.kernel}-s{c.stride}-d{c.dilation}")
def test_conv_int8(tmp_path: Path, case: Case):
    assert_matches_tflm(_quantized_model([(case, False)], "int8", _seed(case)), tmp_path, records=3)


# (gains of 100 and more: the cases for left shifts; the one of 70 is there for shifts of -1)
@pytest.mark.parametrize(("case", "depthwise"), [(c, True) for c in DEPTHWISE_CASES if c.gain >= 100 and c.per_channel]
                         + [(c, False) for c in CONV_CASES if c.gain >= 100 and c.per_channel], ids=lambda c: f"{c}")
def test_the_mixed_shift_cases_have_shifts_of_both_signs(case: Case, depthwise: bool):
    """The gain cases exist to run the kernels' requantisation with left shifts (the DSP depthwise
    assembly needs every shift negative, the MVE assembly and matrix product none positive): their
    per-channel shifts must really take both signs."""
    from nn2c.frontends.tflite_frontend import load_tflite
    from nn2c.quant.fixedpoint import quantize_multiplier

    node = load_tflite("gain", _quantized_model([(case, depthwise)], "int8", _seed(case))).nodes[0]
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and w is not None and x.type.quant and w.type.quant and y.type.quant
    shifts = [quantize_multiplier(float(x.type.quant.scale[0]) * float(s) / float(y.type.quant.scale[0]))[1]
              for s in w.type.quant.scale]
    assert min(shifts) < 0 < max(shifts), shifts


@pytest.mark.parametrize("case", DEPTHWISE_CASES, ids=lambda c: f"{c.shape}-m{c.out_c}-{c.kernel}-s{c.stride}")
def test_depthwise_int8(tmp_path: Path, case: Case):
    assert_matches_tflm(_quantized_model([(case, True)], "int8", _seed(case)), tmp_path, records=3)


def test_conv_float(tmp_path: Path):
    """Float cases side by side in one model (each its own output); bit-exact in practice."""
    cases = [CONV_CASES[i] for i in (0, 1, 3, 5, 8, 9, 12)]
    _assert_matches(_float_model(cases, False, 7), tmp_path)


def test_depthwise_float(tmp_path: Path):
    cases = [DEPTHWISE_CASES[i] for i in (0, 1, 2, 3, 5, 7)]
    _assert_matches(_float_model(cases, True, 11), tmp_path)


def test_int16x8(tmp_path: Path):
    """16x8 with int64 bias (and none): CONV_2D and DEPTHWISE_CONV_2D side by side."""
    cases = [(CONV_CASES[i], False) for i in (0, 2, 5, 8, 9, 7)] + [(DEPTHWISE_CASES[i], True) for i in (1, 2, 5)]
    _assert_matches(_quantized_model(cases, "int16", 3), tmp_path)


def test_conv_int16x8_int32_bias(tmp_path: Path):
    cases = [(CONV_CASES[i], False) for i in (1, 3, 7, 10)]
    _assert_matches(_quantized_model(cases, "int16", 4, bias_dtype="int32"), tmp_path)

def _assert_matches(model: bytes, tmp_path: Path, reference: str = "tflm", records: int = 3,
                    target: str = "host") -> None:
    """Multi-op models: the greedy arena planner (the exact one spends its time limit on many
    simultaneously live inputs, which is no concern of these tests). Hybrids use LiteRT's reference
    kernels as the oracle, since TFLite Micro refuses them."""
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    report = verify_model(path, count=records, references=(reference,), float_rtol=1e-6, float_atol=1e-7,
                          workdir=tmp_path / "model_c", options=CompileOptions(planner="greedy", target=target))
    assert reference not in report.skipped, report.skipped
    bad = [c for c in report.comparisons if c.mismatches]
    assert report.comparisons and not bad, [(c.output, c.mismatches, c.max_abs_diff, c.max_rel_diff) for c in bad]


HYBRID_CONV = [CONV_CASES[i] for i in (0, 1, 4, 5, 7, 8)] + [
    Case((2, 5, 5, 3), 4, per_channel=False, stride=(2, 2), activation="RELU"),  # symmetric, 2 batches
    Case((1, 9, 8, 4), 3, per_channel=False, dilation=(2, 2), activation="RELU6"),  # symmetric, dilated
    Case((2, 6, 6, 8), 6, equal_scales=True, groups=2),  # groups: LiteRT takes the per-channel path
    Case((1, 6, 5, 7), 5, equal_scales=True, stride=(1, 2)),  # equal scales: the per-tensor path
]


def test_conv_hybrid(tmp_path: Path):
    """All cases side by side in one model: LiteRT runs once (each case is its own output)."""
    _assert_matches(_float_model(HYBRID_CONV, False, 5, hybrid=True), tmp_path, "litert")


def test_depthwise_hybrid(tmp_path: Path):
    cases = [DEPTHWISE_CASES[i] for i in (0, 1, 2, 3, 5, 7)]
    _assert_matches(_float_model(cases, True, 5, hybrid=True), tmp_path, "litert")


@pytest.mark.parametrize("relative", ["tflite_micro/person_detect", "mlcommons_tiny/kws_ref_model"])
def test_real_int8_models(tmp_path: Path, relative: str):
    assert_matches_tflm(model_path(f"{relative}.tflite"), tmp_path, records=2)


def test_kws_hybrid_float_model(tmp_path: Path):
    """kws_ref_model_float32: hybrid CONV_2D with int8 weights, float DEPTHWISE_CONV_2D; bit-exact with LiteRT."""
    report = verify_model(model_path("mlcommons_tiny/kws_ref_model_float32.tflite"), count=3,
                          references=("litert",), float_rtol=0.0, float_atol=0.0, workdir=tmp_path / "kws")
    assert report.comparisons and all(c.mismatches == 0 for c in report.comparisons), report.comparisons


def _compile_error(tmp_path: Path, model: bytes) -> str:
    path = tmp_path / "bad.tflite"
    path.write_bytes(model)
    with pytest.raises(UnsupportedOpError) as info:
        compile_model(path)
    return str(info.value)


def test_unsupported_dtype_combination(tmp_path: Path):
    b = ModelBuilder()
    x = b.tensor("int8", (1, 4, 4, 2), scale=0.1, zero_point=0)
    w = b.tensor("float32", (3, 1, 1, 2), data=np.ones((3, 1, 1, 2)))
    y = b.tensor("int8", (1, 4, 4, 3), scale=0.1, zero_point=0)
    b.op("CONV_2D", [x, w, -1], [y], {"padding": "SAME", "stride_h": 1, "stride_w": 1}, version=2)
    assert "not a supported combination" in _compile_error(tmp_path, b.build([x], [y]))


def test_inconsistent_depth_multiplier(tmp_path: Path):
    b = ModelBuilder()
    x = b.tensor("float32", (1, 4, 4, 2))
    w = b.tensor("float32", (1, 3, 3, 4), data=np.ones((1, 3, 3, 4)))
    y = b.tensor("float32", (1, 4, 4, 4))
    b.op("DEPTHWISE_CONV_2D", [x, w, -1], [y], {"padding": "SAME", "stride_h": 1, "stride_w": 1,
                                                "depth_multiplier": 3})
    assert "depth_multiplier 3" in _compile_error(tmp_path, b.build([x], [y]))


@pytest.mark.parametrize("depthwise", [False, True])
def test_an_output_multiplier_from_2_to_the_30_is_one_error_line(tmp_path: Path, depthwise: bool):
    """A filter scale of 1e38 on one channel (found by fuzzing person_detect in QEMU): TFLite Micro's requantisation
    would shift left by more than 31 bits there (undefined; its result differed from nn2c's capped multiplier), so
    the layer is refused with one line naming the operator, the channel and the multiplier; `nn2c compile` exits 2
    with no traceback and writes no folder."""
    from click.testing import CliRunner

    from nn2c.cli import main

    scales = [0.01, 1e38, 0.02]
    b = ModelBuilder()
    x = b.tensor("int8", (1, 4, 4, 3), scale=0.05, zero_point=1)
    shape = (1, 3, 3, 3) if depthwise else (3, 3, 3, 3)
    w = b.tensor("int8", shape, scale=scales, zero_point=[0, 0, 0], axis=3 if depthwise else 0,
                 data=np.ones(shape, dtype=np.int64))
    y = b.tensor("int8", (1, 4, 4, 3), scale=0.1, zero_point=-2)
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, **({"depth_multiplier": 1} if depthwise else {})}
    b.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, w, -1], [y], options)
    path = tmp_path / "bad.tflite"
    path.write_bytes(b.build([x], [y]))
    for target in ("host", "cortex-m4"):
        out = tmp_path / f"out_{target}"
        result = CliRunner().invoke(main, ["compile", str(path), "--target", target, "-o", str(out)])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and "op #0" in lines[0] and "channel 1's output multiplier" in lines[0], lines
        assert "5e+37" in lines[0] and not out.exists(), lines  # 0.05 x 1e38 / 0.1



@pytest.mark.parametrize("depthwise", [False, True])
def test_pad_folded_into_conv(tmp_path: Path, depthwise: bool):
    """PAD (with the zero point) + VALID convolution: nn2c folds the PAD into explicit_padding."""
    rng = np.random.default_rng(21 + depthwise)
    case = Case((1, 7, 6, 8), 1 if depthwise else 5, kernel=(3, 3), stride=(2, 2), padding="VALID",
                input_zp=-5, output_zp=3)
    b = ModelBuilder()
    x = b.tensor("int8", case.shape, scale=0.05, zero_point=case.input_zp)
    pads = b.tensor("int32", (4, 2), data=np.array([[0, 0], [2, 1], [0, 3], [0, 0]]))
    padded_shape = (1, 10, 9, 8)
    padded = b.tensor("int8", padded_shape, scale=0.05, zero_point=case.input_zp)
    b.op("PAD", [x, pads], [padded])
    conv_case = Case(padded_shape, case.out_c, case.kernel, case.stride, padding="VALID", input_zp=case.input_zp,
                     output_zp=case.output_zp)
    wshape, out_c, depth = _filter_shape(conv_case, depthwise)
    w = b.tensor("int8", wshape, scale=list(rng.uniform(0.005, 0.02, out_c)), zero_point=[0] * out_c,
                 axis=3 if depthwise else 0, data=rng.integers(-127, 128, wshape))
    y = b.tensor("int8", _out_shape(conv_case, out_c), scale=0.05 * 0.012 * sqrt(depth) * 73 * 74 / 40,
                 zero_point=case.output_zp)
    # (TFLite Micro crashes on a DEPTHWISE_CONV_2D whose optional bias is given as -1, so give one)
    bias = b.tensor("int32", (out_c,), data=rng.integers(-2000, 2000, out_c))
    b.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [padded, w, bias], [y], _options(conv_case, depthwise),
         version=2)
    model = b.build([x], [y])
    path = tmp_path / "pad.tflite"
    path.write_bytes(model)
    graph = compile_model(path).graph
    assert [n.op for n in graph.nodes] == ["DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"]
    assert graph.nodes[0].attrs["explicit_padding"] == (2, 1, 0, 3)
    assert_matches_tflm(path, tmp_path, records=3)


# --- the Cortex-M int8 kernels (kernels/nn2c_simd.*), run on the host ------------------------------
# A host build of a Cortex-M target's output takes nn2c_simd.c's portable branch with that target's
# filter layout, folded bias and per-channel order: it checks the compile-time side bit for bit;
# tests/test_cortexm.py runs the DSP and MVE branches in QEMU.


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_cortex_m_kernels_on_host(tmp_path: Path, target: str):
    cases = [(c, False) for c in CONV_CASES] + [(c, True) for c in DEPTHWISE_CASES]
    model = _quantized_model(cases, "int8", 21)
    _assert_matches(model, tmp_path, target=target)
    path = tmp_path / "model.tflite"
    files = compile_model(path, CompileOptions(planner="greedy", target=target)).files
    assert any(name.endswith("nn2c_simd.c") for name in files)
    host = compile_model(path, CompileOptions(planner="greedy")).files
    assert not any("simd" in name for name in host)  # the host keeps the portable kernels


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_cortex_m_kernels_in_qemu(tmp_path: Path, target: str):
    """The DSP / MVE branches themselves on every convolution case (odd channel counts: the partial
    channel groups, depth tails, padding, strides, dilations), bit-exact with TFLM in QEMU."""
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    cases = [(c, False) for c in CONV_CASES] + [(c, True) for c in DEPTHWISE_CASES]
    path = tmp_path / "model.tflite"
    path.write_bytes(_quantized_model(cases, "int8", 21))
    report = bench_model(path, target=target, count=2, seed=4, workdir=tmp_path / "qemu")
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert all(c.max_abs_diff == 0 for c in report.comparisons)
    calls = {call for layer in report.layers for call in layer.calls}
    assert {"nn2c_conv_s8_simd", "nn2c_dw_s8_simd"} <= calls, calls
    source = compile_model(path, CompileOptions(target=target)).files["model.c"]
    # the three requantisations of the matrix product: left shifts, right shifts with some 0, all negative
    assert all(f".right = {right}" in source for right in (0, 1, 2)), re.findall(r"\.right = \d", source)
    # the output stages from records (DSP: int8's range, shifts in [-24, -2]; with a last, partial group of
    # channels too: convolutions of 5, 7 and 17 channels, depthwise layers of 6, 14, 17, 21, 29 and 35) and from the arrays
    records = re.findall(r"\.records = (\w+)", source)
    assert "NULL" in records and (target == "cortex-m55") == (set(records) == {"NULL"}), records
    weights = compile_model(path, CompileOptions(target=target)).files["model_weights.c"]
    kinds = [weights.count("output stage per group of 2 channels"), weights.count("output stage per group of 4")]
    assert kinds == ([0, 0] if target == "cortex-m55" else [9, 18]), kinds
    # narrow filter rows straight from the image (nn2c_conv_s8_rows, records per group of 4): the six
    # convolutions over 1-3 channels of whole groups of 4 and int8's range, and the depthwise one over one channel
    # times 8; the others of few channels stay on the pixel pair (odd counts, clamped ranges, whole-word rows)
    assert source.count("nn2c_conv_s8_rows(") == (0 if target == "cortex-m55" else 7)
    assert source.count(".row_tail = 1") == (0 if target == "cortex-m55" else 3)  # rows of 9, 9 and 5 bytes
    # the doubled records' shifts (r in each channel's third word): 1 among them (the 14-channel case)
    doubled = re.findall(r"4 doubled biases[^\n]*\n[^{]*\{([^}]*)\}", weights)
    shifts = {int(v) for body in doubled for group in np.array(body.replace(",", " ").split(), dtype=np.int64)
              .reshape(-1, 16) for v in group[[6, 9, 12, 15]]}
    assert (1 in shifts) == (target == "cortex-m4") and (target == "cortex-m55") == (not doubled), shifts
    assert ("nn2c_conv_s8_rows" in calls) == (target == "cortex-m4"), calls
    # dual filters (nn2c_gemm_s8_t.dual): the channel counts with records, odd ones too (a zero channel B, never
    # stored: the last channel apart), but the one with weights of -128 and the 3x3 filter over one channel (3
    # blocks of 4, too few to pad to pairs); some with an odd block count padded (7 and 19 blocks), one over an odd
    # pixel count (3x3 pixels: nn2c_gemm_one16)
    assert weights.count("(dual)") == (0 if target == "cortex-m55" else 7)



# 1x1 convolutions at stride 1 walked as pixel pairs of consecutive rows (Arm DSP, nn2c_conv_s8_run): an odd pixel
# count over a depth of 6 (not whole words) into 10 channels (dual records), an odd channel count (the last one
# apart), two batches of an odd pixel count each over 3 blocks of the depth (plain records: no pairs of blocks), a
# depth of 60 (dual: padded to 64) over 21 pixels
POINTWISE_CASES = [
    Case((1, 5, 3, 6), 10, kernel=(1, 1), input_zp=-3, output_zp=4),
    Case((1, 4, 4, 16), 9, kernel=(1, 1), input_zp=-128, output_zp=-128),
    Case((2, 3, 3, 12), 6, kernel=(1, 1), input_zp=7, output_zp=-2),
    Case((1, 7, 3, 60), 16, kernel=(1, 1), input_zp=127, output_zp=1),
]


def test_pointwise_pixel_pairs_in_qemu(tmp_path: Path):
    """The Arm DSP's 1x1 convolutions over consecutive pixel pairs, bit-exact with TFLM in QEMU on inputs at -128
    and 127 and at random: odd pixel counts (the last pixel alone), a depth of whole words and not, an odd channel
    count (its filter dual too, the last channel apart), two batches, dual and plain records. Pixel triples are
    turned off here (balanced takes them where the arena allows: tests/test_triples.py covers them)."""
    from nn2c.codegen.ops import conv
    from nn2c.targets import cortexm_bench
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools
    from nn2c.verify.inputs import random_records
    from tests.c_safety import extreme_records

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(conv, "_takes_triples", lambda ctx: False)
    path = tmp_path / "model.tflite"
    path.write_bytes(_quantized_model([(c, False) for c in POINTWISE_CASES], "int8", 9))
    source = compile_model(path, CompileOptions(target="cortex-m4")).files["model.c"]
    assert source.count(".pointwise = 1") == 4 and ".records = NULL" not in source, source
    assert source.count(".dual = 1") == 3 and ".triples = 1" not in source, source
    records = extreme_records(compile_model(path, CompileOptions(target="cortex-m4")).graph)
    monkeypatch.setattr(cortexm_bench, "random_records",
                        lambda inputs, count, seed: records + random_records(inputs, count - len(records), seed))
    try:
        report = bench_model(path, target="cortex-m4", count=4, seed=3, workdir=tmp_path / "qemu")
    finally:
        monkeypatch.undo()
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert all(c.max_abs_diff == 0 for c in report.comparisons)

def test_a_convolution_with_a_shift_of_minus_one_keeps_its_dual_filter_in_qemu(tmp_path: Path):
    """A shift of -1 (r = 1) takes the convolutions' doubled records; their dual filter must not be refused for it
    (takes_dual once re-checked the earlier records' shift range). Bit-exact with TFLM in QEMU on the M4."""
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    case = Case((1, 6, 5, 16), 8, kernel=(1, 1), gain=120.0, input_zp=3, output_zp=-4)
    path = tmp_path / "model.tflite"
    path.write_bytes(_quantized_model([(case, False)], "int8", _seed(case)))
    weights = compile_model(path, CompileOptions(target="cortex-m4")).files["model_weights.c"]
    body = re.search(r"output stage per group of 2[^\n]*\n[^{]*\{([^}]*)\}", weights)
    assert body, weights[:400]
    records = np.array(body.group(1).replace(",", " ").split(), dtype=np.int64).reshape(-1, 8)
    assert 1 in records[:, [4, 7]], records  # r = 1 among the channels' shifts
    assert "(dual)" in weights
    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    report = bench_model(path, target="cortex-m4", count=2, seed=4, workdir=tmp_path / "qemu")
    assert report.reference == "tflm" and report.passed() and all(c.max_abs_diff == 0 for c in report.comparisons)


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("build", ["-O0", "-O2 -fno-omit-frame-pointer -DNN2C_NO_INLINE_ASM"])
def test_cortex_m_kernels_without_inline_asm_in_qemu(tmp_path: Path, monkeypatch, build: str, target: str):
    """The C versions of the SIMD kernels' inline assembly, which GCC cannot give registers without
    optimisation (-O0) or with a frame pointer kept (NN2C_NO_INLINE_ASM, docs/user-guide.md): the
    same cases built that way, bit-exact with TFLM."""
    from nn2c.targets import cortexm_build
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    flags = [part for flag in cortexm_build.COMPILE_FLAGS for part in (build.split() if flag == "-O2" else [flag])]
    assert flags.count(build.split()[0]) == 1 and flags.count("-O2") + flags.count("-O0") == 1
    monkeypatch.setattr(cortexm_build, "COMPILE_FLAGS", flags)
    cases = [(c, False) for c in CONV_CASES] + [(c, True) for c in DEPTHWISE_CASES]
    path = tmp_path / "model.tflite"
    path.write_bytes(_quantized_model(cases, "int8", 21))
    report = bench_model(path, target=target, count=2, seed=4, workdir=tmp_path / "qemu")
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert all(c.max_abs_diff == 0 for c in report.comparisons)


@pytest.mark.parametrize("build", ["-O2", "-O0", "-O2 -fno-omit-frame-pointer -DNN2C_NO_INLINE_ASM", "host"])
def test_depthwise_int8_filter_at_size(tmp_path: Path, monkeypatch, build: str):
    """--optimize size on the Arm DSP: the depthwise layers from records read an int8 filter (half the int16
    one's bytes) through their assembly (-O2), its C versions (-O0, NN2C_NO_INLINE_ASM) and the host's portable
    kernel; every case bit-exact with TFLM (windows inside the image and over the border, 3x3 and the tap
    table's other filters, strides, dilations, partial groups of channels)."""
    from nn2c.targets import cortexm_build
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    path = tmp_path / "model.tflite"
    path.write_bytes(_quantized_model([(c, True) for c in DEPTHWISE_CASES], "int8", 21))
    options = CompileOptions(target="cortex-m4", optimize="size", planner="greedy")
    size = compile_model(path, options)
    weights = size.files["model_weights.c"]
    records = weights.count("depthwise output stage per group of 4 channels: 4 biases")
    assert records >= 10 and weights.count("groups of 4 channels as int8 (--optimize size)") == records
    balanced = compile_model(path, CompileOptions(target="cortex-m4", planner="greedy"))
    assert size.code.weight_bytes < balanced.code.weight_bytes
    if build == "host":  # an M4 size lowering built for the host: the portable kernel reads the int8 filter
        report = verify_model(path, count=2, references=("tflm",), workdir=tmp_path / "host", options=options)
        assert report.comparisons and not [c for c in report.comparisons if c.mismatches]
        return
    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    flags = [part for flag in cortexm_build.COMPILE_FLAGS for part in (build.split() if flag == "-O2" else [flag])]
    monkeypatch.setattr(cortexm_build, "COMPILE_FLAGS", flags)
    report = bench_model(path, target="cortex-m4", count=2, seed=4, workdir=tmp_path / "qemu", options=options)
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert all(c.max_abs_diff == 0 for c in report.comparisons)


def _add_model(shape: tuple[int, int, int, int] = (1, 5, 7, 9)) -> bytes:
    """Same-shape int8 ADDs; the input with the larger scale has the multiplier 2^30, shift 0: the second
    input, then the first (the Helium kernel's exact input either way), then both (equal scales)."""
    b = ModelBuilder()
    x1 = b.tensor("int8", shape, scale=0.05, zero_point=-3)
    x2 = b.tensor("int8", shape, scale=0.11, zero_point=7)
    y = b.tensor("int8", shape, scale=0.09, zero_point=-12)
    b.op("ADD", [x1, x2], [y], {"fused_activation_function": "RELU"})
    z = b.tensor("int8", shape, scale=0.02, zero_point=100)
    b.op("ADD", [y, x2], [z], {"fused_activation_function": "NONE"})
    u = b.tensor("int8", shape, scale=0.2, zero_point=-5)
    b.op("ADD", [x2, z], [u], {"fused_activation_function": "RELU6"})
    v = b.tensor("int8", shape, scale=0.3, zero_point=1)
    b.op("ADD", [u, u], [v], {"fused_activation_function": "NONE"})
    return b.build([x1, x2], [v])


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_cortex_m_add_on_host(tmp_path: Path, target: str):
    """Same-shape int8 ADD takes nn2c_add_s8_simd on Cortex-M targets (the residual adds of ResNets)."""
    _assert_matches(_add_model(), tmp_path, target=target, records=4)


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_cortex_m_add_in_qemu(tmp_path: Path, target: str):
    """nn2c_add_s8_simd's DSP (branch-free, shift-0 input doubled) and MVE paths, bit-exact in QEMU."""
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    # 315 elements, and 1,536: the Arm DSP kernel's rescale tables (ADD_TABLE_MIN_ELEMENTS)
    for shape, tables in (((1, 5, 7, 9), 0), ((1, 12, 16, 8), 4 if target == "cortex-m4" else 0)):
        path = tmp_path / "add.tflite"
        path.write_bytes(_add_model(shape))
        report = bench_model(path, target=target, count=3, seed=2, workdir=tmp_path / "qemu")
        assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
        assert all(c.max_abs_diff == 0 for c in report.comparisons)
        assert {call for layer in report.layers for call in layer.calls} == {"nn2c_add_s8_simd"}
        source = compile_model(path, CompileOptions(target=target)).files["add.c"]
        assert len(re.findall(r"\.scaled1 = add_w\d+ \+ 128", source)) == tables, shape


def _mbqm_reference(x: int, multiplier: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier (gemmlowp's double rounding), in Python integers."""
    x = ((x << max(shift, 0)) + 2**31) % 2**32 - 2**31
    product = x * multiplier
    nudge = 2**30 if product >= 0 else 1 - 2**30
    high = abs(product + nudge) // 2**31 * (1 if product + nudge >= 0 else -1)
    exponent = max(-shift, 0)
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> exponent) + (1 if (high & mask) > threshold else 0)


def test_fused_requant_rounding_matches_two_step():
    """nn2c_simd_requant's one 64-bit sum equals TFLite's two roundings for negative shifts."""
    from nn2c.codegen.ops.conv import requant_rounding

    rng = np.random.default_rng(0)
    for i in range(20000):
        multiplier = 2**30 if i % 11 == 0 else int(rng.integers(2**30, 2**31))
        shift = -int(rng.integers(1, 32))
        x = [int(rng.integers(-2**31, 2**31)), int(rng.integers(-70000, 70000)), int(rng.integers(-4, 5))][i % 3]
        rounding = requant_rounding(np.array([shift]))
        fused = (int(rounding[1 if x < 0 else 0]) + x * multiplier) >> 32 >> (-shift - 1)
        assert fused == _mbqm_reference(x, multiplier, shift), (x, multiplier, shift)


def test_doubled_records_match_two_step():
    """A doubled record (nn2c_record_requant_doubled: the Arm DSP depthwise kernel and nn2c_conv_s8_rows) equals
    TFLite's two roundings: the assembly's steps (ADD of the sign, SMMLAR of the doubled sum, ASR) in Python
    integers, for every shift it takes and multipliers at their extremes and zero."""
    from nn2c.codegen.ops.conv import doubled_records

    rng = np.random.default_rng(1)
    for i in range(20000):
        multiplier = [2**30, 2**31 - 1, 0][i % 3] if i < 30 else int(rng.integers(2**30, 2**31))
        shift = -1 if i % 4 == 0 else -int(rng.integers(1, 25))
        offset = int(rng.integers(-128, 128))
        x = [int(rng.integers(-2**29, 2**29)), int(rng.integers(-70000, 70000)), int(rng.integers(-4, 5))][i % 3]
        record = doubled_records(np.array([x]), np.array([multiplier]), np.array([shift]), offset)
        doubled, (m, c, r) = int(record[0]), (int(v) for v in record[4:7])
        high = c + (-1 if doubled < 0 else 0)  # add, asr #31
        y = (high * 2**32 + doubled * m + 2**31) >> 32 >> r  # smmlar, asr
        assert y == _mbqm_reference(x, multiplier, shift) + offset, (x, multiplier, shift, offset)


@pytest.mark.parametrize("target", ["host", "cortex-m4"])
def test_a_dimension_above_16_bits_takes_the_wide_geometry(tmp_path: Path, target: str):
    """Geometry fields are 16-bit (kernels/nn2c_conv.h) unless a dimension of the model is above 65,535: a 1-D
    signal of 70,000 samples (a convolution and a depthwise one of 1x5 filters, stride 1 and 2) builds with
    NN2C_WIDE_GEOMETRY and stays bit-exact with TFLM; a usual model keeps the 16-bit fields."""
    from nn2c.codegen.kernel_config import CONFIG_HEADER, geometry_symbol
    from nn2c.codegen.render import KERNEL_DIR

    cases = [(Case((1, 1, 70_000, 2), 3, kernel=(1, 5), activation="RELU"), False),
             (Case((1, 1, 70_000, 3), 1, kernel=(1, 5), stride=(1, 2), padding="VALID"), True)]
    model = _quantized_model(cases, "int8", 7)
    path = tmp_path / "wide.tflite"
    path.write_bytes(model)
    result = compile_model(path, CompileOptions(planner="greedy", target=target))
    assert "#define NN2C_WIDE_GEOMETRY 1" in result.files[f"{KERNEL_DIR}/{CONFIG_HEADER}"]
    assert geometry_symbol(True) in result.files["wide.c"]
    _assert_matches(model, tmp_path, records=2, target=target)
    usual = compile_model(model_path("mlcommons_tiny/kws_ref_model.tflite"), CompileOptions(target=target))
    assert "NN2C_WIDE_GEOMETRY" not in usual.files[f"{KERNEL_DIR}/{CONFIG_HEADER}"]
    assert geometry_symbol(False) in usual.files["kws_ref_model.c"]


# 3x3 depthwise layers at stride 1 over channel planes (nn2c_dw_planes, Arm DSP, --optimize speed): widths of 12 or
# more that are multiples of 4, bands of 4 rows with a last partial one (13 rows, 6 rows), SAME and VALID padding
# (in_w 18: two pixels past the 4x4 transposes), channel counts not a multiple of 4 (22, 33), zero points at int8's
# ends; two batches, an 8-wide and a 14-wide layer keep the tap loop
PLANE_CASES = [
    Case((1, 13, 12, 16), 1, input_zp=-128, output_zp=-128),
    Case((1, 10, 18, 22), 1, padding="VALID", input_zp=-128, output_zp=5),
    Case((1, 6, 16, 8), 1, input_zp=3, output_zp=-7),
    Case((1, 9, 20, 33), 1, input_zp=127, output_zp=-128),
    Case((2, 6, 16, 8), 1, input_zp=1, output_zp=2),
    Case((1, 5, 8, 12), 1, input_zp=-2, output_zp=1),
    Case((1, 7, 14, 12), 1, input_zp=4, output_zp=-3),
]


def test_depthwise_planes_at_balanced_only_within_the_arena(tmp_path: Path):
    """--optimize balanced takes channel planes for rows of 24 or more only where their scratch leaves the arena as
    it is (EmitContext.extra_scratch): a lone 48x48x8 layer keeps the tap loop and the smaller arena; speed takes
    them; a 12-wide layer only at speed."""
    path = tmp_path / "dw.tflite"
    path.write_bytes(_quantized_model([(Case((1, 48, 48, 8), 1, input_zp=-128, output_zp=-128), True)], "int8", 5))
    speed = compile_model(path, CompileOptions(target="cortex-m4", optimize="speed"))
    balanced = compile_model(path, CompileOptions(target="cortex-m4"))
    assert ".band = 4" in speed.files["dw.c"] and ".band" not in balanced.files["dw.c"]
    assert balanced.arena_bytes < speed.arena_bytes


@pytest.mark.parametrize("build", ["-O2", "-O2 -DNN2C_NO_INLINE_ASM", "host"])
def test_depthwise_planes_in_qemu(tmp_path: Path, monkeypatch, build: str):
    """The Arm DSP depthwise kernel over channel planes (--optimize speed):
    bit-exact with TFLM through its assembly (-O2: the 4 x 4 byte transposes, the output pairs' sums, the output
    stage four at a time), its C versions (NN2C_NO_INLINE_ASM) and the host's portable build under ASan + UBSan,
    on inputs at -128 and 127 and at random; at -O2 also vww_96_int8 at --optimize speed (its three layers 12 or more
    wide in place in its arena over planes), its 48- and 24-wide ones at the default and none at size."""
    from nn2c.targets import cortexm_build
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools
    from nn2c.verify.build import run
    from nn2c.verify.oracle import run_tflm
    from tests.c_safety import build_sanitized, extreme_records
    from tests.oracle_check import assert_records_match

    path = tmp_path / "model.tflite"
    path.write_bytes(_quantized_model([(c, True) for c in PLANE_CASES], "int8", 5))
    options = CompileOptions(target="cortex-m4", optimize="speed", planner="greedy")
    result = compile_model(path, options)
    source = result.files["model.c"]
    assert sorted(re.findall(r"\.band = (\d+)", source)) == ["4", "4", "4", "4"], source
    graph = result.graph
    records = extreme_records(graph)
    if build == "host":
        from nn2c.verify.inputs import random_records

        records += random_records(graph.inputs, 2, 3)
        exe = build_sanitized(result, tmp_path / "out", tmp_path / "asan_runner")
        assert_records_match(run(exe, records, graph.inputs, graph.outputs),
                             run_tflm(path, records, len(graph.outputs)))
        return
    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    from nn2c.targets import cortexm_bench
    from nn2c.verify.inputs import random_records

    monkeypatch.setattr(cortexm_bench, "random_records",
                        lambda inputs, count, seed: records + random_records(inputs, count - len(records), seed))
    flags = [part for flag in cortexm_build.COMPILE_FLAGS for part in (build.split() if flag == "-O2" else [flag])]
    monkeypatch.setattr(cortexm_build, "COMPILE_FLAGS", flags)
    report = bench_model(path, target="cortex-m4", count=4, seed=4, workdir=tmp_path / "qemu", options=options)
    assert report.reference == "tflm" and report.passed(), [c.__dict__ for c in report.comparisons]
    assert all(c.max_abs_diff == 0 for c in report.comparisons)
    if build != "-O2":
        return
    monkeypatch.undo()
    vww = model_path("mlcommons_tiny/vww_96_int8.tflite")
    speed = CompileOptions(target="cortex-m4", optimize="speed")
    assert compile_model(vww, speed).files["vww_96_int8.c"].count(".band = 4") == 3
    # balanced: the 48- and 24-wide layers (their planes' scratch within the arena), not the 12-wide one; size: none
    balanced = compile_model(vww, CompileOptions(target="cortex-m4"))
    assert balanced.files["vww_96_int8.c"].count(".band = 4") == 2
    assert balanced.arena_bytes == compile_model(vww, CompileOptions(target="cortex-m4", optimize="size")).arena_bytes
    assert ".band" not in compile_model(vww, CompileOptions(target="cortex-m4", optimize="size")).files["vww_96_int8.c"]
    report = bench_model(vww, target="cortex-m4", count=2, seed=4, workdir=tmp_path / "vww", options=speed)
    assert report.reference == "tflm" and report.passed() and all(c.max_abs_diff == 0 for c in report.comparisons)
