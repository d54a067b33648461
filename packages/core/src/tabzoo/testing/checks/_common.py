"""Shared machinery of the checks: input generation, comparison, the example loop and replay.

Sizes and data seeds are drawn by hypothesis (with shrinking) in two phases per check:

* ``small``: ``max_examples`` examples, batch 1-2, 2-8 query rows, context up to ``case.max_rows``;
* ``large``: ``max(2, max_examples // 5)`` examples, batch 1-:data:`LARGE` ``["batch"]``, context
  64-512 rows, query 16-64 rows.

Each example also draws ``ties`` (features rounded to a coarse grid, so many values tie) and
``duplicates`` (copies of context rows inside the context, with their own labels, and in the
query). Every example builds a FRESH model from ``model_seed`` for each forward, so state carried
between calls cannot pass or fail a property check; the ``determinism`` check owns state. When an
example fails, two identical calls are compared first: if they already differ, the failure is
reported as non-determinism (status ``error``), not as a violation of the property.

The failing example, shrunk by hypothesis, is reported with a replay spec (JSON): ``check``,
``model_seed``, ``data_seed``, ``sizes``, ``ties``, ``duplicates`` and the example's own fields
(permutation, changed row, episode). :func:`run_examples` with ``replay=spec`` runs exactly that
example again.
"""
from __future__ import annotations

import contextvars
import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from tabzoo.testing.case import MASKED_PROTOCOLS, CheckResult, ConformanceCase, task_name
from tabzoo.testing.checks.sizes import (  # re-exported: the size search lives there
    LARGE,
    LARGE_MIN,
    PROFILE_ENV,
    PROFILES,
    SMALL_QUERY,
    claims_missing,
    largest_spec,
    profile,
    sized,
    spec_strategy,
)

__all__ = ["LARGE", "LARGE_MIN", "PROFILES", "PROFILE_ENV", "SMALL_QUERY", "Outcome", "claims_missing", "discrepancy",
           "keep_valid", "largest_spec", "make_rows", "other_labels", "perturbation", "profile", "query_mask",
           "query_mask_for", "regression_tasks", "run_examples", "run_rows", "shrink_spec", "sized", "skipped",
           "spec_strategy"]

logger = logging.getLogger("tabzoo.testing")


@dataclass
class Outcome:
    """What one example measured: ``discrepancy`` must stay within ``tolerance``."""

    discrepancy: float
    tolerance: float
    reproducer: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    crashed: bool = False

    @property
    def failed(self) -> bool:
        return not (self.discrepancy <= self.tolerance)  # NaN fails


def torch_dtype(case: ConformanceCase) -> torch.dtype:
    return getattr(torch, case.dtype)


def max_abs(t: torch.Tensor) -> float:
    t = t.detach().double()
    return float(t.abs().max()) if t.numel() else 0.0


def discrepancy(actual: Any, expected: Any, case: ConformanceCase, scale: float = 1.0) -> tuple[float, float]:
    """``(max |actual - expected|, atol + rtol * max |expected|)``.

    A NaN or infinite value on either side is never agreement (issue 23: two NaN outputs used to
    "agree"): its difference is ``inf``, so every property check fails on non-finite outputs."""
    a, e = _as_tensor(actual), _as_tensor(expected)
    if a.shape != e.shape:
        return float("inf"), 0.0
    atol, rtol = case.tolerance(scale)
    a64, e64 = a.detach().double(), e.detach().double()
    bad = ~(torch.isfinite(a64) & torch.isfinite(e64))
    diff = torch.where(bad, torch.full_like(a64, float("inf")), (a64 - e64).abs())
    finite = e64[torch.isfinite(e64)]
    d, t = (float(diff.max()) if diff.numel() else 0.0), atol + rtol * (max_abs(finite) if finite.numel() else 0.0)
    if case.tasks and not d <= t:
        _note_tasks(actual, expected, case, scale)
    return d, t


