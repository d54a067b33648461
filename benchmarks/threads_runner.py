"""1 vs 2 torch threads through ``benchmarks/realdata.py``'s runner and standalone, paired (issue 28 item 5).

The machine is shared and its load drifts by +-20% within a minute, more than the effect measured, so the
two thread counts are compared inside one process, alternating ``1, 2, 2, 1, 1, 2, ...`` (ABBA) over
``--repeats`` pairs: each pair runs the same fits back to back, and the figure is the median over the pairs
of ``time(2 threads) / time(1 thread)``. One fresh process per configuration (the OpenMP wait policy is read
when torch loads); the fp32 matmul peak (1 and 2 threads) is measured in this run, before and after, and the
load average with every pair.

Configurations (``--configs``):

* ``runner-<order>-<scope>``: realdata.py's runner (``_fit_one`` of its ``tabflex`` runner: the default
  ``TabFlexClassifier``, split 0, 3,000 training and up to 1,500 test rows) on hpc_jobs, mlc_churn, caravan and
  default; ``standalone-<order>-<scope>``: ``TabFlexClassifier()`` fit + ``predict_proba`` on a synthetic
  table (3,000 rows, 12 numeric features, 500 queries; benchmarks/threads.py's table);
* ``<order>``: ``torch-first`` imports torch before tabzoo, as realdata.py does, so ``import tabzoo`` cannot set
  the passive wait policy (GNU OpenMP's default, spinning, stays); ``tabzoo-first`` gets ``OMP_WAIT_POLICY=PASSIVE``;
* ``<scope>``: ``scoped`` is today's core (every public estimator call under
  ``tabzoo.kernels.threads.call_threads``); ``unscoped`` switches that scope off (the core before it, where only
  the forward passes were scoped by ``op_threads``).

Usage::

    python benchmarks/threads_runner.py --out benchmarks/results/threads-runner-DATE.json [--repeats 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLES = "hpc_jobs,mlc_churn,caravan,default"

CHILD = r"""
import contextlib, json, os, sys, time, warnings
warnings.simplefilter("ignore")
cfg = json.loads(sys.argv[1])
if cfg["order"] == "torch-first":
    import torch, tabzoo
else:
    import tabzoo, torch
import numpy as np
from tabzoo.kernels import threads as th
if not cfg["scoped"]:
    th.call_threads = lambda: contextlib.nullcontext(torch.get_num_threads())
sys.path.insert(0, cfg["here"])
if cfg["kind"] == "runner":
    from collections import Counter
    import realdata
    from _realdata_models import discover_tabzoo
    from _realdata_tables import TABLES, load_table
    runner = [r for r in discover_tabzoo("classification", realdata.TABZOO_SETTINGS, set())[0] if r.name == "tabflex"][0]
    jobs = []
    for spec in [t for t in TABLES if t.name in cfg["tables"].split(",")]:
        X, y = load_table(spec)
        tr, te = realdata.make_split(y.to_numpy(), spec.task, 0, 3000, 1500)
        jobs.append((spec.name, X, y, tr, te, sorted(y.unique().tolist())))

    def once():
        out = {}
        for name, X, y, tr, te, labels in jobs:
            res = realdata._fit_one(runner, X, y, tr, te, labels, 0, Counter())
            assert res["status"] == "ok", res
            out[name] = res["fit_predict_s"]
        return out
else:
    from tabzoo_tabflex import TabFlexClassifier
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3500, 12)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(3500) > 0).astype(int)

    def once():
        t0 = time.perf_counter()
        TabFlexClassifier().fit(X[:3000], y[:3000]).predict_proba(X[3000:])
        return {"synthetic": time.perf_counter() - t0}

torch.set_num_threads(1)
once()  # warm-up: checkpoint files, imports
pairs = []
for i in range(cfg["repeats"]):
    order = (1, 2) if i % 2 == 0 else (2, 1)
    got = {}
    for n in order:
        torch.set_num_threads(n)
        got[n] = once()
    pairs.append({"order": list(order), "s1": got[1], "s2": got[2], "total_1": sum(got[1].values()),
                  "total_2": sum(got[2].values()), "load": os.getloadavg()[0]})
    print("PAIR " + json.dumps(pairs[-1]), flush=True)
print("RESULT " + json.dumps({"pairs": pairs, "wait_policy": th.wait_policy()}))
"""

CONFIGS = {f"{kind}-{order}-{scope}": {"kind": kind, "order": order, "scoped": scope == "scoped"}
           for kind in ("runner", "standalone") for order in ("torch-first", "tabzoo-first")
           for scope in ("scoped", "unscoped")}


def run_config(name: str, repeats: int) -> dict:
    cfg = CONFIGS[name] | {"tables": TABLES, "here": str(HERE), "repeats": repeats}
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], env=env, capture_output=True, text=True,
                          check=True, cwd=HERE.parent)
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    ratios = [p["total_2"] / p["total_1"] for p in res["pairs"]]
    res["ratio_2_over_1_per_pair"] = [round(r, 3) for r in ratios]
    res["ratio_2_over_1_median"] = round(statistics.median(ratios), 3)
    res["pairs_where_2_threads_slower"] = sum(r > 1 for r in ratios)
    return res


PEAK = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[1])
from _machine import matmul_gflops
out = {}
for n in (1, 2):
    torch.set_num_threads(n)
    out[f"fp32_gflops_{n}thread"] = round(matmul_gflops(torch.float32, n=1024), 2)
print(json.dumps(out))
"""


def peak() -> dict:
    """fp32 matmul GFLOP/s with 1 and 2 threads (a fresh process), and the load average."""
    done = subprocess.run([sys.executable, "-c", PEAK, str(HERE)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"load": os.getloadavg()[0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=4, help="pairs (1 thread, 2 threads) per configuration")
    p.add_argument("--configs", default=",".join(CONFIGS))
    a = p.parse_args()
    out = Path(a.out)
    if out.exists():
        raise SystemExit(f"{out} exists; pass another --out (results are never overwritten).")
    t0 = time.time()
    result = {"benchmark": "threads_runner", "issue": "28 item 5",
              "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
              "what": "TabFlexClassifier defaults, fit + predict_proba seconds; 1 vs 2 torch threads alternated "
                      "(ABBA) inside one process per configuration; ratio = time(2 threads) / time(1 thread) per pair",
              "tables": TABLES, "cpus": len(os.sched_getaffinity(0)), "configs": {}, "matmul_peak": {"before": peak()}}
    for name in a.configs.split(","):
        res = run_config(name, a.repeats)
        result["configs"][name] = CONFIGS[name] | res
        print(name, res["ratio_2_over_1_median"], res["ratio_2_over_1_per_pair"], file=sys.stderr, flush=True)
        result["summary"] = {n: {"median_ratio_2_over_1": c["ratio_2_over_1_median"],
                                 "pairs_where_2_threads_slower": f"{c['pairs_where_2_threads_slower']}/{len(c['pairs'])}",
                                 "wait_policy": c["wait_policy"]} for n, c in result["configs"].items()}
        out.write_text(json.dumps(result, indent=1) + "\n")  # incremental: a cut run keeps its results
    result["matmul_peak"]["after"] = peak()
    result["wall_s"] = round(time.time() - t0, 1)
    result["note"] = "shared 2-core machine: the load average of each pair is in configs[*].pairs[*].load"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
