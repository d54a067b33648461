"""``masked_attention``: softmax attention under a mask.

Backends (priority): ``flex`` (30; block-sparse flex_attention; on CPU only when forced, see
:func:`_flex_reasons`), ``cpu_fused`` (25; short sequences on the CPU, at most
:data:`FUSED_MAX_KEYS` keys, fp32, no mask or a key-padding mask ``[B, 1, 1, Nk]``:
one compiled loop per (batch, head) from the library of :mod:`tabzoo.kernels.scan_cpu`, where it is
built; see :func:`_fused_reasons`), ``sdpa`` (20; torch scaled_dot_product_attention with a bool
mask), ``reference`` (0; explicit fp32 softmax).

Every backend gives exactly 0 for a query row that may read no key, with finite gradients.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from tabzoo.errors import TabzooInputError
from tabzoo.kernels.op_registry import (
    Backend,
    Cost,
    define_op,
    device_type,
    dispatch,
    forced_backend,
    register_backend,
)

__all__ = ["masked_attention"]

OP = "masked_attention"
FLEX_BLOCK = 128
MaskLike = Any  # tabzoo.masks.Mask | torch.Tensor | None


def _is_mask_object(mask: object) -> bool:
    return hasattr(mask, "materialize") and hasattr(mask, "block_mask") and not isinstance(mask, torch.Tensor)


def _validate(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: MaskLike) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise TabzooInputError(f"masked_attention: {name} must be a 4-d tensor [B, H, N, Dh]; got {getattr(t, 'shape', t)}")
    if k.shape[:3] != v.shape[:3]:
        raise TabzooInputError(f"masked_attention: k {tuple(k.shape)} and v {tuple(v.shape)} must agree on [B, H, Nk]")
    if q.shape[:2] != k.shape[:2] or q.shape[-1] != k.shape[-1]:
        raise TabzooInputError(
            f"masked_attention: q {tuple(q.shape)} and k {tuple(k.shape)} must agree on B, H and Dh; reshape them"
        )
    if not (q.dtype == k.dtype == v.dtype):
        raise TabzooInputError(f"masked_attention: q, k, v dtypes differ ({q.dtype}, {k.dtype}, {v.dtype}); cast them to one")
    if mask is None or _is_mask_object(mask):
        return
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TabzooInputError(
            "masked_attention: mask must be a tabzoo.masks.Mask, a bool tensor (True = may attend) or None; "
            f"got {type(mask).__name__} {getattr(mask, 'dtype', '')}. Convert an additive mask with `bias == 0`."
        )
    target = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    # pure Python, not torch.broadcast_shapes: its first call imports torch.fx's symbolic shapes and
    # sympy (seconds of CPU in every fresh process)
    if len(mask.shape) > 4 or not all(m in (1, t) for m, t in zip(reversed(mask.shape), reversed(target), strict=False)):
        raise TabzooInputError(
            f"masked_attention: bool mask {tuple(mask.shape)} does not broadcast to [B, H, Nq, Nk] = {target}"
        )


_DENSE_CACHE: OrderedDict[tuple[Any, ...], tuple[torch.Tensor, torch.Tensor | None]] = OrderedDict()
_CACHE_SIZE = 32


def _dense(mask: MaskLike, nq: int, nk: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(safe_mask, row_any)``: a bool mask with empty rows opened up, and the rows to keep.

    ``row_any`` is None when every query row has an allowed key (then ``safe_mask`` is the mask).
    """
    key = None
    if _is_mask_object(mask):
        key = (mask, nq, nk, str(device))
        hit = _DENSE_CACHE.get(key)
        if hit is not None:
            _DENSE_CACHE.move_to_end(key)
            return hit
        dense = mask.materialize(nq, nk, device=device)
    else:
        dense = mask.to(device)
    row_any = dense.any(dim=-1, keepdim=True)
    if bool(row_any.all()):
        result: tuple[torch.Tensor, torch.Tensor | None] = (dense, None)
    else:
        result = (dense | ~row_any, row_any)
    if key is not None:
        _DENSE_CACHE[key] = result
        if len(_DENSE_CACHE) > _CACHE_SIZE:
            _DENSE_CACHE.popitem(last=False)
    return result


def _scale(q: torch.Tensor, scale: float | None) -> float:
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


