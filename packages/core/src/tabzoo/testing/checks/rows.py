"""Row-permutation, leak and batch properties of in-context and row-attention models (§4).

Every check takes a :class:`~tabzoo.testing.ConformanceCase` and returns a
:class:`~tabzoo.testing.CheckResult`. Evidence the plugin supplies is never taken as proof:

* ``masks`` are first analysed statically (:func:`tabzoo.masks.leaks`), then the kit checks
  numerically that the forward OBEYS them: every row the masks say cannot reach a query row is
  perturbed, and that query row's output must not move. A broken mask claim is a failure.
* ``context_repr`` is compared when given, but the leak checks always also run on the query
  outputs themselves, so they never end as "skipped = OK" for an in-context model.
"""

from __future__ import annotations

from typing import Any

import torch

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import MASKED_PROTOCOLS, ROW_PROTOCOLS, CheckResult, ConformanceCase
from tabzoo.testing.checks._common import (
    Outcome,
    discrepancy,
    fresh_rows,
    keep_valid,
    make_rows,
    other_labels,
    perturbation,
    query_mask_for,
    regression_tasks,
    run_examples,
    sized,
    skipped,
    spec_strategy,
)

_ROW_PROTOCOLS = ROW_PROTOCOLS


def _perm(n: int, seed: int) -> torch.Tensor:
    """A permutation of ``range(n)`` that moves something whenever ``n > 1``."""
    g = torch.Generator().manual_seed(seed)
    p = torch.randperm(n, generator=g)
    if n > 1 and bool((p == torch.arange(n)).all()):
        p = torch.roll(p, 1)
    return p


def _given_perm(spec: dict[str, Any], key: str, n: int, seed: int) -> torch.Tensor:
    """The replayed permutation when the spec carries one, else a fresh one from ``seed``."""
    if key in spec and len(spec[key]) == n:
        return torch.as_tensor(spec[key], dtype=torch.long)
    return _perm(n, seed)


def _worse(a: Outcome, b: Outcome) -> Outcome:
    """The outcome further from its tolerance (NaN counts as worst)."""
    def ratio(o: Outcome) -> float:
        return float("inf") if o.discrepancy != o.discrepancy else o.discrepancy / max(o.tolerance, 1e-30)

    return b if ratio(b) > ratio(a) else a


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


def mask_obedience(case: ConformanceCase, spec: dict[str, Any], x: torch.Tensor, y: torch.Tensor) -> Outcome | None:
    """Check numerically that the forward obeys ``case.masks``: perturb every row the masks say
    cannot reach query row ``i`` (features and labels); query row ``i``'s output must not move.
    ``None`` when the case gives no masks or nothing is unreachable."""
    if case.masks is None:
        return None
    from tabzoo.masks import reachable

    nc, nq = spec["sizes"]["n_context"], spec["sizes"]["n_query"]
    n = nc + nq
    i = int(spec.get("mask_row", spec["data_seed"] % nq))
    reach = reachable(case.masks(nc, n), n)[nc + i]
    hidden = [j for j in range(n) if not bool(reach[j])]
    if not hidden:
        return None
    x2, y2 = x.clone(), y.clone()
    x2[:, hidden] = perturbation(x[:, hidden].shape, spec["data_seed"] + 7, x)
    y2[:, hidden] = other_labels(sized(case, spec), y[:, hidden], spec["data_seed"] + 7)
    y2 = keep_valid(sized(case, spec), y2, y, nc)
    q1, _ = fresh_rows(case, spec, x, y, nc)
    q2, _ = fresh_rows(case, spec, x2, y2, nc)
    d, t = discrepancy(q2[:, i], q1[:, i], case)
    return Outcome(d, t, {"mask_row": i, "unreachable_rows": hidden},
                   note=f"the masks claim query row {i} cannot read rows {hidden[:8]}"
                        f"{'...' if len(hidden) > 8 else ''}, but its output moved: the model breaks its mask claim")


def _guard(case: ConformanceCase, check: str) -> CheckResult | None:
    if case.protocol not in _ROW_PROTOCOLS:
        return skipped(check, case, f"not applicable to the {case.protocol!r} protocol")
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    return None


