"""Why NPT loses to the linear models on the real-data suite (issue 25): small, fast experiments.

One table of the suite, its split 0 (the same 70/30 stratified split and the same <= 500 training
rows as ``benchmarks/realdata.py``), one NPT setting: prints and records the training loss per
step, the validation target loss of every check, which weights early stopping kept, and the test
metric (ROC-AUC / R²) next to LogisticRegression / Ridge on the same rows. Regression records
also hold ``val_loss_kept`` (the early-stopping rows' loss of the kept weights) and, where the
table's training pool has rows the fit does not read, their R² (``spare``): validation figures
for choosing settings without the test rows.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/npt_diagnose.py --table islr_credit \
        --set steps=150 lr=1e-3 --out benchmarks/results/npt-diagnose-DATE.jsonl

Each call appends one JSON line to ``--out`` (never rewrites earlier lines).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _realdata_models import NPT_SETTINGS, NPT_TRAIN_CAP, peer_runners  # noqa: E402
from _realdata_summary import classification_metrics, regression_metrics  # noqa: E402
from _realdata_tables import get_table, load_table  # noqa: E402
from realdata import _stratified_take, make_split  # noqa: E402


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def _spare_rows(y: np.ndarray, task: str, used: np.ndarray, cap: int = 500) -> np.ndarray:
    """Up to ``cap`` rows of split 0's 70% training pool that the fit does not read (a validation
    set beside the early-stopping rows, never the test rows; empty when the pool is all used)."""
    from sklearn.model_selection import train_test_split

    strat = y if task == "classification" else None
    pool, _ = train_test_split(np.arange(len(y)), test_size=0.3, random_state=0, stratify=strat)
    left = np.setdiff1d(pool, used)
    return np.sort(np.random.default_rng(3000).choice(left, min(cap, len(left)), replace=False))


def run(table: str, settings: dict[str, Any], linear: bool = True) -> dict[str, Any]:
    """Fit NPT (``NPT_SETTINGS`` updated by ``settings``) on ``table``'s split 0; return the record."""
    from tabzoo_npt import NPTClassifier, NPTRegressor

    spec = get_table(table)
    X, y = load_table(spec)
    tr, te = make_split(y.to_numpy(), spec.task, 0, 500, 500)
    ys = y.to_numpy() if spec.task == "classification" else None
    tr = _stratified_take(ys, tr, NPT_TRAIN_CAP, np.random.default_rng(2000))
    spare = _spare_rows(y.to_numpy(), spec.task, tr)
    kwargs = dict(NPT_SETTINGS) | settings
    cls = NPTClassifier if spec.task == "classification" else NPTRegressor
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    est = cls(**({"random_state": 0} | kwargs))  # --set random_state=N: another init and holdout
    yt = y.iloc[tr].to_numpy() if spec.task == "classification" else y.iloc[tr].to_numpy(dtype=float)
    est.fit(X.iloc[tr], yt)
    fit_s = time.perf_counter() - t0
    labels = sorted(set(y.astype(str)))
    if spec.task == "classification":
        from _realdata_models import _align

        out = _align(est.predict_proba(X.iloc[te]), est.classes_, labels)
        index = {lab: i for i, lab in enumerate(labels)}
        metrics = classification_metrics(np.array([index[v] for v in y.iloc[te]]), out)
    else:
        metrics = regression_metrics(y.iloc[te].to_numpy(dtype=float), est.predict(X.iloc[te]))
    h = est.history_
    kept = [v for s, v in h.val_losses if s == h.best_step]
    rec: dict[str, Any] = {
        "table": table, "task": spec.task, "settings": kwargs, "train_rows": int(len(tr)), "dim": est.model_.config.dim,
        "parameters": int(sum(p.numel() for p in est.model_.parameters())), "fit_s": round(fit_s, 1),
        "steps_done": h.steps, "best_step": h.best_step, "stopped_early": h.stopped_early,
        "train_loss_every_10": [round(float(np.mean(h.losses[i:i + 10])), 4) for i in range(0, len(h.losses), 10)],
        "val_losses": [(s, round(v, 4)) for s, v in h.val_losses], "test": metrics,
        "validation_rows": int(est.validation_rows_), "val_loss_kept": round(kept[0], 4) if kept else None,
        "spare_rows": int(len(spare)),
    }
    if len(spare) and spec.task == "regression":  # rows of the training pool neither fitted nor tested
        rec["spare"] = regression_metrics(y.iloc[spare].to_numpy(dtype=float), est.predict(X.iloc[spare]))
    if linear:
        runner = next(r for r in peer_runners(spec.task, {"linear"})[0] if r.name == "linear")
        out = runner.fit_predict(X.iloc[tr], y.iloc[tr], X.iloc[te], labels, 0)
        if spec.task == "classification":
            index = {lab: i for i, lab in enumerate(labels)}
            rec["linear"] = classification_metrics(np.array([index[v] for v in y.iloc[te]]), out)
        else:
            rec["linear"] = regression_metrics(y.iloc[te].to_numpy(dtype=float), out)
    return rec


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--table", required=True)
    p.add_argument("--set", nargs="*", default=[], help="NPT settings KEY=VALUE over NPT_SETTINGS")
    p.add_argument("--tag", default="")
    p.add_argument("--out", default=None)
    p.add_argument("--no-linear", action="store_true")
    a = p.parse_args(argv)
    settings = {k: _value(v) for k, v in (s.split("=", 1) for s in a.set)}
    rec = run(a.table, settings, linear=not a.no_linear) | {"tag": a.tag}
    metric = "roc_auc" if rec["task"] == "classification" else "r2"
    print(f"{a.table} {a.tag} {settings}: test {metric} {rec['test'][metric]:.4f} (linear "
          f"{rec.get('linear', {}).get(metric, float('nan')):.4f}); {rec['fit_s']} s, steps {rec['steps_done']}, "
          f"best {rec['best_step']}")
    print("  train loss /10 steps:", rec["train_loss_every_10"])
    print("  val:", rec["val_losses"], "kept:", rec["val_loss_kept"], "spare:", rec.get("spare"))
    if a.out:
        with open(a.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
