"""``gathered_attention``: softmax attention of each row's query tokens over its own key tokens.

The tokens of a flat sequence are grouped into rows (Ramba's intra-entity and relational
attention, :mod:`tabzoo_ramba.layers`): row ``r`` has the query tokens ``q_tok[r]`` and may read the
key tokens ``k_tok[r]`` (flat token ids, ``-1`` = no token). Every token is a query of at most one
row. ``qkv [T, 3 H Dh]`` holds each token's query, key and value (head-major in each third, as a
``Linear(d, 3 d)`` gives them); the output ``[T, H Dh]`` is each query's attention over its row's
keys, 0 for a token that is no row's query or whose row has no key.

Backends (priority): ``cpu_fused`` (25; CPU, fp32, no autocast, where the compiled library of
:mod:`tabzoo.kernels.scan_cpu` is built: one pass per row reads the keys and values in place and
writes the output in token order, with a written backward that returns the gradient of ``qkv``
directly; no gathered copies, no per-size groups, no scatter back), ``reference`` (0; pads every
row to ``Km`` keys, explicit fp32 softmax, ``index_put`` back).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from tabzoo.errors import TabzooInputError
from tabzoo.kernels import scan_cpu
from tabzoo.kernels.op_registry import Backend, Cost, define_op, dispatch, register_backend

__all__ = ["gathered_attention", "gathered_attention_reference"]

OP = "gathered_attention"


def _scale(qkv: torch.Tensor, n_heads: int, scale: float | None) -> float:
    return scale if scale is not None else 1.0 / math.sqrt(qkv.shape[1] // 3 // n_heads)


def gathered_attention_reference(qkv: torch.Tensor, q_tok: torch.Tensor, k_tok: torch.Tensor, n_heads: int,
                                 scale: float | None = None) -> torch.Tensor:
    """Pure torch: q ``[R, H, Qm, Dh]`` and k, v ``[R, H, Km, Dh]`` gathered (``-1`` slots read token
    0 and are masked), softmax in fp32, the valid queries put back in token order ``[T, H Dh]``."""
    t, d3 = qkv.shape
    d = d3 // 3
    dh = d // n_heads
    r, qm = q_tok.shape
    flat = qkv.reshape(t, 3, n_heads, dh)
    q = flat[q_tok.clamp(min=0), 0].transpose(1, 2)  # [R, H, Qm, Dh]
    kv = flat[k_tok.clamp(min=0)]  # [R, Km, 3, H, Dh]
    k, v = kv[:, :, 1].transpose(1, 2), kv[:, :, 2].transpose(1, 2)
    s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * _scale(qkv, n_heads, scale)  # [R, H, Qm, Km]
    allowed = (k_tok >= 0)[:, None, None, :]
    s = s.masked_fill(~allowed, float("-inf"))
    has = allowed.any(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(~has, 0.0), dim=-1) * has
    o = torch.matmul(p, v.float()).to(qkv.dtype).transpose(1, 2).reshape(r * qm, d)  # [R Qm, D]
    out = qkv.new_zeros(t, d)
    valid = (q_tok >= 0).reshape(-1)
    return out.index_put((q_tok.reshape(-1)[valid],), o[valid])


class _Fused(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, qkv: torch.Tensor, q_tok: torch.Tensor, k_tok: torch.Tensor, n_heads: int,
                scale: float) -> torch.Tensor:
        qkv = qkv.contiguous()
        q_tok, k_tok = q_tok.contiguous(), k_tok.contiguous()
        out, lse = scan_cpu._module().gat_fwd(qkv, q_tok, k_tok, n_heads, scale)
        ctx.save_for_backward(qkv, q_tok, k_tok, out, lse)
        ctx.args = (n_heads, scale)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, go: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        qkv, q_tok, k_tok, out, lse = ctx.saved_tensors
        g = scan_cpu._module().gat_bwd(qkv, q_tok, k_tok, out, lse, go.float().contiguous(), *ctx.args)
        return g, None, None, None, None


def gathered_attention_cpu(qkv: torch.Tensor, q_tok: torch.Tensor, k_tok: torch.Tensor, n_heads: int,
                           scale: float | None = None) -> torch.Tensor:
    """The compiled pass (see the module docstring): ``[T, H Dh]`` fp32."""
    return _Fused.apply(qkv, q_tok, k_tok, int(n_heads), _scale(qkv, n_heads, scale))


def _fused_reasons(inputs: Mapping[str, Any]) -> list[str]:
    reasons: list[str] = []
    if inputs["qkv"].dtype != torch.float32:
        reasons.append("the compiled gathered attention is fp32 only")
    if torch.is_autocast_enabled("cpu"):
        reasons.append("CPU autocast is on: the compiled loop would run in fp32 where autocast asks for bf16")
    return reasons


def _cost(inputs: Mapping[str, Any]) -> Cost:
    qkv, q_tok, k_tok = inputs["qkv"], inputs["q_tok"], inputs["k_tok"]
    d = qkv.shape[1] // 3
    pairs = float(q_tok.numel()) * k_tok.shape[1]
    return Cost(flops=4.0 * pairs * d, bytes=float(qkv.numel() + qkv.shape[0] * d) * qkv.element_size())


define_op(OP, {"scale": None})
register_backend(Backend("reference", OP, gathered_attention_reference, priority=0, cost=_cost))
register_backend(Backend("cpu_fused", OP, gathered_attention_cpu, priority=25, devices=("cpu",),
                         dtypes=(torch.float32,), is_available=scan_cpu.available,
                         not_supported_reasons=_fused_reasons, cost=_cost))


def gathered_attention(qkv: torch.Tensor, q_tok: torch.Tensor, k_tok: torch.Tensor, n_heads: int,
                       scale: float | None = None) -> torch.Tensor:
    """Each row's queries attend over its keys (see the module docstring).

    :param qkv: ``[T, 3 H Dh]`` floating; queries, keys, values of every token.
    :param q_tok: ``[R, Qm]`` int64 query token ids per row, ``-1`` = none; each token in one row at most.
    :param k_tok: ``[R, Km]`` int64 key token ids per row, ``-1`` = none.
    :param n_heads: ``H``; must divide ``qkv.shape[1] / 3``.
    :param scale: score scale, default ``1 / sqrt(Dh)``.
    :returns: ``[T, H Dh]`` in the dtype of ``qkv``.
    :raises TabzooInputError: on inconsistent shapes or dtypes.
    """
    if not isinstance(qkv, torch.Tensor) or qkv.dim() != 2 or not qkv.is_floating_point() or qkv.shape[1] % 3:
        raise TabzooInputError(f"gathered_attention: qkv must be a floating [T, 3 H Dh] tensor; "
                               f"got {getattr(qkv, 'shape', qkv)}")
    if n_heads < 1 or (qkv.shape[1] // 3) % n_heads:
        raise TabzooInputError(f"gathered_attention: n_heads {n_heads} must divide {qkv.shape[1] // 3}")
    for name, t in (("q_tok", q_tok), ("k_tok", k_tok)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2 or t.dtype != torch.int64:
            raise TabzooInputError(f"gathered_attention: {name} must be an int64 [R, width] tensor; "
                                   f"got {getattr(t, 'dtype', t)} {list(getattr(t, 'shape', []))}")
    if q_tok.shape[0] != k_tok.shape[0]:
        raise TabzooInputError(f"gathered_attention: q_tok has {q_tok.shape[0]} rows, k_tok {k_tok.shape[0]}")
    return dispatch(OP, {"qkv": qkv, "q_tok": q_tok, "k_tok": k_tok, "n_heads": int(n_heads), "scale": scale})
