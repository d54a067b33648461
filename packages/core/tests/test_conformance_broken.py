"""Meta-tests of the conformance kit: every check catches its deliberately broken model,
and the correct tiny models pass every check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from kit_models.broken import (
    ContextReadsQuery,
    LosesStateOnSave,
    NonDeterministic,
    NoValidation,
    PositionalContext,
    PositionalQuery,
    QuadraticPath,
    QuerySeesQuery,
    ReadsQueryLabels,
    icl_case,
    offset_backend,
    wrong_grad_backend,
)
from kit_models.broken_rows import (
    ReadsFuture,
    ReadsMaskedTargets,
    ReadsUnavailableLabels,
    RowPositional,
    StorageOrder,
    relational_case,
    rows_case,
)
from kit_models.broken_v3 import BROKEN_V3
from tabzoo.masks import context_query, full
from tabzoo.testing import capabilities as cap
from tabzoo.testing import check_conformance, run_check
from tabzoo.testing.checks import CHECKS


def _run(case: Any, check: str) -> Any:
    return CHECKS[check](case, seed=0, max_examples=10)


def _assert_caught(result: Any, check: str) -> None:
    assert result.status == "failed", f"{check} did not catch the broken model: {result}"
    assert result.check == check and check in result.message
    assert "seed" in result.reproducer or "sizes" in result.reproducer
    assert "[reproduce: tabzoo conformance " in str(result)  # every failure says how to reproduce it
    if result.discrepancy is not None and result.tolerance is not None:
        assert not result.discrepancy <= result.tolerance


BROKEN: list[tuple[str, Callable[[], Any], str]] = [
    ("query rows attend to each other", lambda: icl_case("qq", QuerySeesQuery, masks=None), cap.QUERY_INDEPENDENCE),
    ("context reads query rows", lambda: icl_case("cq", ContextReadsQuery, masks=None), cap.NO_CONTEXT_QUERY_LEAK),
    ("reads query labels", lambda: icl_case("lbl", ReadsQueryLabels, forward=lambda m, x, y, nc: m(x, y, nc)),
     cap.LABEL_LEAK),
    ("reads masked targets (rows)", lambda: rows_case("mt", ReadsMaskedTargets), cap.LABEL_LEAK),
    ("quadratic hidden path", lambda: icl_case("quad", QuadraticPath), cap.LINEAR_IN_ROWS),
    ("output depends on context order", lambda: icl_case("pc", PositionalContext), cap.CONTEXT_ORDER_INVARIANCE),
    ("output depends on query order", lambda: icl_case("pq", PositionalQuery), cap.QUERY_EQUIVARIANCE),
    ("output depends on row order", lambda: rows_case("pr", RowPositional), cap.ROW_EQUIVARIANCE),
    ("reads future rows", lambda: relational_case("fut", ReadsFuture), cap.TIME_CAUSALITY),
    ("reads labels before available", lambda: relational_case("lab", ReadsUnavailableLabels), cap.TIME_CAUSALITY),
    ("depends on stored row order", lambda: relational_case("ord", StorageOrder), cap.INPUT_ORDER_INVARIANCE),
    ("non-deterministic", lambda: icl_case("nd", NonDeterministic), cap.DETERMINISM),
    ("checkpoint does not round trip", lambda: icl_case("ck", LosesStateOnSave), cap.CHECKPOINT_ROUNDTRIP),
    ("no input validation", lambda: icl_case("nv", NoValidation), cap.BAD_INPUT),
]


@pytest.mark.parametrize(("make", "check"), [(m, c) for _, m, c in BROKEN], ids=[d for d, _, _ in BROKEN])
def test_check_catches_broken_model(make: Callable[[], Any], check: str) -> None:
    _assert_caught(_run(make(), check), check)


def test_every_check_has_a_broken_model() -> None:
    caught = {c for _, _, c in BROKEN} | {cap.KERNEL_EQUIVALENCE, cap.LINEAR_IN_FEATURES, cap.LINEAR_IN_SEQUENCE,
                                          cap.BATCH_INDEPENDENCE}  # the last: test_conformance_v2
    caught |= set(BROKEN_V3)  # kit v3's gallery: test_conformance_v3
    from kit_models.broken_multitask import BROKEN_MULTITASK

    caught |= set(BROKEN_MULTITASK)  # the multitask protocol's gallery: test_conformance_multitask
    assert caught == set(CHECKS)


@pytest.mark.parametrize(
    ("make", "check", "masks"),
    [
        (QuerySeesQuery, cap.QUERY_INDEPENDENCE, lambda nc, n: [context_query(nc, query_sees_query=True)]),
        (ContextReadsQuery, cap.NO_CONTEXT_QUERY_LEAK, lambda nc, n: [full()]),
    ],
    ids=["query-sees-query", "context-reads-query"],
)
def test_leaks_are_proven_on_masks_first(make: Any, check: str, masks: Any) -> None:
    result = _run(icl_case("static", make, masks=masks), check)
    _assert_caught(result, check)
    assert "on the masks" in result.message and len(result.reproducer["path"]) >= 2


def test_reproducer_is_shrunk_and_carries_the_permutation() -> None:
    result = _run(icl_case("pq", PositionalQuery), cap.QUERY_EQUIVARIANCE)
    sizes = result.reproducer["sizes"]
    assert sizes["batch"] == 1 and sizes["n_query"] == 2 and result.reproducer["phase"] == "small"
    assert sorted(result.reproducer["permutation"]) == list(range(sizes["n_query"]))


@pytest.mark.parametrize(
    ("axis", "quadratic"), [(cap.LINEAR_IN_FEATURES, True), (cap.LINEAR_IN_SEQUENCE, False)], ids=["features", "seq"]
)
def test_linear_scaling_on_custom_axes(axis: str, quadratic: bool) -> None:
    """A declared axis with its own make_inputs: an F^2 path is caught, a linear one passes."""
    from tabzoo.testing import ConformanceCase, ScalingAxis

    class Features(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x.transpose(1, 2) @ x).sum() if quadratic else (x * 2).sum(-1)

    case = ConformanceCase(
        "axis", make_model=lambda seed: Features(), capabilities={axis} | cap.MINIMUM["rows"], protocol="rows",
        scaling_axes={axis: ScalingAxis(lambda n, seed: (torch.randn(2, 16, n),), base_n=32)},
    )
    result = _run(case, axis)
    assert result.status == ("failed" if quadratic else "passed"), result
    assert "seconds" in result.details["slopes"] and result.details["sizes"][0] >= 4096
    assert len(result.details["sizes"]) == (2 if quadratic else 4)  # an exact count stops early


@pytest.fixture(params=["offset", "wrong_grad"])
def broken_backend(request: Any) -> Iterator[str]:
    from tabzoo.kernels import register_backend, unregister_backend

    backend = offset_backend() if request.param == "offset" else wrong_grad_backend()
    register_backend(backend)
    try:
        yield backend.name
    finally:
        unregister_backend(backend.op, backend.name)


def test_kernel_equivalence_catches_a_subtly_wrong_backend(broken_backend: str) -> None:
    result = _run(icl_case(), cap.KERNEL_EQUIVALENCE)
    _assert_caught(result, cap.KERNEL_EQUIVALENCE)
    assert result.reproducer["backend"] == broken_backend
    assert ("grad" in result.message) == (broken_backend == "broken_grad")


@pytest.mark.parametrize("make", [icl_case, rows_case, relational_case], ids=["in-context", "rows", "relational"])
def test_correct_models_pass_every_check(make: Callable[[], Any]) -> None:
    results = check_conformance(make(), on_fail="raise")
    assert results and all(r.status in ("passed", "xfail") for r in results), [str(r) for r in results]


def test_tiny_rows_context_rows_read_query_rows() -> None:
    """The rows gallery's base model is transductive: its expected failure of no_context_query_leak
    is real (the test its waiver links)."""
    result = run_check(rows_case(), cap.NO_CONTEXT_QUERY_LEAK, max_examples=3)  # run_check alone: no waiver
    assert result.status == "failed", result
