"""The real-data figures of ``packages/tabflex/README.md``, generated from committed results.

    uv run python benchmarks/tabflex_readme.py            # print the blocks
    uv run python benchmarks/tabflex_readme.py --write    # rewrite them in the README
    uv run python benchmarks/tabflex_readme.py --check    # exit 1 when the README disagrees

Each block sits in the README between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->`` and is
rendered here from JSON under ``benchmarks/results/`` (the suite's records: per table, model and split,
status and metrics; a cut run's ``.jsonl`` log too), so a figure in those blocks cannot drift from its
result file. The TabFlex row of the top-level ``README.md`` is rendered the same way (``--write`` rewrites it).
``tests/test_readme_figures.py`` fails when either disagrees. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _readme_blocks import blocks_in, stale_blocks, write_blocks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "packages" / "tabflex" / "README.md"
RESULTS = ROOT / "benchmarks" / "results"

#: the stacking re-check: peers (2026-11-23), the default TabFlex (2026-11-27), the stacked runs (2026-11-28)
STACK_FILES = ("realdata-2026-11-23.json", "realdata-2026-11-27-gpu-candidates.json",
               "realdata-2026-11-28-stack-default.json", "realdata-2026-11-28-stack-catboost.json")
#: the out-of-fold guard and ``booster="auto"`` (2026-11-28, after the two stacked runs above), same splits
STACK_GUARD_FILES = STACK_FILES + ("realdata-2026-11-28-stack-guard.json", "realdata-2026-11-28-stack-auto.json",
                                   "realdata-2026-11-28-stack-noguard.json")
#: issue 28, the targets on 3 splits: the peers' rows of splits 0-2 (2026-11-23; CatBoost there has split 0 and
#: most of split 1), then the TabFlex default, `StackingClassifier()` and CatBoost rerun on splits 0-2 (2026-11-29,
#: ``--timeout catboost=60``; the runner ``stack-default`` of those runs is the guarded default, ``stack-guard``),
#: then CatBoost on ratdat_genus, the cells it timed out on at 60 s, with a 420 s cap
SPLIT_FILES = ("realdata-2026-11-23.json", "realdata-2026-11-29-s0-stack-tabflex-cb.json",
               "realdata-2026-11-29-s12-stack-tabflex-cb.json", "realdata-2026-11-29-catboost-ratdat-s012.json")
_SPLIT_RUNNERS = [
    ("stack-guard", "`StackingClassifier()` defaults (guarded, HistGradientBoosting)"),
    ("tabflex", "`TabFlexClassifier()` defaults (tabflex-long)"), ("catboost", "CatBoost"), ("lightgbm", "LightGBM"),
    ("xgboost", "XGBoost"), ("hist_gbdt", "HistGradientBoosting"), ("random_forest", "RandomForest"),
    ("linear", "LogisticRegression")]
#: the runners of the guard blocks (without CatBoost for the 29 tables its peer rows miss 3 of)
_GUARD_RUNNERS = [
    ("stack-auto", "`StackingClassifier(booster=\"auto\")` (guarded)"),
    ("stack-guard", "`StackingClassifier()` defaults (guarded, HistGradientBoosting)"),
    ("stack-noguard", "`StackingClassifier(guard=False)` (bagged HistGradientBoosting)"),
    ("stack-cb", "before the guard: stack (features) on CatBoost"), ("stack-default", "before the guard: defaults then"),
    ("catboost", "CatBoost"), ("tabflex", "tabflex-long (the TabFlex default)"), ("lightgbm", "LightGBM"),
    ("xgboost", "XGBoost"), ("hist_gbdt", "HistGradientBoosting"), ("random_forest", "RandomForest"),
    ("linear", "LogisticRegression")]

#: block name -> (result file(s), task, metric, split(s), [(runner, label)], caption); with several files
#: or splits, a later file's record of the same (table, split, runner) replaces an earlier one, and the means
#: run over the (table, split) cells where every runner has a result. A ``.jsonl`` file is a cut run's log.
BLOCKS: dict[str, tuple[str | tuple[str, ...], str, str, int | tuple[int, ...], list[tuple[str, str]], str]] = {
    "checkpoints-6": (
        "realdata-2026-11-27-long.json", "classification", "roc_auc", 0,
        [("stack-avg-tabflex-long", "stack-avg, tabflex-long"), ("stack-tabflex-long", "stack (features), tabflex-long"),
         ("stack-tabflex", "stack (features), tabflex-icl"), ("tabflex-long", "tabflex-long (the default)"),
         ("tabflex-icl", "tabflex-icl"), ("lightgbm", "LightGBM"), ("xgboost", "XGBoost"),
         ("linear", "LogisticRegression")],
        "mean ROC-AUC"),
    "finetune": (
        "realdata-2026-11-27-long.json", "classification", "roc_auc", 0,
        [("tabflex-long-ft", "tabflex-long, fine-tuned"), ("tabflex-icl-ft", "tabflex-icl, fine-tuned"),
         ("tabflex-long", "tabflex-long (the default)"), ("tabflex-icl", "tabflex-icl"), ("lightgbm", "LightGBM"),
         ("xgboost", "XGBoost")],
        "mean ROC-AUC"),
    "checkpoints-29": (
        "realdata-2026-11-27-gpu-candidates.json", "classification", "roc_auc", 0,
        [("tabflex-gpu-800", "tabflex-long (GPU step 800)"), ("tabflex-icl", "tabflex-icl"), ("lightgbm", "LightGBM"),
         ("linear", "LogisticRegression"), ("xgboost", "XGBoost")],
        "mean ROC-AUC"),
    "regression-11": (
        "realdata-2026-11-27-regression.json", "regression", "r2", 0,
        [("lightgbm", "LightGBM"), ("linear", "Ridge"), ("tabflex-long", "tabflex-long, untuned"),
         ("tabflex", "tabflex-icl")],
        "mean R²"),
    "suite-29x3": (
        "realdata-2026-11-23-tflocal.json", "classification", "roc_auc", (0, 1, 2),
        [("tabflex", "tabflex (`tabflex-icl`, the default then)"), ("linear", "LogisticRegression"),
         ("xgboost", "XGBoost"), ("lightgbm", "LightGBM"), ("hist_gbdt", "HistGradientBoosting"),
         ("random_forest", "RandomForest")],
        "mean ROC-AUC"),
    "suite-regression-11x3": (
        "realdata-2026-11-23-tflocal.json", "regression", "r2", (0, 1, 2),
        [("tabflex", "tabflex (`tabflex-icl`, untuned, the default then)"), ("linear", "Ridge"), ("xgboost", "XGBoost"),
         ("hist_gbdt", "HistGradientBoosting")],
        "mean R²"),
    "regression-ft": (
        ("realdata-2026-11-27-regression-ft-s0.json", "realdata-2026-11-27-regression-ft-s12.json"),
        "regression", "r2", (0, 1, 2),
        [("tabflex-long-ft", "tabflex-long, fine-tuned (`fine_tune=True`, the default now)"), ("linear", "Ridge"),
         ("lightgbm", "LightGBM"), ("xgboost", "XGBoost"), ("tabflex", "tabflex-long, untuned (`fine_tune=False`)")],
        "mean R²"),
    "hard-6x3": (
        ("realdata-2026-11-27-long.json", "realdata-2026-11-27-hard-split1-cut.jsonl",
         "realdata-2026-11-27-hard-split2-cut.jsonl", "realdata-2026-11-27-hard2-s012.json"),
        "classification", "roc_auc", (0, 1, 2),
        [("tabflex", "tabflex-long (the default)"), ("tabflex-long-ft", "tabflex-long, fine-tuned"),
         ("stack-tabflex-long", "stack (features), tabflex-long"), ("lightgbm", "LightGBM"), ("xgboost", "XGBoost")],
        "mean ROC-AUC"),
    "timing-3000": (
        "realdata-2026-11-27-timing-2threads.json", "classification", "roc_auc", 0,
        [("tabflex", "tabflex-long (the default), 2 threads"), ("lightgbm", "LightGBM"), ("xgboost", "XGBoost")],
        "mean ROC-AUC"),
    # issue 28 Deliver 7, re-checked on today's defaults: the stacked rows of 2026-11-28 beside the committed peer
    # rows of the same splits (the peers are seeded: their rows are identical across runs)
    "stacking-26": (
        STACK_FILES, "classification", "roc_auc", (0,),
        [("stack-cb", "stack (features) on CatBoost, `booster=CatBoostClassifier(...)`"),
         ("stack-default", "stack (features), `StackingClassifier()` defaults before the guard"), ("catboost", "CatBoost"),
         ("tabflex", "tabflex-long (the TabFlex default)"), ("lightgbm", "LightGBM"), ("xgboost", "XGBoost"),
         ("hist_gbdt", "HistGradientBoosting"), ("random_forest", "RandomForest"), ("linear", "LogisticRegression")],
        "mean ROC-AUC"),
    "stacking-29": (
        STACK_FILES, "classification", "roc_auc", (0,),
        [("stack-cb", "stack (features) on CatBoost"), ("stack-default", "stack (features), defaults"),
         ("tabflex", "tabflex-long (the TabFlex default)"), ("lightgbm", "LightGBM"), ("xgboost", "XGBoost"),
         ("hist_gbdt", "HistGradientBoosting"), ("random_forest", "RandomForest"), ("linear", "LogisticRegression")],
        "mean ROC-AUC"),
    # issue 28 Deliver 7: the out-of-fold guard (the defaults now) and booster="auto", beside the runs before it
    "stacking-guard-26": (STACK_GUARD_FILES, "classification", "roc_auc", (0,), _GUARD_RUNNERS, "mean ROC-AUC"),
    "stacking-guard-29": (STACK_GUARD_FILES, "classification", "roc_auc", (0,),
                          [r for r in _GUARD_RUNNERS if r[0] != "catboost"], "mean ROC-AUC"),
    # issue 28: both rank targets on splits 0, 1 and 2 (issue28-2026-11-29-splits012.json: W-L, targets per split;
    # -cap60.json: the same without the 420 s CatBoost cells, its timeouts counted and ranked last)
    "targets-3splits": (SPLIT_FILES, "classification", "roc_auc", (0, 1, 2), _SPLIT_RUNNERS, "mean ROC-AUC"),
}
#: block -> file -> {runner name in that file: name in the block}: in ``-long.json`` the default checkpoint ran
#: under its explicit name ``tabflex-long`` (later runs name the default ``tabflex``)
ALIASES: dict[str, dict[str, dict[str, str]]] = {
    "hard-6x3": {"realdata-2026-11-27-long.json": {"tabflex-long": "tabflex", "tabflex": "tabflex-unused"}},
    **{b: {"realdata-2026-11-23.json": {"tabflex": "tabflex-icl-then"},
           "realdata-2026-11-27-gpu-candidates.json": {"tabflex-gpu-800": "tabflex"}}
       for b in ("stacking-26", "stacking-29", "stacking-guard-26", "stacking-guard-29")},
    **{b: {"realdata-2026-11-23.json": {"tabflex": "tabflex-icl-then"},
           "realdata-2026-11-29-s0-stack-tabflex-cb.json": {"stack-default": "stack-guard"},
           "realdata-2026-11-29-s12-stack-tabflex-cb.json": {"stack-default": "stack-guard"}}
       for b in ("targets-3splits",)}}

#: curve block name -> (result files, runners, from rows, to rows); accuracy on the fixed curve test rows
CURVES: dict[str, tuple[tuple[str, ...], list[tuple[str, str]], int, int]] = {
    "curves-50k": (
        ("realdata-2026-11-27-curves-50k.json",),
        [("tabflex", "tabflex-long (default)"), ("lightgbm", "LightGBM"), ("xgboost", "XGBoost")], 1000, 50000),
    "curves-50k-settings": (
        ("realdata-2026-11-27-curves-50k.json", "realdata-2026-11-27-curves-50k-local.json",
         "realdata-2026-11-27-curves-50k-ft.json", "realdata-2026-11-28-curves-50k-local8k.json"),
        [("tabflex", "default (local+global, 2,048)"), ("tf-local", "local, 2,048"), ("tf-local1k", "local, 1,024"),
         ("tf-lg1k", "local+global, 1,024"), ("tf-ft", "default + `fine_tune=True`"),
         ("tf-lg8k", "local+global, 8,192")], 1000, 50000),
}


def _lines(path: Path) -> list[dict[str, Any]]:
    """The records and learning-curve points of a finished run (JSON) or of a cut run's log (``.jsonl``);
    a curve point carries ``curve`` (its table) and ``model``."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    points = [{"curve": t, "model": m, **pt} for t, e in data.get("learning_curves", {}).items()
              for m, pts in e["points"].items() for pt in pts]
    return list(data["records"]) + points


