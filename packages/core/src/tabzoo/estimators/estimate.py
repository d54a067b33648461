"""Estimates before work (issue 29 item 3): peak memory and time of an in-context estimator's
``fit`` and ``predict`` for a table shape, before any data exists.

* Memory: the same estimate every in-context estimator checks before it allocates
  (:func:`tabzoo.kernels.memory.in_context_bytes`: members x (context + one query chunk) rows
  through the model), plus the tables themselves (the input as float64 and the stored float32
  context) and the model's parameters. A fitted estimator refuses with the fix above the limit.
* Time: the floating-point work of one forward pass (:func:`forward_flops`: counted by
  ``torch.utils.flop_counter.FlopCounterMode`` on a small probe pass, scaled to the shape), divided
  by the matmul throughput measured on this machine (:func:`matmul_throughput`, float32 matmuls).
* Calibrated (the default on the CPU): the estimator runs on a small probe of the same width, and
  fit's memory and time, predict's time and its tensor peak are lines through the probe's points,
  evaluated at the asked shape (:func:`estimate_in_context`).

Estimates are approximations: the committed comparison with measured peaks
(``benchmarks/results/estimate-fit-2026-11-27.json``) says by how much.
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

__all__ = ["Estimate", "context_plan", "estimate_in_context", "forward_flops", "matmul_throughput", "tensor_peak_bytes",
           "traced_peak_bytes"]


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


def traced_peak_bytes(fn: Any) -> tuple[Any, float]:
    """``(fn(), peak bytes)`` of the Python and numpy allocations of ``fn()`` above those live before it
    (``tracemalloc``; numpy reports its buffers to it, torch tensors are not counted)."""
    import tracemalloc

    was = tracemalloc.is_tracing()
    if not was:
        tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    try:
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not was:
            tracemalloc.stop()
    return result, float(max(0, peak - start))


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _line(big: float, small: float, at_big: float, at_small: float) -> tuple[float, float]:
    """``(fixed, slope)`` of the line through ``(at_small, small)`` and ``(at_big, big)``; slope >= 0, fixed >= 0."""
    slope = max(0.0, (big - small) / max(1.0, at_big - at_small))
    return max(0.0, big - slope * at_big), slope


@dataclass(frozen=True)
class _Probe:
    """A small run of the estimator itself on this machine, two fits and three predict passes:

    * ``fit`` on ``rows`` and on half of them: seconds and the fit's peak of Python/numpy allocations
      (:func:`traced_peak_bytes`), each a line ``fixed + per row * rows``;
    * ``predict_proba`` of ``query`` rows in one chunk against ``rows`` and half the rows of context, and of a
      quarter of the query rows: seconds, a line ``fixed + per context row * context + per query row * query``
      (context rows are encoded once per pass, query rows read them), and the same line for the pass's tensor
      peak (bytes, three profiled passes)."""

    rows: int
    query: int
    fit_seconds: float
    fit_fixed_s: float
    fit_per_row_s: float
    fit_fixed: float
    fit_per_row: float
    predict_seconds: float
    predict_fixed_s: float
    predict_per_context_s: float
    predict_per_query_s: float
    predict_peak: float
    fixed: float
    per_context: float
    per_query: float

    def tensor_peak(self, context: int, query: int) -> float:
        """The modelled tensor peak of one pass over ``context`` + ``query`` rows."""
        return self.fixed + self.per_context * context + self.per_query * query

    def fit_bytes(self, rows: int) -> float:
        """The modelled peak of Python/numpy allocations of ``fit`` on ``rows`` rows."""
        return self.fit_fixed + self.fit_per_row * rows

    def predict_time(self, passes: int, context_rows: int, query_rows: int) -> float:
        """Seconds of ``passes`` context encodings over ``context_rows`` rows in all, read by ``query_rows`` rows."""
        return passes * self.predict_fixed_s + self.predict_per_context_s * context_rows \
            + self.predict_per_query_s * query_rows


def _probe(est: Any, rows: int, features: int, query: int) -> _Probe:
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, features))
    classify = hasattr(est, "predict_proba")
    y = (x[:, 0] > 0).astype(np.int64) if classify else x[:, 0]
    q = rng.normal(size=(query, features))
    params = {k: v for k, v in est.get_params(deep=False).items()}
    params.update(chunk_size=query, verbose=False)

    def fit(n: int) -> Any:
        return type(est)(**params).fit(x[:n], y[:n])

    def runner(probe: Any) -> Any:
        run = probe.predict_proba if classify else probe.predict
        run(q[:8])  # the first call builds lazy state (member views): out of the timing and the peaks
        return run

    r_small, q_small = max(2, rows // 2), max(1, query // 4)
    fit(r_small)  # warm-up: code paths paged in, lazy imports done
    fit_s = _timed(lambda: fit(rows))
    fit_s_small = _timed(lambda: fit(r_small))
    fitted, fit_peak = traced_peak_bytes(lambda: fit(rows))
    fitted_small, fit_peak_small = traced_peak_bytes(lambda: fit(r_small))
    run, run_small = runner(fitted), runner(fitted_small)
    seconds = _timed(lambda: run(q))  # timed apart: the profiler slows the pass it watches
    t_few_queries = _timed(lambda: run(q[:q_small]))
    t_small_context = _timed(lambda: run_small(q))
    peak = tensor_peak_bytes(lambda: run(q))[1]
    # two more points: a quarter of the query rows, then half the context rows
    per_query = max(0.0, (peak - tensor_peak_bytes(lambda: run(q[:q_small]))[1]) / max(1, query - q_small))
    per_query_s = max(0.0, (seconds - t_few_queries) / max(1, query - q_small))
    per_context = max(0.0, (peak - tensor_peak_bytes(lambda: run_small(q))[1]) / max(1, rows - r_small))
    fixed = max(0.0, peak - per_query * query - per_context * rows)
    # a context row does a query row's work and adds to the state: never cheaper (the small probe's
    # difference of two short passes is noisy)
    per_context_s = max(per_query_s, (seconds - t_small_context) / max(1, rows - r_small))
    fixed_s = max(0.0, seconds - per_query_s * query - per_context_s * rows)
    fit_fixed_s, fit_per_row_s = _line(fit_s, fit_s_small, rows, r_small)
    fit_fixed, fit_per_row = _line(fit_peak, fit_peak_small, rows, r_small)
    return _Probe(rows, query, fit_s, fit_fixed_s, fit_per_row_s, fit_fixed, fit_per_row, seconds, fixed_s,
                  per_context_s, per_query_s, peak, fixed, per_context, per_query)


def local_fit_seconds(est: Any, rows: int, features: int, probe_rows: int = 512, probe_k: int = 8) -> float:
    """Seconds ``fit`` spends clustering ``rows`` rows into local contexts (0 for a global context):
    :func:`tabzoo.estimators.local.fit_local_contexts` timed on ``probe_rows`` random rows in ``probe_k``
    clusters, scaled by rows x clusters (k-means and the per-centre row order are both ~linear in each)."""
    import numpy as np

    from tabzoo.estimators.local import fit_local_contexts

    encodings, _, _ = context_plan(est, rows)
    if encodings == 1:
        return 0.0
    k = math.ceil(rows / int(getattr(est, "local_size", 2048)))
    n = min(rows, probe_rows)
    x = np.random.default_rng(0).normal(size=(n, features))
    seconds = _timed(lambda: fit_local_contexts(x, max(1, n // probe_k), seed=0))
    return seconds * (rows * k) / (n * probe_k)


def context_plan(est: Any, rows: int) -> tuple[int, int, int]:
    """``(context encodings, context rows encoded in all, query passes)`` of one ``predict`` after ``fit`` on
    ``rows`` rows, from the estimator's context strategy (:mod:`tabzoo.estimators.local`): the global context
    is one encoding of ``rows`` read once by every query row; local contexts are ``ceil(rows / local_size)``
    encodings of ``1.5 * local_size`` rows each, every query row reading one of them; ``"local+global"`` does
    both (queries read twice). ``"select"`` chooses on a validation split: counted as ``"local+global"``."""
    from tabzoo.estimators.ensemble import AUTO_LOCAL_ROWS

    strategy = str(getattr(est, "context_strategy", "global"))
    size = int(getattr(est, "local_size", 2048))
    if strategy == "auto":
        strategy = "local+global" if rows > AUTO_LOCAL_ROWS else "global"
    if strategy == "global" or rows <= size:
        return 1, rows, 1
    k = math.ceil(rows / size)
    local = k * min(rows, round(1.5 * size))
    if strategy == "local":
        return k, local, 1
    return k + 1, local + rows, 2


def estimate_in_context(est: Any, rows: int, features: int, *, predict_rows: int | None = None,
                        device: str = "cpu", throughput: float | None = None, calibrate: bool = True) -> Estimate:
    """Estimate ``fit`` on ``rows x features`` and ``predict`` of ``predict_rows`` (default ``rows``) rows.

    With ``calibrate`` (CPU), the estimator itself runs on a small probe of the same width (at most 512
    training rows, one chunk of at most 1,024 query rows; :class:`_Probe`): fit memory and time are the
    probe's lines in the training rows (two fits); predict time is its line in context rows encoded and query
    rows read, over the passes :func:`context_plan` counts for the estimator's context strategy (local
    contexts above 8,192 rows encode more rows and read the queries twice); predict memory is the probe's
    linear model of one pass's tensor peak in context and query-chunk rows (three profiled passes) at the
    asked shape, times :data:`NON_TENSOR`, plus the tables. Without it
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
        q_chunk = min(chunk, max(n_pred, 1))
        pr = _probe(est, min(rows, 512), features, min(n_pred, chunk, 1024))
        encodings, encoded, query_passes = context_plan(est, rows)
        # the probe's linear model of the tensor peak at one chunk, times what tensors do not count
        chunk_bytes = NON_TENSOR * pr.tensor_peak(rows, q_chunk)
        return Estimate(
            # above a process that has fitted once (as after the probe): each fit builds its model again in the
            # memory the previous one freed, so the parameters (torch, not traced) are not added; a process's
            # first fit adds them once (params bytes) besides the libraries it pages in
            fit_bytes=pr.fit_bytes(rows) + (chunk_bytes if fit_mode_cache else 0.0),
            predict_bytes=chunk_bytes + tables,
            fit_seconds=pr.fit_fixed_s + pr.fit_per_row_s * rows + local_fit_seconds(est, rows, features)
            + (pr.predict_time(encodings, encoded, 0) if fit_mode_cache else 0.0),
            predict_seconds=pr.predict_time(encodings + chunks - 1, 0 if fit_mode_cache else encoded,
                                            query_passes * n_pred),
            flops=flops, throughput=speed,
            detail=f"{detail}; {encodings} context encoding(s) of {encoded} rows in all, queries read "
                   f"{query_passes}x; calibrated on a probe run of {pr.rows} + {pr.query} rows",
        )
    return Estimate(
        fit_bytes=params + context + (pass_bytes if fit_mode_cache else 0.0),
        predict_bytes=pass_bytes + tables,
        fit_seconds=load_s + (flops / speed if fit_mode_cache else 0.0),
        predict_seconds=flops / speed,
        flops=flops, throughput=speed, detail=detail,
    )
