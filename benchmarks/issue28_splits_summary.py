"""Issue 28: join ``benchmarks/realdata.py`` runs (finished JSON or a cut run's ``.partial.jsonl``) per split.

The runs of a loaded 2-core machine are cut into short invocations (``--first-split``, ``--no-main``); this
joins their records: per split and task, the primary metric (ROC-AUC / R²) per table and model, the means
and mean ranks over the tables where every named model has a result, and per (split, table) who won; for
learning curves, accuracy per context size and the change from the smallest size >= 1,000 rows to the
largest. A later record of the same (split, table, model) replaces an earlier one. ``--alias OLD=NEW``
renames a model of the run listed next (e.g. the runner ``tabflex-long`` of an older run is the
default ``tabflex`` now). ``--only TASK/splitN`` (e.g. ``classification/split0``) keeps that task and split
only (no curves), when a run also holds splits or tasks that the comparison is not about.

Per split and over all splits together (``over_splits``: the (split, table) cells where every model has a
result, each cell one ranking): mean primary metric, mean rank (1 = best, ties share), and wins / losses /
ties of each model against every other (``wins_losses[a][b]``: cells where ``a`` beats ``b`` by more than
1e-4, loses, or ties). ``--stack NAME`` and ``--tabflex NAME`` (default ``stack-guard`` and ``tabflex``) name
the two issue-28 targets checked per split and over the splits: the stacking estimator has the best mean rank
among every model, and TabFlex's defaults rank better than every GBDT (HistGradientBoosting, XGBoost,
LightGBM, CatBoost) head to head (ranked among TabFlex and the GBDTs present only).

Timeouts (``--timeout`` of ``realdata.py``, status ``"timeout"``): a timed-out fit has no score, so the cell
is left out of the means and ranks like a missing result (``tables_missing_a_model``), and counted
explicitly: ``timeouts`` per split lists, per model, the tables it timed out on; ``mean_rank_timeouts_last``
ranks over the tables where every model either scored or timed out, a timeout ranked last (timeouts tie
among themselves), so a model that is slow where it would lose is not flattered by leaving those tables out.
As with scores, the later record of a (split, table, model) decides whether it is a timeout.

Usage: ``python benchmarks/issue28_splits_summary.py OUT.json [--models a,b,..] [--only TASK/splitN]
[--stack NAME] [--tabflex NAME] [--alias OLD=NEW] RUN [RUN ...]``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PRIMARY = {"classification": "roc_auc", "regression": "r2"}
GBDTS = ("hist_gbdt", "xgboost", "lightgbm", "catboost")
#: a score below every real one: a timed-out fit ranks last (``mean_rank_timeouts_last``)
_TIMED_OUT = float("-inf")


def _lines(path: str) -> list[dict[str, Any]]:
    text = Path(path).read_text()
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    curves = [{"curve": t, "model": m, **p} for t, e in data.get("learning_curves", {}).items()
              for m, pts in e["points"].items() for p in pts]
    return data["records"] + curves


def _ranks(scores: dict[str, float]) -> dict[str, float]:
    """1 = best (highest); ties share the mean rank."""
    ordered = sorted(scores.values(), reverse=True)
    return {m: (ordered.index(v) + 1 + len(ordered) - ordered[::-1].index(v)) / 2 for m, v in scores.items()}


def _wins_losses(cells: list[dict[str, float]], names: list[str]) -> dict[str, dict[str, dict[str, int]]]:
    """``[a][b]``: the cells where ``a`` scores above ``b`` by more than 1e-4 (wins), below (losses), else ties."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for a in names:
        out[a] = {}
        for b in names:
            if b != a:
                d = [c[a] - c[b] for c in cells]
                out[a][b] = {"wins": sum(x > 1e-4 for x in d), "losses": sum(x < -1e-4 for x in d),
                             "ties": sum(abs(x) <= 1e-4 for x in d)}
    return out


def _stats(cells: list[dict[str, float]], names: list[str]) -> dict[str, Any]:
    """Mean score, mean rank among ``names`` and wins/losses over ``cells`` (each a model -> score dict)."""
    n = len(cells)
    return {"cells": n,
            "mean": {m: round(sum(c[m] for c in cells) / n, 4) for m in names},
            "mean_rank": {m: round(sum(_ranks({k: c[k] for k in names})[m] for c in cells) / n, 3) for m in names},
            "wins_losses": _wins_losses(cells, names)}


