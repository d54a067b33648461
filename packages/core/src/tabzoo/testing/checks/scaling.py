"""Linear scaling per declared axis: what the kit counts itself, at sizes it chooses.

Sizes: ``n0 = max(axis.base_n, MIN_N)`` (:data:`MIN_N` = 4096, so constant overheads do not hide
a quadratic term) and ``2 n0, 4 n0, 8 n0``. At each size one forward runs under two dispatch
modes that count, for every aten op:

* **FLOPs** (:class:`torch.utils.flop_counter.FlopCounterMode`: matmuls, convolutions, attention);
* **elements**: the output elements of EVERY op, elementwise and reductions included. That is a
  floor of the work done, so a pairwise-distance kernel (``cdist``), an ``[N, N]`` elementwise
  product or a chunked quadratic loop (each chunk small, the total quadratic) is caught;
* **peak memory**: on CUDA ``torch.cuda.max_memory_allocated``; elsewhere the peak of live bytes
  of every storage created during the call (:class:`LiveBytes`).

The fitted log-log slope of each of these must be <= :data:`MAX_SLOPE`. Counting is exact, so
after two sizes a slope far above the limit stops the check (no 32768^2 intermediate is ever
built). The tensor inputs must grow with ``n`` (an axis that does not grow proves nothing). A
plugin's analytic ``ScalingAxis.cost`` is reported beside the counts, never instead of them.
Time is asserted only coarsely (:data:`WALL_MAX_SLOPE` once a forward takes
:data:`WALL_MIN_SECONDS`): it catches work done outside torch ops, which the counts cannot see.
It is the process's CPU time (``time.process_time``), so another process keeping the cores busy
does not inflate it, and a slope above the limit is measured once more (minimum per size) before
it fails; ``details["time_slopes"]`` and ``["time_slope_spread"]`` report both (issue 23 item 8).
"""

from __future__ import annotations

import json
import math
import time
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase, ScalingAxis
from tabzoo.testing.checks._common import skipped

MAX_SLOPE = 1.15
FACTORS = (1, 2, 4, 8)
MIN_N = 4096
"""The smallest size the kit measures on any axis, whatever the plugin's ``base_n``."""
EARLY_STOP_SLOPE = 1.6
"""After two sizes, a counted slope above this ends the check as failed (counts are exact)."""
MAX_PROJECTED_BYTES = 3 * 2**30
"""Stop before a size whose projected peak memory exceeds this (a superlinear path, surely)."""
WALL_MAX_SLOPE, WALL_MIN_SECONDS = 1.7, 0.5
"""Wall time is asserted only coarsely: its slope may not exceed 1.7 once the largest forward
takes 0.5 s or more. That catches work the op counts cannot see (numpy, C extensions) without
failing a linear model on a noisy machine (a 3x load spike on one size moves the slope ~0.5)."""


class LiveBytes(TorchDispatchMode):
    """Tracks the bytes of tensor storages created inside the mode; ``peak`` is the maximum.
    ``elements`` sums the output elements of every op (a floor of the work done).

    A storage counts while any tensor viewing it is alive (views share their base's storage).
    """

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self.elements = 0
        self.ops = 0
        self._refs: dict[int, list[Any]] = {}  # storage key -> [n alive tensors, nbytes]

    def _release(self, key: int) -> None:
        entry = self._refs.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            self.live -= entry[1]
            del self._refs[key]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.elements += t.numel()
            if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                continue
            try:
                storage = t.untyped_storage()
                key, nbytes = storage.data_ptr(), storage.nbytes()
            except Exception:  # noqa: BLE001 - tensors without storage (sparse, nested) are skipped
                continue
            if key == 0:
                continue
            entry = self._refs.get(key)
            if entry is None:
                self._refs[key] = [1, nbytes]
                self.live += nbytes
                self.peak = max(self.peak, self.live)
            else:
                entry[0] += 1
            weakref.finalize(t, self._release, key)
        return out


