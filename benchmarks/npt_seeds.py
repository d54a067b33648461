"""NPT and its peers on more splits of the real-data suite's tables (issue 25: more seeds).

The 18 tables of the NPT suite run (``realdata-npt-2026-11-27-lr1e-2.json``, split 0), run again
on splits 1, 2, ... with the same protocol as ``realdata.py --train-cap 500 --test-cap 500``: the
same stratified 70/30 split of seed ``s``, 500 training and <= 500 test rows, every model seeded
with ``s``, NPT with the suite's settings (``_realdata_models.NPT_SETTINGS``). Peers: Logistic
Regression / Ridge, XGBoost, LightGBM, RandomForest (CatBoost left out for time). Each record is
appended to ``--out`` (JSONL) as soon as it is measured, so several runs (e.g. one per group of
tables) can go side by side and a cut run loses nothing.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/npt_seeds.py run --splits 1,2 \
        --tables pima,fgl_glass --out /tmp/npt-seeds-a.jsonl
    python benchmarks/npt_seeds.py summary --seed0 benchmarks/results/realdata-npt-2026-11-27-lr1e-2.json \
        /tmp/npt-seeds-*.jsonl --out benchmarks/results/npt-seeds-DATE.json   # + PNG beside it

``summary`` takes split 0 from the suite JSON (same splits, same settings, same code) and prints
per task and model the mean over tables of the primary metric per split, its mean +- sd over the
splits, and NPT's wins / ties / losses against each peer per split.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

PRIMARY = {"classification": "roc_auc", "regression": "r2"}
PEERS = ("linear", "xgboost", "lightgbm", "random_forest")
#: the 18 tables of the NPT suite run of 2026-11-27 (12 classification, 6 regression)
SUITE_TABLES = ("anes96_vote", "biopsy", "breast_cancer", "credit_card", "fair_affairs", "fgl_glass", "hawks",
                "olive_area", "penguins", "pima", "spam7", "titanic", "computers_price", "concrete", "diabetes",
                "islr_credit", "saratoga_price", "star98")


def run(args: argparse.Namespace) -> None:
    import torch
    from _realdata_models import NPT_FIT_TIMEOUT_S, NPT_SETTINGS, discover_tabzoo, peer_runners
    from _realdata_tables import get_table, load_table
    from realdata import _fit_one, make_split

    torch.set_num_threads(1)
    splits = [int(s) for s in args.splits.split(",")]
    tables = [get_table(t) for t in (args.tables.split(",") if args.tables else SUITE_TABLES)]
    models = set(args.models.split(","))
    overrides = {k: json.loads(v) for k, _, v in (item.partition("=") for item in args.set)}
    for s in splits:
        for spec in tables:
            X, y = load_table(spec)
            tr, te = make_split(y.to_numpy(), spec.task, s, 500, 500)
            labels = sorted(y.unique().tolist()) if spec.task == "classification" else None
            zoo, _ = discover_tabzoo(spec.task, {"npt": NPT_SETTINGS | overrides}, set())
            peers, _ = peer_runners(spec.task, set(PEERS))
            for runner in [r for r in zoo if r.name == "npt"] + peers:
                if runner.name not in models:
                    continue
                timeout = NPT_FIT_TIMEOUT_S if runner.name == "npt" else None
                t0 = time.time()
                res = _fit_one(runner, X, y, tr, te, labels, s, Counter(), timeout)
                name = f"{runner.name}-{args.tag}" if args.tag and runner.name == "npt" else runner.name
                rec = {"table": spec.name, "task": spec.task, "model": name, "split": s,
                       "train_rows": int(len(tr)), "test_rows": int(len(te)), "started_unix": round(t0),
                       "load_avg": os.getloadavg()[0]} | res
                with open(args.out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec, default=float) + "\n")
                print(json.dumps(rec, default=float), file=sys.stderr, flush=True)


def _load(paths: list[str], seed0: str | None) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = []
    if seed0:
        d = json.loads(Path(seed0).read_text(encoding="utf-8"))
        recs += [r for r in d["records"] if r["split"] == 0 and r["model"] in {"npt", *PEERS}]
    for p in paths:
        recs += [json.loads(line) for line in Path(p).read_text(encoding="utf-8").splitlines() if line.strip()]
    seen: dict[tuple[str, str, int], dict[str, Any]] = {}
    for r in recs:  # a later record of the same (table, model, split) replaces an earlier one
        if r.get("status") == "ok":
            seen[(r["table"], r["model"], int(r["split"]))] = r
    return list(seen.values())


def summarize(recs: list[dict[str, Any]], model: str = "npt") -> dict[str, Any]:
    """Per task: per model the per-split mean of the primary metric over the tables every model has
    on every split, its mean and sd over splits, and ``model``'s wins/ties/losses per peer per split."""
    import numpy as np

    score: dict[tuple[str, str, int, str], float] = {}
    for r in recs:
        score[(r["task"], r["table"], int(r["split"]), r["model"])] = r["metrics"][PRIMARY[r["task"]]]
    out: dict[str, Any] = {}
    for task in PRIMARY:
        models = sorted({k[3] for k in score if k[0] == task})
        splits = sorted({k[2] for k in score if k[0] == task})
        tables = sorted({k[1] for k in score if k[0] == task})
        full = [t for t in tables if all((task, t, s, m) in score for s in splits for m in models)]
        if not full:
            continue
        per_model: dict[str, Any] = {}
        for m in models:
            means = [float(np.mean([score[(task, t, s, m)] for t in full])) for s in splits]
            per_model[m] = {"per_split_mean": [round(v, 4) for v in means], "mean": round(float(np.mean(means)), 4),
                            "sd_over_splits": round(float(np.std(means, ddof=1)) if len(means) > 1 else 0.0, 4)}
        # mean rank per split (1 = best, ties averaged) over the full tables
        for s in splits:
            ranks: dict[str, list[float]] = defaultdict(list)
            for t in full:
                vals = np.array([score[(task, t, s, m)] for m in models])
                order = (-vals).argsort().argsort().astype(float) + 1
                for j, m in enumerate(models):  # average ties
                    order[j] = float(np.mean(order[vals == vals[j]]))
                    ranks[m].append(order[j])
            for m in models:
                per_model[m].setdefault("per_split_mean_rank", []).append(round(float(np.mean(ranks[m])), 2))
        for m in models:
            per_model[m]["mean_rank"] = round(float(np.mean(per_model[m]["per_split_mean_rank"])), 2)
        wins: dict[str, Any] = {}
        if model in models:
            for peer in models:
                if peer == model:
                    continue
                rows = []
                for s in splits:
                    gaps = [score[(task, t, s, model)] - score[(task, t, s, peer)] for t in full]
                    rows.append({"split": s, "wins": sum(g > 0 for g in gaps), "ties": sum(g == 0 for g in gaps),
                                 "losses": sum(g < 0 for g in gaps), "mean_gap": round(float(np.mean(gaps)), 4)})
                wins[peer] = rows
        out[task] = {"metric": PRIMARY[task], "splits": splits, "tables": full, "models": per_model,
                     f"{model}_vs_peer_per_split": wins}
    return out


