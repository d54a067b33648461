"""A ``masked_attention`` backend for MultiTab-Net's inter-feature attention on CPU (issue 26 item 4).

The inter-feature attention reads ``d + t`` tokens (8 features + 3 tasks = 11 keys) with head
width ``e / heads`` (4) for every row and head: ``M = B * N * heads`` tiny attention problems.
torch's CPU kernels spend their time per problem there: the flash kernel behind sdpa walks
11 x 4 blocks, batched matmuls call a GEMM per problem and softmax over a last axis of 11 runs
unvectorised (10x slower than over 16; ``multitab-attention-micro-2026-11-27.json``). This backend
lays the problems out *batch-last*, ``[tokens, head width, M]``, so each step is one elementwise
multiply-add over all ``M`` problems at once (vectorised along ``M``), looping over the few keys
and head-width columns; its backward is written out (with the flash-attention identity
``sum_j p_ij dp_ij = sum_d do_id o_id``). At batch 256 (``M = 512``) a forward + backward of the
inter-feature attention costs about a third of sdpa's; below ``M = 128`` sdpa is cheaper.

Registered on import as ``masked_attention/multitab_short_keys`` (priority 25: above sdpa, below
flex). It runs only inside :func:`short_keys` (MultiTab-Net's encoder opens it), so other models
keep the core's backends and their numerics; outside, and for long key axes, wide heads, GPUs,
per-batch masks, half precision or few problems, it refuses with the reason and dispatch falls back to sdpa.
``tabzoo.kernels.use("sdpa")`` (or ``"reference"``) still forces the core's path.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from tabzoo.kernels import Backend, Cost, list_backends, register_backend

__all__ = ["NAME", "MAX_KEYS", "MAX_HEAD_DIM", "MIN_PROBLEMS", "short_keys", "short_key_attention", "register"]

NAME = "multitab_short_keys"
OP = "masked_attention"
#: longest query / key axis it takes (its products are ``[Nq, Nk, Dh, M]``)
MAX_KEYS = 32
#: widest head it takes
MAX_HEAD_DIM = 16
#: fewest attention problems (batch x heads) it takes: below, its fixed per-call cost (a Python
#: loop over keys and head width) exceeds sdpa's (crossover near 100 at 11 keys, head width 4)
MIN_PROBLEMS = 128
_SCOPE: contextvars.ContextVar[bool] = contextvars.ContextVar("tabzoo_multitab_short_keys", default=False)


@contextlib.contextmanager
def short_keys() -> Iterator[None]:
    """Inside the block, ``masked_attention`` calls this backend supports run on it."""
    token = _SCOPE.set(True)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def _dense_mask(mask: Any, nq: int, nk: int, device: torch.device) -> torch.Tensor:
    """``[Nq, Nk]`` bool (True = may attend) of a Mask or a 2-D-broadcastable bool tensor."""
    if isinstance(mask, torch.Tensor):
        return mask.to(device).reshape(mask.shape[-2:]).expand(nq, nk)
    return mask.materialize(nq, nk, device=device)


def _batch_last(t: torch.Tensor) -> torch.Tensor:
    """``[B, H, N, Dh]`` -> ``[N, Dh, B * H]`` (contiguous)."""
    b, h, n, d = t.shape
    return t.permute(2, 3, 0, 1).reshape(n, d, b * h)


class _ShortKeyAttention(torch.autograd.Function):
    """Softmax attention in the batch-last layout ``[tokens, Dh, M]``; see the module docstring."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None,
                keep: torch.Tensor | None, scale: float) -> torch.Tensor:
        b, h, nq, d = q.shape
        ql, kl, vl = _batch_last(q), _batch_last(k), _batch_last(v)
        # loops over the head width and the keys, accumulating in place: no [Nq, Nk, Dh, M]
        # temporary (at batch 256 one is 1 MB, and fresh pages of that size cost more than the sums)
        s = ql[:, 0, None] * kl[None, :, 0]  # [Nq, Nk, M]
        for i in range(1, d):
            s.addcmul_(ql[:, i, None], kl[None, :, i])
        s.mul_(scale)
        if bias is not None:
            s.add_(bias[:, :, None])
        p = torch.softmax(s, dim=1)
        if keep is not None:  # query rows that may read no key give exactly 0
            p.mul_(keep[:, None, None])
        o = p[:, 0, None] * vl[None, 0]  # [Nq, Dh, M]
        for j in range(1, vl.shape[0]):
            o.addcmul_(p[:, j, None], vl[None, j])
        ctx.save_for_backward(ql, kl, vl, p, o)
        ctx.scale, ctx.shape = scale, (b, h)
        return o.view(nq, d, b, h).permute(2, 3, 0, 1)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        ql, kl, vl, p, o = ctx.saved_tensors
        b, h = ctx.shape
        nq, d, _ = ql.shape
        nk = kl.shape[0]
        g = _batch_last(grad)  # [Nq, Dh, M]
        dv = p[0, :, None] * g[0, None]  # [Nk, Dh, M] = sum_i p_ij g_i
        for i in range(1, nq):
            dv.addcmul_(p[i, :, None], g[i, None])
        dp = g[:, None, 0] * vl[None, :, 0]  # [Nq, Nk, M] = sum_d g_id v_jd
        for i in range(1, d):
            dp.addcmul_(g[:, None, i], vl[None, :, i])
        delta = (g * o).sum(1, keepdim=True)  # [Nq, 1, M] = sum_j p_ij dp_ij
        ds = dp.sub_(delta).mul_(p).mul_(ctx.scale)  # p * (dp - delta) * scale
        dq = ds[:, 0, None] * kl[None, 0]  # [Nq, Dh, M] = sum_j ds_ij k_j
        for j in range(1, nk):
            dq.addcmul_(ds[:, j, None], kl[None, j])
        dk = ds[0, :, None] * ql[0, None]  # [Nk, Dh, M] = sum_i ds_ij q_i
        for i in range(1, nq):
            dk.addcmul_(ds[i, :, None], ql[i, None])

        def back(t: torch.Tensor, n: int) -> torch.Tensor:
            return t.view(n, d, b, h).permute(2, 3, 0, 1)

        return back(dq, nq), back(dk, nk), back(dv, nk), None, None, None


