"""The ``chunked`` backend of ``selective_scan``: a blocked recurrence with a hand-written backward.

Positions are put in scan order (flipped for ``reverse``), padded, and cut into blocks of ``S``
positions (about ``BLOCK_ELEMENTS`` state elements each, so a block's buffers stay in cache and
are reused by the allocator instead of being faulted in fresh); a block is ``n_chunks`` chunks of
``T`` steps, stored step-major, ``[T, n_chunks, batch, D, N]``: slice ``j`` is step ``j`` of every
chunk, contiguous. Blocks run one after the other, carrying the state; nothing of size
``L x D x N`` is ever allocated. Within a block (``a = exp(delta A)``, ``u = (delta x) B``)::

    1. per step j, all chunks at once: a_j, u_j and the local state h_j = a_j h_{j-1} + u_j
    2. per chunk: the true state entering it, S_c = h_end_{c-1} + P_{c-1} S_{c-1}, S_0 = the
       block's incoming state (P = product of the chunk's decays: a product, never a division
       or an exp of a positive cumulative sum, so it is as stable as the recurrence itself)
    3. per step j: corr_j = a_j corr_{j-1} (corr_{-1} = S_c), h_j += corr_j
    y = <h, C> + D x

``exp`` is computed once per element per pass. The forward saves only its inputs and each
block's incoming state; the backward recomputes a block's ``a, h`` (as Mamba's kernel does),
runs ``g_t = gy_t C_t + a_{t+1} g_{t+1}`` (the gradient reaching ``h_t``) through the same three
phases backwards, blocks last to first, and contracts ``d(delta A)_t = g_t a_t h_{t-1}``, ``g``
and ``h`` into the gradients of ``delta, A, x, B, C, D``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["BLOCK_ELEMENTS", "default_chunk_length", "selective_scan_chunked"]

LOG2E = 1.0 / math.log(2.0)
BLOCK_ELEMENTS = 1 << 19  # state elements (batch x S x D x N) per block: 2 MiB per fp32 buffer


def default_chunk_length(length: int) -> int:
    """Chunk length T: about sqrt(L) (balances the loops over T and over L/T), between 8 and 256."""
    return int(min(256, max(8, 2 ** round(math.log2(max(1, length)) / 2))))


class _Layout:
    """``[batch, L, k]`` <-> ``[blocks, T, chunks, batch, k]`` in scan order (padding: zeros)."""

    def __init__(self, batch: int, length: int, state: int, chunk: int | None, reverse: bool) -> None:
        per_block = max(1, BLOCK_ELEMENTS // max(1, batch * state))
        if chunk:
            t_len = max(1, min(int(chunk), length))
        else:
            t_len = min(default_chunk_length(min(length, per_block)), length)
        n_chunks = max(1, min(per_block, length) // t_len)
        self.batch, self.length, self.t_len, self.n_chunks, self.reverse = batch, length, t_len, n_chunks, reverse
        self.n_blocks = -(-length // (t_len * n_chunks))
        self.pad = self.n_blocks * n_chunks * t_len - length

    def to_steps(self, t: torch.Tensor) -> torch.Tensor:
        t = t.float()
        if self.reverse:
            t = t.flip(1)
        if self.pad:
            t = torch.nn.functional.pad(t, (0, 0, 0, self.pad))
        shape = (self.batch, self.n_blocks, self.n_chunks, self.t_len, t.shape[-1])
        return t.reshape(shape).permute(1, 3, 2, 0, 4).contiguous()

    def from_steps(self, t: torch.Tensor) -> torch.Tensor:
        t = t.permute(3, 0, 2, 1, 4).reshape(self.batch, -1, t.shape[-1])[:, :self.length]
        return t.flip(1) if self.reverse else t


def _block_forward(dt: torch.Tensor, dtx: torch.Tensor, bs: torch.Tensor, a2: torch.Tensor,
                   state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Decays ``a`` and true states ``h`` (``[T, chunks, batch, D, N]``) of one block from its
    ``dt, dtx [T, chunks, batch, D]``, ``bs [T, chunks, batch, N]``, ``a2 = A log2(e)`` and the
    incoming state ``[batch, D, N]``."""
    t_len, n_chunks, batch, d = dt.shape
    a = torch.empty(t_len, n_chunks, batch, d, a2.shape[1], dtype=torch.float32, device=dt.device)
    h = torch.empty_like(a)
    for j in range(t_len):  # 1. local states, all chunks at once
        torch.mul(dt[j, ..., None], a2, out=a[j]).exp2_()
        torch.mul(dtx[j, ..., None], bs[j, :, :, None, :], out=h[j])
        if j:
            h[j].addcmul_(a[j], h[j - 1])
    prod = a.prod(0) if n_chunks > 1 else None  # [chunks, batch, D, N]
    corr = torch.empty_like(a[0])
    corr[0] = state
    for c in range(1, n_chunks):  # 2. true state entering each chunk
        torch.addcmul(h[t_len - 1, c - 1], prod[c - 1], corr[c - 1], out=corr[c])  # type: ignore[index]
    for j in range(t_len):  # 3. add it, decayed step by step
        corr.mul_(a[j])
        h[j].add_(corr)
    return a, h


