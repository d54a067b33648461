"""Categorical encodings and class balance for in-context estimators (any plugin can opt in).

**One-hot expansion** (:class:`OneHotExpander`). :class:`~tabzoo.estimators.TabularPreprocessor`
encodes a categorical column as one ordinal code per level, and the member views shuffle the codes
per member. For a model that reads every feature as a magnitude, an ordinal code makes a level's
effect depend on arbitrary neighbours: a 14-level column whose levels matter one by one is then hard
to read. The expander replaces such columns by one 0/1 indicator column per level (a missing or
unseen value is all zeros), as long as the table stays within the model's feature width:

* ``categorical_encoding="ordinal"``: nothing is expanded (the behaviour before this option);
* ``"onehot"``: every categorical column with ``3 <= levels <= max_levels`` is expanded, fewest
  levels first, while the width stays ``<= max_width`` (the model's ``max_features``); the other
  categorical columns stay ordinal. A table already wider than the model expands nothing.

Two-level columns are never expanded: their code already is an indicator.

**Class balance** (:func:`class_balance`). With a rare class, the context shows a few of its rows
among many others. A model whose context is a weighted sum (linear attention) can weight the rows
instead: class ``c`` with ``n_c`` rows gets weight ``(n_max / n_c) ** strength`` per row, and the
prior the weighted context implies is undone on the output, ``log p(c|x) += log pi_c - log pi'_c``
(``pi`` the class shares of the context, ``pi'`` the weighted shares), so probabilities keep the
context's class frequencies while the rare classes' rows count for more in the model's reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tabzoo.errors import TabzooInputError

__all__ = ["ENCODINGS", "OneHotExpander", "check_encoding", "class_balance", "plan_onehot"]

ENCODINGS = ("ordinal", "onehot")


def check_encoding(encoding: Any) -> str:
    """Validate a ``categorical_encoding`` parameter."""
    if encoding not in ENCODINGS:
        raise TabzooInputError(
            f"categorical_encoding={encoding!r} is not valid; pass 'onehot' (indicator columns for categorical "
            "columns while the model's feature width allows) or 'ordinal' (one shuffled code per level)."
        )
    return str(encoding)


def plan_onehot(levels: dict[int, int], n_features: int, max_width: int | None,
                max_levels: int = 64) -> list[int]:
    """Which categorical columns to expand.

    :param levels: column index -> number of real levels (missing excluded).
    :param n_features: width of the table before expansion.
    :param max_width: the widest table the model reads (``None``: no limit).
    :param max_levels: columns with more levels stay ordinal.
    :returns: the sorted column indices to expand (fewest levels first while the width allows).
    """
    width = int(n_features)
    chosen = []
    for j, m in sorted(levels.items(), key=lambda kv: (kv[1], kv[0])):
        if m < 3 or m > max_levels:
            continue
        if max_width is not None and width + m - 1 > max_width:
            break
        width += m - 1
        chosen.append(int(j))
    return sorted(chosen)


class OneHotExpander:
    """Replace chosen categorical columns of preprocessed rows by indicator columns.

    :param columns: indices of the columns to expand (in the preprocessed table).
    :param code_values: per expanded column, the float32 values its codes ``-1, 0, .., m-1`` take after
        preprocessing (:func:`tabzoo.estimators.members.category_tables`); code ``-1`` (missing/unseen)
        maps to all zeros.
    :param n_features: width of the preprocessed table.

    Output columns keep the input order; an expanded column is replaced in place by its ``m``
    indicators. ``source_`` maps every output column to its input column and ``indicator_`` marks the
    indicators.
    """

    def __init__(self, columns: Sequence[int], code_values: dict[int, np.ndarray], n_features: int) -> None:
        self.columns = tuple(int(c) for c in columns)
        self.code_values = {int(k): np.asarray(v, dtype=np.float32) for k, v in code_values.items()}
        self.n_features = int(n_features)
        missing = [c for c in self.columns if c not in self.code_values or not 0 <= c < self.n_features]
        if missing:
            raise TabzooInputError(f"OneHotExpander: columns {missing} have no code table or are out of range.")
        source, indicator = [], []
        for j in range(self.n_features):
            if j in self.code_values and j in self.columns:
                m = self.code_values[j].size - 1
                source += [j] * m
                indicator += [True] * m
            else:
                source.append(j)
                indicator.append(False)
        self.source_ = np.asarray(source, dtype=np.int64)
        self.indicator_ = np.asarray(indicator, dtype=bool)

    @property
    def n_out(self) -> int:
        return int(self.source_.size)

    def codes(self, j: int, col: np.ndarray) -> np.ndarray:
        """Integer codes ``-1..m-1`` of preprocessed values ``col`` of column ``j`` (nearest value)."""
        vals = self.code_values[j]
        order = np.argsort(vals, kind="stable")
        sv = vals[order]
        idx = np.clip(np.searchsorted(sv, col), 0, sv.size - 1)
        lower = np.clip(idx - 1, 0, sv.size - 1)
        idx = np.where(np.abs(sv[lower] - col) < np.abs(sv[idx] - col), lower, idx)
        return order[idx].astype(np.int64) - 1

    def transform(self, x: np.ndarray) -> np.ndarray:
        """``[n, n_features]`` preprocessed rows -> ``float32 [n, n_out]``."""
        x = np.asarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise TabzooInputError(f"OneHotExpander expects rows [n, {self.n_features}], got {x.shape}.")
        parts = []
        for j in range(self.n_features):
            if j in self.columns:
                m = self.code_values[j].size - 1
                code = self.codes(j, x[:, j])
                parts.append((code[:, None] == np.arange(m)[None, :]).astype(np.float32))
            else:
                parts.append(x[:, j:j + 1])
        return np.ascontiguousarray(np.concatenate(parts, axis=1) if parts else x, dtype=np.float32)

    def state_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "n_features": self.n_features,
                "code_values": {str(k): v.astype(np.float64).tolist() for k, v in self.code_values.items()}}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> OneHotExpander:
        return cls(state["columns"], {int(k): np.asarray(v) for k, v in state["code_values"].items()},
                   int(state["n_features"]))


def class_balance(y: np.ndarray, k: int, strength: float) -> tuple[np.ndarray, np.ndarray]:
    """Context row weights that lift rare classes, and the log-prior correction that undoes them.

    :param y: ``[n]`` class indices ``0..k-1`` of the context rows.
    :param k: number of classes.
    :param strength: 0 = no reweighting; 1 = every present class weighs as much as the largest.
    :returns: ``(weights [n] float32, correction [k] float64)``: weight of row ``j`` is
        ``(n_max / n_{y_j}) ** strength``; add ``correction[c] = log pi_c - log pi'_c`` to the log-probabilities.
        A class absent from the context gets correction 0.
    """
    y = np.asarray(y, dtype=np.int64)
    if not np.isfinite(strength) or strength < 0:
        raise TabzooInputError(f"class balance strength must be a finite number >= 0, got {strength!r}.")
    counts = np.bincount(y, minlength=k).astype(np.float64)[:k]
    present = counts > 0
    w_class = np.ones(k)
    if present.any():
        w_class[present] = (counts[present].max() / counts[present]) ** float(strength)
    weights = w_class[y].astype(np.float32)
    corr = np.zeros(k)
    if present.any():
        pi = counts[present] / counts[present].sum()
        mass = counts[present] * w_class[present]
        corr[present] = np.log(pi) - np.log(mass / mass.sum())
    return weights, corr
