"""Where one default MultiTab-Net training step goes, per module, against MMoE's (issue 26 item 4);
writes JSON.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab_step_breakdown.py \
        --out benchmarks/results/multitab-step-breakdown-2026-11-29.json

The setting of ``benchmarks/multitab_epoch.py``'s ``--configs 3000:256``: one MultiTab-Bench draw,
token width 8 (2 inter-feature heads, 4 inter-sample heads), MMoE's MLPs 128-64, regression tasks,
a minibatch of 256 rows, one thread. Per model and task count:

* ``mflop_by_module``: matmul and attention MFLOP of one training forward + backward, per
  top-level module and, for the encoder block, per sub-block (torch's FlopCounterMode with the
  core's sdpa forced so the attention counts; elementwise work is not counted);
* ``op_ms``: thread-CPU milliseconds per step of the heaviest aten ops (forward + backward, torch's
  profiler over ``--profile-steps`` steps), so the cost of work a FLOP count misses (dropout
  masks, GELU, LayerNorm, softmax, copies) shows;
* ``step_ms``: the median thread-CPU milliseconds of one whole training step (forward, loss,
  backward, clipping, Adam) of each ``--variants`` configuration (models alternated), and its
  ratio to MMoE's: the variants are the candidates for a cheaper default.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from tabzoo import kernels  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_multitab.losses import multitask_loss  # noqa: E402
from tabzoo_priors import MultiTabBench  # noqa: E402

#: configurations timed side by side (MultiTab-Net options over the default: one block)
VARIANTS: dict[str, dict[str, Any]] = {
    "mmoe": dict(architecture="mmoe"),
    "default": dict(architecture="multitab", n_layers=1),
    "skip1": dict(architecture="multitab", n_layers=1, skip_layers=1),
    "skip1_64": dict(architecture="multitab", n_layers=1, skip_layers=1, skip_hidden=64),
    "noskip": dict(architecture="multitab", n_layers=1, skip_hidden=0),
    "drop0": dict(architecture="multitab", n_layers=1, dropout=0.0),
    "ff1": dict(architecture="multitab", n_layers=1, ff_mult=1),
    "head16": dict(architecture="multitab", n_layers=1, head_hidden=16),
    "r32": dict(architecture="multitab", n_layers=1, row_dim=32),
    "skip1_64_ff1": dict(
        architecture="multitab", n_layers=1, skip_layers=1, skip_hidden=64, ff_mult=1
    ),
    "noskip_drop0": dict(architecture="multitab", n_layers=1, skip_hidden=0, dropout=0.0),
    "words": dict(architecture="multitab", n_layers=1, dropout_masks="words"),
    "words_skip64": dict(
        architecture="multitab", n_layers=1, dropout_masks="words", skip_hidden=64
    ),
    "hidden": dict(architecture="multitab", n_layers=1, dropout_sites="hidden"),
    "words_hidden": dict(
        architecture="multitab", n_layers=1, dropout_masks="words", dropout_sites="hidden"
    ),
    "words_hidden_rh1": dict(
        architecture="multitab",
        n_layers=1,
        dropout_masks="words",
        dropout_sites="hidden",
        row_heads=1,
    ),
    "words_rh1": dict(architecture="multitab", n_layers=1, dropout_masks="words", row_heads=1),
    "words_rh2": dict(architecture="multitab", n_layers=1, dropout_masks="words", row_heads=2),
    "words_skip64_ff1": dict(
        architecture="multitab", n_layers=1, dropout_masks="words", skip_hidden=64, ff_mult=1
    ),
    "words_skip64_ff1_rh1": dict(
        architecture="multitab",
        n_layers=1,
        dropout_masks="words",
        skip_hidden=64,
        ff_mult=1,
        row_heads=1,
    ),
}


def fitted(
    kw: dict[str, Any], X: np.ndarray, Y: np.ndarray, t: int, batch: int
) -> MultiTabEstimator:
    """A model of the benchmark's width, fitted one epoch (for its built network)."""
    # the default of 2026-11-29 before the lite step, pinned (the variants override it)
    kw = {
        "row_heads": 4,
        "skip_hidden": 128,
        "ff_mult": 2,
        "dropout_masks": "bernoulli",
        "dropout_sites": "all",
    } | kw
    est = MultiTabEstimator(
        d_embed=8,
        n_heads=2,
        hidden=(128, 64),
        n_context=256,
        max_epochs=1,
        batch_size=batch,
        val_fraction=0.0,
        calibration=None,
        task_types=["regression"] * t,
        select="joint",
        **kw,
    )
    return est.fit(X, Y)


