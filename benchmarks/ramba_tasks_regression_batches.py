"""Why Ramba's regression training loss "rises" on nyc-arr-delay: the batches, not the optimiser.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/ramba_tasks_regression_batches.py \
        > benchmarks/results/ramba-tasks-regression-batches-<date>.json

On the draws of ``ramba_tasks_model.py`` (draw seed 12345; ``--train`` / ``--val`` / ``--test``
sizes, default the small budget 1,000 / 300 / 1,000) and with the target's statistics at the
task's val start (what fine-tuning z-scores with), replays the minibatches
:class:`tabzoo_ramba.train.FinetuneTask` draws for each seed (``default_rng(seed)``, ``--batch-size``
rows without replacement per step, ``--steps`` steps) and prints the squared error of the best
constant (the draw's mean in z-units) on them: the mean over the first and the last 20 batches,
raw and with the training target winsorized at ``--winsorize`` (the 1st / 99th percentiles by
default). If these match the model's recorded ``loss_first_last_20``, the "rise" is in the data
the batches hold. Also: each draw's mean, and the share of its sum of squared deviations that
its top 1 % of rows hold.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from ramba_tasks_model import _draws  # noqa: E402


def constant_losses(z: np.ndarray, seed: int, steps: int, batch_size: int) -> list[float]:
    """Squared error of ``z.mean()`` on each of the first ``steps`` batches that
    :class:`~tabzoo_ramba.train.FinetuneTask` draws for ``seed`` (its own ``batches``, epoch after
    epoch; ``z`` ``[n]``: the training target in z-units)."""
    import torch
    from tabzoo_ramba.train import FinetuneTask

    task = FinetuneTask([None] * len(z), torch.as_tensor(z), kind="regression", batch_size=batch_size, seed=seed,
                        encoder=None)
    batches = itertools.chain.from_iterable(task.batches(epoch) for epoch in itertools.count())
    return [float(np.mean((z[b] - z.mean()) ** 2)) for b in itertools.islice(batches, steps)]


def main() -> None:
    from tabzoo_ramba import Ramba, SamplerConfig
    from tabzoo_ramba.tasks import get_task

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="nyc-arr-delay")
    p.add_argument("--train", type=int, default=1000)
    p.add_argument("--val", type=int, default=300)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--winsorize", type=float, default=0.01)
    args = p.parse_args()
    bt = get_task(args.task)
    db = bt.load()
    draw = _draws(bt.split(db), args.train, args.val, args.test)
    r = Ramba(
        config={"preset": "tiny", "text_encoder": "hashing"},
        sampler=SamplerConfig(),
        progress=False,
    )
    r.bind(db, bt.task, bt.val_start)
    mu, sd = r.stats.get(bt.task.entity_table, bt.task.target) if r.stats else (0.0, 1.0)
    y = np.asarray(draw["train"].y, dtype=np.float64)
    lo, hi = np.quantile(y, [args.winsorize, 1.0 - args.winsorize])
    out: dict = {
        "task": args.task,
        "n": {k: len(v) for k, v in draw.items()},
        "draw_seed": 12345,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "winsorize": args.winsorize,
        "target_stats_at_val_start": [mu, sd],
        "mean": {k: float(np.mean(v.y)) for k, v in draw.items()},
        "top1pct_share_of_sum_of_squares": {},
        "constant_loss_first_last_20": {},
    }
    for k, sp in draw.items():
        dev = np.sort((sp.y - sp.y.mean()) ** 2)[::-1]
        out["top1pct_share_of_sum_of_squares"][k] = float(
            dev[: max(1, len(dev) // 100)].sum() / dev.sum()
        )
    for s in (int(x) for x in args.seeds.split(",")):
        for name, t in (("raw", y), ("winsorized", np.clip(y, lo, hi))):
            losses = constant_losses((t - mu) / sd, s, args.steps, args.batch_size)
            out["constant_loss_first_last_20"][f"{name}_seed_{s}"] = [
                float(np.mean(losses[:20])),
                float(np.mean(losses[-20:])),
            ]
    out |= {"load_average": list(os.getloadavg()), "machine": machine_info()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