# ----------------------------------------------------------------------------- reference
def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: MaskLike = None,
                        scale: float | None = None) -> torch.Tensor:
    """Explicit softmax attention computed in fp32.

    :param q: ``[B, H, Nq, Dh]``; ``k``, ``v``: ``[B, H, Nk, Dh]``.
    :returns: ``[B, H, Nq, Dh]`` in the dtype of ``q``.
    """
    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * _scale(q, scale)
    if mask is None:
        probs = torch.softmax(scores, dim=-1)
    else:
        dense = mask.materialize(q.shape[2], k.shape[2], device=q.device) if _is_mask_object(mask) else mask.to(q.device)
        dense = dense.expand_as(scores)
        row_any = dense.any(dim=-1, keepdim=True)
        scores = scores.masked_fill(~dense, float("-inf"))
        scores = torch.where(row_any, scores, torch.zeros_like(scores))  # avoid NaN from all -inf rows
        probs = torch.softmax(scores, dim=-1) * row_any
    return torch.matmul(probs, v.float()).to(q.dtype)


def _dense_cost(inputs: Mapping[str, Any]) -> Cost:
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    b, h, nq, dh = q.shape
    nk = k.shape[2]
    io = (q.numel() + k.numel() + v.numel() + q.numel()) * q.element_size()
    return Cost(flops=4.0 * b * h * nq * nk * dh, bytes=float(io + nq * nk))


def _reference_cost(inputs: Mapping[str, Any]) -> Cost:
    base = _dense_cost(inputs)
    q, k = inputs["q"], inputs["k"]
    scores = q.shape[0] * q.shape[1] * q.shape[2] * k.shape[2] * 4 * 3  # fp32 scores written, read, probs
    return Cost(flops=base.flops, bytes=base.bytes + scores)


# ----------------------------------------------------------------------------- sdpa
def attention_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: MaskLike = None,
                   scale: float | None = None) -> torch.Tensor:
    """torch SDPA with a bool mask; rows with no allowed key are opened up, then zeroed."""
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, scale=_scale(q, scale))
    safe, row_any = _dense(mask, q.shape[2], k.shape[2], q.device)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=safe, scale=_scale(q, scale))
    if row_any is not None:
        out = out * row_any.to(out.dtype)
    return out


# ----------------------------------------------------------------------------- cpu_fused
FUSED_MAX_KEYS = 8  # most keys the compiled loop takes (measured at 8 x 8: half the time of sdpa; slower from 16)


def _key_mask(mask: MaskLike, b: int, nk: int) -> torch.Tensor | None:
    """A key-padding bool mask (shape ``[B or 1, 1, 1, Nk]`` or a shorter broadcastable one) as a
    float ``[B, Nk]`` (1 = may attend); None for no mask."""
    if mask is None:
        return None
    m = mask.reshape(mask.shape[0] if mask.dim() == 4 else 1, mask.shape[-1])  # [B or 1, Nk or 1]
    return m.expand(b, nk).to(torch.float32).contiguous()


class _FusedAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kmask: torch.Tensor | None,
                scale: float) -> torch.Tensor:
        from tabzoo.kernels import scan_cpu

        unit = lambda t: t if t.stride(-1) == 1 else t.contiguous()  # noqa: E731
        q, k, v = unit(q), unit(k), unit(v)
        km = kmask if kmask is not None else q.new_empty(0)
        out, lse = scan_cpu._module().attn_fwd(q, k, v, km, scale)
        ctx.save_for_backward(q, k, v, km, out, lse)
        ctx.scale = scale
        return out.transpose(1, 2)  # [B, H, Q, E], a view of the token-major buffer

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, go: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        from tabzoo.kernels import scan_cpu

        q, k, v, km, out, lse = ctx.saved_tensors
        go = go if go.stride(-1) == 1 else go.contiguous()
        gq, gk, gv = scan_cpu._module().attn_bwd(q, k, v, km, out, lse, go, ctx.scale)
        return gq.transpose(1, 2), gk.transpose(1, 2), gv.transpose(1, 2), None, None


def attention_cpu_fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: MaskLike = None,
                        scale: float | None = None) -> torch.Tensor:
    """Softmax attention of short sequences as one compiled loop per (batch, head) (fp32, CPU):
    the scores of one query at a time, the probabilities recomputed in the backward from the saved
    log-sum-exp (as flash attention does). Strided ``q, k, v`` are read in place (the heads of a
    token-major ``[B, N, H, Dh]`` buffer need no copy) and the output is a ``[B, H, Nq, Dh]`` view
    of a token-major buffer. A query with no allowed key gets 0."""
    return _FusedAttention.apply(q, k, v, _key_mask(mask, q.shape[0], k.shape[2]), _scale(q, scale))


