"""``tabzoo estimate`` against measured peaks (issue 29 item 3): for several table shapes, the estimate of
fit/predict peak memory and time (:func:`tabzoo.estimators.estimate.estimate_in_context`) next to what a
fresh process measures (peak RSS above the RSS before the step: ``/proc/self/clear_refs`` resets the
peak; wall seconds). Each shape runs in its own process: a 64-row warm-up, then fit and predict measured,
then the estimate (whose probe runs last, so the measured steps do not reuse memory it freed).

    uv run python benchmarks/estimate_memory.py [--model tabflex] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: (training rows, features, predict rows). NON_TENSOR (tabzoo.estimators.estimate) was set on the first
#: shape in an earlier run; the other three check it.
SHAPES = [(1000, 20, 8192), (4000, 20, 16384), (16000, 20, 8192), (2000, 50, 4096)]


def _status(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def one(model: str, rows: int, features: int, predict_rows: int, n_estimators: int) -> dict[str, object]:
    import pandas as pd
    from tabzoo.estimators.estimate import estimate_in_context
    from tabzoo.plugins import get_architecture

    cls = get_architecture(model).estimator_class()
    rng = np.random.default_rng(0)
    names = [f"f{j}" for j in range(features)]
    x = pd.DataFrame(rng.normal(size=(rows, features)), columns=names)
    y = (x.f0 + x.f1 > 0).astype(int)
    q = pd.DataFrame(rng.normal(size=(predict_rows, features)), columns=names)
    # warm-up on 64 rows (lazy imports, code paged in), as the estimate's probe does; then fit and predict are
    # measured before the estimate runs, so neither reuses memory the estimate's probe freed
    cls(n_estimators=n_estimators, device="cpu").fit(x[:64], y[:64]).predict_proba(q[:64])
    est = cls(n_estimators=n_estimators, device="cpu")
    _reset_peak()
    base = _status("VmRSS")
    t0 = time.perf_counter()
    est.fit(x, y)
    fit_s, fit_peak = time.perf_counter() - t0, _status("VmHWM") - base
    _reset_peak()
    base = _status("VmRSS")
    t0 = time.perf_counter()
    est.predict_proba(q)
    pred_s, pred_peak = time.perf_counter() - t0, _status("VmHWM") - base
    del est
    guess = estimate_in_context(cls(n_estimators=n_estimators, device="cpu"), rows, features,
                                predict_rows=predict_rows, device="cpu")
    return {"rows": rows, "features": features, "predict_rows": predict_rows, "n_estimators": n_estimators,
            "fit_bytes_estimated": round(guess.fit_bytes), "fit_bytes_measured": fit_peak,
            "predict_bytes_estimated": round(guess.predict_bytes), "predict_bytes_measured": pred_peak,
            "fit_bytes_ratio": round(guess.fit_bytes / max(fit_peak, 1), 3),
            "predict_bytes_ratio": round(guess.predict_bytes / max(pred_peak, 1), 3),
            "fit_seconds_ratio": round(guess.fit_seconds / max(fit_s, 1e-9), 3),
            "fit_seconds_estimated": round(guess.fit_seconds, 3), "fit_seconds_measured": round(fit_s, 3),
            "predict_seconds_estimated": round(guess.predict_seconds, 3), "predict_seconds_measured": round(pred_s, 3),
            "predict_seconds_ratio": round(guess.predict_seconds / pred_s, 3), "throughput_flops": guess.throughput,
            "detail": guess.detail}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="tabflex")
    ap.add_argument("--n-estimators", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--shapes", type=int, default=len(SHAPES), help="run the first N shapes")
    ap.add_argument("--one", nargs=3, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.model, *args.one, args.n_estimators)))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from _machine import machine_info

    results = []
    for shape in SHAPES[: args.shapes]:
        cmd = [sys.executable, __file__, "--model", args.model, "--n-estimators", str(args.n_estimators), "--one",
               *map(str, shape)]
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        results.append(json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0
                       else {"shape": shape, "error": done.stderr[-800:]})
        print(json.dumps(results[-1]), flush=True)
    doc = {"benchmark": "estimate_memory", "model": args.model, "machine": machine_info(), "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
