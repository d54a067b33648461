"""Prior throughput: tabzoo-priors vs the `tabicl` package's prior, side by side in one run.

Measures datasets per second at 1024 rows x 20 features (classification, up to 10 classes) for
our SCM and tree SCM priors and tabicl's ``mlp_scm`` and ``tree_scm`` (``n_jobs=1``). The
priors are timed in interleaved rounds (so load from other processes hits all of them alike); the
headline rate is all datasets / all time per prior, the per-round median is reported beside it.

Run:  uv run --with tabicl --with xgboost python benchmarks/priors.py [--rounds 5] [--threads 1]
Writes benchmarks/results/priors-YYYY-MM-DD.json and a PNG grid of sampled datasets.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch
from tabzoo_priors import SCMPrior, TreeSCMPrior, plot_datasets

ROWS, FEATURES, MAX_CLASSES = 1024, 20, 10


def matmul_gflops(dtype: torch.dtype, n: int = 1024, reps: int = 5) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def ours(cls: type, batch: int):
    prior = cls(n_rows=(ROWS, ROWS), n_features=(FEATURES, FEATURES), n_classes=(2, MAX_CLASSES),
                task="classification")
    state = {"seed": 0}

    def run() -> int:
        state["seed"] += 1
        prior.sample_raw(batch, seed=state["seed"])
        return batch

    return run


def tabicl_prior(kind: str, batch: int):
    from tabicl.prior import PriorDataset

    ds = PriorDataset(batch_size=batch, batch_size_per_gp=min(4, batch), min_features=FEATURES,
                      max_features=FEATURES, max_classes=MAX_CLASSES, max_seq_len=ROWS,
                      prior_type=kind, n_jobs=1, device="cpu")

    def run() -> int:
        ds.get_batch()
        return batch

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64, help="datasets per call of our priors")
    ap.add_argument("--tabicl-batch", type=int, default=8, help="datasets per call of tabicl")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    runners = {
        "tabzoo_scm": ours(SCMPrior, args.batch),
        "tabzoo_tree_scm": ours(TreeSCMPrior, args.batch),
    }
    tabicl_version, tabicl_error = None, None
    try:
        from importlib.metadata import version

        runners["tabicl_mlp_scm"] = tabicl_prior("mlp_scm", args.tabicl_batch)
        runners["tabicl_tree_scm"] = tabicl_prior("tree_scm", args.tabicl_batch)
        tabicl_version = version("tabicl")
    except ImportError as exc:  # tabicl's prior also imports xgboost
        tabicl_error = f"{type(exc).__name__}: {exc}"
    for run in runners.values():  # warm-up
        run()
    rates: dict[str, list[float]] = {k: [] for k in runners}
    totals = {k: [0, 0.0] for k in runners}
    for _ in range(args.rounds):
        for name, run in runners.items():
            t = time.perf_counter()
            n = run()
            elapsed = time.perf_counter() - t
            rates[name].append(n / elapsed)
            totals[name][0] += n
            totals[name][1] += elapsed
    med = {k: statistics.median(v) for k, v in rates.items()}
    agg = {k: n / t for k, (n, t) in totals.items()}  # all datasets / all time: the headline
    ratios = {}
    if "tabicl_mlp_scm" in agg:
        ratios["scm_vs_tabicl_mlp_scm"] = agg["tabzoo_scm"] / agg["tabicl_mlp_scm"]
        ratios["tree_scm_vs_tabicl_tree_scm"] = agg["tabzoo_tree_scm"] / agg["tabicl_tree_scm"]
        ratios["median_scm_vs_tabicl_mlp_scm"] = med["tabzoo_scm"] / med["tabicl_mlp_scm"]
        ratios["median_tree_scm_vs_tabicl_tree_scm"] = med["tabzoo_tree_scm"] / med["tabicl_tree_scm"]
    today = dt.date.today().isoformat()
    result = {
        "benchmark": "priors",
        "date": today,
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpu_count": os.cpu_count()},
        "torch": torch.__version__,
        "tabicl": tabicl_version,
        "threads": torch.get_num_threads(),
        "size": {"rows": ROWS, "features": FEATURES, "max_classes": MAX_CLASSES},
        "batch": {"tabzoo": args.batch, "tabicl": args.tabicl_batch},
        "rounds": args.rounds,
        "matmul_gflops": {"fp32": matmul_gflops(torch.float32), "bf16": matmul_gflops(torch.bfloat16)},
        "datasets_per_s": agg,
        "datasets_per_s_median_round": med,
        "datasets_per_s_all_rounds": rates,
        "ratios": ratios,
        "targets": {"min_ratio": 2.0, "goal_scm_ratio": 10.0},
    }
    if tabicl_version is None:
        result["note"] = (f"tabicl prior unavailable ({tabicl_error}); run with "
                          "`uv run --with tabicl --with xgboost python benchmarks/priors.py`")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"priors-{today}.json").write_text(json.dumps(result, indent=2) + "\n")
    batch = SCMPrior(n_rows=(512, 512), n_features=(2, FEATURES), task="classification").sample_raw(16, seed=0)
    plot_datasets(batch, out / f"priors-{today}.png", title="tabzoo SCM prior: PCA of 16 sampled datasets")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
