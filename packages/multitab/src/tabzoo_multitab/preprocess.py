"""Feature and target encoding for the estimator: numeric columns z-scored (NaN kept = missing),
categorical columns coded ``1..K`` in training, with code 0 reserved for unseen or missing values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.scaling import finite_mean_std
from tabzoo.table.task_types import infer_task_type

from tabzoo_multitab.config import TaskSpec

__all__ = ["FeatureEncoder", "TargetEncoder"]


def _is_df(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "iloc") and hasattr(X, "dtypes")


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or (hasattr(v, "__class__") and v.__class__.__name__ in ("NAType", "NaTType"))


def _columns(X: Any) -> list[np.ndarray]:
    if _is_df(X):
        cols = []
        for j in range(X.shape[1]):
            s = X.iloc[:, j]
            kind = getattr(s.dtype, "kind", "O")
            if kind in "fiu" and str(s.dtype) != "category":
                cols.append(s.to_numpy(dtype=np.float64, na_value=np.nan))
            else:
                cols.append(np.asarray(s.astype(object), dtype=object))
        return cols
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise TabzooInputError(f"X must be a 2-d table [rows, features], got shape {arr.shape}; reshape it.")
    return [arr[:, j] for j in range(arr.shape[1])]


def _as_numeric(col: np.ndarray) -> np.ndarray | None:
    if col.dtype.kind in "fiu":
        return col.astype(np.float64)
    if col.dtype.kind == "b":
        return None
    try:
        return np.array([np.nan if _missing(v) else float(v) for v in col], dtype=np.float64)
    except (TypeError, ValueError):
        return None


def _check_hashable(col: np.ndarray) -> None:
    for v in col:
        if not (_missing(v) or isinstance(v, (str, bytes, int, float, bool, np.generic))):
            raise TabzooInputError(
                f"a categorical value has type {type(v).__name__}: argument must be a string or a number; "
                "encode such cells as strings or numbers."
            )


class FeatureEncoder:
    """Fit on training rows; ``transform(X) -> (x_num [N, F_num] float32, x_cat [N, F_cat] int64)``."""

    def fit(self, X: Any) -> FeatureEncoder:
        cols = _columns(X)
        self.kinds: list[str] = []
        self.stats: list[tuple[float, float]] = []
        self.categories: list[dict[Any, int]] = []
        for col in cols:
            num = _as_numeric(col)
            if num is not None:
                if np.isinf(num).any():
                    raise TabzooInputError("X contains infinity; replace it by NaN (missing) or a finite value.")
                self.kinds.append("num")
                self.stats.append(finite_mean_std(num))  # no overflow for values near 1e308
            else:
                _check_hashable(col)
                seen = sorted({v for v in col if not _missing(v)}, key=lambda v: (type(v).__name__, str(v)))
                self.kinds.append("cat")
                self.categories.append({v: i + 1 for i, v in enumerate(seen)})
        self.n_columns = len(cols)
        return self

    @property
    def n_num(self) -> int:
        return self.kinds.count("num")

    @property
    def cardinalities(self) -> tuple[int, ...]:
        return tuple(max(1, len(c)) for c in self.categories)

    def transform(self, X: Any) -> tuple[np.ndarray, np.ndarray | None]:
        cols = _columns(X)
        if len(cols) != self.n_columns:
            raise TabzooInputError(f"X has {len(cols)} columns, fit saw {self.n_columns}; pass the same columns.")
        nums, cats = [], []
        si = ci = 0
        for col, kind in zip(cols, self.kinds, strict=True):
            if kind == "num":
                num = _as_numeric(col)
                if num is None:
                    raise TabzooInputError("a numeric column of fit now holds non-numbers; pass numbers (NaN = missing).")
                if np.isinf(num).any():
                    raise TabzooInputError("X contains infinity; replace it by NaN (missing) or a finite value.")
                mu, sd = self.stats[si]
                with np.errstate(over="ignore", invalid="ignore"):
                    nums.append(np.clip((num - mu) / sd, -10, 10))
                si += 1
            else:
                lookup = self.categories[ci]
                _check_hashable(col)
                cats.append(np.array([0 if _missing(v) else lookup.get(v, 0) for v in col], dtype=np.int64))
                ci += 1
        n = len(cols[0]) if cols else 0
        x_num = np.stack(nums, 1).astype(np.float32) if nums else np.zeros((n, 0), np.float32)
        x_cat = np.stack(cats, 1) if cats else None
        return x_num, x_cat


class TargetEncoder:
    """Multi-output targets ``Y [N, t]`` -> task specs and a float ``[N, t]`` training matrix."""

    def fit(self, Y: np.ndarray, names: Sequence[str], task_types: Sequence[str] | None) -> TargetEncoder:
        if task_types is not None and len(task_types) != Y.shape[1]:
            raise TabzooInputError(f"task_types has {len(task_types)} entries but y has {Y.shape[1]} targets; give one per target.")
        self.tasks: list[TaskSpec] = []
        self.classes: list[np.ndarray | None] = []
        self.stats: list[tuple[float, float]] = []
        for j in range(Y.shape[1]):
            col = Y[:, j]
            kind = task_types[j] if task_types is not None else None
            if kind is None or kind == "auto":
                kind = infer_task_type(col, names[j])  # the core's one rule (tabzoo.table.task_types)
            if kind == "regression":
                v = self._float(col, names[j])
                self.tasks.append(TaskSpec(names[j], "regression"))
                self.classes.append(None)
                self.stats.append(finite_mean_std(v))  # no overflow for targets near 1e308
                continue
            if kind not in ("classification", "binary", "multiclass"):
                raise TabzooInputError(f"task type {kind!r} of target {names[j]!r}: use 'auto', 'binary', 'multiclass', 'classification' or 'regression'.")
            if any(_missing(v) for v in col) or (col.dtype.kind == "f" and not np.isfinite(col).all()):
                raise TabzooInputError(f"target {names[j]!r} holds NaN/None; drop those rows or label them.")
            if col.dtype.kind == "f" and np.any(col != np.round(col)):
                raise TabzooInputError(f"target {names[j]!r} has continuous values; use task type 'regression' for it.")
            classes = np.unique(col)
            if len(classes) < 2:
                raise TabzooInputError(f"target {names[j]!r} has a single class {classes.tolist()}; a classifier needs >= 2 classes.")
            self.tasks.append(TaskSpec(names[j], "binary" if len(classes) == 2 else "multiclass", len(classes)))
            self.classes.append(classes)
            self.stats.append((0.0, 1.0))
        return self

    @staticmethod
    def _float(col: np.ndarray, name: str) -> np.ndarray:
        try:
            v = np.asarray(col, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TabzooInputError(f"regression target {name!r} must be numbers ({exc}).") from exc
        if not np.isfinite(v).all():
            raise TabzooInputError(f"target {name!r} holds NaN or inf; drop those rows or impute the target.")
        return v

    def transform(self, Y: np.ndarray) -> np.ndarray:
        out = np.empty(Y.shape, dtype=np.float32)
        for j, (t, cls, (mu, sd)) in enumerate(zip(self.tasks, self.classes, self.stats, strict=True)):
            if cls is None:
                with np.errstate(over="ignore"):
                    out[:, j] = np.clip((self._float(Y[:, j], t.name) - mu) / sd, -1e30, 1e30)
            else:
                idx = np.searchsorted(cls, Y[:, j])
                idx = np.clip(idx, 0, len(cls) - 1)
                if not np.all(cls[idx] == Y[:, j]):
                    raise TabzooInputError(f"target {t.name!r} holds labels unseen in fit; refit with them.")
                out[:, j] = idx
        return out
