"""tabzoo.metrics: hand-computed values and scikit-learn as the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.metrics import explained_variance, r2_score, rankdata, roc_auc


def test_hand_computed() -> None:
    assert roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == pytest.approx(0.75)
    assert roc_auc(np.array([0, 1]), np.array([0.5, 0.5])) == pytest.approx(0.5)
    assert np.isnan(roc_auc(np.array([1, 1]), np.array([0.1, 0.2])))
    np.testing.assert_array_equal(rankdata(np.array([3.0, 1.0, 3.0, 2.0])), [3.5, 1.0, 3.5, 2.0])
    assert r2_score(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0])) == 1.0
    assert r2_score(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])) == 0.0
    assert explained_variance(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])) == 1.0  # blind to an offset
    assert np.isnan(r2_score(np.ones(3), np.zeros(3))) and np.isnan(explained_variance(np.ones(3), np.zeros(3)))


@given(seed=st.integers(0, 10_000), n=st.integers(4, 40))
def test_metrics_match_sklearn(seed: int, n: int) -> None:
    metrics = pytest.importorskip("sklearn.metrics", reason="reference implementation")
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    s = rng.integers(0, 5, n).astype(float)  # many ties
    assert roc_auc(y, s) == pytest.approx(metrics.roc_auc_score(y, s))
    yr, pr = rng.normal(size=n), rng.normal(size=n)
    assert explained_variance(yr, pr) == pytest.approx(metrics.explained_variance_score(yr, pr))
    assert r2_score(yr, pr) == pytest.approx(metrics.r2_score(yr, pr))