_MOVED_TASKS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("tabzoo_moved_tasks", default=None)
"""While an example runs (:func:`_safe`): the names of the tasks whose outputs failed a comparison."""


def _note_tasks(actual: Any, expected: Any, case: ConformanceCase, scale: float) -> None:
    """Record which tasks' output columns ``[..., sum of task widths]`` differ beyond tolerance
    (multitask protocol), so that the failure message names them."""
    log = _MOVED_TASKS.get()
    if log is None:
        return
    pairs = list(zip(actual, expected, strict=False)) if isinstance(actual, (tuple, list)) and isinstance(
        expected, (tuple, list)) else [(actual, expected)]
    plain = ConformanceCase(case.name, tol_scale=case.tol_scale, dtype=case.dtype)
    for a, e in pairs:
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor) and a.shape == e.shape and a.dim()
                and a.shape[-1] == sum(case.task_widths)):
            continue
        start = 0
        for t, (k, w) in enumerate(zip(case.tasks, case.task_widths, strict=True)):
            d, tol = discrepancy(a[..., start:start + w], e[..., start:start + w], plain, scale)
            start += w
            if not d <= tol and task_name(t, k) not in log:
                log.append(task_name(t, k))


def _as_tensor(x: Any) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)):
        return torch.cat([_as_tensor(v).reshape(-1).double() for v in x]) if x else torch.zeros(0)
    if isinstance(x, dict):
        return _as_tensor([x[k] for k in sorted(x)])
    return torch.as_tensor(x)



MISSING_RATE = 0.2
"""Share of feature values set to NaN in an example with ``missing`` (context and query rows)."""


