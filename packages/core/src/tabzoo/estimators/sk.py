"""scikit-learn glue: the one place :mod:`tabzoo.estimators` imports scikit-learn.

Input errors scikit-learn raises as ``ValueError`` are re-raised as
:class:`~tabzoo.errors.TabzooInputError` (a ``ValueError`` too) with the fix appended, so
scikit-learn's own checks and tabzoo's error contract both hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabzoo.errors import InputTypeError, TabzooInputError
from tabzoo.params import check_params  # noqa: F401  (the one check, re-exported: estimators call it from here)

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.exceptions import NotFittedError as _SklearnNotFittedError
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_array, column_or_1d, validate_data
    from sklearn.utils.validation import check_is_fitted as _sklearn_check_is_fitted
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "tabzoo.estimators needs scikit-learn >= 1.6: pip install 'tabzoo-core[sklearn]'."
    ) from exc

__all__ = [
    "BaseEstimator",
    "ClassifierMixin",
    "RegressorMixin",
    "check_classification_targets",
    "check_input_array",
    "check_is_fitted",
    "check_label_types",
    "check_n_features_and_names",
    "check_params",
    "not_fitted",
    "classification_labels",
    "regression_targets",
    "require_y",
]


def check_is_fitted(estimator: Any, attributes: str | list[str] | None = None) -> None:
    """scikit-learn's ``check_is_fitted``, raising :class:`tabzoo.errors.NotFittedError` (both a
    ``TabzooInputError`` and scikit-learn's ``NotFittedError``) with the fix."""
    try:
        _sklearn_check_is_fitted(estimator, attributes)
    except _SklearnNotFittedError as exc:
        raise not_fitted(estimator) from exc


def not_fitted(estimator: Any) -> Exception:
    """The :class:`tabzoo.errors.NotFittedError` for ``estimator`` (to raise)."""
    from tabzoo.errors import NotFittedError

    name = type(estimator).__name__
    return NotFittedError(
        f"This {name} instance is not fitted yet. Call fit(X, y) first, or load a fitted model "
        f"(e.g. {name}.load(path) where the estimator has one)."
    )


