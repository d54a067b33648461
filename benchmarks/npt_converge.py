"""Does NPT's default budget converge on tables of 5,000-10,000 rows? (issue 25, Deliver 1)

One real table of the suite (``_realdata_tables``, offline), the suite's stratified 70/30 split
of seed 0 with every training row (no train cap) and up to ``--test-cap`` test rows. NPT is fitted
with the estimator's defaults (plus ``--set KEY=JSON`` overrides); every validation of early
stopping is logged with its step, loss and the wall/CPU seconds since the fit began, so the record
holds the learning curve. ``--patience 0`` turns early stopping off (patience larger than the run)
to draw the whole curve; :func:`simulated_stop` then says where the estimator's rule (patience,
``min_steps``) would have stopped on it. Peers, tuned on the same training rows: logistic
regression / ridge (C or alpha by 5-fold CV) and LightGBM (a 3-fold CV grid of 12 settings,
then refitted). CPU seconds are the process's (torch and BLAS on one thread).

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/npt_converge.py run --table wa_churn \
        --out /tmp/conv.jsonl [--set batch_size=256] [--patience 0] [--peers]
    python benchmarks/npt_converge.py summary /tmp/conv.jsonl --out benchmarks/results/npt-converge-DATE.json
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

PRIMARY = {"classification": "roc_auc", "regression": "r2"}


def simulated_stop(curve: list[dict[str, Any]], patience: int, min_steps: int, min_delta: float = 1e-6) -> dict[str, Any]:
    """Where the core loop's early stopping (:mod:`tabzoo.train.fit`) stops on a logged curve:
    after ``patience`` validations without an improvement of ``min_delta``, not before ``min_steps``."""
    best, since = None, 0
    for ev in curve:
        if best is None or ev["loss"] < best["loss"] - min_delta:
            best, since = ev, 0
            continue
        since += 1
        if since >= patience and ev["step"] >= min_steps:
            return {"stop_step": ev["step"], "best_step": best["step"], "best_loss": best["loss"]}
    return {"stop_step": None, "best_step": best["step"] if best else None, "best_loss": best["loss"] if best else None}


def _npt_run(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import tabzoo_npt.train as npt_train
    import torch
    from _realdata_tables import get_table, load_table
    from realdata import _score, make_split
    from tabzoo_npt import NPTClassifier, NPTRegressor
    from tabzoo_npt.train import NPTFitConfig

    torch.set_num_threads(1)
    spec = get_table(args.table)
    X, y = load_table(spec)
    tr, te = make_split(y.to_numpy(), spec.task, args.split, 10**9, args.test_cap)
    overrides = {k: json.loads(v) for k, _, v in (item.partition("=") for item in args.set)}
    if args.patience == 0:
        overrides["patience"] = 10**6
    cls = NPTClassifier if spec.task == "classification" else NPTRegressor
    est = cls(random_state=args.split, **overrides)
    curve: list[dict[str, Any]] = []
    t0, c0 = time.time(), time.process_time()
    original = npt_train.validation_loss

    def logged(*a: Any, **k: Any) -> float:
        loss = original(*a, **k)
        curve.append({"loss": loss, "wall_s": round(time.time() - t0, 1), "cpu_s": round(time.process_time() - c0, 1)})
        with open(f"{args.out}.progress", "a", encoding="utf-8") as fh:  # a cut run keeps its curve so far
            fh.write(json.dumps({"table": spec.name, "tag": args.tag, "eval": len(curve)} | curve[-1]) + "\n")
        return loss

    npt_train.validation_loss = logged  # type: ignore[assignment]
    try:
        est.fit(X.iloc[tr], y.iloc[tr])
    finally:
        npt_train.validation_loss = original  # type: ignore[assignment]
    fit_wall, fit_cpu = time.time() - t0, time.process_time() - c0
    hist = est.history_
    for ev, point in zip(hist.evaluations, curve, strict=True):
        point["step"] = ev.step
    losses = hist.losses
    every = est.eval_every
    for point in curve:  # mean training loss over the steps since the previous validation
        s = point["step"]
        point["train_loss"] = float(np.mean(losses[max(0, s - every):s])) if s else None
    t1, c1 = time.time(), time.process_time()
    labels = sorted(y.unique().tolist()) if spec.task == "classification" else None
    out = est.predict_proba(X.iloc[te]) if spec.task == "classification" else est.predict(X.iloc[te])
    if labels is not None:  # estimator classes are sorted labels, as the suite's
        assert list(est.classes_) == labels
    metrics = _score(spec.task, y.iloc[te], np.asarray(out, dtype=np.float64), labels)
    cfg = NPTFitConfig(steps=est._steps(), flat_fraction=float(est.flat_fraction))  # for min_steps
    return {"kind": "npt", "table": spec.name, "task": spec.task, "split": args.split, "tag": args.tag,
            "train_rows": int(len(tr)), "test_rows": int(len(te)), "features": int(X.shape[1]),
            "settings": overrides, "validation_rows": int(est.validation_rows_), "steps_done": hist.steps,
            "epochs": hist.epochs, "best_step": hist.best_step, "stopped_early": hist.stopped_early,
            "budget_steps": cfg.steps, "batch_rows": int(est.memory_estimate(est.model_.config.cardinalities,
                                                                                    len(tr))["batch_rows"]), "min_steps": cfg.min_steps, "eval_every": every,
            "dim": est.model_.config.dim, "parameters": int(sum(p.numel() for p in est.model_.parameters())),
            "curve": curve, "fit_wall_s": round(fit_wall, 1), "fit_cpu_s": round(fit_cpu, 1),
            "predict_wall_s": round(time.time() - t1, 1), "predict_cpu_s": round(time.process_time() - c1, 1),
            "metrics": metrics, "load_avg_end": os.getloadavg()[0], "torch_threads": torch.get_num_threads()}


def _peers_run(args: argparse.Namespace) -> list[dict[str, Any]]:
    import lightgbm as lgb
    import numpy as np
    from _realdata_models import _align, _cat_cols, _encode_labels
    from _realdata_tables import get_table, load_table
    from realdata import _score, make_split
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegressionCV, RidgeCV
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    spec = get_table(args.table)
    X, y = load_table(spec)
    tr, te = make_split(y.to_numpy(), spec.task, args.split, 10**9, args.test_cap)
    labels = sorted(y.unique().tolist()) if spec.task == "classification" else None
    Xtr, Xte, ytr = X.iloc[tr], X.iloc[te], y.iloc[tr]
    clf = spec.task == "classification"
    recs = []
    # tuned linear model: C / alpha chosen by 5-fold CV
    t0, c0 = time.time(), time.process_time()
    cats = _cat_cols(Xtr)
    nums = [c for c in Xtr.columns if c not in cats]

    def prep(frame: Any) -> Any:
        frame = frame.copy()
        for c in cats:
            frame[c] = frame[c].astype(object).where(frame[c].notna(), "__missing__")
        return frame

    parts = [("num", make_pipeline(SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True),
                                   StandardScaler()), nums)] if nums else []
    if cats:
        parts.append(("cat", OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=5, max_categories=30,
                                           sparse_output=False), cats))
    if clf:
        lin = make_pipeline(ColumnTransformer(parts), LogisticRegressionCV(Cs=np.logspace(-3, 2, 11), cv=5,
                                                                           max_iter=2000, scoring="neg_log_loss"))
        lin.fit(prep(Xtr), ytr.to_numpy())
        out = _align(lin.predict_proba(prep(Xte)), lin.classes_, labels)
        chosen = {"C": float(np.ravel(lin[-1].C_)[0])}
    else:
        lin = make_pipeline(ColumnTransformer(parts), RidgeCV(alphas=np.logspace(-3, 3, 13)))
        lin.fit(prep(Xtr), ytr.to_numpy(dtype=float))
        out = lin.predict(prep(Xte))
        chosen = {"alpha": float(lin[-1].alpha_)}
    recs.append({"kind": "peer", "model": "linear_tuned", "chosen": chosen})
    recs[-1].update(metrics=_score(spec.task, y.iloc[te], np.asarray(out, float), labels),
                    fit_predict_wall_s=round(time.time() - t0, 1), fit_predict_cpu_s=round(time.process_time() - c0, 1))
    # tuned LightGBM: 3-fold CV over 12 settings (log-loss / MSE), refitted on every training row
    t0, c0 = time.time(), time.process_time()
    grid = {"num_leaves": [7, 31], "learning_rate": [0.03, 0.1], "n_estimators": [100, 300, 600]}
    kw = dict(n_jobs=1, verbose=-1, random_state=args.split, min_child_samples=20)
    if clf:
        classes, codes = _encode_labels(ytr)
        gs = GridSearchCV(lgb.LGBMClassifier(**kw), grid, cv=3, scoring="neg_log_loss").fit(Xtr, codes)
        out = _align(gs.predict_proba(Xte), classes, labels)
    else:
        gs = GridSearchCV(lgb.LGBMRegressor(**kw), grid, cv=3, scoring="neg_mean_squared_error").fit(
            Xtr, ytr.to_numpy(dtype=float))
        out = gs.predict(Xte)
    recs.append({"kind": "peer", "model": "lightgbm_tuned", "chosen": gs.best_params_})
    recs[-1].update(metrics=_score(spec.task, y.iloc[te], np.asarray(out, float), labels),
                    fit_predict_wall_s=round(time.time() - t0, 1), fit_predict_cpu_s=round(time.process_time() - c0, 1))
    for r in recs:
        r.update(table=spec.name, task=spec.task, split=args.split, train_rows=int(len(tr)), test_rows=int(len(te)))
    return recs


def summarize(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per table: each NPT run's steps, early stop (real and simulated), seconds and metric, and the peers'."""
    out: dict[str, Any] = {}
    for r in recs:
        t = out.setdefault(r["table"], {"task": r["task"], "train_rows": r["train_rows"], "npt": {}, "peers": {}})
        metric = PRIMARY[r["task"]]
        if r["kind"] == "peer":
            t["peers"][r["model"]] = {metric: round(r["metrics"][metric], 4), "chosen": r["chosen"],
                                      "cpu_s": r["fit_predict_cpu_s"]}
            continue
        patience = int(r["settings"].get("patience", 6))
        sim = simulated_stop(r["curve"], 6 if patience >= 10**6 else patience, r["min_steps"])
        t["npt"][r["tag"] or "default"] = {
            metric: round(r["metrics"][metric], 4), "settings": r["settings"], "budget_steps": r["budget_steps"],
            "steps_done": r["steps_done"], "best_step": r["best_step"], "stopped_early": r["stopped_early"],
            "rule_would_stop_at": sim["stop_step"], "epochs": r["epochs"], "fit_wall_s": r["fit_wall_s"],
            "fit_cpu_s": r["fit_cpu_s"], "predict_cpu_s": r["predict_cpu_s"], "load_avg_end": round(r["load_avg_end"], 1),
            "best_val_loss": round(min(p["loss"] for p in r["curve"]), 4)}
    return out


