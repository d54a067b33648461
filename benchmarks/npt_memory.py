"""NPT's memory estimate against measured peaks (issue 25, item 4): for a few table shapes, the
estimate the estimators check before allocating (:meth:`NPTRegressor.memory_estimate`) next to the
peak resident memory a fresh process measures during ``fit`` (a few training steps, the default
architecture) and during ``predict`` (every context partition, one query chunk after another).

Peak RSS above the RSS just before the step (``/proc/self/clear_refs`` resets the kernel's peak;
``VmHWM``). Each shape runs in its own process, single-threaded.

    OMP_NUM_THREADS=1 uv run python benchmarks/npt_memory.py --out benchmarks/results/npt-memory-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from estimate_memory import _reset_peak, _status  # noqa: E402  (peak RSS via /proc, shared)

SHAPES = [(10000, 50), (3000, 20), (1000, 10)]


def one(rows: int, features: int, steps: int, predict_rows: int) -> dict[str, object]:
    import numpy as np
    import torch
    from tabzoo_npt import NPTRegressor

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows + predict_rows, features))
    y = X[:, :3].sum(axis=1) + 0.1 * rng.standard_normal(len(X))
    est = NPTRegressor(steps=steps, validation_fraction=0.0)  # the default architecture and batch size
    estimate = est.memory_estimate((0,) * (features + 1), rows)
    base = _status("VmRSS")
    _reset_peak()
    t = time.perf_counter()
    est.fit(X[:rows], y[:rows])
    fit_s = time.perf_counter() - t
    fit_peak = _status("VmHWM") - base
    base = _status("VmRSS")
    _reset_peak()
    t = time.perf_counter()
    est.predict(X[rows:])
    predict_s = time.perf_counter() - t
    predict_peak = _status("VmHWM") - base
    gib = 2.0**30
    if not predict_peak:
        raise RuntimeError("predict's peak was not measured (the RSS after fit held its freed memory)")
    return {"rows": rows, "features": features, "fit_steps": steps, "predict_rows": predict_rows,
            "dim": estimate["dim"], "parameters": estimate["parameters"], "batch_rows": estimate["batch_rows"],
            "estimate_fit_gib": round(estimate["fit_bytes"] / gib, 3),
            "measured_fit_peak_gib": round(fit_peak / gib, 3),
            "estimate_predict_gib": round(estimate["predict_bytes"] / gib, 3),
            "measured_predict_peak_gib": round(predict_peak / gib, 3),
            "ratio_fit": round(estimate["fit_bytes"] / max(fit_peak, 1), 2),
            "ratio_predict": round(estimate["predict_bytes"] / max(predict_peak, 1), 2),
            "rss_after_fit_gib": round(base / gib, 3), "fit_s": round(fit_s, 1), "predict_s": round(predict_s, 1)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=",".join(f"{r}x{f}" for r, f in SHAPES), help="ROWSxFEATURES,...")
    p.add_argument("--steps", type=int, default=3, help="training steps per fit (the peak is one step's)")
    p.add_argument("--predict-rows", type=int, default=512)
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if a.one:
        r, f = map(int, a.one.split("x"))
        print(json.dumps(one(r, f, a.steps, a.predict_rows)))
        return
    # glibc raises its mmap threshold after big frees and then keeps freed memory resident, so
    # the RSS after fit would hide predict's peak: a fixed threshold returns big blocks at once
    env = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "65536"}
    out = []
    for shape in a.shapes.split(","):
        proc = subprocess.run([sys.executable, __file__, "--one", shape, "--steps", str(a.steps), "--predict-rows",
                               str(a.predict_rows)], capture_output=True, text=True, env=env, check=False)
        rec = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {
            "shape": shape, "error": proc.stderr[-2000:]}
        print(json.dumps(rec), file=sys.stderr)
        out.append(rec)
    text = json.dumps({"benchmark": "npt memory estimate vs measured peak RSS", "date_utc":
                       time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "load_average": os.getloadavg(),
                       "results": out}, indent=1)
    print(text)
    if a.out:
        with open(Path(a.out), "x", encoding="utf-8") as fh:  # never overwrite
            fh.write(text)


if __name__ == "__main__":
    main()
