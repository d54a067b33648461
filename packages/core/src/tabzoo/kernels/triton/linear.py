"""Triton linear attention (feature map elu+1): the stateful pair and the fused op, forward and backward.

Kernels (grid in brackets)::

    _state_fwd  [B*H, splits]   partial S = phi(k)^T v, z = sum phi(k) over a range of rows (fp32)
    _read_fwd   [row blocks, B*H]   out = phi(q) S / (phi(q) . z + eps)
    _read_bwd   [B*H, splits]   dq per row; partial dS = phi(q)^T dn, dz = sum phi(q) dd (fp32)
    _state_bwd  [row blocks, B*H]   dk = (v dS^T + dz) * phi'(k), dv = phi(k) dS

Partial sums over row ranges are written per split and summed by torch (deterministic; no
atomics). ``linear_attention(q, k, v, n)`` is ``read(q, *state(k[:n], v[:n]))``: two passes over
the rows, nothing of size ``N x Dh`` written besides the output. Every tensor is passed with its
strides, so slices and transposes are read in place.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from tabzoo.kernels.triton._common import block_dim, dot_precision, splits_for

BLOCK_N = 64
#: rows per program of the forward read on a GPU: S is re-read from L2 once per program, so wider
#: row blocks cut that traffic (the read is bandwidth-bound at large N)
READ_BLOCK_N_CUDA = 128


@triton.jit
def _load_f32(ptr, b, h, rows, cols, sb, sh, sr, sc, rmask, cmask):
    """``[len(rows), len(cols)]`` fp32 block of head ``(b, h)`` of a strided 4-d tensor (0 where
    ``rmask[:, None] & cmask[None, :]`` is false)."""
    return tl.load(ptr + b * sb + h * sh + rows[:, None] * sr + cols[None, :] * sc,
                   mask=rmask[:, None] & cmask[None, :], other=0.0).to(tl.float32)


@triton.jit
def _phi(x):
    """The feature map elu(x) + 1."""
    return tl.where(x > 0, x + 1.0, tl.exp(x))


@triton.jit
def _dphi(x):
    """The derivative of :func:`_phi`."""
    return tl.where(x > 0, 1.0, tl.exp(x))


@triton.jit
def _split_program(H):
    """``(bh, sp, nsp, b, h)``: a reduction program's (batch, head) index (grid axis 0) and its
    parts, and its split of the rows (axis 1) of ``nsp``."""
    bh = tl.program_id(0)
    return bh, tl.program_id(1), tl.num_programs(1), bh // H, bh % H


@triton.jit
def _store_partial(s_ptr, z_ptr, bh, sp, nsp, acc, accz, dk, dv, BDH: tl.constexpr, BDV: tl.constexpr):
    """Write one split's partial sums ``acc [BDH, BDV]`` and ``accz [BDH]`` (summed by torch)."""
    out = (bh * nsp + sp)
    tl.store(s_ptr + out * BDH * BDV + dk[:, None] * BDV + dv[None, :], acc)
    tl.store(z_ptr + out * BDH + dk, accz)


@triton.jit
def _row_program(N, H, BN: tl.constexpr):
    """``(bh, b, h, r, rm)``: a row program's (batch, head) index (grid axis 1) and its parts, and
    its ``BN`` rows (block of grid axis 0) with their in-range mask."""
    bh = tl.program_id(1)
    r = tl.program_id(0) * BN + tl.arange(0, BN)
    return bh, bh // H, bh % H, r, r < N


@triton.jit
def _state_fwd(k_ptr, v_ptr, s_ptr, z_ptr, N, H, ROWS_PER_SPLIT,
               skb, skh, skn, skd, svb, svh, svn, svd,
               DH: tl.constexpr, DV: tl.constexpr, BDH: tl.constexpr, BDV: tl.constexpr,
               BN: tl.constexpr, PREC: tl.constexpr):
    bh, sp, nsp, b, h = _split_program(H)
    dk = tl.arange(0, BDH)
    dv = tl.arange(0, BDV)
    rows = tl.arange(0, BN)
    acc = tl.zeros((BDH, BDV), dtype=tl.float32)
    accz = tl.zeros((BDH,), dtype=tl.float32)
    start = sp * ROWS_PER_SPLIT
    stop = tl.minimum(start + ROWS_PER_SPLIT, N)
    for n0 in range(start, stop, BN):
        r = n0 + rows
        rm = r < stop
        k = _load_f32(k_ptr, b, h, r, dk, skb, skh, skn, skd, rm, dk < DH)
        v = _load_f32(v_ptr, b, h, r, dv, svb, svh, svn, svd, rm, dv < DV)
        pk = tl.where(rm[:, None] & (dk[None, :] < DH), _phi(k), 0.0)
        acc += tl.dot(tl.trans(pk), v, input_precision=PREC)
        accz += tl.sum(pk, axis=0)
    _store_partial(s_ptr, z_ptr, bh, sp, nsp, acc, accz, dk, dv, BDH, BDV)


