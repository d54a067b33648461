"""Estimates before work (issue 29 item 3): peak memory and time of an in-context estimator's
``fit`` and ``predict`` for a table shape, before any data exists.

* Memory: the same estimate every in-context estimator checks before it allocates
  (:func:`tabzoo.kernels.memory.in_context_bytes`: members x (context + one query chunk) rows
  through the model), plus the tables themselves (the input as float64 and the stored float32
  context) and the model's parameters. A fitted estimator refuses with the fix above the limit.
* Time: the floating-point work of one forward pass (:func:`forward_flops`: counted by
  ``torch.utils.flop_counter.FlopCounterMode`` on a small probe pass, scaled to the shape), divided
  by the matmul throughput measured on this machine (:func:`matmul_throughput`, float32 matmuls).

Estimates are approximations: the committed comparison with measured peaks
(``benchmarks/results/estimate-vs-measured.json``) says by how much.
"""

from __future__ import annotations

import functools
import math
import os
import time
from dataclasses import asdict, dataclass
from typing import Any

import torch

from tabzoo.kernels.memory import FLOAT, in_context_bytes

__all__ = ["Estimate", "estimate_in_context", "forward_flops", "matmul_throughput"]


#: Peak RSS of a first ``predict`` over its peak of live tensors (TabFlex, CPU): allocator slack,
#: library code paged in on first use, numpy/pandas copies. Measured 1.40 at 1,000 context + 8,192
#: query rows (benchmarks/results/estimate-calibrated-*.json); checked at other shapes there.
NON_TENSOR = 1.4


@dataclass(frozen=True)
class Estimate:
    """Estimated peaks (bytes, above the process before ``fit``) and seconds of ``fit`` / ``predict``."""

    fit_bytes: float
    predict_bytes: float
    fit_seconds: float
    predict_seconds: float
    flops: float
    throughput: float
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@functools.lru_cache(maxsize=4)
def matmul_throughput(device: str = "cpu", n: int = 512, repeats: int = 5) -> float:
    """Float32 matmul throughput of ``device`` now, in flop/s (best of ``repeats``; cached per process)."""
    dev = torch.device(device)
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    best = math.inf
    for _ in range(repeats + 1):
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        (a @ b).sum().item()
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best


def forward_flops(model: torch.nn.Module, members: int, n_context: int, n_query: int, width: int,
                  probe_rows: int = 256) -> float:
    """Floating-point operations of one pass ``model(x [members, n_context + n_query, width], y [members,
    n_context])``: counted (``FlopCounterMode``) on one member of at most ``probe_rows`` context and query
    rows on the CPU, then scaled linearly in rows and members (exact for models whose cost is linear in
    the rows, e.g. TabFlex's linear attention; an underestimate for dense attention over long contexts).
    0.0 when the model cannot run the probe."""
    from torch.utils.flop_counter import FlopCounterMode

    nc, nq = max(2, min(n_context, probe_rows)), max(1, min(n_query, probe_rows))
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, nc + nq, width, generator=gen)
    y = (torch.arange(nc) % 2).float().unsqueeze(0)
    try:
        counter = FlopCounterMode(display=False)
        device = next(model.parameters()).device
        with torch.inference_mode(), counter:
            model(x.to(device), y.to(device))
    except Exception:  # noqa: BLE001 - a model that takes other inputs: no count
        return 0.0
    counted = float(counter.get_total_flops())
    if counted <= 0:  # no matmul at all: a multiply-add per parameter and row
        counted = 2.0 * sum(p.numel() for p in model.parameters()) * (nc + nq)
    return counted * members * (n_context + n_query) / (nc + nq)


def tensor_peak_bytes(fn: Any) -> tuple[float, float]:
    """``(seconds, peak bytes of live CPU tensors)`` of ``fn()``: allocations and frees as
    ``torch.profiler`` records them (``profile_memory``), summed in time order. numpy arrays are not counted."""
    from torch.profiler import ProfilerActivity, profile

    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # no kineto lines on stderr (it finds no GPU on a CPU machine)
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    seconds = time.perf_counter() - t0
    events = [(e.time_range.start if e.name == "[memory]" else e.time_range.end, e.self_cpu_memory_usage)
              for e in prof.events() if e.self_cpu_memory_usage]
    live = peak = 0.0
    for _, delta in sorted(events, key=lambda ev: ev[0]):
        live += delta
        peak = max(peak, live)
    return seconds, peak


@dataclass(frozen=True)
class _Probe:
    """A small run of the estimator itself on this machine: ``fit`` on ``rows`` and ``predict_proba`` of
    ``query`` rows in one chunk, timed, and a linear model of the predict pass's tensor peak (bytes),
    ``fixed + per_context * context rows + per_query * query rows``, from three profiled passes."""

    rows: int
    query: int
    fit_seconds: float
    predict_seconds: float
    predict_peak: float
    fixed: float
    per_context: float
    per_query: float

    def tensor_peak(self, context: int, query: int) -> float:
        """The modelled tensor peak of one pass over ``context`` + ``query`` rows."""
        return self.fixed + self.per_context * context + self.per_query * query