def plot(recs: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in recs if r["kind"] == "npt"]
    tables = sorted({r["table"] for r in runs})
    fig, axes = plt.subplots(1, len(tables), figsize=(5.5 * len(tables), 4), squeeze=False)
    for ax, table in zip(axes[0], tables, strict=True):
        for r in [r for r in runs if r["table"] == table]:
            steps = [p["step"] for p in r["curve"]]
            line = ax.plot(steps, [p["loss"] for p in r["curve"]], marker=".", label=f"{r['tag'] or 'default'} val")
            ax.plot(steps, [p["train_loss"] for p in r["curve"]], ls=":", color=line[0].get_color())
            if r["best_step"]:
                ax.axvline(r["best_step"], color=line[0].get_color(), ls="--", lw=0.8)
        ax.set_xlabel("step")
        ax.set_ylabel("validation target loss (solid); training objective (dotted)")
        ax.set_title(f"{table} ({next(r['train_rows'] for r in runs if r['table'] == table)} training rows)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--table", required=True)
    r.add_argument("--split", type=int, default=0)
    r.add_argument("--test-cap", type=int, default=2000)
    r.add_argument("--set", action="append", default=[], metavar="KEY=JSON", help="override one NPT setting")
    r.add_argument("--patience", type=int, default=-1, help="0: no early stop (whole curve); -1: the default")
    r.add_argument("--tag", default="")
    r.add_argument("--peers", action="store_true", help="the tuned peers instead of NPT")
    r.add_argument("--out", required=True, help="JSONL, appended to")
    s = sub.add_parser("summary")
    s.add_argument("records", nargs="+")
    s.add_argument("--out", default=None, help="JSON (refuses to overwrite); the PNG is written beside it")
    a = p.parse_args(argv)
    if a.cmd == "run":
        recs = _peers_run(a) if a.peers else [_npt_run(a)]
        with open(a.out, "a", encoding="utf-8") as fh:
            for rec in recs:
                fh.write(json.dumps(rec, default=float) + "\n")
        print(json.dumps(summarize(recs), indent=1, default=float))
        return
    recs = [json.loads(line) for f in a.records for line in Path(f).read_text(encoding="utf-8").splitlines() if line]
    summary = summarize(recs)
    if a.out:
        with open(a.out, "x", encoding="utf-8") as fh:
            fh.write(json.dumps({"benchmark": "npt_converge", "issue": 25, "summary": summary, "records": recs},
                                indent=1, default=float))
        plot(recs, a.out.removesuffix(".json") + ".png")
    print(json.dumps(summary, indent=1, default=float))


if __name__ == "__main__":
    main()
