"""Issue 28: join ``benchmarks/realdata.py`` runs (finished JSON or a cut run's ``.partial.jsonl``) per split.

The runs of a loaded 2-core machine are cut into short invocations (``--first-split``, ``--no-main``); this
joins their records: per split and task, the primary metric (ROC-AUC / R²) per table and model, the means
and mean ranks over the tables where every named model has a result, and per (split, table) who won; for
learning curves, accuracy per context size and the change from the smallest size >= 1,000 rows to the
largest. A later record of the same (split, table, model) replaces an earlier one. ``--alias OLD=NEW``
renames a model of the run listed next (e.g. the runner ``tabflex-long`` of an older run is the
default ``tabflex`` now). ``--only TASK/splitN`` (e.g. ``classification/split0``) keeps that task and split
only (no curves), when a run also holds splits or tasks that the comparison is not about.

Usage: ``python benchmarks/issue28_splits_summary.py OUT.json [--models a,b,..] [--only TASK/splitN] [--alias OLD=NEW]
RUN [RUN ...]``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PRIMARY = {"classification": "roc_auc", "regression": "r2"}


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


def summarize(runs: list[tuple[str, dict[str, str]]], models: list[str] | None, only: str | None = None) -> dict[str, Any]:
    cells: dict[tuple[str, int], dict[str, dict[str, dict[str, float]]]] = {}
    curves: dict[str, dict[str, dict[int, float]]] = {}
    sources: dict[str, str] = {}
    for path, alias in runs:
        for r in _lines(path):
            if "curve" in r:
                if r.get("status") == "ok" and only is None:
                    curves.setdefault(r["curve"], {}).setdefault(alias.get(r["model"], r["model"]), {})[
                        int(r["train_rows"])] = float(r["accuracy"])
                continue
            if r.get("status") != "ok" or (only is not None and only != f"{r['task']}/split{r['split']}"):
                continue
            m = alias.get(r["model"], r["model"])
            key = (r["task"], int(r["split"]))
            cells.setdefault(key, {}).setdefault(r["table"], {})[m] = {
                "score": float(r["metrics"][PRIMARY[r["task"]]]), "fit_predict_s": float(r["fit_predict_s"])}
            sources[f"{r['task']}/split{r['split']}/{r['table']}/{m}"] = Path(path).name
    out: dict[str, Any] = {"primary_metric": PRIMARY, "per_split": {}, "curves": {}, "sources": sources}
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
        out["per_split"][f"{task}/split{split}"] = entry
    pooled: dict[str, dict[str, list[float]]] = {}
    for key, entry in out["per_split"].items():
        task = key.split("/")[0]
        for m, v in entry.get("mean", {}).items():
            pooled.setdefault(task, {}).setdefault(m, []).append(v)
    out["mean_of_split_means"] = {task: {m: {"splits": len(v), "mean": round(sum(v) / len(v), 4)}
                                         for m, v in ms.items()} for task, ms in pooled.items()}
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
    out, models, runs, alias, only = argv[0], None, [], {}, None
    rest = iter(argv[1:])
    for a in rest:
        if a == "--models":
            models = next(rest).split(",")
        elif a == "--only":
            only = next(rest)
        elif a == "--alias":
            old, _, new = next(rest).partition("=")
            alias = alias | {old: new}
        else:
            runs.append((a, dict(alias)))
            alias = {}
    res = summarize(runs, models, only)
    res["runs"] = [p for p, _ in runs]
    res["only"] = only
    text = json.dumps(res, indent=1)
    with open(out, "x", encoding="utf-8") as fh:  # never overwrite
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
