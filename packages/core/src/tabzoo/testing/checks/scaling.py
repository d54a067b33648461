"""Linear scaling per declared axis: FLOPs and peak memory at ``n, 2n, 4n, 8n``.

The fitted log-log slope (least squares of ``log cost`` on ``log n``) must be <= :data:`MAX_SLOPE`
for both

* **FLOPs**: the case's analytic ``cost(n)`` (typically a sum of kernel ``Backend.cost``), or
  else counted by :class:`torch.utils.flop_counter.FlopCounterMode` (matmuls, convolutions,
  attention: the ops whose count can grow faster than the data);
* **peak memory**: on CUDA ``torch.cuda.max_memory_allocated`` around the call; elsewhere the
  peak of live bytes of every tensor storage created during the call, tracked by a
  :class:`~torch.utils._python_dispatch.TorchDispatchMode` (:class:`LiveBytes`). That sees every
  tensor torch ops allocate (an ``[N, N]`` intermediate included) but not scratch memory inside a
  single fused kernel; inputs made before the call are not counted.

The wall-time slope is reported in ``details`` but never asserted (machines are noisy).
"""

from __future__ import annotations

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


class LiveBytes(TorchDispatchMode):
    """Tracks the bytes of tensor storages created inside the mode; ``peak`` is the maximum.

    A storage counts while any tensor viewing it is alive (views share their base's storage).
    """

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
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
        for t in tree_flatten(out)[0]:
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


def measure(case: ConformanceCase, axis: ScalingAxis, n: int, seed: int) -> dict[str, float]:
    """FLOPs, peak bytes and seconds of one forward at size ``n``."""
    from torch.utils.flop_counter import FlopCounterMode

    model = axis.make_model(n, seed) if axis.make_model is not None else case.build(seed)
    if hasattr(model, "eval") and hasattr(model, "to"):
        model = model.to(case.device).eval()
    inputs = axis.make_inputs(n, seed)

    def call() -> Any:
        with torch.no_grad():
            return case.call(model, *inputs)

    call()  # warm-up: lazy initialisation and caches are not part of the cost
    if axis.cost is not None:
        flops = _flops_of(axis.cost(n))
    else:
        counter = FlopCounterMode(display=False)
        with counter:
            call()
        flops = float(counter.get_total_flops())
    cuda = str(case.device).startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = call()
        torch.cuda.synchronize()
        peak = float(torch.cuda.max_memory_allocated() - before)
        del out
    else:
        tracker = LiveBytes()
        with tracker:
            out = call()
        del out
        peak = float(tracker.peak)
    start = time.perf_counter()
    call()
    if cuda:
        torch.cuda.synchronize()
    return {"n": n, "flops": flops, "peak_bytes": peak, "seconds": time.perf_counter() - start}


def check_linear_scaling(case: ConformanceCase, axis_capability: str, *, seed: int = 0) -> CheckResult:
    """Assert FLOPs and peak-memory slopes <= 1.15 over ``n, 2n, 4n, 8n`` on one axis."""
    check = axis_capability
    axis = case.scaling_axes.get(axis_capability) or default_axis(case, axis_capability)
    if axis is None:
        return skipped(check, case, f"the case declares {axis_capability} but gives no scaling_axes[{axis_capability!r}]")
    ns = [axis.base_n * f for f in FACTORS]
    rows = [measure(case, axis, n, seed) for n in ns]
    slopes = {k: fitted_slope(ns, [r[k] for r in rows]) for k in ("flops", "peak_bytes", "seconds")}
    details = {"sizes": ns, "measurements": rows, "slopes": slopes, "memory_method":
               "cuda.max_memory_allocated" if str(case.device).startswith("cuda") else "LiveBytes dispatch mode"}
    if all(r["flops"] == 0 for r in rows):
        details["note"] = "no FLOPs counted (no matmul-like ops); only memory is asserted"
        slopes_checked = {"peak_bytes": slopes["peak_bytes"]}
    else:
        slopes_checked = {"flops": slopes["flops"], "peak_bytes": slopes["peak_bytes"]}
    worst_key = max(slopes_checked, key=lambda k: slopes_checked[k])
    worst = slopes_checked[worst_key]
    axis_name = cap.SCALING_AXES[axis_capability]
    summary = ", ".join(f"{k} slope {v:.3f}" for k, v in slopes.items())
    if not worst <= MAX_SLOPE:
        return CheckResult(
            check, case.name, "failed", worst, MAX_SLOPE, {"seed": seed, "sizes": ns, "axis": axis_name},
            f"{check} violated: {worst_key} grows with fitted log-log slope {worst:.3f} > {MAX_SLOPE} "
            f"in the {axis_name} over n={ns} ({summary}; wall time not asserted).",
            details,
        )
    return CheckResult(check, case.name, "passed", worst, MAX_SLOPE, {"seed": seed, "sizes": ns, "axis": axis_name},
                       f"{summary} (wall time reported, not asserted)", details)


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

    return ScalingAxis(make_inputs=make_inputs, base_n=64)


def make_scaling_check(axis_capability: str) -> Callable[..., CheckResult]:
    """``check_<axis capability>(case, *, seed, max_examples)`` for one axis."""

    def check(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
        return check_linear_scaling(case, axis_capability, seed=seed)

    check.__name__ = f"check_{axis_capability}"
    check.__doc__ = f"Linear scaling in the {cap.SCALING_AXES[axis_capability]} axis (see :func:`check_linear_scaling`)."
    return check


check_linear_in_rows = make_scaling_check(cap.LINEAR_IN_ROWS)
check_linear_in_features = make_scaling_check(cap.LINEAR_IN_FEATURES)
check_linear_in_sequence = make_scaling_check(cap.LINEAR_IN_SEQUENCE)
