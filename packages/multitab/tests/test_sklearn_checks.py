"""scikit-learn's estimator checks, where they apply to a multi-output estimator."""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn", reason="the estimator needs the sklearn extra")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402

#: check name -> reason; every expected failure carries its reason.
EXPECTED_FAILURES: dict[str, str] = {}  # none: every applicable check passes


@parametrize_with_checks(
    [MultiTabEstimator(d_embed=4, n_heads=2, row_heads=2, n_layers=1, hidden=(8,), max_epochs=2,
                       batch_size=64, n_context=16),
     MultiTabEstimator(architecture="mmoe", d_embed=4, hidden=(8,), max_epochs=2, batch_size=64)],
    expected_failed_checks=lambda est: EXPECTED_FAILURES,
)
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)