def _fused_available() -> bool:
    from tabzoo.kernels import scan_cpu

    return scan_cpu.available()


def _fused_reasons(inputs: Mapping[str, Any]) -> list[str]:
    q, k, v, mask = inputs["q"], inputs["k"], inputs["v"], inputs["mask"]
    reasons: list[str] = []
    if any(t.dtype != torch.float32 for t in (q, k, v)):
        reasons.append("the compiled attention loop is fp32 only")
    if k.shape[2] > FUSED_MAX_KEYS:
        reasons.append(f"{k.shape[2]} keys: the compiled loop takes at most {FUSED_MAX_KEYS} (more run faster in "
                       "sdpa's tiled kernel)")
    if mask is not None:
        if _is_mask_object(mask):
            reasons.append("a tabzoo.masks.Mask object: the compiled loop takes only a key-padding bool tensor")
        elif mask.dim() > 4 or any(d != 1 for d in mask.shape[-3:-1]) or (mask.dim() == 4 and mask.shape[0] not in
                                                                            (1, q.shape[0])):
            reasons.append(f"bool mask {tuple(mask.shape)} is not a key-padding mask [B, 1, 1, Nk]")
    return reasons


# ----------------------------------------------------------------------------- flex
def _flex_available() -> bool:
    """Whether this torch ships flex_attention, found WITHOUT importing it: the import costs ~6 s
    of CPU (it pulls in torch.fx's symbolic shapes) and every dispatch asks, also on CPU where flex
    is refused unless forced (:func:`_flex_reasons`); the backend imports it when it runs. Asked
    once per process: the file-system search cost ~1 ms of host time per dispatch."""
    if not _FLEX_FOUND:
        from importlib.util import find_spec

        try:
            _FLEX_FOUND.append(find_spec("torch.nn.attention.flex_attention") is not None)
        except (ImportError, ValueError):
            _FLEX_FOUND.append(False)
    return _FLEX_FOUND[0]


_FLEX_FOUND: list[bool] = []  # the answer of _flex_available, once asked (torch does not change in a process)


_FLEX_COMPILED: Any = None
_BLOCK_CACHE: OrderedDict[tuple[Any, ...], Any] = OrderedDict()


def _block_mask(mask: MaskLike, b: int, h: int, nq: int, nk: int, device: torch.device) -> Any:
    from torch.nn.attention.flex_attention import create_block_mask

    if _is_mask_object(mask):
        key = (mask, nq, nk, str(device))
        hit = _BLOCK_CACHE.get(key)
        if hit is None:
            hit = mask.block_mask(nq, nk, block=FLEX_BLOCK, device=device)
            _BLOCK_CACHE[key] = hit
            if len(_BLOCK_CACHE) > _CACHE_SIZE:
                _BLOCK_CACHE.popitem(last=False)
        return hit
    dense = mask.to(device)
    mb = b if dense.dim() == 4 and dense.shape[0] != 1 else None
    mh = h if dense.dim() == 4 and dense.shape[1] != 1 else None
    full = dense.expand(b, h, nq, nk) if dense.dim() == 4 else dense.expand(nq, nk)

    def mod(bi: torch.Tensor, hi: torch.Tensor, qi: torch.Tensor, ki: torch.Tensor) -> torch.Tensor:
        return full[bi, hi, qi, ki] if full.dim() == 4 else full[qi, ki]

    return create_block_mask(mod, mb, mh, nq, nk, device=device, BLOCK_SIZE=FLEX_BLOCK)


def attention_flex(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: MaskLike = None,
                   scale: float | None = None) -> torch.Tensor:
    """flex_attention with the mask's BlockMask (compiled on GPU, eager on CPU)."""
    global _FLEX_COMPILED
    from torch.nn.attention.flex_attention import flex_attention

    b, h, nq, _ = q.shape
    nk = k.shape[2]
    block = None if mask is None else _block_mask(mask, b, h, nq, nk, q.device)
    fn = flex_attention
    if q.device.type == "cpu" and not torch.is_grad_enabled():
        q, k, v = q.detach(), k.detach(), v.detach()  # torch refuses requires_grad inputs on CPU
    elif q.device.type != "cpu":
        if _FLEX_COMPILED is None:
            _FLEX_COMPILED = torch.compile(flex_attention, dynamic=False)
        fn = _FLEX_COMPILED
    with warnings.catch_warnings():
        # on CPU we run eager on purpose (only when forced); torch warns that this is unfused
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        return fn(q, k, v, block_mask=block, scale=_scale(q, scale))


