"""The real-data suite figures of ``packages/npt/README.md``, generated from a committed result file.

    uv run python benchmarks/npt_readme.py            # print the blocks
    uv run python benchmarks/npt_readme.py --write    # rewrite them in the README
    uv run python benchmarks/npt_readme.py --check    # exit 1 when the README disagrees

Each block sits in the README between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->`` (the
markers of ``benchmarks/tabflex_readme.py``, whose parser and ranking this reuses) and is rendered
from the suite's records (``benchmarks/realdata.py``: per table, model and split, status, metrics and
seconds). Only the (table, split) pairs where every model of the block finished are counted, so
every model is compared on the same pairs. ``tests/test_npt_readme_figures.py`` fails when a block
and its JSON disagree. Standard library only.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _readme_blocks import block_cli, stale_blocks, write_blocks  # noqa: E402
from tabflex_readme import _ranks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "packages" / "npt" / "README.md"
RESULTS = ROOT / "benchmarks" / "results"
#: the suite with NPT's estimator defaults (issue 25, Deliver 6), and the earlier run with the cut budget
SUITE = "realdata-npt-2026-11-28-defaults-3split.json"
SUITE_CUT = "realdata-npt-2026-11-27-3split.json"
PEERS = {"classification": [("linear", "LogisticRegression")], "regression": [("linear", "Ridge")]}
COMMON = [("random_forest", "RandomForest"), ("xgboost", "XGBoost"), ("lightgbm", "LightGBM"),
          ("catboost", "CatBoost"), ("tabflex", "TabFlex")]
METRIC = {"classification": ("roc_auc", "ROC-AUC"), "regression": ("r2", "R²")}
#: candidate step rules for small regression tables, split 0 (``benchmarks/npt_diagnose.py`` records)
RULES = "npt-small-rules-2026-11-28.jsonl"
RULE_TABLES = ("star98", "diabetes", "islr_credit", "concrete", "saratoga_price", "computers_price")
#: block name -> (result file, task); task "rules": the candidate table of :func:`render_rules`
BLOCKS: dict[str, tuple[str, str]] = {"suite-classification": (SUITE, "classification"),
                                      "suite-regression": (SUITE, "regression"),
                                      "suite-cut-classification": (SUITE_CUT, "classification"),
                                      "suite-cut-regression": (SUITE_CUT, "regression"),
                                      "suite-regression-rules": (RULES, "rules")}


def _pairs(path: Path, task: str, metric: str) -> dict[tuple[str, int], dict[str, tuple[float, float]]]:
    """(table, split) -> model -> (metric, fit+predict seconds) of the ``ok`` records."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[tuple[str, int], dict[str, tuple[float, float]]] = defaultdict(dict)
    for r in data["records"]:
        if r["task"] == task and r["status"] == "ok" and r["metrics"].get(metric) is not None:
            out[(r["table"], int(r["split"]))][r["model"]] = (float(r["metrics"][metric]), float(r["fit_predict_s"]))
    return out


def render_rules(file: str) -> str:
    """Per candidate (the ``tag`` of each record): per table the validation loss of the kept
    weights / the R² on the training pool's unread rows / the test R², then the means."""
    recs: dict[str, dict[str, dict]] = defaultdict(dict)
    for line in (RESULTS / file).read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            recs[r["tag"]][r["table"]] = r
    tags = [t for t in recs if all(tab in recs[t] for tab in RULE_TABLES)]
    spare = [tab for tab in RULE_TABLES if "spare" in recs[tags[0]][tab]]
    lines = [f"`benchmarks/results/{file}`: split 0 of the {len(RULE_TABLES)} suite regression tables, the suite's "
             "training rows; per table the validation loss of the kept weights (standardised MSE on the "
             "early-stopping rows) / the R² on the training pool's rows the fit does not read "
             f"({', '.join(spare)}; '-' where the pool is all used) / the test R² (not used for the choice).", "",
             f"| rule | {' | '.join(RULE_TABLES)} | mean validation loss | mean unread-rows R² | mean test R² "
             "| s per fit |", "| --- |" + " --- |" * (len(RULE_TABLES) + 4)]
    for tag in tags:
        d = recs[tag]
        cells = [f"{d[t]['val_loss_kept']:.3f} / " + (f"{d[t]['spare']['r2']:.3f}" if t in spare else "-")
                 + f" / {d[t]['test']['r2']:.3f}" for t in RULE_TABLES]
        lines.append(f"| `{tag}` | {' | '.join(cells)} | {statistics.fmean(d[t]['val_loss_kept'] for t in RULE_TABLES):.4f} "
                     f"| {statistics.fmean(d[t]['spare']['r2'] for t in spare):.4f} "
                     f"| {statistics.fmean(d[t]['test']['r2'] for t in RULE_TABLES):.4f} "
                     f"| {statistics.fmean(d[t]['fit_s'] for t in RULE_TABLES):.0f} |")
    return "\n".join(lines)