@triton.jit
def _read_fwd(q_ptr, s_ptr, z_ptr, o_ptr, N, H, eps,
              sqb, sqh, sqn, sqd, ssb, ssh, ssd, sse, szb, szh, szd, sob, soh, son, sod,
              DH: tl.constexpr, DV: tl.constexpr, BDH: tl.constexpr, BDV: tl.constexpr,
              BN: tl.constexpr, PREC: tl.constexpr):
    bh, b, h, r, rm = _row_program(N, H, BN)
    dk = tl.arange(0, BDH)
    dv = tl.arange(0, BDV)
    km = dk < DH
    S = _load_f32(s_ptr, b, h, dk, dv, ssb, ssh, ssd, sse, km, dv < DV)
    z = tl.load(z_ptr + b * szb + h * szh + dk * szd, mask=km, other=0.0).to(tl.float32)
    q = _load_f32(q_ptr, b, h, r, dk, sqb, sqh, sqn, sqd, rm, km)
    pq = tl.where(km[None, :], _phi(q), 0.0)
    num = tl.dot(pq, S, input_precision=PREC)
    den = tl.sum(pq * z[None, :], axis=1) + eps
    out = num / den[:, None]
    tl.store(o_ptr + b * sob + h * soh + r[:, None] * son + dv[None, :] * sod,
             out.to(o_ptr.dtype.element_ty), mask=rm[:, None] & (dv[None, :] < DV))


@triton.jit
def _read_bwd(q_ptr, s_ptr, z_ptr, g_ptr, dq_ptr, ds_ptr, dz_ptr, N, H, eps, ROWS_PER_SPLIT,
              sqb, sqh, sqn, sqd, ssb, ssh, ssd, sse, szb, szh, szd, sgb, sgh, sgn, sgd,
              DH: tl.constexpr, DV: tl.constexpr, BDH: tl.constexpr, BDV: tl.constexpr,
              BN: tl.constexpr, PREC: tl.constexpr):
    bh, sp, nsp, b, h = _split_program(H)
    dk = tl.arange(0, BDH)
    dv = tl.arange(0, BDV)
    km = dk < DH
    vm = dv < DV
    S = _load_f32(s_ptr, b, h, dk, dv, ssb, ssh, ssd, sse, km, vm)
    z = tl.load(z_ptr + b * szb + h * szh + dk * szd, mask=km, other=0.0).to(tl.float32)
    acc = tl.zeros((BDH, BDV), dtype=tl.float32)
    accz = tl.zeros((BDH,), dtype=tl.float32)
    start = sp * ROWS_PER_SPLIT
    stop = tl.minimum(start + ROWS_PER_SPLIT, N)
    for n0 in range(start, stop, BN):
        r = n0 + tl.arange(0, BN)
        rm = r < stop
        q = _load_f32(q_ptr, b, h, r, dk, sqb, sqh, sqn, sqd, rm, km)
        g = _load_f32(g_ptr, b, h, r, dv, sgb, sgh, sgn, sgd, rm, vm)
        pq = tl.where(rm[:, None] & km[None, :], _phi(q), 0.0)
        num = tl.dot(pq, S, input_precision=PREC)
        den = tl.sum(pq * z[None, :], axis=1) + eps
        dn = g / den[:, None]
        dd = -tl.sum(dn * num, axis=1) / den
        dpq = tl.dot(dn, tl.trans(S), input_precision=PREC) + dd[:, None] * z[None, :]
        dqv = dpq * _dphi(q)
        tl.store(dq_ptr + bh * N * DH + r[:, None] * DH + dk[None, :], dqv, mask=rm[:, None] & km[None, :])
        acc += tl.dot(tl.trans(pq), dn, input_precision=PREC)
        accz += tl.sum(pq * dd[:, None], axis=0)
    _store_partial(ds_ptr, dz_ptr, bh, sp, nsp, acc, accz, dk, dv, BDH, BDV)


