"""One batch of rows through a fitted estimator: ``prediction`` and one ``proba_<class>`` column per class.

The same columns as ``tabzoo predict`` has always written (and :mod:`tabzoo.batch.dask` /
:mod:`tabzoo.batch.ray` write): ``prediction``, then for classifiers ``proba_<class>`` in the
order of ``classes_``, or ``proba_<task>_<class>`` per task for a multi-output estimator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tabzoo.errors import TabzooInputError

__all__ = ["proba_columns", "score_frame"]


def proba_columns(est: Any, proba: Any) -> dict[str, np.ndarray]:
    """One named column per class (``proba_<class>``), and per task for a multi-output estimator
    (``proba_<task>_<class>``; sklearn's multi-output convention: ``predict_proba`` a list of
    ``[n, C_t]`` arrays, one per classification task; ``classes_`` a list of class arrays with
    ``None`` for a regression task, which gets no column)."""
    probas = [p for p in proba if p is not None] if isinstance(proba, (list, tuple)) else [proba]
    classes = est.classes_
    tasks = [getattr(t, "name", str(i)) for i, t in enumerate(getattr(est, "tasks_", range(len(classes))))]
    if isinstance(classes, (list, tuple)) and all(c is None or np.ndim(c) == 1 for c in classes):
        # a regression task of a mixed multi-output estimator has no classes and no probabilities
        tasks = [t for t, c in zip(tasks, classes, strict=False) if c is not None]
        sets = [c for c in classes if c is not None]
    else:
        sets = [classes]
    if len(sets) != len(probas):
        raise TabzooInputError(f"{type(est).__name__}.predict_proba gave {len(probas)} arrays for {len(sets)} class "
                               "sets in classes_; the estimator breaks sklearn's multi-output convention.")
    out: dict[str, np.ndarray] = {}
    for task, p, cls in zip(tasks, probas, sets, strict=False):
        p = np.asarray(p)
        if p.ndim != 2 or p.shape[1] != len(cls):
            raise TabzooInputError(f"{type(est).__name__}.predict_proba gave shape {p.shape} for {len(cls)} classes "
                                   f"{list(cls)[:8]}; expected [n, {len(cls)}].")
        prefix = "proba_" if len(probas) == 1 else f"proba_{task}_"
        for j, c in enumerate(cls):
            out[f"{prefix}{c}"] = p[:, j]
    return out


def score_frame(est: Any, X: Any, keep: Any = None, keep_names: Sequence[str] = ()) -> Any:
    """A pandas DataFrame: ``keep_names`` columns of ``keep`` (a DataFrame of the same rows), then
    ``prediction`` and the ``proba_*`` columns of ``X [n, features]`` from ONE model pass
    (:func:`tabzoo.estimators.joint.predict_with_proba`)."""
    import pandas as pd

    from tabzoo.estimators.joint import predict_with_proba

    labels, proba = predict_with_proba(est, X)
    cols: dict[str, Any] = {name: np.asarray(keep[name]) for name in keep_names}
    if "prediction" in cols:
        raise TabzooInputError("a kept column is named 'prediction', which the output adds; rename it or keep it out.")
    cols["prediction"] = labels
    if proba is not None:
        cols.update(proba_columns(est, proba))
    return pd.DataFrame(cols)
