"""The :class:`Mask` base class and the operator nodes ``|``, ``&`` and ``~``.

Semantics: ``m.materialize(n_q, n_k)[i, j]`` is True when query position ``i`` may READ
(attend to) key position ``j``.

Structural equality
-------------------
Masks are frozen dataclasses holding only ints, bools, strings and tuples, so ``==`` and
``hash`` compare *structure*: two masks are equal iff they are the same primitive with equal
parameters, or the same operator over equal operands. Operators are normalised when built:

* ``a | b`` and ``a & b`` are flattened (associativity), duplicates are dropped (idempotence)
  and operands are sorted by their ``repr`` (commutativity), so ``a | b == b | a`` and
  ``(a | b) | c == a | (b | c)``;
* identities are removed: ``full() & m == m``, ``none() | m == m``, ``~~m == m``,
  ``~full() == none()``, ``~none() == full()``;
* absorbing elements collapse (``full() | m == full()``, ``none() & m == none()``); operands
  with a fixed length are kept beside them, so the length check of id-based masks is never lost.

Equal structure implies equal matrices; the converse does not hold (e.g. ``window(0)`` and
``same_group(range(n))`` give the same matrix but are different masks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from tabzoo.errors import TabzooInputError
from tabzoo.masks import outputs as _out

if TYPE_CHECKING:
    from torch.nn.attention.flex_attention import BlockMask

__all__ = ["Mask", "Or", "And", "Not", "Full", "Empty", "as_index"]


def as_index(x: torch.Tensor | int) -> torch.Tensor:
    """Return ``x`` as an int64 tensor (flex_attention may pass int32 or 0-d tensors)."""
    if not isinstance(x, torch.Tensor):
        return torch.as_tensor(x, dtype=torch.int64)
    return x if x.dtype == torch.int64 else x.to(torch.int64)


@dataclass(frozen=True)
class Mask:
    """Abstract attention mask: a predicate over (query position, key position).

    Subclasses implement :meth:`_eval` (and may override :attr:`length`, :meth:`_check` and
    :meth:`_row_counts`). All outputs are derived from :meth:`allowed`.
    """

    # ------------------------------------------------------------------ to override
    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        """Elementwise predicate on broadcastable int64 tensors ``q`` and ``k``.

        :param n_k: number of keys when known (needed only by unbound ``random_links``).
        :returns: bool tensor of the broadcast shape of ``q`` and ``k``.
        """
        raise NotImplementedError

    @property
    def length(self) -> int | None:
        """The fixed sequence length of a mask built from ids, else ``None`` (any size)."""
        return None

    def _check(self, n_q: int, n_k: int) -> None:
        """Raise :class:`TabzooInputError` when this mask cannot be used at ``n_q x n_k``."""
        length = self.length
        if length is not None and (n_q != length or n_k != length):
            raise TabzooInputError(
                f"{self._short()} was built for sequences of length {length} but was asked for "
                f"a {n_q} x {n_k} matrix; rebuild the mask from ids of length {n_q} (and use "
                f"n_q == n_k == {length} for this one)."
            )

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor | None:
        """Allowed keys per query row, ``LongTensor [n_q]``, in O(n_q) memory; ``None`` if unknown."""
        return None

    def _candidates(self, q: torch.Tensor, n_k: int) -> torch.Tensor | None:
        """A superset of the keys each query row ``q`` (int64 ``[n]``, all ``>= _dense_rows()``) may
        read, ``LongTensor [n, K]`` (entries outside ``[0, n_k)`` are ignored); ``None`` when the
        mask cannot bound them (a union of such masks is then counted densely)."""
        return None

    def _dense_rows(self) -> int:
        """The leading query rows whose keys :meth:`_candidates` does not bound (they may read any key)."""
        return 0

    def _children(self) -> tuple[Mask, ...]:
        return ()

    # ------------------------------------------------------------------ helpers
    def _short(self) -> str:
        text = repr(self)
        return text if len(text) <= 80 else text[:77] + "..."

    def _sort_key(self) -> str:
        key = self.__dict__.get("_repr_key")
        if key is None:
            key = repr(self)
            object.__setattr__(self, "_repr_key", key)
        return key

    def _cached(
        self, name: str, device: torch.device, build: Callable[[], torch.Tensor]
    ) -> torch.Tensor:
        """Per-instance, per-device cache of derived tensors (not part of equality or hash)."""
        cache = self.__dict__.get("_tensor_cache")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_tensor_cache", cache)
        slot = (name, str(device))
        if slot not in cache:
            cache[slot] = build().to(device)
        return cache[slot]

    def check_size(self, n_q: int, n_k: int | None = None) -> tuple[int, int]:
        """Validate sizes for this mask and return ``(n_q, n_k)`` (``n_k`` defaults to ``n_q``)."""
        n_k = n_q if n_k is None else n_k
        for name, value in (("n_q", n_q), ("n_k", n_k)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TabzooInputError(
                    f"{name} must be a positive int, got {value!r}; pass the sequence length."
                )
        self._check(n_q, n_k)
        return n_q, n_k

    # ------------------------------------------------------------------ public API
    def allowed(
        self, q_idx: torch.Tensor, k_idx: torch.Tensor, *, n_k: int | None = None
    ) -> torch.Tensor:
        """Broadcasting elementwise predicate: may query ``q_idx`` read key ``k_idx``?

        Usable as a flex_attention ``mask_mod``: ``lambda b, h, q, kv: m.allowed(q, kv)``
        (or :meth:`mask_mod`). Positions outside a fixed-length mask are never allowed.

        :param q_idx: LongTensor of query positions, any shape broadcastable with ``k_idx``.
        :param k_idx: LongTensor of key positions.
        :param n_k: number of keys; required only by ``random_links`` built without ``n``.
        :returns: BoolTensor of the broadcast shape.
        """
        return self._eval(as_index(q_idx), as_index(k_idx), n_k)

    def mask_mod(self, n_q: int, n_k: int | None = None) -> Callable[..., torch.Tensor]:
        """A flex_attention ``mask_mod(b, h, q_idx, kv_idx)`` for an ``n_q x n_k`` problem."""
        n_q, n_k = self.check_size(n_q, n_k)

        def mod(
            b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor
        ) -> torch.Tensor:
            return self.allowed(q_idx, kv_idx, n_k=n_k)

        return mod

    def materialize(
        self, n_q: int, n_k: int | None = None, device: torch.device | str | None = None
    ) -> torch.Tensor:
        """The dense mask, ``BoolTensor [n_q, n_k]`` (``n_k`` defaults to ``n_q``); for tests and small inputs."""
        n_q, n_k = self.check_size(n_q, n_k)
        return _out.materialize(self, n_q, n_k, device)

    def bias(
        self,
        n_q: int,
        n_k: int | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Additive form ``[n_q, n_k]``: 0 where allowed, ``-inf`` elsewhere."""
        allowed = self.materialize(n_q, n_k, device)
        zero = torch.zeros((), dtype=dtype, device=allowed.device)
        return torch.where(
            allowed, zero, torch.full((), float("-inf"), dtype=dtype, device=allowed.device)
        )

    def block_mask(
        self, n_q: int, n_k: int | None = None, block: int = 128, device: torch.device | str = "cpu"
    ) -> BlockMask:
        """A flex_attention ``BlockMask`` (``B=None, H=None``) built by ``create_block_mask``."""
        n_q, n_k = self.check_size(n_q, n_k)
        return _out.block_mask(self, n_q, n_k, _out.check_block(block), device)

    def block_layout(self, n_q: int, n_k: int | None = None, block: int = 128) -> torch.Tensor:
        """Non-empty blocks, ``LongTensor [n_blocks, 2]`` of ``(q_block, k_block)``, row-major.

        Computed chunk by chunk over query blocks; never holds the full ``n_q x n_k`` matrix.
        """
        n_q, n_k = self.check_size(n_q, n_k)
        return _out.block_layout(self, n_q, n_k, _out.check_block(block))

    def nnz(self, n_q: int, n_k: int | None = None) -> int:
        """Number of allowed (query, key) pairs, by closed form or chunked counting."""
        n_q, n_k = self.check_size(n_q, n_k)
        counts = self._row_counts(n_q, n_k)
        if counts is not None:
            return int(counts.sum())
        return _out.chunked_nnz(self, n_q, n_k)

    # ------------------------------------------------------------------ operators
    def __or__(self, other: Mask) -> Mask:
        return _combine(Or, self, other)

    def __and__(self, other: Mask) -> Mask:
        return _combine(And, self, other)

    def __invert__(self) -> Mask:
        if isinstance(self, Not):
            return self.term
        if isinstance(self, Full):
            return Empty()
        if isinstance(self, Empty):
            return Full()
        return Not(self)


