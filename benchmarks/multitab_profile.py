"""torch.profiler of one MultiTab-Net and one MMoE training step (issue 26 item 4: profile first);
writes JSON and a text table.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab_profile.py \
        --out benchmarks/results/multitab-profile-2026-11-28b.json

For each ``--configs`` pair (training rows : batch) the two models are built as the epoch
benchmark builds them (``benchmarks/multitab_epoch.py``: token width 8, 2 feature heads, 4 row
heads, baseline MLPs 128-64, 3 regression tasks, 8 features) and run the core loop's step
(forward + loss, ``zero_grad``, backward, gradient clipping at 1, Adam foreach) ``--steps`` times
under the profiler after ``--warmup`` untimed steps. MultiTab-Net runs twice: as dispatch picks
its attention backends (``multitab``) and with the core's sdpa forced everywhere
(``multitab_sdpa``, the path before issue 26's short-key backend). Per model the JSON holds the profiled self
CPU time per step, the op calls per step and the top ops (self CPU ms and calls per step); the
``.txt`` beside it holds torch's tables. One thread; the fp32 matmul peak is measured in the run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info, matmul_gflops  # noqa: E402
from tabzoo import kernels  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_multitab.losses import multitask_loss  # noqa: E402
from tabzoo_priors import MultiTabBench  # noqa: E402


def build(arch: str, X: np.ndarray, Y: np.ndarray, tasks: int, extra: dict[str, Any]) -> torch.nn.Module:
    """The epoch benchmark's estimator model for ``arch``, fitted one epoch on ``X``, ``Y`` (to build it)."""
    est = MultiTabEstimator(architecture=arch, d_embed=8, n_heads=2, row_heads=4, hidden=(128, 64), n_context=256,
                            max_epochs=1, batch_size=32, val_fraction=0.0, calibration=None,
                            task_types=["regression"] * tasks, **({"n_layers": 2, "skip_hidden": 128, "ff_mult": 2, "dropout_masks": "bernoulli", "dropout_sites": "all"} | extra))  # as committed
    est.fit(X, Y)
    return est.model_.train()


def profile_steps(model: torch.nn.Module, xb: torch.Tensor, yb: torch.Tensor, steps: int, warmup: int) -> Any:
    """Run the core loop's training step; profile the last ``steps`` of ``warmup + steps``."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5, foreach=True)

    def step() -> None:
        loss = multitask_loss(list(model.split(model(xb, None))), yb, model.tasks, None)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(warmup):
        step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    return prof


def summarise(prof: Any, steps: int, top: int) -> dict[str, Any]:
    """Self CPU ms and op calls per step, and the ``top`` ops by self CPU time."""
    events = [e for e in prof.key_averages() if not e.key.startswith(("ProfilerStep", "Optimizer.", "autograd::engine"))]
    aten = [e for e in events if e.key.startswith("aten::")]
    total_us = sum(e.self_cpu_time_total for e in prof.key_averages())
    rows = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
    return {"self_cpu_ms_per_step": round(total_us / 1e3 / steps, 3),
            "aten_calls_per_step": round(sum(e.count for e in aten) / steps, 1),
            "top_ops": [{"op": e.key, "self_cpu_ms_per_step": round(e.self_cpu_time_total / 1e3 / steps, 3),
                         "share": round(e.self_cpu_time_total / total_us, 4), "calls_per_step": round(e.count / steps, 2)}
                        for e in rows]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--configs", nargs="+", default=["300:32", "3000:256"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--label", default="", help="what code state this profiles (written into the JSON)")
    args = ap.parse_args()
    txt = args.out.with_suffix(".txt")
    for p in (args.out, txt):
        if p.exists():
            raise SystemExit(f"{p} exists; results are never overwritten, pick another name.")
    torch.set_num_threads(1)
    report: dict[str, Any] = {"benchmark": "multitab-profile", "label": args.label, "machine": machine_info(),
                              "settings": {k: str(v) for k, v in vars(args).items()},
                              "matmul_fp32_gflops_before": round(matmul_gflops(torch.float32, n=512), 2), "rows": []}
    tables: list[str] = []
    for cfg in args.configs:
        n_train, batch = (int(v) for v in cfg.split(":"))
        s = MultiTabBench(n_tasks=args.tasks, n_features=8, p=0.6, degrees=3, noise=0.01,
                          sizes=(n_train, 10, 10)).sample(seed=0)
        X, Y = s.train.x.numpy().astype(np.float64), s.train.y.numpy().astype(np.float64)
        xb, yb = torch.tensor(X[:batch], dtype=torch.float32), torch.tensor(Y[:batch], dtype=torch.float32)
        row: dict[str, Any] = {"n_train": n_train, "batch_size": batch, "models": {}}
        for name, arch, forced in (("mmoe", "mmoe", None), ("multitab_sdpa", "multitab", "sdpa"), ("multitab", "multitab", None)):
            torch.manual_seed(0)
            model = build(arch, X[:batch], Y[:batch], args.tasks, {})
            with kernels.use(forced) if forced else contextlib.nullcontext():
                prof = profile_steps(model, xb, yb, args.steps, args.warmup)
            summ = summarise(prof, args.steps, args.top)
            summ["parameter_tensors"] = sum(1 for _ in model.parameters())
            row["models"][name] = summ
            tables.append(f"===== {name} rows {n_train} batch {batch}: {args.steps} steps after {args.warmup} warm-up\n"
                          + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))
        row["self_cpu_ratio_to_mmoe"] = {m: round(d["self_cpu_ms_per_step"] / row["models"]["mmoe"]["self_cpu_ms_per_step"], 3)
                                         for m, d in row["models"].items()}
        report["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "models"}), file=sys.stderr, flush=True)
    report["matmul_fp32_gflops_after"] = round(matmul_gflops(torch.float32, n=512), 2)
    report["load_average_at_end"] = machine_info().get("load_average_at_start")
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    txt.write_text(f"# {args.label}\n" + "\n".join(tables))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
