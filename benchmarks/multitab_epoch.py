"""Epoch time of MultiTab-Net (full-width and narrow inter-sample blocks) against MMoE at the same
token width (issue 26 item 4); writes JSON.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab_epoch.py \
        --out benchmarks/results/multitab-epoch-2026-11-27.json

Each model trains ``--epochs`` epochs on one MultiTab-Bench draw (no validation, no early
stopping) and the CPU time of the process (one thread) per epoch is recorded, so the figure holds
on a loaded machine where wall time does not. Models alternate within each repeat, so a change of
load hits them alike; the ratio to MMoE is taken per repeat, and its median is reported.

``--adam`` times each model under each Adam update (one run, side by side): ``loop`` = torch's
per-tensor loop (the CPU default before issue 26's change), ``foreach`` = the multi-tensor
kernels (the core loop's default since: same numbers), ``fused`` = torch's fused kernel
(``FitConfig(fused=True)``). The fp32 matmul peak (GFLOP/s, 1 thread) is measured before and
after, so the load the run saw is on record.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info, matmul_gflops  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_priors import MultiTabBench  # noqa: E402

ADAM_IMPLS: dict[str, dict[str, bool]] = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
_ADAM = torch.optim.Adam


def use_adam(impl: str) -> None:
    """Make every ``torch.optim.Adam`` the core loop builds use the update ``impl`` of :data:`ADAM_IMPLS`."""

    def make(params: Any, **kw: Any) -> torch.optim.Optimizer:
        kw.pop("foreach", None)
        kw.pop("fused", None)
        return _ADAM(params, **kw, **ADAM_IMPLS[impl])

    torch.optim.Adam = functools.wraps(_ADAM)(make)  # type: ignore[misc,assignment]


#: MultiTab-Net options timed with ``--variants`` (issue 26's small-n candidates)
VARIANTS: dict[str, dict[str, Any]] = {"rff3": dict(row_ff_mult=3), "self": dict(row_scope="self"),
                                       "rff3_self": dict(row_ff_mult=3, row_scope="self")}


def models(row_dims: list[int], variants: list[str] = ()) -> dict[str, dict[str, Any]]:  # type: ignore[assignment]
    out: dict[str, dict[str, Any]] = {"mmoe": dict(architecture="mmoe"), "multitab": dict(architecture="multitab")}
    for r in row_dims:
        out[f"multitab_r{r}"] = dict(architecture="multitab", row_dim=r)
    for v in variants:
        out[f"multitab_{v}"] = dict(architecture="multitab", **VARIANTS[v])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--widths", nargs="+", default=["8:128,64", "16:256,128"],
                    help="d_embed:hidden widths of the baselines, e.g. 8:128,64 (benchmark) and 16:256,128 (paper)")
    ap.add_argument("--tasks", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--row-dims", type=int, nargs="*", default=[32, 16])
    ap.add_argument("--n-train", type=int, default=300)
    ap.add_argument("--n-features", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", nargs="*", default=[], choices=sorted(VARIANTS))
    ap.add_argument("--adam", nargs="+", default=["foreach"], choices=sorted(ADAM_IMPLS))
    args = ap.parse_args()
    if args.out is not None and args.out.exists():
        raise SystemExit(f"{args.out} exists; results are never overwritten, pick another name.")
    torch.set_num_threads(1)
    report: dict[str, Any] = {"benchmark": "multitab-epoch", "machine": machine_info(),
                              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                              "rows": [], "matmul_fp32_gflops_before": round(matmul_gflops(torch.float32, n=512), 2)}
    for width in args.widths:
        e, hidden = width.split(":")
        for t in args.tasks:
            s = MultiTabBench(n_tasks=t, n_features=args.n_features, p=0.6, degrees=3, noise=0.01,
                              sizes=(args.n_train, 10, 10)).sample(seed=0)
            X, Y = s.train.x.numpy().astype(np.float64), s.train.y.numpy().astype(np.float64)
            per: dict[str, list[float]] = {}
            warm = MultiTabEstimator(architecture="mmoe", max_epochs=1, val_fraction=0.0, calibration=None,
                                     task_types=["regression"] * t)
            warm.fit(X, Y)  # first-call costs (imports, allocator) are not an epoch of the first model timed
            params: dict[str, int] = {}
            for _ in range(args.repeats):
                for impl, (name, kw) in ((i, m) for i in args.adam for m in models(args.row_dims, args.variants).items()):
                    use_adam(impl)
                    name = name if len(args.adam) == 1 else f"{name}/{impl}"
                    est = MultiTabEstimator(d_embed=int(e), n_heads=2 if int(e) == 8 else 4, row_heads=4,
                                            hidden=tuple(int(h) for h in hidden.split(",")), n_context=256,
                                            max_epochs=args.epochs, batch_size=args.batch_size, val_fraction=0.0,
                                            calibration=None, task_types=["regression"] * t, **kw)
                    c0 = time.process_time()
                    est.fit(X, Y)
                    per.setdefault(name, []).append((time.process_time() - c0) / args.epochs)
                    params[name] = sum(p.numel() for p in est.model_.parameters())
            base = {m: m.split("/")[0] for m in per}  # each model against MMoE under the same Adam update
            ratios = {m: float(np.median([a / b for a, b in zip(v, per[m.replace(base[m], "mmoe", 1)], strict=True)]))
                      for m, v in per.items()}
            ratios |= {f"{m} vs mmoe/{args.adam[0]}": float(np.median([a / b for a, b in zip(v, per[f"mmoe/{args.adam[0]}"], strict=True)]))
                       for m, v in per.items() if len(args.adam) > 1 and not m.startswith("mmoe/")}
            row = dict(d_embed=int(e), hidden=hidden, tasks=t, cpu_s_per_epoch={m: [round(x, 4) for x in v] for m, v in per.items()},
                       ratio_to_mmoe_median=ratios, parameters=params)
            report["rows"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            report["matmul_fp32_gflops_after"] = round(matmul_gflops(torch.float32, n=512), 2)
            if args.out:
                args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
