"""A classifier's ``tabzoo demo`` rows, shared by every in-context plugin and the default demo.

Data sets: scikit-learn's breast_cancer and wine, and Palmer penguins' species (the offline
``palmerpenguins`` package, in ``tabzoo-core[demo]``; skipped with a warning when it is not
installed); ``quick=False`` adds iris and digits. Each data set is split once (70/30, stratified,
seeded), and the model, LogisticRegression (scaled) and HistGradientBoosting are fitted and scored
on the SAME split. Needs scikit-learn (``tabzoo-core[sklearn]``). No network.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["CLASSIFICATION_SETS", "classification_demo", "load_penguins_species"]

logger = logging.getLogger(__name__)

#: the data sets of :func:`classification_demo`; ``quick=True`` runs the first three
CLASSIFICATION_SETS = ("breast_cancer", "wine", "penguins (species)", "iris", "digits")


def load_penguins_species() -> tuple[np.ndarray, np.ndarray] | None:
    """Penguin species (3 classes) from bill, flipper, mass, island and sex, rows with a gap dropped.

    :return: ``X [333, 6]`` float, ``y [333]`` species names; ``None`` without ``palmerpenguins``.
    """
    try:
        from palmerpenguins import load_penguins
    except ImportError:
        logger.warning("palmerpenguins is not installed (tabzoo-core[demo]): the penguins data set is skipped.")
        return None
    df = load_penguins().dropna().reset_index(drop=True)
    num = df[["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]].to_numpy(float)
    island = df["island"].astype("category").cat.codes.to_numpy(float)[:, None]
    sex = (df["sex"] == "male").to_numpy(float)[:, None]
    return np.hstack([num, island, sex]), df["species"].astype(str).to_numpy()


def _load(name: str) -> tuple[Any, Any] | None:
    from sklearn import datasets

    if name.startswith("penguins"):
        return load_penguins_species()
    loader: Callable[..., Any] = getattr(datasets, f"load_{name}")
    return loader(return_X_y=True)


def classification_demo(name: str, make_model: Callable[[], Any], *, seed: int = 0,
                        quick: bool = True) -> list[dict[str, Any]]:
    """Accuracy of ``make_model()`` beside LogisticRegression and HistGradientBoosting.

    :param name: the model's name in the rows (a plugin's architecture name).
    :param make_model: builds a fresh scikit-learn classifier (called once per data set).
    :param seed: split and baseline seed.
    :param quick: three data sets, else all of :data:`CLASSIFICATION_SETS`.
    :return: one dict per (data set, model) with ``dataset``, ``task``, ``model``, ``metric``,
        ``value``, ``fit_predict_s`` and ``baseline`` (the demo contract).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    models: dict[str, tuple[bool, Callable[[], Any]]] = {
        name: (False, make_model),
        "LogisticRegression": (True, lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))),
        "HistGradientBoosting": (True, lambda: HistGradientBoostingClassifier(random_state=seed)),
    }
    rows: list[dict[str, Any]] = []
    for ds in CLASSIFICATION_SETS[:3] if quick else CLASSIFICATION_SETS:
        data = _load(ds)
        if data is None:
            continue
        X, y = data
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
        for model_name, (baseline, make) in models.items():
            start = time.perf_counter()
            pred = make().fit(Xtr, ytr).predict(Xte)
            rows.append({
                "dataset": ds, "task": "classification", "model": model_name, "metric": "accuracy",
                "value": float(accuracy_score(yte, pred)), "fit_predict_s": round(time.perf_counter() - start, 3),
                "baseline": baseline,
            })
    return rows
