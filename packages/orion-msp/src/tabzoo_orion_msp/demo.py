"""``run_demo``: ORION-MSP next to its baselines on real bundled data (the ``tabzoo demo`` contract).

Data sets: scikit-learn's breast_cancer and wine, and Palmer penguins' species (the offline
``palmerpenguins`` package; skipped with a warning when it is not installed); ``quick=False`` adds
iris and digits. Each dataset is split once (stratified, seeded); ORION-MSP (the shipped checkpoint, no network),
LogisticRegression and HistGradientBoosting are fitted and scored on the SAME split. Needs
scikit-learn (``pip install 'tabzoo-orion-msp[sklearn]'``). ``quick=True`` keeps it under a minute on
2 CPU cores (three datasets, two ensemble members).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["run_demo", "DATASETS"]

DATASETS = ("breast_cancer", "wine", "penguins (species)", "iris", "digits")
QUICK = DATASETS[:3]

logger = logging.getLogger(__name__)


def _penguins() -> tuple[Any, Any] | None:
    """Species (3 classes) from bill, flipper, mass, island and sex; rows with a gap dropped."""
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


def _load(name: str) -> tuple[Any, Any] | None:
    from sklearn import datasets

    if name.startswith("penguins"):
        return _penguins()
    loader: Callable[..., Any] = getattr(datasets, f"load_{name}")
    return loader(return_X_y=True)


def _models(seed: int, quick: bool) -> dict[str, Callable[[], Any]]:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from tabzoo_orion_msp.estimators import OrionMSPClassifier

    return {
        "orion-msp": lambda: OrionMSPClassifier(n_estimators=2 if quick else 4, device="cpu", random_state=seed),
        "LogisticRegression": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        "HistGradientBoosting": lambda: HistGradientBoostingClassifier(random_state=seed),
    }


def run_demo(*, seed: int = 0, quick: bool = True) -> list[dict[str, Any]]:
    """Accuracy of ORION-MSP and its baselines on bundled datasets.

    :param seed: split and model seed.
    :param quick: three datasets and a 2-member ensemble (under a minute on 2 cores); else all five
        datasets and 4 members.
    :return: one dict per (dataset, model): ``dataset``, ``task``, ``model``, ``metric``, ``value``,
        ``fit_predict_s``.
    """
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import train_test_split

    rows: list[dict[str, Any]] = []
    for name in QUICK if quick else DATASETS:
        data = _load(name)
        if data is None:
            continue
        X, y = data
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
        for model_name, make in _models(seed, quick).items():
            start = time.perf_counter()
            pred = make().fit(Xtr, ytr).predict(Xte)
            rows.append({
                "dataset": name, "task": "classification", "model": model_name, "metric": "accuracy",
                "value": float(accuracy_score(yte, pred)), "fit_predict_s": round(time.perf_counter() - start, 3),
            })
    return rows
