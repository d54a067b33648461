"""``predict_with_proba``: labels and probabilities from one model pass, equal to predict / predict_proba."""

from __future__ import annotations

import numpy as np
import pytest
from _icl_testmodel import ICLTestClassifier, ICLTestRegressor
from sklearn.datasets import load_iris, make_regression
from sklearn.linear_model import LogisticRegression
from tabzoo.errors import NotFittedError
from tabzoo.estimators.joint import predict_with_proba


def test_classifier_one_pass_equals_predict_and_proba(monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = ICLTestClassifier(n_estimators=2, device="cpu").fit(X[::2], names[::2])
    want_labels, want_proba = clf.predict(X[1::2]), clf.predict_proba(X[1::2])
    calls = []
    forward = clf.model_.forward
    monkeypatch.setattr(clf.model_, "forward", lambda *a: calls.append(1) or forward(*a))
    labels, proba = clf.predict_with_proba(X[1::2])
    one = len(calls)
    clf.predict(X[1::2])
    clf.predict_proba(X[1::2])
    assert labels.tolist() == want_labels.tolist()
    np.testing.assert_array_equal(proba, want_proba)
    assert one > 0 and len(calls) == 3 * one  # predict + predict_proba: two passes; predict_with_proba: one


def test_regressor_gives_values_and_none() -> None:
    X, y = make_regression(n_samples=60, n_features=4, random_state=0)
    reg = ICLTestRegressor(n_estimators=2, device="cpu").fit(X[:40], y[:40])
    values, proba = reg.predict_with_proba(X[40:])
    assert proba is None
    np.testing.assert_array_equal(values, reg.predict(X[40:]))


def test_unfitted_refuses_and_other_estimators_fall_back() -> None:
    with pytest.raises(NotFittedError):
        ICLTestClassifier().predict_with_proba(np.zeros((2, 2)))
    with pytest.raises(NotFittedError):
        ICLTestRegressor().predict_with_proba(np.zeros((2, 2)))
    X, y = load_iris(return_X_y=True)
    lr = LogisticRegression(max_iter=500).fit(X, y)
    labels, proba = predict_with_proba(lr, X)
    assert labels.tolist() == lr.predict(X).tolist() and proba.shape == (150, 3)
