"""Bad-input fuzzing of the estimators' ``fit`` / ``predict`` (issue 16 item 4).

Uses the core's in-context test architecture (``_icl_testmodel``: a kernel-attention model with no
training), so it runs with only the core installed. Each example draws a valid table, corrupts it
with one input class at a drawn row / column, and checks the documented outcome.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _fuzz import CLASSES, base_frames, corrupt, finite, must_raise, must_return, outcome
from _icl_testmodel import ICLTestClassifier, ICLTestRegressor
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import InputTypeError
from tabzoo.table.errors import SingleClassError

pytest.importorskip("sklearn")


def _clf() -> ICLTestClassifier:
    return ICLTestClassifier(n_estimators=2, device="cpu")


def _fit_proba(X: pd.DataFrame, y, X_test: pd.DataFrame | None = None):  # type: ignore[no-untyped-def]
    est = _clf().fit(X, y)
    return est, est.predict_proba(X if X_test is None else X_test)


@pytest.mark.parametrize("kind", CLASSES)
@given(base=base_frames(), row=st.integers(0, 100), col=st.integers(0, 100))
def test_classifier_fit_predict_on_every_input_class(kind: str, base, row: int, col: int) -> None:  # type: ignore[no-untyped-def]
    X0, y0 = base
    row, col = row % len(X0), col % X0.shape[1]
    X, y, name = corrupt(kind, X0, y0, row, col)
    result = outcome(lambda: _fit_proba(X, y))
    if kind == "mixed_labels":
        must_raise(result, "mixes label types", f"row {row}", "one type")
    elif kind == "mixed_object_column":
        must_raise(result, f"column {name!r}", f"row {row}", "astype(str)")
    elif kind == "single_class":
        must_raise(result, "only one class", "add rows of another class", kind=SingleClassError)
    elif kind == "empty":
        must_raise(result, "empty", "at least one row")
    elif kind == "duplicate_names":
        must_raise(result, name, "unique")
    elif kind == "mixed_names":
        must_raise(result, "string column names", kind=InputTypeError)
    else:
        est, proba = must_return(result)
        assert proba.shape == (len(X), len(np.unique(y0))) and finite(proba)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
        if kind in ("constant", "all_nan", "all_none", "subnormal"):
            # documented: such a column carries no information; the result equals a constant column
            ref = X0.copy()
            ref[X0.columns[col]] = 0.0
            np.testing.assert_allclose(proba, _fit_proba(ref, y0)[1], atol=1e-6)
        if kind == "huge":
            # documented: normalisation is scale-free, so 1e308-scale values act as the originals
            np.testing.assert_allclose(proba, _fit_proba(X0, y0)[1], atol=1e-4)


@given(base=base_frames(), row=st.integers(0, 100), col=st.integers(0, 100),
       bad=st.sampled_from(["inf", "dict", "list", "bytes", "text_in_numeric", "timedelta"]))
def test_classifier_predict_rejects_bad_query_values(base, row: int, col: int, bad: str) -> None:  # type: ignore[no-untyped-def]
    X, y = base
    row, col = row % len(X), col % X.shape[1]
    name = str(X.columns[col])
    est = _clf().fit(X, y)
    Q = X.copy()
    if bad == "inf":
        Q.iloc[row, col] = np.inf
        must_raise(outcome(lambda: est.predict(Q)), f"row {row}", "inf")
        return
    values = Q[name].astype(object).tolist()
    values[row] = {"dict": {"a": 1}, "list": [1, 2], "bytes": b"x", "text_in_numeric": "x",
                   "timedelta": pd.Timedelta(1, "s")}[bad]
    Q[name] = pd.Series(values, dtype=object, index=Q.index)
    result = outcome(lambda: est.predict(Q))
    must_raise(result, f"column {name!r}", f"row {row}")
    # and the same values in training data fail just as clearly
    must_raise(outcome(lambda: _clf().fit(Q, y)), f"column {name!r}", f"row {row}")


@given(base=base_frames(), kind=st.sampled_from(["huge", "subnormal", "constant", "nan", "mixed", "strings"]),
       row=st.integers(0, 100))
def test_regressor_targets(base, kind: str, row: int) -> None:  # type: ignore[no-untyped-def]
    X, y0 = base
    row = row % len(X)
    y = y0.astype(np.float64) - 1.0
    if kind == "huge":
        y = np.where(y == 0, 0.5, y) * 1e308
    elif kind == "subnormal":
        y = y * 5e-324
    elif kind == "constant":
        y = np.full(len(X), 3.25)
    elif kind == "nan":
        y[row] = np.nan
    elif kind == "mixed":
        y = y.astype(object)
        y[row] = "x"
    elif kind == "strings":
        y = np.array([f"v{v}" for v in y])
    result = outcome(lambda: ICLTestRegressor(n_estimators=2, device="cpu").fit(X, y).predict(X))
    if kind == "nan":
        must_raise(result, f"row {row}", "NaN")
    elif kind in ("mixed", "strings"):
        must_raise(result, "not a number", "encode y as floats")
    else:
        pred = must_return(result)
        assert pred.shape == (len(X),) and finite(pred)
        lo, hi = float(np.min(y)), float(np.max(y))
        # a kernel average of the targets: within their range (up to rounding)
        assert np.all(pred >= lo - 1e-6 * abs(lo)) and np.all(pred <= hi + 1e-6 * abs(hi))
        if kind == "constant":
            np.testing.assert_allclose(pred, 3.25)


@given(n=st.integers(2, 12), labels=st.lists(st.sampled_from([0, 1, "a", "b", True, 2.5, b"x", None]),
                                             min_size=2, max_size=12))
def test_classifier_labels_of_any_mix(n: int, labels: list) -> None:  # type: ignore[no-untyped-def]
    y = (labels * n)[:n]
    X = np.arange(n, dtype=float)[:, None]
    result = outcome(lambda: _clf().fit(X, y).predict(X))
    kinds = {("bool" if isinstance(v, bool) else "number" if isinstance(v, int | float) else type(v).__name__)
             for v in y if v is not None}
    if "bytes" in kinds:
        must_raise(result, "bytes", "decode", kind=InputTypeError)
    elif len(kinds) > 1:
        must_raise(result, "mixes label types", "row")
    elif None in y:
        must_raise(result, "None", "row")
    elif any(isinstance(v, float) and v != int(v) for v in y):
        must_raise(result, "continuous")
    elif len(set(y)) < 2:
        must_raise(result, "only one class", kind=SingleClassError)
    else:
        pred = must_return(result)
        assert set(pred.tolist()) <= set(y)
        assert all(type(p) is type(y[0]) or isinstance(p, type(y[0])) or np.asarray(y).dtype == np.asarray(pred).dtype
                   for p in pred.tolist())
