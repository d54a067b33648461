"""Shared machinery of the checks: input generation, comparison, example loop and shrinking.

Examples are drawn from a seeded :class:`random.Random` (no hypothesis needed at run time, so
the kit runs wherever tabzoo-core is installed). On the first failing example the sizes are
shrunk greedily (halving each size while the failure persists), so the reproducer is small.
"""

from __future__ import annotations

import logging
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from tabzoo.testing.case import CheckResult, ConformanceCase

logger = logging.getLogger("tabzoo.testing")

MIN_SIZES = {"batch": 1, "n_context": 2, "n_query": 2, "n_features": 1}


@dataclass
class Outcome:
    """What one example measured: ``discrepancy`` must stay within ``tolerance``."""

    discrepancy: float
    tolerance: float
    reproducer: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def failed(self) -> bool:
        return not (self.discrepancy <= self.tolerance)  # NaN fails


def torch_dtype(case: ConformanceCase) -> torch.dtype:
    return getattr(torch, case.dtype)


def max_abs(t: torch.Tensor) -> float:
    t = t.detach().double()
    return float(t.abs().max()) if t.numel() else 0.0


def discrepancy(actual: Any, expected: Any, case: ConformanceCase, scale: float = 1.0) -> tuple[float, float]:
    """``(max |actual - expected|, atol + rtol * max |expected|)``; NaN where only one is NaN -> inf."""
    a, e = _as_tensor(actual), _as_tensor(expected)
    if a.shape != e.shape:
        return float("inf"), 0.0
    atol, rtol = case.tolerance(scale)
    a64, e64 = a.detach().double(), e.detach().double()
    both_nan = torch.isnan(a64) & torch.isnan(e64)
    diff = torch.where(both_nan, torch.zeros_like(a64), (a64 - e64).abs())
    diff = torch.nan_to_num(diff, nan=float("inf"))
    finite = e64[torch.isfinite(e64)]
    return (float(diff.max()) if diff.numel() else 0.0), atol + rtol * (max_abs(finite) if finite.numel() else 0.0)


def _as_tensor(x: Any) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)):
        return torch.cat([_as_tensor(v).reshape(-1).double() for v in x]) if x else torch.zeros(0)
    if isinstance(x, dict):
        return _as_tensor([x[k] for k in sorted(x)])
    return torch.as_tensor(x)


def draw_sizes(rnd: random.Random, case: ConformanceCase) -> dict[str, int]:
    """Small random sizes for the row protocols."""
    n_query = rnd.randint(2, 6)
    n_context = rnd.randint(max(2, case.n_classes), max(2, case.n_classes, case.max_rows - n_query))
    return {"batch": rnd.randint(1, 2), "n_context": n_context, "n_query": n_query, "n_features": case.n_features}


