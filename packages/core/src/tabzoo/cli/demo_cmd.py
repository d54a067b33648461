"""``tabzoo demo``: the main job, on embedded defaults and with no network.

For every installed in-context architecture that ships an estimator, it fits the estimator on
repeated stratified splits of scikit-learn's bundled breast_cancer and wine sets, next to a
LogisticRegression baseline fitted on the same splits, and prints accuracy and ROC-AUC (JSON
with ``--json``). With no such plugin installed it says which packages to install.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from typing import Any

DATASETS = ("breast_cancer", "wine")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="the main job: installed models vs a baseline on bundled data")
    p.add_argument("--json", action="store_true", help="print stable JSON")
    p.add_argument("--repeats", type=int, default=2, help="stratified splits per dataset")
    p.add_argument("--model", action="append", default=None, help="only these architectures")
    p.add_argument("--n-estimators", type=int, default=2, help="ensemble members of each model")
    p.set_defaults(func=run)


def _models(only: list[str] | None) -> dict[str, Any]:
    from tabzoo.plugins import get_registry

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = get_registry()
    out: dict[str, Any] = {}
    for name in reg.names("architectures"):
        spec = reg.get("architectures", name)
        if spec.estimator is None or spec.kind != "in-context" or (only and name not in only):
            continue
        cls = spec.estimator_class()
        from sklearn.base import ClassifierMixin

        if issubclass(cls, ClassifierMixin):
            out[name] = cls
    return out


def _score(make: Any, X: Any, y: Any, repeats: int) -> dict[str, float]:
    import numpy as np
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedShuffleSplit

    accs, aucs, secs = [], [], []
    for train, test in StratifiedShuffleSplit(repeats, test_size=0.3, random_state=0).split(X, y):
        est = make()
        t0 = time.perf_counter()
        est.fit(X[train], y[train])
        proba = est.predict_proba(X[test])
        secs.append(time.perf_counter() - t0)
        accs.append(accuracy_score(y[test], est.classes_[proba.argmax(1)]))
        multi = proba.shape[1] > 2
        aucs.append(roc_auc_score(y[test], proba if multi else proba[:, 1], multi_class="ovr"))
    return {"accuracy": float(np.mean(accs)), "roc_auc": float(np.mean(aucs)), "seconds": float(np.mean(secs))}


def run(args: argparse.Namespace) -> int:
    from sklearn import datasets
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    models = _models(args.model)
    results: dict[str, Any] = {"datasets": {}, "models": sorted(models)}
    if not models:
        msg = ("no in-context classifier is installed; install one, e.g. `pip install tabzoo-tabflex`, "
               "then run `tabzoo demo` again (`tabzoo plugins` lists what is installed).")
        print(json.dumps({**results, "message": msg}) if args.json else msg)
        return 0
    for ds in DATASETS:
        X, y = getattr(datasets, f"load_{ds}")(return_X_y=True)
        row = {"LogisticRegression": _score(
            lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), X, y, args.repeats)}
        for name, cls in models.items():
            row[name] = _score(lambda cls=cls: cls(n_estimators=args.n_estimators), X, y, args.repeats)
        results["datasets"][ds] = row
    if args.json:
        json.dump(results, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    print(f"{'dataset':<15}{'model':<22}{'accuracy':>10}{'ROC-AUC':>10}{'fit+predict s':>15}")
    for ds, row in results["datasets"].items():
        for name, r in row.items():
            print(f"{ds:<15}{name:<22}{r['accuracy']:>10.4f}{r['roc_auc']:>10.4f}{r['seconds']:>15.2f}")
    return 0
