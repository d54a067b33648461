"""Metrics shared by the plugins (numpy in, float out; "higher is better" unless named a loss).

* :func:`rankdata`: average ranks (ties share their mean rank), as ``scipy.stats.rankdata``.
* :func:`roc_auc`: binary ROC-AUC by the Mann-Whitney rank formula with tie correction; NaN
  when one class is absent.
* :func:`r2_score`: coefficient of determination ``1 - SS_res / SS_tot``; NaN for a constant target.
* :func:`explained_variance`: ``1 - Var(y - ŷ) / Var(y)``; NaN for a constant target.

The early-stopping plumbing around a validation loss (eval mode, best-state restore, patience)
is :func:`tabzoo.train.fit.fit`; each model's validation loss is its own training objective.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rankdata", "roc_auc", "r2_score", "explained_variance"]


def rankdata(a: np.ndarray) -> np.ndarray:
    """Average ranks ``[n]`` (1-based, float64) of ``a [n]``; ties share their mean rank."""
    a = np.asarray(a)
    order = np.argsort(a, kind="stable")
    s = a[order]
    ranks = np.empty(len(a), dtype=np.float64)
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def roc_auc(y_true: np.ndarray, score: np.ndarray) -> float:
    """Binary ROC-AUC of ``score [n]`` for the boolean labels ``y_true [n]`` (ties count half);
    NaN when only one class is present."""
    y = np.asarray(y_true).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    r = rankdata(np.asarray(score, dtype=np.float64))
    return float((r[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def r2_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Coefficient of determination of ``y_pred [n]``; NaN when ``y_true [n]`` is constant."""
    y, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    ss = float(((y - y.mean()) ** 2).sum())
    return float("nan") if ss == 0 else 1.0 - float(((y - p) ** 2).sum()) / ss


def explained_variance(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """``1 - Var(y - ŷ) / Var(y)`` (blind to a constant offset); NaN when ``y_true`` is constant."""
    y, p = np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64)
    var = y.var()
    return float(1.0 - (y - p).var() / var) if var > 0 else float("nan")