def render_block(name: str) -> str:
    """The markdown of block ``name`` (see the module docstring)."""
    file, task = BLOCKS[name]
    if task == "rules":
        return render_rules(file)
    metric, label = METRIC[task]
    runners = [("npt", "**NPT**")] + PEERS[task] + COMMON
    names = [r for r, _ in runners]
    scores = _pairs(RESULTS / file, task, metric)
    pairs = sorted(p for p, by in scores.items() if all(r in by for r in names))
    if not pairs:
        raise ValueError(f"{file}: no {task} (table, split) has a result for all of {names}")
    splits = sorted({s for _, s in pairs})
    tables = sorted({t for t, _ in pairs})
    rank_sum: dict[str, float] = defaultdict(float)
    for p in pairs:
        for r, rank in _ranks({r: scores[p][r][0] for r in names}).items():
            rank_sum[r] += rank
    lines = [f"`benchmarks/results/{file}`: {len(tables)} {task} tables x splits {splits}, the {len(pairs)} "
             f"(table, split) pairs where all {len(names)} models finished ({', '.join(tables)}). Mean "
             f"{label} per split (over its tables), then the mean over the splits; rank and wins over the pairs.",
             "", f"| model | mean {label} | per split | mean rank of {len(names)} | NPT wins-ties-losses vs it "
             "| mean s per fit |", "| --- | --- | --- | --- | --- | --- |"]
    means: dict[str, float] = {}
    for r, lab in runners:
        per_split = [statistics.fmean(scores[p][r][0] for p in pairs if p[1] == s) for s in splits]
        means[r] = statistics.fmean(per_split)
        secs = statistics.fmean(scores[p][r][1] for p in pairs)
        if r == "npt":
            record = "-"
        else:
            gaps = [scores[p]["npt"][0] - scores[p][r][0] for p in pairs]
            record = f"{sum(g > 0 for g in gaps)}-{sum(g == 0 for g in gaps)}-{sum(g < 0 for g in gaps)}"
        lines.append(f"| {lab} | {statistics.fmean(per_split):.4f} | {' / '.join(f'{v:.3f}' for v in per_split)} "
                     f"| {rank_sum[r] / len(pairs):.2f} | {record} | {secs:.1f} |")
    rank = {r: rank_sum[r] / len(pairs) for r in names}
    linear = PEERS[task][0][1]
    lines += ["", f"Targets: mean {label} above {linear}'s: {'met' if means['npt'] > means['linear'] else 'not met'} "
              f"({means['npt']:.4f} vs {means['linear']:.4f}); mean rank better than XGBoost's: "
              f"{'met' if rank['npt'] < rank['xgboost'] else 'not met'} ({rank['npt']:.2f} vs {rank['xgboost']:.2f})."]
    return "\n".join(lines)


def write(text: str) -> str:
    """``text`` with every block of :data:`BLOCKS` re-rendered."""
    return write_blocks(text, BLOCKS, render_block)


def stale(text: str) -> list[str]:
    """The blocks of :data:`BLOCKS` missing from ``text`` or disagreeing with their result file."""
    return stale_blocks(text, BLOCKS, render_block)


def main(argv: list[str] | None = None) -> int:
    """Print the blocks; ``--write`` rewrites them in the README; ``--check`` exits 1 on a stale one."""
    return block_cli(argv, README, BLOCKS, render_block, __doc__, "benchmarks/npt_readme.py")


if __name__ == "__main__":
    sys.exit(main())
