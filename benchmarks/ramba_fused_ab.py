"""Ramba's block with and without its fused core ops (``gathered_attention``, ``bimamba_inner``),
side by side in one process, printed as one JSON document.

    OMP_NUM_THREADS=1 uv run python benchmarks/ramba_fused_ab.py --out benchmarks/results/ramba-fused-ab-<date>.json

``before`` is the eager chain the block ran until these ops existed (per-op compiled conv, scan and
short attention, gathered copies packed per size group; ``tabzoo_ramba.layers._fused`` made to
return None), ``after`` the two fused ops; the dense transformer of equal width and depth of
``benchmarks/ramba.py`` alongside. Each round times the three in turn (forward under no_grad and
forward + ``sum().backward()``, this thread's CPU time, best of ``--inner`` calls), so a change of
load hits all of them; the result is the median over ``--rounds`` rounds of each one's best. Also
the torch ops launched per call (torch.profiler) and the largest output difference between the two
paths. One torch thread; the batch is collated before timing.
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


def _best_cpu_ms(fn: Any, inner: int) -> float:
    return best_cpu_time(fn, repeats=inner, warmup=0) * 1e3


def _ops(fn: Any) -> int:
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.count for e in prof.key_averages())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import tabzoo_ramba.layers as layers
    from tabzoo.kernels.scan_cpu import NAME, available

    fused = layers._fused
    out: dict[str, Any] = {"benchmark": "ramba_fused_ab", "date": time.strftime("%Y-%m-%d"), "machine": machine_info(),
                           "matmul_gflops": {"fp32": matmul_gflops(torch.float32, n=1024)},
                           "cpu_fused_library": {"name": NAME, "available": available()},
                           "argv": sys.argv[1:], "out_file": args.out, "rows": []}
    models = scaling_models()
    ramba, dense = models["ramba"], models["dense"]
    for length in args.lengths:
        batch = _collated(_synthetic_host_batch(length, ramba.cfg.d_text), ramba.cfg.max_rel_rows)
        x = torch.randn(1, batch["kind"].shape[1], ramba.cfg.d_model)
        paths = {"before": lambda *a: None, "after": fused}
        row: dict[str, Any] = {"L": int(batch["kind"].shape[1]), "load_average_start": list(os.getloadavg())}
        times: dict[str, list[float]] = {}
        with torch.no_grad():
            outs = {}
            for name, f in paths.items():
                layers._fused = f
                outs[name] = ramba(batch)
            row["max_abs_output_diff"] = float((outs["before"] - outs["after"]).abs().max())
        for name, f in paths.items():
            layers._fused = f
            with torch.no_grad():
                row[f"ramba_{name}_forward_ops"] = _ops(lambda b=batch: ramba(b))
            row[f"ramba_{name}_fwdbwd_ops"] = _ops(lambda b=batch: _fwd_bwd(ramba, lambda: ramba(b)))
        with torch.no_grad():
            row["dense_forward_ops"] = _ops(lambda x=x: dense(x))
        row["dense_fwdbwd_ops"] = _ops(lambda x=x: _fwd_bwd(dense, lambda: dense(x)))
        for _ in range(args.rounds):
            for name, model, fn, f in (("ramba_before", ramba, lambda b=batch: ramba(b), paths["before"]),
                                       ("ramba_after", ramba, lambda b=batch: ramba(b), paths["after"]),
                                       ("dense", dense, lambda x=x: dense(x), fused)):
                layers._fused = f
                with torch.no_grad():
                    times.setdefault(f"{name}_forward_cpu_ms", []).append(_best_cpu_ms(fn, args.inner))
                step = lambda m=model, c=fn: _fwd_bwd(m, c)  # noqa: E731
                times.setdefault(f"{name}_fwdbwd_cpu_ms", []).append(_best_cpu_ms(step, args.inner))
        layers._fused = fused
        row.update({k: statistics.median(v) for k, v in times.items()})
        row["rounds"] = times
        row["load_average_end"] = list(os.getloadavg())
        for ph in ("forward", "fwdbwd"):
            row[f"dense_over_ramba_before_{ph}"] = row[f"dense_{ph}_cpu_ms"] / row[f"ramba_before_{ph}_cpu_ms"]
            row[f"dense_over_ramba_after_{ph}"] = row[f"dense_{ph}_cpu_ms"] / row[f"ramba_after_{ph}_cpu_ms"]
        out["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "rounds"}), file=sys.stderr)
        _write(out)
    out["method"] = (f"median over {args.rounds} rounds of the best of {args.inner} calls (this thread's CPU time); "
                     "the three models in turn within each round; ops = torch.profiler event count of one call")
    _write(out)
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
