"""``linear_attention``: non-causal kernelised attention over the context rows.

With ``phi(x) = elu(x) + 1`` and context rows ``j < n_context``::

    S = sum_j phi(k_j) v_j^T      [Dh, Dv]   (fp32)
    z = sum_j phi(k_j)            [Dh]       (fp32)
    out_i = phi(q_i) S / (phi(q_i) . z + eps)     for every row i (context and query)

Backends (priority): ``einsum`` (20; computes S and z once, then streams the rows in chunks, so
memory is linear in N and the work is two skinny matmuls), ``reference`` (0; the explicit
``[N, n_context]`` kernel matrix, normalised).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from tabzoo.errors import TabzooInputError
from tabzoo.kernels.op_registry import Backend, Cost, define_op, dispatch, register_backend

__all__ = ["linear_attention", "DEFAULT_CHUNK_ROWS", "fast_read", "fast_state"]

OP = "linear_attention"
LOG2E = 1.0 / math.log(2.0)
#: rows per chunk of the einsum backend (tuned on a 2-core AVX-512 CPU; see benchmarks/kernels.py)
DEFAULT_CHUNK_ROWS = 1024


def _validate(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_context: int) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise TabzooInputError(f"linear_attention: {name} must be a 4-d tensor [B, H, N, Dh]; got {getattr(t, 'shape', t)}")
    if q.shape != k.shape or q.shape[:3] != v.shape[:3]:
        raise TabzooInputError(
            f"linear_attention: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} must share [B, H, N] "
            "(and q, k their head dim)"
        )
    if not (q.dtype == k.dtype == v.dtype):
        raise TabzooInputError(f"linear_attention: q, k, v dtypes differ ({q.dtype}, {k.dtype}, {v.dtype}); cast them to one")
    if isinstance(n_context, bool) or not isinstance(n_context, int) or not 1 <= n_context <= q.shape[2]:
        raise TabzooInputError(
            f"linear_attention: n_context must be an int in [1, N={q.shape[2]}]; got {n_context!r}. "
            "Every row reads the first n_context rows, so there must be at least one."
        )


def _phi(x: torch.Tensor) -> torch.Tensor:
    return F.elu(x) + 1.0


def linear_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_context: int,
                               eps: float = 1e-6) -> torch.Tensor:
    """The explicit ``[B, H, N, n_context]`` kernel matrix, row-normalised (fp32).

    :returns: ``[B, H, N, Dv]`` in the dtype of ``q``.
    """
    kern = torch.matmul(_phi(q.float()), _phi(k[:, :, :n_context].float()).transpose(-1, -2))
    num = torch.matmul(kern, v[:, :, :n_context].float())
    return (num / (kern.sum(dim=-1, keepdim=True) + eps)).to(q.dtype)


def context_state(k: torch.Tensor, v: torch.Tensor, n_context: int) -> torch.Tensor:
    """``[S | z]``: ``[B, H, Dh, Dv + 1]`` fp32, the summed context (z is the last column)."""
    kc = _phi(k[:, :, :n_context].float())
    vc = v[:, :, :n_context].float()
    ones = torch.ones(vc.shape[:-1] + (1,), dtype=vc.dtype, device=vc.device)
    return torch.matmul(kc.transpose(-1, -2), torch.cat([vc, ones], dim=-1))


def _phi_into(dst: torch.Tensor, src: torch.Tensor, tmp: torch.Tensor) -> torch.Tensor:
    """``dst = elu(src) + 1`` in place, as ``exp2(min(x, 0) * log2 e) + max(x, 0)``.

    torch's ``exp2`` is several times faster than ``exp`` (which ``elu`` uses) on CPU.
    """
    dst.copy_(src)
    torch.clamp(dst, min=0.0, out=tmp)
    dst.clamp_(max=0.0).mul_(LOG2E).exp2_()
    return dst.add_(tmp)


def fast_state(k3: torch.Tensor, v3: torch.Tensor, chunk: int,
               state: torch.Tensor | None = None) -> torch.Tensor:
    """No-autograd ``[S | z]`` of ``k3 [BH, n, Dh]``, ``v3 [BH, n, Dv]``: ``[BH, Dh, Dv + 1]`` fp32.

    Rows are streamed in chunks through reused buffers; ``state`` (when given) is added into.
    """
    bh, n, dh = k3.shape
    dv = v3.shape[-1]
    if state is None:
        state = torch.zeros(bh, dh, dv + 1, dtype=torch.float32, device=k3.device)
    rows = max(1, min(chunk, n))
    pbuf = torch.empty(bh, rows, dh, dtype=torch.float32, device=k3.device)
    tbuf = torch.empty_like(pbuf)
    vbuf = torch.ones(bh, rows, dv + 1, dtype=torch.float32, device=k3.device)  # last column stays 1
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        p = _phi_into(pbuf[:, :m], k3[:, start:start + m], tbuf[:, :m])
        vbuf[:, :m, :dv].copy_(v3[:, start:start + m])
        state.baddbmm_(p.transpose(1, 2), vbuf[:, :m])
    return state


def fast_read(q3: torch.Tensor, state: torch.Tensor, eps: float, chunk: int,
              out_dtype: torch.dtype) -> torch.Tensor:
    """No-autograd read of ``[S | z]`` (``[BH, Dh, Dv + 1]`` fp32) by ``q3 [BH, n, Dh]``: ``[BH, n, Dv]``."""
    bh, n, dh = q3.shape
    dv = state.shape[-1] - 1
    rows = max(1, min(chunk, n))
    pbuf = torch.empty(bh, rows, dh, dtype=torch.float32, device=q3.device)
    tbuf = torch.empty_like(pbuf)
    nbuf = torch.empty(bh, rows, dv + 1, dtype=torch.float32, device=q3.device)
    out = torch.empty(bh, n, dv, dtype=out_dtype, device=q3.device)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        p = _phi_into(pbuf[:, :m], q3[:, start:start + m], tbuf[:, :m])
        nd = torch.bmm(p, state, out=nbuf[:, :m])
        inv = nd[..., dv:].add_(eps).reciprocal_()  # [bh, m, 1]: one division per row, then multiplies
        if out.dtype == torch.float32:
            torch.mul(nd[..., :dv], inv, out=out[:, start:start + m])
        else:
            out[:, start:start + m] = nd[..., :dv] * inv
    return out


def _fast(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_context: int, eps: float, chunk: int) -> torch.Tensor:
    """No-autograd path: reused chunk buffers, no allocation proportional to N but the output."""
    b, h, n, dh = q.shape
    dv = v.shape[-1]
    bh = b * h
    q3, k3, v3 = q.reshape(bh, n, dh), k.reshape(bh, n, dh), v.reshape(bh, n, dv)
    state = fast_state(k3[:, :n_context], v3[:, :n_context], chunk)
    return fast_read(q3, state, eps, chunk, q.dtype).reshape(b, h, n, dv)


def linear_attention_einsum(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_context: int,
                            eps: float = 1e-6, chunk_size: int | None = None) -> torch.Tensor:
    """S and z once, then the rows in chunks of ``chunk_size`` (default :data:`DEFAULT_CHUNK_ROWS`).

    Without autograd it works in reused chunk buffers (nothing of size N is allocated but the
    output); with autograd it builds the same computation from differentiable ops.

    :returns: ``[B, H, N, Dv]`` in the dtype of ``q``.
    """
    chunk = max(1, int(chunk_size or DEFAULT_CHUNK_ROWS))
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))):
        with torch.no_grad():
            return _fast(q, k, v, n_context, eps, chunk)
    state = context_state(k, v, n_context)  # [B, H, Dh, Dv+1]
    dv = v.shape[-1]
    parts = []
    for start in range(0, q.shape[2], chunk):
        nd = torch.matmul(_phi(q[:, :, start:start + chunk].float()), state)
        parts.append(nd[..., :dv] / (nd[..., dv:] + eps))
    return torch.cat(parts, dim=2).to(q.dtype)


def _reference_cost(inputs: Mapping[str, Any]) -> Cost:
    q, v, nc = inputs["q"], inputs["v"], inputs["n_context"]
    b, h, n, dh = q.shape
    dv = v.shape[-1]
    io = (3 * q.numel() + v.numel()) * q.element_size()
    return Cost(flops=2.0 * b * h * n * nc * (dh + dv), bytes=float(io + 2 * b * h * n * nc * 4))


def _einsum_cost(inputs: Mapping[str, Any]) -> Cost:
    q, v, nc = inputs["q"], inputs["v"], inputs["n_context"]
    b, h, n, dh = q.shape
    dv = v.shape[-1]
    io = (3 * q.numel() + v.numel()) * q.element_size()
    return Cost(flops=2.0 * b * h * (nc * dh * (dv + 1) + n * dh * (dv + 1)), bytes=float(io))


define_op(OP, {"eps": 1e-6})
register_backend(Backend("reference", OP, linear_attention_reference, priority=0, cost=_reference_cost))
register_backend(Backend("einsum", OP, linear_attention_einsum, priority=20, cost=_einsum_cost))


def linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_context: int,
                     eps: float = 1e-6) -> torch.Tensor:
    """Non-causal linear attention (feature map elu+1) in which every row reads the context rows.

    :param q: ``[B, H, N, Dh]``.
    :param k: ``[B, H, N, Dh]``.
    :param v: ``[B, H, N, Dv]``.
    :param n_context: rows ``[0, n_context)`` are the keys of every row, ``1 <= n_context <= N``.
    :param eps: added to the normaliser.
    :returns: ``[B, H, N, Dv]`` in the input dtype; sums are kept in fp32.
    :raises TabzooInputError: on inconsistent shapes or a bad ``n_context``.
    """
    _validate(q, k, v, n_context)
    return dispatch(OP, {"q": q, "k": k, "v": v, "n_context": n_context, "eps": eps})
