"""Hypothesis strategies generating random mask expressions (for tests of masks and kernels).

``hypothesis`` is a test-only dependency: it is imported lazily inside each function, so
importing this module never requires it.

Example::

    from hypothesis import given
    from tabzoo.masks.strategies import sized_masks

    @given(sized_masks(max_n=40))
    def test_nnz(case):
        mask, n_q, n_k = case
        assert mask.nnz(n_q, n_k) == int(mask.materialize(n_q, n_k).sum())
"""

from __future__ import annotations

from typing import Any

from tabzoo.masks.base import Mask
from tabzoo.masks.groups import TASK_MODES, edges, same_group, task_tokens
from tabzoo.masks.primitives import (
    causal,
    context_query,
    full,
    global_tokens,
    none,
    random_links,
    window,
)

__all__ = ["leaf_masks", "mask_expressions", "sized_masks"]


def leaf_masks(n_q: int, n_k: int | None = None) -> Any:
    """Strategy of primitive masks usable on an ``n_q x n_k`` problem.

    Id-based masks (``same_group``, ``edges`` with groups, ``task_tokens``, bound
    ``random_links``) are included only when the problem is square.
    """
    from hypothesis import strategies as st

    n_k = n_q if n_k is None else n_k
    small = max(1, min(n_q, n_k))
    options = [
        st.just(full()),
        st.just(none()),
        st.just(causal()),
        st.integers(0, 6).map(window),
        st.integers(0, 4).map(global_tokens),
        st.builds(random_links, st.integers(0, 3), st.integers(-(2**40), 2**40)),
        st.builds(context_query, st.integers(0, small), st.booleans()),
        st.builds(
            lambda pairs: edges([p[0] for p in pairs], [p[1] for p in pairs]),
            st.lists(st.tuples(st.integers(0, n_q + 2), st.integers(0, n_k + 2)), max_size=12),
        ),
    ]
    if n_q == n_k:
        n = n_q
        groups = st.lists(st.integers(0, 4), min_size=n, max_size=n)
        options += [
            groups.map(same_group),
            st.builds(
                lambda g, pairs: edges([p[0] for p in pairs], [p[1] for p in pairs], g),
                groups,
                st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=8),
            ),
            st.builds(
                lambda n_tasks, mode: task_tokens(n - n_tasks, n_tasks, mode),
                st.integers(0, min(n, 5)),
                st.sampled_from(TASK_MODES),
            ),
            st.builds(random_links, st.integers(0, 3), st.integers(0, 1000), st.just(n)),
        ]
    return st.one_of(*options)


def mask_expressions(n_q: int, n_k: int | None = None, max_leaves: int = 6) -> Any:
    """Strategy of random expression trees over :func:`leaf_masks` with ``|``, ``&`` and ``~``."""
    from hypothesis import strategies as st

    def extend(children: Any) -> Any:
        return st.one_of(
            st.builds(lambda a, b: a | b, children, children),
            st.builds(lambda a, b: a & b, children, children),
            children.map(lambda a: ~a),
        )

    return st.recursive(leaf_masks(n_q, n_k), extend, max_leaves=max_leaves)


def sized_masks(max_n: int = 70, square: bool | None = None, max_leaves: int = 6) -> Any:
    """Strategy of ``(mask, n_q, n_k)`` with sizes in ``[1, max_n]``.

    :param square: True for ``n_q == n_k`` only, False for independent sizes, None for either.
    """
    from hypothesis import strategies as st

    square_flags = st.booleans() if square is None else st.just(square)

    @st.composite
    def build(draw: Any) -> tuple[Mask, int, int]:
        n_q = draw(st.integers(1, max_n))
        n_k = n_q if draw(square_flags) else draw(st.integers(1, max_n))
        return draw(mask_expressions(n_q, n_k, max_leaves)), n_q, n_k

    return build()