def module_flops(model: torch.nn.Module, xb: torch.Tensor) -> dict[str, float]:
    """MFLOP of a forward + backward per module (depth <= 2 below the model; ``Global`` = all)."""
    from torch.utils.flop_counter import FlopCounterMode

    model.train()
    with kernels.use("sdpa"), FlopCounterMode(display=False, depth=4) as fc:
        model(xb, None).square().sum().backward()
    model.zero_grad(set_to_none=True)
    out = {}
    for name, ops in fc.get_flop_counts().items():
        depth = name.count(".")
        if depth <= 3:
            out[name] = round(sum(ops.values()) / 1e6, 3)
    return out


def step(
    model: torch.nn.Module, opt: torch.optim.Optimizer, xb: torch.Tensor, yb: torch.Tensor
) -> None:
    loss = multitask_loss(list(model.split(model(xb, None))), yb, model.tasks, None)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def op_times(
    model: torch.nn.Module, xb: torch.Tensor, yb: torch.Tensor, steps: int
) -> dict[str, float]:
    """Self CPU milliseconds per step of the 15 heaviest aten ops (forward, backward and Adam)."""
    from torch.profiler import ProfilerActivity, profile

    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    for _ in range(3):
        step(model, opt, xb, yb)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step(model, opt, xb, yb)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in rows) / 1e3 / steps
    out = {"total": round(total, 3)}
    for e in rows[:15]:
        out[e.key] = round(e.self_cpu_time_total / 1e3 / steps, 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--tasks", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--n-train", type=int, default=3000)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--steps", type=int, default=40, help="timed training steps per variant")
    ap.add_argument("--profile-steps", type=int, default=10)
    ap.add_argument(
        "--profile",
        nargs="*",
        default=[],
        choices=sorted(VARIANTS),
        help="variants also profiled per op",
    )
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=sorted(VARIANTS))
    args = ap.parse_args()
    if args.out is not None and args.out.exists():
        raise SystemExit(f"{args.out} exists; results are never overwritten, pick another name.")
    torch.set_num_threads(1)
    report: dict[str, Any] = {
        "benchmark": "multitab-step-breakdown",
        "machine": machine_info(),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "variants": {k: VARIANTS[k] for k in args.variants},
        "rows": [],
    }
    for t in args.tasks:
        s = MultiTabBench(
            n_tasks=t, n_features=8, p=0.6, degrees=3, noise=0.01, sizes=(args.n_train, 10, 10)
        ).sample(seed=0)
        X, Y = s.train.x.numpy().astype(np.float64), s.train.y.numpy().astype(np.float64)
        ests = {
            n: fitted(VARIANTS[n], X, Y, t, args.batch_size)
            for n in ["mmoe", "default", *args.variants]
            if n in VARIANTS
        }
        xb = torch.tensor(X[: args.batch_size], dtype=torch.float32)
        yb = torch.tensor(Y[: args.batch_size], dtype=torch.float32)
        row: dict[str, Any] = {"tasks": t, "batch_size": args.batch_size}
        # per module for MultiTab-Net only (FlopCounterMode attributes MMoE's ModuleList experts cumulatively)
        row["mflop_by_module"] = module_flops(ests["default"].model_, xb)
        row["params"] = {n: sum(p.numel() for p in e.model_.parameters()) for n, e in ests.items()}
        row["op_ms"] = {
            n: op_times(ests[n].model_, xb, yb, args.profile_steps)
            for n in ("mmoe", "default", *args.profile)
        }
        opts = {
            n: torch.optim.Adam(e.model_.parameters(), lr=1e-3, foreach=True)
            for n, e in ests.items()
        }
        got: dict[str, list[float]] = defaultdict(list)
        for it in range(args.steps + 5):
            for n, e in ests.items():
                m = e.model_.train()
                t0 = time.thread_time()
                step(m, opts[n], xb, yb)
                if it >= 5:
                    got[n].append((time.thread_time() - t0) * 1e3)
        row["step_ms"] = {n: round(float(np.median(v)), 3) for n, v in got.items()}
        row["step_ratio_to_mmoe"] = {
            n: round(v / row["step_ms"]["mmoe"], 3) for n, v in row["step_ms"].items()
        }
        row["mflop"] = {n: module_flops(e.model_, xb)["Global"] for n, e in ests.items()}
        row["mflop_ratio_to_mmoe"] = {
            n: round(v / row["mflop"]["mmoe"], 3) for n, v in row["mflop"].items()
        }
        report["rows"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    report["load_average_at_end"] = [round(v, 2) for v in os.getloadavg()]
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
