"""Triton block-sparse ``masked_attention`` over a :mod:`tabzoo.masks` block layout.

Only the ``block x block`` tiles of the mask's :meth:`~tabzoo.masks.Mask.block_layout` that hold
an allowed entry are computed. Tiles are *full* (every in-range entry allowed: no mask is read)
or *partial* (their ``block x block`` bits are stored once and read by the kernel). Forward is a
FlashAttention-style online softmax in fp32 (``exp2``, running max and sum); backward recomputes
the probabilities from the saved log-sum-exp: one kernel walks each query block's tiles (dq), one
walks each key block's tiles through the transposed layout (dk, dv), so nothing is atomic.

A query row with no allowed key gets 0 (and zero gradients), as every backend of the op does.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from tabzoo.kernels.triton._common import block_dim, dot_precision, upcast_dots

LOG2E = 1.0 / math.log(2.0)


@dataclass(frozen=True)
class Layout:
    """Nonzero tiles of a mask, by query block (CSR) and by key block (CSC).

    ``row_ptr [n_qb + 1]``, ``row_cols [nnz]``, ``row_tile [nnz]`` (index into ``tiles`` or -1
    for a full tile); ``col_ptr [n_kb + 1]``, ``col_rows [nnz]``, ``col_tile [nnz]``;
    ``tiles [n_partial, block, block]`` int8.
    """

    block: int
    row_ptr: torch.Tensor
    row_cols: torch.Tensor
    row_tile: torch.Tensor
    col_ptr: torch.Tensor
    col_rows: torch.Tensor
    col_tile: torch.Tensor
    tiles: torch.Tensor

    @property
    def nnz(self) -> int:
        return int(self.row_cols.numel())


def _tiles_of(mask: Any, pairs: torch.Tensor, nq: int, nk: int, block: int) -> torch.Tensor:
    """``[len(pairs), block, block]`` bool contents of the tiles ``pairs`` (out-of-range = False)."""
    ar = torch.arange(block)
    qi = pairs[:, 0, None, None] * block + ar[None, :, None]
    ki = pairs[:, 1, None, None] * block + ar[None, None, :]
    inside = (qi < nq) & (ki < nk)
    if isinstance(mask, torch.Tensor):
        dense = mask.reshape(mask.shape[-2], mask.shape[-1]).to("cpu", torch.bool)
        vals = dense[qi.clamp(max=nq - 1), ki.clamp(max=nk - 1)]
    else:
        vals = mask._eval(qi.clamp(max=nq - 1), ki.clamp(max=nk - 1), nk)
    return torch.broadcast_to(vals, inside.shape) & inside


def build_layout(mask: Any, nq: int, nk: int, block: int, device: torch.device) -> Layout:
    """The :class:`Layout` of ``mask`` (a Mask, a 2-d-like bool tensor or None) for ``[nq, nk]``."""
    nqb, nkb = -(-nq // block), -(-nk // block)
    if mask is None:
        qb, kb = torch.meshgrid(torch.arange(nqb), torch.arange(nkb), indexing="ij")
        pairs = torch.stack([qb.reshape(-1), kb.reshape(-1)], dim=1)
    elif isinstance(mask, torch.Tensor):
        dense = mask.reshape(mask.shape[-2], mask.shape[-1]).to("cpu", torch.bool)
        pad = torch.nn.functional.pad(dense, (0, nkb * block - nk, 0, nqb * block - nq))
        pairs = pad.view(nqb, block, nkb, block).any(dim=3).any(dim=1).nonzero()
    else:
        pairs = mask.block_layout(nq, nk, block=block).to("cpu")
    tiles_bits: list[torch.Tensor] = []
    tile_idx = torch.full((pairs.shape[0],), -1, dtype=torch.int32)
    if mask is not None and pairs.shape[0]:
        n_partial = 0
        step = max(1, (1 << 22) // (block * block))
        for s in range(0, pairs.shape[0], step):  # bounded memory per step
            part = pairs[s:s + step]
            bits = _tiles_of(mask, part, nq, nk, block)
            qi = part[:, 0, None, None] * block + torch.arange(block)[None, :, None]
            ki = part[:, 1, None, None] * block + torch.arange(block)[None, None, :]
            inside = (qi < nq) & (ki < nk)
            partial = (bits != inside).flatten(1).any(dim=1)
            idx = partial.nonzero().flatten()
            tile_idx[s + idx] = torch.arange(n_partial, n_partial + idx.numel(), dtype=torch.int32)
            n_partial += idx.numel()
            tiles_bits.append(bits[idx].to(torch.int8))
    tiles = torch.cat(tiles_bits) if tiles_bits else torch.zeros(0, block, block, dtype=torch.int8)
    order = torch.argsort(pairs[:, 0] * nkb + pairs[:, 1]) if pairs.shape[0] else torch.zeros(0, dtype=torch.long)
    rp = pairs[order]
    row_ptr = torch.zeros(nqb + 1, dtype=torch.int32)
    row_ptr[1:] = torch.cumsum(torch.bincount(rp[:, 0], minlength=nqb), 0)
    corder = torch.argsort(pairs[:, 1] * nqb + pairs[:, 0]) if pairs.shape[0] else order
    cp = pairs[corder]
    col_ptr = torch.zeros(nkb + 1, dtype=torch.int32)
    col_ptr[1:] = torch.cumsum(torch.bincount(cp[:, 1], minlength=nkb), 0)

    def dev(t: torch.Tensor) -> torch.Tensor:
        return t.to(device=device).contiguous()

    return Layout(block, dev(row_ptr), dev(rp[:, 1].to(torch.int32)), dev(tile_idx[order]),
                  dev(col_ptr), dev(cp[:, 0].to(torch.int32)), dev(tile_idx[corder]),
                  dev(tiles if tiles.numel() else torch.zeros(1, block, block, dtype=torch.int8)))


_LAYOUTS: OrderedDict[tuple[Any, ...], Layout] = OrderedDict()


def layout_for(mask: Any, nq: int, nk: int, block: int, device: torch.device) -> Layout:
    """:func:`build_layout`, cached for Mask objects (by structure) and None."""
    if isinstance(mask, torch.Tensor):
        return build_layout(mask, nq, nk, block, device)
    key = (mask, nq, nk, block, str(device))
    hit = _LAYOUTS.get(key)
    if hit is None:
        hit = _LAYOUTS[key] = build_layout(mask, nq, nk, block, device)
        if len(_LAYOUTS) > 32:
            _LAYOUTS.popitem(last=False)
    return hit


@triton.jit
def _program_head(H):
    """``(bh, b, h)``: this program's flattened (batch, head) index (grid axis 1) and its parts."""
    bh = tl.program_id(1)
    return bh, bh // H, bh % H