def _targets(cells: list[dict[str, float]], names: list[str], stack: str, tabflex: str) -> dict[str, Any]:
    """The two issue-28 rank targets over ``cells`` (every model scored in each)."""
    out: dict[str, Any] = {}
    if cells and stack in names:
        rank = {m: sum(_ranks({k: c[k] for k in names})[m] for c in cells) / len(cells) for m in names}
        best = min(rank.values())
        out["stacking_best_mean_rank"] = {
            "target": f"{stack}: the best mean rank among {len(names)} models", "cells": len(cells),
            "mean_rank": round(rank[stack], 3), "best_other": min((m for m in names if m != stack), key=rank.get),
            "best_other_mean_rank": round(min(v for m, v in rank.items() if m != stack), 3),
            "met": bool(rank[stack] == best and sum(v == best for v in rank.values()) == 1)}
    group = [tabflex, *[g for g in GBDTS if g in names]]
    if cells and tabflex in names and len(group) > 1:
        h2h = {m: sum(_ranks({k: c[k] for k in group})[m] for c in cells) / len(cells) for m in group}
        out["tabflex_rank_better_than_every_gbdt"] = {
            "target": f"{tabflex}: a better mean rank than every GBDT, ranked among {group}", "cells": len(cells),
            "gbdts_present": group[1:], "gbdts_missing": [g for g in GBDTS if g not in names],
            "head_to_head_mean_ranks": {m: round(v, 3) for m, v in h2h.items()},
            "met": all(h2h[tabflex] < h2h[g] for g in group[1:])}
    return out