_BIAS_CACHE: dict[tuple[Any, ...], tuple[torch.Tensor, torch.Tensor | None]] = {}


def _bias(mask: Any, nq: int, nk: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(bias [Nq, Nk], keep [Nq] | None)``: 0 / -inf of ``mask`` with rows that may read no key
    opened up, and the rows to keep (None when every row reads a key). Cached for Mask objects."""
    key = (mask, nq, nk, dtype, str(device)) if not isinstance(mask, torch.Tensor) else None
    hit = _BIAS_CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit
    dense = _dense_mask(mask, nq, nk, device)
    row_any = dense.any(dim=-1)
    dense = dense | ~row_any[:, None]  # an empty row reads everything, then is zeroed
    bias = torch.zeros(nq, nk, dtype=dtype, device=device).masked_fill(~dense, float("-inf"))
    out = (bias, None if bool(row_any.all()) else row_any.to(dtype))
    if key is not None:
        if len(_BIAS_CACHE) >= 32:
            _BIAS_CACHE.clear()
        _BIAS_CACHE[key] = out
    return out


def short_key_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Any = None,
                        scale: float | None = None) -> torch.Tensor:
    """Softmax attention of ``q [B, H, Nq, Dh]`` over ``k``, ``v [B, H, Nk, Dh]`` where ``mask``
    (a :class:`tabzoo.masks.Mask` or a bool ``[Nq, Nk]``) allows it; ``[B, H, Nq, Dh]``, and
    exactly 0 for a query row that may read no key."""
    nq, nk = q.shape[2], k.shape[2]
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    bias, keep = (None, None) if mask is None else _bias(mask, nq, nk, q.dtype, q.device)
    return _ShortKeyAttention.apply(q, k, v, bias, keep, scale)


def _reasons(inputs: Mapping[str, Any]) -> list[str]:
    q, k, mask = inputs["q"], inputs["k"], inputs["mask"]
    out: list[str] = []
    if not _SCOPE.get():
        out.append("runs only inside MultiTab-Net's encoder (tabzoo_multitab.attention.short_keys()); "
                   "other models keep the core's backends")
    if max(q.shape[2], k.shape[2]) > MAX_KEYS:
        out.append(f"{q.shape[2]} queries / {k.shape[2]} keys: more than {MAX_KEYS} (its [Nq, Nk, Dh, B*H] products "
                   "grow with both; sdpa runs long axes)")
    if q.shape[0] * q.shape[1] < MIN_PROBLEMS:
        out.append(f"{q.shape[0] * q.shape[1]} attention problems (batch x heads) < {MIN_PROBLEMS}: its fixed "
                   "per-call cost exceeds sdpa's there")
    if q.shape[-1] > MAX_HEAD_DIM:
        out.append(f"head width {q.shape[-1]} > {MAX_HEAD_DIM} (matmul-based backends win there)")
    if isinstance(mask, torch.Tensor) and (mask.dim() > 2 and any(s != 1 for s in mask.shape[:-2])):
        out.append(f"a per-batch or per-head bool mask {tuple(mask.shape)}; it takes a Mask or one [Nq, Nk] mask")
    return out


def _cost(inputs: Mapping[str, Any]) -> Cost:
    q, k = inputs["q"], inputs["k"]
    problems, pairs, width = q.shape[0] * q.shape[1], q.shape[2] * k.shape[2], q.shape[-1]
    # each multiply-add pass reads and writes its accumulator ([Nq, Nk, M] over the head width,
    # [Nq, Dh, M] over the keys): 4 Nq Nk Dh M elements forward, plus the batch-last copies
    moved = 4 * pairs * width * problems + 3 * q.numel() + 2 * k.numel()
    return Cost(flops=4.0 * problems * pairs * width, bytes=float(moved * q.element_size()))


BACKEND = Backend(NAME, OP, short_key_attention, priority=25, devices=("cpu",), dtypes=(torch.float32, torch.float64),
                  not_supported_reasons=_reasons, cost=_cost, origin="tabzoo-multitab (tabzoo_multitab.attention)")


def register() -> None:
    """Register :data:`BACKEND` once per process (importing the model does it)."""
    if not any(b.name == NAME for b in list_backends(OP)):
        register_backend(BACKEND)


register()
