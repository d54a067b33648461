"""Triton chunked selective scan (Mamba's S6 recurrence), forward and backward, both directions.

``h_t = exp(delta_t A) h_{t-1} + (delta_t x_t) B_t``, ``y_t = <h_t, C_t>`` (the ``D x`` skip is
added by torch outside the kernels). The sequence is cut into chunks of ``T`` steps; programs run
over ``(batch, channel block, chunk)``:

forward
  1. ``_chunk`` (EMIT=0): each chunk from a zero state -> its local end state and ``sum delta``;
  2. ``_carry``: a short loop over chunks, ``H_{c+1} = exp(A sum delta_c) H_c + local_c``;
  3. ``_chunk`` (EMIT=1): each chunk again from its true start state, writing ``y``.
backward (adjoint ``lam_t = g_t C_t + a_{t+1} lam_{t+1}``, run in scan order reversed)
  1. ``_chunk_adj``: each chunk's adjoint from zero -> ``a_s lam_s`` at its first step;
  2. ``_carry`` backwards over chunks;
  3. ``_chunk_bwd``: each chunk recomputes its states from the saved start state into a scratch
     buffer, then walks back, writing dx, ddelta and per-block partials of dB, dC, dA.

All state arithmetic is fp32; ``exp(z)`` is ``exp2(z log2 e)``. Nothing divides by a decay, so any
sign of ``A`` is computed as faithfully as the recurrence itself. The backward scratch holds the
states of every step, ``batch * L * D * N`` fp32 (what autograd through the torch scan stores too).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton
import triton.language as tl

LOG2E = 1.0 / math.log(2.0)


@triton.jit
def _program_block(a2_ptr, D, NS, BD: tl.constexpr, BN: tl.constexpr):
    """``(pb, pd, d, n, dm, nm, dn, a2)``: this program's batch row and channel block (grid axes 0
    and 1), its channels ``d [BD]`` and states ``n [BN]`` with their in-range masks (``dn`` both),
    and its rows of ``A log2 e`` ``[BD, BN]``."""
    pb = tl.program_id(0)
    pd = tl.program_id(1)
    d = pd * BD + tl.arange(0, BD)
    n = tl.arange(0, BN)
    dm = d < D
    nm = n < NS
    dn = dm[:, None] & nm[None, :]
    a2 = tl.load(a2_ptr + d[:, None] * NS + n[None, :], mask=dn, other=0.0)
    return pb, pd, d, n, dm, nm, dn, a2


@triton.jit
def _step(pc, j, T, L, d, n, dm, nm, REVERSE: tl.constexpr):
    """``(t, okd, okn)``: the position in the sequence of step ``j`` of chunk ``pc`` (in scan order)
    and the channel / state masks, false past the sequence's end."""
    tt = pc * T + j
    okd = dm & ((d * 0 + tt) < L)
    okn = nm & ((n * 0 + tt) < L)
    if REVERSE:
        t = L - 1 - tt
    else:
        t = tt
    return t, okd, okn


@triton.jit
def _at(ptr, pb, t, idx, sb, sl, si, ok):
    """``ptr[pb, t, idx]`` of a strided ``[batch, L, ·]`` tensor in fp32 (0 where not ``ok``)."""
    return tl.load(ptr + pb * sb + t * sl + idx * si, mask=ok, other=0.0).to(tl.float32)