def _flex_reasons(inputs: Mapping[str, Any]) -> list[str]:
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    reasons: list[str] = []
    if device_type(q) == "cpu":
        if forced_backend() != "flex":
            reasons.append(
                "on CPU torch runs flex_attention unfused (it materialises the scores, slower than sdpa); "
                "it is used on CPU only when forced with use('flex') or TABZOO_KERNELS=flex"
            )
        if any(t.requires_grad for t in (q, k, v)) and torch.is_grad_enabled():
            reasons.append("flex_attention has no backward on CPU; run under torch.no_grad() or use sdpa")
    else:
        dh = q.shape[-1]
        if dh < 16 or dh & (dh - 1):
            reasons.append(f"head dim {dh} must be a power of two >= 16 for compiled flex_attention")
        if isinstance(inputs["mask"], torch.Tensor) and q.shape[2] <= FLEX_BLOCK and forced_backend() != "flex":
            reasons.append(
                f"a bool tensor mask over {q.shape[2]} <= {FLEX_BLOCK} queries (one block row): its BlockMask would be "
                "rebuilt on every call (and flex recompiled per shape) to skip at most some key blocks; sdpa runs it "
                "(force flex with use('flex') to run it anyway)"
            )
    return reasons


def _flex_cost(inputs: Mapping[str, Any]) -> Cost:
    dense = _dense_cost(inputs)
    mask, q, k = inputs["mask"], inputs["q"], inputs["k"]
    nq, nk = q.shape[2], k.shape[2]
    nbq, nbk = -(-nq // FLEX_BLOCK), -(-nk // FLEX_BLOCK)
    if mask is None:
        frac = 1.0
    elif _is_mask_object(mask):
        frac = int(mask.block_layout(nq, nk, block=FLEX_BLOCK).shape[0]) / (nbq * nbk)
    else:
        m = mask.expand(*mask.shape[:-2], nq, nk).any(dim=tuple(range(mask.dim() - 2))) if mask.dim() > 2 else mask
        pad = F.pad(m.float(), (0, nbk * FLEX_BLOCK - nk, 0, nbq * FLEX_BLOCK - nq))
        blocks = pad.view(nbq, FLEX_BLOCK, nbk, FLEX_BLOCK).amax(dim=(1, 3))
        frac = float(blocks.mean())
    return Cost(flops=dense.flops * frac, bytes=dense.bytes)


# ----------------------------------------------------------------------------- op
define_op(OP, {"mask": None, "scale": None})
register_backend(Backend("reference", OP, attention_reference, priority=0, cost=_reference_cost))
register_backend(Backend("sdpa", OP, attention_sdpa, priority=20, cost=_dense_cost))
register_backend(Backend("cpu_fused", OP, attention_cpu_fused, priority=25, devices=("cpu",),
                         dtypes=(torch.float32,), is_available=_fused_available,
                         not_supported_reasons=_fused_reasons, cost=_dense_cost))
register_backend(
    Backend("flex", OP, attention_flex, priority=30, dtypes=(torch.float32, torch.bfloat16, torch.float16),
            is_available=_flex_available, not_supported_reasons=_flex_reasons, cost=_flex_cost)
)


def masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: MaskLike = None,
                     scale: float | None = None) -> torch.Tensor:
    """Softmax attention of ``q`` over ``k``/``v`` where ``mask`` allows it.

    :param q: ``[B, H, Nq, Dh]``.
    :param k: ``[B, H, Nk, Dh]``.
    :param v: ``[B, H, Nk, Dh]``.
    :param mask: a :class:`tabzoo.masks.Mask`, a bool tensor broadcastable to ``[B, H, Nq, Nk]``
        (True = may attend) or None (all keys).
    :param scale: score scale, default ``1 / sqrt(Dh)``.
    :returns: ``[B, H, Nq, Dh]``; a query row with no allowed key is exactly 0.
    :raises TabzooInputError: on inconsistent shapes, dtypes or mask type.
    """
    _validate(q, k, v, mask)
    return dispatch(OP, {"q": q, "k": k, "v": v, "mask": mask, "scale": scale})
