"""``masked_attention/banded``: sparse attention for ``window | global_tokens | random_links`` masks.

The Longformer / BigBird family of masks (ORION-MSP's row attention, eqs. 15-18) is a union of

* a band ``|i - j| <= w`` (:func:`tabzoo.masks.window`),
* ``g`` global tokens that read and are read by every position (:func:`tabzoo.masks.global_tokens`),
* ``r`` hashed random keys per query (:func:`tabzoo.masks.random_links`).

This backend never builds the ``[N, N]`` matrix. It uses a **gathered block layout**, computed once
per ``(mask, N, block, device)`` and cached (:func:`block_layout`):

* queries are cut into blocks of ``bs`` positions (:func:`block_size`);
* block ``b`` gets one list of ``K = (bs + 2w) + g + bs * r`` key positions: its band span
  ``[b bs - w, b bs + bs - 1 + w]``, the ``g`` global keys and the random keys of all its queries;
* an additive bias ``[nb, bs, K]`` (0 or -inf) says which slot each query of the block may read.
  It is evaluated with the mask's own predicate (:meth:`tabzoo.masks.Mask.allowed`) and opens only
  the FIRST slot of a repeated key, so every allowed key is counted exactly once. That is exact
  for any mask of the family: the list holds every key a query of the block may read.

A call is then two gathers (``index_select`` of K and V on the cached key list), one batched matmul
for the scores, one broadcast add of the bias, one softmax and one batched matmul for the output,
over all batch items, heads and blocks at once; the ``g`` global query rows read every key densely
(``[g, N]``). Work and memory are ``O(N K D)``: linear in ``N``, against ``O(N^2)`` for the dense
paths. Scores are computed in fp32; autograd gives the backward (the gathers' backward is an
index-add).

Pure torch: runs on any device. On CPU it declines sequences shorter than
:data:`MIN_TOKENS` unless forced (dense SDPA is faster there); on GPU the flex and Triton
backends have priority.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from tabzoo.kernels.op_registry import Backend, Cost, forced_backend, register_backend

__all__ = ["BlockLayout", "attention_banded", "block_layout", "block_size", "decompose", "MIN_TOKENS"]

OP = "masked_attention"
NAME = "banded"
#: below this many tokens the dense SDPA path is faster on CPU; the backend declines unless forced
MIN_TOKENS = 320
#: cached layouts (each holds O(N K) ints and floats)
_CACHE_SIZE = 32


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


def block_size(radius: int, links: int) -> int:
    """Queries per block. Each query scores ``K = bs (1 + r) + 2 w + g`` slots, so small blocks waste
    less, while too small ones make many tiny matmuls; 8 (or the window radius when it is smaller
    than 8 but positive) measured best on CPU for ORION's ``w = 8, r = 2``."""
    if radius > 0:
        return max(4, min(8, radius)) if links else max(4, min(16, 2 * radius))
    return 8


@dataclass(frozen=True)
class BlockLayout:
    """The cached gathered block layout of one ``(mask, n)``; see the module docstring.

    :param n: sequence length.
    :param bs: queries per block; ``nb = ceil(n / bs)`` blocks.
    :param keys: ``LongTensor [nb * K]``: block ``b``'s key positions are ``keys[b K:(b + 1) K]``.
    :param bias: ``float32 [nb, bs, K]``: 0 where the query may read the slot, else -inf.
    :param dense_rows: the first ``dense_rows`` query rows read every key densely (global tokens).
    :param dense_bias: ``float32 [dense_rows, n]`` 0 / -inf for those rows, or None (all allowed).
    :param keep: ``float32 [nb, bs, 1]``, 0 for rows that may read no key (their output is 0), or None.
    """

    n: int
    bs: int
    nb: int
    n_slots: int
    keys: torch.Tensor
    bias: torch.Tensor
    dense_rows: int
    dense_bias: torch.Tensor | None
    keep: torch.Tensor | None


_LAYOUTS: OrderedDict[tuple[Any, ...], BlockLayout] = OrderedDict()
_LOCK = threading.Lock()


def _first_occurrence(keys: torch.Tensor) -> torch.Tensor:
    """``[nb, K]`` bool: True at the first slot of each distinct key of a row (ties: lowest slot)."""
    sorted_keys, order = torch.sort(keys, dim=1, stable=True)
    first_sorted = torch.ones_like(sorted_keys, dtype=torch.bool)
    first_sorted[:, 1:] = sorted_keys[:, 1:] != sorted_keys[:, :-1]
    return torch.zeros_like(first_sorted).scatter_(1, order, first_sorted)