def make_rows(case: ConformanceCase, spec: dict[str, Any], seed: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``x [B, N, F]`` and ``y [B, N]`` (labels of every row) for an example spec.

    ``spec`` holds ``sizes`` (or is itself the sizes dict, with ``seed`` given), ``data_seed``,
    ``ties``, ``duplicates``, ``missing`` (NaN features) and optionally ``absent_class`` (that class occurs in no row; needs 3+
    classes so that the context keeps two). Classification labels are class indices as floats; every class
    occurs among the context rows when there are enough of them. Regression labels
    (``n_classes == 0``) are standard normal.
    """
    if "sizes" not in spec:
        spec = {"sizes": spec, "data_seed": seed or 0}
    case = sized(case, spec)
    sizes = spec["sizes"]
    g = torch.Generator().manual_seed(int(spec.get("data_seed", 0)))
    b, nc, nq, f = sizes["batch"], sizes["n_context"], sizes["n_query"], sizes["n_features"]
    x = torch.randn(b, nc + nq, f, generator=g)
    if spec.get("ties"):
        x = torch.round(x * 2) / 2  # a coarse grid: many tied values in every column
    if case.tasks:  # multitask: one label column per task, each drawn like a single task's
        y = torch.stack([_labels(k, b, nc, nq, g, bool(spec.get("ties"))) for k in case.tasks], dim=-1)
    else:
        y = _labels(case.n_classes, b, nc, nq, g, bool(spec.get("ties")))
    absent = spec.get("absent_class")
    if absent is not None and case.n_classes >= 3 and not case.tasks:  # one class never occurs (context nor query)
        y = torch.where(y == float(absent), torch.remainder(y + 1, case.n_classes), y)
    if spec.get("duplicates") and nc >= 2:
        half = max(1, nc // 2)
        dst = torch.randperm(nc, generator=g)[:half]
        src = torch.randint(0, nc, (half,), generator=g)
        x[:, dst] = x[:, src]  # duplicated context rows (labels drawn independently)
        pick = torch.rand(nq, generator=g) < 0.5
        qsrc = torch.randint(0, nc, (nq,), generator=g)
        rows = torch.arange(nc, nc + nq)[pick]
        x[:, rows] = x[:, qsrc[pick]]  # query rows equal to context rows
    if spec.get("missing"):  # NaN features in context AND query rows, from their own generator
        gm = torch.Generator().manual_seed(int(spec.get("data_seed", 0)) + 1)
        x[torch.rand(x.shape, generator=gm) < MISSING_RATE] = float("nan")
    return x.to(case.device, torch_dtype(case)), y.to(case.device)


def _labels(k: int, b: int, nc: int, nq: int, g: torch.Generator, ties: bool) -> torch.Tensor:
    """Labels ``[B, N]`` of one task with ``k`` classes (``0``: regression values ~ N(0, 1))."""
    if k:
        y = torch.randint(0, k, (b, nc + nq), generator=g).float()
        m = min(nc, k)
        y[:, :m] = torch.arange(m, dtype=torch.float32)
        y[:, :nc] = y[:, torch.randperm(nc, generator=g)]
        if nc >= k:  # query labels are classes the context holds
            y[:, nc:] = torch.remainder(y[:, nc:], k)
        return y
    y = torch.randn(b, nc + nq, generator=g)
    return torch.round(y * 2) / 2 if ties else y


def perturbation(shape: tuple[int, ...], seed: int, like: torch.Tensor, scale: float = 3.0) -> torch.Tensor:
    """Seeded replacement values of ``shape`` (``randn * scale``) on ``like``'s device and dtype."""
    return (torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * scale).to(like)


def other_labels(case: ConformanceCase, y: torch.Tensor, seed: int) -> torch.Tensor:
    """Labels that differ from ``y`` everywhere (a different class, or a shifted value); per task
    (last axis) in the multitask protocol."""
    g = torch.Generator().manual_seed(seed)
    if case.tasks:
        return torch.stack([_other(k, y[..., t], g) for t, k in enumerate(case.tasks)], dim=-1)
    return _other(case.n_classes, y, g)


def _other(k: int, y: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    if k:
        shift = torch.randint(1, max(2, k), y.shape, generator=g).to(y.device)
        return torch.remainder(y + shift, max(2, k))
    return y + 1.0 + torch.rand(y.shape, generator=g).to(y.device)


def regression_tasks(case: ConformanceCase) -> list[int]:
    """Indices of the regression label columns: ``[0]`` for a regression case, the regression
    tasks in the multitask protocol, ``[]`` otherwise."""
    if case.tasks:
        return [t for t, k in enumerate(case.tasks) if not k]
    return [] if case.n_classes else [0]


def keep_valid(case: ConformanceCase, y_new: torch.Tensor, y_old: torch.Tensor, n_context: int) -> torch.Tensor:
    """``y_new``, except episodes whose changed context would hold fewer classes than before
    (a single-class context is invalid input) keep ``y_old``'s context labels (per task)."""
    if case.tasks:
        return torch.stack([_keep(k, y_new[..., t], y_old[..., t], n_context) for t, k in enumerate(case.tasks)], -1)
    return _keep(case.n_classes, y_new, y_old, n_context)


def _keep(k: int, y_new: torch.Tensor, y_old: torch.Tensor, n_context: int) -> torch.Tensor:
    if not k or n_context < 2:
        return y_new
    out = y_new.clone()
    for b in range(y_new.shape[0]):
        if torch.unique(y_new[b, :n_context]).numel() < min(2, torch.unique(y_old[b, :n_context]).numel()) or \
                torch.unique(y_new[b, :n_context]).numel() < 2 <= torch.unique(y_old[b, :n_context]).numel():
            out[b, :n_context] = y_old[b, :n_context]
    return out


def query_mask(x: torch.Tensor, n_context: int, n_tasks: int = 0) -> torch.Tensor:
    """``[B, N]`` bool, ``True`` on the rows after the context; ``[B, N, T]`` with ``n_tasks``."""
    qmask = torch.zeros(x.shape[:2] + ((n_tasks,) if n_tasks else ()), dtype=torch.bool, device=x.device)
    qmask[:, n_context:] = True
    return qmask


def query_mask_for(case: ConformanceCase, x: torch.Tensor, n_context: int) -> torch.Tensor:
    """The query mask of ``case``'s protocol: per task in the multitask protocol."""
    return query_mask(x, n_context, len(case.tasks))


def run_rows(case: ConformanceCase, model: Any, x: torch.Tensor, y: torch.Tensor, n_context: int) -> tuple[Any, Any]:
    """``(query outputs [B, n_query, ...], context outputs [B, n_context, ...] or None)``.

    In-context protocol: the forward gives query outputs; context outputs come from
    ``case.context_repr`` when given. Rows and multitask protocols: the forward gives every row's
    output, split.
    """
    with torch.no_grad():
        if case.protocol in MASKED_PROTOCOLS:
            out = case.call(model, x, y, query_mask_for(case, x, n_context))
            ctx = out[:, :n_context]
            if case.context_repr is not None:
                ctx = (ctx, case.context_repr(model, x, y, n_context))
            return out[:, n_context:], ctx
        out = case.call(model, x, y, n_context)
        ctx = case.context_repr(model, x, y, n_context) if case.context_repr is not None else None
        return out, ctx


def fresh_rows(case: ConformanceCase, spec: dict[str, Any], x: torch.Tensor, y: torch.Tensor,
               n_context: int) -> tuple[Any, Any]:
    """:func:`run_rows` on a model freshly built from ``spec["model_seed"]`` (at the spec's sizes)."""
    case = sized(case, spec)
    return run_rows(case, case.build(int(spec["model_seed"])), x, y, n_context)


def rows_control(case: ConformanceCase, spec: dict[str, Any]) -> tuple[float, float]:
    """Two identical calls (fresh models, the spec's input): how far apart they are."""
    x, y = make_rows(case, spec)
    nc = spec["sizes"]["n_context"]
    a, b = fresh_rows(case, spec, x, y, nc), fresh_rows(case, spec, x, y, nc)
    return discrepancy(b, a, case)


def shrink_spec(case: ConformanceCase, spec: dict[str, Any], out: Outcome,
                example: Callable[[dict[str, Any]], Outcome]) -> tuple[dict[str, Any], Outcome]:
    """The smallest failing spec (see :func:`tabzoo.testing.checks.sizes.shrink_spec`) and its outcome."""
    from tabzoo.testing.checks import sizes

    seen: dict[str, Outcome] = {}

    def fails(trial: dict[str, Any]) -> bool:
        res = _safe(example, trial)
        seen[replay_line("", trial, {})] = res
        return res.failed and not res.crashed

    small = sizes.shrink_spec(case, spec, fails)
    return small, seen.get(replay_line("", small, {}), out)


class _Falsified(Exception):
    """Raised inside the hypothesis test to mark a failing example."""


def _settings(n: int, seed: int) -> Any:
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    return settings(max_examples=n, database=None, deadline=None, print_blob=False, derandomize=False,
                    verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    phases=(Phase.generate, Phase.shrink))


def replay_line(check: str, spec: dict[str, Any], extra: dict[str, Any]) -> str:
    """The JSON of an example's replay spec (compact, keys sorted)."""
    import json

    return json.dumps({"check": check, **spec, **extra}, sort_keys=True, separators=(",", ":"), default=str)


def run_examples(
    case: ConformanceCase,
    check: str,
    example: Callable[[dict[str, Any]], Outcome],
    *,
    seed: int,
    max_examples: int,
    strategy: Callable[[ConformanceCase, str], Any] = spec_strategy,
    phases: tuple[str, ...] = ("small", "large"),
    control: Callable[[ConformanceCase, dict[str, Any]], tuple[float, float]] | None = rows_control,
    what: str = "",
    replay: dict[str, Any] | None = None,
    explicit_large: bool = True,
) -> CheckResult:
    """Run ``example(spec)`` on hypothesis-drawn specs, phase by phase; report the shrunk failure.

    ``spec`` = ``{"model_seed", "data_seed", "sizes", "ties", "duplicates", ...}``. With
    ``replay`` (a spec from a reproducer) exactly that example runs once. A failing example whose
    ``control`` (two identical calls) already disagrees is reported as non-determinism (``error``).
    """
    tol = case.effective_tolerance()
    if replay is not None:
        spec = {k: v for k, v in replay.items() if k != "check"}
        spec.setdefault("model_seed", seed)
        found = [(spec, _safe(example, spec), str(spec.get("phase", "replay")))]
        if not found[0][1].failed:
            out = found[0][1]
            return CheckResult(check, case.name, "passed", out.discrepancy, out.tolerance,
                               {"replay": replay_line(check, spec, {})},
                               f"replayed example passes: discrepancy {out.discrepancy:.3g} <= {out.tolerance:.3g}",
                               {"tolerance": tol})
        return _failure(case, check, *found[0], control, what, tol)
    worst: Outcome | None = None
    counts: dict[str, int] = {}
    for phase in phases:
        test, failures = _phase_test(case, example, strategy, phase, seed, max_examples, counts)
        if phase == "large" and explicit_large:
            # the largest sizes always run once; a failure there is shrunk greedily
            spec = {"model_seed": seed, **largest_spec(case, seed), "phase": phase}
            counts[phase] = 1
            out = _safe(example, spec)
            if out.failed:
                spec, out = shrink_spec(case, spec, out, example)
                return _failure(case, check, spec, out, phase, control, what, tol)
            if worst is None or out.discrepancy > worst.discrepancy:
                worst = out
        try:
            test()
        except _Falsified:
            spec, out = failures[-1][0], failures[-1][1]  # hypothesis replays the shrunk example last
            return _failure(case, check, spec, out, phase, control, what, tol)
        except Exception:
            # hypothesis's Flaky: an example failed, then passed when replayed (non-determinism);
            # the control of _failure names that cause
            if not failures or not failures[-1][1].failed:
                raise
            spec, out = failures[-1][0], failures[-1][1]
            return _failure(case, check, spec, out, phase, control, what, tol)
        for _, out in failures:
            if worst is None or out.discrepancy > worst.discrepancy:
                worst = out
    disc = worst.discrepancy if worst else None
    tolv = worst.tolerance if worst else None
    note = f"; {worst.note}" if worst and worst.note else ""
    ran = ", ".join(f"{v} {k}" for k, v in counts.items())
    return CheckResult(
        check, case.name, "passed", disc, tolv, {"seed": seed, "examples": counts},
        f"{ran} examples, worst discrepancy {disc:.3g} <= {tolv:.3g}{note}" if worst else "no examples",
        {"tolerance": tol},
    )


def _phase_test(case: ConformanceCase, example: Callable[[dict[str, Any]], Outcome], strategy: Any, phase: str,
                seed: int, max_examples: int, counts: dict[str, int]) -> tuple[Callable[[], None], list[Any]]:
    """The hypothesis test of one phase; ``record`` collects ``(spec, outcome, passed)``: failing
    examples in order (the shrunk one last) and the passing ones."""
    from hypothesis import given
    from hypothesis import seed as hseed

    record: list[tuple[dict[str, Any], Outcome]] = []
    passed: list[tuple[dict[str, Any], Outcome]] = []

    def body(drawn: dict[str, Any]) -> None:
        spec = {"model_seed": seed, **drawn, "phase": phase}
        counts[phase] = counts.get(phase, 0) + 1
        out = _safe(example, spec)
        if out.failed:
            record.append((spec, out))
            raise _Falsified
        passed.append((spec, out))

    n = (max_examples if phase == "small" else max(2, max_examples // 5)) * profile()["examples"]
    test = hseed(seed)(_settings(n, seed)(given(strategy(case, phase))(body)))

    class _View(list):  # failures first; the passing outcomes are folded into "worst" by the caller
        pass

    view = _View()

    def run() -> None:
        try:
            test()
        finally:
            view[:] = record if record else passed

    return run, view


def _safe(example: Callable[[dict[str, Any]], Outcome], spec: dict[str, Any]) -> Outcome:
    """``example(spec)``; a crash becomes a crashed outcome. A failed multitask example's note
    names the tasks whose outputs moved (``moved_tasks`` in its reproducer)."""
    token = _MOVED_TASKS.set([])
    try:
        out = example(spec)
    except Exception as exc:  # noqa: BLE001 - a forward that crashes on valid input is a finding
        return Outcome(float("inf"), 0.0, {}, note=f"the forward raised {type(exc).__name__}: {str(exc)[:160]}",
                       crashed=True)
    else:
        moved = _MOVED_TASKS.get() or []
        if out.failed and moved:
            out.reproducer = {**out.reproducer, "moved_tasks": list(moved)}
            out.note = f"{out.note}; " if out.note else ""
            out.note += f"outputs of {', '.join(moved)} moved"
        return out
    finally:
        _MOVED_TASKS.reset(token)


def _failure(case: ConformanceCase, check: str, spec: dict[str, Any], out: Outcome, phase: str,
             control: Any, what: str, tol: dict[str, float]) -> CheckResult:
    line = replay_line(check, spec, out.reproducer)
    repro = {"seed": spec.get("model_seed"), "model_seed": spec.get("model_seed"),
             "data_seed": spec.get("data_seed"), "sizes": spec.get("sizes"), "ties": spec.get("ties"),
             "duplicates": spec.get("duplicates"), "missing": spec.get("missing"), "phase": phase, **out.reproducer, "replay": line}
    repro = {k: v for k, v in repro.items() if v is not None}
    details: dict[str, Any] = {"tolerance": tol}
    if out.crashed:
        return CheckResult(check, case.name, "error", None, None, repro,
                           f"{check} could not run on valid input ({out.note}) at sizes {spec.get('sizes')}.", details)
    if control is not None and not out.crashed:
        try:
            cd, ct = control(case, spec)
        except Exception:  # noqa: BLE001 - the control is best effort
            cd, ct = 0.0, 1.0
        details["control_discrepancy"] = cd
        if not cd <= ct:
            return CheckResult(
                check, case.name, "error", cd, ct, repro,
                f"{check} cannot be decided: two IDENTICAL calls (fresh models, same seed, same input) already "
                f"differ by {cd:.3g} > {ct:.3g}. The cause is non-determinism or state, not a {check} violation; "
                "see the determinism check.", details,
            )
    return CheckResult(
        check, case.name, "failed", out.discrepancy, out.tolerance, repro,
        f"{check} violated{(' (' + what + ')') if what else ''}: discrepancy "
        f"{out.discrepancy:.3g} > tolerance {out.tolerance:.3g}"
        f"{' at sizes ' + str(spec['sizes']) if spec.get('sizes') else ''} ({phase} phase, "
        f"model seed {spec.get('model_seed')}, data seed {spec.get('data_seed')}){(', ' + out.note) if out.note else ''}.",
        details,
    )


def error_result(check: str, case: ConformanceCase, exc: BaseException, seed: int) -> CheckResult:
    """A check that crashed: ``error`` with the exception and where it happened."""
    tb = traceback.format_exception(exc)
    return CheckResult(
        check, case.name, "error", None, None, {"seed": seed},
        f"{check} could not run: {type(exc).__name__}: {exc}", {"traceback": "".join(tb[-6:])},
    )


def skipped(check: str, case: ConformanceCase, reason: str) -> CheckResult:
    """A check that could not prove its property: counts as NOT proven (``--strict``: a failure)."""
    return CheckResult(check, case.name, "skipped", message=f"not proven: {reason}")
