"""scikit-learn glue: the one place :mod:`tabzoo.estimators` imports scikit-learn.

Input errors scikit-learn raises as ``ValueError`` are re-raised as
:class:`~tabzoo.errors.TabzooInputError` (a ``ValueError`` too) with the fix appended, so
scikit-learn's own checks and tabzoo's error contract both hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabzoo.errors import TabzooInputError

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d, validate_data
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
    "check_n_features_and_names",
    "classification_labels",
    "regression_targets",
    "require_y",
]


def _is_dataframe(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def check_input_array(X: Any) -> Any:
    """A 2-d, non-empty, dense table; NaN allowed (missing), inf refused. DataFrames pass through."""
    if _is_dataframe(X):
        if X.shape[0] < 1:
            raise TabzooInputError(
                f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required: "
                "the training set is empty. Pass at least one row."
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
            fix = " The training set is empty: pass at least one row."
        raise TabzooInputError(msg + fix) from exc


def check_n_features_and_names(estimator: Any, X: Any, *, reset: bool) -> None:
    """Set (``reset=True``) or check ``n_features_in_`` and ``feature_names_in_``."""
    try:
        validate_data(estimator, X, reset=reset, skip_check_array=True)
    except ValueError as exc:
        raise TabzooInputError(
            f"{exc} Pass the same feature columns, in the same order, as in fit (or fit again)."
        ) from exc


def require_y(estimator: Any, y: Any) -> None:
    if y is None:
        raise TabzooInputError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None. "
            "Call fit(X, y) with the training labels."
        )


def classification_labels(y: Any, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate classification labels of any type; returns ``(classes, encoded)``."""
    y = column_or_1d(y, warn=True)
    if len(y) != n_rows:
        raise TabzooInputError(f"X has {n_rows} rows but y has {len(y)} labels; pass one label per row.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise TabzooInputError("y contains NaN or inf; drop those rows or give them a label before fit.")
    if y.dtype.kind == "O" and any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in y):
        raise TabzooInputError("y contains None/NaN; drop those rows or give them a label before fit.")
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
    return classes, encoded.astype(np.int64)


def regression_targets(y: Any, n_rows: int) -> np.ndarray:
    """Validate regression targets: 1-d, numeric, finite."""
    y = column_or_1d(y, warn=True)
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TabzooInputError(f"regression targets must be numbers ({exc}); encode y as floats.") from exc
    if len(y) != n_rows:
        raise TabzooInputError(f"X has {n_rows} rows but y has {len(y)} targets; pass one target per row.")
    if not np.isfinite(y).all():
        raise TabzooInputError("y contains NaN or inf; drop those rows or impute the target before fit.")
    return y