def _scores(path: Path, task: str, metric: str, split: int,
            alias: dict[str, str] | None = None) -> dict[str, dict[str, tuple[float, float]]]:
    """table -> runner -> (metric, fit+predict seconds) of the ``ok`` records of one split (runners renamed
    by ``alias``)."""
    alias = alias or {}
    out: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    for r in _lines(path):
        if ("curve" not in r and r["task"] == task and r["split"] == split and r["status"] == "ok"
                and r["metrics"].get(metric) is not None):
            out[r["table"]][alias.get(r["model"], r["model"])] = (float(r["metrics"][metric]),
                                                                  float(r["fit_predict_s"]))
    return out


def _cells(files: tuple[str, ...], task: str, metric: str, splits: tuple[int, ...],
           aliases: dict[str, dict[str, str]]) -> dict[tuple[str, int], dict[str, tuple[float, float]]]:
    """(table, split) -> runner -> (metric, seconds), later files replacing earlier ones; a later file's
    timeout (``status == "timeout"``) of a (table, split, runner) removes an earlier file's score of it."""
    out: dict[tuple[str, int], dict[str, tuple[float, float]]] = defaultdict(dict)
    for f in files:
        alias = aliases.get(f) or {}
        for r in _lines(RESULTS / f):
            if "curve" not in r and r["task"] == task and r["split"] in splits and r["status"] == "timeout":
                out[(r["table"], r["split"])].pop(alias.get(r["model"], r["model"]), None)
        for s in splits:
            for t, by in _scores(RESULTS / f, task, metric, s, alias).items():
                out[(t, s)].update(by)
    return out