def _common_length(terms: tuple[Mask, ...]) -> int | None:
    lengths = {t.length for t in terms if t.length is not None}
    if len(lengths) > 1:
        raise TabzooInputError(
            f"cannot combine masks built for different sequence lengths {sorted(lengths)}; "
            "build every id-based mask from ids of the same length."
        )
    return lengths.pop() if lengths else None


def _combine(kind: type[_NAry], a: Mask, b: Mask) -> Mask:
    for operand in (a, b):
        if not isinstance(operand, Mask):
            raise TabzooInputError(
                f"cannot combine a Mask with {type(operand).__name__}; build both operands with tabzoo.masks."
            )
    identity, absorbing = (Empty, Full) if kind is Or else (Full, Empty)
    flat: list[Mask] = []
    for operand in (a, b):
        flat.extend(operand.terms if isinstance(operand, kind) else (operand,))
    terms = {t._sort_key(): t for t in flat if not isinstance(t, identity)}
    ordered = tuple(terms[key] for key in sorted(terms))
    _common_length(ordered)
    if any(isinstance(t, absorbing) for t in ordered):
        # keep the length-bearing operands (their size check), drop everything else
        ordered = tuple(t for t in ordered if isinstance(t, absorbing) or t.length is not None)
    if not ordered:
        return identity()
    if len(ordered) == 1:
        return ordered[0]
    return kind(ordered)


