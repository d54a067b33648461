"""Metrics, summaries and target checks of ``benchmarks/realdata.py``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["classification_metrics", "regression_metrics", "summarize", "evaluate_targets", "learning_deltas",
           "curve_deltas_all", "PRIMARY"]

#: the metric each task is ranked by (higher is better)
PRIMARY = {"classification": "roc_auc", "regression": "r2"}
GBDTS = ("hist_gbdt", "xgboost", "lightgbm", "catboost")


def _auc(pos: np.ndarray, score: np.ndarray) -> float:
    """Binary ROC-AUC (Mann-Whitney with mid-ranks for ties)."""
    from scipy.stats import rankdata

    n1 = int(pos.sum())
    n0 = len(pos) - n1
    r = rankdata(score)
    return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def classification_metrics(y_true: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    """ROC-AUC (macro one-vs-rest over the classes present in ``y_true`` with both positives and
    negatives; for 2 classes the usual AUC), accuracy and log-loss (probabilities clipped at 1e-15).

    :param y_true: ``[n]`` class indices into the columns of ``proba``.
    :param proba: ``[n, k]`` probabilities.
    """
    proba = np.asarray(proba, dtype=np.float64)
    aucs = []
    for c in np.unique(y_true):
        pos = y_true == c
        if 0 < pos.sum() < len(pos):
            aucs.append(_auc(pos, proba[:, c]))
    p_true = np.clip(proba[np.arange(len(y_true)), y_true], 1e-15, 1.0)
    return {"roc_auc": float(np.mean(aucs)), "accuracy": float(np.mean(proba.argmax(1) == y_true)),
            "log_loss": float(-np.mean(np.log(p_true)))}


def regression_metrics(y_true: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """R² and RMSE."""
    y_true, pred = np.asarray(y_true, float), np.asarray(pred, float)
    ss_res = float(np.sum((y_true - pred) ** 2))
    ss_tot = float(np.sum((y_true - y_true.mean()) ** 2))
    return {"r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan"),
            "rmse": float(np.sqrt(ss_res / len(y_true)))}


def _table_means(records: list[dict[str, Any]], task: str) -> pd.DataFrame:
    """One row per (table, model): the mean of each metric over that model's splits."""
    rows = [r for r in records if r["task"] == task and r.get("status") == "ok"]
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame([{"table": r["table"], "model": r["model"], "seconds": r["fit_predict_s"], **r["metrics"]}
                       for r in rows])
    out = df.groupby(["table", "model"]).mean(numeric_only=True)
    out["n_splits"] = df.groupby(["table", "model"]).size()
    return out.reset_index()


def summarize(records: list[dict[str, Any]], tabzoo_models: list[str]) -> dict[str, Any]:
    """Per task: mean metrics per model, mean rank, per-table means, wins/losses of each tabzoo
    model against each other model, and fit+predict seconds.

    A fit that passed its ``--timeout`` cap (status ``"timeout"``) has no metrics: it is left out of the
    means, ranks and wins/losses like a failed fit, and counted explicitly: ``timeouts`` of the task lists,
    per model, how many (table, split) fits timed out, on which tables and the seconds each ran before it
    was killed; ``per_model[m]["timeouts"]`` is that count (a model that only timed out has no ``per_model``
    entry, only its ``timeouts`` one). A model with a timeout covers fewer tables, so it drops out of the
    ``mean_rank`` of the widest-coverage models (``mean_rank_on_tables_it_ran`` still ranks it)."""
    out: dict[str, Any] = {}
    for task, primary in PRIMARY.items():
        timeouts: dict[str, Any] = {}
        for r in records:
            if r["task"] == task and r.get("status") == "timeout":
                t = timeouts.setdefault(r["model"], {"count": 0, "fits": []})
                t["count"] += 1
                t["fits"].append({"table": r["table"], "split": r.get("split"),
                                  "seconds": round(float(r["fit_predict_s"]), 1)})
        tm = _table_means(records, task)
        if tm.empty:
            if timeouts:
                out[task] = {"primary_metric": primary, "tables": 0, "per_model": {}, "timeouts": timeouts}
            continue
        wide = tm.pivot(index="table", columns="model", values=primary)
        n_tables = wide.shape[0]
        # rank among the models with the widest coverage (all of them on a complete run), over the
        # tables where each of those has a result (1 = best; ties share the mean rank)
        cover = wide.notna().sum()
        full = [m for m in wide.columns if cover[m] == cover.max()]
        rank_tables = wide.index[wide[full].notna().all(axis=1)]
        ranks_full = wide.loc[rank_tables, full].rank(axis=1, ascending=False, method="average")
        ranks_all = wide.rank(axis=1, ascending=False, method="average")
        metric_names = [c for c in tm.columns if c not in ("table", "model", "seconds", "n_splits")]
        per_model: dict[str, Any] = {}
        for m in wide.columns:
            sub = tm[tm.model == m]
            per_model[m] = {
                "tables": int(len(sub)),
                **{f"mean_{k}": float(sub[k].mean()) for k in metric_names},
                "mean_rank": float(ranks_full[m].mean()) if m in full else None,
                "mean_rank_on_tables_it_ran": float(ranks_all[m].dropna().mean()),
                "mean_fit_predict_s": float(sub["seconds"].mean()),
                "total_fit_predict_s_of_table_means": float(sub["seconds"].sum()),
                "timeouts": int(timeouts.get(m, {}).get("count", 0)),
            }
        wins: dict[str, Any] = {}
        for z in tabzoo_models:
            if z not in wide.columns:
                continue
            wins[z] = {}
            for peer in wide.columns:
                if peer == z:
                    continue
                both = wide[[z, peer]].dropna()
                d = both[z] - both[peer]
                wins[z][peer] = {"wins": int((d > 1e-4).sum()), "losses": int((d < -1e-4).sum()),
                                 "ties": int((d.abs() <= 1e-4).sum()),
                                 "won_on": sorted(both.index[d > 1e-4].tolist()),
                                 "mean_difference": float(d.mean()) if len(d) else None}
        per_table = {t: {m: {k: (None if pd.isna(v) else float(v)) for k, v in row.items()
                             if k not in ("table", "model")}
                         for m, row in g.set_index("model").iterrows()}
                     for t, g in tm.groupby("table")}
        out[task] = {"primary_metric": primary, "tables": int(n_tables), "ranked_models": full,
                     "ranked_tables": int(len(rank_tables)),
                     "per_model": per_model, "wins_losses": wins, "per_table": per_table, "timeouts": timeouts,
                     "ranks": {t: {m: float(v) for m, v in r.dropna().items()} for t, r in ranks_full.iterrows()}}
    return out


