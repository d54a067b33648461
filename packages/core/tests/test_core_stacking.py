"""Out-of-fold stacking of an in-context classifier with gradient boosting (:mod:`tabzoo.estimators.stacking`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _icl_testmodel import ICLTestClassifier
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.stacking import StackingClassifier


def _table(n: int = 300, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """An axis-aligned rule (trees read it at once) and a string column."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    colour = rng.choice(["red", "green", "blue"], n)
    y = ((x[:, 0] > 0.3) & (x[:, 1] < 0.5) | (colour == "red")).astype(np.int64)
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "colour": colour}), y


def _stack(**kw) -> StackingClassifier:  # noqa: ANN003
    return StackingClassifier(ICLTestClassifier(n_estimators=2, device="cpu"), cv=3, **kw)


@pytest.mark.parametrize("method", ["features", "average"])
def test_stacking_fits_predicts_and_is_deterministic(method: str) -> None:
    X, y = _table()
    a = _stack(method=method).fit(X.iloc[:220], y[:220])
    p = a.predict_proba(X.iloc[220:])
    assert p.shape == (80, 2) and np.allclose(p.sum(1), 1.0)
    np.testing.assert_array_equal(_stack(method=method).fit(X.iloc[:220], y[:220]).predict_proba(X.iloc[220:]), p)
    assert (a.predict(X.iloc[220:]) == y[220:]).mean() > 0.8
    alone = np.concatenate([a.predict_proba(X.iloc[220 + i: 221 + i]) for i in range(10)])
    np.testing.assert_allclose(alone, p[:10], rtol=1e-6, atol=1e-9)


def test_one_extra_column_per_binary_task_and_unseen_categories() -> None:
    X, y = _table()
    est = _stack().fit(X, y)
    ctx = est.estimator_.n_features_in_
    assert ctx == 5  # four columns + one log-odds column of the booster
    # unseen category: NaN code for the booster, no error
    q = X.iloc[:5].assign(colour="purple")
    assert np.isfinite(est.predict_proba(q)).all()


def test_bad_settings_say_the_fix() -> None:
    X, y = _table(n=60)
    with pytest.raises(TabzooInputError, match="method"):
        _stack(method="vote").fit(X, y)
    with pytest.raises(TabzooInputError, match="cv"):
        StackingClassifier(ICLTestClassifier(device="cpu"), cv=1).fit(X, y)
