"""Table -> NPT cells: standardised numbers and class indices, with NaN for missing cells.

Column types and categories come from :class:`tabzoo.estimators.TabularPreprocessor` fitted on
the training rows. Unlike the in-context estimators NPT does NOT impute: a missing value (NaN,
None, an unseen category) stays NaN and becomes a masked cell (appendix C.4.1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tabzoo.estimators.preprocessing import (
    BOOLEAN,
    CATEGORICAL,
    MISSING_CODE,
    TabularPreprocessor,
)

__all__ = ["TableEncoder", "inverse_soft_clip"]


def inverse_soft_clip(z: np.ndarray, clip: float) -> np.ndarray:
    """Inverse of :func:`tabzoo.estimators.preprocessing.soft_clip`."""
    a = np.abs(z)
    return np.where(a <= clip, z, np.sign(z) * (clip + np.expm1(np.maximum(a - clip, 0.0))))


class TableEncoder:
    """Fit on training rows; ``transform`` gives ``float32 [rows, d]`` cells (NaN = missing).

    :ivar cardinalities: per column, 0 (numeric) or the class count (categorical, boolean).
    """

    def __init__(self, clip: float = 4.0) -> None:
        self.pre = TabularPreprocessor(clip=clip)
        self.cardinalities: tuple[int, ...] = ()

    def fit(self, X: Any) -> TableEncoder:
        self.pre.fit(X)
        cards = []
        for col in self.pre.columns:
            if col.kind == BOOLEAN:
                cards.append(2)
            elif col.kind == CATEGORICAL:
                cards.append(max(2, len(col.categories)))
            else:
                cards.append(0)
        self.cardinalities = tuple(cards)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Rows in model space: ``float32 [rows, features]``.

        Numeric columns through the core's one scaler (:meth:`TabularPreprocessor.standardize`, its
        pre-scaling of huge columns included, no imputation: a missing number stays ``NaN``); a
        categorical column as its category index (``NaN`` = missing or unseen). Column count and
        ``inf`` are checked by :meth:`TabularPreprocessor.encode`.
        """
        enc = self.pre.encode(X)
        z = self.pre.standardize(enc, impute=False)
        cat = np.asarray([card > 0 for card in self.cardinalities], dtype=bool)
        codes = np.where(enc == MISSING_CODE, np.nan, enc)
        return np.where(cat[None, :], codes, z).astype(np.float32)

    def inverse_numeric(self, j: int, z: np.ndarray) -> np.ndarray:
        """Model-space values of numeric column ``j`` back to the data's units (undoes the scaler and
        the pre-scaling of huge columns)."""
        pre = self.pre
        return (inverse_soft_clip(np.asarray(z, dtype=np.float64), pre.clip) * pre.scale[j] + pre.center[j]) * pre.prescale[j]

    def category(self, j: int, code: np.ndarray) -> np.ndarray:
        """Class indices of column ``j`` back to its categories (booleans as 0.0/1.0)."""
        col = self.pre.columns[j]
        if col.kind == BOOLEAN:
            return code.astype(np.float64)
        cats = np.asarray(list(col.categories) + [col.categories[-1]] * 2, dtype=object)
        return cats[code]

    @property
    def numeric_only(self) -> bool:
        return all(c.kind not in (CATEGORICAL,) for c in self.pre.columns)

    def state_dict(self) -> dict[str, Any]:
        return {"pre": self.pre.state_dict(), "cardinalities": list(self.cardinalities)}
