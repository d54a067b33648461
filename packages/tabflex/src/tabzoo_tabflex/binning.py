"""Regression by target binning (TabFlex paper, section 6.4).

The target range is cut into ``n_bins`` uniform bins (the paper tries 10 and 100 and keeps the
better); each context target becomes the class of its bin, the classifier predicts bin
probabilities, and the prediction is the probability-weighted mean of the bin centres (or the
centre of the most probable bin). Bins no training target falls in are dropped, so the classes are
``0 .. n_occupied - 1`` with no gaps. More than ``max_classes`` occupied bins go through the
hierarchical class split of :mod:`tabzoo.estimators.hierarchy`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from tabzoo.errors import TabzooInputError

__all__ = ["TargetBinner"]


class TargetBinner:
    """Uniform (or quantile) bins over a regression target.

    :param n_bins: number of bins before empty ones are dropped.
    :param strategy: ``"uniform"`` (paper) or ``"quantile"``.
    :param shift: fraction of a bin (``0 <= shift < 1``) by which the inner edges move up; the
        outermost bins shrink or grow to keep covering the target range. Ensemble members with
        different shifts see differently cut targets, and their predictions are averaged.

    Fitted attributes: ``edges_`` ``[n_bins + 1]``, ``occupied_`` (indices of non-empty bins),
    ``centers_`` ``[n_classes_]`` (centre of each occupied bin: the mean of its training targets),
    ``n_classes_``.
    """

    def __init__(self, n_bins: int = 10, strategy: Literal["uniform", "quantile"] = "uniform",
                 shift: float = 0.0) -> None:
        self.n_bins = int(n_bins)
        self.strategy = strategy
        self.shift = float(shift)

    def fit(self, y: np.ndarray) -> TargetBinner:
        """Fit the bins to targets ``y [n]`` (finite)."""
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.size == 0 or not np.all(np.isfinite(y)):
            raise TabzooInputError("TargetBinner needs a non-empty, finite target; drop rows with NaN/inf targets.")
        if self.n_bins < 2:
            raise TabzooInputError(f"TargetBinner needs n_bins >= 2, got {self.n_bins}.")
        if not 0.0 <= self.shift < 1.0:
            raise TabzooInputError(f"TargetBinner shift must be in [0, 1) (a fraction of a bin), got {self.shift}.")
        # positions of the edges in units of bins: 0, 1, .., n (shift 0) or 0, s, 1+s, .., n
        pos = np.unique(np.clip(np.concatenate([[0.0], np.arange(self.n_bins + 1) + self.shift, [self.n_bins]]),
                                0.0, self.n_bins)) / self.n_bins
        if self.strategy == "uniform":
            lo, hi = float(y.min()), float(y.max())
            if hi <= lo:
                hi = lo + 1.0
            edges = np.unique(lo + pos * (hi - lo))
        elif self.strategy == "quantile":
            edges = np.unique(np.quantile(y, pos))
            if edges.size < 2:
                edges = np.array([edges[0], edges[0] + 1.0])
        else:
            raise TabzooInputError(f"unknown binning strategy {self.strategy!r}; use 'uniform' or 'quantile'.")
        self.edges_ = edges
        raw = self._raw_bins(y)
        self.occupied_ = np.unique(raw)
        self._rank = np.full(edges.size - 1, -1, dtype=np.int64)
        self._rank[self.occupied_] = np.arange(self.occupied_.size)
        self.centers_ = np.array([y[raw == b].mean() for b in self.occupied_])
        self.n_classes_ = int(self.occupied_.size)
        return self

    def _raw_bins(self, y: np.ndarray) -> np.ndarray:
        inner = self.edges_[1:-1]
        return np.searchsorted(inner, y, side="right").astype(np.int64)

    def transform(self, y: np.ndarray) -> np.ndarray:
        """Targets -> class indices ``0 .. n_classes_ - 1`` (a value in an empty bin goes to the nearest
        occupied bin)."""
        raw = self._raw_bins(np.asarray(y, dtype=np.float64).ravel())
        nearest = self.occupied_[np.abs(raw[:, None] - self.occupied_[None, :]).argmin(axis=1)]
        return self._rank[nearest]

    def inverse_transform(self, classes: np.ndarray) -> np.ndarray:
        """Class indices -> bin centres."""
        return self.centers_[np.asarray(classes, dtype=np.int64)]

    def expected_value(self, proba: np.ndarray) -> np.ndarray:
        """``[n, n_classes_]`` bin probabilities -> ``[n]`` mean of the bin centres under them."""
        proba = np.asarray(proba, dtype=np.float64)
        if proba.shape[-1] != self.n_classes_:
            raise TabzooInputError(f"expected {self.n_classes_} bin probabilities per row, got {proba.shape[-1]}.")
        return proba @ self.centers_

    def max_error(self) -> float:
        """Largest distance of a training target from its bin's centre is at most one bin width."""
        return float(np.diff(self.edges_).max())