def _build_layout(mask: Any, n: int, device: torch.device) -> BlockLayout:
    radius, glob, links = decompose(mask)  # type: ignore[misc]  # callers checked decompose()
    n_links = sum(int(t.r) for t in links)
    bs = block_size(radius, n_links)
    nb = -(-n // bs)
    g = min(glob, n)
    starts = torch.arange(nb, dtype=torch.int64) * bs  # [nb]
    rows = starts[:, None] + torch.arange(bs, dtype=torch.int64)[None]  # [nb, bs] query positions
    parts = []
    if radius >= 0:
        parts.append(starts[:, None] - radius + torch.arange(bs + 2 * radius, dtype=torch.int64)[None])
    if g > 0:
        parts.append(torch.arange(g, dtype=torch.int64)[None].expand(nb, g))
    real_rows = rows.clamp(max=n - 1)
    for term in links:
        if term.r:
            parts.append(term.draws(real_rows, n).reshape(nb, bs * int(term.r)))
    if not parts:  # e.g. global_tokens(0): no key at all
        parts.append(torch.zeros(nb, 1, dtype=torch.int64))
    keys = torch.cat(parts, dim=1)  # [nb, K]
    valid = (keys >= 0) & (keys < n)
    keys = torch.where(valid, keys, torch.full_like(keys, -1))
    unique = _first_occurrence(keys) & valid
    keys = keys.clamp(min=0)
    allowed = mask.allowed(rows[:, :, None], keys[:, None, :], n_k=n)  # [nb, bs, K]
    allowed = allowed & unique[:, None, :] & (rows < n)[:, :, None]
    has_key = allowed.any(dim=-1, keepdim=True)  # [nb, bs, 1]
    keep = None
    if not bool(has_key[rows < n].all()):
        keep = has_key.float()
    # a row with no key (padding or an empty row) opens slot 0, so the softmax stays finite
    allowed[:, :, :1] |= ~has_key
    bias = torch.zeros(allowed.shape, dtype=torch.float32).masked_fill_(~allowed, float("-inf"))
    dense_bias = None
    if g > 0:
        dense = mask.allowed(torch.arange(g)[:, None], torch.arange(n)[None], n_k=n)  # [g, n]
        if not bool(dense.all()):
            dense_bias = torch.zeros(dense.shape, dtype=torch.float32).masked_fill_(~dense, float("-inf"))
            dense_bias = dense_bias.to(device)
    return BlockLayout(n=n, bs=bs, nb=nb, n_slots=int(keys.shape[1]), keys=keys.reshape(-1).to(device),
                       bias=bias.to(device), dense_rows=g, dense_bias=dense_bias,
                       keep=None if keep is None else keep.to(device))


def block_layout(mask: Any, n: int, device: torch.device | str = "cpu") -> BlockLayout:
    """The gathered block layout of ``mask`` over ``n`` positions on ``device`` (cached, LRU of 32)."""
    dev = torch.device(device)
    key = (mask, int(n), str(dev))
    with _LOCK:
        hit = _LAYOUTS.get(key)
        if hit is not None:
            _LAYOUTS.move_to_end(key)
            return hit
    layout = _build_layout(mask, int(n), dev)
    with _LOCK:
        _LAYOUTS[key] = layout
        while len(_LAYOUTS) > _CACHE_SIZE:
            _LAYOUTS.popitem(last=False)
    return layout


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
    n_links = sum(t.r for t in links)
    bs = block_size(radius, n_links)
    slots = (bs + 2 * radius if radius >= 0 else 0) + glob + bs * n_links
    keys = n * slots + min(glob, n) * n
    flops = 4.0 * b * h * keys * dh
    io = 4 * q.numel() * q.element_size() + 2 * b * h * n * slots * (dh + 1) * 4
    return Cost(flops=flops, bytes=float(io))


def attention_banded(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Any = None,
                     scale: float | None = None) -> torch.Tensor:
    """Softmax attention under ``window(w) | global_tokens(g) | random_links(r, seed)`` (any subset).

    :param q: ``[B, H, N, Dh]``; ``k``, ``v``: ``[B, H, N, Dh]`` (any strides).
    :returns: ``[B, H, N, Dh]`` in the dtype of ``q``; a row with no allowed key is 0.
    """
    if decompose(mask) is None:  # dispatch never sends such masks; a direct caller gets a clear error
        from tabzoo.errors import KernelNotSupportedError

        raise KernelNotSupportedError("banded attention needs a window / global_tokens / random_links mask")
    bsz, heads, n, dh = q.shape
    lay = block_layout(mask, n, q.device)
    sc = 1.0 / math.sqrt(dh) if scale is None else float(scale)
    bs, nb, slots = lay.bs, lay.nb, lay.n_slots
    # [B H, N, Dh] contiguous: a gather along the middle of a 3-d tensor is several times faster
    # than along dim 2 of a (strided) 4-d one
    kf = k.float().contiguous().view(bsz * heads, n, dh)
    vf = v.float().contiguous().view(bsz * heads, n, dh)
    qs = q.float() * sc
    if nb * bs != n:
        qs = torch.nn.functional.pad(qs, (0, 0, 0, nb * bs - n))
    kg = kf.index_select(1, lay.keys).view(bsz, heads, nb, slots, dh)
    vg = vf.index_select(1, lay.keys).view(bsz, heads, nb, slots, dh)
    s = torch.matmul(qs.reshape(bsz, heads, nb, bs, dh), kg.transpose(-1, -2))  # [B, H, nb, bs, K]
    p = torch.softmax(s.add_(lay.bias), dim=-1)
    if lay.keep is not None:
        p = p * lay.keep
    out = torch.matmul(p, vg).view(bsz, heads, nb * bs, dh)[:, :, :n]
    g = lay.dense_rows
    if g > 0:  # global query rows read every key
        kd, vd = kf.view(bsz, heads, n, dh), vf.view(bsz, heads, n, dh)
        sg = torch.matmul(qs[:, :, :g], kd.transpose(-1, -2))
        if lay.dense_bias is not None:
            sg = sg + lay.dense_bias
        # written into the block output (a fresh tensor that no backward needs): no copy of the rest
        out[:, :, :g] = torch.matmul(torch.softmax(sg, dim=-1), vd)
    return out.to(q.dtype)


register_backend(Backend(NAME, OP, attention_banded, priority=25, not_supported_reasons=_reasons, cost=_cost,
                         origin="tabzoo.kernels.banded"))
