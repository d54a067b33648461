"""End-to-end episodes/s (icl prior + training step) vs training alone on a fixed batch.

Interleaved in one run (the machine is shared, so load drifts): per iteration one fresh batch is
generated and trained on, and one step runs on a fixed pre-generated batch. Prints JSON.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time

import torch
from tabzoo.train.loop import episode_loss, model_inputs
from tabzoo_priors import ICLPrior
from tabzoo_tabflex.model import build

torch.set_num_threads(1)


def step(model, opt, batch):
    x, y = model_inputs(model, batch)
    loss = episode_loss(model, model(x, y).float(), batch)
    opt.zero_grad()
    loss.backward()
    opt.step()


def main(rows: int = 1024, batch_size: int = 8, iters: int = 4) -> dict:
    prior = ICLPrior(max_features=100)
    model = build({"preset": "small"})
    opt = torch.optim.AdamW(model.parameters(), 1e-4)
    fixed = prior.sample(batch_size, seed=10_000, n_rows=rows)
    step(model, opt, fixed)  # warm-up
    gen, train_new, train_fixed = [], [], []
    for i in range(iters):
        t = time.perf_counter()
        b = prior.sample(batch_size, seed=i, n_rows=rows)
        gen.append(time.perf_counter() - t)
        t = time.perf_counter()
        step(model, opt, b)
        train_new.append(time.perf_counter() - t)
        t = time.perf_counter()
        step(model, opt, fixed)
        train_fixed.append(time.perf_counter() - t)
    e2e = batch_size / (statistics.mean(gen) + statistics.mean(train_new))
    alone = batch_size / statistics.mean(train_fixed)
    return {"machine": platform.processor() or platform.machine(), "torch": torch.__version__, "threads": 1,
            "model": "tabflex small (0.58M), fp32", "rows": rows, "batch_size": batch_size, "iters": iters,
            "gen_s": gen, "train_new_s": train_new, "train_fixed_s": train_fixed,
            "episodes_per_s_end_to_end": e2e, "episodes_per_s_training_alone": alone, "ratio": e2e / alone,
            "target": 0.8}


if __name__ == "__main__":
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    print(json.dumps(main(rows), indent=2))
