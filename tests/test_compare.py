"""The output comparison every verification uses (nn2c verify, nn2c bench, the model tests)."""

from __future__ import annotations

import numpy as np

from nn2c.verify.compare import compare_arrays


def test_integers_must_be_identical():
    assert compare_arrays(np.array([1, 2, 3], np.int8), np.array([1, 3, 3], np.int8), 1e-5, 1e-6) == (1.0, 0.0, 1)


def test_floats_within_relative_plus_absolute_tolerance():
    ours, ref = np.array([1.0, 100.0, 0.0], np.float32), np.array([1.000001, 100.0005, 1e-7], np.float32)
    assert compare_arrays(ours, ref, 1e-5, 1e-6)[2] == 0
    assert compare_arrays(ours, ref, 1e-7, 1e-9)[2] == 3


def test_nan_and_infinity_are_not_silently_accepted():
    ref = np.array([2.0, np.inf, np.inf, np.nan, -np.inf])
    ours = np.array([np.nan, np.inf, -np.inf, np.nan, 5.0])
    # NaN against a number and infinities of the wrong sign or against a number differ; equal
    # infinities and NaN against NaN agree
    assert compare_arrays(ours, ref, 1e-5, 1e-6)[2] == 3
