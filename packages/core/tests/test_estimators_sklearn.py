"""Every in-context estimator passes scikit-learn's estimator checks."""

from __future__ import annotations

from _icl_testmodel import ICLTestClassifier, ICLTestRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

#: estimator class name -> {check name: reason}; every expected failure carries a reason.
EXPECTED_FAILURES: dict[str, dict[str, str]] = {}


def _expected(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(
    [ICLTestClassifier(n_estimators=2, device="cpu"), ICLTestRegressor(n_estimators=2, device="cpu")],
    expected_failed_checks=_expected,
)
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)
