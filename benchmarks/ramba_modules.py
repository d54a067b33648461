"""Where Ramba's forward + backward time goes per module part at a short length: torch ops and
self CPU time of the embedding, the gates, each block's SSM, structural attentions and
norms / residuals, and the final norm with the loss; printed as one JSON document.

    OMP_NUM_THREADS=1 uv run python benchmarks/ramba_modules.py --out benchmarks/results/ramba-modules-<date>.json

The ``small`` Ramba of ``benchmarks/ramba.py`` (hashing encoder, seed 0, eval mode) on the
synthetic batch of L tokens (default 512), forward + ``sum().backward()``, profiled by
torch.profiler over ``--repeats`` calls after two warm-ups; the dense transformer of equal width and
depth alongside. Attribution: forward ops to the innermost part whose ``record_function`` range
(entered by module hooks, or around ``embed`` / ``gates``) holds them; backward ops (the autograd
engine's ``evaluate_function`` events and everything under them) to the part of the forward op
that made the node (same ``sequence_nr``); the rest (the loss, ``zero_grad``, the engine itself) is
``other``. Per part: self CPU ms and profiler events (ops, nested ones included) per call, forward
and backward apart; ``norms_residual`` is what a block runs outside its three mixers. Also the share of
the profiled self time in top-level ops (called from Python or the engine) whose whole time,
children included, is below ``--small-us`` (20 us): the per-op overhead regime. And the cost of
the backend choice the layers make on every forward (``tabzoo_ramba.layers._fused``: one
``select_backend`` per fused op call, 3 per block), per call on the first block's inputs. One torch
thread.
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

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_info, matmul_gflops  # noqa: E402
from ramba import _collated, _fwd_bwd, _synthetic_host_batch, _write, scaling_models  # noqa: E402

torch.set_num_threads(1)
PREFIX = "part:"


def _ranges(model: torch.nn.Module, parts: dict[str, torch.nn.Module]) -> list[Any]:
    """Module hooks that open a ``part:<name>`` range around each part's forward; returns the handles."""
    from torch.autograd.profiler import record_function

    handles: list[Any] = []
    open_: dict[int, list[Any]] = {}
    for name, mod in parts.items():

        def pre(m: Any, args: Any, name: str = name) -> None:
            r = record_function(PREFIX + name)
            r.__enter__()
            open_.setdefault(id(m), []).append(r)

        def post(m: Any, args: Any, out: Any) -> None:
            open_[id(m)].pop().__exit__(None, None, None)

        handles += [mod.register_forward_pre_hook(pre), mod.register_forward_hook(post)]
    return handles


def _wrap_method(obj: Any, attr: str, name: str) -> None:
    from torch.autograd.profiler import record_function

    fn = getattr(obj, attr)

    def wrapped(*a: Any, **k: Any) -> Any:
        with record_function(PREFIX + name):
            return fn(*a, **k)

    setattr(obj, attr, wrapped)


def _part_of(e: Any) -> str | None:
    p = e
    while p is not None:
        if p.name.startswith(PREFIX):
            return p.name[len(PREFIX) :]
        p = p.cpu_parent
    return None


def _is_range(e: Any) -> bool:
    return e.name.startswith(PREFIX) or e.name.startswith("autograd::engine::evaluate_function")


def attribute(events: list[Any], repeats: int, small_us: float) -> dict[str, Any]:
    """Self time and op counts per part (see the module docstring)."""
    seq_part: dict[int, str] = {}
    for e in events:  # forward ops: their part, keyed by the autograd sequence number
        if e.sequence_nr >= 0 and not e.name.startswith("autograd::engine"):
            part = _part_of(e)
            if part is not None:
                seq_part.setdefault(e.sequence_nr, part)
    stats: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    total = small = 0.0
    for e in events:
        if e.name.startswith(PREFIX) or e.name == "ProfilerStep*":
            continue
        part, phase = _part_of(e), "forward"
        if part is None:  # backward: the evaluate_function above it
            p, node = e, None
            while p is not None:
                if p.name.startswith("autograd::engine::evaluate_function"):
                    node = p
                p = p.cpu_parent
            if node is not None:
                phase, part = (
                    "backward",
                    seq_part.get(node.sequence_nr, "other (unattributed backward)"),
                )
            else:
                part = "other"
        self_us = e.self_cpu_time_total
        total += self_us
        s = stats[part]
        s[f"{phase}_self_ms"] += self_us / 1e3 / repeats
        if not _is_range(e):
            s[f"{phase}_ops"] += 1 / repeats
        top = e.cpu_parent is None or _is_range(e.cpu_parent)
        if top and not _is_range(e) and e.cpu_time_total < small_us:
            small += e.cpu_time_total
    return {
        "parts": {k: dict(v) for k, v in sorted(stats.items())},
        "self_ms_per_call": total / 1e3 / repeats,
        "small_op_share": small / total if total else 0.0,
    }


