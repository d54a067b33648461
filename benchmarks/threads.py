"""Threads and speed of in-context prediction (issue 28 item 5): 1 vs 2 torch threads, side by side.

Each configuration runs in its own fresh process (the OpenMP wait policy is read when torch loads),
on the same synthetic table (12 numeric features, binary target), timing TabFlex ``fit`` +
``predict_proba`` with the shipped ``tabflex-small`` checkpoint, fp32. The configurations alternate
(round robin, ``--repeats`` rounds), so a change of the machine's load hits all of them alike; the
load average is recorded with every measurement. Configurations:

* ``spin-1`` / ``spin-2``: ``OMP_WAIT_POLICY=ACTIVE`` (GNU OpenMP spins while waiting), 1 or 2 threads,
  the scoped thread choice of :mod:`tabzoo.kernels.threads` off: what tabzoo did before;
* ``default-2``: tabzoo's defaults today with 2 threads (passive wait set by ``import tabzoo``, small
  passes on one thread);
* ``default-1``: the same with 1 thread.

Usage: ``python benchmarks/threads.py --out benchmarks/results/threads-DATE.json [--rows 500,3000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CONFIGS = {
    "spin-1": {"OMP_WAIT_POLICY": "ACTIVE", "threads": 1, "scoped": False},
    "spin-2": {"OMP_WAIT_POLICY": "ACTIVE", "threads": 2, "scoped": False},
    "default-1": {"OMP_WAIT_POLICY": None, "threads": 1, "scoped": True},
    "default-2": {"OMP_WAIT_POLICY": None, "threads": 2, "scoped": True},
}

CHILD = r"""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
import tabzoo  # sets the wait policy first, as a user's import would
import numpy as np, torch
from tabzoo.kernels import threads as th
from tabzoo_tabflex import TabFlexClassifier
cfg = json.loads(sys.argv[1])
torch.set_num_threads(cfg["threads"])
if not cfg["scoped"]:
    th.SMALL_PASS_FLOPS = 0.0
    th.threads_for = lambda flops, available=None: torch.get_num_threads()
rng = np.random.default_rng(0)
out = {}
for n in cfg["rows"]:
    X = rng.standard_normal((n + 500, 12)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(n + 500) > 0).astype(int)
    est = TabFlexClassifier(checkpoint="tabflex-small", inference_precision="fp32")
    t0 = time.perf_counter()
    est.fit(X[:n], y[:n]).predict_proba(X[n:])
    out[str(n)] = time.perf_counter() - t0
out["wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
out["load"] = os.getloadavg()[0]
print(json.dumps(out))
"""


def run(name: str, rows: list[int]) -> dict:
    cfg = CONFIGS[name]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if cfg["OMP_WAIT_POLICY"]:
        env["OMP_WAIT_POLICY"] = str(cfg["OMP_WAIT_POLICY"])
    arg = json.dumps({"threads": cfg["threads"], "scoped": cfg["scoped"], "rows": rows})
    done = subprocess.run([sys.executable, "-c", CHILD, arg], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--rows", default="500,3000")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--configs", default=",".join(CONFIGS))
    a = p.parse_args()
    out = Path(a.out)
    if out.exists():
        raise SystemExit(f"{out} exists; pass another --out (results are never overwritten).")
    rows = [int(r) for r in a.rows.split(",")]
    names = a.configs.split(",")
    runs: dict[str, list[dict]] = {n: [] for n in names}
    t0 = time.time()
    for _ in range(a.repeats):
        for n in names:
            runs[n].append(run(n, rows))
            print(n, runs[n][-1], file=sys.stderr)
    best = {n: {str(r): min(x[str(r)] for x in runs[n]) for r in rows} for n in names}
    ratios = {}
    for r in rows:
        key = str(r)
        if "spin-1" in best and "spin-2" in best:
            ratios[f"spin-2 / spin-1 @ {r}"] = best["spin-2"][key] / best["spin-1"][key]
        if "default-2" in best and "spin-1" in best:
            ratios[f"default-2 / spin-1 @ {r}"] = best["default-2"][key] / best["spin-1"][key]
        if "default-2" in best and "default-1" in best:
            ratios[f"default-2 / default-1 @ {r}"] = best["default-2"][key] / best["default-1"][key]
    result = {
        "benchmark": "threads", "issue": "28 item 5", "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "what": "TabFlexClassifier(tabflex-small, fp32) fit + predict_proba of 500 query rows, seconds; "
                "best of the repeats per configuration",
        "cpus": len(os.sched_getaffinity(0)), "configs": {n: CONFIGS[n] for n in names}, "rows": rows,
        "runs": runs, "best_s": best, "ratios": ratios, "wall_s": round(time.time() - t0, 1),
        "note": "shared machine: the load average of each run is in runs[*][*].load",
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(ratios, indent=1))


if __name__ == "__main__":
    main()
