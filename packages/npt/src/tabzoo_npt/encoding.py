"""Table -> NPT cells: standardised numbers and class indices, with NaN for missing cells.

Column types and categories come from :class:`tabzoo.estimators.TabularPreprocessor` fitted on
the training rows. Unlike the in-context estimators NPT does NOT impute: a missing value (NaN,
None, an unseen category) stays NaN and becomes a masked cell (appendix C.4.1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.preprocessing import (
    BOOLEAN,
    CATEGORICAL,
    MISSING_CODE,
    TabularPreprocessor,
    soft_clip,
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
        cols, names, _ = self.pre._raw_columns(X)
        if len(cols) != len(self.pre.columns):
            raise TabzooInputError(
                f"X has {len(cols)} columns but the model was fitted on {len(self.pre.columns)}; pass the same columns."
            )
        enc = self.pre._encode(cols, names)
        out = np.empty(enc.shape, dtype=np.float64)
        for j, card in enumerate(self.cardinalities):
            col = enc[:, j]
            if card:
                out[:, j] = np.where(col == MISSING_CODE, np.nan, col)
            else:
                if np.isinf(col).any():
                    raise TabzooInputError(
                        f"column {names[j]!r} contains infinity; replace inf by NaN (missing) or a finite value."
                    )
                z = (col - self.pre.center[j]) / self.pre.scale[j]
                out[:, j] = soft_clip(z, self.pre.clip)
        return out.astype(np.float32)

    def inverse_numeric(self, j: int, z: np.ndarray) -> np.ndarray:
        """Model-space values of numeric column ``j`` back to the data's units."""
        return inverse_soft_clip(np.asarray(z, dtype=np.float64), self.pre.clip) * self.pre.scale[j] + self.pre.center[j]

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