def _ranks(values: dict[str, float]) -> dict[str, float]:
    """1 = best (largest), ties share their mean rank."""
    order = sorted(values, key=lambda k: -values[k])
    ranks: dict[str, float] = {}
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def render_block(name: str) -> str:
    """The markdown of block ``name``: one row per runner over the tables where every runner has a result."""
    if name in CURVES:
        return render_curves(name)
    file, task, metric, split, runners, caption = BLOCKS[name]
    if not isinstance(file, str) or not isinstance(split, int):
        return _render_cells(name)
    scores = _scores(RESULTS / file, task, metric, split)
    names = [r for r, _ in runners]
    tables = sorted(t for t, by in scores.items() if all(r in by for r in names))
    if not tables:
        raise ValueError(f"{file}: no {task} table has a split-{split} result for all of {names}")
    rank_sum: dict[str, float] = defaultdict(float)
    for t in tables:
        for r, rank in _ranks({r: scores[t][r][0] for r in names}).items():
            rank_sum[r] += rank
    lines = [f"`benchmarks/results/{file}`, split {split}, the {len(tables)} {task} tables every runner below "
             f"finished ({', '.join(tables)}):", "",
             f"| model | {caption} | mean rank ({len(names)} runners) | mean fit + predict s |",
             "| --- | --- | --- | --- |"]
    for r, label in runners:
        mean = sum(scores[t][r][0] for t in tables) / len(tables)
        secs = sum(scores[t][r][1] for t in tables) / len(tables)
        lines.append(f"| {label} | {mean:.4f} | {rank_sum[r] / len(tables):.2f} | {secs:.1f} |")
    return "\n".join(lines)


