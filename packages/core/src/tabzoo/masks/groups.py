"""Masks built from ids: ``same_group``, ``edges`` and the MultiTab task-token role masks.

A mask built from per-position ids (or from ``n_features + n_tasks`` tokens) knows its length
``n``: it can only be used on ``n x n`` problems (other sizes raise ``TabzooInputError``), and
positions outside ``[0, n)`` are never allowed. Ids are stored as tuples of ints, so equality
and hashing are structural.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from tabzoo.errors import TabzooInputError
from tabzoo.masks.base import Mask
from tabzoo.masks.primitives import check_int

__all__ = [
    "SameGroup",
    "Edges",
    "TaskTokens",
    "same_group",
    "edges",
    "task_tokens",
    "as_ids",
    "TASK_MODES",
]

#: Above this many (group x group) cells, ``edges`` looks pairs up by binary search, not a table.
_DENSE_TABLE_LIMIT = 1 << 22

IdsLike = torch.Tensor | np.ndarray | Sequence[int]


def as_ids(name: str, ids: IdsLike, allow_empty: bool = False) -> tuple[int, ...]:
    """Validate 1-D integer ids (tensor, array or sequence) and return them as a tuple of ints."""
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu().numpy()
    try:
        arr = np.asarray(ids)
    except (TypeError, ValueError) as exc:
        raise TabzooInputError(
            f"{name} must be a 1-D sequence of ints; got {type(ids).__name__} ({exc})."
        ) from exc
    if arr.ndim != 1:
        raise TabzooInputError(
            f"{name} must be 1-D (one id per position), got shape {tuple(arr.shape)}; flatten it."
        )
    if arr.size == 0:
        if allow_empty:
            return ()
        raise TabzooInputError(f"{name} is empty; pass one id per position (at least one).")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TabzooInputError(
            f"{name} must hold integers, got dtype {arr.dtype}; convert ids with .long() / astype(int)."
        )
    return tuple(int(v) for v in arr.tolist())


def _in_range(q: torch.Tensor, k: torch.Tensor, n: int) -> torch.Tensor:
    return (q >= 0) & (q < n) & (k >= 0) & (k < n)


def _pair_lookup(
    mask: Mask, q_code: torch.Tensor, k_code: torch.Tensor, n_codes: int, keys: torch.Tensor
) -> torch.Tensor:
    """Is ``(q_code, k_code)`` among the pairs encoded as sorted ``keys = src * n_codes + dst``?"""
    flat = q_code * n_codes + k_code
    if n_codes * n_codes <= _DENSE_TABLE_LIMIT:

        def build() -> torch.Tensor:
            table = torch.zeros(n_codes * n_codes, dtype=torch.bool)
            table[keys.cpu()] = True
            return table

        return mask._cached("table", q_code.device, build)[flat]
    if keys.numel() == 0:
        return torch.zeros_like(flat, dtype=torch.bool)
    pos = torch.searchsorted(keys, flat).clamp(max=keys.numel() - 1)
    return keys[pos] == flat


@dataclass(frozen=True)
class SameGroup(Mask):
    """Position ``i`` reads position ``j`` iff ``ids[i] == ids[j]`` (e.g. the cells of one row)."""

    ids: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", as_ids("same_group ids", self.ids))

    @property
    def length(self) -> int:
        return len(self.ids)

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        n = len(self.ids)
        ids = self._cached("ids", q.device, lambda: torch.tensor(self.ids, dtype=torch.int64))
        return _in_range(q, k, n) & (ids[q.clamp(0, n - 1)] == ids[k.clamp(0, n - 1)])

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        _, inverse, counts = np.unique(
            np.asarray(self.ids), return_inverse=True, return_counts=True
        )
        return torch.as_tensor(counts[inverse], dtype=torch.int64)


@dataclass(frozen=True)
class Edges(Mask):
    """Directed links between groups: the edge pairs are ``(src_ids[e], dst_ids[e])``.

    * with ``group_ids`` (one group id per position, length ``n``): position ``i`` reads
      position ``j`` iff ``(group_ids[i], group_ids[j])`` is an edge pair, i.e. every position of
      group ``src`` reads every position of group ``dst``. Example: ``group_ids`` = row id of each
      cell, pairs = (child row, parent row) of each foreign key: child cells read parent cells.
      Groups of a pair absent from ``group_ids`` are ignored. The mask has length ``n``.
    * without ``group_ids``: the ids are positions and ``i`` reads ``j`` iff ``(i, j)`` is a pair;
      the mask works at any size (pairs outside the matrix are ignored).

    Edges are directed: add the reverse pairs (or ``|`` the reversed mask) for both directions.
    Pairs are stored sorted and de-duplicated, so equality does not depend on their order.
    """

    src_ids: tuple[int, ...]
    dst_ids: tuple[int, ...]
    group_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        src = as_ids("edges src_ids", self.src_ids, allow_empty=True)
        dst = as_ids("edges dst_ids", self.dst_ids, allow_empty=True)
        if len(src) != len(dst):
            raise TabzooInputError(
                f"edges: src_ids has {len(src)} entries but dst_ids has {len(dst)}; pass one src and one dst per edge."
            )
        groups = None if self.group_ids is None else as_ids("edges group_ids", self.group_ids)
        if groups is None and any(v < 0 for v in src + dst):
            raise TabzooInputError(
                "edges without group_ids treats ids as positions, which must be >= 0; pass group_ids= for group ids."
            )
        pairs = sorted(set(zip(src, dst, strict=True)))
        object.__setattr__(self, "src_ids", tuple(p[0] for p in pairs))
        object.__setattr__(self, "dst_ids", tuple(p[1] for p in pairs))
        object.__setattr__(self, "group_ids", groups)

    @property
    def length(self) -> int | None:
        return None if self.group_ids is None else len(self.group_ids)

    def _encoding(self) -> tuple[np.ndarray, int, np.ndarray]:
        """``(code per position or None-range, number of codes, sorted pair keys)`` on numpy."""
        src, dst = (
            np.asarray(self.src_ids, dtype=np.int64),
            np.asarray(self.dst_ids, dtype=np.int64),
        )
        if self.group_ids is None:
            n_codes = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
            return np.arange(0), max(n_codes, 1), np.unique(src * max(n_codes, 1) + dst)
        uniq, codes = np.unique(np.asarray(self.group_ids, dtype=np.int64), return_inverse=True)
        n_codes = len(uniq)
        keep = np.isin(src, uniq) & np.isin(dst, uniq)
        cs, cd = np.searchsorted(uniq, src[keep]), np.searchsorted(uniq, dst[keep])
        return codes.reshape(-1), n_codes, np.unique(cs * n_codes + cd)

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        codes, n_codes, keys = self._encoding_cached()
        keys_t = self._cached("keys", q.device, lambda: torch.as_tensor(keys, dtype=torch.int64))
        if self.group_ids is None:
            valid = _in_range(q, k, n_codes)
            q_code, k_code = q.clamp(0, n_codes - 1), k.clamp(0, n_codes - 1)
        else:
            n = len(self.group_ids)
            valid = _in_range(q, k, n)
            codes_t = self._cached(
                "codes", q.device, lambda: torch.as_tensor(codes, dtype=torch.int64)
            )
            q_code, k_code = codes_t[q.clamp(0, n - 1)], codes_t[k.clamp(0, n - 1)]
        return valid & _pair_lookup(self, q_code, k_code, n_codes, keys_t)

    def _encoding_cached(self) -> tuple[np.ndarray, int, np.ndarray]:
        enc = self.__dict__.get("_encoding_value")
        if enc is None:
            enc = self._encoding()
            object.__setattr__(self, "_encoding_value", enc)
        return enc

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        codes, n_codes, keys = self._encoding_cached()
        src, dst = keys // n_codes, keys % n_codes
        if self.group_ids is None:
            keep = (src < n_q) & (dst < n_k)
            return torch.as_tensor(np.bincount(src[keep], minlength=n_q), dtype=torch.int64)
        sizes = np.bincount(codes, minlength=n_codes)
        per_code = np.bincount(src, weights=sizes[dst], minlength=n_codes).astype(np.int64)
        return torch.as_tensor(per_code[codes], dtype=torch.int64)


TASK_MODES = ("T-/->T", "F-/->T", "both", "full")
_MODE_ALIASES = {
    "T-/->T": "T-/->T",
    "T↛T": "T-/->T",
    "F-/->T": "F-/->T",
    "F↛T": "F-/->T",
    "both": "both",
    "F-/->T&T-/->T": "both",
    "T-/->T&F-/->T": "both",
    "F↛T&T↛T": "both",
    "T↛T&F↛T": "both",
    "full": "full",
}


@dataclass(frozen=True)
class TaskTokens(Mask):
    """MultiTab inter-feature mask: ``n_features`` feature tokens F, then ``n_tasks`` task tokens T.

    Modes (the mask has length ``n_features + n_tasks``; every token always reads itself):

    * ``"T-/->T"`` (default, alias ``"T↛T"``): a task token does not read other task tokens;
    * ``"F-/->T"`` (alias ``"F↛T"``): feature tokens do not read task tokens;
    * ``"both"`` (aliases ``"F-/->T&T-/->T"``, ``"F↛T&T↛T"``): both restrictions;
    * ``"full"``: no restriction (the unmasked baseline).
    """

    n_features: int
    n_tasks: int
    mode: str = "T-/->T"

    def __post_init__(self) -> None:
        check_int(
            "task_tokens n_features", self.n_features, 0, "pass the number of feature tokens."
        )
        check_int("task_tokens n_tasks", self.n_tasks, 0, "pass the number of task tokens.")
        if self.n_features + self.n_tasks < 1:
            raise TabzooInputError(
                "task_tokens needs at least one token; pass n_features + n_tasks >= 1."
            )
        canonical = _MODE_ALIASES.get(self.mode) if isinstance(self.mode, str) else None
        if canonical is None:
            raise TabzooInputError(
                f"task_tokens mode {self.mode!r} is unknown; pass one of {TASK_MODES}."
            )
        object.__setattr__(self, "mode", canonical)

    @property
    def length(self) -> int:
        return self.n_features + self.n_tasks

    def _eval(self, q: torch.Tensor, k: torch.Tensor, n_k: int | None) -> torch.Tensor:
        out = _in_range(q, k, self.length)
        q_task, k_task = q >= self.n_features, k >= self.n_features
        if self.mode in ("T-/->T", "both"):
            out = out & ~(q_task & k_task & (q != k))
        if self.mode in ("F-/->T", "both"):
            out = out & ~(~q_task & k_task)
        return out

    def _row_counts(self, n_q: int, n_k: int) -> torch.Tensor:
        n, nf = self.length, self.n_features
        feature_row = nf if self.mode in ("F-/->T", "both") else n
        task_row = nf + 1 if self.mode in ("T-/->T", "both") else n
        return torch.where(torch.arange(n) < nf, feature_row, task_row).to(torch.int64)


def same_group(ids: IdsLike) -> Mask:
    """Position ``i`` reads ``j`` iff ``ids[i] == ids[j]``; ``ids`` has one int per position (length ``n``)."""
    return SameGroup(ids)  # type: ignore[arg-type]


def edges(src_ids: IdsLike, dst_ids: IdsLike, group_ids: IdsLike | None = None) -> Mask:
    """Directed group links: group ``src_ids[e]`` reads group ``dst_ids[e]``; see :class:`Edges`."""
    return Edges(src_ids, dst_ids, group_ids)  # type: ignore[arg-type]


def task_tokens(n_features: int, n_tasks: int, mode: str = "T-/->T") -> Mask:
    """MultiTab task-token mask over ``n_features`` features followed by ``n_tasks`` task tokens."""
    return TaskTokens(n_features, n_tasks, mode)
