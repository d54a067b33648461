"""Per-task metrics and the multitask gain Δm (papers/001 eq. 5).

Classification tasks use ROC AUC (binary; multiclass: macro one-vs-rest), regression tasks
explained variance (EV), as in the paper; both are "higher is better". Lower-is-better metrics
(``mse``, ``mae``) are available and carry their direction into Δm. ROC-AUC and EV themselves are
the core's (:mod:`tabzoo.metrics`), re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tabzoo.errors import TabzooInputError
from tabzoo.metrics import explained_variance, roc_auc

__all__ = ["roc_auc", "explained_variance", "task_metric", "delta_m", "LOWER_IS_BETTER", "default_metric"]

#: metric name -> True when a lower value is better (``l_i = 1`` in eq. 5)
LOWER_IS_BETTER = {"auc": False, "ev": False, "accuracy": False, "mse": True, "mae": True}


def default_metric(kind: str) -> str:
    return "ev" if kind == "regression" else "auc"


def task_metric(kind: str, y_true: np.ndarray, output: np.ndarray, metric: str | None = None) -> float:
    """One task's metric.

    :param kind: ``binary`` (``output [N]`` or ``[N, 1]`` logits/scores), ``multiclass``
        (``output [N, C]`` logits, ``y_true`` class indices; AUC on their softmax) or ``regression`` (``output [N]`` predictions).
    :param metric: ``auc``, ``accuracy`` (classification), ``ev``, ``mse``, ``mae`` (regression); default per kind.
    """
    metric = metric or default_metric(kind)
    y, out = np.asarray(y_true), np.asarray(output, dtype=np.float64)
    if kind == "regression":
        p = out.reshape(len(y), -1)[:, 0]
        if metric == "ev":
            return explained_variance(y, p)
        if metric == "mse":
            return float(np.mean((y - p) ** 2))
        if metric == "mae":
            return float(np.mean(np.abs(y - p)))
    else:
        out = out.reshape(len(y), -1)
        yi = y.astype(np.int64)
        if metric == "accuracy":
            pred = (out[:, 0] > 0).astype(np.int64) if kind == "binary" else out.argmax(1)
            return float(np.mean(pred == yi))
        if metric == "auc":
            if kind == "binary":
                return roc_auc(yi == 1, out[:, 0])
            z = out - out.max(1, keepdims=True)  # one-vs-rest on probabilities, not raw logits
            proba = np.exp(z) / np.exp(z).sum(1, keepdims=True)
            aucs = [roc_auc(yi == c, proba[:, c]) for c in range(out.shape[1])]
            aucs = [a for a in aucs if a == a]
            return float(np.mean(aucs)) if aucs else float("nan")
    raise TabzooInputError(f"metric {metric!r} does not apply to a {kind} task; use one of {sorted(LOWER_IS_BETTER)}.")


def delta_m(model: Sequence[float], baseline: Sequence[float], lower_is_better: Sequence[bool] | None = None,
            *, percent: bool = True) -> float:
    """Multitask gain (eq. 5): ``(1/T) sum_i (-1)^{l_i} (M_m,i - M_b,i) / M_b,i``.

    :param model: per-task metrics of the method.
    :param baseline: per-task metrics of the single-task baseline (same order).
    :param lower_is_better: ``l_i`` per task (default: all higher-is-better).
    :param percent: multiply by 100, as the paper reports it (e.g. Higgs Δm = 1.23).
    """
    m, b = np.asarray(model, np.float64), np.asarray(baseline, np.float64)
    if m.shape != b.shape or m.ndim != 1 or m.size == 0:
        raise TabzooInputError(f"model and baseline need one metric per task each, got {m.shape} and {b.shape}.")
    if np.any(b == 0) or not np.all(np.isfinite(b)) or not np.all(np.isfinite(m)):
        raise TabzooInputError("baseline metrics must be finite and non-zero (Δm divides by them).")
    lower = np.zeros(m.size, bool) if lower_is_better is None else np.asarray(lower_is_better, bool)
    if lower.shape != m.shape:
        raise TabzooInputError(f"lower_is_better needs one flag per task ({m.size}), got {lower.shape}.")
    sign = np.where(lower, -1.0, 1.0)
    return float(np.mean(sign * (m - b) / np.abs(b)) * (100.0 if percent else 1.0))
