"""Ramba and the dense transformer, eager and under ``torch.compile`` (inductor, CPU), side by side
in one process, printed as one JSON document.

    OMP_NUM_THREADS=1 uv run python benchmarks/ramba_compile_ab.py --out benchmarks/results/ramba-compile-ab-<date>.json

The models of ``benchmarks/ramba.py``'s scaling runs at one length (default 512). ``eager`` first,
then each Ramba block and each dense layer is wrapped by ``torch.compile(dynamic=False)`` (the same
way for both: a fair ratio only if both are compiled) and timed again: forward under no_grad and
forward + ``sum().backward()``, this thread's CPU time, best of ``--inner`` calls, median over
``--rounds`` rounds of the four in turn. Ramba's compiled library is called through pybind
functions that dynamo cannot trace, so each fused op is a graph break (counted by
``torch._dynamo.utils.counters``); the compile time and the largest output difference from
eager are recorded too. ``--opaque-ops``: the library's functions wrapped as ``torch.library``
custom ops first (``benchmarks/_ramba_opaque_ops.py``: dynamo traces the fused ops' autograd
Functions around them, no graph break there) and the registry's debug-logging check ignored by
dynamo; the eager timings then run through the wrappers too. One torch thread.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _machine import best_cpu_time, machine_info, matmul_gflops  # noqa: E402
from ramba import _collated, _fwd_bwd, _synthetic_host_batch, _write, scaling_models  # noqa: E402

torch.set_num_threads(1)


def _times(
    ramba: Any, dense: Any, batch: dict[str, Any], x: torch.Tensor, rounds: int, inner: int
) -> dict[str, Any]:
    """Median over rounds of the best-of-``inner`` CPU ms of the four calls, taken in turn."""
    calls = {
        "ramba_forward": (True, lambda: ramba(batch)),
        "dense_forward": (True, lambda: dense(x)),
        "ramba_fwdbwd": (False, lambda: _fwd_bwd(ramba, lambda: ramba(batch))),
        "dense_fwdbwd": (False, lambda: _fwd_bwd(dense, lambda: dense(x))),
    }
    got: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        for name, (no_grad, fn) in calls.items():
            with torch.no_grad() if no_grad else torch.enable_grad():
                got[name].append(best_cpu_time(fn, repeats=inner, warmup=1) * 1e3)
    out: dict[str, Any] = {f"{k}_cpu_ms": statistics.median(v) for k, v in got.items()}
    out["dense_over_ramba_forward"] = out["dense_forward_cpu_ms"] / out["ramba_forward_cpu_ms"]
    out["dense_over_ramba_fwdbwd"] = out["dense_fwdbwd_cpu_ms"] / out["ramba_fwdbwd_cpu_ms"]
    out["rounds"] = got
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--opaque-ops", action="store_true", help="the library as torch.library custom ops"
    )
    args = parser.parse_args()
    if args.opaque_ops:
        import logging

        import torch._dynamo
        from _ramba_opaque_ops import install

        install()
        torch._dynamo.config.ignore_logging_functions.add(logging.Logger.isEnabledFor)
    from tabzoo.kernels.scan_cpu import NAME, available
    from torch._dynamo.utils import counters

    models = scaling_models()
    ramba, dense = models["ramba"], models["dense"]
    batch = _collated(_synthetic_host_batch(args.length, ramba.cfg.d_text), ramba.cfg.max_rel_rows)
    x = torch.randn(1, batch["kind"].shape[1], ramba.cfg.d_model)
    out: dict[str, Any] = {
        "benchmark": "ramba_compile_ab",
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine_info(),
        "torch": torch.__version__,
        "matmul_gflops": {"fp32": matmul_gflops(torch.float32, n=1024)},
        "cpu_fused_library": {"name": NAME, "available": available()},
        "argv": sys.argv[1:],
        "out_file": args.out,
        "L": int(batch["kind"].shape[1]),
        "opaque_ops": args.opaque_ops,
        "load_average_start": list(os.getloadavg()),
        "method": " ".join(__doc__.split("\n\n")[2].split()),
    }
    with torch.no_grad():
        ref_r, ref_d = ramba(batch), dense(x)
    out["eager"] = _times(ramba, dense, batch, x, args.rounds, args.inner)
    _write(out)
    t0 = time.perf_counter()
    for i, blk in enumerate(ramba.blocks):
        ramba.blocks[i] = torch.compile(blk, dynamic=False)
    for i, layer in enumerate(dense.layers):
        dense.layers[i] = torch.compile(layer, dynamic=False)
    with torch.no_grad():
        out_r, out_d = ramba(batch), dense(x)
    _fwd_bwd(ramba, lambda: ramba(batch))
    _fwd_bwd(dense, lambda: dense(x))
    out["compile_wall_s"] = time.perf_counter() - t0
    out["max_abs_output_diff"] = {
        "ramba": float((out_r - ref_r).abs().max()),
        "dense": float((out_d - ref_d).abs().max()),
    }
    out["graph_breaks"] = dict(counters["graph_break"])
    out["compiled"] = _times(ramba, dense, batch, x, args.rounds, args.inner)
    out["load_average_end"] = list(os.getloadavg())
    _write(out)
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
