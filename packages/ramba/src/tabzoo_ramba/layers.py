"""Ramba's layers: schema-gated bidirectional selective SSM and sparse structural attention.

* :class:`GatedBiSSM` (paper §4.3, App. C.3): Mamba-style block per direction (depthwise conv,
  input-dependent ``delta, B, C``), with ``delta`` multiplied by the schema gate
  ``g = sigmoid(w . GELU(W [s_curr; s_tgt]) + b)``; the recurrence runs through
  ``tabzoo.kernels.selective_scan`` (forward and ``reverse=True``), the two directions are merged
  by a linear layer. Padding has ``g = 0`` and ``x = 0``, so the state passes through it unchanged.
* :class:`StructuralAttention` (§4.4, App. C.4): softmax attention restricted to the cells of one
  row (intra-entity) or to the cells of the rows linked by a foreign key (relational, both
  directions). Two exact implementations: ``"gather"`` (default; packs each row's queries and its
  allowed keys, cost O(rows x cells x neighbour cells), linear in L) and ``"masked"`` (the same
  masks as :mod:`tabzoo.masks` objects through ``tabzoo.kernels.masked_attention``, which picks
  the block-sparse flex_attention backend where it is supported, e.g. on GPU).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from tabzoo.kernels import masked_attention, selective_scan
from torch import nn

__all__ = ["RMSNorm", "GatedBiSSM", "DenseMixer", "StructuralAttention", "row_structure"]


class RMSNorm(nn.Module):
    """RMS normalisation over the last dim with a learned gain."""

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class _Direction(nn.Module):
    def __init__(self, d_inner: int, d_state: int, d_conv: int, dt_rank: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(d_inner, d_inner, d_conv, groups=d_inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(d_inner, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, d_inner)
        a = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(d_inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(torch.ones(d_inner))
        dt = torch.exp(torch.rand(d_inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1
        self.dt_rank, self.d_state = dt_rank, d_state

    def causal_conv(self, x: torch.Tensor, reverse: bool) -> torch.Tensor:
        """The depthwise conv of ``self.conv`` along L, causal in scan order: ``x [B, L, E]`` ->
        ``[B, L, E]``; ``out[t] = bias + sum_k w[k] x[t -+ (K-1-k)]`` (``-`` forward, ``+`` reverse).

        Equal to ``conv(x.transpose(1, 2))[..., :L]`` (flipped around it for ``reverse``) up to
        float rounding, as K shifted multiply-adds on the token-major layout (no transposes, no
        flips; torch's depthwise conv1d is slow on CPU).
        """
        length, k = x.shape[1], self.conv.kernel_size[0]
        w = self.conv.weight[:, 0, :]  # [E, K]
        xp = F.pad(x, (0, 0, 0, k - 1) if reverse else (0, 0, k - 1, 0))
        out = self.conv.bias.expand_as(x)
        for i in range(k):
            start = k - 1 - i if reverse else i
            out = torch.addcmul(out, xp[:, start:start + length], w[:, i])
        return out

    def forward(self, x: torch.Tensor, gate: torch.Tensor, reverse: bool) -> torch.Tensor:
        """``x [B, L, E]`` (zero on padding), ``gate [B, L, 1]`` -> ``[B, L, E]``."""
        xc = F.silu(self.causal_conv(x, reverse)) * (gate > 0).to(x.dtype)
        dt, b, c = self.x_proj(xc).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(self.dt_proj(dt)) * gate
        return selective_scan(xc, delta, -torch.exp(self.A_log), b, c, self.D, reverse=reverse)


class GatedBiSSM(nn.Module):
    """Schema-dynamic-gated bidirectional selective SSM, ``[B, L, D] -> [B, L, D]``."""

    def __init__(self, d_model: int, d_state: int, d_conv: int, expand: int, d_text: int, d_gate: int) -> None:
        super().__init__()
        e = expand * d_model
        self.in_proj = nn.Linear(d_model, 2 * e)
        dt_rank = max(1, math.ceil(d_model / 16))
        self.fwd = _Direction(e, d_state, d_conv, dt_rank)
        self.bwd = _Direction(e, d_state, d_conv, dt_rank)
        self.gate_in = nn.Linear(2 * d_text, d_gate)
        self.gate_out = nn.Linear(d_gate, 1)
        nn.init.constant_(self.gate_out.bias, 2.0)  # gates start mostly open
        self.merge = nn.Linear(2 * e, d_model)

    def gate(self, s_curr: torch.Tensor, s_tgt: torch.Tensor) -> torch.Tensor:
        """Schema gate per column: ``s_curr [K, d_text]``, ``s_tgt [K, d_text]`` -> ``[K]`` in (0, 1)."""
        return torch.sigmoid(self.gate_out(F.gelu(self.gate_in(torch.cat([s_curr, s_tgt], -1))))).squeeze(-1)

    def forward(self, h: torch.Tensor, gate: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """``h [B, L, D]``, ``gate [B, L]`` (0 on padding), ``pad [B, L]`` -> ``[B, L, D]``."""
        x, z = self.in_proj(h).chunk(2, dim=-1)
        x = x.masked_fill(pad[..., None], 0.0)
        g = gate[..., None]
        yf = self.fwd(x, g, reverse=False)
        yb = self.bwd(x, g, reverse=True)
        sz = F.silu(z)
        return self.merge(torch.cat([yf * sz, yb * sz], dim=-1))


class DenseMixer(nn.Module):
    """Full softmax attention over every non-padding token, ``[B, L, D] -> [B, L, D]``: the dense
    (Relational-Transformer style) stand-in for :class:`GatedBiSSM`, quadratic in L. Same call
    signature; the schema gate is ignored (that model has none)."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.h = n_heads

    def forward(self, h: torch.Tensor, gate: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """``h [B, L, D]``, ``gate [B, L]`` (unused), ``pad [B, L]`` -> ``[B, L, D]``."""
        b, n, d = h.shape
        q, k, v = (t.reshape(b, n, self.h, d // self.h).transpose(1, 2) for t in self.qkv(h).chunk(3, -1))
        o = masked_attention(q, k, v, (~pad)[:, None, None, :])
        return self.out(o.transpose(1, 2).reshape(b, n, d))


def row_structure(row: torch.Tensor, edges: torch.Tensor, n_rows: int, max_rel_rows: int) -> dict[str, torch.Tensor]:
    """Index tensors of the gather path.

    :param row: ``[B, L]`` batch-global row id per token (-1 for SEP and padding).
    :param edges: ``[E, 2]`` (child row, parent row).
    :returns: ``row_tok [R, Kmax]`` flat token ids of each row's cells (-1 pad),
        ``rel_keys [R, Mmax]`` flat token ids of the cells of each row's FK neighbours (both
        directions, at most ``max_rel_rows`` neighbour rows, lowest row id first), ``pairs``, and
        per attention kind (``"intra"``, ``"rel"``) the packing of :func:`_groups`.
    """
    flat = row.reshape(-1)
    dev = flat.device
    idx = torch.nonzero(flat >= 0).squeeze(-1)
    r = flat[idx]
    order = torch.argsort(r * flat.numel() + idx)
    idx, r = idx[order], r[order]
    counts = torch.bincount(r, minlength=n_rows)
    starts = torch.cumsum(counts, 0) - counts
    kmax = int(counts.max()) if n_rows else 0
    row_tok = torch.full((n_rows, max(kmax, 1)), -1, dtype=torch.long, device=dev)
    slot_in_row = torch.arange(len(r), device=dev) - starts[r]
    row_tok[r, slot_in_row] = idx
    cells = (idx, r, slot_in_row, flat.numel())
    if edges.numel():
        pairs = torch.unique(torch.cat([edges, edges.flip(1)], 0), dim=0)  # sorted by (a, b)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    else:
        pairs = torch.zeros(0, 2, dtype=torch.long, device=dev)
    if len(pairs):
        a = pairs[:, 0]
        na = torch.bincount(a, minlength=n_rows)
        rank = torch.arange(len(a), device=dev) - (torch.cumsum(na, 0) - na)[a]
        pairs = pairs[rank < max_rel_rows]
    a, b = pairs[:, 0], pairs[:, 1]
    cnt = counts[b]
    total = int(cnt.sum())
    if total == 0:
        rel_keys = torch.full((n_rows, 1), -1, dtype=torch.long, device=dev)
        return {"row_tok": row_tok, "rel_keys": rel_keys, "pairs": pairs,
                "intra": _groups(row_tok, counts, row_tok, counts, cells), "rel": _groups(row_tok, counts, rel_keys,
                                                                                          counts * 0, cells)}
    pid = torch.repeat_interleave(torch.arange(len(a), device=dev), cnt)
    within = torch.arange(total, device=dev) - (torch.cumsum(cnt, 0) - cnt)[pid]
    key_tok = row_tok[b[pid], within]
    owner = a[pid]
    oc = torch.bincount(owner, minlength=n_rows)
    slot = torch.arange(total, device=dev) - (torch.cumsum(oc, 0) - oc)[owner]
    rel_keys = torch.full((n_rows, int(oc.max())), -1, dtype=torch.long, device=dev)
    rel_keys[owner, slot] = key_tok
    return {"row_tok": row_tok, "rel_keys": rel_keys, "pairs": pairs,
            "intra": _groups(row_tok, counts, row_tok, counts, cells), "rel": _groups(row_tok, counts, rel_keys, oc, cells)}


def _groups(row_tok: torch.Tensor, n_q: torch.Tensor, keys: torch.Tensor, n_k: torch.Tensor,
            cells: tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]) -> dict[str, Any]:
    """Rows packed by size class, so attention is not padded to the largest row everywhere.

    Rows with at least one key are grouped by (next power of two >= 4 of their query count, of
    their key count); group ``g`` has ``q_tok [R_g, Q_g]`` and ``k_tok [R_g, K_g]`` (-1 pad).
    ``tok_slot [B*L]`` is each token's position in the groups' outputs concatenated
    (``[sum R_g Q_g]``), or that total (a zero row) for SEP, padding and rows without keys.
    """
    idx, r, slot_in_row, n_tok = cells
    dev = row_tok.device

    def size_class(n: torch.Tensor) -> torch.Tensor:
        return torch.exp2(torch.ceil(torch.log2(n.clamp(min=4).double()))).long()

    cq, ck = size_class(n_q), size_class(n_k)
    has = n_k > 0
    label = torch.where(has, cq * (int(ck.max()) + 1) + ck, -1) if len(n_k) else n_k
    base = torch.zeros(len(n_k), dtype=torch.long, device=dev)
    groups, total = [], 0
    for lab in torch.unique(label[has]).tolist():
        rows = torch.nonzero(label == lab).squeeze(-1)
        q_w, k_w = min(int(cq[rows[0]]), row_tok.shape[1]), min(int(ck[rows[0]]), keys.shape[1])
        groups.append((row_tok[rows, :q_w], keys[rows, :k_w]))
        base[rows] = total + torch.arange(len(rows), device=dev) * q_w
        total += len(rows) * q_w
    tok_slot = torch.full((n_tok,), total, dtype=torch.long, device=dev)
    keep = has[r]
    tok_slot[idx[keep]] = base[r[keep]] + slot_in_row[keep]
    return {"groups": groups, "tok_slot": tok_slot}


class StructuralAttention(nn.Module):
    """Multi-head attention under the intra-entity or relational mask (pre-norm outside)."""

    def __init__(self, d_model: int, n_heads: int, kind: str) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} must be divisible by n_heads {n_heads}")
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.h, self.kind = n_heads, kind

    def forward(self, x: torch.Tensor, struct: dict[str, Any], impl: str = "gather") -> torch.Tensor:
        """``x [B, L, D]`` -> ``[B, L, D]``; SEP and padding tokens get 0 (before ``out``'s bias)."""
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        o = self._masked(q, k, v, struct) if impl == "masked" else self._gather(q, k, v, struct)
        return self.out(o)

    def _gather(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, struct: dict[str, Any]) -> torch.Tensor:
        """Each row's queries against its allowed keys, packed per size group ``[R_g, H, Q_g, dh]``
        by index_select, put back in token order by one gather (``tok_slot``); SEP, padding and
        rows without keys get 0."""
        bsz, length, d = q.shape
        dh = d // self.h
        pack = struct[self.kind]

        def pick(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:  # [R_g, W] -> [R_g, H, W, dh]
            flat = t.reshape(bsz * length, self.h, dh).index_select(0, idx.clamp(min=0).reshape(-1))
            return flat.view(idx.shape[0], idx.shape[1], self.h, dh).transpose(1, 2)

        outs = []
        for q_tok, k_tok in pack["groups"]:
            oo = masked_attention(pick(q, q_tok), pick(k, k_tok), pick(v, k_tok), (k_tok >= 0)[:, None, None, :])
            outs.append(oo.transpose(1, 2).reshape(-1, d))
        outs.append(q.new_zeros(1, d))
        return torch.cat(outs).index_select(0, pack["tok_slot"]).view(bsz, length, d)

    def _masked(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, struct: dict[str, Any]) -> torch.Tensor:
        from tabzoo.masks import edges as edge_mask
        from tabzoo.masks import same_group

        bsz, length, d = q.shape
        dh = d // self.h
        outs = []
        for i in range(bsz):
            ids = struct["row"][i].clone()
            cell = ids >= 0
            ids[~cell] = -1 - torch.arange(length, device=ids.device)[~cell]  # SEP / pad: own group
            if self.kind == "intra":
                mask = same_group(ids)
            else:
                e = struct["pairs"]  # both directions, already capped
                mask = edge_mask(e[:, 0], e[:, 1], group_ids=ids)
            qi, ki, vi = (t[i].reshape(length, self.h, dh).transpose(0, 1)[None] for t in (q, k, v))
            oi = masked_attention(qi, ki, vi, mask)[0].transpose(0, 1).reshape(length, d)
            outs.append(oi * cell[:, None].to(oi.dtype))
        return torch.stack(outs)
