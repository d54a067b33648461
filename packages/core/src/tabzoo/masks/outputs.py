"""Dense, block and counting outputs of a mask, all derived from ``Mask.allowed``.

Sizes are validated by the calling :class:`~tabzoo.masks.Mask` method; the helpers here
only compute. Large problems are processed in query chunks of at most :data:`CHUNK_ELEMENTS`
mask entries, so ``block_layout`` and ``nnz`` never hold the full ``n_q x n_k`` matrix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from tabzoo.errors import TabzooInputError

if TYPE_CHECKING:
    from torch.nn.attention.flex_attention import BlockMask

    from tabzoo.masks.base import Mask

#: Upper bound on the number of mask entries evaluated at once by chunked outputs.
CHUNK_ELEMENTS = 1 << 22


def check_block(block: int) -> int:
    """Validate a block size (positive int)."""
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise TabzooInputError(f"block must be a positive int (e.g. 128), got {block!r}.")
    return block


def _dense(
    mask: Mask, q_start: int, q_stop: int, n_k: int, device: torch.device | str | None
) -> torch.Tensor:
    """Rows ``[q_start, q_stop)`` of the mask, ``BoolTensor [q_stop - q_start, n_k]``."""
    q = torch.arange(q_start, q_stop, dtype=torch.int64, device=device)[:, None]
    k = torch.arange(n_k, dtype=torch.int64, device=device)[None, :]
    out = mask._eval(q, k, n_k)
    return torch.broadcast_to(out, (q_stop - q_start, n_k)).to(torch.bool).contiguous()


def materialize(mask: Mask, n_q: int, n_k: int, device: torch.device | str | None) -> torch.Tensor:
    """``BoolTensor [n_q, n_k]``; ``out[i, j]`` = query ``i`` may read key ``j``."""
    return _dense(mask, 0, n_q, n_k, device)


def _row_chunks(n_q: int, n_k: int, multiple: int = 1) -> list[tuple[int, int]]:
    """Split ``[0, n_q)`` into ranges of whole ``multiple``-row groups within the chunk budget."""
    rows = max(1, CHUNK_ELEMENTS // max(n_k, 1) // multiple) * multiple
    return [(start, min(start + rows, n_q)) for start in range(0, n_q, rows)]


def sparse_row_counts(mask: Mask, terms: tuple[Mask, ...], n_q: int, n_k: int) -> torch.Tensor | None:
    """Allowed keys per query row of ``mask`` (the union of ``terms``), ``LongTensor [n_q]``, from
    the terms' candidate keys (each a superset of what a row may read): the first
    ``max(_dense_rows)`` rows are evaluated densely, every other row only on its candidates, each
    distinct key once. ``None`` when a term gives no candidates."""
    dense = min(max(t._dense_rows() for t in terms), n_q)
    counts = torch.zeros(n_q, dtype=torch.int64)
    if dense < n_q:
        probe = [t._candidates(torch.arange(dense, dense + 1, dtype=torch.int64), n_k) for t in terms]
        if any(p is None for p in probe):
            return None
        width = max(1, sum(int(p.shape[1]) for p in probe if p is not None))
        for a, b in _row_chunks(n_q - dense, width):
            q = torch.arange(dense + a, dense + b, dtype=torch.int64)
            keys = torch.cat([t._candidates(q, n_k) for t in terms], dim=1)  # type: ignore[misc]
            valid = (keys >= 0) & (keys < n_k)
            keys = torch.where(valid, keys, torch.full_like(keys, -1))
            ordered = keys.sort(dim=1).values
            first = torch.ones_like(ordered, dtype=torch.bool)
            first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
            allowed = mask._eval(q[:, None], ordered.clamp(min=0), n_k) & first & (ordered >= 0)
            counts[dense + a:dense + b] = allowed.sum(dim=1)
    for a, b in _row_chunks(dense, n_k):
        counts[a:b] = _dense(mask, a, b, n_k, None).sum(dim=1)
    return counts


def chunked_nnz(mask: Mask, n_q: int, n_k: int) -> int:
    """Count allowed entries chunk by chunk over query rows."""
    return sum(int(_dense(mask, a, b, n_k, None).sum()) for a, b in _row_chunks(n_q, n_k))


def block_layout(mask: Mask, n_q: int, n_k: int, block: int) -> torch.Tensor:
    """``LongTensor [n_blocks, 2]`` of ``(q_block, k_block)`` holding any allowed entry.

    Blocks are ``block x block`` tiles starting at position 0; the last row/column of tiles
    may be partial. Pairs are sorted by ``q_block`` then ``k_block``.
    """
    n_kb = -(-n_k // block)
    parts: list[torch.Tensor] = []
    for a, b in _row_chunks(n_q, n_kb * block, multiple=block):
        dense = _dense(mask, a, b, n_k, None)
        rows_pad = -(-(b - a) // block) * block - (b - a)
        dense = torch.nn.functional.pad(dense, (0, n_kb * block - n_k, 0, rows_pad))
        tiles = dense.view(-1, block, n_kb, block).any(dim=3).any(dim=1)
        pairs = tiles.nonzero()
        pairs[:, 0] += a // block
        parts.append(pairs)
    if not parts:
        return torch.zeros((0, 2), dtype=torch.int64)
    return torch.cat(parts).to(torch.int64)


def block_mask(mask: Mask, n_q: int, n_k: int, block: int, device: torch.device | str) -> BlockMask:
    """A flex_attention ``BlockMask`` for ``[n_q, n_k]`` with ``B=None, H=None``."""
    from torch.nn.attention.flex_attention import create_block_mask

    return create_block_mask(
        mask.mask_mod(n_q, n_k), None, None, n_q, n_k, device=device, BLOCK_SIZE=block
    )
