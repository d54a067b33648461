"""Micro-timings behind issue 26's speed notes on MultiTab-Net's attention (CPU, one thread); writes JSON.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab_attention_micro.py \
        --out benchmarks/results/multitab-attention-micro-2026-11-27.json

Each entry is the median thread CPU time (µs) of ``--repeats`` calls, measured side by side:

* ``softmax``: torch's softmax over a short last axis of 11 (MultiTab's 8 feature + 3 task
  tokens) against the same rows padded to 16;
* ``sdpa``: forward + backward of the inter-feature attention ``[32, H, 11, 4]`` under the
  task mask, as the core's sdpa backend runs it, against the same keys padded to 16 masked keys;
* ``dispatch``: the inter-sample attention ``[1, 4, 32, 44]`` forward + backward through the
  kernel registry against a direct call of the sdpa backend;
* ``qkv``: the three query / key / value projections of a ``[1, 32, 176]`` row block against one
  fused projection (weights concatenated per call), forward + backward;
* ``step``: one MultiTab-Net training step (token width 16 and 8, 3 tasks, batch 32) with the
  registry's sdpa backend as it is and with a key-padding wrapper swapped in (not shipped).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from tabzoo import kernels  # noqa: E402
from tabzoo.kernels.attention import attention_sdpa  # noqa: E402
from tabzoo.kernels.op_registry import _BACKENDS  # noqa: E402
from tabzoo.masks import task_tokens  # noqa: E402


def med_us(fn: Callable[[], Any], repeats: int) -> float:
    """Median thread CPU microseconds of ``fn()`` (5 warm-up calls first)."""
    for _ in range(5):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.thread_time()
        fn()
        ts.append(time.thread_time() - t0)
    return round(float(np.median(ts)) * 1e6, 1)


def padded_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Any = None, scale: float | None = None) -> torch.Tensor:
    """The sdpa backend with 9-15 keys padded to 16 masked keys (the variant measured, not shipped)."""
    nk = k.shape[2]
    if not 8 < nk < 16:
        return attention_sdpa(q, k, v, mask=mask, scale=scale)
    dense = torch.ones(q.shape[2], nk, dtype=torch.bool) if mask is None else (
        mask.materialize(q.shape[2], nk) if hasattr(mask, "materialize") else mask)
    dense = torch.cat([dense, dense.new_zeros(*dense.shape[:-1], 16 - nk)], dim=-1)
    return attention_sdpa(q, F.pad(k, (0, 0, 0, 16 - nk)), F.pad(v, (0, 0, 0, 16 - nk)), mask=dense, scale=scale)


def step_times(repeats: int) -> dict[str, Any]:
    from tabzoo_multitab.config import MultiTabConfig
    from tabzoo_multitab.model import MultiTabNet

    out: dict[str, Any] = {}
    original = _BACKENDS["masked_attention"]["sdpa"]
    for e, heads in ((16, 4), (8, 2)):
        torch.manual_seed(0)
        model = MultiTabNet(MultiTabConfig(n_num=8, tasks=[(f"t{i}", "regression") for i in range(3)], d_embed=e,
                                           n_heads=heads, row_heads=4)).train()
        x, y = torch.randn(32, 8), torch.randn(32, 3)

        def step(model: MultiTabNet = model, x: torch.Tensor = x, y: torch.Tensor = y) -> None:
            model.zero_grad(set_to_none=True)
            F.mse_loss(model(x), y).backward()

        got: dict[str, list[float]] = {"as_is": [], "padded": []}
        for _ in range(repeats // 10):
            for name in got:
                _BACKENDS["masked_attention"]["sdpa"] = original if name == "as_is" else dataclasses.replace(original, fn=padded_sdpa)
                try:
                    got[name].append(med_us(step, 10))
                finally:
                    _BACKENDS["masked_attention"]["sdpa"] = original
        out[f"width_{e}"] = {k: round(float(np.median(v)), 1) for k, v in got.items()}
        out[f"width_{e}"]["padded_over_as_is"] = round(out[f"width_{e}"]["padded"] / out[f"width_{e}"]["as_is"], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    if args.out is not None and args.out.exists():
        raise SystemExit(f"{args.out} exists; results are never overwritten, pick another name.")
    torch.set_num_threads(1)
    r = args.repeats
    rep: dict[str, Any] = {"benchmark": "multitab-attention-micro", "machine": machine_info(), "repeats": r}
    s11, s16 = torch.randn(128, 11, 11), torch.randn(128, 11, 16)
    rep["softmax_us"] = {"[128,11,11]": med_us(lambda: s11.softmax(-1), r), "[128,11,16]": med_us(lambda: s16.softmax(-1), r)}
    mask = task_tokens(8, 3, "T-/->T")
    rep["sdpa_fwd_bwd_us"] = {}
    for h in (4, 2):
        q, k, v = (torch.randn(32, h, 11, 4, requires_grad=True) for _ in range(3))
        rep["sdpa_fwd_bwd_us"][f"[32,{h},11,4]"] = {
            "as_is": med_us(lambda q=q, k=k, v=v: attention_sdpa(q, k, v, mask=mask).sum().backward(), r),
            "padded_to_16": med_us(lambda q=q, k=k, v=v: padded_sdpa(q, k, v, mask=mask).sum().backward(), r)}
    q = torch.randn(1, 4, 32, 44, requires_grad=True)
    rep["dispatch_fwd_bwd_us"] = {"registry": med_us(lambda: kernels.masked_attention(q, q, q).sum().backward(), r),
                                  "direct_backend": med_us(lambda: attention_sdpa(q, q, q).sum().backward(), r)}
    lin = [torch.nn.Linear(176, 176) for _ in range(3)]
    xr = torch.randn(1, 32, 176, requires_grad=True)
    rep["qkv_fwd_bwd_us"] = {
        "three": med_us(lambda: sum(m(xr).sum() for m in lin).backward(), r),
        "fused": med_us(lambda: F.linear(xr, torch.cat([m.weight for m in lin]), torch.cat([m.bias for m in lin])).sum().backward(), r)}
    rep["step_fwd_bwd_us"] = step_times(r)
    rep["load_average_at_end"] = machine_info().get("load_average_at_start")
    print(json.dumps(rep, indent=1))
    if args.out:
        args.out.write_text(json.dumps(rep, indent=1) + "\n")


if __name__ == "__main__":
    main()
