"""Feature and target encoding for the estimator.

Column types, categories and numeric scaling are the core's (:class:`tabzoo.estimators.TabularPreprocessor`:
one type inference, one scaler). MultiTab asks it for z-scores (``scaling="standard"``: mean and
standard deviation; the robust median/IQR default cost MultiTab-Net 0.035-0.047 explained variance
on AER CPS1985's log wage, two seeds) soft-clipped at 10 standard deviations (its former hard
clip, which rarely binds).
What is MultiTab's own is the split into per-feature tokens: numeric columns become one float
input each (a missing value stays ``NaN``, which the embedding turns into a learned missing
token), categorical and boolean columns become integer codes ``1..K``, with code 0 reserved for a
value missing or unseen in training.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.preprocessing import BOOLEAN, NUMERIC, TabularPreprocessor
from tabzoo.estimators.scaling import finite_mean_std
from tabzoo.table.task_types import infer_task_type

from tabzoo_multitab.config import TaskSpec

__all__ = ["FeatureEncoder", "TargetEncoder"]


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or (hasattr(v, "__class__") and v.__class__.__name__ in ("NAType", "NaTType"))


class FeatureEncoder:
    """Fit on training rows; ``transform(X) -> (x_num [N, F_num] float32, x_cat [N, F_cat] int64 | None)``.

    :param clip: the core preprocessor's soft-clipping threshold, in standard deviations.
    :param scaling: the core preprocessor's scaling of numeric columns (``"standard"`` or ``"robust"``).
    """

    def __init__(self, clip: float = 10.0, scaling: str = "standard") -> None:
        self.pre = TabularPreprocessor(clip=clip, scaling=scaling)

    def fit(self, X: Any) -> FeatureEncoder:
        self.pre.fit(X)
        kinds = self.pre.kinds
        self.numeric = [j for j, k in enumerate(kinds) if k == NUMERIC]
        self.coded = [j for j, k in enumerate(kinds) if k != NUMERIC]
        return self

    @property
    def n_num(self) -> int:
        return len(self.numeric)

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Codes per categorical (or boolean) column, in token order (code 0 not counted)."""
        cols = self.pre.columns
        return tuple(2 if cols[j].kind == BOOLEAN else max(1, len(cols[j].categories)) for j in self.coded)

    def transform(self, X: Any) -> tuple[np.ndarray, np.ndarray | None]:
        enc = self.pre.encode(X)  # [N, F]: numbers (NaN missing), booleans 0/1, category index (-1 missing/unseen)
        if self.numeric:
            x_num = self.pre.standardize(enc, impute=False)[:, self.numeric]
        else:
            x_num = np.zeros((enc.shape[0], 0), np.float32)
        if not self.coded:
            return x_num, None
        codes = enc[:, self.coded]
        # category index k -> code k + 1, boolean 0/1 -> 1/2, missing (NaN, -1) or unseen (-1) -> 0
        return x_num, np.where(np.isnan(codes) | (codes < 0), 0, codes + 1).astype(np.int64)


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