def _render_cells(name: str) -> str:
    """A block over several files and/or splits: means over the (table, split) cells every runner has."""
    file, task, metric, split, runners, caption = BLOCKS[name]
    files = (file,) if isinstance(file, str) else file
    splits = (split,) if isinstance(split, int) else split
    cells = _cells(files, task, metric, splits, ALIASES.get(name, {}))
    names = [r for r, _ in runners]
    keys = sorted(k for k, by in cells.items() if all(r in by for r in names))
    if not keys:
        raise ValueError(f"{files}: no {task} (table, split) has a result for all of {names}")
    tables = sorted({t for t, _ in keys})
    rank_sum: dict[str, float] = defaultdict(float)
    for k in keys:
        for r, rank in _ranks({r: cells[k][r][0] for r in names}).items():
            rank_sum[r] += rank
    per_split = {s: [k for k in keys if k[1] == s] for s in splits}
    src = ", ".join(f"`benchmarks/results/{f}`" for f in files)
    lines = [f"{src}; splits {', '.join(map(str, splits))}: the {len(keys)} ({task} table, split) cells every "
             f"runner below finished, over {len(tables)} tables ({', '.join(tables)}):", "",
             f"| model | {caption} | " + " | ".join(f"split {s} ({len(per_split[s])})" for s in splits)
             + f" | mean rank ({len(names)} runners) | cells above {runners[0][1]} | mean fit + predict s |",
             "| --- " * (5 + len(splits)) + "|"]
    for r, label in runners:
        mean = sum(cells[k][r][0] for k in keys) / len(keys)
        by_split = [sum(cells[k][r][0] for k in per_split[s]) / len(per_split[s]) if per_split[s] else float("nan")
                    for s in splits]
        secs = sum(cells[k][r][1] for k in keys) / len(keys)
        first = runners[0][0]
        wins = sum(cells[k][r][0] > cells[k][first][0] for k in keys)
        lines.append(f"| {label} | {mean:.4f} | " + " | ".join(f"{v:.4f}" for v in by_split)
                     + f" | {rank_sum[r] / len(keys):.2f} | {'-' if r == first else f'{wins}/{len(keys)}'} "
                     f"| {secs:.1f} |")
    return "\n".join(lines)


