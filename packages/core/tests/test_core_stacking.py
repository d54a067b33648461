"""Out-of-fold stacking of an in-context classifier with gradient boosting (:mod:`tabzoo.estimators.stacking`)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _icl_testmodel import ICLTestClassifier
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import HistGradientBoostingClassifier
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.stacking import CANDIDATES, StackingChoiceWarning, StackingClassifier


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
    est = _stack(guard=False).fit(X, y)
    assert est.chosen_ == "features" and est.oof_scores_ == {}
    ctx = est.estimator_.n_features_in_
    assert ctx == 5 and est.n_features_in_ == 4  # four columns + one log-odds column of the booster
    # unseen category: NaN code for the booster, no error
    q = X.iloc[:5].assign(colour="purple")
    assert np.isfinite(est.predict_proba(q)).all()


def test_bad_settings_say_the_fix() -> None:
    X, y = _table(n=60)
    with pytest.raises(TabzooInputError, match="method"):
        _stack(method="vote").fit(X, y)
    with pytest.raises(TabzooInputError, match="cv"):
        StackingClassifier(ICLTestClassifier(device="cpu"), cv=1).fit(X, y)
    with pytest.raises(TabzooInputError, match="scoring"):
        _stack(scoring="accuracy").fit(X, y)
    with pytest.raises(TabzooInputError, match="auto"):
        _stack(booster="best").fit(X, y)
    with pytest.raises(TabzooInputError, match="empty"):
        _stack(booster=[]).fit(X, y)


class _NoiseClassifier(ClassifierMixin, BaseEstimator):
    """A useless booster: probabilities drawn from each row's own values (so a row's output depends on it alone)."""

    def fit(self, X, y):  # noqa: ANN001, ANN201
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):  # noqa: ANN001, ANN201
        X = np.nan_to_num(np.asarray(X, dtype=np.float64))
        seeds = (np.abs(X).sum(1) * 1e6).astype(np.int64) % (2**31)
        return np.stack([np.random.default_rng(int(s)).dirichlet(np.full(self.classes_.size, 0.3)) for s in seeds])


def _blobs(n: int, k: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """``k`` separated Gaussian blobs in 2 dimensions: the kernel model reads them at once."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    centres = rng.standard_normal((k, 2)) * 3.0
    return pd.DataFrame(centres[y] + rng.standard_normal((n, 2)), columns=["u", "v"]), y


def test_the_guard_picks_the_good_member_over_a_poisoned_stack() -> None:
    """A useless booster (noise) poisons both combinations; the guard falls back to the in-context model."""
    X, y = _blobs(240, 3, 0)
    with pytest.warns(StackingChoiceWarning, match="estimator"):
        est = _stack(booster=_NoiseClassifier()).fit(X.iloc[:180], y[:180])
    assert est.chosen_ == "estimator" and est.boosters_ == []
    assert set(est.oof_scores_) == set(CANDIDATES)
    assert est.oof_scores_["estimator"] > max(est.oof_scores_["features"], est.oof_scores_["booster"])
    assert "estimator" in est.choice_ and "features stack" in est.choice_
    unguarded = _stack(booster=_NoiseClassifier(), guard=False).fit(X.iloc[:180], y[:180])
    assert (est.predict(X.iloc[180:]) == y[180:]).mean() >= (unguarded.predict(X.iloc[180:]) == y[180:]).mean()
    np.testing.assert_array_equal(est.predict_proba(X.iloc[180:]),
                                  ICLTestClassifier(n_estimators=2, device="cpu").fit(X.iloc[:180], y[:180])
                                  .predict_proba(X.iloc[180:]))


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**16), k=st.integers(2, 4), scoring=st.sampled_from(["roc_auc", "log_loss"]),
       method=st.sampled_from(["features", "average"]))
def test_the_choice_is_never_worse_than_a_member_out_of_fold(seed: int, k: int, scoring: str, method: str) -> None:
    X, y = _blobs(90, k, seed)
    X["noise"] = np.random.default_rng(seed + 1).standard_normal(90)
    kw = {"booster": HistGradientBoostingClassifier(max_iter=15, random_state=0), "scoring": scoring,
          "method": method}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = _stack(**kw).fit(X, y), _stack(**kw).fit(X, y)
    s = a.oof_scores_
    assert a.chosen_ in CANDIDATES and s[a.chosen_] >= max(s["estimator"], s["booster"], s[method])
    assert a.chosen_ == method or s[a.chosen_] > s[method]  # the stack is left only for a strictly better score
    assert a.chosen_ in a.choice_ and (a.estimator_ is None) == (a.chosen_ == "booster")
    assert a.chosen_ == b.chosen_ and a.oof_scores_ == b.oof_scores_  # deterministic for a random_state
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_booster_choice_by_out_of_fold_evidence_and_budget() -> None:
    X, y = _table(n=200)
    good = HistGradientBoostingClassifier(max_iter=30, random_state=0)
    est = _stack(booster=[_NoiseClassifier(), good], guard=False).fit(X, y)
    assert est.booster_name_ == "1:HistGradientBoostingClassifier"
    assert set(est.booster_scores_) == {"0:_NoiseClassifier", "1:HistGradientBoostingClassifier"}
    assert est.booster_scores_["1:HistGradientBoostingClassifier"] > est.booster_scores_["0:_NoiseClassifier"] + 0.2
    assert len(est.boosters_) == 3 and all(isinstance(b, HistGradientBoostingClassifier) for b in est.boosters_)
    with pytest.warns(StackingChoiceWarning, match="budget"):
        cut = _stack(booster=[_NoiseClassifier(), good], guard=False, booster_budget_s=0.0).fit(X, y)
    assert cut.boosters_skipped_ == ["1:HistGradientBoostingClassifier"] and cut.booster_name_ == "0:_NoiseClassifier"
    auto = _stack(booster="auto", guard=False).fit(X, y)
    assert auto.booster_name_ in auto.booster_scores_ and "hist_gbdt" in auto.booster_scores_
    assert auto.booster_name_ == max(auto.booster_scores_, key=auto.booster_scores_.get)