def learning_deltas(curves: dict[str, Any], model: str, lo: int = 1000, hi: int = 50000) -> dict[str, Any]:
    """Accuracy at ``hi`` (or the largest size reached) minus accuracy at ``lo``, per table."""
    out = {}
    for table, c in curves.items():
        pts = {int(p["train_rows"]): p["accuracy"] for p in c["points"].get(model, []) if p.get("status") == "ok"}
        if lo not in pts or len(pts) < 2:
            out[table] = {"delta": None, "reason": f"no {lo}-row point or fewer than 2 points"}
            continue
        top = hi if hi in pts else max(pts)
        out[table] = {"from_rows": lo, "to_rows": top, "acc_from": pts[lo], "acc_to": pts[top],
                      "delta": pts[top] - pts[lo], "reached_50k": top >= hi}
    return out


def evaluate_targets(summary: dict[str, Any], curves: dict[str, Any], model: str = "tabflex") -> dict[str, Any]:
    """The issue's targets, evaluated on this run."""
    cls = summary.get("classification", {})
    pm = cls.get("per_model", {})
    t: dict[str, Any] = {}

    def auc(m: str) -> float | None:
        return pm.get(m, {}).get("mean_roc_auc")

    a, lr, xg = auc(model), auc("linear"), auc("xgboost")
    t["mean_roc_auc_ge_logistic_regression"] = {
        "target": f"{model} mean ROC-AUC >= LogisticRegression's", model: a, "linear": lr,
        "met": None if a is None or lr is None else bool(a >= lr)}
    t["goal_mean_roc_auc_ge_xgboost"] = {
        "target": f"{model} mean ROC-AUC >= XGBoost's (goal)", model: a, "xgboost": xg,
        "met": None if a is None or xg is None else bool(a >= xg)}
    rk = {m: pm.get(m, {}).get("mean_rank") for m in (model, *GBDTS)}
    # head to head: rank tabflex and the GBDTs among themselves on the tables where all of them have
    # a result (a GBDT that timed out on a table would otherwise drop out of the ranking)
    per_table = cls.get("per_table", {})
    group = [model, *GBDTS]
    rows = {tab: {m: v[m]["roc_auc"] for m in group if m in v and v[m].get("roc_auc") is not None}
            for tab, v in per_table.items()}
    rows = {tab: r for tab, r in rows.items() if len(r) == len(group)}
    h2h: dict[str, float] | None = None
    if rows:
        h2h = pd.DataFrame(rows).T.rank(axis=1, ascending=False, method="average").mean().to_dict()
    better = [g for g in GBDTS if h2h is not None and h2h[model] < h2h[g]]
    t["goal_mean_rank_better_than_every_gbdt"] = {
        "target": f"{model} mean rank (classification, ROC-AUC) better than every GBDT (goal); ranked among "
                  f"{model} and the GBDTs on the tables where all of them have a result",
        "head_to_head_mean_ranks": h2h, "head_to_head_tables": len(rows), "better_than": better,
        "mean_ranks_among_all_ranked_models": rk,
        "met": None if h2h is None else len(better) == len(GBDTS)}
    deltas = learning_deltas(curves, model)
    known = [d for d in deltas.values() if d.get("delta") is not None]
    hits = [tab for tab, d in deltas.items() if d.get("delta") is not None and d["delta"] >= 0.02]
    t["accuracy_plus_2_points_1k_to_50k"] = {
        "target": f"{model} accuracy +0.02 or more from 1,000 to 50,000 context rows on at least half of the "
                  "large tables (the largest size reached where a table has fewer rows)",
        "per_table": deltas, "tables_meeting": hits, "tables_with_a_delta": len(known),
        "met": None if not known else len(hits) >= len(known) / 2}
    return t


def curve_deltas_all(curves: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``learning_deltas`` for every model in the curves."""
    models = sorted({m for c in curves.values() for m in c["points"]})
    res: dict[str, dict[str, Any]] = defaultdict(dict)
    for m in models:
        for table, d in learning_deltas(curves, m).items():
            res[m][table] = None if d.get("delta") is None else round(d["delta"], 4)
    return dict(res)