def _is_dataframe(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def check_input_array(X: Any, *, fitting: bool = True) -> Any:
    """A 2-d, non-empty, dense table; NaN allowed (missing), inf refused. DataFrames pass through."""
    empty = ("the training set is empty. Pass at least one row." if fitting
             else "there are no rows to predict. Pass at least one row.")
    if _is_dataframe(X):
        if X.shape[0] < 1:
            raise TabzooInputError(
                f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required: {empty}"
            )
        if X.shape[1] < 1:
            raise TabzooInputError(
                f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required. "
                "Pass at least one feature column."
            )
        return X
    try:
        return check_array(X, dtype=None, ensure_all_finite="allow-nan", accept_sparse=False)
    except ValueError as exc:
        msg = str(exc)
        fix = " Pass a non-empty 2-d array [rows, features] (NaN marks a missing value; inf is not allowed)."
        if "0 sample" in msg:
            fix = " " + empty[0].upper() + empty[1:]
        elif "infinity" in msg:
            fix = " " + _where_inf(X) + " Replace inf by NaN (missing) or a finite value."
        raise TabzooInputError(msg + fix) from exc
    except TypeError as exc:
        raise InputTypeError(f"{exc}. Pass numbers, strings, booleans or dates in X.") from exc


def _where_inf(X: Any) -> str:
    try:
        arr = np.asarray(X, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            r, c = (int(i) for i in np.argwhere(~np.isfinite(arr) & ~np.isnan(arr))[0])
    except (TypeError, ValueError, IndexError):
        return "A value is infinite or too large."
    return f"Row {r}, column {c} is {arr[r, c]}."


def check_n_features_and_names(estimator: Any, X: Any, *, reset: bool) -> None:
    """Set (``reset=True``) or check ``n_features_in_`` and ``feature_names_in_``."""
    try:
        validate_data(estimator, X, reset=reset, skip_check_array=True)
    except ValueError as exc:
        fix = ("Rename the columns so every name is unique." if reset
               else "Pass the same feature columns, in the same order, as in fit (or fit again).")
        raise TabzooInputError(f"{exc} {fix}") from exc
    except TypeError as exc:  # e.g. column names of mixed types
        raise InputTypeError(
            f"{exc} Use string column names, e.g. X.columns = X.columns.astype(str)."
        ) from exc


def require_y(estimator: Any, y: Any) -> None:
    if y is None:
        raise TabzooInputError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None. "
            "Call fit(X, y) with the training labels."
        )


def _label_kind(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return "bool"
    if isinstance(v, int | float | np.integer | np.floating):
        return "number"
    if isinstance(v, str | np.str_):
        return "str"
    return type(v).__name__


def check_label_types(y: Any) -> None:
    """Labels are all numbers, all strings or all booleans; names the first row of another type.

    Checked on the raw values (a Python list ``["a", 1]`` would otherwise become the strings
    ``"a"``, ``"1"`` in numpy: a silent coercion).
    """
    if isinstance(y, np.ndarray) and y.dtype.kind != "O":
        if y.dtype.kind in "SV":
            raise InputTypeError(
                f"labels of dtype {y.dtype} (bytes) are not supported; decode them to str, "
                "e.g. y.astype(str)."
            )
        return
    values = y.to_numpy(dtype=object) if hasattr(y, "to_numpy") else np.asarray(y, dtype=object)
    flat = values.reshape(-1) if values.ndim <= 1 or (values.ndim == 2 and 1 in values.shape) else []
    first: dict[str, int] = {}
    for i, v in enumerate(flat):
        if v is None or (isinstance(v, float | np.floating) and not np.isfinite(v)):
            continue  # reported by the NaN/None check
        first.setdefault(_label_kind(v), i)
    odd = [k for k in first if k not in ("bool", "number", "str")]
    if odd:
        k = odd[0]
        raise InputTypeError(
            f"y row {first[k]} is a {k} ({flat[first[k]]!r}); labels must be numbers or strings: "
            + ("decode bytes to str, e.g. [b.decode() for b in y]." if k == "bytes"
               else "encode such labels as str or int first.")
        )
    if len(first) > 1:
        (ka, ra), (kb, rb) = sorted(first.items(), key=lambda kv: kv[1])[:2]
        raise TabzooInputError(
            f"y mixes label types: row {ra} is a {ka} ({flat[ra]!r}) but row {rb} is a {kb} "
            f"({flat[rb]!r}); use one type for every label, e.g. y = [str(v) for v in y]."
        )


def classification_labels(y: Any, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate classification labels of any type; returns ``(classes, encoded)``.

    :raises SingleClassError: when y holds fewer than two classes (a classifier needs two).
    """
    from tabzoo.table.errors import SingleClassError

    check_label_types(y)
    try:
        y = column_or_1d(y, warn=True)
    except ValueError as exc:
        raise TabzooInputError(f"{exc} Pass one label per row as a 1-d array.") from exc
    if len(y) != n_rows:
        raise TabzooInputError(f"X has {n_rows} rows but y has {len(y)} labels; pass one label per row.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        row = int(np.flatnonzero(~np.isfinite(y))[0])
        raise TabzooInputError(
            f"y contains NaN or inf (row {row}); drop those rows or give them a label before fit."
        )
    if y.dtype.kind == "O" and any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in y):
        row = next(i for i, v in enumerate(y) if v is None or (isinstance(v, float) and not np.isfinite(v)))
        raise TabzooInputError(f"y contains None/NaN (row {row}); drop those rows or give them a label before fit.")
    try:
        check_classification_targets(y)
    except ValueError as exc:
        raise TabzooInputError(
            f"{exc} A classifier needs discrete labels; use the regressor for continuous targets."
        ) from exc
    try:
        classes, encoded = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise TabzooInputError(
            f"the labels in y cannot be sorted ({exc}); use labels of one type (all str or all int)."
        ) from exc
    if len(classes) < 2:
        raise SingleClassError(
            f"y holds only one class ({getattr(classes[0], 'item', lambda: classes[0])()!r} in all {len(y)} rows); a classifier can't train "
            "when only one class is present: add rows of another class."
        )
    return classes, encoded.astype(np.int64)


def regression_targets(y: Any, n_rows: int) -> np.ndarray:
    """Validate regression targets: 1-d, numeric, finite."""
    try:
        y = column_or_1d(y, warn=True)
    except ValueError as exc:
        raise TabzooInputError(f"{exc} Pass one target per row as a 1-d array.") from exc
    if y.dtype.kind in "bOSU" and any(isinstance(v, bool | np.bool_ | str | bytes) for v in y.tolist()):
        row = next(i for i, v in enumerate(y.tolist()) if isinstance(v, bool | np.bool_ | str | bytes))
        raise TabzooInputError(
            f"regression target row {row} is {y[row]!r}, not a number; encode y as floats "
            "(or use a classifier for labels)."
        )
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TabzooInputError(f"regression targets must be numbers ({exc}); encode y as floats.") from exc
    if len(y) != n_rows:
        raise TabzooInputError(f"X has {n_rows} rows but y has {len(y)} targets; pass one target per row.")
    if not np.isfinite(y).all():
        row = int(np.flatnonzero(~np.isfinite(y))[0])
        raise TabzooInputError(f"y contains NaN or inf (row {row}); drop those rows or impute the target before fit.")
    return y