@triton.jit
def _chunk(x_ptr, dl_ptr, a2_ptr, b_ptr, c_ptr, hs_ptr, y_ptr, loc_ptr, dsum_ptr, L, D, NS, NCH, T,
           sxb, sxl, sxd, sdb, sdl, sdd, sbb, sbl, sbn, scb, scl, scn,
           BD: tl.constexpr, BN: tl.constexpr, REVERSE: tl.constexpr, EMIT: tl.constexpr):
    pb, pd, d, n, dm, nm, dn, a2 = _program_block(a2_ptr, D, NS, BD, BN)
    pc = tl.program_id(2)
    st = ((pb * NCH + pc) * D + d[:, None]) * NS + n[None, :]
    if EMIT:
        h = tl.load(hs_ptr + st, mask=dn, other=0.0)
    else:
        h = tl.zeros((BD, BN), dtype=tl.float32)
    dsum = tl.zeros((BD,), dtype=tl.float32)
    for j in range(0, T):
        t, okd, okn = _step(pc, j, T, L, d, n, dm, nm, REVERSE)
        dt = _at(dl_ptr, pb, t, d, sdb, sdl, sdd, okd)
        xt = _at(x_ptr, pb, t, d, sxb, sxl, sxd, okd)
        bt = _at(b_ptr, pb, t, n, sbb, sbl, sbn, okn)
        h = tl.exp2(dt[:, None] * a2) * h + (dt * xt)[:, None] * bt[None, :]
        if EMIT:
            ct = _at(c_ptr, pb, t, n, scb, scl, scn, okn)
            yt = tl.sum(h * ct[None, :], axis=1)
            tl.store(y_ptr + (pb * L + t) * D + d, yt, mask=okd)
        else:
            dsum += dt
    if not EMIT:
        tl.store(loc_ptr + st, h, mask=dn)
        tl.store(dsum_ptr + (pb * NCH + pc) * D + d, dsum, mask=dm)


@triton.jit
def _carry(loc_ptr, dsum_ptr, a2_ptr, out_ptr, D, NS, NCH,
           BD: tl.constexpr, BN: tl.constexpr, BACKWARD: tl.constexpr):
    pb, pd, d, n, dm, nm, dn, a2 = _program_block(a2_ptr, D, NS, BD, BN)
    carry = tl.zeros((BD, BN), dtype=tl.float32)
    for i in range(0, NCH):
        if BACKWARD:
            c = NCH - 1 - i
        else:
            c = i
        st = ((pb * NCH + c) * D + d[:, None]) * NS + n[None, :]
        tl.store(out_ptr + st, carry, mask=dn)
        ds = tl.load(dsum_ptr + (pb * NCH + c) * D + d, mask=dm, other=0.0)
        carry = tl.load(loc_ptr + st, mask=dn, other=0.0) + tl.exp2(ds[:, None] * a2) * carry


@triton.jit
def _chunk_adj(dl_ptr, a2_ptr, c_ptr, g_ptr, m_ptr, L, D, NS, NCH, T,
               sdb, sdl, sdd, scb, scl, scn,
               BD: tl.constexpr, BN: tl.constexpr, REVERSE: tl.constexpr):
    pb, pd, d, n, dm, nm, dn, a2 = _program_block(a2_ptr, D, NS, BD, BN)
    pc = tl.program_id(2)
    carry = tl.zeros((BD, BN), dtype=tl.float32)
    for j in range(0, T):
        t, okd, okn = _step(pc, T - 1 - j, T, L, d, n, dm, nm, REVERSE)
        dt = _at(dl_ptr, pb, t, d, sdb, sdl, sdd, okd)
        gt = tl.load(g_ptr + (pb * L + t) * D + d, mask=okd, other=0.0)
        ct = _at(c_ptr, pb, t, n, scb, scl, scn, okn)
        lam = gt[:, None] * ct[None, :] + carry
        carry = tl.exp2(dt[:, None] * a2) * lam
    tl.store(m_ptr + ((pb * NCH + pc) * D + d[:, None]) * NS + n[None, :], carry, mask=dn)


