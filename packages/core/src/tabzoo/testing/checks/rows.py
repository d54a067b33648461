"""Row-permutation and leak properties of in-context and row-attention models (§4 of the design).

Every check takes a :class:`~tabzoo.testing.ConformanceCase` and returns a
:class:`~tabzoo.testing.CheckResult`; the leak checks first try a static proof on the case's
masks with :func:`tabzoo.masks.leaks`, then check numerically.
"""

from __future__ import annotations

from typing import Any

import torch

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase
from tabzoo.testing.checks._common import (
    Outcome,
    discrepancy,
    make_rows,
    other_labels,
    run_examples,
    run_rows,
    skipped,
)

_ROW_PROTOCOLS = ("in-context", "rows")


def _perm(n: int, seed: int) -> torch.Tensor:
    """A permutation of ``range(n)`` that moves something whenever ``n > 1``."""
    g = torch.Generator().manual_seed(seed)
    p = torch.randperm(n, generator=g)
    if n > 1 and bool((p == torch.arange(n)).all()):
        p = torch.roll(p, 1)
    return p


def static_leaks(case: ConformanceCase, n_context: int, n: int, sources: Any, sinks: Any) -> list[tuple[int, ...]] | None:
    """Offending paths through ``case.masks(n_context, n)``, or ``None`` when the case has no masks."""
    if case.masks is None:
        return None
    from tabzoo.masks import leaks

    return leaks(case.masks(n_context, n), sources=sources, sinks=sinks, n=n)


def _static_result(check: str, case: ConformanceCase, what: str, sources_of: Any) -> CheckResult | None:
    """Prove on masks at a few sizes; a failed proof is a failed check with the witness path."""
    for nc, nq in ((3, 2), (5, 4), (8, 3)):
        paths = static_leaks(case, nc, nc + nq, *sources_of(nc, nc + nq))
        if paths:
            return CheckResult(
                check, case.name, "failed", float(len(paths)), 0.0,
                {"sizes": {"n_context": nc, "n_query": nq}, "path": list(paths[0])},
                f"{check} violated on the masks: {len(paths)} forbidden path(s) {what}, e.g. "
                f"{' -> '.join(map(str, paths[0]))} (n_context={nc}, rows={nc + nq}).",
            )
    return None


def _guard(case: ConformanceCase, check: str) -> CheckResult | None:
    if case.protocol not in _ROW_PROTOCOLS:
        return skipped(check, case, f"not applicable to the {case.protocol!r} protocol")
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    return None


def check_context_order_invariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """Permuting context rows (and their labels) leaves the query outputs unchanged."""
    check = cap.CONTEXT_ORDER_INVARIANCE
    if (g := _guard(case, check)) is not None:
        return g
    model = case.build(seed)

    def example(sizes: dict[str, int], s: int) -> Outcome:
        x, y = make_rows(case, sizes, s)
        nc = sizes["n_context"]
        p = _perm(nc, s)
        x2, y2 = x.clone(), y.clone()
        x2[:, :nc], y2[:, :nc] = x[:, p], y[:, p]
        q1, _ = run_rows(case, model, x, y, nc)
        q2, _ = run_rows(case, model, x2, y2, nc)
        d, t = discrepancy(q2, q1, case)
        return Outcome(d, t, {"permutation": p.tolist()})

    return run_examples(case, check, example, seed=seed, max_examples=max_examples,
                        what="query outputs changed when context rows were permuted")


def check_query_equivariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """Permuting query rows permutes the query outputs the same way."""
    check = cap.QUERY_EQUIVARIANCE
    if (g := _guard(case, check)) is not None:
        return g
    model = case.build(seed)

    def example(sizes: dict[str, int], s: int) -> Outcome:
        x, y = make_rows(case, sizes, s)
        nc, nq = sizes["n_context"], sizes["n_query"]
        p = _perm(nq, s)
        x2, y2 = x.clone(), y.clone()
        x2[:, nc:], y2[:, nc:] = x[:, nc + p], y[:, nc + p]
        q1, _ = run_rows(case, model, x, y, nc)
        q2, _ = run_rows(case, model, x2, y2, nc)
        d, t = discrepancy(q2, q1[:, p], case)
        return Outcome(d, t, {"permutation": p.tolist()})

    return run_examples(case, check, example, seed=seed, max_examples=max_examples,
                        what="query outputs did not follow a permutation of the query rows")


def check_row_equivariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """Permuting all rows permutes the outputs the same way.

    Rows protocol: one permutation of all ``N`` rows, carrying features, labels and the query
    flags. In-context protocol: context and query rows are permuted among themselves.
    """
    check = cap.ROW_EQUIVARIANCE
    if (g := _guard(case, check)) is not None:
        return g
    model = case.build(seed)

    def example(sizes: dict[str, int], s: int) -> Outcome:
        x, y = make_rows(case, sizes, s)
        nc, n = sizes["n_context"], sizes["n_context"] + sizes["n_query"]
        if case.protocol == "rows":
            p = _perm(n, s)
            qmask = torch.zeros(x.shape[:2], dtype=torch.bool, device=x.device)
            qmask[:, nc:] = True
            with torch.no_grad():
                o1 = case.call(model, x, y, qmask)
                o2 = case.call(model, x[:, p], y[:, p], qmask[:, p])
            d, t = discrepancy(o2, o1[:, p], case)
        else:
            p = torch.cat([_perm(nc, s), nc + _perm(n - nc, s + 1)])
            q1, _ = run_rows(case, model, x, y, nc)
            q2, _ = run_rows(case, model, x[:, p], y[:, p], nc)
            d, t = discrepancy(q2, q1[:, p[nc:] - nc], case)
        return Outcome(d, t, {"permutation": p.tolist()})

    return run_examples(case, check, example, seed=seed, max_examples=max_examples,
                        what="outputs did not follow a permutation of the rows")


