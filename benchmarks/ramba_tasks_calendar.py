"""Does the calendar matter on nyc-dep-delayed? LightGBM on the flattened row (the tuned
configuration, early stopping on the val draw, the draw of ramba_tasks_model.py) with every
feature, without the calendar parts Ramba's datetime encoding lacks (day of week, day of year,
year), and with those replaced by the absolute time (what Ramba's datetime z-score gives, which
the test period extrapolates). Three seeds each.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/ramba_tasks_calendar.py

Writes results/ramba-tasks-calendar-<date>.json.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from ramba_tasks_model import RESULTS, _draws, _metric, _tuned_params  # noqa: E402


def main() -> None:
    import lightgbm as lgb
    from tabzoo_ramba.data import to_seconds
    from tabzoo_ramba.task_features import flat_features
    from tabzoo_ramba.tasks import get_task

    bt = get_task("nyc-dep-delayed")
    db = bt.load()
    full = bt.split(db)
    draw = _draws(full, 1000, 300, 1000)
    feats = {k: flat_features(db, bt.task, v.seeds) for k, v in draw.items()}
    names = sorted(feats["train"])
    calendar = [n for n in names if n.endswith(("_dow", "_doy", "_year", "dow", "doy", "year"))]
    t_abs = {k: to_seconds(np.array([s[2] for s in v.seeds], dtype="datetime64[s]")).astype(float)
             for k, v in draw.items()}
    sets = {"all": (names, False), "no-calendar": ([n for n in names if n not in calendar], False),
            "absolute-time-for-calendar": ([n for n in names if n not in calendar], True)}
    params = _tuned_params("nyc-dep-delayed", "flat")
    out = {"task": "nyc-dep-delayed", "n": {k: len(v) for k, v in draw.items()}, "calendar_features": calendar,
           "params": params, "models": {}, "machine": machine_info()}
    for label, (cols, absolute) in sets.items():
        def x(part: str, cols: list[str] = cols, absolute: bool = absolute) -> np.ndarray:
            m = np.column_stack([feats[part][c] for c in cols])
            return np.column_stack([m, t_abs[part]]) if absolute else m

        runs = []
        for s in (0, 1, 2):
            m = lgb.LGBMClassifier(n_estimators=1000, subsample=0.8, subsample_freq=1, colsample_bytree=0.8,
                                   random_state=s, n_jobs=1, verbose=-1, **params)
            m.fit(x("train"), draw["train"].y, eval_X=(x("val"),), eval_y=(draw["val"].y,),
                  callbacks=[lgb.early_stopping(50, verbose=False)])
            runs.append(_metric("classification", draw["test"].y, m.predict_proba(x("test"))[:, 1]))
        out["models"][label] = {"test_mean": float(np.mean(runs)), "test_std": float(np.std(runs, ddof=1)),
                                "runs": runs, "n_features": len(cols) + int(absolute)}
        print(label, out["models"][label], file=sys.stderr)
    path = RESULTS / f"ramba-tasks-calendar-{dt.date.today().isoformat()}.json"
    path.write_text(json.dumps(out, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
