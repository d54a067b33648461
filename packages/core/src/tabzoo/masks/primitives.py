"""Positional mask primitives: full, none, causal, window, global tokens, random links, context/query.

Every primitive is defined for any rectangular ``n_q x n_k`` problem, query position ``i`` and
key position ``j`` being indices from 0 (the same axis when ``n_q == n_k``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tabzoo.errors import TabzooInputError
from tabzoo.masks.base import Empty, Full, Mask

__all__ = [
    "Full",
    "Empty",
    "Causal",
    "Window",
    "GlobalTokens",
    "RandomLinks",
    "ContextQuery",
    "full",
    "none",
    "causal",
    "window",
    "global_tokens",
    "random_links",
    "context_query",
    "hash32",
]

_M32 = 0xFFFFFFFF


def check_int(name: str, value: object, minimum: int, fix: str) -> int:
    """Return ``value`` as int if it is an int ``>= minimum``, else raise :class:`TabzooInputError`."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import numpy as np

            if isinstance(value, np.integer):
                value = int(value)
        except ImportError:  # pragma: no cover - numpy is a core dependency
            pass
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TabzooInputError(f"{name} must be an int >= {minimum}, got {value!r}; {fix}")
    return value


def _rows(n_q: int) -> torch.Tensor:
    return torch.arange(n_q, dtype=torch.int64)


@dataclass(frozen=True)
class Causal(Mask):
    """Query ``i`` reads key ``j`` iff ``j <= i``."""

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        return k <= q

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        return (_rows(n_q) + 1).clamp(max=n_k)


@dataclass(frozen=True)
class Window(Mask):
    """Query ``i`` reads key ``j`` iff ``|i - j| <= radius``."""

    radius: int

    def __post_init__(self) -> None:
        check_int(
            "window radius", self.radius, 0, "pass radius >= 0 (0 = each position reads itself)."
        )

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        return (q - k).abs() <= self.radius

    def _candidates(self, q: torch.Tensor, n_k: int) -> torch.Tensor:
        return q[:, None] + torch.arange(-self.radius, self.radius + 1, dtype=torch.int64)[None]

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        i = _rows(n_q)
        lo = (i - self.radius).clamp(min=0)
        hi = (i + self.radius).clamp(max=n_k - 1)
        return (hi - lo + 1).clamp(min=0)


@dataclass(frozen=True)
class GlobalTokens(Mask):
    """Positions ``< k`` read all keys and are read by all queries; other pairs are False.

    Combine with ``|``, e.g. ``window(8) | global_tokens(4)``.
    """

    k: int

    def __post_init__(self) -> None:
        check_int("global_tokens k", self.k, 0, "pass the number of leading global tokens (>= 0).")

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        return (q < self.k) | (k < self.k)

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        i = _rows(n_q)
        return torch.where(i < self.k, n_k, min(self.k, n_k))

    def _dense_rows(self) -> int:
        return self.k

    def _candidates(self, q: torch.Tensor, n_k: int) -> torch.Tensor:
        return torch.arange(min(self.k, n_k), dtype=torch.int64)[None].expand(q.shape[0], -1)