def check_context_order_invariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                                   replay: dict[str, Any] | None = None) -> CheckResult:
    """Permuting context rows (and their labels) leaves the query outputs unchanged."""
    check = cap.CONTEXT_ORDER_INVARIANCE
    if (g := _guard(case, check)) is not None:
        return g

    def example(spec: dict[str, Any]) -> Outcome:
        x, y = make_rows(case, spec)
        nc = spec["sizes"]["n_context"]
        p = _given_perm(spec, "permutation", nc, spec["data_seed"])
        x2, y2 = x.clone(), y.clone()
        x2[:, :nc], y2[:, :nc] = x[:, p], y[:, p]
        q1, _ = fresh_rows(case, spec, x, y, nc)
        q2, _ = fresh_rows(case, spec, x2, y2, nc)
        d, t = discrepancy(q2, q1, case)
        return Outcome(d, t, {"permutation": p.tolist()})

    return run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                        what="query outputs changed when context rows were permuted")


def check_query_equivariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                             replay: dict[str, Any] | None = None) -> CheckResult:
    """Permuting query rows permutes the query outputs the same way."""
    check = cap.QUERY_EQUIVARIANCE
    if (g := _guard(case, check)) is not None:
        return g

    def example(spec: dict[str, Any]) -> Outcome:
        x, y = make_rows(case, spec)
        nc, nq = spec["sizes"]["n_context"], spec["sizes"]["n_query"]
        p = _given_perm(spec, "permutation", nq, spec["data_seed"])
        x2, y2 = x.clone(), y.clone()
        x2[:, nc:], y2[:, nc:] = x[:, nc + p], y[:, nc + p]
        q1, _ = fresh_rows(case, spec, x, y, nc)
        q2, _ = fresh_rows(case, spec, x2, y2, nc)
        d, t = discrepancy(q2, q1[:, p], case)
        return Outcome(d, t, {"permutation": p.tolist()})

    return run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                        what="query outputs did not follow a permutation of the query rows")


def check_row_equivariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                           replay: dict[str, Any] | None = None) -> CheckResult:
    """Permuting all rows permutes the outputs the same way.

    Rows and multitask protocols: one permutation of all ``N`` rows, carrying features, labels
    (of every task) and the query flags. In-context protocol: context and query rows are permuted among themselves.
    """
    check = cap.ROW_EQUIVARIANCE
    if (g := _guard(case, check)) is not None:
        return g

    def example(spec: dict[str, Any]) -> Outcome:
        x, y = make_rows(case, spec)
        nc = spec["sizes"]["n_context"]
        n = nc + spec["sizes"]["n_query"]
        if case.protocol in MASKED_PROTOCOLS:
            p = _given_perm(spec, "permutation", n, spec["data_seed"])
            c = sized(case, spec)
            qmask = query_mask_for(c, x, nc)
            with torch.no_grad():
                o1 = c.call(c.build(spec["model_seed"]), x, y, qmask)
                o2 = c.call(c.build(spec["model_seed"]), x[:, p], y[:, p], qmask[:, p])
            d, t = discrepancy(o2, o1[:, p], case)
        else:
            p = _given_perm(spec, "permutation", n, -1) if "permutation" in spec else torch.cat(
                [_perm(nc, spec["data_seed"]), nc + _perm(n - nc, spec["data_seed"] + 1)])
            q1, _ = fresh_rows(case, spec, x, y, nc)
            q2, _ = fresh_rows(case, spec, x[:, p], y[:, p], nc)
            d, t = discrepancy(q2, q1[:, p[nc:] - nc], case)
        return Outcome(d, t, {"permutation": p.tolist()})

    return run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                        what="outputs did not follow a permutation of the rows")


