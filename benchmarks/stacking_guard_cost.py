"""What the stacking estimator's out-of-fold guard and ``booster="auto"`` cost (issue 28 item 7).

``StackingClassifier(TabFlexClassifier())`` with ``guard=False`` (the bagged booster's columns, no guard),
with the defaults (``guard=True``) and with ``booster="auto"``, fit + predict on split 0 of a few real-data
tables (the suite's seeded split, train cap 3,000), interleaved: every round times each variant once per
table, the variants' order rotating per round; the median over rounds per (table, variant), and the ratios
to ``guard=False`` within this run. The machine's fp32 matmul GFLOP/s is measured in the same run. Prints
JSON and writes it to ``--out`` (refuses to overwrite)::

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/stacking_guard_cost.py \\
        --out benchmarks/results/stacking-guard-cost-2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_info, matmul_gflops  # noqa: E402
from _realdata_summary import classification_metrics  # noqa: E402
from _realdata_tables import get_table, load_table  # noqa: E402
from realdata import make_split  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {"noguard": {"guard": False}, "guard": {}, "auto": {"booster": "auto"}}


def _one(name: str, kwargs: dict[str, Any], data: tuple[Any, ...]) -> dict[str, Any]:
    from tabzoo.estimators.stacking import StackingClassifier
    from tabzoo_tabflex.estimators import TabFlexClassifier

    Xtr, ytr, Xte, yte = data
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = StackingClassifier(TabFlexClassifier(random_state=0), random_state=0, **kwargs).fit(Xtr, ytr)
        proba = est.predict_proba(Xte)
    seconds = time.perf_counter() - t0
    index = {c: i for i, c in enumerate(est.classes_)}
    auc = classification_metrics(np.array([index[v] for v in yte]), proba)["roc_auc"]
    return {"seconds": seconds, "roc_auc": auc, "chosen": est.chosen_, "booster": est.booster_name_,
            "oof_scores": est.oof_scores_, "booster_scores": est.booster_scores_,
            "boosters_skipped": est.boosters_skipped_}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default="pima,hpc_jobs,ratdat_genus")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if a.out and Path(a.out).exists():
        raise SystemExit(f"{a.out} exists; pick a new name (results are never overwritten)")
    torch.set_num_threads(1)
    data = {}
    for t in a.tables.split(","):
        X, y = load_table(get_table(t))
        tr, te = make_split(y.to_numpy(), "classification", 0, 3000, 1500)
        data[t] = (X.iloc[tr], y.iloc[tr].to_numpy(), X.iloc[te], y.iloc[te].to_numpy())
    gflops_before = matmul_gflops(torch.float32)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {t: {v: [] for v in VARIANTS} for t in data}
    names = list(VARIANTS)
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for t in data:
            for v in order:
                runs[t][v].append(_one(v, VARIANTS[v], data[t]))
                print(f"round {r} {t} {v} {runs[t][v][-1]['seconds']:.2f} s", file=sys.stderr, flush=True)
    gflops_after = matmul_gflops(torch.float32)
    per_table = {}
    for t, by in runs.items():
        med = {v: statistics.median(x["seconds"] for x in xs) for v, xs in by.items()}
        per_table[t] = {"train_rows": int(len(data[t][1])), "classes": int(len(np.unique(data[t][1]))),
                        "median_s": med, "ratio_to_noguard": {v: med[v] / med["noguard"] for v in med},
                        "last": {v: {k: xs[-1][k] for k in xs[-1] if k != "seconds"} for v, xs in by.items()},
                        "seconds_all_rounds": {v: [x["seconds"] for x in xs] for v, xs in by.items()}}
    result = {"benchmark": "stacking_guard_cost", "issue": "28 item 7", "date_utc": time.strftime("%Y-%m-%d %H:%M",
                                                                                                  time.gmtime()),
              "machine": machine_info(), "fp32_matmul_gflops_1thread": {"before": gflops_before,
                                                                        "after": gflops_after},
              "protocol": {"split": 0, "train_cap": 3000, "test_cap": 1500, "rounds": a.rounds,
                           "variants": {v: {k: str(x) for k, x in kw.items()} for v, kw in VARIANTS.items()},
                           "estimator": "TabFlexClassifier(random_state=0)", "cv": 5,
                           "order": "interleaved; the variants' order rotates per round", "statistic": "median"},
              "tables": per_table,
              "ratio_to_noguard_median_over_tables": {
                  v: statistics.median(pt["ratio_to_noguard"][v] for pt in per_table.values()) for v in VARIANTS}}
    text = json.dumps(result, indent=1, default=float)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