def _mix32(x: torch.Tensor | int) -> torch.Tensor | int:
    """A 32-bit integer finaliser (xor-shift-multiply); works on python ints and int64 tensors."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = (x * 0x45D9F3B) & _M32
    x = x ^ (x >> 16)
    x = (x * 0x45D9F3B) & _M32
    return x ^ (x >> 16)


def hash32(seed: int, i: torch.Tensor, t: int) -> torch.Tensor:
    """Pure hash ``H(seed, i, t)`` in ``[0, 2**32)`` for int64 positions ``i`` (any shape).

    ``H = mix(mix((i * 0x9E3779B1) mod 2**32  xor  mix(seed mod 2**32))  xor  mix(t + 0x632BE5AB))``
    with ``mix`` the xor-shift-multiply finaliser :func:`_mix32`. No global RNG is used.
    """
    seed_part = int(_mix32(seed & _M32))
    draw_part = int(_mix32(t + 0x632BE5AB))
    x = _mix32((((i & 0x7FFFFFFF) * 0x9E3779B1) & _M32) ^ seed_part)
    out = _mix32(x ^ draw_part)
    assert isinstance(out, torch.Tensor)  # a tensor in gives a tensor out
    return out


@dataclass(frozen=True)
class RandomLinks(Mask):
    """Each query ``i`` reads ``r`` pseudo-random keys ``j_t(i) = hash32(seed, i, t) mod n``, ``t < r``.

    Exactly: ``allowed(i, j) = 0 <= i and any_t(j == hash32(seed, i, t) mod n)``. The draws of
    row ``i`` depend only on ``(seed, i, t)`` and ``n``; collisions merge, so a row has between 1
    and ``r`` distinct random keys. ``n`` is the number of keys: fixed when built with
    ``random_links(r, seed, n=...)`` (the mask then has that length), otherwise taken from the
    ``n_k`` of each call (``materialize``, ``mask_mod``, ``allowed(..., n_k=...)``).
    """

    r: int
    seed: int
    n: int | None = None

    def __post_init__(self) -> None:
        check_int("random_links r", self.r, 0, "pass the number of random keys per query (>= 0).")
        check_int("random_links seed", self.seed, -(2**63), "pass an int seed.")
        if self.n is not None:
            check_int(
                "random_links n", self.n, 1, "pass the sequence length, or n=None to use n_k."
            )

    @property
    def length(self) -> int | None:
        return self.n

    def _n(self, n_k: int | None) -> int:
        if self.n is not None:
            return self.n
        if n_k is None:
            raise TabzooInputError(
                "random_links(r, seed) needs the number of keys to draw from: call "
                "allowed(q, k, n_k=...) or use mask.mask_mod(n_q, n_k), or build random_links(r, seed, n=...)."
            )
        return n_k

    def draws(self, q: torch.Tensor, n_k: int | None = None) -> torch.Tensor:
        """Random key of each draw, ``LongTensor [*q.shape, r]`` (``q`` int64 positions)."""
        n = self._n(n_k)
        if self.r == 0:
            return torch.zeros((*q.shape, 0), dtype=torch.int64, device=q.device)
        return torch.stack([hash32(self.seed, q, t) % n for t in range(self.r)], dim=-1)

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        n = self._n(n_k)
        out = torch.zeros_like(q + k, dtype=torch.bool)
        for t in range(self.r):
            out = out | (k == hash32(self.seed, q, t) % n)
        out = out & (q >= 0)
        if self.n is not None:
            out = out & (q < self.n)
        return out

    def _candidates(self, q: torch.Tensor, n_k: int) -> torch.Tensor:
        return self.draws(q, n_k)

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        if self.r == 0:
            return torch.zeros((n_q,), dtype=torch.int64)
        d = self.draws(_rows(n_q), n_k).sort(dim=-1).values
        return 1 + (d[:, 1:] != d[:, :-1]).sum(dim=-1)


@dataclass(frozen=True)
class ContextQuery(Mask):
    """In-context split: rows ``< n_context`` are context, the rest are query rows.

    Context rows read only context keys; query rows read context keys and themselves
    (``j == i``); with ``query_sees_query=True`` query rows read every query key too.
    Requires ``n_context <= n_q`` and ``n_context <= n_k``.
    """

    n_context: int
    query_sees_query: bool = False

    def __post_init__(self) -> None:
        check_int("n_context", self.n_context, 0, "pass the number of context rows (>= 0).")
        if not isinstance(self.query_sees_query, bool):
            raise TabzooInputError(
                f"query_sees_query must be a bool, got {self.query_sees_query!r}."
            )

    def _check(self, n_q: int, n_k: int) -> None:
        if self.n_context > min(n_q, n_k):
            raise TabzooInputError(
                f"context_query(n_context={self.n_context}) used on a {n_q} x {n_k} problem: n_context "
                f"exceeds the sequence length; pass n_context <= {min(n_q, n_k)} (the number of context rows)."
            )

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        nc = self.n_context
        reads_context = (k >= 0) & (k < nc) & (q >= 0)
        if self.query_sees_query:
            return reads_context | ((q >= nc) & (k >= nc))
        return reads_context | ((q >= nc) & (k == q))

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        i = _rows(n_q)
        nc = self.n_context
        extra = (n_k - nc) if self.query_sees_query else (i < n_k).to(torch.int64)
        return torch.where(i < nc, torch.as_tensor(nc), nc + extra)


def full() -> Mask:
    """Every query reads every key."""
    return Full()


def none() -> Mask:
    """No query reads any key."""
    return Empty()


def causal() -> Mask:
    """Query ``i`` reads key ``j`` iff ``j <= i``."""
    return Causal()


def window(radius: int) -> Mask:
    """Query ``i`` reads key ``j`` iff ``|i - j| <= radius`` (radius >= 0)."""
    return Window(radius)


def global_tokens(k: int) -> Mask:
    """The first ``k`` positions read and are read by all; all other pairs are False (combine with ``|``)."""
    return GlobalTokens(k)


def random_links(r: int, seed: int, n: int | None = None) -> Mask:
    """Each query reads ``r`` pseudo-random keys, deterministic per ``seed``; see :class:`RandomLinks`."""
    return RandomLinks(r, seed, n)


def context_query(n_context: int, query_sees_query: bool = False) -> Mask:
    """Context rows read context; query rows read context and themselves (all queries if the flag is set)."""
    return ContextQuery(n_context, query_sees_query)
