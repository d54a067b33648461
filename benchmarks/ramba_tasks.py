"""Tuned baselines on the Ramba benchmark tasks (tabzoo_ramba.tasks), as a user would build them.

    OMP_NUM_THREADS=1 nice -n 10 uv run --group bench python benchmarks/ramba_tasks.py [--tasks a,b] [--seeds 0,1,2]

For each task: LightGBM and XGBoost on (a) the flattened seed row alone and (b) the flattened row
plus hand-made causal relational aggregates (tabzoo_ramba.task_features), each with a small grid
search on the validation split (early stopping on it too), and logistic / ridge regression on
both (median imputation, standardisation, C / alpha searched on validation). Per seed (the
GBDTs' row and column subsampling) the configuration with the best validation score is scored
on test; the JSON holds every seed's figures, their mean and standard deviation. Metric: ROC-AUC
(classification) or R^2 (regression). Prints the JSON and merges it into
benchmarks/results/ramba-tasks-<date>.json (tasks run again replace their entry, said on stderr).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
LGBM_GRID = [{"num_leaves": nl, "learning_rate": 0.05, "min_child_samples": mc}
             for nl, mc in itertools.product((15, 63), (20, 100))]
XGB_GRID = [{"max_depth": d, "learning_rate": 0.05, "min_child_weight": mc} for d, mc in itertools.product((4, 8), (1, 10))]
LINEAR_GRID = [0.01, 0.1, 1.0, 10.0]


def _metric(kind: str, y: np.ndarray, p: np.ndarray) -> float:
    from sklearn.metrics import r2_score, roc_auc_score

    return float(roc_auc_score(y, p) if kind == "classification" else r2_score(y, p))


def _lgbm(kind: str, params: dict[str, Any], seed: int, xs: dict[str, np.ndarray], ys: dict[str, np.ndarray]) -> Any:
    import lightgbm as lgb

    cls = lgb.LGBMClassifier if kind == "classification" else lgb.LGBMRegressor
    m = cls(n_estimators=1000, subsample=0.8, subsample_freq=1, colsample_bytree=0.8, random_state=seed,
            n_jobs=1, verbose=-1, **params)
    m.fit(xs["train"], ys["train"], eval_X=(xs["val"],), eval_y=(ys["val"],),
          callbacks=[lgb.early_stopping(50, verbose=False)])
    return m


def _xgb(kind: str, params: dict[str, Any], seed: int, xs: dict[str, np.ndarray], ys: dict[str, np.ndarray]) -> Any:
    import xgboost as xgb

    cls = xgb.XGBClassifier if kind == "classification" else xgb.XGBRegressor
    m = cls(n_estimators=1000, subsample=0.8, colsample_bytree=0.8, random_state=seed, n_jobs=1,
            tree_method="hist", early_stopping_rounds=50, **params)
    m.fit(xs["train"], ys["train"], eval_set=[(xs["val"], ys["val"])], verbose=False)
    return m


def _linear(kind: str, c: float, seed: int, xs: dict[str, np.ndarray], ys: dict[str, np.ndarray]) -> Any:
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    est = LogisticRegression(C=c, max_iter=500) if kind == "classification" else Ridge(alpha=1.0 / c)
    m = make_pipeline(SimpleImputer(strategy="median", keep_empty_features=True), StandardScaler(), est)
    return m.fit(xs["train"], ys["train"])


def _predict(kind: str, m: Any, x: np.ndarray) -> np.ndarray:
    return m.predict_proba(x)[:, 1] if kind == "classification" else m.predict(x)


def _tuned(fit: Any, grid: list[Any], kind: str, seed: int, xs: dict, ys: dict) -> dict[str, Any]:
    best: dict[str, Any] = {"val": -np.inf}
    for params in grid:
        m = fit(kind, params, seed, xs, ys)
        v = _metric(kind, ys["val"], _predict(kind, m, xs["val"]))
        if v > best["val"]:
            best = {"val": v, "test": _metric(kind, ys["test"], _predict(kind, m, xs["test"])), "params": params}
    return best


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    test = np.array([r["test"] for r in runs])
    return {"test_mean": float(test.mean()), "test_std": float(test.std(ddof=1)) if len(test) > 1 else 0.0,
            "val_mean": float(np.mean([r["val"] for r in runs])), "runs": runs}


def run_task(name: str, seeds: list[int]) -> dict[str, Any]:
    from tabzoo_ramba.task_features import flat_features, relational_features
    from tabzoo_ramba.tasks import get_task

    bt = get_task(name)
    t0 = time.time()
    db = bt.load()
    split = bt.split(db)
    kind = bt.task.kind
    ys = {k: v.y for k, v in split.items()}
    feats: dict[str, dict[str, np.ndarray]] = {"flat": {}, "relational": {}}
    names: dict[str, list[str]] = {}
    for part, s in split.items():
        for fs, fn in (("flat", flat_features), ("relational", relational_features)):
            f = fn(db, bt.task, s.seeds)
            names[fs] = sorted(f)
            feats[fs][part] = np.column_stack([f[k] for k in names[fs]])
    out: dict[str, Any] = {
        "task": name, "description": bt.description, "metric": bt.metric, "kind": kind,
        "split": {k: {"n": len(v), "start": str(v.seeds[0][2]), "end": str(v.seeds[-1][2]),
                      "label_mean": float(v.y.mean())} for k, v in split.items()},
        "n_features": {k: len(v) for k, v in names.items()}, "prep_s": round(time.time() - t0, 1), "models": {}}
    print(f"{name}: prepared in {out['prep_s']} s, {out['n_features']}", file=sys.stderr)
    for fs in ("flat", "relational"):
        xs = feats[fs]
        for model, fit, grid in (("lightgbm", _lgbm, LGBM_GRID), ("xgboost", _xgb, XGB_GRID)):
            t1 = time.time()
            runs = [_tuned(fit, grid, kind, s, xs, ys) | {"seed": s} for s in seeds]
            out["models"][f"{model}-{fs}"] = _summary(runs) | {"fit_s": round(time.time() - t1, 1)}
            print(f"  {model}-{fs}: test {out['models'][f'{model}-{fs}']['test_mean']:.4f}", file=sys.stderr)
        lin = _tuned(_linear, LINEAR_GRID, kind, 0, xs, ys)  # deterministic: one run stands for every seed
        out["models"][f"{'logistic' if kind == 'classification' else 'ridge'}-{fs}"] = _summary([lin | {"seed": None}])
    if kind == "classification":
        out["models"]["constant"] = {"test_mean": 0.5, "test_std": 0.0}
    else:
        mu = float(ys["train"].mean())
        out["models"]["constant"] = {"test_mean": _metric(kind, ys["test"], np.full(len(ys["test"]), mu)),
                                     "test_std": 0.0}
    out["total_s"] = round(time.time() - t0, 1)
    return out


def main() -> None:
    from tabzoo_ramba.tasks import TASKS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, from {sorted(TASKS)}")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--out", default=None, help="JSON file to merge into (default results/ramba-tasks-<date>.json)")
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    path = Path(args.out) if args.out else RESULTS / f"ramba-tasks-{dt.date.today().isoformat()}.json"
    res: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"tasks": {}}
    res["machine"] = machine_info()
    res["seeds"] = seeds
    for name in args.tasks.split(","):
        if name in res["tasks"]:
            print(f"replacing the earlier entry of {name} in {path}", file=sys.stderr)
        res["tasks"][name] = run_task(name, seeds)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(res, indent=1, default=float) + "\n")
    print(json.dumps(res, indent=1, default=float))


if __name__ == "__main__":
    main()
