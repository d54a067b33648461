"""Issue 24 item 9: hypothesis-made bad inputs at every installed plugin estimator.

Every estimator that an installed plugin registers (``ArchitectureSpec.estimator`` and
``.regressor``) gets ``fit`` / ``predict`` / ``predict_proba`` with one corruption of a valid
table: wrong shapes, NaN / inf labels, object columns, empty frames, mismatched columns at predict,
huge values. Each call must succeed or raise a :class:`~tabzoo.errors.TabzooError`; anything
else (or a call past :data:`LIMIT_S` seconds) fails with the input that caused it.

With only the core installed there is nothing to fuzz (skipped with that reason); the
``integration`` session runs it with every plugin at a small budget, the ``fuzz`` session at
``TABZOO_FUZZ_EXAMPLES`` examples per estimator.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _fuzz import alarm, base_frames
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooError

pytest.importorskip("sklearn")

EXAMPLES = int(os.environ.get("TABZOO_FUZZ_EXAMPLES", "8"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 8,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LIMIT_S = 300
#: small, fast settings, applied where the estimator has the parameter
FAST = {"n_estimators": 1, "steps": 2, "max_epochs": 1, "eval_every": 1, "patience": 1, "device": "cpu",
        "progress": False, "verbose": False, "batch_size": 8, "random_state": 0}
KINDS = ("valid", "x_1d", "x_3d", "y_short", "y_3d", "nan_label", "inf_label", "object_column", "no_rows",
         "no_columns", "renamed_columns", "extra_column", "huge", "huge_label", "none", "text_x")


def _estimators() -> list[tuple[str, str, type]]:
    from tabzoo.plugins import get_registry, resolve_object

    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = get_registry()
        for name in reg.names("architectures"):
            spec = reg.get("architectures", name)
            for role, path in (("classifier", spec.estimator), ("regressor", spec.regressor)):
                if path:
                    try:
                        out.append((name, role, resolve_object(path)))
                    except TabzooError:
                        continue
    return [e for e in out if e[0] != "icl_test"]


ESTIMATORS = _estimators()


def _corrupt(kind: str, X: pd.DataFrame, y: np.ndarray, row: int, col: int) -> tuple[Any, Any, Any]:
    """``(X_fit, y_fit, X_predict)`` with one corruption of the valid ``X``, ``y``."""
    Q: Any = X.copy()
    y = y.copy()
    if kind == "x_1d":
        return X.to_numpy()[:, 0], y, Q
    if kind == "x_3d":
        return X.to_numpy()[:, :, None], y, Q
    if kind == "y_short":
        return X, y[:-1], Q
    if kind == "y_3d":
        return X, y[:, None, None], Q
    if kind in ("nan_label", "inf_label"):
        y = y.astype(np.float64)
        y[row] = np.nan if kind == "nan_label" else np.inf
        return X, y, Q
    if kind == "object_column":
        values = X.iloc[:, col].astype(object).tolist()
        values[row] = {"a": 1}
        X = X.copy()
        X[X.columns[col]] = pd.Series(values, dtype=object, index=X.index)
        return X, y, Q
    if kind == "no_rows":
        return X.iloc[:0], y[:0], Q.iloc[:0]
    if kind == "no_columns":
        return X.iloc[:, :0], y, Q.iloc[:, :0]
    if kind == "renamed_columns":
        return X, y, Q.rename(columns=lambda c: f"other_{c}")
    if kind == "extra_column":
        return X, y, Q.assign(extra=1.0)
    if kind == "huge":
        return X * 1e300, y, Q * 1e300
    if kind == "huge_label":
        return X, y.astype(np.float64) * 1e300 + 1e300, Q
    if kind == "none":
        return None, y, None
    if kind == "text_x":
        return X.astype(str), y, Q.astype(str)
    return X, y, Q


def _call(cls: type, X: Any, y: Any, Q: Any) -> None:
    est = cls()
    est.set_params(**{k: v for k, v in FAST.items() if k in est.get_params()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
        est.predict(Q)
        if hasattr(est, "predict_proba"):
            est.predict_proba(Q)


@pytest.mark.skipif(not ESTIMATORS, reason="no plugin estimator is installed (only the core): the integration "
                                           "and fuzz sessions install every plugin")
@pytest.mark.parametrize(("arch", "role", "cls"), ESTIMATORS, ids=[f"{a}-{r}" for a, r, _ in ESTIMATORS])
@FUZZ
@given(base=base_frames(min_rows=8, max_rows=24), kind=st.sampled_from(KINDS), row=st.integers(0, 100),
       col=st.integers(0, 100), regression_scale=st.sampled_from([1.0, 1e-6, 1e6]))
def test_bad_inputs_give_a_tabzoo_error_or_a_result(arch: str, role: str, cls: type, base: Any, kind: str,
                                                    row: int, col: int, regression_scale: float) -> None:
    X0, y0 = base
    if role == "regressor":
        y0 = (y0.astype(np.float64) + np.linspace(0, 0.5, len(y0))) * regression_scale
    X, y, Q = _corrupt(kind, X0, y0, row % len(X0), col % X0.shape[1])
    try:
        with alarm(LIMIT_S):
            _call(cls, X, y, Q)
    except TabzooError:
        return
    except Exception as exc:  # noqa: BLE001 - the point of the test
        raise AssertionError(f"{arch} {role} on {kind!r} (row {row}, col {col}) raised "
                             f"{type(exc).__name__}: {exc}") from exc
