"""Small, fast diagnosis of MultiTab-Net's multitask gain (issue 26 item 1); appends JSON lines.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab_diagnose.py \
        --variants base stl_twin no_rows ff256 --out /tmp/diag.jsonl

Each variant is one MultiTabEstimator setting (``VARIANTS``), fitted on a few MultiTab-Bench
settings (tabzoo-priors; train/val/test independent draws sharing ``W``) with early stopping on
the validation split, and scored on the test split (explained variance per task). ``stl_twin``
fits one MultiTab-Net per task (the single-task twin, same settings as ``base``); ``mlp_stl``
the single-task MLP. Δm is computed afterwards from the lines (``--summary``).
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
from tabzoo_multitab import delta_m
from tabzoo_multitab.estimator import MultiTabEstimator
from tabzoo_priors import MultiTabBench

#: the estimator settings of the benchmark before issue 26 (benchmarks/multitab.py, 2026-11-23)
BASE: dict[str, Any] = dict(architecture="multitab", d_embed=8, n_layers=2, n_heads=2, row_heads=4, hidden=(128, 64),
                            n_context=256, max_epochs=30, patience=6, batch_size=128, lr=2e-3, dropout=0.1,
                            val_fraction=0.0, ff_mult=2, head_hidden=32, row_ff_mult=1, dropout_masks="bernoulli",
                            dropout_sites="all")
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "stl_twin": {},  # one MultiTab-Net per task
    "mlp_stl": dict(architecture="stl"),
    "mmoe": dict(architecture="mmoe"),
    "ple": dict(architecture="ple"),
    "no_rows": dict(inter_sample=False),
    "mask_none": dict(mask="none"),
    "mask_both": dict(mask="both"),
    "ff256": dict(ff_mult=32),
    "ff256_no_rows": dict(ff_mult=32, inter_sample=False),
    "e16_ff256": dict(d_embed=16, ff_mult=16, head_hidden=64),
    "e16_ff256_no_rows": dict(d_embed=16, ff_mult=16, head_hidden=64, inter_sample=False),
    "ep100": dict(max_epochs=100, patience=10),
    "ff256_ep100": dict(ff_mult=32, max_epochs=100, patience=10),
    "lr1e3": dict(lr=1e-3),
    "bs64": dict(batch_size=64),
    "drop0": dict(dropout=0.0),
    "metric_stop": dict(early_stopping="metric"),
    "single_token": dict(task_tokens="single", mask="F-/->T"),
    "single_nomask": dict(task_tokens="single", mask="none"),
    "cos": dict(schedule="cosine"),
    "cos100": dict(schedule="cosine", max_epochs=100, patience=100),
    "stl_twin_cos100": dict(schedule="cosine", max_epochs=100, patience=100),
    "mlp_stl_cos100": dict(architecture="stl", schedule="cosine", max_epochs=100, patience=100),
    "mmoe_cos100": dict(architecture="mmoe", schedule="cosine", max_epochs=100, patience=100),
    # small-n fixes (issue 26, session of 2026-11-27 afternoon): regularisation, width, step size, patience
    "ctx32": dict(n_context=32),  # prediction context as wide as a training minibatch
    "drop2": dict(dropout=0.2),
    "drop3": dict(dropout=0.3),
    "wd1e3": dict(weight_decay=1e-3),
    "wd1e2": dict(weight_decay=1e-2),
    "lr1e3b": dict(lr=1e-3),
    "lr5e3": dict(lr=5e-3),
    "e4": dict(d_embed=4),
    "pat20": dict(patience=20),
    "h16": dict(head_hidden=16),
    "r32": dict(row_dim=32),  # the narrow inter-sample block (item 3)
    "r32_lr5e3": dict(row_dim=32, lr=5e-3),
    "lr5e3_drop2": dict(lr=5e-3, dropout=0.2),
    "self": dict(row_scope="self"),
    "rff3_self": dict(row_ff_mult=3, row_scope="self"),
    "rff3_r16": dict(row_ff_mult=3, row_dim=16),
    "rff3": dict(row_ff_mult=3),  # inter-sample feed-forward 3 x 88 = 264 wide (paper: hidden size 256)  # the inter-sample block reads each row only (the authors' rotary variant)
}
SETTINGS = {"p0.6_t3_d3": dict(n_tasks=3, p=0.6, degrees=3), "p0.2_t3_d3": dict(n_tasks=3, p=0.2, degrees=3),
            "p0.6_t3_mixed": dict(n_tasks=3, p=0.6, degrees=[2, 3, 4]), "p1.0_t3_d3": dict(n_tasks=3, p=1.0, degrees=3),
            "p0.6_t5_d3": dict(n_tasks=5, p=0.6, degrees=3)}


def run(variant: str, setting: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    gen = MultiTabBench(n_features=args.n_features, noise=args.noise,
                        sizes=(args.n_train, args.n_val, args.n_test), **SETTINGS[setting])
    s = gen.sample(seed=args.data_seed + (1000 * seed if args.draw_per_seed else 0))
    xs = [part.x.numpy() for part in (s.train, s.val, s.test)]
    ys = [part.y.numpy().astype(np.float64) for part in (s.train, s.val, s.test)]
    kw = {**BASE, **json.loads(args.extra), **VARIANTS[variant]}  # the variant wins over --extra
    t0 = time.perf_counter()
    if variant.startswith("stl_twin"):
        scores, epochs = [], []
        for j in range(ys[0].shape[1]):
            est = MultiTabEstimator(random_state=seed, task_types=["regression"], **kw)
            est.fit(xs[0], ys[0][:, j], eval_set=(xs[1], ys[1][:, j]))
            scores += est.task_scores(xs[2], ys[2][:, j])
            epochs.append(est.n_epochs_)
    else:
        est = MultiTabEstimator(random_state=seed, task_types=["regression"] * ys[0].shape[1], **kw)
        est.fit(xs[0], ys[0], eval_set=(xs[1], ys[1]))
        scores, epochs = est.task_scores(xs[2], ys[2]), [est.n_epochs_]
    return {"variant": variant, "setting": setting, "seed": seed, "scores": scores, "epochs": epochs,
            "fit_s": round(time.perf_counter() - t0, 2), "extra": args.extra, "n_train": args.n_train}


def summary(path: Path, reference: str) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ref = {(r["setting"], r["seed"], r["extra"], r["n_train"]): r["scores"] for r in rows if r["variant"] == reference}
    table: dict[str, list[float]] = {}
    for r in rows:
        key = (r["setting"], r["seed"], r["extra"], r["n_train"])
        if key in ref:
            table.setdefault(f'{r["variant"]} {r["extra"]} n={r["n_train"]}', []).append(delta_m(r["scores"], ref[key]))
    for k, v in sorted(table.items()):
        print(f"{k:60s} Δm vs {reference}: mean {np.mean(v):+.2f}%  ({len(v)} runs: {' '.join(f'{x:+.1f}' for x in v)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", nargs="+", default=["base"])
    ap.add_argument("--settings", nargs="+", default=["p0.6_t3_d3"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--n-features", type=int, default=8)
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--n-val", type=int, default=250)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--noise", type=float, default=0.01)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--draw-per-seed", action="store_true",
                    help="a new draw of the task weights and rows per seed (data seed + 1000 * seed), not only a new model seed")
    ap.add_argument("--extra", default="{}", help="JSON of estimator settings applied to every variant (a variant's own settings win)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--summary", type=Path, help="print Δm of every variant against --reference from a JSONL file")
    ap.add_argument("--reference", default="stl_twin")
    args = ap.parse_args()
    if args.summary:
        summary(args.summary, args.reference)
        return
    torch.set_num_threads(1)
    for setting in args.settings:
        for seed in args.seeds:
            for v in args.variants:
                row = run(v, setting, seed, args)
                line = json.dumps(row)
                print(line, file=sys.stderr, flush=True)
                if args.out:
                    with args.out.open("a") as f:
                        f.write(line + "\n")


if __name__ == "__main__":
    main()