def plot(summary: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in PRIMARY if t in summary]
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        per = summary[task]["models"]
        names = sorted(per, key=lambda m: -per[m]["mean"])
        for i, m in enumerate(names):
            pts = per[m]["per_split_mean"]
            ax.scatter([i] * len(pts), pts, color="tab:red" if m == "npt" else "tab:blue", alpha=0.6)
            ax.errorbar(i + 0.15, per[m]["mean"], yerr=per[m]["sd_over_splits"], fmt="k_", capsize=4)
        ax.set_xticks(range(len(names)), names, rotation=30)
        ax.set_ylabel(f"mean {summary[task]['metric']} over {len(summary[task]['tables'])} tables")
        ax.set_title(f"{task}: splits {summary[task]['splits']} (dots), mean +- sd")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--splits", default="1,2")
    r.add_argument("--tables", default=None, help="comma-separated (default: the 18 tables of the NPT suite run)")
    r.add_argument("--models", default=",".join(("npt", *PEERS)))
    r.add_argument("--out", required=True, help="JSONL, appended to")
    r.add_argument("--tag", default="", help="NPT's records are named npt-TAG (e.g. another code version)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=JSON", help="override one NPT setting")
    s = sub.add_parser("summary")
    s.add_argument("records", nargs="+", help="JSONL files of `run`")
    s.add_argument("--seed0", default=None, help="suite JSON whose split-0 records join in")
    s.add_argument("--out", default=None, help="JSON (refuses to overwrite); the PNG is written beside it")
    a = p.parse_args(argv)
    if a.cmd == "run":
        run(a)
        return
    recs = _load(a.records, a.seed0)
    summary = summarize(recs)
    doc = {"benchmark": "npt_seeds", "issue": 25, "protocol": "realdata.py --train-cap 500 --test-cap 500, "
           "splits as listed, model random_state = split", "summary": summary, "records": recs}
    text = json.dumps(doc, indent=1, default=float)
    if a.out:
        with open(a.out, "x", encoding="utf-8") as fh:
            fh.write(text)
        plot(summary, a.out.removesuffix(".json") + ".png")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