def check_query_independence(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """Changing query row ``j`` leaves the output of every other query row unchanged.

    Static part (when the case gives masks): no path from any query row to another one.
    """
    check = cap.QUERY_INDEPENDENCE
    if (g := _guard(case, check)) is not None:
        return g
    failed = _static_result(check, case, "from one query row into another",
                            lambda nc, n: (range(nc, n), range(nc, n)))
    if failed is not None:
        return failed
    model = case.build(seed)

    def example(sizes: dict[str, int], s: int) -> Outcome:
        x, y = make_rows(case, sizes, s)
        nc, nq = sizes["n_context"], sizes["n_query"]
        j = s % nq
        x2, y2 = x.clone(), y.clone()
        x2[:, nc + j] = torch.randn(x.shape[0], x.shape[2], generator=torch.Generator().manual_seed(s)).to(x)
        y2[:, nc + j] = other_labels(case, y[:, nc + j], s)
        q1, _ = run_rows(case, model, x, y, nc)
        q2, _ = run_rows(case, model, x2, y2, nc)
        keep = [i for i in range(nq) if i != j]
        d, t = discrepancy(q2[:, keep], q1[:, keep], case)
        return Outcome(d, t, {"changed_query_row": j}, note=f"query row {j} was changed")

    result = run_examples(case, check, example, seed=seed, max_examples=max_examples,
                          what="another query row's output changed when one query row changed")
    if case.masks is not None and result.status == "passed":
        result.message = "proven on the masks; " + result.message
    return result


def check_no_context_query_leak(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """Context-row representations do not change when query rows change.

    First proven on ``case.masks`` (no path from a query row into a context row), then checked
    numerically on ``case.context_repr`` (or the context-row outputs of the rows protocol).
    """
    check = cap.NO_CONTEXT_QUERY_LEAK
    if (g := _guard(case, check)) is not None:
        return g
    failed = _static_result(check, case, "from a query row into a context row",
                            lambda nc, n: (range(nc, n), range(nc)))
    if failed is not None:
        return failed
    if case.context_repr is None and case.protocol == "in-context":
        if case.masks is not None:
            return CheckResult(check, case.name, "passed", 0.0, 0.0, {"seed": seed},
                               "proven on the masks (no context_repr given, so no numeric check)")
        return skipped(check, case, "the case gives neither masks nor context_repr: nothing to check; "
                                    "add context_repr=(model, x, y, n_context) -> [B, n_context, ...]")
    model = case.build(seed)

    def example(sizes: dict[str, int], s: int) -> Outcome:
        x, y = make_rows(case, sizes, s)
        nc = sizes["n_context"]
        x2, y2 = x.clone(), y.clone()
        x2[:, nc:] = torch.randn(x[:, nc:].shape, generator=torch.Generator().manual_seed(s)).to(x) * 3
        y2[:, nc:] = other_labels(case, y[:, nc:], s)
        _, c1 = run_rows(case, model, x, y, nc)
        _, c2 = run_rows(case, model, x2, y2, nc)
        d, t = discrepancy(c2, c1, case)
        return Outcome(d, t, {"changed": "all query rows"})

    result = run_examples(case, check, example, seed=seed, max_examples=max_examples,
                          what="context-row representations changed when query rows changed")
    if case.masks is not None and result.status == "passed":
        result.message = "proven on the masks; " + result.message
    return result


def check_label_leak(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """Changing the labels of query rows (masked targets) changes no output.

    With the default in-context forward the model never receives query labels, so this holds by
    construction; a custom ``forward`` that passes the whole ``y`` is really tested.
    """
    check = cap.LABEL_LEAK
    if (g := _guard(case, check)) is not None:
        return g
    model = case.build(seed)

    def example(sizes: dict[str, int], s: int) -> Outcome:
        x, y = make_rows(case, sizes, s)
        nc = sizes["n_context"]
        y2 = y.clone()
        y2[:, nc:] = other_labels(case, y[:, nc:], s)
        q1, c1 = run_rows(case, model, x, y, nc)
        q2, c2 = run_rows(case, model, x, y2, nc)
        d, t = discrepancy((q2, c2) if c1 is not None else q2, (q1, c1) if c1 is not None else q1, case)
        return Outcome(d, t, {"changed": "labels of all query rows"})

    result = run_examples(case, check, example, seed=seed, max_examples=max_examples,
                          what="outputs changed when only query labels changed")
    if case.forward is None and case.protocol == "in-context" and result.status == "passed":
        result.message = "holds by construction (the default forward never passes query labels); " + result.message
    return result