@dataclass(frozen=True)
class _NAry(Mask):
    terms: tuple[Mask, ...]

    def __post_init__(self) -> None:
        if len(self.terms) < 2 or not all(isinstance(t, Mask) for t in self.terms):
            raise TabzooInputError(
                "an operator node needs at least two Mask operands; use a | b or a & b."
            )
        _common_length(self.terms)

    @property
    def length(self) -> int | None:
        return _common_length(self.terms)

    def _children(self) -> tuple[Mask, ...]:
        return self.terms

    def _check(self, n_q: int, n_k: int) -> None:
        for term in self.terms:
            term._check(n_q, n_k)


@dataclass(frozen=True)
class Or(_NAry):
    """Union: ``i`` reads ``j`` if any operand allows it. Build with ``a | b``."""

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        out = self.terms[0]._eval(q, k, n_k)
        for term in self.terms[1:]:
            out = out | term._eval(q, k, n_k)
        return out

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor | None:
        """Counted on each row's candidate keys when every operand bounds them (the sparse family
        ``window | global_tokens | random_links``): O(n_q K), not O(n_q n_k)."""
        return _out.sparse_row_counts(self, self.terms, n_q, n_k)


@dataclass(frozen=True)
class And(_NAry):
    """Intersection: ``i`` reads ``j`` if every operand allows it. Build with ``a & b``."""

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        out = self.terms[0]._eval(q, k, n_k)
        for term in self.terms[1:]:
            out = out & term._eval(q, k, n_k)
        return out


@dataclass(frozen=True)
class Not(Mask):
    """Complement: ``i`` reads ``j`` iff ``term`` forbids it. Build with ``~m``."""

    term: Mask

    @property
    def length(self) -> int | None:
        return self.term.length

    def _children(self) -> tuple[Mask, ...]:
        return (self.term,)

    def _check(self, n_q: int, n_k: int) -> None:
        self.term._check(n_q, n_k)

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        out = ~self.term._eval(q, k, n_k)
        length = self.term.length
        if length is not None:  # keep "outside a fixed-length mask nothing is allowed"
            out = out & (q >= 0) & (q < length) & (k >= 0) & (k < length)
        return out

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor | None:
        counts = self.term._row_counts(n_q, n_k)
        return None if counts is None else n_k - counts


# the identity and absorbing elements of | and & (their constructors: tabzoo.masks.full() / none())
@dataclass(frozen=True)
class Full(Mask):
    """Every query reads every key."""

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        return torch.ones_like(q + k, dtype=torch.bool)

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        return torch.full((n_q,), n_k, dtype=torch.int64)


@dataclass(frozen=True)
class Empty(Mask):
    """No query reads any key (returned by :func:`none`)."""

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        return torch.zeros_like(q + k, dtype=torch.bool)

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        return torch.zeros((n_q,), dtype=torch.int64)