def summarize(runs: list[tuple[str, dict[str, str]]], models: list[str] | None, only: str | None = None,
              stack: str = "stack-guard", tabflex: str = "tabflex") -> dict[str, Any]:
    cells: dict[tuple[str, int], dict[str, dict[str, dict[str, float]]]] = {}
    timed_out: dict[tuple[str, int], dict[str, set[str]]] = {}
    curves: dict[str, dict[str, dict[int, float]]] = {}
    sources: dict[str, str] = {}
    for path, alias in runs:
        for r in _lines(path):
            if "curve" in r:
                if r.get("status") == "ok" and only is None:
                    curves.setdefault(r["curve"], {}).setdefault(alias.get(r["model"], r["model"]), {})[
                        int(r["train_rows"])] = float(r["accuracy"])
                continue
            if only is not None and only != f"{r['task']}/split{r['split']}":
                continue
            m = alias.get(r["model"], r["model"])
            key = (r["task"], int(r["split"]))
            if r.get("status") == "timeout":  # a later timeout replaces an earlier score of the same cell
                timed_out.setdefault(key, {}).setdefault(m, set()).add(r["table"])
                cells.get(key, {}).get(r["table"], {}).pop(m, None)
                continue
            if r.get("status") != "ok":
                continue
            timed_out.get(key, {}).get(m, set()).discard(r["table"])
            cells.setdefault(key, {}).setdefault(r["table"], {})[m] = {
                "score": float(r["metrics"][PRIMARY[r["task"]]]), "fit_predict_s": float(r["fit_predict_s"])}
            sources[f"{r['task']}/split{r['split']}/{r['table']}/{m}"] = Path(path).name
    out: dict[str, Any] = {"primary_metric": PRIMARY, "per_split": {}, "over_splits": {}, "curves": {},
                           "sources": sources}
    pooled_cells: dict[str, list[dict[str, float]]] = {}
    pooled_names: dict[str, list[str]] = {}
    for (task, split), tables in sorted(cells.items()):
        names = models or sorted({m for t in tables.values() for m in t})
        names = [m for m in names if any(m in t for t in tables.values())]
        common = sorted(t for t, v in tables.items() if all(m in v for m in names))
        entry: dict[str, Any] = {"models": names, "tables_with_every_model": common,
                                 "tables_missing_a_model": {t: [m for m in names if m not in v]
                                                            for t, v in tables.items() if t not in common},
                                 "per_table": {t: {m: round(v[m]["score"], 4) for m in names if m in v}
                                               for t, v in sorted(tables.items())}}
        if common:
            entry["mean"] = {m: round(sum(tables[t][m]["score"] for t in common) / len(common), 4) for m in names}
            entry["mean_rank"] = {m: round(sum(_ranks({n: tables[t][n]["score"] for n in names})[m]
                                               for t in common) / len(common), 3) for m in names}
            entry["mean_fit_predict_s"] = {m: round(sum(tables[t][m]["fit_predict_s"] for t in common) / len(common), 1)
                                           for m in names}
            entry["best_per_table"] = {t: max(names, key=lambda m, t=t: tables[t][m]["score"]) for t in common}
            scored = [{m: tables[t][m]["score"] for m in names} for t in common]
            entry["wins_losses"] = _wins_losses(scored, names)
            entry["targets"] = _targets(scored, names, stack, tabflex)
            if pooled_names.setdefault(task, names) == names:
                pooled_cells.setdefault(task, []).extend(scored)
        outs = {m: sorted(ts) for m, ts in timed_out.get((task, split), {}).items()
                if ts and (models is None or m in models)}
        entry["timeouts"] = {m: {"count": len(ts), "tables": ts} for m, ts in sorted(outs.items())}
        if any(m in names for m in outs):
            settled = sorted(t for t, v in tables.items()
                             if all(m in v or t in outs.get(m, ()) for m in names))
            last = [{m: tables[t][m]["score"] if m in tables[t] else _TIMED_OUT for m in names} for t in settled]
            entry["mean_rank_timeouts_last"] = {
                "tables": len(settled),
                "mean_rank": {m: round(sum(_ranks(c)[m] for c in last) / len(last), 3) for m in names}}
        out["per_split"][f"{task}/split{split}"] = entry
    pooled: dict[str, dict[str, list[float]]] = {}
    for key, entry in out["per_split"].items():
        task = key.split("/")[0]
        for m, v in entry.get("mean", {}).items():
            pooled.setdefault(task, {}).setdefault(m, []).append(v)
    out["mean_of_split_means"] = {task: {m: {"splits": len(v), "mean": round(sum(v) / len(v), 4)}
                                         for m, v in ms.items()} for task, ms in pooled.items()}
    for task, scored in pooled_cells.items():
        names = pooled_names[task]
        splits = [k for k, e in out["per_split"].items() if k.startswith(f"{task}/") and e.get("models") == names]
        out["over_splits"][task] = {"splits": splits, "models": names, **_stats(scored, names),
                                    "targets": _targets(scored, names, stack, tabflex),
                                    "timeouts": {m: sum(out["per_split"][k]["timeouts"].get(m, {}).get("count", 0)
                                                        for k in splits) for m in names}}
    for table, per_model in sorted(curves.items()):
        out["curves"][table] = {}
        for m, pts in sorted(per_model.items()):
            sizes = sorted(pts)
            start = next((n for n in sizes if n >= 1000), None)
            delta = None if start is None or sizes[-1] == start else round(pts[sizes[-1]] - pts[start], 4)
            out["curves"][table][m] = {"accuracy": {str(n): round(pts[n], 4) for n in sizes},
                                       "from_rows": start, "to_rows": sizes[-1], "accuracy_change": delta}
    return out


def main(argv: list[str]) -> None:
    out, models, runs, alias, only, stack, tabflex = argv[0], None, [], {}, None, "stack-guard", "tabflex"
    rest = iter(argv[1:])
    for a in rest:
        if a == "--models":
            models = next(rest).split(",")
        elif a == "--only":
            only = next(rest)
        elif a == "--stack":
            stack = next(rest)
        elif a == "--tabflex":
            tabflex = next(rest)
        elif a == "--alias":
            old, _, new = next(rest).partition("=")
            alias = alias | {old: new}
        else:
            runs.append((a, dict(alias)))
            alias = {}
    res = summarize(runs, models, only, stack, tabflex)
    res["runs"] = [p for p, _ in runs]
    res["aliases"] = {p: a for p, a in runs if a}
    res["only"] = only
    text = json.dumps(res, indent=1)
    with open(out, "x", encoding="utf-8") as fh:  # never overwrite
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