def fitted_slope(ns: list[int], values: list[float]) -> float:
    """Least-squares slope of ``log(value)`` against ``log(n)`` (values <= 0 count as tiny)."""
    xs = [math.log(n) for n in ns]
    ys = [math.log(max(v, 1e-12)) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def _flops_of(value: Any) -> float:
    return float(getattr(value, "flops", value))


def _input_elements(inputs: Any) -> int:
    return sum(t.numel() for t in tree_flatten(list(inputs))[0] if isinstance(t, torch.Tensor))


def measure(case: ConformanceCase, axis: ScalingAxis, n: int, seed: int, model: Any = None,
            warm: bool = True) -> dict[str, float]:
    """Counted FLOPs, op output elements, peak bytes and seconds of one forward at size ``n``
    (plus the plugin's declared cost when it gives one). ``model``: reuse this model (built when
    ``None``); ``warm``: run (and time) a warm-up call first, else time the counted call."""
    from torch.utils.flop_counter import FlopCounterMode

    if model is None:
        model = axis.make_model(n, seed) if axis.make_model is not None else case.build(seed)
        if hasattr(model, "eval") and hasattr(model, "to"):
            model = model.to(case.device).eval()
    inputs = axis.make_inputs(n, seed)

    def call() -> Any:
        with torch.no_grad():
            return case.call(model, *inputs)

    if warm:  # lazy initialisation, caches and the counters' own first use are not part of the counts
        with FlopCounterMode(display=False), LiveBytes():
            call()
    cuda = str(case.device).startswith("cuda")
    counter, tracker = FlopCounterMode(display=False), LiveBytes()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    start, cpu = time.perf_counter(), time.process_time()
    with counter, tracker:
        out = call()
    counted_seconds = time.perf_counter() - start  # includes the counting overhead
    cpu_seconds = time.process_time() - cpu  # CPU time of this process: other processes do not inflate it
    del out
    peak = float(torch.cuda.max_memory_allocated() - before) if cuda else float(tracker.peak)
    row = {"n": n, "flops": float(counter.get_total_flops()), "elements": float(tracker.elements),
           "peak_bytes": peak, "seconds": counted_seconds, "cpu_seconds": cpu_seconds,
           "input_elements": float(_input_elements(inputs))}
    if axis.cost is not None:
        row["declared_flops"] = _flops_of(axis.cost(n))
    return row


def check_linear_scaling(case: ConformanceCase, axis_capability: str, *, seed: int = 0) -> CheckResult:
    """Counted FLOPs, op output elements and peak memory grow with fitted slope <= 1.15 over
    ``n0, 2 n0, 4 n0, 8 n0`` (``n0 >= MIN_N``) on one axis."""
    check = axis_capability
    axis = case.scaling_axes.get(axis_capability) or default_axis(case, axis_capability)
    if axis is None:
        return skipped(check, case, f"the case declares {axis_capability} but gives no scaling_axes[{axis_capability!r}]")
    n0 = max(int(axis.base_n), MIN_N)
    ns = [n0 * f for f in FACTORS]
    axis_name = cap.SCALING_AXES[axis_capability]
    rows: list[dict[str, float]] = []
    shared: Any = None
    stopped = ""
    asserted = ("flops", "elements", "peak_bytes")
    for n in ns:
        if len(rows) >= 2:
            early = {k: fitted_slope([int(r["n"]) for r in rows], [r[k] for r in rows]) for k in asserted}
            over = {k: v for k, v in early.items() if v > EARLY_STOP_SLOPE and rows[-1][k] > 0}
            projected = rows[-1]["peak_bytes"] * (n / rows[-1]["n"]) ** max(early["peak_bytes"], 1.0)
            if over:
                stopped = f"stopped after n={[int(r['n']) for r in rows]}: {', '.join(over)} already superlinear"
                break
            if projected > MAX_PROJECTED_BYTES:
                stopped = f"stopped before n={n}: projected peak memory {projected / 2**30:.1f} GiB"
                break
            wall = fitted_slope([int(r["n"]) for r in rows], [r["cpu_seconds"] for r in rows])
            if len(rows) >= 3 and wall > WALL_MAX_SLOPE and rows[-1]["cpu_seconds"] >= WALL_MIN_SECONDS:
                break  # wall time already superlinear: the final verdict below reports it
        if shared is None and axis.make_model is None:
            shared = case.build(seed)
            if hasattr(shared, "eval") and hasattr(shared, "to"):
                shared = shared.to(case.device).eval()
            rows.append(measure(case, axis, n, seed, model=shared, warm=True))
            continue
        rows.append(measure(case, axis, n, seed, model=shared, warm=shared is None))
    measured = [int(r["n"]) for r in rows]
    keys = ("flops", "elements", "peak_bytes", "seconds", "input_elements") + (
        ("declared_flops",) if axis.cost is not None else ())
    slopes = {k: fitted_slope(measured, [r[k] for r in rows]) for k in keys}
    details: dict[str, Any] = {
        "sizes": measured, "planned_sizes": ns, "min_n": MIN_N, "measurements": rows, "slopes": slopes,
        "memory_method": "cuda.max_memory_allocated" if str(case.device).startswith("cuda") else "LiveBytes dispatch mode",
        "declared_cost": "reported beside the counts, not asserted" if axis.cost is not None else None,
    }
    if stopped:
        details["note"] = stopped
    repro = {"seed": seed, "model_seed": seed, "sizes": measured, "axis": axis_name}
    repro["replay"] = json.dumps({"check": check, "model_seed": seed, "sizes": measured}, sort_keys=True,
                                 separators=(",", ":"))
    summary = ", ".join(f"{k} slope {v:.3f}" for k, v in slopes.items())
    if slopes["input_elements"] < 0.9:
        return CheckResult(check, case.name, "failed", slopes["input_elements"], 0.9, repro,
                           f"{check} not shown: the inputs of scaling_axes[{check!r}] do not grow with n (input "
                           f"elements slope {slopes['input_elements']:.3f} < 0.9); make_inputs(n, seed) must put n on "
                           f"the {axis_name} axis.", details)
    checked = {k: slopes[k] for k in asserted if any(r[k] > 0 for r in rows)}
    worst_key = max(checked, key=lambda k: checked[k])
    worst = checked[worst_key]
    if stopped or not worst <= MAX_SLOPE:
        return CheckResult(
            check, case.name, "failed", worst, MAX_SLOPE, repro,
            f"{check} violated: counted {worst_key} grows with fitted log-log slope {worst:.3f} > {MAX_SLOPE} "
            f"in the {axis_name} over n={measured}{' (' + stopped + ')' if stopped else ''} ({summary}; "
            "wall time not asserted).",
            details,
        )
    time_slope = _robust_time_slope(case, axis, seed, shared, rows, details)
    if time_slope > WALL_MAX_SLOPE and rows[-1]["cpu_seconds"] >= WALL_MIN_SECONDS:
        return CheckResult(
            check, case.name, "failed", time_slope, WALL_MAX_SLOPE, repro,
            f"{check} violated: CPU time grows with slope {time_slope:.3f} > {WALL_MAX_SLOPE} in two measurements "
            f"(slopes {details['time_slopes']}; the largest forward took {rows[-1]['cpu_seconds']:.2f} s of CPU) "
            f"although the counted torch ops grow linearly: work outside torch ops (numpy, C extensions, Python "
            f"arithmetic) is not linear ({summary}).",
            details,
        )
    if axis.cost is not None and slopes["declared_flops"] + 0.1 < slopes["flops"]:
        details["declared_note"] = "the declared cost grows more slowly than the counted FLOPs"
    return CheckResult(check, case.name, "passed", worst, MAX_SLOPE, repro,
                       f"{summary} at n={measured} (counted by the kit; wall time asserted only coarsely)", details)


def _robust_time_slope(case: ConformanceCase, axis: ScalingAxis, seed: int, model: Any,
                       rows: list[dict[str, float]], details: dict[str, Any]) -> float:
    """The slope of per-size CPU time (``time.process_time``: load from other processes does not
    count), retried once when it is an outlier above :data:`WALL_MAX_SLOPE`: each size is timed
    again and its minimum kept. ``details["time_slopes"]`` lists the slopes measured (their spread
    is reported)."""
    ns = [int(r["n"]) for r in rows]
    cpu = [r["cpu_seconds"] for r in rows]
    slopes = [fitted_slope(ns, cpu)]
    if slopes[0] > WALL_MAX_SLOPE and rows[-1]["cpu_seconds"] >= WALL_MIN_SECONDS:
        again = [measure(case, axis, n, seed, model=model, warm=model is None)["cpu_seconds"] for n in ns]
        cpu = [min(a, b) for a, b in zip(cpu, again, strict=True)]
        slopes.append(fitted_slope(ns, cpu))
    details["time_slopes"] = [round(v, 3) for v in slopes]
    details["time_slope_spread"] = round(max(slopes) - min(slopes), 3)
    return slopes[-1]


def default_axis(case: ConformanceCase, axis_capability: str) -> ScalingAxis | None:
    """In-context cases get a default rows axis: ``N = n`` rows, half context, fixed features."""
    if case.protocol != "in-context" or axis_capability != cap.LINEAR_IN_ROWS:
        return None

    def make_inputs(n: int, seed: int) -> tuple[Any, ...]:
        g = torch.Generator().manual_seed(seed)
        nc = n // 2
        x = torch.randn(1, n, case.n_features, generator=g).to(case.device, getattr(torch, case.dtype))
        y = torch.remainder(torch.arange(n, dtype=torch.float32), max(case.n_classes, 1))[None]
        if not case.n_classes:
            y = torch.randn(1, n, generator=g)
        return x, y.to(case.device), nc

    return ScalingAxis(make_inputs=make_inputs, base_n=MIN_N)


def make_scaling_check(axis_capability: str) -> Callable[..., CheckResult]:
    """``check_<axis capability>(case, *, seed, max_examples)`` for one axis."""

    def check(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
              replay: dict[str, Any] | None = None) -> CheckResult:
        return check_linear_scaling(case, axis_capability, seed=int((replay or {}).get("model_seed", seed)))

    check.__name__ = f"check_{axis_capability}"
    check.__doc__ = f"Linear scaling in the {cap.SCALING_AXES[axis_capability]} axis (see :func:`check_linear_scaling`)."
    return check


check_linear_in_rows = make_scaling_check(cap.LINEAR_IN_ROWS)
check_linear_in_features = make_scaling_check(cap.LINEAR_IN_FEATURES)
check_linear_in_sequence = make_scaling_check(cap.LINEAR_IN_SEQUENCE)
