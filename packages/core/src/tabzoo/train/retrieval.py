"""Choosing the retrieval context of an in-context estimator per table, on its own training rows.

A local context (each query row read from the training rows nearest to it: the context of its nearest
cluster, :mod:`tabzoo.estimators.local`) helps exactly where trees win and hurts elsewhere (issue 28:
churn +0.05, performance-class +0.03 ROC-AUC; -0.08, -0.04, -0.03 on three other tables), so it cannot
be on for every table. With ``context_strategy="select"`` the estimator decides per table, after any
fine-tuning, on the same inner split of the training rows as fine-tuning (:mod:`tabzoo.train.finetune`):

* the inner validation rows are predicted from the inner training rows only: by the global context,
  and by local contexts clustered from the inner training rows at ``rows // d`` rows per cluster for
  each ``d`` of :data:`DIVISORS`, mixed with the global context as a weighted geometric mean of the
  probabilities with each weight of :data:`WEIGHTS` (1 = local only);
* the candidate with the lowest validation loss (log-loss; regressors: squared error) is kept only when
  it beats the global context by more than :data:`MIN_GAIN` of the global loss; otherwise the global
  context (the safe default). The chosen cluster size is the same fraction ``1 / d`` of all the training
  rows at prediction time.

No row outside the training set is read, and nothing depends on the order of the training rows (the split
and the clusters are order-free), so the prediction of a query row depends only on the training set and
that row. ``retrieval_`` records the losses and the choice; ``save`` / ``load`` keep it.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from tabzoo.estimators.local import fit_local_contexts

__all__ = ["DIVISORS", "MIN_CLUSTER_ROWS", "MIN_GAIN", "MIN_ROWS", "WEIGHTS", "select_context"]

logger = logging.getLogger("tabzoo.train")

#: cluster sizes tried: ``rows // d`` training rows per cluster (the context of each is 1.5 times that)
DIVISORS = (4, 8)
#: weights of the local contexts' log-probabilities tried (the rest is the global context's)
WEIGHTS = (0.5, 1.0)
#: a local mix must lower the inner validation loss by more than this share of the global context's loss
MIN_GAIN = 0.01
#: fewer training rows: the global context, no selection
MIN_ROWS = 256
#: smallest cluster tried
MIN_CLUSTER_ROWS = 64


def _global(reason: str, **losses: Any) -> dict[str, Any]:
    return {"strategy": "global", "local_weight": 0.0, "local_size": None, "divisor": None, "reason": reason} | losses


def select_context(est: Any, train_rows: np.ndarray | None, val_rows: np.ndarray | None) -> dict[str, Any]:
    """The context choice of a fitted estimator (see the module doc); leaves ``est.local_`` unset.

    :param est: an in-context estimator on the core's prediction path with ``_fine_tune_loss(context, rows)``.
    :param train_rows: positions of the inner training rows in the context (None: too few rows for a split).
    :param val_rows: positions of the inner validation rows.
    """
    n = int(est.X_context_.shape[0])
    if train_rows is None or val_rows is None or val_rows.size == 0 or n < MIN_ROWS:
        return _global(f"{n} training rows: too few to choose on an inner split (needs {MIN_ROWS})")
    k = int(getattr(est, "n_classes_", 0) or 0)
    limit = est._model_limit("max_classes")
    if k == 1:
        return _global("one class")
    if k and limit is not None and k > limit:
        return _global(f"{k} classes: beyond the head, the class tree / codes read the global context")
    train = np.sort(np.asarray(train_rows, dtype=np.int64))
    val = np.asarray(val_rows, dtype=np.int64)
    seed = int(est.members_[0].seed)
    labels = np.asarray(est.y_context_, dtype=np.float64)
    cache = getattr(est, "context_cache_", None)
    est.context_cache_, est.cache_all_ = {}, True  # each context state once across the candidates
    candidates: list[dict[str, Any]] = []
    try:
        est.local_, est.retrieval_ = None, _global("choosing")
        base = est._fine_tune_loss(train, val)
        for d in DIVISORS:
            size = train.size // d
            if size < MIN_CLUSTER_ROWS:
                continue
            est.local_ = fit_local_contexts(est.X_context_, size, seed=seed, labels=labels, subset=train)
            for w in WEIGHTS:
                est.retrieval_ = {"local_weight": float(w), "local_size": int(size)}
                candidates.append({"divisor": d, "local_weight": float(w), "loss": float(est._fine_tune_loss(train, val))})
    finally:
        est.local_, est.retrieval_ = None, None
        est.context_cache_ = {} if cache is not None else None
        est.cache_all_ = False
    record = {"global_loss": float(base), "candidates": candidates, "train_rows": int(train.size),
              "validation_rows": int(val.size)}
    best = min(candidates, key=lambda c: c["loss"], default=None)
    if best is None or not best["loss"] < base * (1 - MIN_GAIN):
        return _global("no local mix beat the global context by more than "
                       f"{MIN_GAIN:.0%} on the inner validation split", **record)
    chosen = {"strategy": "local" if best["local_weight"] >= 1 else "local+global", "local_weight": best["local_weight"],
              "local_size": max(MIN_CLUSTER_ROWS, n // best["divisor"]), "divisor": best["divisor"],
              "reason": f"inner validation loss {best['loss']:.4f} against {base:.4f} for the global context"}
    logger.info("%s: retrieval context %s", type(est).__name__, chosen)
    return chosen | record
