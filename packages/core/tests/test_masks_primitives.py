"""Semantics of each primitive against naive loops, and bad inputs."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.masks import (
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


def _oracle(pred, n_q: int, n_k: int) -> torch.Tensor:
    return torch.tensor(
        [[bool(pred(i, j)) for j in range(n_k)] for i in range(n_q)], dtype=torch.bool
    )


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 30), st.integers(1, 30), st.integers(0, 8), st.integers(0, 8), st.integers(0, 30)
)
def test_positional_primitives(n_q: int, n_k: int, r: int, g: int, nc: int) -> None:
    assert torch.equal(full().materialize(n_q, n_k), _oracle(lambda i, j: True, n_q, n_k))
    assert torch.equal(none().materialize(n_q, n_k), _oracle(lambda i, j: False, n_q, n_k))
    assert torch.equal(causal().materialize(n_q, n_k), _oracle(lambda i, j: j <= i, n_q, n_k))
    assert torch.equal(
        window(r).materialize(n_q, n_k), _oracle(lambda i, j: abs(i - j) <= r, n_q, n_k)
    )
    assert torch.equal(
        global_tokens(g).materialize(n_q, n_k), _oracle(lambda i, j: i < g or j < g, n_q, n_k)
    )
    nc = min(nc, n_q, n_k)
    for flag in (False, True):
        expected = _oracle(
            lambda i, j, f=flag: j < nc or (i >= nc and (j == i or (f and j >= nc))), n_q, n_k
        )
        assert torch.equal(context_query(nc, flag).materialize(n_q, n_k), expected)


def test_context_query_semantics() -> None:
    nc, n = 5, 9
    m = context_query(nc).materialize(n)
    assert m[:nc, :nc].all() and not m[:nc, nc:].any()  # context reads only context
    assert m[nc:, :nc].all()  # query rows read all context
    assert torch.equal(m[nc:, nc:], torch.eye(n - nc, dtype=torch.bool))  # ... and only themselves
    m2 = context_query(nc, query_sees_query=True).materialize(n)
    assert m2[nc:, :].all() and not m2[:nc, nc:].any()
    with pytest.raises(TabzooInputError, match="n_context"):
        context_query(10).materialize(9)
    with pytest.raises(TabzooInputError):
        context_query(-1)


def test_random_links_determinism_and_seeds() -> None:
    n, r = 64, 3
    a = random_links(r, seed=11).materialize(n)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    b = random_links(r, seed=11).materialize(n)
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is not used
    torch.manual_seed(999)
    assert torch.equal(a, b) and torch.equal(a, random_links(r, seed=11).materialize(n))
    assert not torch.equal(a, random_links(r, seed=12).materialize(n))
    counts = a.sum(dim=1)
    assert (counts >= 1).all() and (counts <= r).all()
    assert counts.float().mean() > r - 0.5  # collisions are rare
    # draws are a pure function of (seed, i, t): row i is the same for any query count
    assert torch.equal(random_links(r, 11).materialize(20, n), a[:20])
    # bound n: fixed length, allowed works without n_k
    bound = random_links(r, 11, n=n)
    assert torch.equal(bound.materialize(n), a)
    q, k = torch.arange(n)[:, None], torch.arange(n)[None, :]
    assert torch.equal(bound.allowed(q, k), a)
    with pytest.raises(TabzooInputError, match="n_k"):
        random_links(r, 11).allowed(q, k)
    with pytest.raises(TabzooInputError):
        bound.materialize(n + 1)
    assert not random_links(0, 1).materialize(5).any()
    with pytest.raises(TabzooInputError):
        random_links(-1, 0)


def test_same_group() -> None:
    ids = [2, 0, 2, 1, 0, 2]
    expected = _oracle(lambda i, j: ids[i] == ids[j], 6, 6)
    for form in (ids, tuple(ids), torch.tensor(ids), torch.tensor(ids, dtype=torch.int32)):
        assert torch.equal(same_group(form).materialize(6), expected)
    m = same_group(ids)
    assert m.length == 6 and m.nnz(6) == int(expected.sum())
    with pytest.raises(TabzooInputError, match="length 6"):
        m.materialize(7)
    with pytest.raises(TabzooInputError):
        m.materialize(6, 5)
    # positions outside the fixed length are never allowed (also under ~)
    assert not m.allowed(torch.tensor([6, 0]), torch.tensor([6, 7])).any()
    assert not (~m).allowed(torch.tensor([6, 0]), torch.tensor([6, 7])).any()


def test_edges_with_groups() -> None:
    groups = [0, 0, 1, 1, 1, 2, 7]
    src, dst = [1, 2, 2, 9], [0, 0, 1, 0]  # (9, 0): group 9 absent, ignored
    pairs = set(zip(src, dst, strict=True))
    m = edges(src, dst, groups)
    expected = _oracle(lambda i, j: (groups[i], groups[j]) in pairs, 7, 7)
    assert torch.equal(m.materialize(7), expected)
    assert m.nnz(7) == int(expected.sum()) and m.length == 7
    # foreign-key style: child cells read parent cells and not the reverse
    assert m.materialize(7)[2, 0] and not m.materialize(7)[0, 2]
    both = m | edges(dst, src, groups)
    assert torch.equal(both.materialize(7), expected | expected.T)
    with pytest.raises(TabzooInputError, match="length 7"):
        m.materialize(8)


def test_edges_on_positions() -> None:
    m = edges([0, 3, 3, 10], [1, 2, 5, 0])
    expected = _oracle(lambda i, j: (i, j) in {(0, 1), (3, 2), (3, 5), (10, 0)}, 6, 8)
    assert torch.equal(m.materialize(6, 8), expected)
    assert m.nnz(6, 8) == 3 and m.length is None
    assert not edges([], []).materialize(4).any()
    with pytest.raises(TabzooInputError, match="src_ids"):
        edges([0, 1], [1])
    with pytest.raises(TabzooInputError, match=">= 0"):
        edges([-1], [0])


@pytest.mark.parametrize(
    ("mode", "f_reads_t", "t_reads_t"),
    [
        ("T-/->T", True, False),
        ("F-/->T", False, True),
        ("both", False, False),
        ("full", True, True),
    ],
)
def test_task_tokens_modes(mode: str, f_reads_t: bool, t_reads_t: bool) -> None:
    nf, nt = 6, 3
    m = task_tokens(nf, nt, mode).materialize(nf + nt)
    assert (
        m[:nf, :nf].all() and m[nf:, :nf].all()
    )  # features always read features; tasks read features
    assert bool(m[:nf, nf:].all()) is f_reads_t and bool(m[:nf, nf:].any()) is f_reads_t
    off_diag = m[nf:, nf:] & ~torch.eye(nt, dtype=torch.bool)
    assert bool(off_diag.any()) is t_reads_t
    assert m[nf:, nf:].diagonal().all()  # a task token reads itself
    assert task_tokens(nf, nt, mode).nnz(nf + nt) == int(m.sum())


def test_task_tokens_default_is_paper_default_and_bad_mode() -> None:
    assert task_tokens(2, 2) == task_tokens(2, 2, "T↛T") and task_tokens(2, 2).mode == "T-/->T"
    assert task_tokens(2, 2, "F↛T&T↛T") == task_tokens(2, 2, "both")
    with pytest.raises(TabzooInputError, match="mode"):
        task_tokens(2, 2, "T->T")
    with pytest.raises(TabzooInputError):
        task_tokens(2, 2).materialize(5)


@pytest.mark.parametrize(
    "build",
    [
        lambda: window(-1),
        lambda: window(1.5),
        lambda: global_tokens(-2),
        lambda: context_query(2, query_sees_query="yes"),
        lambda: same_group([]),
        lambda: same_group([[0, 1], [1, 0]]),
        lambda: same_group([0.5, 1.0]),
        lambda: same_group(torch.tensor([True, False])),
        lambda: task_tokens(-1, 2),
        lambda: window(1).materialize(0),
        lambda: window(1).materialize(3, -1),
        lambda: window(1).block_layout(3, block=0),
        lambda: window(1) | 3,
        lambda: same_group([0, 1]) | same_group([0, 1, 2]),
    ],
)
def test_bad_inputs_raise(build) -> None:
    with pytest.raises(TabzooInputError):
        build()


def test_errors_name_the_fix() -> None:
    with pytest.raises(TabzooInputError, match="radius >= 0"):
        window(-3)
    with pytest.raises(TabzooInputError, match="rebuild the mask"):
        same_group([0, 0, 1]).nnz(4)