def check_query_independence(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                             replay: dict[str, Any] | None = None) -> CheckResult:
    """Changing query row ``j`` leaves the output of every other query row unchanged, and so does
    removing query rows (a model that normalises by the number of query rows fails).

    Static part (when the case gives masks): no path from any query row to another one; then the
    numeric check, plus the check that the forward obeys the masks.
    """
    check = cap.QUERY_INDEPENDENCE
    if (g := _guard(case, check)) is not None:
        return g
    failed = _static_result(check, case, "from one query row into another",
                            lambda nc, n: (range(nc, n), range(nc, n)))
    if failed is not None:
        return failed

    def example(spec: dict[str, Any]) -> Outcome:
        x, y = make_rows(case, spec)
        nc, nq = spec["sizes"]["n_context"], spec["sizes"]["n_query"]
        j = int(spec.get("changed_row", spec["data_seed"] % nq))
        x2, y2 = x.clone(), y.clone()
        x2[:, nc + j] = perturbation((x.shape[0], x.shape[2]), spec["data_seed"], x)
        y2[:, nc + j] = other_labels(sized(case, spec), y[:, nc + j], spec["data_seed"])
        q1, _ = fresh_rows(case, spec, x, y, nc)
        q2, _ = fresh_rows(case, spec, x2, y2, nc)
        keep = [i for i in range(nq) if i != j]
        d, t = discrepancy(q2[:, keep], q1[:, keep], case)
        out = Outcome(d, t, {"changed_row": j}, note=f"query row {j} was changed")
        k = int(spec.get("subset", max(1, nq // 2)))  # the other query rows removed, not just changed
        q3, _ = fresh_rows(case, spec, x[:, : nc + k], y[:, : nc + k], nc)
        d, t = discrepancy(q3, q1[:, :k], case)
        out = _worse(out, Outcome(d, t, {"changed_row": j, "subset": k},
                                  note=f"the first {k} query rows' outputs changed when the other query rows were removed"))
        obey = mask_obedience(case, spec, x, y)
        return out if obey is None else _worse(out, obey)

    result = run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                          what="another query row's output changed when one query row changed")
    if case.masks is not None and result.status == "passed":
        result.message = "proven on the masks, which the forward obeys numerically; " + result.message
    return result


def _query_independence_claimed(case: ConformanceCase) -> bool:
    return cap.QUERY_INDEPENDENCE in case.capabilities and cap.QUERY_INDEPENDENCE not in case.expected_failures


def check_no_context_query_leak(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                                replay: dict[str, Any] | None = None) -> CheckResult:
    """Context-row representations do not change when query rows change.

    1. proven on ``case.masks`` when given (no path from a query row into a context row);
    2. numerically on the context outputs: ``case.context_repr`` and, in the rows protocol, the
       context rows' own outputs, after every query row changed;
    3. numerically on the query outputs (in-context protocol, when query rows are independent):
       every query row except ``i`` changes, and query row ``i``'s output must not move; a
       context row that read a query row would carry the change to it. This part needs no
       evidence from the plugin, so the check is never "skipped = OK";
    4. the forward obeys the masks (see :func:`mask_obedience`).
    """
    check = cap.NO_CONTEXT_QUERY_LEAK
    if (g := _guard(case, check)) is not None:
        return g
    failed = _static_result(check, case, "from a query row into a context row",
                            lambda nc, n: (range(nc, n), range(nc)))
    if failed is not None:
        return failed
    via_queries = case.protocol == "in-context" and _query_independence_claimed(case)
    via_context = case.protocol in MASKED_PROTOCOLS or case.context_repr is not None
    if not (via_queries or via_context):
        return skipped(check, case, "query rows may read each other (query_independence is not claimed) and the "
                                    "case gives no context_repr, so a context<-query leak cannot be told apart; add "
                                    "context_repr=(model, x, y, n_context) -> [B, n_context, ...]")

    def example(spec: dict[str, Any]) -> Outcome:
        x, y = make_rows(case, spec)
        nc, nq = spec["sizes"]["n_context"], spec["sizes"]["n_query"]
        out = Outcome(0.0, 0.0)
        q1, c1 = fresh_rows(case, spec, x, y, nc)
        if via_context:
            x2, y2 = x.clone(), y.clone()
            x2[:, nc:] = perturbation(x[:, nc:].shape, spec["data_seed"], x)
            y2[:, nc:] = other_labels(sized(case, spec), y[:, nc:], spec["data_seed"])
            _, c2 = fresh_rows(case, spec, x2, y2, nc)
            d, t = discrepancy(c2, c1, case)
            out = _worse(out, Outcome(d, t, {"changed": "all query rows"},
                                      note="context representations moved when every query row changed"))
        if via_queries and nq >= 2:
            i = int(spec.get("kept_row", spec["data_seed"] % nq))
            others = [nc + k for k in range(nq) if k != i]
            x3, y3 = x.clone(), y.clone()
            x3[:, others] = perturbation(x[:, others].shape, spec["data_seed"] + 1, x)
            y3[:, others] = other_labels(sized(case, spec), y[:, others], spec["data_seed"] + 1)
            q3, _ = fresh_rows(case, spec, x3, y3, nc)
            d, t = discrepancy(q3[:, i], q1[:, i], case)
            out = _worse(out, Outcome(d, t, {"kept_row": i},
                                      note=f"query row {i}'s output moved when only the OTHER query rows changed "
                                           "(it reads only the context, so the context read them)"))
        obey = mask_obedience(case, spec, x, y)
        return out if obey is None else _worse(out, obey)

    result = run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                          what="context-row representations depend on query rows")
    parts = [p for p, on in (("context outputs", via_context), ("query outputs", via_queries)) if on]
    if result.status == "passed":
        result.message = (("proven on the masks, which the forward obeys; " if case.masks is not None else "")
                          + f"checked on {' and '.join(parts)}; " + result.message)
    return result


def check_label_leak(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                     replay: dict[str, Any] | None = None) -> CheckResult:
    """Changing the labels of query rows (masked targets) changes no output, context
    representations included. Regression targets move by about 1000, so a leak damped by a
    "soft" mask still shows. With the default in-context forward the model never receives query
    labels, so this holds by construction; a custom ``forward`` that passes ``y`` is tested."""
    check = cap.LABEL_LEAK
    if (g := _guard(case, check)) is not None:
        return g

    def example(spec: dict[str, Any]) -> Outcome:
        x, y = make_rows(case, spec)
        nc = spec["sizes"]["n_context"]
        y2 = y.clone()
        y2[:, nc:] = other_labels(sized(case, spec), y[:, nc:], spec["data_seed"])
        for task in regression_tasks(sized(case, spec)):  # regression labels move by about 1000
            col = (..., task) if case.tasks else (...,)
            y2[:, nc:][col] = y[:, nc:][col] + 1000.0 * (y2[:, nc:][col] - y[:, nc:][col])
        q1, c1 = fresh_rows(case, spec, x, y, nc)
        q2, c2 = fresh_rows(case, spec, x, y2, nc)
        d, t = discrepancy((q2, c2) if c1 is not None else q2, (q1, c1) if c1 is not None else q1, case)
        return Outcome(d, t, {"changed": "labels of all query rows"})

    result = run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                          what="outputs changed when only query labels changed")
    if case.forward is None and case.protocol == "in-context" and result.status == "passed":
        result.message = "holds by construction (the default forward never passes query labels); " + result.message
    return result


