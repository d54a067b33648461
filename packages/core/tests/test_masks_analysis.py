"""reachable / leaks: transitive closure and leak witnesses on ICL stacks."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.masks import (
    causal,
    context_query,
    edges,
    full,
    leaks,
    none,
    reachable,
    same_group,
    window,
)
from tabzoo.masks.strategies import mask_expressions


def _closure_oracle(mats: list[torch.Tensor], n: int) -> torch.Tensor:
    """Reachability by explicit per-source propagation of sets (no matrix products)."""
    r = torch.zeros(n, n, dtype=torch.bool)
    for j in range(n):
        seen = {j}
        for m in mats:
            seen = seen | {i for i in range(n) for s in seen if m[i, s]}
        for i in seen:
            r[i, j] = True
    return r


def _check_path(path: tuple[int, ...], mats: list[torch.Tensor]) -> None:
    """Each hop p -> p' must be an attention read (p' reads p) in strictly later layers."""
    layer = 0
    for a, b in zip(path[:-1], path[1:], strict=True):
        while layer < len(mats) and not mats[layer][b, a]:
            layer += 1
        assert layer < len(mats), f"hop {a}->{b} of {path} is not realised by the stack"
        layer += 1


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 20).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(mask_expressions(n, max_leaves=3), max_size=3))
    )
)
def test_reachable_matches_oracle_and_leak_paths_are_valid(case) -> None:
    n, layers = case
    mats = [m.materialize(n) for m in layers]
    r = reachable(layers, n)
    assert r.shape == (n, n) and r.dtype == torch.bool
    assert torch.equal(r, _closure_oracle(mats, n))
    half = list(range(n // 2))
    rest = list(range(n // 2, n))
    found = leaks(layers, rest, half, n)
    offending = {(s, t) for s in rest for t in half if r[t, s]}
    assert {(p[0], p[-1]) for p in found} == offending
    for path in found:
        _check_path(path, mats)


def test_reachable_basics() -> None:
    assert torch.equal(reachable([], 4), torch.eye(4, dtype=torch.bool))
    assert torch.equal(reachable([none()] * 3, 4), torch.eye(4, dtype=torch.bool))
    assert reachable([full()], 3).all()
    # window(1) stacked L times reaches distance L
    r = reachable([window(1)] * 3, 10)
    i, j = torch.meshgrid(torch.arange(10), torch.arange(10), indexing="ij")
    assert torch.equal(r, (i - j).abs() <= 3)
    assert torch.equal(reachable(causal(), 5), causal().materialize(5))  # one Mask = one layer


def test_leaks_correct_icl_stack_is_leak_free() -> None:
    nc, n = 6, 10
    stack = [context_query(nc)] * 4
    assert leaks(stack, range(nc, n), range(nc), n) == []  # queries never reach context
    for j in range(nc, n):  # query independence: query j never reaches query i != j
        assert leaks(stack, [j], [i for i in range(nc, n) if i != j], n) == []
    # and context does reach every query row (the analysis is not vacuous)
    assert len(leaks(stack, range(nc), range(nc, n), n)) == nc * (n - nc)


def test_leaks_finds_query_to_query_then_query_to_context() -> None:
    nc, n = 4, 7
    # layer 1 mixes queries, layer 2 lets context row 0 read query row 6
    stack = [context_query(nc, query_sees_query=True), context_query(nc) | edges([0], [6])]
    assert stack[1].materialize(n)[0, 6]
    found = leaks(stack, range(nc, n), range(nc), n)
    assert found, "the leak must be found"
    assert {p[-1] for p in found} == {0}
    assert {p[0] for p in found} == set(range(nc, n))
    assert (6, 0) in found  # direct read in layer 2
    assert (5, 6, 0) in found  # 5 -> 6 in layer 1 (query_sees_query), 6 -> 0 in layer 2
    # query -> query leak of the query_sees_query layer alone
    qq = leaks([context_query(nc, query_sees_query=True)], [4], [5, 6], n)
    assert qq == [(4, 5), (4, 6)]
    # full attention leaks everywhere; the cap limits the number of paths
    assert len(leaks([full()], range(nc, n), range(nc), n)) == (n - nc) * nc
    assert len(leaks([full()], range(nc, n), range(nc), n, max_paths=2)) == 2


def test_leaks_shortest_witness() -> None:
    # chain 0 -> 1 -> 2 -> 3 via window layers, but a later full layer gives a 1-hop path
    stack = [window(1), window(1), full()]
    assert leaks(stack, [0], [3], 4) == [(0, 3)]
    assert leaks([window(1)] * 3, [0], [3], 4) == [(0, 1, 2, 3)]


def test_leaks_accepts_bool_selectors_and_rejects_bad_positions() -> None:
    n = 5
    sel = torch.tensor([False, False, False, True, True])
    assert leaks([context_query(3)], sel, ~sel, n) == []
    with pytest.raises(TabzooInputError):
        leaks([full()], [5], [0], n)
    with pytest.raises(TabzooInputError):
        leaks([full()], [0], [1], 0)
    with pytest.raises(TabzooInputError):
        leaks(["full"], [0], [1], n)  # type: ignore[list-item]
    with pytest.raises(TabzooInputError):
        reachable([same_group([0, 1, 1])], 4)