@triton.jit
def _own_block(N, BLOCK: tl.constexpr, BD: tl.constexpr):
    """``(blk, idx, ar, dd, valid)``: this program's block of query or key rows (grid axis 0), the
    rows ``idx``, ``arange(BLOCK)``, ``arange(BD)`` and the rows' in-range mask."""
    blk = tl.program_id(0)
    ar = tl.arange(0, BLOCK)
    idx = blk * BLOCK + ar
    return blk, idx, ar, tl.arange(0, BD), idx < N


@triton.jit
def _load_tile(ptr, b, h, idx, dd, sb, sh, sn, sd, valid, DH: tl.constexpr, UP: tl.constexpr):
    """The ``[BLOCK, BD]`` tile of rows ``idx`` of head ``(b, h)`` of a strided ``[B, H, N, DH]``
    tensor (0 outside the ``valid`` rows and the DH columns); fp32 if ``UP`` (the interpreter's 16-bit
    ``tl.dot`` is wrong in triton 3.9)."""
    t = tl.load(ptr + b * sb + h * sh + idx[:, None] * sn + dd[None, :] * sd,
                mask=valid[:, None] & (dd[None, :] < DH), other=0.0)
    if UP:
        t = t.to(tl.float32)
    return t


@triton.jit
def _tile_bits(tiles_ptr, ti, ar, BLOCK: tl.constexpr):
    """The ``[BLOCK, BLOCK]`` allowed-bits of partial tile ``ti``; all 1 for a full tile (``ti`` -1)."""
    return tl.load(tiles_ptr + ti * BLOCK * BLOCK + ar[:, None] * BLOCK + ar[None, :],
                   mask=(ar[:, None] * 0 + ti) >= 0, other=1)


@triton.jit
def _key_tile(i, q, b, h, ar, dd, k_ptr, v_ptr, cols_ptr, tid_ptr, tiles_ptr, NK, qk_scale,
              skb, skh, skn, skd, svb, svh, svn, svd,
              DH: tl.constexpr, BLOCK: tl.constexpr, PREC: tl.constexpr, UP: tl.constexpr):
    """Entry ``i`` of a query block's nonzero tiles (CSR): its keys and values ``[BLOCK, BD]``, the
    scores ``q k^T * qk_scale`` (log2 units) ``[BLOCK, BLOCK]`` and which of them are allowed."""
    kb = tl.load(cols_ptr + i)
    ti = tl.load(tid_ptr + i)
    cols = kb * BLOCK + ar
    cm = cols < NK
    k = _load_tile(k_ptr, b, h, cols, dd, skb, skh, skn, skd, cm, DH, UP)
    v = _load_tile(v_ptr, b, h, cols, dd, svb, svh, svn, svd, cm, DH, UP)
    s = tl.dot(q, tl.trans(k), input_precision=PREC) * qk_scale
    allowed = (_tile_bits(tiles_ptr, ti, ar, BLOCK) != 0) & cm[None, :]
    return k, v, s, allowed


