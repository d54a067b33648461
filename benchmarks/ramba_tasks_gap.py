"""Where Ramba's gap to LightGBM with the hand-made aggregates comes from (``nyc-dep-delayed``).

    OMP_NUM_THREADS=1 nice -n 10 uv run --group bench python benchmarks/ramba_tasks_gap.py [--out FILE]

On the draws of ``ramba_tasks_model.py --train 5000 --val 300 --test 1000`` (draw seed 12345, so
the same train / val / test seeds as ``ramba-tasks-model-budget-2026-11-27.json``):

1. **Feature groups.** LightGBM (the tuned relational parameters, early stopping on the val draw,
   3 seeds) on: the flattened row; the row plus only the outcome aggregates (counts, means and
   last values of earlier flights' ``dep_delayed`` / ``dep_delay`` / ``arr_delay``); all
   aggregates but the origin's; all aggregates but the outcome ones; all of them.
2. **How much of that evidence Ramba's context holds.** For the first ``--n-context`` test seeds:
   the earlier flights of the same origin whose ``dep_delayed`` is known within the last 3 h,
   and of the same plane within 24 h, counted in the database (what ``origin.dep_delayed_n_3h``
   and ``plane.dep_delayed_n_24h`` count) and among the OBSERVED ``dep_delayed`` cells of the
   serialized context, for each sampler of ``--samplers``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from ramba_tasks_model import _draws, _metric, _tuned_params  # noqa: E402

OUTCOMES = ("dep_delayed_", "dep_delay_", "arr_delay_")


def feature_groups(bt: Any, db: Any, draw: dict[str, Any], seeds: list[int], out: dict[str, Any]) -> None:
    import lightgbm as lgb
    from tabzoo_ramba.task_features import flat_features, relational_features

    feats = {k: relational_features(db, bt.task, v.seeds) for k, v in draw.items()}
    flat = set(flat_features(db, bt.task, draw["val"].seeds[:2]))
    agg = sorted(set(feats["val"]) - flat)
    outcome = [c for c in agg if any(o in c for o in OUTCOMES)]
    groups = {"flat": sorted(flat), "flat+outcome_aggregates": sorted(flat) + outcome,
              "relational-minus-origin_aggregates": sorted(flat) + [c for c in agg if not c.startswith("origin.")],
              "relational-minus-outcome_aggregates": sorted(flat) + [c for c in agg if c not in outcome],
              "relational": sorted(flat) + agg}
    params = _tuned_params(bt.name, "relational")
    res: dict[str, Any] = {"params": params, "n_features": {g: len(c) for g, c in groups.items()}}
    for g, cols in groups.items():
        xs = {k: np.column_stack([f[c] for c in cols]) for k, f in feats.items()}
        runs = []
        for s in seeds:
            m = lgb.LGBMClassifier(n_estimators=1000, subsample=0.8, subsample_freq=1, colsample_bytree=0.8,
                                   random_state=s, n_jobs=1, verbose=-1, **params)
            m.fit(xs["train"], draw["train"].y, eval_X=(xs["val"],), eval_y=(draw["val"].y,),
                  callbacks=[lgb.early_stopping(50, verbose=False)])
            runs.append(_metric("classification", draw["test"].y, m.predict_proba(xs["test"])[:, 1]))
        res[g] = {"test_mean": float(np.mean(runs)), "test_std": float(np.std(runs, ddof=1)), "runs": runs}
        print(f"  {g}: {res[g]['test_mean']:.4f} +- {res[g]['test_std']:.4f}", file=sys.stderr)
    out["feature_groups"] = res


def context(bt: Any, db: Any, seeds_: list[Any], samplers: list[tuple[int, int, str]], out: dict[str, Any]) -> None:
    from tabzoo_ramba import Ramba, SamplerConfig
    from tabzoo_ramba.data import to_seconds
    from tabzoo_ramba.sampling import graph_index, sample_subgraph
    from tabzoo_ramba.serialize import OBSERVED, SEP

    idx = graph_index(db)
    fl = db.table("flights").to_pandas()
    ts = to_seconds(fl["sched_dep"].to_numpy())
    known = fl["dep_delayed"].notna().to_numpy()
    origin, plane = fl["origin"].to_numpy(dtype=object), fl["tailnum"].to_numpy(dtype=object)
    res: dict[str, Any] = {"n_seeds": len(seeds_)}
    known_after = {"flights": min(bt.task.horizon_of(c) for c in bt.task.label_columns)}
    for n_child, max_rows, policy in samplers:
        sampler = SamplerConfig(n_child=n_child, max_expansions=8, max_rows=max_rows, policy=policy)  # type: ignore[arg-type]
        r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=sampler,
                  progress=False).bind(db, bt.task, bt.val_start)
        n = {"origin_3h_db": [], "origin_3h_context": [], "plane_24h_db": [], "plane_24h_context": [], "tokens": []}
        for seed, seq in zip(seeds_, r._seqs(db, seeds_), strict=True):
            sub = sample_subgraph(idx, *seed, lookback_s=bt.task.lookback_s, config=sampler, known_after=known_after)
            t = int(to_seconds(seed[2]))
            row = idx.row("flights", seed[1])
            avail = known & (ts + 900 < t)
            same_o = avail & (origin == origin[row]) & (ts + 900 >= t - 3 * 3600)
            same_p = avail & (plane == plane[row]) & (ts + 900 >= t - 86400) & isinstance(plane[row], str)
            col = seq.schema.index("flights : dep_delayed")
            seen = [sub.nodes[seq.row[p]][1] for p in np.flatnonzero((seq.col == col) & (seq.state == OBSERVED) & (seq.kind != SEP))]
            n["origin_3h_db"].append(int(same_o.sum()))
            n["origin_3h_context"].append(int(sum(same_o[j] for j in seen)))
            n["plane_24h_db"].append(int(same_p.sum()))
            n["plane_24h_context"].append(int(sum(same_p[j] for j in seen)))
            n["tokens"].append(len(seq))
        res[str(sampler)] = {k: float(np.mean(v)) for k, v in n.items()}
        print(f"  {sampler}: {res[str(sampler)]}", file=sys.stderr)
    out["context_mean_counts"] = res


def main() -> None:
    from tabzoo_ramba.tasks import get_task

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--n-context", type=int, default=300)
    p.add_argument("--samplers", default="8x48,24x96", help="n_child x max_rows[:policy], comma-separated")
    p.add_argument("--context-only", action="store_true", help="skip the LightGBM feature groups")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    if args.out.exists():
        raise SystemExit(f"{args.out} exists; pick another --out")
    t0 = time.time()
    bt = get_task("nyc-dep-delayed")
    db = bt.load()
    full = bt.split(db)
    draw = _draws(full, 5000, 300, 1000)
    out: dict[str, Any] = {"task": bt.name, "n": {k: len(v) for k, v in draw.items()}, "draw_seed": 12345,
                           "machine": machine_info()}
    samplers = []
    for spec in args.samplers.split(","):  # "24x96" or "24x96:known"
        size, _, policy = spec.partition(":")
        n_child, max_rows = size.split("x")
        samplers.append((int(n_child), int(max_rows), policy or "recent"))
    context(bt, db, draw["test"].seeds[:args.n_context], samplers, out)
    args.out.write_text(json.dumps(out, indent=1, default=float) + "\n")
    if not args.context_only:
        feature_groups(bt, db, draw, [int(s) for s in args.seeds.split(",")], out)
    out["total_s"] = round(time.time() - t0, 1)
    args.out.write_text(json.dumps(out, indent=1, default=float) + "\n")
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
