"""Ramba against the dense relational transformer on one GPU (issue 27): forward and forward +
backward time (CUDA events, median of repeats after warm-up) and peak allocated memory per
sequence length, bf16 autocast and fp32, with the kernel each model's ops dispatched to. Prints JSON.

    python benchmarks/ramba_gpu.py [--lengths 512 ... 65536] [--out FILE]

The models and the synthetic serialized batch are those of ``benchmarks/ramba.py`` (the ``small``
Ramba with the hashing text encoder, and a dense transformer of equal width, depth and FFN).
Without a CUDA device it prints ``{"error": ...}`` and exits with status 2. ``--device cpu`` runs
the same code path on the CPU (to check the script; CPU times are not the point of this file).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_info  # noqa: E402
from gpu_kernels import _time as _cuda_time  # noqa: E402
from ramba import DenseTransformer, _slope, _synthetic_batch  # noqa: E402

LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)


def _time_ms(fn: Any, device: str, repeats: int, warmup: int = 2) -> float:
    """Median milliseconds of ``fn`` over ``repeats`` calls after ``warmup``: CUDA events on a GPU
    (``gpu_kernels._time``), wall time on the CPU."""
    if device == "cuda":
        return _cuda_time(fn, repeats=repeats, warmup=warmup)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - t))
    return sorted(times)[len(times) // 2]


def _peak_mb(fn: Any, device: str) -> float | None:
    if device != "cuda":
        return None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return round((torch.cuda.max_memory_allocated() - base) / 2**20, 1)


def _one(ramba: torch.nn.Module, dense: torch.nn.Module, length: int, device: str, amp: bool,
         repeats: int) -> dict[str, Any]:
    batch = _synthetic_batch(length, ramba.cfg.d_text, device=device)  # index built on the host, as collate does
    n = int(batch["kind"].shape[1])
    x = torch.randn(1, n, ramba.cfg.d_model, device=device)
    rec: dict[str, Any] = {"L": n, "amp_bf16": amp}
    ctx = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if amp else (lambda: torch.autocast("cpu", enabled=False))
    for name, model, call in (("ramba", ramba, lambda: ramba(batch)), ("dense", dense, lambda: dense(x))):
        def fwd(call: Any = call) -> None:
            with torch.no_grad(), ctx():
                call()

        def step(model: torch.nn.Module = model, call: Any = call) -> None:
            model.zero_grad(set_to_none=True)
            with ctx():
                out = call()
            out.float().sum().backward()

        try:
            rec[f"{name}_fwd_ms"] = round(_time_ms(fwd, device, repeats), 3)
            rec[f"{name}_fwdbwd_ms"] = round(_time_ms(step, device, max(3, repeats // 2)), 3)
            rec[f"{name}_fwd_peak_mb"] = _peak_mb(fwd, device)
            rec[f"{name}_fwdbwd_peak_mb"] = _peak_mb(step, device)
        except torch.OutOfMemoryError as exc:  # the dense model at the longest lengths
            rec[f"{name}_error"] = f"out of memory: {str(exc)[:120]}"
            torch.cuda.empty_cache()
    for key in ("fwd_ms", "fwdbwd_ms"):
        if f"dense_{key}" in rec and f"ramba_{key}" in rec:
            rec[f"dense_over_ramba_{key}"] = round(rec[f"dense_{key}"] / rec[f"ramba_{key}"], 3)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device"}))
        sys.exit(2)
    from tabzoo_ramba.model import RambaModel

    started = time.perf_counter()
    torch.manual_seed(0)
    ramba = RambaModel({"preset": "small", "text_encoder": "hashing"}).to(args.device)
    cfg = ramba.cfg
    dense = DenseTransformer(cfg.d_model, cfg.n_heads, cfg.n_layers, 4 * cfg.d_model).to(args.device)
    out: dict[str, Any] = {"benchmark": "ramba_gpu", "issue": 27, "date": time.strftime("%Y-%m-%d"),
                           "machine": machine_info(), "device": args.device,
                           "model": {"ramba": cfg.__dict__, "dense_d_ff": 4 * cfg.d_model}, "runs": {}}
    if args.device == "cuda":
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        ms = _time_ms(lambda: a @ a, "cuda", 10)
        out["matmul_bf16_tflops"] = round(2 * 8192**3 / (ms * 1e-3) / 1e12, 1)
    for amp in ((True, False) if args.device == "cuda" else (False,)):
        rows = []
        for length in args.lengths:
            rows.append(_one(ramba, dense, length, args.device, amp, args.repeats))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        ok = [r for r in rows if "dense_over_ramba_fwd_ms" in r]
        run: dict[str, Any] = {"rows": rows}
        if len(ok) >= 2:
            ns = [r["L"] for r in rows if "ramba_fwd_ms" in r]
            run["slope_ramba_fwd"] = round(_slope(ns, [r["ramba_fwd_ms"] for r in rows if "ramba_fwd_ms" in r]), 3)
            run["slope_ramba_fwdbwd"] = round(_slope(ns, [r["ramba_fwdbwd_ms"] for r in rows if "ramba_fwd_ms" in r]), 3)
            run["slope_dense_fwd"] = round(_slope([r["L"] for r in ok], [r["dense_fwd_ms"] for r in ok]), 3)
            run["min_ratio_fwd"] = min(r["dense_over_ramba_fwd_ms"] for r in ok)
            run["min_ratio_fwdbwd"] = min(r["dense_over_ramba_fwdbwd_ms"] for r in ok)
            run["ratio_at_16384"] = {k: r[k] for r in ok if r["L"] >= 16000 and r["L"] <= 16384
                                     for k in ("dense_over_ramba_fwd_ms", "dense_over_ramba_fwdbwd_ms")}
            run["crossover_L_fwd"] = next((r["L"] for r in ok if r["dense_over_ramba_fwd_ms"] > 1.0), None)
        out["runs"]["bf16" if amp else "fp32"] = run
    if args.device == "cuda":  # which kernels one bf16 forward of each model ran (by GPU time)
        batch = _synthetic_batch(4096, cfg.d_text, device="cuda")
        x = torch.randn(1, int(batch["kind"].shape[1]), cfg.d_model, device="cuda")
        for name, call in (("ramba", lambda: ramba(batch)), ("dense", lambda: dense(x))):
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                    call()
                torch.cuda.synchronize()
            top = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:8]
            out.setdefault("top_kernels_L4096_bf16", {})[name] = [
                {"name": e.key[:90], "ms": round(e.device_time_total / 1e3, 3)} for e in top]
    out["wall_s"] = round(time.perf_counter() - started, 1)
    text = json.dumps(out, indent=1, default=float)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
