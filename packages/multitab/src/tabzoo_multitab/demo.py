"""``tabzoo demo`` entry of tabzoo-multitab: MultiTab-Net and its baselines on a real multi-target set.

Dataset: Palmer penguins (the offline ``palmerpenguins`` package), three tasks from the same
rows: ``species`` (3 classes), ``sex`` (binary) and ``body_mass_g`` (regression), from island
(categorical), bill length/depth, flipper length and year. Without ``palmerpenguins`` it falls
back to scikit-learn's linnerud (3 regression targets, 20 rows).

Every model sees the SAME train/test split (seeded). MultiTab-Net and the MMoE baseline fit all
tasks at once (their ``fit_predict_s`` is the time of that one joint fit); LogisticRegression /
Ridge and HistGradientBoosting fit one model per task. Metrics: ROC AUC (classification,
macro one-vs-rest for species), explained variance (regression).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["run_demo", "load_dataset"]


def load_dataset() -> tuple[str, Any, Any, list[str]]:
    """``(name, X DataFrame, Y DataFrame, task kinds)``."""
    import pandas as pd

    try:
        from palmerpenguins import load_penguins
    except ImportError:
        from sklearn.datasets import load_linnerud

        d = load_linnerud(as_frame=True)
        return "linnerud", d.data, d.target.astype(float), ["regression"] * 3
    df = load_penguins().dropna(subset=["species", "sex", "body_mass_g"]).reset_index(drop=True)
    X = df[["island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm", "year"]].copy()
    X["island"] = X["island"].astype(object)
    X["year"] = X["year"].astype(float)
    Y = pd.DataFrame({"species": df["species"].astype(object), "sex": df["sex"].astype(object),
                      "body_mass_g": df["body_mass_g"].astype(float)})
    return "palmerpenguins", X, Y, ["multiclass", "binary", "regression"]


def _sk_features(X_train: Any, X_test: Any) -> tuple[np.ndarray, np.ndarray]:
    """One-hot categoricals, median-impute and scale numerics (fitted on the training rows)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    cat = [c for c in X_train.columns if X_train[c].dtype == object]
    num = [c for c in X_train.columns if c not in cat]
    ct = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), num),
        ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), cat),
    ])
    return ct.fit_transform(X_train), ct.transform(X_test)


def _metric(kind: str, y_true: np.ndarray, score: np.ndarray) -> float:
    from tabzoo_multitab.metrics import task_metric

    return task_metric(kind, y_true, score)


def run_demo(*, seed: int = 0, quick: bool = True) -> list[dict]:
    """Fit MultiTab-Net, MMoE, LogisticRegression/Ridge and HistGradientBoosting on one split.

    :return: one dict per (task, model): ``dataset, task, model, metric, value, fit_predict_s``.
    """
    import torch
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.model_selection import train_test_split

    from tabzoo_multitab.estimator import MultiTabEstimator

    torch.set_num_threads(min(2, torch.get_num_threads()))
    name, X, Y, kinds = load_dataset()
    X_tr, X_te, Y_tr, Y_te = train_test_split(X, Y, test_size=0.3, random_state=seed)
    rows: list[dict] = []
    epochs = 40 if quick else 200
    for model_name, arch in (("MultiTab-Net", "multitab"), ("MMoE", "mmoe")):
        t0 = time.perf_counter()
        est = MultiTabEstimator(architecture=arch, task_types=kinds, max_epochs=epochs, patience=10, batch_size=64,
                                lr=3e-3, d_embed=8, n_heads=2, row_heads=2, hidden=(64, 32), n_context=128,
                                random_state=seed).fit(X_tr, Y_tr)
        enc = est.target_encoder_.transform(Y_te.to_numpy())
        outs = est.predict_outputs(X_te)
        elapsed = time.perf_counter() - t0
        for j, (task, kind) in enumerate(zip(Y.columns, kinds, strict=True)):
            yt = Y_te.iloc[:, j].to_numpy(dtype=float) if kind == "regression" else enc[:, j]
            rows.append({"dataset": name, "task": str(task), "model": model_name,
                         "metric": "ev" if kind == "regression" else "auc",
                         "value": _metric(kind, yt, outs[j]), "fit_predict_s": elapsed})
    F_tr, F_te = _sk_features(X_tr, X_te)
    for j, (task, kind) in enumerate(zip(Y.columns, kinds, strict=True)):
        y_tr, y_te = Y_tr.iloc[:, j].to_numpy(), Y_te.iloc[:, j].to_numpy()
        if kind == "regression":
            peers = (("Ridge", Ridge(alpha=1.0)), ("HistGradientBoosting", HistGradientBoostingRegressor(random_state=seed)))
        else:
            peers = (("LogisticRegression", LogisticRegression(max_iter=1000)),
                     ("HistGradientBoosting", HistGradientBoostingClassifier(random_state=seed)))
        for peer_name, peer in peers:
            t0 = time.perf_counter()
            peer.fit(F_tr, y_tr)
            if kind == "regression":
                score, yt = peer.predict(F_te), y_te.astype(float)
            else:
                classes = list(peer.classes_)
                yt = np.array([classes.index(v) for v in y_te])
                proba = peer.predict_proba(F_te)
                score = np.log(np.clip(proba, 1e-12, 1)) if kind == "multiclass" else np.log(proba[:, 1] / np.clip(proba[:, 0], 1e-12, 1) + 1e-12)
            elapsed = time.perf_counter() - t0
            rows.append({"dataset": name, "task": str(task), "model": peer_name,
                         "metric": "ev" if kind == "regression" else "auc",
                         "value": _metric(kind, yt, score), "fit_predict_s": elapsed})
    return rows
