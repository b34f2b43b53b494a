"""Range observers: what each float tensor held over the calibration set, and the clip range
[lo, hi] its int8 parameters should cover.

Two passes over the data: the first records each tensor's min and max, the second a histogram of
BINS equal bins over [min, max] (exact zeros counted apart: ReLU outputs are full of them, and 0 is
always exactly representable). Estimators of the clip range:
- minmax: [min, max] (what TFLite's converter does);
- percentile: the 0.01 % and 99.99 % quantiles (each end only when it lies beyond 0);
- mse: the [lo, hi] (lo <= 0 <= hi, at bin edges) minimising the expected squared quantization
  error E = sum_{c < lo} n (c - lo)^2 + sum_{c > hi} n (c - hi)^2 + n_inside * s^2 / 12 with
  s = (hi - lo) / 255: clipping error of the outliers plus the rounding error of a uniform
  quantizer. Prefix sums of n, n c, n c^2 give each candidate's clipping error in O(1), so the
  search is exhaustive over up to CANDIDATES x CANDIDATES end points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

METHODS = ("minmax", "percentile", "mse")
BINS = 2048
CANDIDATES = 160
PERCENTILE = 99.99


@dataclass
class TensorRange:
    """Statistics of one tensor: pass 1 fills min / max, pass 2 the histogram."""

    minimum: float = np.inf
    maximum: float = -np.inf
    count: int = 0
    zeros: int = 0
    nonfinite: bool = False
    hist: np.ndarray | None = field(default=None, repr=False)

    def observe_minmax(self, x: np.ndarray) -> None:
        if x.size and not np.isfinite(x).all():
            self.nonfinite = True
            x = x[np.isfinite(x)]
        if x.size:
            self.minimum = min(self.minimum, float(x.min()))
            self.maximum = max(self.maximum, float(x.max()))

    def observe_hist(self, x: np.ndarray) -> None:
        x = x.reshape(-1).astype(np.float64)
        self.count += x.size
        x = x[np.isfinite(x)]
        nonzero = x[x != 0]
        self.zeros += x.size - nonzero.size
        if self.hist is None:
            self.hist = np.zeros(BINS, dtype=np.int64)
        if self.maximum > self.minimum and nonzero.size:
            self.hist += np.histogram(nonzero, bins=BINS, range=(self.minimum, self.maximum))[0]

    @property
    def edges(self) -> np.ndarray:
        return np.linspace(self.minimum, self.maximum, BINS + 1)

    def clip_range(self, method: str) -> tuple[float, float]:
        lo, hi = min(self.minimum, 0.0), max(self.maximum, 0.0)
        if method == "minmax" or self.hist is None or not self.maximum > self.minimum:
            return lo, hi
        if method == "percentile":
            return self._percentile(lo, hi)
        if method == "mse":
            return self._mse(lo, hi)
        raise ValueError(f"unknown calibration method {method!r}")

    def _percentile(self, lo: float, hi: float) -> tuple[float, float]:
        assert self.hist is not None
        cumulative = np.cumsum(self.hist)
        total = cumulative[-1]
        if total == 0:
            return lo, hi
        edges = self.edges
        tail = total * (100.0 - PERCENTILE) / 100.0
        if lo < 0:
            k = int(np.searchsorted(cumulative, tail, side="right"))
            lo = min(float(edges[k]), 0.0)
        if hi > 0:
            k = int(np.searchsorted(cumulative, total - tail, side="left"))
            hi = max(float(edges[min(k + 1, BINS)]), 0.0)
        return lo, hi

    def _mse(self, lo: float, hi: float) -> tuple[float, float]:
        assert self.hist is not None
        n = self.hist.astype(np.float64)
        if n.sum() == 0:
            return lo, hi
        edges = self.edges
        centers = 0.5 * (edges[:-1] + edges[1:])
        # prefix sums over bins: P[k] = sum of the first k bins
        pn = np.concatenate([[0.0], np.cumsum(n)])
        p1 = np.concatenate([[0.0], np.cumsum(n * centers)])
        p2 = np.concatenate([[0.0], np.cumsum(n * centers * centers)])
        total_n, total_1, total_2 = pn[-1], p1[-1], p2[-1]
        # candidate ends are bin edges: lo = edges[i] (bins < i clipped), hi = edges[j] (bins >= j)
        zero_edge = int(np.clip(np.searchsorted(edges, 0.0), 0, BINS))
        lo_idx = np.unique(np.linspace(0, zero_edge, CANDIDATES).astype(int)) if lo < 0 else np.array([0])
        hi_idx = np.unique(np.linspace(zero_edge, BINS, CANDIDATES).astype(int)) if hi > 0 else np.array([BINS])
        lo_val = np.minimum(edges[lo_idx], 0.0) if lo < 0 else np.array([lo])
        hi_val = np.maximum(edges[hi_idx], 0.0) if hi > 0 else np.array([hi])
        # clipping error below lo and above hi
        err_lo = p2[lo_idx] - 2 * lo_val * p1[lo_idx] + lo_val**2 * pn[lo_idx]
        above_n = total_n - pn[hi_idx]
        above_1 = total_1 - p1[hi_idx]
        above_2 = total_2 - p2[hi_idx]
        err_hi = above_2 - 2 * hi_val * above_1 + hi_val**2 * above_n
        inside = pn[hi_idx][None, :] - pn[lo_idx][:, None]
        step = (hi_val[None, :] - lo_val[:, None]) / 255.0
        error = err_lo[:, None] + err_hi[None, :] + np.maximum(inside, 0) * step**2 / 12.0
        error = np.where(step > 0, error, np.inf)
        i, j = np.unravel_index(int(np.argmin(error)), error.shape)
        return float(lo_val[i]), float(hi_val[j])


def check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(method)
