"""Does the prior keep pace with training? The REAL training loop, end to end, against training alone.

For each row count, every repeat runs three ``tabzoo.train.pretrain`` calls on the same model start
(tabflex ``small``, fp32, batch 8, 1 torch thread), in a rotating order (the machine is shared, so
load drifts):

- ``alone``: training on fixed batches, pre-generated before the timing from the very seeds the
  other two runs draw (a prior that hands them back costs nothing), so it does the same compute;
- ``inline``: the ``icl`` prior drawing each batch in the training process (``workers=0``);
- ``prefetch``: the same prior drawn by one background worker (``workers=1``, the default on a
  CPU with >= 2 cores); the training process draws a batch itself when the worker has not
  claimed it yet (``batches_drawn_in_process``).

Episodes/s are measured at steady state from the loop's own per-step times
(``PretrainResult.step_seconds``) after ``--skip`` warm-up steps (the first step of the prefetch run
also waits for the worker to start; that start-up is reported apart). The target of issue 10 is
``prefetch / alone >= 0.8``. The three runs must give identical losses (same batches); the script
checks it. A short bf16-autocast run on the fixed batches says whether bf16 pays on this CPU.

Run: ``uv run python benchmarks/icl_throughput.py [--rows 1024 4096] [--repeats 3] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info, matmul_gflops  # noqa: E402
from tabzoo.train import batch_seed, pretrain  # noqa: E402
from tabzoo.train.loop import cpu_has_fast_bf16  # noqa: E402
from tabzoo.train.prefetch import draw_batch  # noqa: E402
from tabzoo_priors import ICLPrior  # noqa: E402
from tabzoo_tabflex.model import build  # noqa: E402

BATCH = 8
SEED = 0


class FixedBatches:
    """A 'prior' that returns pre-generated batches by step (training alone, no generation cost)."""

    step_aware = True
    name = "fixed pre-generated batches"

    def __init__(self, batches: dict[int, Any]) -> None:
        self.batches = batches

    def sample(self, batch_size: int, *, seed: int, device: Any = "cpu", step: int | None = None) -> Any:
        return self.batches[int(step)]


def _load() -> float:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else float("nan")


def _run(init: dict[str, torch.Tensor], prior: Any, steps: int, skip: int, **options: Any) -> dict[str, Any]:
    model = build({"preset": "small"})
    model.load_state_dict(init)
    load_before = _load()
    t0 = time.perf_counter()
    res = pretrain(model, prior, steps=steps, batch_size=BATCH, seed=SEED, lr=1e-4, progress=False, plot=False,
                   device="cpu", **options)
    wall = time.perf_counter() - t0
    steady = res.step_seconds[skip:]
    return {
        "episodes_per_s": BATCH * len(steady) / sum(steady),
        "episodes_per_s_with_startup": BATCH * steps / wall,
        "first_step_s": res.step_seconds[0],
        "step_s_median": statistics.median(steady),
        "wall_s": wall, "workers": res.workers, "batches_drawn_in_process": res.drawn_in_process if res.workers else steps, "load_before": load_before, "load_after": _load(),
        "losses": res.losses,
    }


def measure_rows(rows: int, steps: int, repeats: int, skip: int, bf16_steps: int) -> dict[str, Any]:
    prior = ICLPrior(max_features=100, n_rows=(rows, rows))
    torch.manual_seed(0)
    init = copy.deepcopy(build({"preset": "small"}).state_dict())
    gen_s, batches = [], {}
    for step in range(steps):
        t = time.perf_counter()
        batches[step] = draw_batch(prior, BATCH, SEED, step, 0, "cpu")
        gen_s.append(time.perf_counter() - t)
    components = [prior.choose(batch_seed(SEED, s, 0)) for s in range(steps)]
    fixed = FixedBatches(batches)
    _run(init, fixed, 2, 1, workers=0, amp="off")  # warm-up: lazy imports (the optimizer's), allocator
    _run(init, prior, 2, 1, workers=1, amp="off")  # warm-up: starts the worker fork server once per process
    modes = {"alone": (fixed, {"workers": 0, "amp": "off"}), "inline": (prior, {"workers": 0, "amp": "off"}),
             "prefetch": (prior, {"workers": 1, "amp": "off"})}
    names = list(modes)
    per_repeat = []
    for r in range(repeats):
        order = names[r % 3:] + names[: r % 3]
        rec: dict[str, Any] = {"order": order}
        for name in order:
            p, opts = modes[name]
            rec[name] = _run(init, p, steps, skip, **opts)
            print(f"rows {rows} repeat {r} {name}: {rec[name]['episodes_per_s']:.2f} episodes/s "
                  f"(load {rec[name]['load_before']})", file=sys.stderr, flush=True)
        same = rec["alone"]["losses"] == rec["inline"]["losses"] == rec["prefetch"]["losses"]
        rec["identical_losses"] = same
        for name in names:
            rec[name].pop("losses")
        rec["ratio_prefetch"] = rec["prefetch"]["episodes_per_s"] / rec["alone"]["episodes_per_s"]
        rec["ratio_inline"] = rec["inline"]["episodes_per_s"] / rec["alone"]["episodes_per_s"]
        rec["ratio_prefetch_with_startup"] = (rec["prefetch"]["episodes_per_s_with_startup"]
                                              / rec["alone"]["episodes_per_s_with_startup"])
        per_repeat.append(rec)
    out: dict[str, Any] = {
        "rows": rows, "batch_size": BATCH, "steps": steps, "skip": skip, "repeats": repeats,
        "components_by_step": components,
        "generation_s_in_process": gen_s, "generation_s_mean": statistics.mean(gen_s),
        "per_repeat": per_repeat,
        "ratio_prefetch_per_repeat": [r["ratio_prefetch"] for r in per_repeat],
        "ratio_prefetch_median": statistics.median(r["ratio_prefetch"] for r in per_repeat),
        "ratio_inline_per_repeat": [r["ratio_inline"] for r in per_repeat],
        "ratio_inline_median": statistics.median(r["ratio_inline"] for r in per_repeat),
        "ratio_prefetch_with_startup_median": statistics.median(r["ratio_prefetch_with_startup"] for r in per_repeat),
        "episodes_per_s_median": {n: statistics.median(r[n]["episodes_per_s"] for r in per_repeat) for n in names},
        "identical_losses": all(r["identical_losses"] for r in per_repeat),
    }
    if bf16_steps:
        fp32 = _run(init, fixed, bf16_steps, 1, workers=0, amp="off")
        bf16 = _run(init, fixed, bf16_steps, 1, workers=0, amp="bf16")
        out["bf16_autocast"] = {
            "steps": bf16_steps, "cpu_has_fast_bf16": cpu_has_fast_bf16(),
            "fp32_step_s": fp32["step_s_median"], "bf16_step_s": bf16["step_s_median"],
            "bf16_speedup": fp32["step_s_median"] / bf16["step_s_median"],
            "loss_max_abs_diff": max(abs(a - b) for a, b in zip(fp32["losses"], bf16["losses"], strict=True)),
        }
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--steps", type=int, nargs="+", default=[16, 10], help="steps per run, one per --rows")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip", type=int, default=2, help="warm-up steps left out of the steady-state rate")
    ap.add_argument("--bf16-steps", type=int, default=3, help="steps of the bf16 check (0 = none), per row count")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here (never overwritten)")
    args = ap.parse_args(argv)
    if args.out is not None and args.out.exists():
        ap.error(f"{args.out} exists; choose a new name (results are never overwritten)")
    steps = args.steps if len(args.steps) == len(args.rows) else [args.steps[0]] * len(args.rows)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "icl_throughput", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_info(), "threads": 1, "model": "tabflex small, fp32 (amp off)",
        "prior": "icl (tabzoo_priors.ICLPrior, max_features 100, fixed rows per run)",
        "matmul_gflops_start": {"fp32": matmul_gflops(torch.float32), "bf16": matmul_gflops(torch.bfloat16, n=512)},
        "target": "episodes/s end to end (prefetch) >= 0.8 x training alone on fixed batches",
        "results": [measure_rows(r, s, args.repeats, args.skip, args.bf16_steps) for r, s in zip(args.rows, steps,
                                                                                                  strict=True)],
    }
    result["matmul_gflops_end"] = {"fp32": matmul_gflops(torch.float32)}
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    result["wall_s"] = time.perf_counter() - t0
    result["target_met"] = all(r["ratio_prefetch_median"] >= 0.8 for r in result["results"])
    text = json.dumps(result, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
