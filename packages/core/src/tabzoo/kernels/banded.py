"""``masked_attention/banded``: sparse attention for ``window | global_tokens | random_links`` masks.

The Longformer / BigBird family of masks (ORION-MSP's row attention, eqs. 15-18) is a union of

* a band ``|i - j| <= w`` (:func:`tabzoo.masks.window`),
* ``g`` global tokens that read and are read by every position (:func:`tabzoo.masks.global_tokens`),
* ``r`` hashed random keys per query (:func:`tabzoo.masks.random_links`).

This backend never builds the ``[N, N]`` matrix. Queries are cut into blocks of ``bs = max(w, 1)``
positions; block ``b`` reads the keys of blocks ``b - 1, b, b + 1`` (which hold its whole band), the
``g`` global keys and its gathered random keys, and one softmax runs over the union, each key
counted once (a global or random key already inside the band is masked out of its own part, and
repeated random draws are masked). The ``g`` global query rows read every key densely. Work and
memory are ``O(N (3 bs + g + r) D)`` plus ``O(g N D)``: linear in ``N``, against ``O(N^2)`` for the
dense paths. Scores are accumulated in fp32; autograd gives the backward.

Pure torch: runs on any device. On CPU it declines sequences shorter than
:data:`MIN_TOKENS` unless forced (dense SDPA is faster there); on GPU the flex and Triton
backends have priority.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from tabzoo.kernels.registry import Backend, Cost, forced_backend, register_backend

__all__ = ["attention_banded", "decompose", "MIN_TOKENS"]

OP = "masked_attention"
NAME = "banded"
#: below this many tokens the dense SDPA path is faster on CPU; the backend declines unless forced
MIN_TOKENS = 320


def decompose(mask: Any) -> tuple[int, int, list[Any]] | None:
    """``(window radius or -1, global tokens, [RandomLinks])`` of a supported mask, else None."""
    from tabzoo.masks import GlobalTokens, Or, RandomLinks, Window

    terms = mask.terms if isinstance(mask, Or) else (mask,)
    radius, glob, links = -1, 0, []
    for t in terms:
        if isinstance(t, Window):
            radius = max(radius, int(t.radius))
        elif isinstance(t, GlobalTokens):
            glob = max(glob, int(t.k))
        elif isinstance(t, RandomLinks):
            links.append(t)
        else:
            return None
    return radius, glob, links


def _reasons(inputs: Mapping[str, Any]) -> list[str]:
    q, k, mask = inputs["q"], inputs["k"], inputs["mask"]
    reasons: list[str] = []
    if mask is None or isinstance(mask, torch.Tensor) or decompose(mask) is None:
        reasons.append("needs a tabzoo.masks.Mask that is a union of window / global_tokens / random_links")
    if q.shape[2] != k.shape[2]:
        reasons.append(f"self-attention only (Nq == Nk), got Nq={q.shape[2]}, Nk={k.shape[2]}")
    if not reasons and q.shape[2] < MIN_TOKENS and forced_backend() != NAME:
        reasons.append(f"{q.shape[2]} tokens < {MIN_TOKENS}: dense sdpa is faster; force with use('{NAME}')")
    return reasons


def _cost(inputs: Mapping[str, Any]) -> Cost:
    q = inputs["q"]
    b, h, n, dh = q.shape
    parts = decompose(inputs["mask"]) or (0, 0, [])
    radius, glob, links = parts
    bs = max(radius, 1)
    per_row = (3 * bs if radius >= 0 else 0) + glob + sum(t.r for t in links)
    keys = n * per_row + min(glob, n) * n
    flops = 4.0 * b * h * keys * dh
    io = 4 * q.numel() * q.element_size() + 2 * b * h * n * 3 * bs * dh * 4
    return Cost(flops=flops, bytes=float(io))


def _shift_blocks(t: torch.Tensor) -> torch.Tensor:
    """``[B, H, nb, bs, D]`` -> ``[B, H, nb, 3 bs, D]``: each block with its left and right neighbours."""
    zero = torch.zeros_like(t[:, :, :1])
    left = torch.cat([zero, t[:, :, :-1]], dim=2)
    right = torch.cat([t[:, :, 1:], zero], dim=2)
    return torch.cat([left, t, right], dim=3)


def attention_banded(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Any = None,
                     scale: float | None = None) -> torch.Tensor:
    """Softmax attention under ``window(w) | global_tokens(g) | random_links(r, seed)`` (any subset).

    :param q: ``[B, H, N, Dh]``; ``k``, ``v``: ``[B, H, N, Dh]``.
    :returns: ``[B, H, N, Dh]`` in the dtype of ``q``; a row with no allowed key is 0.
    """
    parts = decompose(mask)
    if parts is None:  # dispatch never sends such masks; a direct caller gets a clear error
        from tabzoo.errors import KernelNotSupportedError

        raise KernelNotSupportedError("banded attention needs a window / global_tokens / random_links mask")
    radius, glob, links = parts
    bsz, heads, n, dh = q.shape
    dev = q.device
    sc = 1.0 / math.sqrt(dh) if scale is None else float(scale)
    qf, kf, vf = q.float(), k.float(), v.float()
    g = min(glob, n)
    pos = torch.arange(n, device=dev)
    scores: list[torch.Tensor] = []
    values: list[Any] = []
    if radius >= 0:  # band, by blocks
        bs = max(radius, 1)
        nb = -(-n // bs)
        pad = nb * bs - n
        qb = torch.nn.functional.pad(qf, (0, 0, 0, pad)).view(bsz, heads, nb, bs, dh)
        kb = _shift_blocks(torch.nn.functional.pad(kf, (0, 0, 0, pad)).view(bsz, heads, nb, bs, dh))
        vb = _shift_blocks(torch.nn.functional.pad(vf, (0, 0, 0, pad)).view(bsz, heads, nb, bs, dh))
        qpos = torch.arange(nb * bs, device=dev).view(nb, bs, 1)
        kpos = (torch.arange(nb, device=dev)[:, None] * bs - bs + torch.arange(3 * bs, device=dev)[None]).view(nb, 1, 3 * bs)
        allowed = ((qpos - kpos).abs() <= radius) & (kpos >= 0) & (kpos < n)
        s = torch.einsum("bhnqd,bhnkd->bhnqk", qb, kb) * sc
        s = s.masked_fill(~allowed, float("-inf")).reshape(bsz, heads, nb * bs, 3 * bs)[:, :, :n]
        scores.append(s)
        values.append(("band", vb, nb, bs))
    if g > 0:
        s = torch.matmul(qf, kf[:, :, :g].transpose(-1, -2)) * sc  # [B, H, N, g]
        dup = (pos[:, None] - torch.arange(g, device=dev)[None]).abs() <= radius if radius >= 0 else None
        reads = pos[:, None] >= 0  # every row reads the global keys
        ok = reads if dup is None else reads & ~dup
        scores.append(s.masked_fill(~ok, float("-inf")))
        values.append(("dense", vf[:, :, :g]))
    seen: list[torch.Tensor] = []
    for term in links:
        idx = term.draws(pos, n)  # [N, r]
        if idx.shape[1] == 0:
            continue
        ok = torch.ones_like(idx, dtype=torch.bool)
        if radius >= 0:
            ok &= (idx - pos[:, None]).abs() > radius
        ok &= idx >= g
        for t in range(idx.shape[1]):
            col = idx[:, t]
            for prev in [*seen, idx[:, :t]]:
                if prev.numel():
                    ok[:, t] &= ~(prev == col[:, None]).any(dim=1)
        seen.append(idx)
        kr = kf[:, :, idx]  # [B, H, N, r, D]
        s = torch.einsum("bhnd,bhnrd->bhnr", qf, kr) * sc
        scores.append(s.masked_fill(~ok, float("-inf")))
        values.append(("gather", vf[:, :, idx]))
    if not scores:
        return torch.zeros_like(q)
    cat = torch.cat(scores, dim=-1)
    top = cat.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    p = torch.exp(cat - top)
    total = p.sum(dim=-1, keepdim=True)
    out = torch.zeros_like(qf)
    start = 0
    for s, val in zip(scores, values, strict=True):
        w = p[..., start:start + s.shape[-1]]
        start += s.shape[-1]
        if val[0] == "band":
            _, vb, nb, bs = val
            wb = torch.nn.functional.pad(w, (0, 0, 0, nb * bs - n)).view(bsz, heads, nb, bs, 3 * bs)
            out = out + torch.einsum("bhnqk,bhnkd->bhnqd", wb, vb).reshape(bsz, heads, nb * bs, dh)[:, :, :n]
        elif val[0] == "dense":
            out = out + torch.matmul(w, val[1])
        else:
            out = out + torch.einsum("bhnr,bhnrd->bhnd", w, val[1])
    out = torch.where(total > 0, out / total.clamp_min(1e-30), torch.zeros_like(out))
    if g > 0:  # global query rows read every key
        sg = torch.matmul(qf[:, :, :g], kf.transpose(-1, -2)) * sc
        out = torch.cat([torch.matmul(torch.softmax(sg, dim=-1), vf), out[:, :, g:]], dim=2)
    return out.to(q.dtype)


register_backend(Backend(NAME, OP, attention_banded, priority=25, not_supported_reasons=_reasons, cost=_cost,
                         origin="tabzoo.kernels.banded"))
