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

``--configs 300:32 3000:256`` times each (training rows, batch) pair: the grid's smallest size at
its batch of 32 and its largest at the estimator's ``batch_size="auto"`` of 256, where the
row-mixing attention and the flattened-row block dominate instead of the per-op overhead.

``--variants sdpa`` adds MultiTab-Net fitted with the core's sdpa forced for every attention
(``tabzoo.kernels.use("sdpa")``: the path before its short-key backend), side by side.

Besides the fit's CPU time divided by the epochs (``cpu_s_per_epoch``: it includes the fit's fixed
costs, building the model and the preprocessing, spread over few epochs), each epoch is timed
inside the training loop (``loop_cpu_s_per_epoch``: from the epoch's first minibatch to the end of
its last step; the median over the fit's epochs), and the ratio to MMoE is given for both.

``train_step_mflop``: the matmul and attention MFLOP of one training forward + backward at the
batch size (torch's FlopCounterMode, sdpa forced so the attention counts), per model: how much
more arithmetic MultiTab-Net does than MMoE at the same width, whatever the kernels.

``--n-val N`` validates every fit on ``N`` rows after each epoch (patience = ``--epochs``, so no
fit stops early): the epoch then includes the validation pass and, under ``select="per_task"`` /
``"guarded"`` (``--variants l1_pertask l1_guarded``, ``--mmoe-variants pertask guarded``), the
per-task snapshots. Without it no fit validates and the selection modes equal joint.

``--phases N`` also times ``N`` training steps of one batch per model, split into forward (with
the loss), backward, gradient clipping and the Adam update (thread CPU time, models alternated,
medians; ``phases_ms`` per row), to show where a step's time goes.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info, matmul_gflops  # noqa: E402
from tabzoo import kernels  # noqa: E402
from tabzoo_multitab.dropout import use_word_dropout  # noqa: E402
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
VARIANTS: dict[str, dict[str, Any]] = {"rff3": dict(row_ff_mult=3), "rff1": dict(row_ff_mult=1), "self": dict(row_scope="self"),
                                       "rff3_self": dict(row_ff_mult=3, row_scope="self"), "sdpa": dict(kernels="sdpa"),
                                       # the paper's backbone without the skip path (the default since 2026-11-29)
                                       "noskip": dict(skip_hidden=0),
                                       # one encoder block instead of two (issue 26 item 4: the cheaper configuration)
                                       "l1": dict(n_layers=1),
                                       # one block with per-task / guarded selection (issue 26; needs --n-val)
                                       "l1_pertask": dict(n_layers=1, select="per_task"),
                                       "l1_guarded": dict(n_layers=1, select="guarded"),
                                       # issue 26's cheaper steps: dropout masks from 16-bit random words, and
                                       # with a 64-wide skip path
                                       "l1_guarded_words": dict(n_layers=1, select="guarded", dropout_masks="words"),
                                       "l1_guarded_words_skip64": dict(n_layers=1, select="guarded", dropout_masks="words",
                                                                       skip_hidden=64),
                                       # word masks, dropout only after hidden activations (none on the residual
                                       # branches), and with one inter-sample head
                                       "l1_guarded_words_hidden": dict(n_layers=1, select="guarded", dropout_masks="words",
                                                                       dropout_sites="hidden"),
                                       "l1_guarded_words_rh1": dict(n_layers=1, select="guarded", dropout_masks="words",
                                                                    row_heads=1),
                                       "l1_guarded_words_hidden_rh1": dict(n_layers=1, select="guarded", dropout_masks="words",
                                                                           dropout_sites="hidden", row_heads=1),
                                       # ... and one inter-sample head (and a feed-forward as wide as the token)
                                       "l1_guarded_words_skip64_rh1": dict(n_layers=1, select="guarded", dropout_masks="words",
                                                                           skip_hidden=64, row_heads=1),
                                       "l1_guarded_words_skip64_ff1_rh1": dict(n_layers=1, select="guarded",
                                                                               dropout_masks="words", skip_hidden=64,
                                                                               ff_mult=1, row_heads=1)}
#: MMoE options timed with ``--mmoe-variants``
MMOE_VARIANTS: dict[str, dict[str, Any]] = {"pertask": dict(select="per_task"), "guarded": dict(select="guarded"),
                                             # MMoE with MultiTab-Net's word dropout masks (a fairness check: how
                                             # much of the gap the mask draws were; the estimator option is
                                             # MultiTab-Net's only, so this patches the built MMoE)
                                             "words": dict(word_masks=True)}
_EPOCHS: list[float] = []  # CPU seconds of each epoch inside the training loop (filled by timed_batches)


def timed_batches() -> None:
    """Record each training epoch's CPU time, from its first minibatch to the end of its last step."""
    from tabzoo_multitab.training import MultiTaskFit

    original = MultiTaskFit.batches

    def batches(self: Any, epoch: int) -> Any:
        t0 = time.process_time()
        yield from original(self, epoch)
        _EPOCHS.append(time.process_time() - t0)

    MultiTaskFit.batches = batches  # type: ignore[method-assign]


def models(row_dims: list[int], variants: list[str] = (), mmoe_variants: list[str] = ()) -> dict[str, dict[str, Any]]:  # type: ignore[assignment]
    # pinned: ``multitab`` = two blocks, every model joint selection unless its variant says otherwise, as in
    # every committed run (the estimator's default is one block with guarded selection since 2026-11-29)
    # (and the step of every committed run: a 128-wide skip path, feature feed-forward 2x, nn.Dropout's masks)
    mt = dict(architecture="multitab", n_layers=2, select="joint", skip_hidden=128, ff_mult=2, dropout_masks="bernoulli",
              dropout_sites="all")
    mm = dict(architecture="mmoe", select="joint")
    out: dict[str, dict[str, Any]] = {"mmoe": dict(mm), "multitab": dict(mt)}
    for v in mmoe_variants:
        out[f"mmoe_{v}"] = mm | MMOE_VARIANTS[v]
    for r in row_dims:
        out[f"multitab_r{r}"] = mt | dict(row_dim=r)
    for v in variants:
        out[f"multitab_{v}"] = mt | VARIANTS[v]
    return out


def step_flops(ests: dict[str, MultiTabEstimator], X: np.ndarray, batch: int) -> dict[str, float]:
    """Matmul and attention MFLOP of one training forward + backward on ``batch`` rows per model
    (torch's FlopCounterMode, the core's sdpa forced so the attention is counted; elementwise
    work is not counted)."""
    from torch.utils.flop_counter import FlopCounterMode

    xb = torch.tensor(X[:batch], dtype=torch.float32)
    out: dict[str, float] = {}
    for n, e in ests.items():
        m = e.model_.train()
        with kernels.use("sdpa"), FlopCounterMode(display=False) as fc:
            m(xb, None).square().sum().backward()
        m.zero_grad(set_to_none=True)
        out[n] = round(fc.get_total_flops() / 1e6, 3)
    return out


def phase_times(ests: dict[str, MultiTabEstimator], X: np.ndarray, Y: np.ndarray, steps: int, batch: int) -> dict[str, dict[str, float]]:
    """Median thread CPU milliseconds of forward+loss, backward, clipping and Adam per training step."""
    from tabzoo_multitab.losses import multitask_loss

    xb, yb = torch.tensor(X[:batch], dtype=torch.float32), torch.tensor(Y[:batch], dtype=torch.float32)
    opts = {n: _ADAM(e.model_.parameters(), lr=1e-3, weight_decay=1e-5, foreach=True) for n, e in ests.items()}
    got: dict[str, dict[str, list[float]]] = {n: {"forward": [], "backward": [], "clip": [], "adam": []} for n in ests}
    for it in range(steps + 5):
        for n, e in ests.items():
            m = e.model_.train()
            t0 = time.thread_time()
            loss = multitask_loss(list(m.split(m(xb, None))), yb, m.tasks, None)
            t1 = time.thread_time()
            opts[n].zero_grad(set_to_none=True)
            loss.backward()
            t2 = time.thread_time()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            t3 = time.thread_time()
            opts[n].step()
            t4 = time.thread_time()
            if it >= 5:  # warm-up steps are not counted
                for k, dt in zip(("forward", "backward", "clip", "adam"), (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                    got[n][k].append(dt * 1e3)
    out = {n: {k: round(float(np.median(v)), 3) for k, v in d.items()} for n, d in got.items()}
    for d in out.values():
        d["step"] = round(sum(d.values()), 3)
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
    ap.add_argument("--configs", nargs="*", default=[],
                    help="training rows:batch pairs, e.g. 300:32 3000:256 (the grid's smallest and largest; "
                         "default --n-train:--batch-size)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", nargs="*", default=[], choices=sorted(VARIANTS))
    ap.add_argument("--adam", nargs="+", default=["foreach"], choices=sorted(ADAM_IMPLS))
    ap.add_argument("--phases", type=int, default=0, help="also time this many steps split into phases (0 = off)")
    ap.add_argument("--mmoe-variants", nargs="*", default=[], choices=sorted(MMOE_VARIANTS))
    ap.add_argument("--n-val", type=int, default=0,
                    help="validation rows: every fit validates each epoch on them (the cost of early stopping and "
                         "of per-task snapshots counts in the epoch), patience = --epochs so none stops early")
    args = ap.parse_args()
    if args.out is not None and args.out.exists():
        raise SystemExit(f"{args.out} exists; results are never overwritten, pick another name.")
    torch.set_num_threads(1)
    timed_batches()
    report: dict[str, Any] = {"benchmark": "multitab-epoch", "machine": machine_info(),
                              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                              "rows": [], "matmul_fp32_gflops_before": round(matmul_gflops(torch.float32, n=512), 2)}
    configs = [tuple(int(v) for v in c.split(":")) for c in args.configs] or [(args.n_train, args.batch_size)]
    for (n_train, batch_size), width, t in ((c, w, t) for c in configs for w in args.widths for t in args.tasks):
        e, hidden = width.split(":")
        s = MultiTabBench(n_tasks=t, n_features=args.n_features, p=0.6, degrees=3, noise=0.01,
                          sizes=(n_train, max(10, args.n_val), 10)).sample(seed=0)
        X, Y = s.train.x.numpy().astype(np.float64), s.train.y.numpy().astype(np.float64)
        val = (s.val.x.numpy().astype(np.float64), s.val.y.numpy().astype(np.float64)) if args.n_val else None
        per: dict[str, list[float]] = {}
        loop: dict[str, list[float]] = {}
        for arch in ("mmoe", "multitab"):  # first-call costs (imports, allocator) are not an epoch of a model timed
            MultiTabEstimator(architecture=arch, max_epochs=1, val_fraction=0.0, calibration=None, d_embed=int(e),
                              n_heads=2 if int(e) == 8 else 4, task_types=["regression"] * t,
                              batch_size=batch_size).fit(X, Y)
        params: dict[str, int] = {}
        fitted: dict[str, MultiTabEstimator] = {}
        for _ in range(args.repeats):
            for impl, (name, kw) in ((i, m) for i in args.adam
                                     for m in models(args.row_dims, args.variants, args.mmoe_variants).items()):
                use_adam(impl)
                name = name if len(args.adam) == 1 else f"{name}/{impl}"
                est = MultiTabEstimator(d_embed=int(e), n_heads=2 if int(e) == 8 else 4,
                                        hidden=tuple(int(h) for h in hidden.split(",")), n_context=256,
                                        max_epochs=args.epochs, batch_size=batch_size, val_fraction=0.0,
                                        calibration=None, task_types=["regression"] * t, patience=args.epochs,
                                        **({"row_heads": 4} | {k: v for k, v in kw.items() if k not in ("kernels", "word_masks")}))
                if kw.get("word_masks"):
                    build = est._build
                    est._build = lambda build=build: use_word_dropout(build())  # type: ignore[method-assign]
                forced = kw.get("kernels")
                _EPOCHS.clear()
                c0 = time.process_time()
                with kernels.use(forced) if forced else contextlib.nullcontext():
                    est.fit(X, Y, eval_set=val)
                per.setdefault(name, []).append((time.process_time() - c0) / args.epochs)
                loop.setdefault(name, []).append(float(np.median(_EPOCHS)))
                params[name] = sum(p.numel() for p in est.model_.parameters())
                fitted[name] = est
        base = {m: m.split("/")[0] for m in per}  # each model against MMoE under the same Adam update
        ratios = {m: float(np.median([a / b for a, b in zip(v, per[m.replace(base[m], "mmoe", 1)], strict=True)]))
                  for m, v in per.items()}
        ratios |= {f"{m} vs mmoe/{args.adam[0]}": float(np.median([a / b for a, b in zip(v, per[f"mmoe/{args.adam[0]}"], strict=True)]))
                   for m, v in per.items() if len(args.adam) > 1 and not m.startswith("mmoe/")}
        row = dict(d_embed=int(e), hidden=hidden, tasks=t, n_train=n_train, batch_size=batch_size,
                   cpu_s_per_epoch={m: [round(x, 4) for x in v] for m, v in per.items()},
                   ratio_to_mmoe_median=ratios, parameters=params,
                   loop_cpu_s_per_epoch={m: [round(x, 4) for x in v] for m, v in loop.items()},
                   loop_ratio_to_mmoe_median={m: float(np.median([a / b for a, b in zip(v, loop[m.replace(base[m], "mmoe", 1)],
                                                                                      strict=True)]))
                                              for m, v in loop.items()})
        row["train_step_mflop"] = step_flops(fitted, X, batch_size)
        row["mflop_ratio_to_mmoe"] = {m: round(f / row["train_step_mflop"]["mmoe"], 3) for m, f in row["train_step_mflop"].items()}
        if args.phases:
            row["phases_ms"] = phase_times(fitted, X, Y, args.phases, batch_size)
            row["phase_step_ratio_to_mmoe"] = {m: round(d["step"] / row["phases_ms"]["mmoe"]["step"], 3)
                                               for m, d in row["phases_ms"].items() if "mmoe" in row["phases_ms"]}
        report["rows"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        report["matmul_fp32_gflops_after"] = round(matmul_gflops(torch.float32, n=512), 2)
        report["load_average_at_end"] = [round(v, 2) for v in os.getloadavg()]
        if args.out:
            args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