@triton.jit
def _state_bwd(k_ptr, v_ptr, ds_ptr, dz_ptr, dk_ptr, dv_ptr, N, H,
               skb, skh, skn, skd, svb, svh, svn, svd,
               DH: tl.constexpr, DV: tl.constexpr, BDH: tl.constexpr, BDV: tl.constexpr,
               BN: tl.constexpr, PREC: tl.constexpr):
    bh, b, h, r, rm = _row_program(N, H, BN)
    dk = tl.arange(0, BDH)
    dv = tl.arange(0, BDV)
    km = dk < DH
    vm = dv < DV
    dS = tl.load(ds_ptr + bh * BDH * BDV + dk[:, None] * BDV + dv[None, :])
    dz = tl.load(dz_ptr + bh * BDH + dk)
    k = _load_f32(k_ptr, b, h, r, dk, skb, skh, skn, skd, rm, km)
    v = _load_f32(v_ptr, b, h, r, dv, svb, svh, svn, svd, rm, vm)
    pk = tl.where(km[None, :], _phi(k), 0.0)
    dpk = tl.dot(v, tl.trans(dS), input_precision=PREC) + dz[None, :]
    dkv = dpk * _dphi(k)
    dvv = tl.dot(pk, dS, input_precision=PREC)
    tl.store(dk_ptr + bh * N * DH + r[:, None] * DH + dk[None, :], dkv, mask=rm[:, None] & km[None, :])
    tl.store(dv_ptr + bh * N * DV + r[:, None] * DV + dv[None, :], dvv, mask=rm[:, None] & vm[None, :])


def _s4(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.stride())


