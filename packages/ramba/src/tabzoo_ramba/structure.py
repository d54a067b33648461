"""The index tensors of Ramba's gather path and schema gate, built on the host (numpy).

:func:`host_structure` runs in collation (:func:`tabzoo_ramba.serialize.collate`, i.e. in the data
loader), so the model's forward builds no index and reads nothing back to the host: the
structure arrives in the batch, moved to the device in one transfer per dtype
(:func:`to_device`). :func:`row_structure` is the same from tensors, for a batch collated without
it (or with another ``max_rel_rows``); the forward then pays one device-to-host read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["gate_index", "host_structure", "row_structure", "to_device"]


def _size_class(n: np.ndarray) -> np.ndarray:
    """The next power of two >= max(n, 4), elementwise (integer arithmetic)."""
    m = np.maximum(n, 4) - 1
    for shift in (1, 2, 4, 8, 16, 32):
        m = m | (m >> shift)
    return m + 1


def _pairs(edges: np.ndarray, n_rows: int, max_rel_rows: int) -> np.ndarray:
    """Distinct (row, neighbour) pairs ``[P, 2]`` over both directions of ``edges``, self pairs
    dropped, sorted by (row, neighbour), at most ``max_rel_rows`` per row (lowest ids first)."""
    if not edges.size:
        return np.zeros((0, 2), dtype=np.int64)
    both = np.concatenate([edges, edges[:, ::-1]]).astype(np.int64)
    code = np.unique(both[:, 0] * max(n_rows, 1) + both[:, 1])
    pairs = np.stack([code // max(n_rows, 1), code % max(n_rows, 1)], 1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    a = pairs[:, 0]
    na = np.bincount(a, minlength=n_rows)
    rank = np.arange(len(a)) - (np.cumsum(na) - na)[a]
    return pairs[rank < max_rel_rows]


def _groups(row_tok: np.ndarray, n_q: np.ndarray, keys: np.ndarray, n_k: np.ndarray,
            cells: tuple[np.ndarray, np.ndarray, np.ndarray, int], exact_keys: bool) -> dict[str, Any]:
    """Rows packed by size, so attention is neither padded to the largest row nor looped per row.

    Rows with at least one key are grouped by (their query count, their key count when
    ``exact_keys`` else its next power of two >= 4). Group ``g`` is ``(q_idx [R_g Q_g], k_idx
    [R_g K_g], (R_g, Q_g, K_g), mask)``: flat token ids (padding slots point at token 0) and a
    key mask ``[R_g, 1, 1, K_g]``, or None when no row of the group has a padded key (so the
    attention runs unmasked); ``k_idx is q_idx`` for intra-row groups. ``tok_slot [B*L]`` is
    each token's position in the groups' outputs concatenated (``[sum R_g Q_g]``), or that total
    (a zero row) for SEP, padding and rows without keys.
    """
    idx, r, slot_in_row, n_tok = cells
    width = keys.shape[1]
    has = n_k > 0
    ck = n_k if exact_keys else np.minimum(_size_class(n_k), width)
    label = np.where(has, n_q * (width + 1) + ck, -1)
    rows = np.argsort(label, kind="stable")
    rows = rows[label[rows] >= 0]
    lab, size = np.unique(label[rows], return_counts=True)
    base = np.zeros(len(n_k), dtype=np.int64)
    groups, total, first = [], 0, 0
    for lb, rg in zip(lab.tolist(), size.tolist(), strict=True):
        q_w, k_w = divmod(lb, width + 1)
        sel = rows[first:first + rg]
        first += rg
        k_tok = keys[sel, :k_w]
        q_idx = np.maximum(row_tok[sel, :q_w], 0).reshape(-1)
        short = bool((n_k[sel] < ck[sel]).any())
        k_idx = q_idx if exact_keys else np.maximum(k_tok, 0).reshape(-1)
        groups.append((q_idx, k_idx, (rg, q_w, k_w), (k_tok >= 0)[:, None, None, :] if short else None))
        base[sel] = total + np.arange(rg) * q_w
        total += rg * q_w
    tok_slot = np.full(n_tok, total, dtype=np.int64)
    keep = has[r]
    tok_slot[idx[keep]] = base[r[keep]] + slot_in_row[keep]
    return {"groups": groups, "tok_slot": tok_slot}


def host_structure(row: np.ndarray, edges: np.ndarray, n_rows: int, max_rel_rows: int) -> dict[str, Any]:
    """Index arrays of the gather path (numpy; every block and both attentions reuse them).

    :param row: ``[B, L]`` batch-global row id per token (-1 for SEP and padding).
    :param edges: ``[E, 2]`` (child row, parent row).
    :returns: ``row_tok [R, Kmax]`` flat token ids of each row's cells (-1 pad), ``rel_keys
        [R, Mmax]`` flat token ids of the cells of each row's FK neighbours (both directions, at
        most ``max_rel_rows`` neighbour rows, lowest row id first), ``pairs [P, 2]``, per attention
        kind (``"intra"``, ``"rel"``) the packing of :func:`_groups`, and ``max_rel_rows``.
    """
    flat = np.asarray(row, dtype=np.int64).reshape(-1)
    idx = np.flatnonzero(flat >= 0)
    r = flat[idx]
    order = np.argsort(r, kind="stable")  # idx ascending, so ties keep token order
    idx, r = idx[order], r[order]
    counts = np.bincount(r, minlength=n_rows)
    starts = np.cumsum(counts) - counts
    slot_in_row = np.arange(len(r)) - starts[r]
    pairs = _pairs(np.asarray(edges, dtype=np.int64).reshape(-1, 2), n_rows, max_rel_rows)
    a, b = pairs[:, 0], pairs[:, 1]
    cnt = counts[b]
    pid = np.repeat(np.arange(len(a)), cnt)
    owner = a[pid]
    oc = np.bincount(owner, minlength=n_rows)
    kmax = int(counts.max()) if n_rows else 0
    mmax = int(oc.max()) if n_rows else 0
    row_tok = np.full((n_rows, max(kmax, 1)), -1, dtype=np.int64)
    row_tok[r, slot_in_row] = idx
    rel_keys = np.full((n_rows, max(mmax, 1)), -1, dtype=np.int64)
    if len(pid):
        within = np.arange(len(pid)) - (np.cumsum(cnt) - cnt)[pid]
        slot = np.arange(len(pid)) - (np.cumsum(oc) - oc)[owner]
        rel_keys[owner, slot] = row_tok[b[pid], within]
    cells = (idx, r, slot_in_row, flat.size)
    return {"row_tok": row_tok, "rel_keys": rel_keys, "pairs": pairs, "max_rel_rows": int(max_rel_rows),
            "intra": _groups(row_tok, counts, row_tok, counts, cells, exact_keys=True),
            "rel": _groups(row_tok, counts, rel_keys, oc, cells, exact_keys=False)}


def gate_index(col: np.ndarray, target_col: np.ndarray, n_schema: int) -> dict[str, np.ndarray]:
    """The distinct (current column, target column) pairs of a batch: ``curr [P]``, ``tgt [P]``
    (indices into the schema embeddings, sorted by ``curr * n + tgt``) and ``inv [B, L]`` (each
    token's pair). Without a target column (pretraining) a column is its own target."""
    col = np.asarray(col, dtype=np.int64)
    tgt = np.asarray(target_col, dtype=np.int64)[:, None]
    n = max(1, n_schema)
    tgt_tok = np.where(tgt >= 0, np.broadcast_to(tgt, col.shape), col)
    uniq, inv = np.unique(col * n + tgt_tok, return_inverse=True)
    return {"curr": uniq // n, "tgt": uniq % n, "inv": inv.reshape(col.shape)}


def to_device(tree: Any, device: torch.device | str = "cpu") -> Any:
    """``tree`` (dicts, lists, tuples of numpy arrays and plain values) with every array a tensor
    on ``device``. Arrays of one dtype are packed into one buffer, so each dtype costs one
    host-to-device transfer; the tensors are views of it. An array that appears twice (``k_idx is
    q_idx``) gives one tensor, twice."""
    arrays: dict[int, np.ndarray] = {}

    def collect(node: Any) -> None:
        if isinstance(node, np.ndarray):
            arrays.setdefault(id(node), node)
        elif isinstance(node, dict):
            for v in node.values():
                collect(v)
        elif isinstance(node, (list, tuple)):
            for v in node:
                collect(v)

    collect(tree)
    views: dict[int, torch.Tensor] = {}
    by_dtype: dict[np.dtype[Any], list[np.ndarray]] = {}
    for arr in arrays.values():
        by_dtype.setdefault(arr.dtype, []).append(arr)
    for arrs in by_dtype.values():
        buf = torch.from_numpy(np.concatenate([a.reshape(-1) for a in arrs]) if arrs else np.zeros(0))
        buf = buf.to(device)
        start = 0
        for a in arrs:
            views[id(a)] = buf[start:start + a.size].view(a.shape)
            start += a.size

    def build(node: Any) -> Any:
        if isinstance(node, np.ndarray):
            return views[id(node)]
        if isinstance(node, dict):
            return {k: build(v) for k, v in node.items()}
        if isinstance(node, list):
            return [build(v) for v in node]
        if isinstance(node, tuple):
            return tuple(build(v) for v in node)
        return node

    return build(tree)


def row_structure(row: torch.Tensor, edges: torch.Tensor, n_rows: int, max_rel_rows: int) -> dict[str, Any]:
    """:func:`host_structure` of tensors, returned on ``row``'s device (one host read of ``row``
    and ``edges``), with ``row`` itself under ``"row"`` (the masked path reads it)."""
    st = host_structure(row.detach().cpu().numpy(), edges.detach().cpu().numpy(), int(n_rows), max_rel_rows)
    out: dict[str, Any] = to_device(st, row.device)
    out["row"] = row
    return out