@triton.jit
def _chunk_bwd(x_ptr, dl_ptr, a2_ptr, b_ptr, c_ptr, g_ptr, hs_ptr, rho_ptr, scr_ptr,
               dx_ptr, ddl_ptr, dbp_ptr, dcp_ptr, dap_ptr, L, D, NS, NCH, T, ln2,
               sxb, sxl, sxd, sdb, sdl, sdd, sbb, sbl, sbn, scb, scl, scn,
               BD: tl.constexpr, BN: tl.constexpr, REVERSE: tl.constexpr):
    pb, pd, d, n, dm, nm, dn, a2 = _program_block(a2_ptr, D, NS, BD, BN)
    pc = tl.program_id(2)
    st = ((pb * NCH + pc) * D + d[:, None]) * NS + n[None, :]
    h0 = tl.load(hs_ptr + st, mask=dn, other=0.0)
    scr = scr_ptr + ((pb * NCH + pc) * T) * D * NS + d[:, None] * NS + n[None, :]
    h = h0
    for j in range(0, T):  # recompute this chunk's states into the scratch buffer
        t, okd, okn = _step(pc, j, T, L, d, n, dm, nm, REVERSE)
        dt = _at(dl_ptr, pb, t, d, sdb, sdl, sdd, okd)
        xt = _at(x_ptr, pb, t, d, sxb, sxl, sxd, okd)
        bt = _at(b_ptr, pb, t, n, sbb, sbl, sbn, okn)
        h = tl.exp2(dt[:, None] * a2) * h + (dt * xt)[:, None] * bt[None, :]
        tl.store(scr + j * D * NS, h, mask=dn)
    tl.debug_barrier()
    carry = tl.load(rho_ptr + st, mask=dn, other=0.0)
    da_acc = tl.zeros((BD, BN), dtype=tl.float32)
    for j2 in range(0, T):
        j = T - 1 - j2
        t, okd, okn = _step(pc, j, T, L, d, n, dm, nm, REVERSE)
        dt = _at(dl_ptr, pb, t, d, sdb, sdl, sdd, okd)
        xt = _at(x_ptr, pb, t, d, sxb, sxl, sxd, okd)
        bt = _at(b_ptr, pb, t, n, sbb, sbl, sbn, okn)
        ct = _at(c_ptr, pb, t, n, scb, scl, scn, okn)
        gt = tl.load(g_ptr + (pb * L + t) * D + d, mask=okd, other=0.0)
        ht = tl.load(scr + j * D * NS, mask=dn, other=0.0)
        hp = tl.load(scr + (j - 1) * D * NS, mask=dn & ((n[None, :] * 0 + j) > 0), other=0.0)
        hp = tl.where(j > 0, hp, h0)
        at = tl.exp2(dt[:, None] * a2)
        lam = gt[:, None] * ct[None, :] + carry
        da = lam * hp * at  # d(loss)/d(delta_t A) per (d, n)
        lb = tl.sum(lam * bt[None, :], axis=1)
        ddt = tl.sum(da * a2, axis=1) * ln2 + xt * lb
        tl.store(ddl_ptr + (pb * L + t) * D + d, ddt, mask=okd)
        tl.store(dx_ptr + (pb * L + t) * D + d, dt * lb, mask=okd)
        part = (pd * tl.num_programs(0) + pb) * L + t
        tl.store(dbp_ptr + part * NS + n, tl.sum(lam * (dt * xt)[:, None], axis=0), mask=okn)
        tl.store(dcp_ptr + part * NS + n, tl.sum(gt[:, None] * ht, axis=0), mask=okn)
        da_acc += da * dt[:, None]
        carry = at * lam
    tl.store(dap_ptr + st, da_acc, mask=dn)


def _blocks(d: int, ns: int, device: torch.device) -> tuple[int, int]:
    bn = max(2, 1 << max(0, ns - 1).bit_length())
    bd = max(2, min(64 if device.type == "cuda" else 16, 1 << max(0, d - 1).bit_length()))
    return bd, bn


def default_chunk(length: int, device: torch.device) -> int:
    """Chunk length: 64 steps on a GPU (enough chunks to fill it at L >= 4k), ~sqrt(L) on CPU."""
    if device.type == "cuda":
        return 64
    return max(2, min(64, 1 << round(math.log2(max(2, length)) / 2)))


def _strides(*ts: torch.Tensor) -> list[int]:
    return [s for t in ts for s in t.stride()]