def state_forward(k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(S [B, H, Dh, Dv], z [B, H, Dh])`` fp32 of ``k [B, H, N, Dh]``, ``v [B, H, N, Dv]``."""
    b, h, n, dh = k.shape
    dv = v.shape[-1]
    bdh, bdv = block_dim(dh), block_dim(dv)
    splits = splits_for(n, b * h, BLOCK_N, k.device)
    rows = max(BLOCK_N, -(-n // splits // BLOCK_N) * BLOCK_N) if n else BLOCK_N
    splits = max(1, -(-n // rows)) if n else 1
    part_s = torch.empty(b * h, splits, bdh, bdv, dtype=torch.float32, device=k.device)
    part_z = torch.empty(b * h, splits, bdh, dtype=torch.float32, device=k.device)
    _state_fwd[(b * h, splits)](k, v, part_s, part_z, n, h, rows, *_s4(k), *_s4(v),
                                DH=dh, DV=dv, BDH=bdh, BDV=bdv, BN=BLOCK_N, PREC=dot_precision(k.dtype))
    S = part_s.sum(1)[:, :dh, :dv].reshape(b, h, dh, dv)
    z = part_z.sum(1)[:, :dh].reshape(b, h, dh)
    return S.contiguous(), z.contiguous()


def read_forward(q: torch.Tensor, S: torch.Tensor, z: torch.Tensor, eps: float) -> torch.Tensor:
    """``phi(q) S / (phi(q) . z + eps)``: ``[B, H, N, Dv]`` in the dtype of ``q``."""
    b, h, n, dh = q.shape
    dv = S.shape[-1]
    out = torch.empty(b, h, n, dv, dtype=q.dtype, device=q.device)
    if n == 0:
        return out
    bn = READ_BLOCK_N_CUDA if q.device.type == "cuda" else BLOCK_N
    _read_fwd[(triton.cdiv(n, bn), b * h)](
        q, S, z, out, n, h, float(eps), *_s4(q), *_s4(S), *z.stride(), *_s4(out),
        DH=dh, DV=dv, BDH=block_dim(dh), BDV=block_dim(dv), BN=bn, PREC=dot_precision(q.dtype))
    return out


def read_backward(q: torch.Tensor, S: torch.Tensor, z: torch.Tensor, g: torch.Tensor,
                  eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients ``(dq, dS, dz)`` of the read for an output gradient ``g [B, H, N, Dv]``."""
    b, h, n, dh = q.shape
    dv = S.shape[-1]
    bdh, bdv = block_dim(dh), block_dim(dv)
    splits = splits_for(n, b * h, BLOCK_N, q.device)
    rows = max(BLOCK_N, -(-n // splits // BLOCK_N) * BLOCK_N) if n else BLOCK_N
    splits = max(1, -(-n // rows)) if n else 1
    dq = torch.zeros(b, h, n, dh, dtype=torch.float32, device=q.device)
    part_s = torch.empty(b * h, splits, bdh, bdv, dtype=torch.float32, device=q.device)
    part_z = torch.empty(b * h, splits, bdh, dtype=torch.float32, device=q.device)
    _read_bwd[(b * h, splits)](q, S, z, g, dq, part_s, part_z, n, h, float(eps), rows,
                               *_s4(q), *_s4(S), *z.stride(), *_s4(g),
                               DH=dh, DV=dv, BDH=bdh, BDV=bdv, BN=BLOCK_N, PREC=dot_precision(q.dtype))
    dS = part_s.sum(1)[:, :dh, :dv].reshape(b, h, dh, dv)
    dz = part_z.sum(1)[:, :dh].reshape(b, h, dh)
    return dq.to(q.dtype), dS, dz


def state_backward(k: torch.Tensor, v: torch.Tensor, dS: torch.Tensor,
                   dz: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients ``(dk, dv)`` of the state for ``dS [B, H, Dh, Dv]``, ``dz [B, H, Dh]``."""
    b, h, n, dh = k.shape
    dv_ = v.shape[-1]
    bdh, bdv = block_dim(dh), block_dim(dv_)
    ds_pad = torch.zeros(b * h, bdh, bdv, dtype=torch.float32, device=k.device)
    ds_pad[:, :dh, :dv_] = dS.reshape(b * h, dh, dv_)
    dz_pad = torch.zeros(b * h, bdh, dtype=torch.float32, device=k.device)
    dz_pad[:, :dh] = dz.reshape(b * h, dh)
    gk = torch.empty(b, h, n, dh, dtype=torch.float32, device=k.device)
    gv = torch.empty(b, h, n, dv_, dtype=torch.float32, device=k.device)
    if n:
        _state_bwd[(triton.cdiv(n, BLOCK_N), b * h)](k, v, ds_pad, dz_pad, gk, gv, n, h, *_s4(k), *_s4(v),
                                                      DH=dh, DV=dv_, BDH=bdh, BDV=bdv, BN=BLOCK_N,
                                                      PREC=dot_precision(k.dtype))
    return gk.to(k.dtype), gv.to(v.dtype)


class _State(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.save_for_backward(k, v)
        return state_forward(k, v)

    @staticmethod
    def backward(ctx: Any, dS: torch.Tensor | None, dz: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        k, v = ctx.saved_tensors
        b, h, _, dh = k.shape
        dS = torch.zeros(b, h, dh, v.shape[-1], device=k.device) if dS is None else dS.float()
        dz = torch.zeros(b, h, dh, device=k.device) if dz is None else dz.float()
        return state_backward(k, v, dS, dz)


class _Read(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, S: torch.Tensor, z: torch.Tensor, eps: float) -> torch.Tensor:
        ctx.save_for_backward(q, S, z)
        ctx.eps = eps
        return read_forward(q, S, z, eps)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        q, S, z = ctx.saved_tensors
        dq, dS, dz = read_backward(q, S, z, g, ctx.eps)
        return dq, dS.to(S.dtype), dz.to(z.dtype), None


def linear_attention_state(k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Triton ``linear_attention_state`` (autograd-aware)."""
    result: tuple[torch.Tensor, torch.Tensor] = _State.apply(k, v)
    return result


def linear_attention_read(q: torch.Tensor, S: torch.Tensor, z: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Triton ``linear_attention_read`` (autograd-aware)."""
    out: torch.Tensor = _Read.apply(q, S, z, eps)
    return out


def linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_context: int,
                     eps: float = 1e-6) -> torch.Tensor:
    """Triton fused non-causal ``linear_attention``: the context state, then every row reads it."""
    S, z = linear_attention_state(k[:, :, :n_context], v[:, :, :n_context])
    return linear_attention_read(q, S, z, eps)
