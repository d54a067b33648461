"""``run_demo``: TabFlex next to its baselines on real bundled data (the ``tabzoo demo`` contract).

Data sets: scikit-learn's breast_cancer and wine, and Palmer penguins' species (the offline
``palmerpenguins`` package; skipped with a warning when it is not installed); ``quick=False`` adds
iris and digits. Each is split once (stratified, seeded); TabFlex (the shipped checkpoint, no
network, no training), LogisticRegression and HistGradientBoosting are fitted and scored on the
SAME split. Needs scikit-learn (``pip install 'tabzoo-tabflex[sklearn]'``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["run_demo", "load_penguins_species"]

logger = logging.getLogger(__name__)


def load_penguins_species() -> tuple[np.ndarray, np.ndarray] | None:
    """Penguin species (3 classes) from bill, flipper, mass, island and sex; rows with a missing
    value dropped (333 rows). ``None`` when ``palmerpenguins`` is not installed."""
    try:
        from palmerpenguins import load_penguins
    except ImportError:
        logger.warning("palmerpenguins is not installed: the penguins data set is skipped.")
        return None
    df = load_penguins().dropna().reset_index(drop=True)
    num = df[["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]].to_numpy(float)
    island = df["island"].astype("category").cat.codes.to_numpy(float)[:, None]
    sex = (df["sex"] == "male").to_numpy(float)[:, None]
    return np.hstack([num, island, sex]), df["species"].astype(str).to_numpy()


def _datasets(quick: bool) -> dict[str, Callable[[], Any]]:
    from sklearn import datasets

    out: dict[str, Callable[[], Any]] = {
        "breast_cancer": lambda: datasets.load_breast_cancer(return_X_y=True),
        "wine": lambda: datasets.load_wine(return_X_y=True),
        "penguins (species)": load_penguins_species,
    }
    if not quick:
        out["iris"] = lambda: datasets.load_iris(return_X_y=True)
        out["digits"] = lambda: datasets.load_digits(return_X_y=True)
    return out


def run_demo(*, seed: int = 0, quick: bool = True) -> list[dict[str, Any]]:
    """Accuracy of TabFlex, LogisticRegression and HistGradientBoosting on the same splits.

    :param seed: split and model seed.
    :param quick: three data sets and a 2-member ensemble (well under a minute on 2 cores);
        else five data sets and 4 members.
    :return: one dict per (dataset, model): ``dataset``, ``task``, ``model``, ``metric``, ``value``,
        ``fit_predict_s``, ``baseline``.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from tabzoo_tabflex.estimators import TabFlexClassifier

    models: dict[str, tuple[bool, Callable[[], Any]]] = {
        "tabflex": (False, lambda: TabFlexClassifier(n_estimators=2 if quick else 4, device="cpu", random_state=seed)),
        "LogisticRegression": (True, lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))),
        "HistGradientBoosting": (True, lambda: HistGradientBoostingClassifier(random_state=seed)),
    }
    rows: list[dict[str, Any]] = []
    for name, load in _datasets(quick).items():
        data = load()
        if data is None:
            continue
        X, y = data
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
        for model_name, (baseline, make) in models.items():
            start = time.perf_counter()
            pred = make().fit(Xtr, ytr).predict(Xte)
            rows.append({
                "dataset": name, "task": "classification", "model": model_name, "metric": "accuracy",
                "value": float(accuracy_score(yte, pred)), "fit_predict_s": round(time.perf_counter() - start, 3),
                "baseline": baseline,
            })
    return rows
