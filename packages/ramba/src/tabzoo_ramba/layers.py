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
        """``x * rsqrt(mean(x^2) + eps) * weight`` as one op (torch's ``rms_norm``: the same
        numbers, bitwise on CPU; one launch instead of five on a GPU)."""
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)


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

    def forward(self, x: torch.Tensor, gate: torch.Tensor, reverse: bool, open_: torch.Tensor | None = None) -> torch.Tensor:
        """``x [B, L, E]`` (zero on padding), ``gate [B, L, 1]``, ``open_`` = ``(gate > 0)`` as
        ``x``'s dtype (computed here when not given) -> ``[B, L, E]``."""
        xc = F.silu(self.causal_conv(x, reverse)) * ((gate > 0).to(x.dtype) if open_ is None else open_)
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
        open_ = (g > 0).to(x.dtype)  # once for both directions
        yf = self.fwd(x, g, False, open_)
        yb = self.bwd(x, g, True, open_)
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


def row_structure(row: torch.Tensor, edges: torch.Tensor, n_rows: int, max_rel_rows: int) -> dict[str, Any]:
    """Index tensors of the gather path, built once per batch (every block and both attentions
    reuse them; nothing in the blocks reads a tensor back to the host).

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
    slot_in_row = torch.arange(len(r), device=dev) - starts[r]
    if edges.numel():
        pairs = torch.unique(torch.cat([edges, edges.flip(1)], 0), dim=0)  # sorted by (a, b)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    else:
        pairs = torch.zeros(0, 2, dtype=torch.long, device=dev)
    a = pairs[:, 0]
    na = torch.bincount(a, minlength=n_rows)
    rank = torch.arange(len(a), device=dev) - (torch.cumsum(na, 0) - na)[a]
    pairs = pairs[rank < max_rel_rows]
    a, b = pairs[:, 0], pairs[:, 1]
    cnt = counts[b]
    pid = torch.repeat_interleave(torch.arange(len(a), device=dev), cnt)
    owner = a[pid]
    oc = torch.bincount(owner, minlength=n_rows)
    # one host read for every width below
    kmax, total, mmax = (int(v) for v in torch.stack([counts.max() if n_rows else counts.new_zeros(()),
                                                      cnt.sum(), oc.max() if n_rows else oc.new_zeros(())]).tolist())
    row_tok = torch.full((n_rows, max(kmax, 1)), -1, dtype=torch.long, device=dev)
    row_tok[r, slot_in_row] = idx
    rel_keys = torch.full((n_rows, max(mmax, 1)), -1, dtype=torch.long, device=dev)
    if total:
        within = torch.arange(total, device=dev) - (torch.cumsum(cnt, 0) - cnt)[pid]
        slot = torch.arange(total, device=dev) - (torch.cumsum(oc, 0) - oc)[owner]
        rel_keys[owner, slot] = row_tok[b[pid], within]
    cells = (idx, r, slot_in_row, flat.numel())
    return {"row_tok": row_tok, "rel_keys": rel_keys, "pairs": pairs,
            "intra": _groups(row_tok, counts, row_tok, counts, cells, exact_keys=True),
            "rel": _groups(row_tok, counts, rel_keys, oc, cells, exact_keys=False)}


def _size_class(n: torch.Tensor) -> torch.Tensor:
    """The next power of two >= max(n, 4), elementwise (integer arithmetic)."""
    m = n.clamp(min=4) - 1
    for shift in (1, 2, 4, 8, 16, 32):
        m = m | (m >> shift)
    return m + 1


def _groups(row_tok: torch.Tensor, n_q: torch.Tensor, keys: torch.Tensor, n_k: torch.Tensor,
            cells: tuple[torch.Tensor, torch.Tensor, torch.Tensor, int], exact_keys: bool) -> dict[str, Any]:
    """Rows packed by size, so attention is neither padded to the largest row nor looped per row.

    Rows with at least one key are grouped by (their query count, their key count when
    ``exact_keys`` else its next power of two >= 4). Group ``g`` is ``(q_idx [R_g Q_g], k_idx
    [R_g K_g], (R_g, Q_g, K_g), mask)``: flat token ids (padding slots point at token 0) and a
    key mask ``[R_g, 1, 1, K_g]``, or None when no row of the group has a padded key (so the
    attention runs unmasked). ``tok_slot [B*L]`` is each token's position in the groups' outputs
    concatenated (``[sum R_g Q_g]``), or that total (a zero row) for SEP, padding and rows
    without keys. All widths are read to the host in one transfer.
    """
    idx, r, slot_in_row, n_tok = cells
    dev = row_tok.device
    n_rows = len(n_k)
    has = n_k > 0
    ck = n_k if exact_keys else torch.minimum(_size_class(n_k), n_k.new_tensor(keys.shape[1]))
    label = torch.where(has, n_q * (keys.shape[1] + 1) + ck, -1)
    rows = torch.argsort(label, stable=True)
    rows = rows[(label[rows] >= 0)]
    lab, size = torch.unique_consecutive(label[rows], return_counts=True)
    # per group: does some row have fewer keys than the group's width? (one reduction, no loop)
    gid = torch.repeat_interleave(torch.arange(len(lab), device=dev), size)
    short = torch.zeros(len(lab), dtype=torch.long, device=dev).index_add_(0, gid, (n_k[rows] < ck[rows]).long())
    lab_l, size_l, short_l = torch.stack([lab, size, short]).tolist() if len(lab) else ([], [], [])
    base = torch.zeros(n_rows, dtype=torch.long, device=dev)
    groups, total, first = [], 0, 0
    for lb, rg, sh in zip(lab_l, size_l, short_l, strict=True):
        q_w, k_w = divmod(lb, keys.shape[1] + 1)
        sel = rows[first:first + rg]
        first += rg
        q_tok, k_tok = row_tok[sel, :q_w], keys[sel, :k_w]
        mask = (k_tok >= 0)[:, None, None, :] if sh else None
        q_idx = q_tok.clamp(min=0).reshape(-1)
        k_idx = q_idx if exact_keys and keys is row_tok else k_tok.clamp(min=0).reshape(-1)
        groups.append((q_idx, k_idx, (rg, q_w, k_w), mask))
        base[sel] = total + torch.arange(rg, device=dev) * q_w
        total += rg * q_w
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
        qkv = self.qkv(x)
        if impl == "masked":
            q, k, v = qkv.chunk(3, dim=-1)
            return self.out(self._masked(q, k, v, struct))
        return self.out(self._gather(qkv, struct))

    def _gather(self, qkv: torch.Tensor, struct: dict[str, Any]) -> torch.Tensor:
        """Each row's queries against its allowed keys, packed per size group ``[R_g, H, Q_g, dh]``
        by index_select (one for q, k and v together where queries and keys are the same tokens),
        put back in token order by one gather (``tok_slot``); SEP, padding and rows without keys
        get 0. ``qkv [B, L, 3D]`` -> ``[B, L, D]``."""
        bsz, length, d3 = qkv.shape
        d = d3 // 3
        dh = d // self.h
        flat = qkv.reshape(bsz * length, 3, self.h, dh)

        def heads(t: torch.Tensor, rows: int, width: int) -> torch.Tensor:  # [R_g W, H, dh] -> [R_g, H, W, dh]
            return t.view(rows, width, self.h, dh).transpose(1, 2)

        outs = []
        for q_idx, k_idx, (rows, q_w, k_w), mask in struct[self.kind]["groups"]:
            qs = flat.index_select(0, q_idx)
            ks = qs if k_idx is q_idx else flat.index_select(0, k_idx)
            oo = masked_attention(heads(qs[:, 0], rows, q_w), heads(ks[:, 1], rows, k_w), heads(ks[:, 2], rows, k_w),
                                  mask)
            outs.append(oo.transpose(1, 2).reshape(-1, d))
        outs.append(qkv.new_zeros(1, d))
        return torch.cat(outs).index_select(0, struct[self.kind]["tok_slot"]).view(bsz, length, d)

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
