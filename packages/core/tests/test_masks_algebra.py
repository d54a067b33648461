"""Algebraic laws (on materialised matrices) and structural equality / hashing."""

from __future__ import annotations

import pickle

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo.masks import (
    And,
    Mask,
    Not,
    Or,
    causal,
    context_query,
    edges,
    full,
    global_tokens,
    none,
    random_links,
    same_group,
    task_tokens,
    window,
)
from tabzoo.masks.strategies import mask_expressions

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def triples(draw) -> tuple[int, Mask, Mask, Mask]:
    n = draw(st.integers(1, 40))
    expr = mask_expressions(n, max_leaves=4)
    return n, draw(expr), draw(expr), draw(expr)


def _m(mask: Mask, n: int) -> torch.Tensor:
    return mask.materialize(n)


@SETTINGS
@given(triples())
def test_boolean_laws(case: tuple[int, Mask, Mask, Mask]) -> None:
    n, a, b, c = case
    A, B = _m(a, n), _m(b, n)
    assert torch.equal(_m(a | b, n), A | B)
    assert torch.equal(_m(a & b, n), A & B)
    assert torch.equal(_m(~a, n), ~A)
    # De Morgan
    assert torch.equal(_m(~(a | b), n), _m(~a & ~b, n))
    assert torch.equal(_m(~(a & b), n), _m(~a | ~b, n))
    # idempotence, absorption, double negation, commutativity, associativity, distributivity
    assert torch.equal(_m(a | a, n), A) and torch.equal(_m(a & a, n), A)
    assert torch.equal(_m(a | (a & b), n), A) and torch.equal(_m(a & (a | b), n), A)
    assert torch.equal(_m(~~a, n), A)
    assert torch.equal(_m(a | b, n), _m(b | a, n)) and torch.equal(_m(a & b, n), _m(b & a, n))
    assert torch.equal(_m((a | b) | c, n), _m(a | (b | c), n))
    assert torch.equal(_m(a & (b | c), n), _m((a & b) | (a & c), n))
    # identities and complements
    assert torch.equal(_m(a | ~a, n), torch.ones(n, n, dtype=torch.bool))
    assert not _m(a & ~a, n).any()
    assert torch.equal(_m(full() & a, n), A) and torch.equal(_m(none() | a, n), A)


@SETTINGS
@given(triples())
def test_structural_normalisation(case: tuple[int, Mask, Mask, Mask]) -> None:
    _, a, b, c = case
    assert a | b == b | a and hash(a | b) == hash(b | a)
    assert a & b == b & a
    assert (a | b) | c == a | (b | c)
    assert a | a == a and a & a == a
    assert ~~a == a
    assert full() & a == a and none() | a == a


def test_equality_is_structural_and_hashable() -> None:
    assert window(3) == window(3) and hash(window(3)) == hash(window(3))
    assert window(3) != window(4)
    assert causal() != window(0)
    assert same_group([0, 0, 1]) == same_group(torch.tensor([0, 0, 1]))
    assert same_group([0, 0, 1]) != same_group([0, 1, 1])
    assert edges([0, 1], [1, 2]) == edges([1, 0], [2, 1])  # pairs are a set
    assert edges([0], [1], [0, 1]) != edges([0], [1])
    assert task_tokens(3, 2, "T↛T") == task_tokens(3, 2)  # aliases normalise
    assert random_links(2, 7) != random_links(2, 8)
    assert context_query(4) != context_query(4, query_sees_query=True)
    m = (window(2) | global_tokens(1)) & ~context_query(3)
    assert m == (global_tokens(1) | window(2)) & ~context_query(3)
    assert len({m, (window(2) | global_tokens(1)) & ~context_query(3), window(2)}) == 2
    assert pickle.loads(pickle.dumps(m)) == m
    # the same matrix does not imply the same structure
    assert window(0) != same_group(range(5))
    assert torch.equal(window(0).materialize(5), same_group(range(5)).materialize(5))


def test_operator_node_types_and_simplification() -> None:
    a, b = window(1), causal()
    assert isinstance(a | b, Or) and isinstance(a & b, And) and isinstance(~a, Not)
    assert (
        isinstance((a | b) | global_tokens(1), Or) and len(((a | b) | global_tokens(1)).terms) == 3
    )
    assert full() | a == full() and none() & a == none()
    assert ~full() == none() and ~none() == full()
    g = same_group([0, 1, 1])
    # absorbing elements do not drop a fixed length, so the size check survives
    assert (full() | g).length == 3 and (none() & g).length == 3


def test_frozen() -> None:
    import dataclasses

    import pytest

    m = window(2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.radius = 3  # type: ignore[misc]
