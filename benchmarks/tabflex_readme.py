"""The real-data figures of ``packages/tabflex/README.md``, generated from committed results.

    uv run python benchmarks/tabflex_readme.py            # print the blocks
    uv run python benchmarks/tabflex_readme.py --write    # rewrite them in the README
    uv run python benchmarks/tabflex_readme.py --check    # exit 1 when the README disagrees

Each block sits in the README between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->`` and is
rendered here from JSON under ``benchmarks/results/`` (the suite's records: per table, model and split,
status and metrics), so a figure in those blocks cannot drift from its result file;
``tests/test_readme_figures.py`` fails when they disagree. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "packages" / "tabflex" / "README.md"
RESULTS = ROOT / "benchmarks" / "results"

#: block name -> (result file, task, metric, split, [(runner, label)], caption)
BLOCKS: dict[str, tuple[str, str, str, int, list[tuple[str, str]], str]] = {
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
        [("lightgbm", "LightGBM"), ("linear", "Ridge"), ("tabflex-long", "tabflex-long (the default)"),
         ("tabflex", "tabflex-icl")],
        "mean R²"),
}


def _scores(path: Path, task: str, metric: str, split: int) -> dict[str, dict[str, tuple[float, float]]]:
    """table -> runner -> (metric, fit+predict seconds) of the ``ok`` records of one split."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    for r in data["records"]:
        if r["task"] == task and r["split"] == split and r["status"] == "ok" and r["metrics"].get(metric) is not None:
            out[r["table"]][r["model"]] = (float(r["metrics"][metric]), float(r["fit_predict_s"]))
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
    file, task, metric, split, runners, caption = BLOCKS[name]
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


def blocks_in(text: str) -> dict[str, str]:
    """name -> the text between ``<!-- results:name -->`` and ``<!-- /results:name -->`` (stripped)."""
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"<!-- results:([\w-]+) -->\n(.*?)\n<!-- /results:\1 -->",
                                                                text, flags=re.S)}


def write(text: str) -> str:
    """``text`` with every known block re-rendered."""
    for name in blocks_in(text):
        if name in BLOCKS:
            text = re.sub(rf"(<!-- results:{name} -->\n).*?(\n<!-- /results:{name} -->)",
                          lambda m, n=name: m.group(1) + render_block(n) + m.group(2), text, flags=re.S)
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", action="store_true")
    p.add_argument("--check", action="store_true")
    a = p.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    if a.write:
        README.write_text(write(text), encoding="utf-8")
        return 0
    if a.check:
        stale = [n for n, body in blocks_in(text).items() if n in BLOCKS and body != render_block(n)]
        for n in stale:
            print(f"{README}: block {n} disagrees with its result file; run benchmarks/tabflex_readme.py --write",
                  file=sys.stderr)
        return 1 if stale else 0
    for name in BLOCKS:
        print(f"<!-- results:{name} -->\n{render_block(name)}\n<!-- /results:{name} -->\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
