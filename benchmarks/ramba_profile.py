"""Where Ramba's forward and backward time goes against the dense transformer: torch.profiler per-op
self CPU time and call counts, printed as one JSON document.

    OMP_NUM_THREADS=1 uv run python benchmarks/ramba_profile.py --out benchmarks/results/ramba-profile-<date>.json

For each length (default 512 and 1,024 tokens) and each model (the ``small`` Ramba of
``benchmarks/ramba.py``, the dense transformer of equal width and depth, and the plugin's dense
variant), two phases are profiled: ``forward`` (no grad) and ``fwdbwd`` (forward +
``sum().backward()``), each over ``--repeats`` calls after warm-ups. Per op (torch's op name,
autograd backward nodes included): self CPU ms per call, calls per call, and the share of the
phase's total self time. Also the number of ops launched per call and the ops' total. One
torch thread; the batch is collated (index built on the host) before profiling.

Per length also: the matmul FLOPs of each model's forward (``torch.utils.flop_counter``), the
GFLOP/s of one linear layer of Ramba's shapes, and Ramba's first block's SSM and intra-entity
attention timed apart and one after the other (``sequence_*``: what the cache costs between them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _machine import best_cpu_time, machine_info, matmul_gflops  # noqa: E402
from ramba import _collated, _fwd_bwd, _synthetic_host_batch, _write, scaling_models  # noqa: E402

torch.set_num_threads(1)


def _profile(fn: Any, repeats: int, top: int) -> dict[str, Any]:
    """Per-op self CPU time of ``repeats`` calls of ``fn`` (after two warm-ups), per call."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(2):
        fn()
    t0, c0 = time.perf_counter(), time.thread_time()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(repeats):
            fn()
    wall, cpu = (time.perf_counter() - t0) / repeats, (time.thread_time() - c0) / repeats
    events = [e for e in prof.key_averages() if e.key != "ProfilerStep*"]
    total = sum(e.self_cpu_time_total for e in events)
    ops = sorted(events, key=lambda e: -e.self_cpu_time_total)
    return {"profiled_wall_ms_per_call": wall * 1e3, "profiled_cpu_ms_per_call": cpu * 1e3,
            "self_ms_per_call": total / 1e3 / repeats,
            "ops_per_call": sum(e.count for e in events) / repeats,
            "top": [{"op": e.key, "self_ms": e.self_cpu_time_total / 1e3 / repeats, "calls": e.count / repeats,
                     "share": e.self_cpu_time_total / total} for e in ops[:top]]}


def _timed_cpu(fn: Any, repeats: int) -> float:
    """Best thread CPU ms per call over ``repeats`` calls (after a warm-up), without the profiler."""
    return best_cpu_time(fn, repeats=repeats, warmup=1) * 1e3


def _flops(fn: Any) -> float:
    """Matmul FLOPs of one call (torch's flop counter: mm, bmm, addmm, attention)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        fn()
    return float(counter.get_total_flops())


def _extras(ramba: Any, batch: dict[str, Any], calls: dict[str, Any]) -> dict[str, Any]:
    """FLOPs per forward, one linear's GFLOP/s at Ramba's shapes, and apart-vs-in-sequence timing."""
    length = int(batch["kind"].shape[1])
    out: dict[str, Any] = {f"{name}_forward_matmul_flops": _flops(fn) for name, (_, fn) in calls.items()}
    d = ramba.cfg.d_model
    lin, x = torch.nn.Linear(d, 4 * d), torch.randn(length, d)
    with torch.no_grad():
        out["linear_d_to_4d_gflops"] = 2 * length * d * 4 * d / _timed_cpu(lambda: lin(x), 20) / 1e6
        blk, st = ramba.blocks[0], batch["struct"]
        x0, gate = ramba.embed(batch), ramba.gates(batch)[0]
        ssm = lambda: blk.ssm(blk.n1(x0), gate, batch["pad"])  # noqa: E731
        intra = lambda: blk.intra(blk.n2(x0), st)  # noqa: E731
        out["sequence_ssm_cpu_ms"] = _timed_cpu(ssm, 20)
        out["sequence_intra_cpu_ms"] = _timed_cpu(intra, 20)
        out["sequence_ssm_then_intra_cpu_ms"] = _timed_cpu(lambda: (ssm(), intra()), 20)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", default=None, help="also write the JSON here, after every length")
    args = parser.parse_args()
    from tabzoo.kernels.op_registry import dispatch  # noqa: F401 - registry loaded before timing
    from tabzoo.kernels.scan_cpu import NAME, available

    out: dict[str, Any] = {"benchmark": "ramba_profile", "date": time.strftime("%Y-%m-%d"), "machine": machine_info(),
                           "matmul_gflops": {"fp32": matmul_gflops(torch.float32, n=1024)},
                           "scan_cpu_fused_available": available(), "cpu_fused_library": NAME,
                           "argv": sys.argv[1:], "out_file": args.out, "rows": []}
    models = scaling_models()
    ramba, dense, mixer = models["ramba"], models["dense"], models["dense_mixer"]
    c = ramba.cfg
    for length in args.lengths:
        batch = _collated(_synthetic_host_batch(length, c.d_text), c.max_rel_rows)
        x = torch.randn(1, batch["kind"].shape[1], c.d_model)
        calls = {"ramba": (ramba, lambda b=batch: ramba(b)), "dense": (dense, lambda x=x: dense(x)),
                 "dense_mixer": (mixer, lambda b=batch: mixer(b))}
        row: dict[str, Any] = {"L": int(batch["kind"].shape[1]), "load_average": list(os.getloadavg())}
        for name, (model, fn) in calls.items():
            step = lambda m=model, f=fn: _fwd_bwd(m, f)  # noqa: E731
            with torch.no_grad():
                row[f"{name}_forward_cpu_ms"] = _timed_cpu(fn, 5)
                row[f"{name}_forward"] = _profile(fn, args.repeats, args.top)
            row[f"{name}_fwdbwd_cpu_ms"] = _timed_cpu(step, 5)
            row[f"{name}_fwdbwd"] = _profile(step, args.repeats, args.top)
        row.update(_extras(ramba, batch, calls))
        out["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if not isinstance(v, dict)}), file=sys.stderr)
        _write(out)
    out["method"] = ("torch.profiler (CPU activity) over --repeats calls after 2 warm-ups; self CPU time per op "
                     "(autograd backward nodes included), divided by the calls; *_cpu_ms: best thread CPU time of "
                     "5 calls without the profiler (the profiler adds its own per-op cost)")
    _write(out)
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