@triton.jit
def _fwd(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, rp_ptr, cols_ptr, tid_ptr, tiles_ptr, NQ, NK, H, qk_scale,
         sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, son, sod,
         DH: tl.constexpr, BD: tl.constexpr, BLOCK: tl.constexpr, PREC: tl.constexpr, UP: tl.constexpr):
    qb, rows, ar, dd, rm = _own_block(NQ, BLOCK, BD)
    bh, b, h = _program_head(H)
    q = _load_tile(q_ptr, b, h, rows, dd, sqb, sqh, sqn, sqd, rm, DH, UP)
    m_i = tl.full((BLOCK,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK,), tl.float32)
    acc = tl.zeros((BLOCK, BD), tl.float32)
    start = tl.load(rp_ptr + qb)
    end = tl.load(rp_ptr + qb + 1)
    for i in range(start, end):
        k, v, s, allowed = _key_tile(i, q, b, h, ar, dd, k_ptr, v_ptr, cols_ptr, tid_ptr, tiles_ptr, NK, qk_scale,
                                     skb, skh, skn, skd, svb, svh, svn, svd, DH, BLOCK, PREC, UP)
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PREC)
        m_i = m_new
    has = l_i > 0
    out = acc / tl.where(has, l_i, 1.0)[:, None]
    tl.store(o_ptr + b * sob + h * soh + rows[:, None] * son + dd[None, :] * sod,
             out.to(o_ptr.dtype.element_ty), mask=rm[:, None] & (dd[None, :] < DH))
    lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("inf"))
    tl.store(lse_ptr + bh * NQ + rows, lse, mask=rm)


@triton.jit
def _bwd_dq(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, dl_ptr, dq_ptr, rp_ptr, cols_ptr, tid_ptr, tiles_ptr,
            NQ, NK, H, qk_scale, scale,
            sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
            DH: tl.constexpr, BD: tl.constexpr, BLOCK: tl.constexpr, PREC: tl.constexpr, UP: tl.constexpr):
    qb, rows, ar, dd, rm = _own_block(NQ, BLOCK, BD)
    bh, b, h = _program_head(H)
    qmask = rm[:, None] & (dd[None, :] < DH)
    q = _load_tile(q_ptr, b, h, rows, dd, sqb, sqh, sqn, sqd, rm, DH, UP)
    do = _load_tile(do_ptr, bh, 0, rows, dd, NQ * DH, 0, DH, 1, rm, DH, UP)  # contiguous [B*H, NQ, DH]
    lse = tl.load(lse_ptr + bh * NQ + rows, mask=rm, other=float("inf"))
    dl = tl.load(dl_ptr + bh * NQ + rows, mask=rm, other=0.0)
    dq = tl.zeros((BLOCK, BD), tl.float32)
    start = tl.load(rp_ptr + qb)
    end = tl.load(rp_ptr + qb + 1)
    for i in range(start, end):
        k, v, s, allowed = _key_tile(i, q, b, h, ar, dd, k_ptr, v_ptr, cols_ptr, tid_ptr, tiles_ptr, NK, qk_scale,
                                     skb, skh, skn, skd, svb, svh, svn, svd, DH, BLOCK, PREC, UP)
        p = tl.where(allowed, tl.exp2(s - lse[:, None]), 0.0)
        dp = tl.dot(do.to(v.dtype), tl.trans(v), input_precision=PREC)
        ds = p * (dp - dl[:, None])
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PREC)
    tl.store(dq_ptr + bh * NQ * DH + rows[:, None] * DH + dd[None, :], dq * scale, mask=qmask)