def scan_forward(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                 reverse: bool, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y [batch, L, D] fp32, chunk start states [batch, chunks, D, N] fp32)``."""
    b, length, d = x.shape
    ns = A.shape[1]
    nch = triton.cdiv(length, chunk)
    bd, bn = _blocks(d, ns, x.device)
    a2 = (A.float() * LOG2E).contiguous()
    loc = torch.empty(b, nch, d, ns, dtype=torch.float32, device=x.device)
    dsum = torch.empty(b, nch, d, dtype=torch.float32, device=x.device)
    starts = torch.empty_like(loc)
    y = torch.empty(b, length, d, dtype=torch.float32, device=x.device)
    grid = (b, triton.cdiv(d, bd), nch)
    strides = _strides(x, delta, B, C)
    _chunk[grid](x, delta, a2, B, C, starts, y, loc, dsum, length, d, ns, nch, chunk, *strides,
                 BD=bd, BN=bn, REVERSE=bool(reverse), EMIT=False)
    _carry[(b, triton.cdiv(d, bd))](loc, dsum, a2, starts, d, ns, nch, BD=bd, BN=bn, BACKWARD=False)
    _chunk[grid](x, delta, a2, B, C, starts, y, loc, dsum, length, d, ns, nch, chunk, *strides,
                 BD=bd, BN=bn, REVERSE=bool(reverse), EMIT=True)
    return y, starts


def scan_backward(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                  starts: torch.Tensor, g: torch.Tensor, reverse: bool, chunk: int) -> tuple[torch.Tensor, ...]:
    """``(dx, ddelta, dA, dB, dC)`` (fp32) for the output gradient ``g [batch, L, D]``."""
    b, length, d = x.shape
    ns = A.shape[1]
    nch = starts.shape[1]
    bd, bn = _blocks(d, ns, x.device)
    ndb = triton.cdiv(d, bd)
    a2 = (A.float() * LOG2E).contiguous()
    g = g.float().contiguous()
    strides_dc = _strides(delta, C)
    m = torch.empty(b, nch, d, ns, dtype=torch.float32, device=x.device)
    _chunk_adj[(b, ndb, nch)](delta, a2, C, g, m, length, d, ns, nch, chunk, *strides_dc,
                              BD=bd, BN=bn, REVERSE=bool(reverse))
    dsum = _chunk_delta_sums(delta.float(), reverse, chunk, nch).contiguous()
    rho = torch.empty_like(m)
    _carry[(b, ndb)](m, dsum, a2, rho, d, ns, nch, BD=bd, BN=bn, BACKWARD=True)
    scratch = torch.empty(b, nch, chunk, d, ns, dtype=torch.float32, device=x.device)
    dx = torch.empty(b, length, d, dtype=torch.float32, device=x.device)
    ddl = torch.empty_like(dx)
    dbp = torch.empty(ndb, b, length, ns, dtype=torch.float32, device=x.device)
    dcp = torch.empty_like(dbp)
    dap = torch.empty(b, nch, d, ns, dtype=torch.float32, device=x.device)
    _chunk_bwd[(b, ndb, nch)](x, delta, a2, B, C, g, starts, rho, scratch, dx, ddl, dbp, dcp, dap,
                              length, d, ns, nch, chunk, math.log(2.0), *_strides(x, delta, B, C),
                              BD=bd, BN=bn, REVERSE=bool(reverse))
    return dx, ddl, dap.sum(dim=(0, 1)), dbp.sum(0), dcp.sum(0)


def _chunk_delta_sums(df: torch.Tensor, reverse: bool, chunk: int, nch: int) -> torch.Tensor:
    """``sum delta`` over each chunk in scan order: ``[batch, chunks, D]``."""
    if reverse:
        df = df.flip(1)
    pad = nch * chunk - df.shape[1]
    if pad:
        df = torch.nn.functional.pad(df, (0, 0, 0, pad))
    return df.reshape(df.shape[0], nch, chunk, df.shape[2]).sum(2)


class _Scan(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                reverse: bool, chunk: int) -> torch.Tensor:
        y, starts = scan_forward(x, delta, A, B, C, reverse, chunk)
        ctx.save_for_backward(x, delta, A, B, C, starts)
        ctx.reverse, ctx.chunk = reverse, chunk
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        x, delta, A, B, C, starts = ctx.saved_tensors
        dx, ddl, dA, dB, dC = scan_backward(x, delta, A, B, C, starts, g, ctx.reverse, ctx.chunk)
        return dx.to(x.dtype), ddl.to(delta.dtype), dA.to(A.dtype), dB.to(B.dtype), dC.to(C.dtype), None, None


def selective_scan(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                   D: torch.Tensor | None = None, reverse: bool = False, chunk: int | None = None) -> torch.Tensor:
    """Triton ``selective_scan`` (autograd-aware); ``[batch, L, D]`` in the dtype of ``x``.

    :param chunk: steps per chunk; default :func:`default_chunk`.
    """
    t_len = int(chunk or default_chunk(x.shape[1], x.device))
    y = _Scan.apply(x, delta, A, B, C, bool(reverse), max(1, min(t_len, x.shape[1])))
    if D is not None:
        y = y + D.float() * x.float()
    return y.to(x.dtype)
