"""The Arm DSP convolutions' wider steps: 1x1 layers over pixel triples (nn2c_gemm_triple16, dual filters of any
channel count), 3x3 filters over 3 channels 8 output channels at a time (nn2c_conv_rows8_3x9_asm), and the kernel
paths and --optimize choices around them. Bit-exact with TFLM in QEMU, built at -O2 and without the inline
assembly (skips loudly without the Arm tools)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.codegen.ops.conv import dual_fits, pack_dual_filter
from tests.conftest import model_path
from tests.test_sparse import assert_bit_exact_in_qemu
from tests.tflite_builder import ModelBuilder


def _conv(b: ModelBuilder, rng: np.random.Generator, x: int, depth: int, units: int, size: int, stride: int,
          padding: str, zero_point: int, out_hw: tuple[int, int]) -> int:
    """A CONV_2D of `units` size x size filters over `depth` channels (weights in [-127, 127]: dual_fits)."""
    w = rng.integers(-127, 128, (units, size, size, depth))
    wt = b.tensor("int8", (units, size, size, depth), scale=list(rng.uniform(0.002, 0.006, units)),
                  zero_point=[0] * units, data=w)
    bias = b.tensor("int32", (units,), scale=1e-3, zero_point=0, data=rng.integers(-3000, 3000, units))
    y = b.tensor("int8", (1, *out_hw, units), scale=0.25, zero_point=zero_point)
    b.op("CONV_2D", [x, wt, bias], [y], {"padding": padding, "stride_h": stride, "stride_w": stride,
                                         "fused_activation_function": "NONE"})
    return y


def _triples_model(height: int, width: int, path: Path) -> Path:
    """1x1 convolutions over height x width pixels whose depths take every entry of the triples' loop (8 and 24:
    two steps first, 16: whole passes, 17 padded to 24) and whose channel counts are even, odd (17, 33: the last
    channel apart) and 1 (no pair at all); then a 3x3 SAME convolution to 7 channels (an odd dual filter over pixel
    pairs) and a 1x1 one at stride 2 (pairs, not pointwise). Every layer's output is a model output."""
    rng = np.random.default_rng(61)
    b = ModelBuilder()
    x = b.tensor("int8", (1, height, width, 8), scale=0.05, zero_point=-9)
    h, depth, outputs = x, 8, []
    for units, zero_point in ((16, 3), (17, -7), (24, 0), (33, 5), (1, -2)):
        h = _conv(b, rng, h, depth, units, 1, 1, "VALID", zero_point, (height, width))
        depth = units
        outputs.append(h)
    wide = _conv(b, rng, outputs[2], 24, 7, 3, 1, "SAME", 1, (height, width))
    strided = _conv(b, rng, outputs[1], 17, 9, 1, 2, "VALID", -3, (-(-height // 2), -(-width // 2)))
    path.write_bytes(b.build([x], [*outputs, wide, strided]))
    return path


@pytest.mark.parametrize("height, width", [(1, 1), (2, 2), (1, 5), (1, 7)])
@pytest.mark.parametrize("optimize", ["speed", "balanced"])
def test_pixel_triples_in_qemu(height, width, optimize, tmp_path, monkeypatch):
    """1x1 layers of dual filters over pixel triples (at speed always, at balanced where the arena allows) where
    they take fewer steps than pairs (3 pixels, or 5 and more: not over 1, 2 or 4), a last 1 or 2 pixels with the
    last repeated (7 and 5 pixels), their odd channel counts' last channel apart; the wider and strided layers over
    pixel pairs with the same odd dual filters: bit-exact with TFLM in QEMU at -O2 and without the inline
    assembly, on inputs at -128 and 127 and at random."""
    path = _triples_model(height, width, tmp_path / "triples.tflite")
    options = CompileOptions(target="cortex-m4", schedule="layer", optimize=optimize, sparse="off")
    result = compile_model(path, options)
    source, config = result.files["triples.c"], result.files["nn2c_kernels/nn2c_config.h"]
    assert source.count(".dual = 1") == 7, source  # (every filter dual, odd counts too)
    assert "NN2C_OMIT_DSP_GEMM_ODD" not in config and "NN2C_OMIT_DSP_GEMM_PAIRS" not in config
    # (balanced too: the triples' scratch leaves the arena as it is, the pairs' code beside theirs for the 3x3 layer)
    assert source.count(".triples = 1") == (5 if height * width >= 5 else 0), source
    records = [[np.full((1, height, width, 8), -128, np.int8)], [np.full((1, height, width, 8), 127, np.int8)]]
    assert_bit_exact_in_qemu(path, options, records, 2, 17, tmp_path, monkeypatch)


def test_triples_leave_the_pairs_code_out(tmp_path):
    """A model whose every convolution is a 1x1 layer over triples builds without the pixel pairs' code, and one
    without odd channel counts without the last channel's (nn2c_config.h); at balanced such a model keeps its
    triples (vww_96_int8), and one whose other convolutions run over pairs builds both (kws_ref_model)."""
    path = _triples_model(1, 5, tmp_path / "triples.tflite")
    options = CompileOptions(target="cortex-m4", schedule="layer", optimize="speed")
    config = compile_model(path, options).files["nn2c_kernels/nn2c_config.h"]
    assert "NN2C_OMIT_DSP_GEMM_TRIPLES" not in config
    vww = compile_model(model_path("mlcommons_tiny/vww_96_int8.tflite"), CompileOptions(target="cortex-m4"))
    source, config = vww.files["vww_96_int8.c"], vww.files["nn2c_kernels/nn2c_config.h"]
    assert source.count(".triples = 1") >= 10 and ".triples = 0" not in source, source
    assert "NN2C_OMIT_DSP_GEMM_PAIRS" in config and "NN2C_OMIT_DSP_CONV_ROWS8_3X9" not in config
    assert "NN2C_OMIT_DSP_CONV_ROWS_3_BYTE" in config  # (its first layer on the 8-channel rows alone)
    kws = compile_model(model_path("mlcommons_tiny/kws_ref_model.tflite"), CompileOptions(target="cortex-m4"))
    # (its four 1x1 layers over triples, its first convolution over pairs: both kernels' code in the build)
    assert kws.files["kws_ref_model.c"].count(".triples = 1") == 4
    kws_config = kws.files["nn2c_kernels/nn2c_config.h"]
    assert "NN2C_OMIT_DSP_GEMM_TRIPLES" not in kws_config and "NN2C_OMIT_DSP_GEMM_PAIRS" not in kws_config
    assert "NN2C_OMIT_DSP_GEMM_ODD" in kws_config


def _rgb_model(height: int, width: int, path: Path) -> Path:
    """3x3 convolutions over 3 channels (rows of 9 bytes): to 8 channels at stride 2 SAME and to 16 at stride 1
    SAME (padding on every side: border windows copied), and to 12 (not a multiple of 8: the 4-channel rows)."""
    rng = np.random.default_rng(67)
    b = ModelBuilder()
    x = b.tensor("int8", (1, height, width, 3), scale=0.02, zero_point=-128)
    outputs = [_conv(b, rng, x, 3, 8, 3, 2, "SAME", -128, (-(-height // 2), -(-width // 2))),
               _conv(b, rng, x, 3, 16, 3, 1, "SAME", 4, (height, width)),
               _conv(b, rng, x, 3, 12, 3, 1, "VALID", -5, (height - 2, width - 2))]
    path.write_bytes(b.build([x], outputs))
    return path


@pytest.mark.parametrize("height, width", [(3, 3), (7, 6)])
def test_rgb_rows_eight_channels_in_qemu(height, width, tmp_path, monkeypatch):
    """A 3x3 filter over 3 channels whose channel count is a multiple of 8 runs 8 channels at a time
    (nn2c_conv_rows8_3x9_asm), the windows inside the image in runs and those over the border one at a time; 12
    channels take the 4-channel rows: bit-exact with TFLM in QEMU at -O2 and without the inline assembly."""
    path = _rgb_model(height, width, tmp_path / "rgb.tflite")
    options = CompileOptions(target="cortex-m4", schedule="layer")
    result = compile_model(path, options)
    source, config = result.files["rgb.c"], result.files["nn2c_kernels/nn2c_config.h"]
    assert source.count("nn2c_conv_s8_rows(") == 3, source
    assert "NN2C_OMIT_DSP_CONV_ROWS8_3X9" not in config and "NN2C_OMIT_DSP_CONV_ROWS_3_BYTE" not in config
    records = [[np.full((1, height, width, 3), -128, np.int8)], [np.full((1, height, width, 3), 127, np.int8)]]
    assert_bit_exact_in_qemu(path, options, records, 2, 19, tmp_path, monkeypatch)


def test_dual_filters_of_odd_channel_counts():
    """An odd channel count is dual only where the kernels allow it (odd): its last pair's B a zero channel, in
    the packed bytes as A's int16 halves alone."""
    rng = np.random.default_rng(5)
    rows = rng.integers(-127, 128, (5, 12)).astype(np.int8)
    bias = rng.integers(-100, 100, 5)
    assert not dual_fits(rows, bias) and dual_fits(rows, bias, odd=True)
    packed = pack_dual_filter(rows).view("<i2").reshape(3, 4, 4)  # [pairs][blocks, the depth padded to 16][0 2 1 3]
    assert np.array_equal(packed[2, 0], rows[4, [0, 2, 1, 3]]) and np.array_equal(packed[2, 1], rows[4, [4, 6, 5, 7]])
    assert np.array_equal(pack_dual_filter(rows)[: 2 * 4 * 8], pack_dual_filter(rows[:4]))