@triton.jit
def _bwd_dkv(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, dl_ptr, dk_ptr, dv_ptr, cp_ptr, rows_ptr, tid_ptr, tiles_ptr,
             NQ, NK, H, qk_scale, scale,
             sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
             DH: tl.constexpr, BD: tl.constexpr, BLOCK: tl.constexpr, PREC: tl.constexpr, UP: tl.constexpr):
    kb, cols, ar, dd, cm = _own_block(NK, BLOCK, BD)
    bh, b, h = _program_head(H)
    kmask = cm[:, None] & (dd[None, :] < DH)
    k = _load_tile(k_ptr, b, h, cols, dd, skb, skh, skn, skd, cm, DH, UP)
    v = _load_tile(v_ptr, b, h, cols, dd, svb, svh, svn, svd, cm, DH, UP)
    dk = tl.zeros((BLOCK, BD), tl.float32)
    dv = tl.zeros((BLOCK, BD), tl.float32)
    start = tl.load(cp_ptr + kb)
    end = tl.load(cp_ptr + kb + 1)
    for i in range(start, end):
        qb = tl.load(rows_ptr + i)
        ti = tl.load(tid_ptr + i)
        rows = qb * BLOCK + ar
        rm = rows < NQ
        q = _load_tile(q_ptr, b, h, rows, dd, sqb, sqh, sqn, sqd, rm, DH, UP)
        do = _load_tile(do_ptr, bh, 0, rows, dd, NQ * DH, 0, DH, 1, rm, DH, UP)
        lse = tl.load(lse_ptr + bh * NQ + rows, mask=rm, other=float("inf"))
        dl = tl.load(dl_ptr + bh * NQ + rows, mask=rm, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PREC) * qk_scale  # [BLOCK_q, BLOCK_k]
        bits = _tile_bits(tiles_ptr, ti, ar, BLOCK)
        allowed = (bits != 0) & cm[None, :] & rm[:, None]
        p = tl.where(allowed, tl.exp2(s - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p).to(v.dtype), do.to(v.dtype), input_precision=PREC)
        dp = tl.dot(do.to(v.dtype), tl.trans(v), input_precision=PREC)
        ds = p * (dp - dl[:, None])
        dk += tl.dot(tl.trans(ds).to(q.dtype), q, input_precision=PREC)
    tl.store(dk_ptr + bh * NK * DH + cols[:, None] * DH + dd[None, :], dk * scale, mask=kmask)
    tl.store(dv_ptr + bh * NK * DH + cols[:, None] * DH + dd[None, :], dv, mask=kmask)


def _s(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.stride())


def attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lay: Layout,
                      scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(out [B, H, Nq, Dh] in q's dtype, lse [B*H, Nq] fp32 in log2 units)``."""
    b, h, nq, dh = q.shape
    nk = k.shape[2]
    out = torch.empty_like(q)
    lse = torch.empty(b * h, nq, dtype=torch.float32, device=q.device)
    grid = (triton.cdiv(nq, lay.block), b * h)
    _fwd[grid](q, k, v, out, lse, lay.row_ptr, lay.row_cols, lay.row_tile, lay.tiles, nq, nk, h, scale * LOG2E,
               *_s(q), *_s(k), *_s(v), *_s(out), DH=dh, BD=block_dim(dh), BLOCK=lay.block,
               PREC=dot_precision(q.dtype), UP=upcast_dots(q))
    return out, lse


def attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                       g: torch.Tensor, lay: Layout, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv)`` for the output gradient ``g``."""
    b, h, nq, dh = q.shape
    nk = k.shape[2]
    g = g.contiguous()
    dl = (g.float() * out.float()).sum(-1).reshape(b * h, nq).contiguous()
    dq = torch.empty(b, h, nq, dh, dtype=torch.float32, device=q.device)
    dk = torch.empty(b, h, nk, dh, dtype=torch.float32, device=q.device)
    dv = torch.empty_like(dk)
    common = dict(DH=dh, BD=block_dim(dh), BLOCK=lay.block, PREC=dot_precision(q.dtype), UP=upcast_dots(q))
    _bwd_dq[(triton.cdiv(nq, lay.block), b * h)](
        q, k, v, g, lse, dl, dq, lay.row_ptr, lay.row_cols, lay.row_tile, lay.tiles, nq, nk, h, scale * LOG2E, scale,
        *_s(q), *_s(k), *_s(v), **common)
    _bwd_dkv[(triton.cdiv(nk, lay.block), b * h)](
        q, k, v, g, lse, dl, dk, dv, lay.col_ptr, lay.col_rows, lay.col_tile, lay.tiles, nq, nk, h, scale * LOG2E,
        scale, *_s(q), *_s(k), *_s(v), **common)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


class _Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lay: Layout, scale: float) -> torch.Tensor:
        out, lse = attention_forward(q, k, v, lay, scale)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.lay, ctx.scale = lay, scale
        return out

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = attention_backward(q, k, v, out, lse, g, ctx.lay, ctx.scale)
        return dq, dk, dv, None, None


def default_block(device: torch.device) -> int:
    """Tile size: 64 on a GPU, 16 in the interpreter (small tests exercise several tiles)."""
    return 64 if device.type == "cuda" else 16


def masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Any = None,
                     scale: float | None = None, block: int | None = None) -> torch.Tensor:
    """Triton block-sparse ``masked_attention`` (autograd-aware); ``[B, H, Nq, Dh]``.

    :param block: tile size (a power of two >= 16); default :func:`default_block`.
    """
    sc = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    lay = layout_for(mask, q.shape[2], k.shape[2], int(block or default_block(q.device)), q.device)
    out: torch.Tensor = _Attention.apply(q, k, v, lay, sc)
    return out
