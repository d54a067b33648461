"""scikit-learn's estimator checks, where they apply to a multi-output estimator."""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn", reason="the estimator needs the sklearn extra")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402

#: check name -> reason; every expected failure carries its reason. They are non-strict (they pass
#: whenever the fitted temperature is near 1): the temperature divides the float32 logits, so the
#: ~1e-7 rounding that BLAS batch shapes leave in them grows by 1/T past these checks' rtol=1e-7.
#: Rows are still predicted independently: test_estimator's row-independence test and the
#: conformance kit's query_independence check assert it at a tolerance that allows the rounding.
_ROUNDING = ("float32 rounding from BLAS batch shapes (~1e-7), amplified by the calibration temperature 1/T, "
             "exceeds rtol=1e-7; row independence is asserted elsewhere")
EXPECTED_FAILURES: dict[str, str] = {
    "check_methods_sample_order_invariance": _ROUNDING,
    "check_methods_subset_invariance": _ROUNDING,
}


@parametrize_with_checks(
    [MultiTabEstimator(d_embed=4, n_heads=2, row_heads=2, n_layers=1, hidden=(8,), max_epochs=2,
                       batch_size=64, n_context=16),
     MultiTabEstimator(architecture="mmoe", d_embed=4, hidden=(8,), max_epochs=2, batch_size=64)],
    expected_failed_checks=lambda est: EXPECTED_FAILURES,
)
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)
