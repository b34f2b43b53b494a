"""Unit tests of the quantization math: TFLite's parameter choice, weight / bias quantization and
the range estimators (min/max, percentile, MSE-optimal)."""

from __future__ import annotations

import numpy as np
import pytest

from nn2c.quant import params as qp
from nn2c.quant.observers import TensorRange


def _observe(data: np.ndarray) -> TensorRange:
    stats = TensorRange()
    for chunk in np.array_split(data, 4):
        stats.observe_minmax(chunk)
    for chunk in np.array_split(data, 4):
        stats.observe_hist(chunk)
    return stats


def test_activation_params_contain_zero_and_follow_tflite():
    q = qp.activation_params(0.0, 6.0)  # a ReLU6 output
    assert q.zero_point == (-128,) and q.scale[0] == pytest.approx(6.0 / 255)
    q = qp.activation_params(0.5, 2.0)  # the range is widened to contain 0
    assert q.zero_point == (-128,) and q.scale[0] == pytest.approx(2.0 / 255)
    q = qp.activation_params(-1.0, 1.0)
    assert q.zero_point == (0,) or q.zero_point == (-1,)
    assert q.scale[0] == np.float32(q.scale[0])  # float32-representable, as a .tflite stores it
    lo, hi = qp.representable_range(qp.activation_params(-3.0, 5.0))
    assert lo <= -3.0 + 1e-6 and hi >= 5.0 - 0.04
    assert qp.activation_params(0.0, 0.0).scale[0] >= qp.MIN_SCALE  # a constant tensor still gets a valid scale


def test_weights_are_per_channel_symmetric_and_bias_int32():
    w = np.array([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [2.0, 1.0, -0.5]], np.float32)  # [out, in]
    q = qp.weight_params(w, 0)
    assert q.axis == 0 and q.zero_point == (0, 0, 0)
    np.testing.assert_allclose(q.scale, [1.0 / 127, 1.0, 2.0 / 127], rtol=1e-6)
    codes = qp.quantize_array(w, q)
    assert codes.dtype == np.int8 and codes[0, 1] == -127 and codes[2, 0] == 127 and not codes[1].any()
    np.testing.assert_allclose(codes * np.array(q.scale)[:, None], w, atol=max(q.scale) / 2)
    b = qp.bias_params(0.02, q, 3)
    np.testing.assert_allclose(b.scale, 0.02 * np.array(q.scale), rtol=1e-6)
    bias = qp.quantize_bias(np.array([0.1, -0.3, 1.0]), b)
    assert bias.dtype == np.int32
    np.testing.assert_allclose(bias * np.array(b.scale), [0.1, -0.3, 1.0], atol=max(b.scale))


def test_depthwise_filters_use_the_last_axis():
    w = np.random.default_rng(0).normal(size=(1, 3, 3, 5)).astype(np.float32)
    q = qp.weight_params(w, 3)
    np.testing.assert_allclose(q.scale, np.abs(w).max(axis=(0, 1, 2)) / 127, rtol=1e-6)


def test_scalar_constants_keep_their_shape():
    """An ONNX scalar operand (HardSigmoid's alpha, shape ()) stays a 0-d array once quantized; it
    became shape (1,) and the int8 graph failed its invariant check (timm's MobileNetV3)."""
    q = qp.activation_params(0.0, 1.0)
    codes = qp.quantize_array(np.asarray(np.float32(0.2)), q)
    assert isinstance(codes, np.ndarray) and codes.shape == () and codes.dtype == np.int8
    assert qp.quantize_array(np.full((2, 3), 0.5, np.float32), q).shape == (2, 3)


def test_minmax_covers_everything_and_percentile_trims_outliers():
    rng = np.random.default_rng(0)
    data = rng.normal(size=100_000)
    data[:3] = [40.0, -35.0, 50.0]
    stats = _observe(data)
    assert stats.clip_range("minmax") == (pytest.approx(-35.0), pytest.approx(50.0))
    lo, hi = stats.clip_range("percentile")
    assert -6.0 < lo < -3.0 and 3.0 < hi < 6.0


def test_mse_clips_outliers_and_keeps_uniform_ranges():
    rng = np.random.default_rng(1)
    gaussian = rng.normal(size=200_000)
    gaussian[:2] = [12.0, -12.0]
    lo, hi = _observe(gaussian).clip_range("mse")
    assert -10.0 < lo < -2.5 and 2.5 < hi < 10.0  # clipping the outliers costs less than the lost resolution
    gaussian[:2] = [60.0, -60.0]  # but 60 sigma outliers are worth keeping in range (at least partly)
    lo, hi = _observe(gaussian).clip_range("mse")
    assert lo < -20.0 and hi > 20.0
    uniform = rng.uniform(-1.0, 3.0, size=100_000)
    lo, hi = _observe(uniform).clip_range("mse")
    assert lo == pytest.approx(-1.0, abs=0.05) and hi == pytest.approx(3.0, abs=0.05)


def test_mse_of_relu_outputs_keeps_zero_as_the_lower_end():
    rng = np.random.default_rng(2)
    relu = np.maximum(rng.normal(size=100_000), 0.0)  # half exact zeros
    lo, hi = _observe(relu).clip_range("mse")
    assert lo == 0.0 and 2.5 < hi <= relu.max()


def test_mse_error_model_prefers_the_lowest_measured_error():
    """The chosen range's real quantization MSE is no worse than min/max's."""
    rng = np.random.default_rng(3)
    data = rng.standard_t(3, size=50_000)
    stats = _observe(data)

    def mse(lo: float, hi: float, data: np.ndarray = data) -> float:
        q = qp.activation_params(lo, hi)
        s, z = q.scale[0], q.zero_point[0]
        codes = np.clip(np.round(data / s) + z, -128, 127)
        return float(np.mean((data - (codes - z) * s) ** 2))

    chosen = mse(*stats.clip_range("mse"))
    assert chosen < mse(*stats.clip_range("minmax")) and chosen < mse(*stats.clip_range("percentile"))
    gaussian = rng.normal(size=50_000)
    gaussian[0] = 15.0
    stats = _observe(gaussian)
    # one 15-sigma outlier costs more clipped than kept: the estimate trades it off as the real error does
    assert mse(*stats.clip_range("mse"), gaussian) < mse(*stats.clip_range("minmax"), gaussian)
