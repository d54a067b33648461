"""tabzoo.masks: the attention-mask algebra (layer 2).

A :class:`Mask` is a small immutable object describing which query position may READ which
key position (``m.materialize(n_q, n_k)[i, j]``), without building the matrix. Build masks
from primitives and combine them with ``|``, ``&`` and ``~``; every mask offers ``allowed``
(a flex_attention ``mask_mod``), ``materialize``, ``bias``, ``block_mask``, ``block_layout``
and ``nnz``. ``reachable`` and ``leaks`` analyse a stack of layers statically.

Example::

    from tabzoo.masks import window, global_tokens, random_links, context_query, leaks

    rows = window(8) | global_tokens(4) | random_links(2, seed=0)
    icl = context_query(n_context=100)
    assert leaks([icl] * 6, sources=range(100, 120), sinks=range(100), n=120) == []
"""

from tabzoo.masks.analysis import MAX_PATHS, leaks, reachable
from tabzoo.masks.base import And, Mask, Not, Or
from tabzoo.masks.groups import (
    TASK_MODES,
    Edges,
    SameGroup,
    TaskTokens,
    edges,
    same_group,
    task_tokens,
)
from tabzoo.masks.primitives import (
    Causal,
    ContextQuery,
    Empty,
    Full,
    GlobalTokens,
    RandomLinks,
    Window,
    causal,
    context_query,
    full,
    global_tokens,
    none,
    random_links,
    window,
)

__all__ = [
    "Mask",
    "full",
    "none",
    "causal",
    "window",
    "global_tokens",
    "random_links",
    "context_query",
    "same_group",
    "edges",
    "task_tokens",
    "reachable",
    "leaks",
    "MAX_PATHS",
    "TASK_MODES",
    "Or",
    "And",
    "Not",
    "Full",
    "Empty",
    "Causal",
    "Window",
    "GlobalTokens",
    "RandomLinks",
    "ContextQuery",
    "SameGroup",
    "Edges",
    "TaskTokens",
]