def render_curves(name: str) -> str:
    """Accuracy at ``lo`` training (context) rows and at the largest size up to ``hi`` (a table's whole
    training pool when it is smaller), per curve table and runner, and the change."""
    files, runners, lo, hi = CURVES[name]
    acc: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for f in files:
        for r in _lines(RESULTS / f):
            if "curve" in r and r.get("status") == "ok" and lo <= int(r["train_rows"]) <= hi:
                acc[r["curve"]][r["model"]][int(r["train_rows"])] = float(r["accuracy"])
    tables = sorted(t for t, by in acc.items() if all(lo in by[m] and len(by[m]) > 1 for m, _ in runners))
    if not tables:
        raise ValueError(f"{files}: no curve has points from {lo} rows for all of {[m for m, _ in runners]}")
    src = ", ".join(f"`benchmarks/results/{f}`" for f in files)
    lines = [f"{src}: accuracy on each curve's fixed test rows at {lo:,} training (context) rows and at the largest "
             f"size up to {hi:,} (the table's whole training pool when smaller):", "",
             "| table | largest size | " + " | ".join(f"{label}: {lo:,} -> largest (change)" for _, label in runners)
             + " |", "| --- " * (2 + len(runners)) + "|"]
    gains: dict[str, int] = defaultdict(int)
    for t in tables:
        top = min(max(acc[t][m]) for m, _ in runners)
        row = []
        for m, _ in runners:
            d = acc[t][m][top] - acc[t][m][lo]
            gains[m] += d >= 0.02
            row.append(f"{acc[t][m][lo]:.4f} -> {acc[t][m][top]:.4f} ({100 * d:+.2f} pts)")
        lines.append(f"| {t} | {top:,} | " + " | ".join(row) + " |")
    lines.append("| tables gaining >= 2 points | | " + " | ".join(f"{gains[m]} of {len(tables)}" for m, _ in runners)
                 + " |")
    return "\n".join(lines)


def _complete_cells(name: str) -> tuple[list[str], list[dict[str, float]]]:
    """Block ``name``'s runners, and per cell where every runner has a result (as rendered) runner -> score."""
    file, task, metric, split, runners, _ = BLOCKS[name]
    files = (file,) if isinstance(file, str) else file
    cells = _cells(files, task, metric, (split,) if isinstance(split, int) else split, ALIASES.get(name, {}))
    names = [r for r, _ in runners]
    return names, [{r: by[r][0] for r in names} for by in cells.values() if all(r in by for r in names)]


def block_means(name: str) -> dict[str, float]:
    """runner -> its mean over the cells of block ``name`` where every runner has a result (as rendered)."""
    names, rows = _complete_cells(name)
    return {r: sum(row[r] for row in rows) / len(rows) for r in names}


def block_ranks(name: str) -> dict[str, float]:
    """runner -> its mean rank over the cells of block ``name`` where every runner has a result (as rendered)."""
    names, rows = _complete_cells(name)
    total: dict[str, float] = defaultdict(float)
    for row in rows:
        for r, rank in _ranks(row).items():
            total[r] += rank
    return {r: total[r] / len(rows) for r in names}


