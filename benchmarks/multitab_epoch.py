"""Epoch time of MultiTab-Net (full-width and narrow inter-sample blocks) against MMoE at the same
token width (issue 26 item 4); writes JSON.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab_epoch.py \
        --out benchmarks/results/multitab-epoch-2026-11-27.json

Each model trains ``--epochs`` epochs on one MultiTab-Bench draw (no validation, no early
stopping) and the CPU time of the process (one thread) per epoch is recorded, so the figure holds
on a loaded machine where wall time does not. Models alternate within each repeat, so a change of
load hits them alike; the ratio to MMoE is taken per repeat, and its median is reported.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_priors import MultiTabBench  # noqa: E402


def models(row_dims: list[int]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"mmoe": dict(architecture="mmoe"), "multitab": dict(architecture="multitab")}
    for r in row_dims:
        out[f"multitab_r{r}"] = dict(architecture="multitab", row_dim=r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--widths", nargs="+", default=["8:128,64", "16:256,128"],
                    help="d_embed:hidden widths of the baselines, e.g. 8:128,64 (benchmark) and 16:256,128 (paper)")
    ap.add_argument("--tasks", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--row-dims", type=int, nargs="+", default=[32, 16])
    ap.add_argument("--n-train", type=int, default=300)
    ap.add_argument("--n-features", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if args.out is not None and args.out.exists():
        raise SystemExit(f"{args.out} exists; results are never overwritten, pick another name.")
    torch.set_num_threads(1)
    report: dict[str, Any] = {"benchmark": "multitab-epoch", "machine": machine_info(),
                              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                              "rows": []}
    for width in args.widths:
        e, hidden = width.split(":")
        for t in args.tasks:
            s = MultiTabBench(n_tasks=t, n_features=args.n_features, p=0.6, degrees=3, noise=0.01,
                              sizes=(args.n_train, 10, 10)).sample(seed=0)
            X, Y = s.train.x.numpy().astype(np.float64), s.train.y.numpy().astype(np.float64)
            per: dict[str, list[float]] = {}
            params: dict[str, int] = {}
            for _ in range(args.repeats):
                for name, kw in models(args.row_dims).items():
                    est = MultiTabEstimator(d_embed=int(e), n_heads=2 if int(e) == 8 else 4, row_heads=4,
                                            hidden=tuple(int(h) for h in hidden.split(",")), n_context=256,
                                            max_epochs=args.epochs, batch_size=args.batch_size, val_fraction=0.0,
                                            calibration=None, task_types=["regression"] * t, **kw)
                    c0 = time.process_time()
                    est.fit(X, Y)
                    per.setdefault(name, []).append((time.process_time() - c0) / args.epochs)
                    params[name] = sum(p.numel() for p in est.model_.parameters())
            ratios = {m: float(np.median([a / b for a, b in zip(v, per["mmoe"], strict=True)])) for m, v in per.items()}
            row = dict(d_embed=int(e), hidden=hidden, tasks=t, cpu_s_per_epoch={m: [round(x, 4) for x in v] for m, v in per.items()},
                       ratio_to_mmoe_median=ratios, parameters=params)
            report["rows"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            if args.out:
                args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