def _batch_strategy(case: ConformanceCase, phase: str) -> Any:
    def at_least_two(s: dict[str, Any]) -> dict[str, Any]:
        return {**s, "sizes": {**s["sizes"], "batch": max(2, s["sizes"]["batch"])}}

    return spec_strategy(case, phase).map(at_least_two)


def check_batch_independence(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                             replay: dict[str, Any] | None = None) -> CheckResult:
    """Episodes of one batch do not affect each other: replacing episode ``e`` (features and
    labels; ``e`` drawn from the data seed) leaves every output of every other episode unchanged
    (batch-wide normalisation, pooling, the first episode's statistics reused: all fail)."""
    check = cap.BATCH_INDEPENDENCE
    if (g := _guard(case, check)) is not None:
        return g

    def example(spec: dict[str, Any]) -> Outcome:
        if spec["sizes"]["batch"] < 2:
            raise ValueError("batch independence needs at least two episodes")
        x, y = make_rows(case, spec)
        nc = spec["sizes"]["n_context"]
        b = spec["sizes"]["batch"]
        e = int(spec.get("episode", spec["data_seed"] % b))
        x2, y2 = x.clone(), y.clone()
        x2[e] = perturbation(x[e].shape, spec["data_seed"], x, scale=10.0)
        y2[e] = other_labels(sized(case, spec), y[e], spec["data_seed"])
        y2 = keep_valid(sized(case, spec), y2, y, nc)
        q1, c1 = fresh_rows(case, spec, x, y, nc)
        q2, c2 = fresh_rows(case, spec, x2, y2, nc)

        others = [i for i in range(b) if i != e]

        def rest(t: Any) -> Any:
            return t[others] if isinstance(t, torch.Tensor) else tuple(rest(v) for v in t) if isinstance(t, tuple) else t

        d, t = discrepancy((rest(q2), rest(c2)) if c1 is not None else rest(q2),
                           (rest(q1), rest(c1)) if c1 is not None else rest(q1), case)
        return Outcome(d, t, {"episode": e}, note=f"other episodes changed when episode {e} was replaced")

    return run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                        strategy=_batch_strategy, what="one episode's outputs depend on another episode of the batch")
