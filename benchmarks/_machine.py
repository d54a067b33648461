"""Machine description and physical limits, shared by the benchmark scripts."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from typing import Any

import torch


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or platform.processor())."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    """Platform, CPU, torch version and threads, plus the load average (the machine is shared)."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    if hasattr(os, "getloadavg"):
        info["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    return info


def best_time(fn: Callable[[], Any], repeats: int = 3, warmup: int = 1) -> float:
    """Best wall time of ``repeats`` calls, in seconds, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def best_cpu_time(fn: Callable[[], Any], repeats: int = 3, warmup: int = 1) -> float:
    """Best thread CPU time of ``repeats`` calls, in seconds, after ``warmup`` untimed calls.

    CPU time of the calling thread only: with ``torch.set_num_threads(1)`` it is the op's own cost,
    less sensitive than wall time to other processes on a shared machine.
    """
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        best = min(best, time.thread_time() - start)
    return best


def matmul_gflops(dtype: torch.dtype, n: int = 2048, repeats: int = 5) -> float:
    """Best-of-``repeats`` GFLOP/s of an ``n x n`` matmul in ``dtype`` on the CPU."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(dtype)
    b = torch.randn(n, n, generator=gen).to(dtype)
    out = torch.empty(n, n, dtype=dtype)
    seconds = best_time(lambda: torch.matmul(a, b, out=out), repeats=repeats)
    return 2.0 * n**3 / seconds / 1e9


def exp_throughput(numel: int, repeats: int = 3, fn: Callable[..., torch.Tensor] = torch.exp) -> float:
    """Best-of-``repeats`` elements/s of ``fn`` (``torch.exp``) on an fp32 tensor of ``numel`` elements."""
    x = -torch.rand(numel)
    out = torch.empty_like(x)
    return numel / best_time(lambda: fn(x, out=out), repeats=repeats)
