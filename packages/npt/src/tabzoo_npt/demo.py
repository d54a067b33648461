"""``tabzoo demo`` contribution of tabzoo-npt: a regression set and an imputation task.

``run_demo`` trains NPT and its baselines on the SAME splits of real bundled data
(scikit-learn's diabetes) and returns one dict per (dataset, task, model):

* regression: NPTRegressor vs Ridge and HistGradientBoosting, test RMSE;
* imputation: 15% of the feature cells hidden at random, NPTImputer vs column-mean imputation
  and sklearn's IterativeImputer, RMSE on the hidden cells (standardised units).

Needs scikit-learn (``tabzoo-npt[sklearn]``). ``quick=False`` (``tabzoo demo --full``) fits NPT
with the estimators' defaults (a few CPU-minutes); ``quick=True`` keeps it within about a minute
on two cores with a cut budget (``small`` at dim 8, 120 steps), not the defaults.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["run_demo"]


def _row(dataset: str, task: str, model: str, metric: str, value: float, seconds: float) -> dict[str, Any]:
    return {"dataset": dataset, "task": task, "model": model, "metric": metric, "value": float(value),
            "fit_predict_s": float(seconds)}


def run_demo(*, seed: int = 0, quick: bool = True) -> list[dict[str, Any]]:
    """Run the NPT demo; see the module docstring. Returns the result rows."""
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer, SimpleImputer
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from tabzoo_npt.estimators import NPTImputer, NPTRegressor

    cut: dict[str, Any] = {"preset": "small", "dim": 8, "steps": 120} if quick else {}  # quick: cut budget
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
    rows = []
    models = {
        "npt": NPTRegressor(**cut, **({"eval_every": 20, "patience": 4} if quick else {}), random_state=seed),
        "ridge": make_pipeline(StandardScaler(), Ridge()),
        "hist_gradient_boosting": HistGradientBoostingRegressor(random_state=seed),
    }
    for name, model in models.items():
        t = time.perf_counter()
        pred = model.fit(Xtr, ytr).predict(Xte)
        rows.append(_row("diabetes", "regression", name, "rmse", np.sqrt(np.mean((pred - yte) ** 2)),
                         time.perf_counter() - t))

    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    rng = np.random.default_rng(seed)
    holes = rng.random(Z.shape) < 0.15
    holes[holes.all(axis=1), 0] = False
    Zm = np.where(holes, np.nan, Z)
    imputers = {
        "npt": NPTImputer(**cut, random_state=seed),
        "mean": SimpleImputer(),
        "iterative_imputer": IterativeImputer(random_state=seed, max_iter=10),
    }
    for name, imp in imputers.items():
        t = time.perf_counter()
        out = imp.fit(Zm).transform(Zm)
        rows.append(_row("diabetes (15% cells hidden)", "imputation", name, "rmse_hidden_cells",
                         np.sqrt(np.mean((np.asarray(out, dtype=float) - Z)[holes] ** 2)), time.perf_counter() - t))
    return rows