def _profile(fn: Any, repeats: int, small_us: float) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    for _ in range(2):
        fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        c0 = time.thread_time()
        for _ in range(repeats):
            fn()
        cpu = (time.thread_time() - c0) / repeats * 1e3
    out = attribute(list(prof.events()), repeats, small_us)
    out["profiled_cpu_ms_per_call"] = cpu  # with the profiler's own per-op cost
    return out


def selection_us(ramba: Any, batch: dict[str, Any], calls: int = 2000) -> dict[str, float]:
    """CPU us per ``layers._fused`` call for ``bimamba_inner`` and ``gathered_attention``, on the
    inputs the first block passes them (shapes of ``batch``)."""
    import tabzoo_ramba.layers as layers

    blk, length = ramba.blocks[0], int(batch["kind"].shape[1])
    e = blk.ssm.fwd.D.shape[0]
    x, z = torch.randn(2, 1, length, e).unbind(0)
    gate = torch.rand(1, length)
    ssm = {
        "x": x,
        "z": z,
        "gate": gate,
        "open_": (gate > 0).float(),
        **blk.ssm._params("f", blk.ssm.fwd),
        **blk.ssm._params("b", blk.ssm.bwd),
    }
    st = batch["struct"]
    gat = {
        "qkv": torch.randn(length, 3 * ramba.cfg.d_model),
        "q_tok": st["row_tok"],
        "k_tok": st["rel_keys"],
        "n_heads": ramba.cfg.n_heads,
        "scale": None,
    }
    out = {}
    for op, inputs in (("bimamba_inner", ssm), ("gathered_attention", gat)):
        for _ in range(100):
            layers._fused(op, inputs)
        t = time.thread_time()
        for _ in range(calls):
            layers._fused(op, inputs)
        out[op] = (time.thread_time() - t) / calls * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--small-us", type=float, default=20.0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from tabzoo.kernels.scan_cpu import NAME, available

    models = scaling_models()
    ramba, dense = models["ramba"], models["dense"]
    parts: dict[str, torch.nn.Module] = {}
    for i, blk in enumerate(ramba.blocks):
        parts[f"block{i}.norms_residual"] = blk
        parts.update(
            {f"block{i}.ssm": blk.ssm, f"block{i}.intra": blk.intra, f"block{i}.rel": blk.rel}
        )
    parts["final_norm"] = ramba.norm
    handles = _ranges(ramba, parts)
    _wrap_method(ramba, "embed", "embed")
    _wrap_method(ramba, "gates", "gates")
    for i, layer in enumerate(dense.layers):
        handles += _ranges(dense, {f"dense.layer{i}": layer})
    batch = _collated(_synthetic_host_batch(args.length, ramba.cfg.d_text), ramba.cfg.max_rel_rows)
    x = torch.randn(1, batch["kind"].shape[1], ramba.cfg.d_model)
    out: dict[str, Any] = {
        "benchmark": "ramba_modules",
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine_info(),
        "matmul_gflops": {"fp32": matmul_gflops(torch.float32, n=1024)},
        "cpu_fused_library": {"name": NAME, "available": available()},
        "argv": sys.argv[1:],
        "out_file": args.out,
        "L": int(batch["kind"].shape[1]),
        "load_average_start": list(os.getloadavg()),
        "method": " ".join(__doc__.split("\n\n")[2].split()),
    }
    out["ramba_fwdbwd"] = _profile(
        lambda: _fwd_bwd(ramba, lambda: ramba(batch)), args.repeats, args.small_us
    )
    out["dense_fwdbwd"] = _profile(
        lambda: _fwd_bwd(dense, lambda: dense(x)), args.repeats, args.small_us
    )
    out["fused_selection_us_per_call"] = selection_us(ramba, batch)
    out["load_average_end"] = list(os.getloadavg())
    for h in handles:
        h.remove()
    _write(out)
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