def _probe(est: Any, rows: int, features: int, query: int) -> _Probe:
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, features))
    classify = hasattr(est, "predict_proba")
    y = (x[:, 0] > 0).astype(np.int64) if classify else x[:, 0]
    q = rng.normal(size=(query, features))
    params = {k: v for k, v in est.get_params(deep=False).items()}
    params.update(chunk_size=query, verbose=False)

    def fitted(n: int) -> Any:
        probe = type(est)(**params).fit(x[:n], y[:n])
        run = probe.predict_proba if classify else probe.predict
        run(q[:8])  # the first call builds lazy state (member views): out of the timing and the peaks
        return run

    t0 = time.perf_counter()
    run = fitted(rows)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    run(q)
    seconds = time.perf_counter() - t0  # timed apart: the profiler slows the pass it watches
    peak = tensor_peak_bytes(lambda: run(q))[1]
    # two more points: a quarter of the query rows, then half the context rows
    q_small, r_small = max(1, query // 4), max(2, rows // 2)
    per_query = max(0.0, (peak - tensor_peak_bytes(lambda: run(q[:q_small]))[1]) / max(1, query - q_small))
    run_small = fitted(r_small)
    per_context = max(0.0, (peak - tensor_peak_bytes(lambda: run_small(q))[1]) / max(1, rows - r_small))
    fixed = max(0.0, peak - per_query * query - per_context * rows)
    return _Probe(rows, query, fit_s, seconds, peak, fixed, per_context, per_query)


def estimate_in_context(est: Any, rows: int, features: int, *, predict_rows: int | None = None,
                        device: str = "cpu", throughput: float | None = None, calibrate: bool = True) -> Estimate:
    """Estimate ``fit`` on ``rows x features`` and ``predict`` of ``predict_rows`` (default ``rows``) rows.

    With ``calibrate`` (CPU), the estimator itself runs once on a small probe of the same width (at most
    512 training rows, one chunk of at most 1,024 query rows): time scales with the counted work
    (:func:`forward_flops`) and the training rows; memory is the probe's linear model of one pass's tensor
    peak in context and query-chunk rows (three profiled passes: the probe, a quarter of its query rows,
    half its context rows) at the asked shape, times :data:`NON_TENSOR`, plus the tables. Without it
    (or on another device): the work divided by the measured matmul throughput, memory from
    :func:`tabzoo.kernels.memory.in_context_bytes` (the bound the estimators check before allocating).

    :param est: an unfitted in-context estimator (its model is loaded, nothing else).
    :param throughput: flop/s to use (default: :func:`matmul_throughput` of ``device``).
    """
    t_load = time.perf_counter()
    model = est._fit_model().eval()
    load_s = time.perf_counter() - t_load
    members = int(getattr(est, "n_estimators", 1))
    chunk = int(getattr(est, "chunk_size", 1024))
    limit = getattr(type(est), "max_features", None) or getattr(model, "max_features", None)
    width = min(features, int(limit)) if isinstance(limit, int) else features
    if getattr(est, "pad_to_max_features", False) and isinstance(limit, int):
        width = int(limit)
    n_pred = rows if predict_rows is None else int(predict_rows)
    params = sum(p.numel() for p in model.parameters()) * FLOAT
    context = rows * features * 8.0 + rows * width * FLOAT  # the input as float64 + the stored float32 context
    pass_bytes = in_context_bytes(model, members, rows + min(chunk, max(n_pred, 1)), width)
    # the query rows as float64 (input, preprocessed, a member's view) and the [n, classes] outputs
    tables = n_pred * features * 8.0 * 3
    # the context is encoded once per predict call, then the query rows stream through in chunks
    flops = forward_flops(model, members, rows, n_pred, width)
    speed = throughput or matmul_throughput(str(torch.device(device)))
    chunks = max(1, math.ceil(n_pred / chunk))
    fit_mode_cache = getattr(est, "fit_mode", "") == "fit_with_cache"
    detail = (f"{members} members x ({rows} context + {min(chunk, n_pred)} query) rows x {width} features per pass, "
              f"{chunks} chunk(s) of {chunk}")
    if calibrate and torch.device(device).type == "cpu":
        pr = _probe(est, min(rows, 512), features, min(n_pred, chunk, 1024))
        probe_flops = forward_flops(model, members, pr.rows, pr.query, width)
        scale = flops / probe_flops if probe_flops > 0 else (rows + n_pred) / (pr.rows + pr.query)
        # the probe's linear model of the tensor peak at one chunk, times what tensors do not count
        chunk_bytes = NON_TENSOR * pr.tensor_peak(rows, min(chunk, max(n_pred, 1)))
        return Estimate(
            fit_bytes=params + context + (chunk_bytes if fit_mode_cache else 0.0),
            predict_bytes=chunk_bytes + tables,
            fit_seconds=load_s + pr.fit_seconds * rows / pr.rows,
            predict_seconds=pr.predict_seconds * scale,
            flops=flops, throughput=speed,
            detail=f"{detail}; calibrated on a probe run of {pr.rows} + {pr.query} rows",
        )
    return Estimate(
        fit_bytes=params + context + (pass_bytes if fit_mode_cache else 0.0),
        predict_bytes=pass_bytes + tables,
        fit_seconds=load_s + (flops / speed if fit_mode_cache else 0.0),
        predict_seconds=flops / speed,
        flops=flops, throughput=speed, detail=detail,
    )