#: the TabFlex row of the top-level README's package table; its figures come from the blocks above
ROOT_README = ROOT / "README.md"
ROOT_ROW = (
    "| `tabzoo-tabflex` | TabFlex: in-context learning with linear attention | shipped checkpoints `tabflex-small` "
    "and `tabflex-icl`, small CPU-trained models (not the paper's), and `tabflex-long`, the `\"auto\"` default "
    "(`tabflex-icl` pretrained further on one H200 with contexts up to 16,384 rows). Real-data suite: mean "
    "ROC-AUC {auc_long} on 29 classification tables (split 0) vs LightGBM {auc_lgbm}, LogisticRegression {auc_lr}, "
    "XGBoost {auc_xgb}; regression (fine-tuned by default): mean R² {r2_ft} over 11 tables x 3 splits vs Ridge "
    "{r2_ridge}, LightGBM {r2_lgbm} (untuned {r2_plain}); fit + predict {secs} s on average per 3,000-row table "
    "(2 threads, load ~3.4). On splits 0-2 ({cells3} table x split cells with CatBoost): mean ROC-AUC {auc3_tf} vs "
    "CatBoost {auc3_cb}, LightGBM {auc3_lgbm}, XGBoost {auc3_xgb}, mean rank {rk3_tf} of 8 vs CatBoost {rk3_cb}; the "
    "stacking estimator `StackingClassifier(TabFlexClassifier())` {auc3_st}, the best mean rank ({rk3_st}). "
    "Generated from `benchmarks/results/` in `packages/tabflex/README.md` |")


def root_row() -> str:
    """The top-level README's TabFlex row, its figures computed from the result files."""
    auc, r2, t = block_means("checkpoints-29"), block_means("regression-ft"), "timing-3000"
    file = BLOCKS[t][0]
    assert isinstance(file, str)
    secs = [v[1] for by in _scores(RESULTS / file, "classification", "roc_auc", 0).values()
            for k, v in by.items() if k == "tabflex"]
    return ROOT_ROW.format(auc_long=f"{auc['tabflex-gpu-800']:.4f}", auc_lgbm=f"{auc['lightgbm']:.4f}",
                           auc_lr=f"{auc['linear']:.4f}", auc_xgb=f"{auc['xgboost']:.4f}",
                           r2_ft=f"{r2['tabflex-long-ft']:.4f}", r2_ridge=f"{r2['linear']:.4f}",
                           r2_lgbm=f"{r2['lightgbm']:.4f}", r2_plain=f"{r2['tabflex']:.4f}",
                           secs=f"{sum(secs) / len(secs):.1f}", **_root_3splits())


def _root_3splits() -> dict[str, str]:
    """The root row's figures over splits 0-2 (block ``targets-3splits``)."""
    name = "targets-3splits"
    auc, rank = block_means(name), block_ranks(name)
    n = len(_complete_cells(name)[1])
    return {"cells3": str(n), "auc3_tf": f"{auc['tabflex']:.4f}", "auc3_cb": f"{auc['catboost']:.4f}",
            "auc3_lgbm": f"{auc['lightgbm']:.4f}", "auc3_xgb": f"{auc['xgboost']:.4f}",
            "auc3_st": f"{auc['stack-guard']:.4f}", "rk3_tf": f"{rank['tabflex']:.2f}",
            "rk3_cb": f"{rank['catboost']:.2f}", "rk3_st": f"{rank['stack-guard']:.2f}"}


def root_row_in(text: str) -> str:
    """The line of the top-level README that starts the TabFlex row."""
    return next(line for line in text.splitlines() if line.startswith("| `tabzoo-tabflex` |"))


def write(text: str) -> str:
    """``text`` with every known block re-rendered."""
    return write_blocks(text, (*BLOCKS, *CURVES), render_block)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", action="store_true")
    p.add_argument("--check", action="store_true")
    a = p.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    root = ROOT_README.read_text(encoding="utf-8")
    if a.write:
        README.write_text(write(text), encoding="utf-8")
        ROOT_README.write_text(root.replace(root_row_in(root), root_row()), encoding="utf-8")
        return 0
    if a.check:
        stale = [n for n in stale_blocks(text, (*BLOCKS, *CURVES), render_block) if n in blocks_in(text)]
        if root_row_in(root) != root_row():
            print(f"{ROOT_README}: the tabzoo-tabflex row disagrees with the result files; run "
                  "benchmarks/tabflex_readme.py --write", file=sys.stderr)
            stale.append("root-row")
        for n in stale:
            print(f"{README}: block {n} disagrees with its result file; run benchmarks/tabflex_readme.py --write",
                  file=sys.stderr)
        return 1 if stale else 0
    for name in (*BLOCKS, *CURVES):
        print(f"<!-- results:{name} -->\n{render_block(name)}\n<!-- /results:{name} -->\n")
    print(root_row())
    return 0


if __name__ == "__main__":
    sys.exit(main())
