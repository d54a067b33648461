"""GPU benchmark of the Triton kernels against the best torch paths; prints JSON.

    uv run python benchmarks/gpu_kernels.py [--out benchmarks/results/gpu_kernels-<device>-YYYY-MM-DD.json] [--quick]

Without a CUDA device it prints ``{"error": ...}`` and exits with status 2 (nothing is measured).

Measured in one run, side by side, with CUDA events (median of repeats after warm-up):

* peaks: bf16 matmul TFLOP/s (8192^3) and device-to-device copy TB/s (1 GiB, read + write);
* masked_attention, block-sparse at ~10% block density (a window | global-token mask), B=1,
  H=8, Dh=64, N=16k, bf16, forward and forward+backward: triton vs dense SDPA on the same
  mask (the quadratic path), flex_attention (compiled) and the reference-free dense SDPA
  without a mask (the unmasked upper bound). Target: triton >= 5x faster than dense SDPA.
* linear_attention at 1M rows (B=1, H=4, Dh=Dv=64, 80% context, bf16, forward): triton vs the
  einsum backend vs dense SDPA with the context mask at a size it can hold; achieved TB/s of
  the minimum traffic (read q, k, v of context, q of all, write out) and fraction of the copy
  peak. Target: >= 50% of the measured bandwidth.
* selective_scan at L=16k (batch 1, D=1024, N=16, bf16, forward and forward+backward): triton vs
  the chunked torch scan. Target: >= 10x faster.

Each entry: time_ms, and tflops or tb_s with the fraction of the measured peak.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_info  # noqa: E402


def _time(fn: Callable[[], Any], repeats: int = 20, warmup: int = 3) -> float:
    """Median milliseconds of ``fn`` with CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def peaks(quick: bool) -> dict[str, float]:
    n = 4096 if quick else 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = _time(lambda: a @ b, repeats=10)
    src = torch.empty(1 << (28 if quick else 30), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms_copy = _time(lambda: dst.copy_(src), repeats=10)
    return {"matmul_bf16_tflops": 2 * n**3 / ms / 1e9, "copy_tb_s": 2 * src.numel() / ms_copy / 1e9,
            "matmul_n": n, "copy_bytes": src.numel()}


def _entry(ms: float, flops: float | None = None, nbytes: float | None = None, peak: dict | None = None) -> dict:
    e: dict[str, Any] = {"time_ms": round(ms, 4)}
    if flops is not None:
        e["tflops"] = round(flops / ms / 1e9, 2)
        if peak:
            e["fraction_of_matmul_peak"] = round(e["tflops"] / peak["matmul_bf16_tflops"], 3)
    if nbytes is not None:
        e["tb_s"] = round(nbytes / ms / 1e9, 3)
        if peak:
            e["fraction_of_copy_peak"] = round(e["tb_s"] / peak["copy_tb_s"], 3)
    return e


def _safe(fn: Callable[[], dict]) -> dict:
    try:
        return fn()
    except Exception as exc:  # one failing peer must not lose the other figures
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def bench_attention(peak: dict, quick: bool) -> dict[str, Any]:
    from tabzoo import kernels as K
    from tabzoo import masks as M
    from tabzoo.kernels.triton import implementation
    from tabzoo.kernels.triton.attention import layout_for

    n = 4096 if quick else 16384
    b, h, dh = 1, 8, 64
    radius = int(0.1 * n / 2) - 64  # window of ~10% of the row, plus 64 global tokens
    mask = M.window(radius) | M.global_tokens(64)
    q, k, v = (torch.randn(b, h, n, dh, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    lay = layout_for(mask, n, n, 64, q.device)
    density = lay.nnz / (n // 64) ** 2
    sparse_flops = 4.0 * b * h * lay.nnz * 64 * 64 * dh
    dense_flops = 4.0 * b * h * n * n * dh
    tri = implementation("masked_attention")
    dense_mask = mask.materialize(n, n, device="cuda")
    out: dict[str, Any] = {"shape": {"B": b, "H": h, "N": n, "Dh": dh}, "mask": repr(mask),
                           "block_density": round(density, 4)}
    g = torch.randn(b, h, n, dh, device="cuda", dtype=torch.bfloat16)

    def run(fn: Callable[[], torch.Tensor], flops: float) -> dict:
        with torch.no_grad():
            fwd = _time(fn)
        fb = _time(lambda: fn().backward(g))
        return {"forward": _entry(fwd, flops, peak=peak), "forward_backward": _entry(fb, 3.5 * flops, peak=peak)}

    out["triton"] = _safe(lambda: run(lambda: tri(q=q, k=k, v=v, mask=mask), sparse_flops))
    out["sdpa_dense_same_mask"] = _safe(lambda: run(
        lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=dense_mask), dense_flops))
    out["sdpa_no_mask_flash"] = _safe(lambda: run(lambda: F.scaled_dot_product_attention(q, k, v), dense_flops))

    def flex() -> dict:
        with K.use("flex"):
            return run(lambda: K.masked_attention(q, k, v, mask), sparse_flops)

    out["flex_attention"] = _safe(flex)
    t, d = out["triton"], out["sdpa_dense_same_mask"]
    if "forward" in t and "forward" in d:
        out["speedup_vs_dense_sdpa_forward"] = round(d["forward"]["time_ms"] / t["forward"]["time_ms"], 2)
        out["speedup_vs_dense_sdpa_forward_backward"] = round(
            d["forward_backward"]["time_ms"] / t["forward_backward"]["time_ms"], 2)
        out["target_5x_met"] = out["speedup_vs_dense_sdpa_forward"] >= 5
    with torch.no_grad():  # the same numbers, up to bf16
        err = (tri(q=q, k=k, v=v, mask=mask).float()
               - F.scaled_dot_product_attention(q, k, v, attn_mask=dense_mask).float()).abs().max()
    out["max_abs_diff_vs_sdpa"] = float(err)
    return out


def bench_linear(peak: dict, quick: bool) -> dict[str, Any]:
    from tabzoo import kernels as K
    from tabzoo.kernels.triton import implementation

    n = (1 << 18) if quick else (1 << 20)
    b, h, dh = 1, 4, 64
    nc = int(0.8 * n)
    q, k, v = (torch.randn(b, h, n, dh, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    el = q.element_size()
    traffic = float(b * h * (nc * 2 * dh + n * dh + n * dh) * el)  # k, v of the context; q; out
    tri = implementation("linear_attention")
    out: dict[str, Any] = {"shape": {"B": b, "H": h, "N": n, "n_context": nc, "Dh": dh},
                           "min_traffic_bytes": traffic}
    with torch.no_grad():
        out["triton"] = _safe(lambda: _entry(_time(lambda: tri(q=q, k=k, v=v, n_context=nc)), nbytes=traffic, peak=peak))
        with K.use("einsum"):
            out["einsum"] = _safe(lambda: _entry(_time(lambda: K.linear_attention(q, k, v, nc)), nbytes=traffic, peak=peak))
        m = 16384  # the quadratic path cannot hold 1M rows; timed at 16k and scaled by (n / m)^2
        qs, ks, vs = q[:, :, :m], k[:, :, :m], v[:, :, :m]
        cm = torch.zeros(m, m, dtype=torch.bool, device="cuda")
        cm[:, : int(0.8 * m)] = True
        dense = _safe(lambda: _entry(_time(lambda: F.scaled_dot_product_attention(qs, ks, vs, attn_mask=cm))))
        if "time_ms" in dense:
            dense["rows"] = m
            dense["extrapolated_ms_at_n"] = round(dense["time_ms"] * (n / m) ** 2, 1)
        out["sdpa_dense_quadratic"] = dense
        S, z = K.linear_attention_state(k[:, :, :nc], v[:, :, :nc])
        err = (tri(q=q, k=k, v=v, n_context=nc).float() - K.linear_attention_read(q, S, z).float()).abs().max()
    out["max_abs_diff_vs_einsum"] = float(err)
    if "fraction_of_copy_peak" in out["triton"]:
        out["target_50pct_bandwidth_met"] = out["triton"]["fraction_of_copy_peak"] >= 0.5
    return out


def bench_scan(peak: dict, quick: bool) -> dict[str, Any]:
    from tabzoo import kernels as K
    from tabzoo.kernels.triton import implementation

    length = 4096 if quick else 16384
    b, d, n = 1, 1024, 16
    x = torch.randn(b, length, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    delta = F.softplus(torch.randn(b, length, d, device="cuda")).to(torch.bfloat16).requires_grad_(True)
    A = (-torch.exp(torch.randn(d, n, device="cuda"))).requires_grad_(True)
    B, C = (torch.randn(b, length, n, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    D = torch.randn(d, device="cuda", requires_grad=True)
    tri = implementation("selective_scan")
    elems = float(b * length * d * n)
    io = float(sum(t.numel() * t.element_size() for t in (x, delta, B, C, x)))
    g = torch.randn(b, length, d, device="cuda", dtype=torch.bfloat16)
    out: dict[str, Any] = {"shape": {"batch": b, "L": length, "D": d, "N": n}}

    def run(fn: Callable[[], torch.Tensor]) -> dict:
        with torch.no_grad():
            fwd = _time(fn, repeats=5, warmup=1)
        fb = _time(lambda: fn().backward(g), repeats=3, warmup=1)
        return {"forward": _entry(fwd, 7 * elems, io, peak), "forward_backward": _entry(fb, 7 * elems * 3, 3 * io, peak)}

    out["triton"] = _safe(lambda: run(lambda: tri(x=x, delta=delta, A=A, B=B, C=C, D=D)))

    def chunked() -> dict:
        with K.use("chunked"):
            return run(lambda: K.selective_scan(x, delta, A, B, C, D))

    out["chunked_torch"] = _safe(chunked)
    t, c = out["triton"], out["chunked_torch"]
    if "forward" in t and "forward" in c:
        out["speedup_vs_chunked_forward"] = round(c["forward"]["time_ms"] / t["forward"]["time_ms"], 2)
        out["speedup_vs_chunked_forward_backward"] = round(
            c["forward_backward"]["time_ms"] / t["forward_backward"]["time_ms"], 2)
        out["target_10x_met"] = out["speedup_vs_chunked_forward"] >= 10
    with torch.no_grad(), K.use("chunked"):
        err = (tri(x=x, delta=delta, A=A, B=B, C=C, D=D).float() - K.selective_scan(x, delta, A, B, C, D).float()).abs().max()
    out["max_abs_diff_vs_chunked"] = float(err)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here (refuses to overwrite)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run, not the targets)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device: benchmarks/gpu_kernels.py times the Triton kernels on a GPU "
                                   "and measures nothing without one. Run it on a machine with an NVIDIA GPU "
                                   "(capability >= 8.0) and the tabzoo-core[triton] extra.",
                          "machine": machine_info()}, indent=2))
        return 2
    try:
        import triton
    except ImportError:
        print(json.dumps({"error": "triton is not installed: pip install 'tabzoo-core[triton]'"}))
        return 2
    if args.out is not None and args.out.exists():
        print(json.dumps({"error": f"{args.out} exists; choose another --out (results are never overwritten)"}))
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    peak = peaks(args.quick)
    result = {
        "benchmark": "gpu_kernels",
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": {**machine_info(), "gpu": torch.cuda.get_device_name(0),
                    "capability": list(torch.cuda.get_device_capability(0)), "triton": triton.__version__},
        "quick": args.quick,
        "peak": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in peak.items()},
        "masked_attention": bench_attention(peak, args.quick),
        "linear_attention": bench_linear(peak, args.quick),
        "selective_scan": bench_scan(peak, args.quick),
    }
    text = json.dumps(result, indent=2, default=lambda o: None if isinstance(o, float) and math.isnan(o) else str(o))
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