def _block_grad_states(a: torch.Tensor, gys: torch.Tensor, cs: torch.Tensor, carry_in: torch.Tensor) -> torch.Tensor:
    """``g_t = gy_t C_t + a_{t+1} g_{t+1}`` over one block (``[T, chunks, batch, D, N]``);
    ``carry_in [batch, D, N]`` is ``a_{t+1} g_{t+1}`` for the block's last position."""
    t_len, n_chunks = a.shape[:2]
    g = torch.empty_like(a)
    for j in range(t_len - 1, -1, -1):  # 1. local, all chunks at once
        torch.mul(gys[j, ..., None], cs[j, :, :, None, :], out=g[j])
        if j < t_len - 1:
            g[j].addcmul_(a[j + 1], g[j + 1])
    tail = a[1:].prod(0) if t_len > 1 else torch.ones_like(a[0])  # decay of steps 1..T-1
    corr = torch.empty_like(a[0])  # corr[c]: a_{first of c+1} * true g_{first of c+1}
    corr[n_chunks - 1] = carry_in
    for c in range(n_chunks - 2, -1, -1):  # 2. carried across chunks, last to first
        torch.mul(a[0, c + 1], torch.addcmul(g[0, c + 1], tail[c + 1], corr[c + 1]), out=corr[c])
    for j in range(t_len - 1, -1, -1):  # 3. add it, decayed step by step
        g[j].add_(corr)
        corr.mul_(a[j])
    return g


class _Scan(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor,
                C: torch.Tensor, D: torch.Tensor | None, reverse: bool, chunk: int | None) -> torch.Tensor:
        batch, length, d = x.shape
        lay = _Layout(batch, length, d * A.shape[1], chunk, reverse)
        dt, xs, bs, cs = (lay.to_steps(t) for t in (delta, x, B, C))
        dtx, a2 = dt * xs, A.float() * LOG2E
        y = torch.empty_like(dt)
        state = torch.zeros(batch, d, A.shape[1], dtype=torch.float32, device=x.device)
        starts = []
        for k in range(lay.n_blocks):
            starts.append(state)
            _, h = _block_forward(dt[k], dtx[k], bs[k], a2, state)
            y[k] = torch.einsum("tcbdn,tcbn->tcbd", h, cs[k])
            state = h[-1, -1].clone()
            del h
        out = lay.from_steps(y)
        if D is not None:
            out = out + D.float() * x.float()
        ctx.save_for_backward(A, D, dt, xs, bs, cs, torch.stack(starts))
        ctx.lay, ctx.dtypes = lay, (x.dtype, delta.dtype, B.dtype, C.dtype)
        return out.to(x.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        A, D, dt, xs, bs, cs, starts = ctx.saved_tensors
        lay = ctx.lay
        gys = lay.to_steps(gy)
        af = A.float()
        a2 = af * LOG2E
        dtx = dt * xs
        g_x, g_delta = torch.empty_like(dt), torch.empty_like(dt)
        g_b, g_c = torch.empty_like(bs), torch.empty_like(cs)
        g_a = torch.zeros_like(af)
        carry = torch.zeros_like(starts[0])
        for k in range(lay.n_blocks - 1, -1, -1):
            a, h = _block_forward(dt[k], dtx[k], bs[k], a2, starts[k])
            g = _block_grad_states(a, gys[k], cs[k], carry)
            carry = a[0, 0] * g[0, 0]
            q = a.mul_(g)  # d loss / d (delta A)_t = g_t a_t h_{t-1}
            q[1:].mul_(h[:-1])
            q[0, 1:].mul_(h[-1, :-1])
            q[0, 0].mul_(starts[k])
            # sums over D as [1, D] @ [D, N] matmuls and the sum over N with A as mul + sum: einsum
            # permutes these into copies (3-10x slower at these shapes, measured)
            g_c[k] = torch.matmul(gys[k][..., None, :], h)[..., 0, :]
            gb_sum = torch.einsum("tcbdn,tcbn->tcbd", g, bs[k])  # sum_n g B
            g_b[k] = torch.matmul(dtx[k][..., None, :], g)[..., 0, :]
            torch.mul(dt[k], gb_sum, out=g_x[k])
            g_delta[k] = torch.mul(q, af).sum(-1).addcmul_(xs[k], gb_sum)
            g_a += q.mul_(dt[k][..., None]).sum((0, 1, 2))
        g_d = None
        if D is not None:
            g_x.addcmul_(gys, D.float())
            g_d = (gys * xs).sum((0, 1, 2, 3)).to(D.dtype)
        tx, tdelta, tb, tc = ctx.dtypes
        return (lay.from_steps(g_x).to(tx), lay.from_steps(g_delta).to(tdelta), g_a.to(A.dtype),
                lay.from_steps(g_b).to(tb), lay.from_steps(g_c).to(tc), g_d, None, None)


def selective_scan_chunked(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor,
                           C: torch.Tensor, D: torch.Tensor | None = None, reverse: bool = False,
                           chunk: int | None = None) -> torch.Tensor:
    """Blocked selective scan with a hand-written backward (see the module docstring).

    :param chunk: the chunk length T; default about sqrt of the block length.
    :returns: ``[batch, L, D]`` in the dtype of ``x``; computed in fp32.
    """
    return _Scan.apply(x, delta, A, B, C, D, bool(reverse), chunk)