def make_rows(case: ConformanceCase, sizes: dict[str, int], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``x [B, N, F]`` and ``y [B, N]`` (labels of every row) for ``sizes`` and ``seed``.

    Classification labels are class indices as floats; every class occurs among the context rows
    when there are enough of them. Regression labels (``n_classes == 0``) are standard normal.
    """
    g = torch.Generator().manual_seed(seed)
    b, nc, nq, f = sizes["batch"], sizes["n_context"], sizes["n_query"], sizes["n_features"]
    x = torch.randn(b, nc + nq, f, generator=g)
    if case.n_classes:
        y = torch.randint(0, case.n_classes, (b, nc + nq), generator=g).float()
        k = min(nc, case.n_classes)
        y[:, :k] = torch.arange(k, dtype=torch.float32)
        y[:, :nc] = y[:, torch.randperm(nc, generator=g)]
    else:
        y = torch.randn(b, nc + nq, generator=g)
    return x.to(case.device, torch_dtype(case)), y.to(case.device)


def other_labels(case: ConformanceCase, y: torch.Tensor, seed: int) -> torch.Tensor:
    """Labels that differ from ``y`` everywhere (a different class, or a shifted value)."""
    g = torch.Generator().manual_seed(seed)
    if case.n_classes:
        shift = torch.randint(1, max(2, case.n_classes), y.shape, generator=g).to(y.device)
        return torch.remainder(y + shift, max(2, case.n_classes))
    return y + 1.0 + torch.rand(y.shape, generator=g).to(y.device)


def run_rows(case: ConformanceCase, model: Any, x: torch.Tensor, y: torch.Tensor, n_context: int) -> tuple[Any, Any]:
    """``(query outputs [B, n_query, ...], context outputs [B, n_context, ...] or None)``.

    In-context protocol: the forward gives query outputs; context outputs come from
    ``case.context_repr`` when given. Rows protocol: the forward gives every row's output, split.
    """
    with torch.no_grad():
        if case.protocol == "rows":
            qmask = torch.zeros(x.shape[:2], dtype=torch.bool, device=x.device)
            qmask[:, n_context:] = True
            out = case.call(model, x, y, qmask)
            ctx = out[:, :n_context]
            if case.context_repr is not None:
                ctx = case.context_repr(model, x, y, n_context)
            return out[:, n_context:], ctx
        out = case.call(model, x, y, n_context)
        ctx = case.context_repr(model, x, y, n_context) if case.context_repr is not None else None
        return out, ctx


def shrink(sizes: dict[str, int], fails: Callable[[dict[str, int]], bool], budget: int = 24) -> dict[str, int]:
    """Greedy shrinking: halve each size toward its minimum while ``fails`` stays true."""
    best = dict(sizes)
    progress = True
    while progress and budget > 0:
        progress = False
        for key in sorted(best):
            lo = MIN_SIZES.get(key)
            if lo is None or best[key] <= lo or key == "n_features":
                continue
            trial = dict(best)
            trial[key] = max(lo, best[key] // 2)
            budget -= 1
            try:
                bad = fails(trial)
            except Exception:  # noqa: BLE001 - a size the model refuses is not a smaller failure
                bad = False
            if bad:
                best, progress = trial, True
    return best


def run_examples(
    case: ConformanceCase,
    check: str,
    example: Callable[[dict[str, int], int], Outcome],
    *,
    seed: int,
    max_examples: int,
    draw: Callable[[random.Random, ConformanceCase], dict[str, int]] = draw_sizes,
    what: str = "",
) -> CheckResult:
    """Run ``example(sizes, example_seed)`` on up to ``max_examples`` drawn sizes.

    The first failing example is shrunk and reported with its seed, sizes and the example's own
    reproducer fields (e.g. the permutation). Passing returns the worst discrepancy seen.
    """
    rnd = random.Random(seed)
    worst: Outcome | None = None
    for i in range(max_examples):
        sizes = draw(rnd, case)
        ex_seed = seed * 1000 + i
        outcome = example(sizes, ex_seed)
        if outcome.failed:
            def still_fails(s: dict[str, int], e: int = ex_seed) -> bool:
                return example(s, e).failed

            small = shrink(sizes, still_fails)
            if small != sizes:
                outcome = example(small, ex_seed)
                sizes = small
            repro = {"seed": ex_seed, "sizes": sizes, **outcome.reproducer}
            return CheckResult(
                check, case.name, "failed", outcome.discrepancy, outcome.tolerance, repro,
                f"{check} violated{(' (' + what + ')') if what else ''}: discrepancy "
                f"{outcome.discrepancy:.3g} > tolerance {outcome.tolerance:.3g} at sizes {sizes}, "
                f"seed {ex_seed}{(', ' + outcome.note) if outcome.note else ''}.",
            )
        if worst is None or outcome.discrepancy > worst.discrepancy or worst.discrepancy != worst.discrepancy:
            worst = outcome
    disc = worst.discrepancy if worst else None
    tol = worst.tolerance if worst else None
    note = f"; {worst.note}" if worst and worst.note else ""
    return CheckResult(
        check, case.name, "passed", disc, tol, {"seed": seed, "examples": max_examples},
        f"{max_examples} examples, worst discrepancy {disc:.3g} <= {tol:.3g}{note}" if worst else "no examples",
    )


def error_result(check: str, case: ConformanceCase, exc: BaseException, seed: int) -> CheckResult:
    """A check that crashed: ``error`` with the exception and where it happened."""
    tb = traceback.format_exception(exc)
    return CheckResult(
        check, case.name, "error", None, None, {"seed": seed},
        f"{check} could not run: {type(exc).__name__}: {exc}", {"traceback": "".join(tb[-6:])},
    )


def skipped(check: str, case: ConformanceCase, reason: str) -> CheckResult:
    return CheckResult(check, case.name, "skipped", message=reason)
