"""Benchmark of tabzoo.kernels on this machine; prints JSON.

    uv run python benchmarks/kernels.py [--out benchmarks/results/kernels-YYYY-MM-DD.json] [--quick]

Everything is measured in one run, side by side (the machine is shared and noisy, so the
ratios and slopes are what counts; absolute times hold only here and now):

* the physical limit: fp32 and bf16 matmul GFLOP/s (2048 x 2048, best of several);
* linear_attention (einsum backend) against the quadratic baseline, torch SDPA with the
  context-only mask, at B=1, 4 heads of dim 128, N rows (80% context), no autograd;
* chunked against sequential selective_scan, D=256, N=16, batch 1, no autograd, against the
  torch.exp throughput on a tensor of the same number of elements;
* log-log slopes of time against size.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import best_time, exp_throughput, machine_info, matmul_gflops  # noqa: E402
from tabzoo.kernels import list_backends  # noqa: E402
from tabzoo.kernels.op_registry import _complete  # noqa: E402

LA = importlib.import_module("tabzoo.kernels.linear_attention")
SCAN = importlib.import_module("tabzoo.kernels.selective_scan")

HEADS, DH, CONTEXT_FRACTION = 4, 128, 0.8
SDPA_CHUNK = 1024  # query rows per SDPA call: the [chunk, N] mask and scores must fit in memory
SDPA_MAX_TIMED_ROWS = 16384  # beyond this many query rows, SDPA is timed on a subset and scaled up


def _backend(op: str, name: str) -> Any:
    return next(b for b in list_backends(op) if b.name == name)


def _slope(sizes: list[int], times: list[float]) -> float:
    xs, ys = [math.log(s) for s in sizes], [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def sdpa_context_masked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_context: int,
                        rows: int | None = None) -> torch.Tensor:
    """The quadratic baseline: SDPA over all N keys with the context-only bool mask, in query chunks.

    :param rows: only the first ``rows`` query rows (for timing a subset); default all.
    """
    n = q.shape[2]
    rows = n if rows is None else rows
    out = torch.empty_like(q[:, :, :rows])
    mask = torch.zeros(SDPA_CHUNK, n, dtype=torch.bool)
    mask[:, :n_context] = True
    for start in range(0, rows, SDPA_CHUNK):
        m = min(SDPA_CHUNK, rows - start)
        out[:, :, start:start + m] = F.scaled_dot_product_attention(q[:, :, start:start + m], k, v, attn_mask=mask[:m])
    return out


def _la_size(n: int, peak_fp32: float, repeats: int) -> dict[str, Any]:
    einsum = _backend("linear_attention", "einsum")
    gen = torch.Generator().manual_seed(n)
    q, k, v = (torch.randn(1, HEADS, n, DH, generator=gen) for _ in range(3))
    nc = int(CONTEXT_FRACTION * n)
    flops = einsum.cost(_complete("linear_attention", {"q": q, "k": k, "v": v, "n_context": nc})).flops
    timed_rows = min(n, SDPA_MAX_TIMED_ROWS)
    reps = repeats if n <= 4096 else 1
    with torch.no_grad():
        adjacent_peak = matmul_gflops(torch.float32, repeats=3)  # the load changes: measure the peak next to it
        t_lin = best_time(lambda: LA.linear_attention_einsum(q, k, v, nc), repeats=repeats + 2)
        t_sub = best_time(lambda: sdpa_context_masked(q, k, v, nc, rows=timed_rows), repeats=reps, warmup=0)
        c = min(n, 512)
        qc, kc, vc = q[:, :, :c], k[:, :, :c], v[:, :, :c]
        err = float((LA.linear_attention_einsum(qc, kc, vc, min(nc, c))
                     - LA.linear_attention_reference(qc, kc, vc, min(nc, c))).abs().max())
    t_sdpa = t_sub * n / timed_rows
    sdpa_flops = 4.0 * HEADS * n * n * DH
    return {
        "n": n, "n_context": nc,
        "linear_einsum_s": t_lin,
        "linear_einsum_gflops": flops / t_lin / 1e9,
        "adjacent_fp32_peak_gflops": adjacent_peak,
        "linear_einsum_fraction_of_adjacent_fp32_peak": flops / t_lin / 1e9 / adjacent_peak,
        "linear_einsum_fraction_of_fp32_peak": flops / t_lin / 1e9 / peak_fp32,
        "sdpa_s": t_sdpa,
        "sdpa_timed_query_rows": timed_rows,
        "sdpa_extrapolated": timed_rows < n,
        "sdpa_repeats": reps,
        "sdpa_gflops": sdpa_flops / t_sdpa / 1e9,
        "sdpa_fraction_of_fp32_peak": sdpa_flops / t_sdpa / 1e9 / peak_fp32,
        "speedup_vs_sdpa": t_sdpa / t_lin,
        "einsum_vs_reference_max_abs_err_512_rows": err,
    }


def bench_linear_attention(sizes: list[int], peak_fp32: float, repeats: int) -> dict[str, Any]:
    rows_out = [_la_size(n, peak_fp32, repeats) for n in sizes]
    times = [r["linear_einsum_s"] for r in rows_out]
    return {
        "shape": f"B=1, H={HEADS}, Dh={DH}, context = {CONTEXT_FRACTION:.0%} of rows, fp32, no autograd",
        "einsum_chunk_rows": LA.DEFAULT_CHUNK_ROWS,
        "sdpa_baseline": (
            f"torch SDPA over all N keys with the context-only bool mask, in chunks of {SDPA_CHUNK} query rows "
            f"(a dense [N, N] mask and scores do not fit in memory). Past {SDPA_MAX_TIMED_ROWS} rows only the "
            f"first {SDPA_MAX_TIMED_ROWS} query rows are timed and the time is scaled by N / rows: every query "
            "row reads the same keys under the same mask, so the work per chunk is identical."
        ),
        "flops_model": (
            "einsum: 2*B*H*(n_context + N)*Dh*(Dv+1) (its tabzoo cost(): the matmul work actually done; "
            "phi and the division are not counted); sdpa: 4*B*H*N*N*Dh over all N keys (its kernel may skip "
            "fully masked key blocks, so its GFLOP/s can overstate the work done by up to 1/0.8)"
        ),
        "sizes": rows_out,
        "loglog_slope_einsum": _slope(sizes, times) if len(sizes) > 1 else None,
    }


def _scan_size(length: int, d: int, n_state: int, repeats: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(length)
    x = torch.randn(1, length, d, generator=gen)
    delta = F.softplus(torch.randn(1, length, d, generator=gen) - 2)
    A = -torch.rand(d, n_state, generator=gen) * 4 - 0.1
    B, C = (torch.randn(1, length, n_state, generator=gen) for _ in range(2))
    reps = repeats if length <= 4096 else 1
    with torch.no_grad():
        t_chunk = best_time(lambda: SCAN.selective_scan_chunked(x, delta, A, B, C), repeats=repeats)
        t_seq = best_time(lambda: SCAN.selective_scan_reference(x, delta, A, B, C), repeats=reps, warmup=0)
        err = float((SCAN.selective_scan_chunked(x, delta, A, B, C)
                     - SCAN.selective_scan_reference(x, delta, A, B, C)).abs().max())
    elems = length * d * n_state
    exp_rate = exp_throughput(elems)
    return {
        "L": length, "chunk_length": SCAN.default_chunk_length(length),
        "chunked_s": t_chunk, "sequential_s": t_seq, "sequential_repeats": reps,
        "speedup_vs_sequential": t_seq / t_chunk,
        "chunked_elements_per_s": elems / t_chunk,
        "sequential_elements_per_s": elems / t_seq,
        "torch_exp_elements_per_s": exp_rate,
        "torch_exp2_elements_per_s": exp_throughput(elems, fn=torch.exp2),
        "chunked_vs_exp_throughput": elems / t_chunk / exp_rate,
        "chunked_vs_sequential_max_abs_err": err,
    }


def bench_scan(lengths: list[int], d: int, n_state: int, repeats: int) -> dict[str, Any]:
    rows_out = [_scan_size(length, d, n_state, repeats) for length in lengths]
    times = [r["chunked_s"] for r in rows_out]
    return {
        "shape": f"batch 1, D={d}, N={n_state}, fp32, no autograd; elements = L*D*N",
        "sequential": "the reference backend: a Python loop over t using torch.exp",
        "chunked": "blocked recurrence (tabzoo.kernels.selective_scan.selective_scan_chunked), exp via torch.exp2",
        "sizes": rows_out,
        "loglog_slope_chunked": _slope(lengths, times) if len(lengths) > 1 else None,
    }


def _target(name: str, value: float | None, op: str, threshold: float) -> dict[str, Any]:
    ok = value is not None and (value >= threshold if op == ">=" else value <= threshold)
    return {"target": f"{name} {op} {threshold}", "value": value, "pass": bool(ok)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test, not the real figures)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads before measuring")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    la_sizes = [512, 1024, 2048] if args.quick else [4096, 16384, 65536]
    scan_lengths = [256, 512, 1024] if args.quick else [1024, 4096, 16384]
    result: dict[str, Any] = {
        "benchmark": "tabzoo.kernels",
        "date": _dt.date.today().isoformat(),
        "quick": args.quick,
        "threads_requested": args.threads,
        "note": ("the machine is shared (2 cores, several users); absolute times are noisy, compare the "
                 "ratios measured side by side in this run"),
        "machine": machine_info(),
    }
    peak32 = matmul_gflops(torch.float32)
    result["matmul_gflops"] = {"fp32": peak32, "bf16": matmul_gflops(torch.bfloat16), "size": 2048}
    result["linear_attention"] = bench_linear_attention(la_sizes, peak32, repeats=3)
    result["selective_scan"] = bench_scan(scan_lengths, d=256, n_state=16, repeats=3)
    result["matmul_gflops"]["fp32_after"] = after = matmul_gflops(torch.float32)
    adjacent = [r["adjacent_fp32_peak_gflops"] for r in result["linear_attention"]["sizes"]]
    peak = max(peak32, after, *adjacent)  # conservative: the best fp32 matmul rate seen in the whole run
    result["matmul_gflops"]["fp32_peak_used"] = peak
    for row in result["linear_attention"]["sizes"]:
        row["linear_einsum_fraction_of_fp32_peak"] = row["linear_einsum_gflops"] / peak
        row["sdpa_fraction_of_fp32_peak"] = row["sdpa_gflops"] / peak
    if hasattr(os, "getloadavg"):
        result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    la, sc = result["linear_attention"]["sizes"], result["selective_scan"]["sizes"]
    by_l = {r["L"]: r for r in sc}
    result["targets"] = [
        _target(f"linear_attention speedup vs SDPA at N={la[-1]['n']}", la[-1]["speedup_vs_sdpa"], ">=", 30),
        {**_target(f"linear_attention fraction of fp32 matmul peak (measured adjacently) at N={la[-1]['n']}",
                   la[-1]["linear_einsum_fraction_of_adjacent_fp32_peak"], ">=", 0.5),
         "conservative_value": la[-1]["linear_einsum_fraction_of_fp32_peak"],
         "conservative_note": "against the best fp32 matmul rate seen anywhere in the run"},
        _target("chunked scan speedup at L=4096", by_l.get(4096, {}).get("speedup_vs_sequential"), ">=", 1.5),
        _target("chunked scan speedup at L=16384", by_l.get(16384, {}).get("speedup_vs_sequential"), ">=", 2.0),
        _target("linear_attention log-log slope", result["linear_attention"]["loglog_slope_einsum"], "<=", 1.15),
        _target("chunked scan log-log slope", result["selective_scan"]["loglog_slope_chunked"], "<=", 1.15),
    ]
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
