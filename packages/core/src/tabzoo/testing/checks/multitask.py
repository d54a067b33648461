"""The multitask protocol's own properties: ``task_isolation`` and ``task_mask``.

Inputs are those of the rows protocol with one label column per declared task: ``x [B, N, F]``,
``y [B, N, T]`` and ``query_mask [B, N, T]``. Besides the query rows (every task masked), each
example masks single tasks of some CONTEXT rows (a row whose label of task ``t`` is missing while
its other labels are known), the case where a model that reads the wrong task's mask column, or
one task's labels to predict another, shows. The row checks (row equivariance, query
independence, no context<-query leak, label leak, batch independence, ...) run on the same
protocol with all tasks at once.
"""

from __future__ import annotations

from typing import Any

import torch

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase, task_name
from tabzoo.testing.checks._common import (
    Outcome,
    discrepancy,
    keep_valid,
    make_rows,
    other_labels,
    query_mask_for,
    run_examples,
    sized,
    skipped,
)


def partial_mask(case: ConformanceCase, y: torch.Tensor, n_context: int, seed: int) -> torch.Tensor:
    """``[B, N, T]`` bool: every task of the query rows, plus ONE task of each of some context rows
    (task ``(row + seed) % T``), so that for every task there are rows where only it is masked.
    A task whose visible context labels would hold a single class keeps its labels visible."""
    qmask = query_mask_for(case, y, n_context)
    n_tasks = len(case.tasks)
    n_partial = min(max(n_tasks, n_context // 3), n_context - 2)
    for r in range(n_context - max(0, n_partial), n_context):
        qmask[:, r, (r + seed) % n_tasks] = True
    for t, k in enumerate(case.tasks):
        if not k:
            continue
        for b in range(y.shape[0]):
            seen = y[b, :n_context, t][~qmask[b, :n_context, t]]
            if torch.unique(seen).numel() < 2:
                qmask[b, :n_context, t] = False
    return qmask


def _columns(case: ConformanceCase) -> list[slice]:
    """Task ``t``'s output columns."""
    out, start = [], 0
    for w in case.task_widths:
        out.append(slice(start, start + w))
        start += w
    return out


def _call(case: ConformanceCase, spec: dict[str, Any], x: torch.Tensor, y: torch.Tensor, qmask: torch.Tensor) -> Any:
    with torch.no_grad():
        return case.call(case.build(int(spec["model_seed"])), x, y, qmask)


def _width_outcome(case: ConformanceCase, out: Any) -> Outcome | None:
    """A failed outcome when the outputs are not ``[B, N, sum of task widths]``."""
    want = sum(case.task_widths)
    if not isinstance(out, torch.Tensor) or out.dim() != 3 or out.shape[-1] != want:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return Outcome(float("inf"), 0.0, {"tasks": list(case.tasks)},
                       note=f"the outputs are {shape}, but the declared tasks "
                            f"({', '.join(task_name(t, k) for t, k in enumerate(case.tasks))}) need "
                            f"[batch, rows, {want}] (widths {list(case.task_widths)})")
    return None


def _example(case: ConformanceCase, body: Any) -> Any:
    """``example(spec)``: the case at the spec's sizes, its inputs with a partial mask and their
    outputs, then ``body(c, spec, x, y, n_context, mask, outputs)``; a failed outcome when the
    outputs do not have the declared task widths."""

    def example(spec: dict[str, Any]) -> Outcome:
        c = sized(case, spec)
        x, y = make_rows(c, spec)
        nc = spec["sizes"]["n_context"]
        qmask = partial_mask(c, y, nc, int(spec["data_seed"]))
        base = _call(c, spec, x, y, qmask)
        bad = _width_outcome(c, base)
        return bad if bad is not None else body(c, spec, x, y, nc, qmask, base)

    return example


def _guard(case: ConformanceCase, check: str) -> CheckResult | None:
    if case.protocol != "multitask":
        return skipped(check, case, f"only the multitask protocol has tasks, not {case.protocol!r}")
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    return None


def check_task_isolation(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                         replay: dict[str, Any] | None = None) -> CheckResult:
    """For every pair of tasks A != B: changing task B's masked labels (query rows and the context
    cells masked for B) leaves task A's outputs unchanged; with :data:`~tabzoo.testing.capabilities.
    INDEPENDENT_TASKS` claimed, task B's visible context labels change too."""
    check = cap.TASK_ISOLATION
    if (g := _guard(case, check)) is not None:
        return g
    independent = cap.INDEPENDENT_TASKS in case.capabilities

    def body(c: ConformanceCase, spec: dict[str, Any], x: torch.Tensor, y: torch.Tensor, nc: int,
             qmask: torch.Tensor, base: torch.Tensor) -> Outcome:
        cols = _columns(c)
        worst = Outcome(0.0, 0.0)
        for b in range(len(c.tasks)) if "task_b" not in spec else [int(spec["task_b"])]:
            new = other_labels(c, y, int(spec["data_seed"]) + 11 + b)
            y2 = y.clone()
            where = torch.ones_like(qmask[..., b]) if independent else qmask[..., b]
            y2[..., b] = torch.where(where, new[..., b], y[..., b])
            y2 = keep_valid(c, y2, y, nc)
            out = _call(c, spec, x, y2, qmask)
            for a, sl in enumerate(cols):
                if a == b:
                    continue
                d, t = discrepancy(out[..., sl], base[..., sl], c)
                if not d <= t:
                    which = "labels" if independent else "masked labels (query rows and masked context cells)"
                    return Outcome(d, t, {"task_a": a, "task_b": b},
                                   note=f"{task_name(a, c.tasks[a])}'s outputs moved when {task_name(b, c.tasks[b])}'s "
                                        f"{which} changed")
                if d / max(t, 1e-30) >= worst.discrepancy / max(worst.tolerance, 1e-30):
                    worst = Outcome(d, t)
        return worst

    what = "one task's outputs depend on another task's " + ("labels" if independent else "masked labels")
    return run_examples(case, check, _example(case, body), seed=seed, max_examples=max_examples, replay=replay, what=what)


def check_task_mask(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                    replay: dict[str, Any] | None = None) -> CheckResult:
    """The outputs are ``[B, N, sum of the declared task widths]``, and the mask of each task is
    obeyed: changing task ``t``'s labels where ``query_mask[..., t]`` is set (also in context rows
    whose other tasks are visible) changes no output of any task."""
    check = cap.TASK_MASK
    if (g := _guard(case, check)) is not None:
        return g

    def body(c: ConformanceCase, spec: dict[str, Any], x: torch.Tensor, y: torch.Tensor, nc: int,
             qmask: torch.Tensor, base: torch.Tensor) -> Outcome:
        worst = Outcome(0.0, 0.0)
        for t in range(len(c.tasks)) if "task" not in spec else [int(spec["task"])]:
            new = other_labels(c, y, int(spec["data_seed"]) + 23 + t)
            y2 = y.clone()
            y2[..., t] = torch.where(qmask[..., t], new[..., t], y[..., t])
            out = _call(c, spec, x, y2, qmask)
            d, tol = discrepancy(out, base, c)
            if not d <= tol:
                partial = int((qmask[..., t] & ~qmask.all(-1)).sum())
                return Outcome(d, tol, {"task": t},
                               note=f"outputs moved when the labels masked for {task_name(t, c.tasks[t])} changed "
                                    f"({partial} of them in "
                                    "context rows whose other tasks are visible): the model reads a label its task's "
                                    "mask hides, e.g. it applies another task's mask column")
            if d / max(tol, 1e-30) >= worst.discrepancy / max(worst.tolerance, 1e-30):
                worst = Outcome(d, tol)
        return worst

    return run_examples(case, check, _example(case, body), seed=seed, max_examples=max_examples, replay=replay,
                        what="the outputs do not split into the declared tasks, or a label masked for its task was read")
