"""Where the default MultiTab-Net's epoch goes, against MMoE's (issue 26 item 4); prints JSON.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab_default_phases.py \
        --out benchmarks/results/multitab-default-phases-2026-11-29.json

One MultiTab-Bench draw as in ``benchmarks/multitab_epoch.py`` (3,000 training rows, batch 256, 600
validation rows, token width 8, MLPs 128-64, 3 regression tasks, one thread). Per model (the default:
one block with guarded selection; MMoE with joint selection), the fit's CPU seconds per epoch split
into the training steps (``loop``), the validation prediction pass (``val_outputs``), the per-task
snapshots (``selector``) and the rest (``other``: building, preprocessing, metrics, losses); median
over ``--repeats`` alternated fits. Then, on the fitted default, two A/B timings of the code paths
that changed on 2026-11-29: the validation pass at ``chunk`` 512 (before) and 1,024 (after; the
largest output difference is recorded) and one snapshot by ``copy.deepcopy(state_dict)`` (before)
against a per-tensor clone (after).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from tabzoo_multitab import selection as S  # noqa: E402
from tabzoo_multitab import training as T  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_priors import MultiTabBench  # noqa: E402

MODELS: dict[str, dict[str, Any]] = {
    "mmoe": dict(architecture="mmoe", select="joint"),
    # the default when it ran (2026-11-29, before the lite step): pinned
    "default": dict(architecture="multitab", n_layers=1, select="guarded", skip_hidden=128, ff_mult=2,
                    dropout_masks="bernoulli", dropout_sites="all"),
}
_ACC: dict[str, float] = {}


def _instrument() -> None:
    """Accumulate the CPU seconds of the validation pass, the snapshots and the training steps."""
    outputs, update, batches = T._outputs, S.PerTaskSelector.update, T.MultiTaskFit.batches

    def timed_outputs(*a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        r = outputs(*a, **k)
        _ACC["val_outputs"] = _ACC.get("val_outputs", 0.0) + time.process_time() - t0
        return r

    def timed_update(self: Any, *a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        r = update(self, *a, **k)
        _ACC["selector"] = _ACC.get("selector", 0.0) + time.process_time() - t0
        return r

    def timed_batches(self: Any, epoch: int) -> Any:
        t0 = time.process_time()
        yield from batches(self, epoch)
        _ACC["loop"] = _ACC.get("loop", 0.0) + time.process_time() - t0

    T._outputs = timed_outputs  # type: ignore[assignment]
    S.PerTaskSelector.update = timed_update  # type: ignore[method-assign]
    T.MultiTaskFit.batches = timed_batches  # type: ignore[method-assign]


def _median_ms(f: Any, n: int) -> float:
    ts = []
    for _ in range(n):
        t0 = time.process_time()
        f()
        ts.append(time.process_time() - t0)
    return round(1e3 * float(np.median(ts)), 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if args.out is not None and args.out.exists():
        raise SystemExit(f"{args.out} exists; results are never overwritten, pick another name.")
    torch.set_num_threads(1)
    t = 3
    s = MultiTabBench(
        n_tasks=t, n_features=8, p=0.6, degrees=3, noise=0.01, sizes=(3000, 600, 10)
    ).sample(seed=0)
    X, Y = s.train.x.numpy().astype(np.float64), s.train.y.numpy().astype(np.float64)
    val = (s.val.x.numpy().astype(np.float64), s.val.y.numpy().astype(np.float64))
    common = dict(
        d_embed=8,
        n_heads=2,
        row_heads=4,
        hidden=(128, 64),
        n_context=256,
        max_epochs=args.epochs,
        batch_size=256,
        val_fraction=0.0,
        calibration=None,
        task_types=["regression"] * t,
        patience=args.epochs,
    )
    _instrument()
    for kw in MODELS.values():  # first-call costs
        MultiTabEstimator(**(common | kw | {"max_epochs": 1})).fit(X[:300], Y[:300], eval_set=val)
    got: dict[str, dict[str, list[float]]] = {m: {} for m in MODELS}
    fitted: dict[str, MultiTabEstimator] = {}
    for _ in range(args.repeats):
        for name, kw in MODELS.items():
            _ACC.clear()
            c0 = time.process_time()
            fitted[name] = MultiTabEstimator(**(common | kw)).fit(X, Y, eval_set=val)
            total = time.process_time() - c0
            parts = {k: _ACC.get(k, 0.0) for k in ("loop", "val_outputs", "selector")}
            parts["other"] = total - sum(parts.values())
            parts["total"] = total
            for k, v in parts.items():
                got[name].setdefault(k, []).append(v / args.epochs)
    per_epoch = {
        m: {k: round(float(np.median(v)), 4) for k, v in d.items()} for m, d in got.items()
    }
    est = fitted["default"]
    net = est.model_.eval()
    d = est._data(val[0])
    ref = net.predict(d.x_num, d.x_cat, est.context_, chunk=512)
    new = net.predict(d.x_num, d.x_cat, est.context_, chunk=1024)
    ab = {
        "val_pass_ms_chunk512": _median_ms(
            lambda: net.predict(d.x_num, d.x_cat, est.context_, chunk=512), 15
        ),
        "val_pass_ms_chunk1024": _median_ms(
            lambda: net.predict(d.x_num, d.x_cat, est.context_, chunk=1024), 15
        ),
        "val_pass_max_abs_diff": float((new - ref).abs().max()),
        "snapshot_ms_deepcopy": _median_ms(lambda: copy.deepcopy(net.state_dict()), 50),
        "snapshot_ms_clone": _median_ms(
            lambda: {k: v.detach().clone() for k, v in net.state_dict().items()}, 50
        ),
    }
    report = {
        "benchmark": "multitab-default-phases",
        "machine": machine_info(),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        | {
            "n_train": 3000,
            "batch_size": 256,
            "n_val": 600,
            "tasks": t,
            "d_embed": 8,
            "hidden": [128, 64],
        },
        "cpu_s_per_epoch": per_epoch,
        "ratio_to_mmoe": {
            k: round(per_epoch["default"][k] / per_epoch["mmoe"][k], 3) for k in ("loop", "total")
        },
        "ab": ab,
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
