"""Static information-flow analysis of a stack of attention layers.

Each layer is a :class:`~tabzoo.masks.Mask` applied with a residual connection: after layer
``M`` the state of position ``i`` depends on its own previous state and on the previous state
of every ``j`` with ``M[i, j]``. ``reachable`` gives the transitive dependency relation;
``leaks`` returns witness paths for forbidden flows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from tabzoo.errors import TabzooInputError
from tabzoo.masks.base import Mask

__all__ = ["reachable", "leaks", "MAX_PATHS"]

#: Default cap on the number of witness paths returned by :func:`leaks`.
MAX_PATHS = 100


def _layer_matrices(layers: Sequence[Mask], n: int) -> list[torch.Tensor]:
    if isinstance(layers, Mask):
        layers = [layers]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise TabzooInputError(f"n must be a positive int (the sequence length), got {n!r}.")
    mats = []
    for index, layer in enumerate(layers):
        if not isinstance(layer, Mask):
            raise TabzooInputError(
                f"layers[{index}] is a {type(layer).__name__}, not a Mask; pass one tabzoo.masks.Mask per layer."
            )
        mats.append(layer.materialize(n, n))
    return mats


def reachable(layers: Sequence[Mask], n: int) -> torch.Tensor:
    """Which positions can influence which, through the whole stack.

    Per layer (applied in order): ``r_new = r_old OR (M @ r_old)`` (boolean product), starting
    from the identity (residuals: every position reaches itself).

    :param layers: the attention masks of the stack, first layer first (a single Mask is one layer).
    :param n: sequence length; each mask is materialised as ``[n, n]``.
    :returns: ``BoolTensor [n, n]``; ``r[i, j]`` = position ``j`` can influence position ``i``.
    """
    mats = _layer_matrices(layers, n)
    r = torch.eye(n, dtype=torch.bool)
    for m in mats:
        r = r | ((m.to(torch.float32) @ r.to(torch.float32)) > 0)
    return r


def _positions(name: str, value: Iterable[int] | torch.Tensor, n: int) -> list[int]:
    """Positions from ints, a LongTensor, or a ``BoolTensor [n]`` selector; validated in ``[0, n)``."""
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
        if value.shape != (n,):
            raise TabzooInputError(
                f"{name} as a bool selector must have shape ({n},), got {tuple(value.shape)}."
            )
        return value.nonzero().flatten().tolist()
    if isinstance(value, torch.Tensor):
        value = value.flatten().tolist()
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < n:
            raise TabzooInputError(
                f"{name} holds {v!r}, which is not a position in [0, {n}); pass ints in range."
            )
        out.append(v)
    return sorted(set(out))


def _shortest_path(mats: list[torch.Tensor], source: int, sink: int) -> tuple[int, ...]:
    """A path ``source -> ... -> sink`` with the fewest attention hops (residual steps are free)."""
    n = mats[0].shape[0]
    inf = len(mats) + 1
    hops = torch.full((n,), inf, dtype=torch.int64)
    hops[source] = 0
    parents: list[torch.Tensor] = []
    for m in mats:
        via = torch.where(m, hops[None, :], inf)  # via[x, y] = hops of y if x reads y
        best, arg = via.min(dim=1)
        best = best + 1
        take = best < hops  # strictly better than staying (residual preferred on ties)
        parents.append(torch.where(take, arg, torch.arange(n)))
        hops = torch.where(take, best, hops)
    path = [sink]
    node = sink
    for parent in reversed(parents):
        node = int(parent[node])
        if node != path[-1]:
            path.append(node)
    return tuple(reversed(path))


def leaks(
    layers: Sequence[Mask],
    sources: Iterable[int] | torch.Tensor,
    sinks: Iterable[int] | torch.Tensor,
    n: int,
    max_paths: int = MAX_PATHS,
) -> list[tuple[int, ...]]:
    """Forbidden flows from ``sources`` into ``sinks``, with one witness path each.

    A pair ``(s, t)`` offends when ``s != t`` and ``reachable(layers, n)[t, s]`` (a position
    trivially depends on itself, so ``s == t`` never counts). For each offending pair one
    shortest witness path is returned: the positions ``(s, p1, ..., t)`` it passes through,
    each consecutive step being an attention read in some later layer (``p_{k+1}`` reads
    ``p_k``), with the fewest such reads. Paths are ordered by ``(source, sink)`` and at most
    ``max_paths`` (default :data:`MAX_PATHS` = 100) are returned.

    Example: ``leaks([context_query(nc)] * 4, range(nc, n), range(nc), n) == []`` (query rows
    never reach context rows), and with ``sources=[j]``, ``sinks=[i]`` for query rows ``i != j``.

    :param layers: the attention masks of the stack, first layer first.
    :param sources: positions whose information must not flow (ints, LongTensor or ``BoolTensor [n]``).
    :param sinks: positions that must not receive it.
    :param n: sequence length.
    :returns: list of paths (tuples of positions, source first, sink last); ``[]`` = leak-free.
    """
    if isinstance(max_paths, bool) or not isinstance(max_paths, int) or max_paths < 1:
        raise TabzooInputError(f"max_paths must be a positive int, got {max_paths!r}.")
    mats = _layer_matrices(layers, n)
    src, dst = _positions("sources", sources, n), _positions("sinks", sinks, n)
    if not mats or not src or not dst:
        return []
    r = torch.eye(n, dtype=torch.bool)
    for m in mats:
        r = r | ((m.to(torch.float32) @ r.to(torch.float32)) > 0)
    sub = r[dst][:, src]  # [sinks, sources]
    pairs = [(src[b], dst[a]) for a, b in sub.nonzero().tolist() if src[b] != dst[a]]
    pairs.sort()
    return [_shortest_path(mats, s, t) for s, t in pairs[:max_paths]]
