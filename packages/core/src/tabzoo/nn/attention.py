"""Multi-head attention that takes a :class:`tabzoo.masks.Mask` and dispatches through the kernels.

Projections are ordinary ``nn.Linear`` layers; the attention itself is
:func:`tabzoo.kernels.masked_attention` (``kind="softmax"``) or
:func:`tabzoo.kernels.linear_attention` (``kind="linear"``), so the backend (reference, SDPA,
flex, Triton ...) is chosen by the kernel registry and can be forced with
``tabzoo.kernels.use(name)``.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from tabzoo import kernels
from tabzoo.errors import TabzooInputError
from tabzoo.masks import Mask
from tabzoo.nn.rope import RotaryEmbedding

__all__ = ["MultiHeadAttention", "AttentionKind", "MaskLike", "resolve_mask"]

AttentionKind = Literal["softmax", "linear"]
MaskLike = Mask | torch.Tensor | None


def resolve_mask(
    mask: MaskLike,
    key_mask: torch.Tensor | None,
    batch: int,
    heads: int,
    n_q: int,
    n_k: int,
    device: torch.device,
) -> Mask | torch.Tensor | None:
    """Bring a mask into a form :func:`tabzoo.kernels.masked_attention` accepts.

    Keys beyond ``n_k`` (e.g. query rows cut off by ``n_context``) are sliced away: a Mask is an
    index predicate and needs no slicing; bool tensors are cut to their first ``n_k`` columns.

    :param mask: a Mask, a bool tensor ``[n_q, >=n_k]``, ``[batch, n_q, >=n_k]`` or
        ``[batch, heads or 1, n_q, >=n_k]`` (True = may attend), or None.
    :param key_mask: optional ``[batch, >=n_k]`` bool, True = real key (e.g. ``EpisodeBatch.row_mask``).
    :return: the Mask unchanged (no key mask), a bool tensor ``[n_q, n_k]`` or ``[batch, heads, n_q, n_k]``,
        or None.
    """
    if isinstance(mask, torch.Tensor):
        if mask.dtype != torch.bool:
            raise TabzooInputError(
                f"attention mask must be a bool tensor (True = may attend), got dtype {mask.dtype}; "
                "convert with `mask.bool()` or pass a tabzoo.masks.Mask."
            )
        if mask.dim() not in (2, 3, 4) or mask.shape[-2] != n_q or mask.shape[-1] < n_k:
            raise TabzooInputError(
                f"attention mask of shape {tuple(mask.shape)} does not fit {n_q} queries x {n_k} keys; "
                "pass [n_q, n_k], [batch, n_q, n_k] or [batch, heads, n_q, n_k]."
            )
        mask = mask[..., :n_k].to(device)
        if mask.dim() == 3:
            mask = mask[:, None]
        if mask.dim() == 4:
            mask = mask.expand(batch, heads, n_q, n_k)
    elif mask is not None and not isinstance(mask, Mask):
        raise TabzooInputError(
            f"attention mask must be a tabzoo.masks.Mask, a bool tensor or None, got {type(mask).__name__}."
        )
    if key_mask is None:
        return mask
    if key_mask.dtype != torch.bool or key_mask.dim() != 2 or key_mask.shape[0] != batch or key_mask.shape[1] < n_k:
        raise TabzooInputError(
            f"key_mask must be a bool tensor [batch={batch}, keys>={n_k}], got {tuple(key_mask.shape)} "
            f"{key_mask.dtype}; pass e.g. EpisodeBatch.row_mask."
        )
    km = key_mask[:, None, None, :n_k].to(device)
    if mask is None:
        base = km
    elif isinstance(mask, Mask):
        base = mask.materialize(n_q, n_k, device=device) & km
    else:
        base = mask & km
    return base.expand(batch, heads, n_q, n_k)


class MultiHeadAttention(nn.Module):
    """Multi-head (self- or cross-) attention over the kernel registry.

    :param d_model: model width; also the query input width and the output width.
    :param n_heads: number of heads; must divide ``d_model``.
    :param dropout: dropout on the attention output (the kernels have no attention-probability dropout).
    :param bias: bias in the four projections.
    :param kind: ``"softmax"`` (masked softmax attention) or ``"linear"`` (non-causal elu+1 linear attention
        where every row reads only the first ``n_context`` rows; self-attention only).
    :param d_kv: width of the key/value input (default ``d_model``), for cross-attention onto raw inputs.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        kind: AttentionKind = "softmax",
        d_kv: int | None = None,
    ) -> None:
        super().__init__()
        if n_heads <= 0 or d_model % n_heads:
            raise TabzooInputError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}; choose n_heads dividing d_model."
            )
        if kind not in ("softmax", "linear"):
            raise TabzooInputError(f"unknown attention kind {kind!r}; use 'softmax' or 'linear'.")
        self.d_model, self.n_heads, self.kind = d_model, n_heads, kind
        self.head_dim = d_model // n_heads
        d_kv = d_model if d_kv is None else d_kv
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_kv, d_model, bias=bias)
        self.v_proj = nn.Linear(d_kv, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        """``[B, N, d_model]`` -> ``[B, H, N, head_dim]``."""
        b, n, _ = t.shape
        return t.view(b, n, self.n_heads, self.head_dim).transpose(1, 2)

    def project_queries(self, x_q: torch.Tensor) -> torch.Tensor:
        """Per-head queries ``[B, H, Nq, head_dim]`` of ``x_q [B, Nq, d_model]`` (no RoPE)."""
        return self._heads(self.q_proj(x_q))

    def project_keys_values(self, x_kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-head keys and values ``[B, H, Nk, head_dim]`` of ``x_kv [B, Nk, d_kv]`` (no RoPE)."""
        return self._heads(self.k_proj(x_kv)), self._heads(self.v_proj(x_kv))

    def merge_heads(self, out: torch.Tensor) -> torch.Tensor:
        """The attention's output ``[B, Nq, d_model]`` from per-head results ``out [B, H, Nq, head_dim]``
        (output projection and dropout): for models that read keys in their own way (e.g. a summed
        linear-attention state) around the same projections."""
        b, _, n_q, _ = out.shape
        return self.dropout(self.out_proj(out.transpose(1, 2).reshape(b, n_q, self.d_model)))

    def forward(
        self,
        x_q: torch.Tensor,
        x_kv: torch.Tensor | None = None,
        mask: MaskLike = None,
        n_context: int | None = None,
        rope: RotaryEmbedding | None = None,
        positions: torch.Tensor | None = None,
        *,
        key_positions: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attend from ``x_q`` to ``x_kv``.

        :param x_q: ``[B, Nq, d_model]`` queries.
        :param x_kv: ``[B, Nk, d_kv]`` keys/values; None = self-attention on ``x_q``.
        :param mask: a :class:`tabzoo.masks.Mask`, a bool tensor (see :func:`resolve_mask`), or None.
            ``mask[i, j] == True`` means query ``i`` may read key ``j``.
        :param n_context: if given, only the first ``n_context`` keys are read (the keys beyond are never
            touched, so nothing leaks from them). Required for ``kind="linear"``.
        :param rope: optional rotary embedding applied to the per-head queries and keys.
        :param positions: RoPE positions of the queries, ``[Nq]`` or ``[B, Nq]`` (default ``0 .. Nq-1``);
            also used for the keys in self-attention.
        :param key_positions: RoPE positions of the keys for cross-attention, ``[Nk]`` or ``[B, Nk]``.
        :param key_mask: optional ``[B, Nk]`` bool, True = real key (padding rows are never read).
        :return: ``[B, Nq, d_model]``. A query that may read no key gets the output projection's bias.
        """
        self_attn = x_kv is None or x_kv is x_q
        x_kv = x_q if x_kv is None else x_kv
        if x_q.dim() != 3 or x_kv.dim() != 3 or x_q.shape[0] != x_kv.shape[0]:
            raise TabzooInputError(
                f"attention expects x_q [B, Nq, d] and x_kv [B, Nk, d] with equal B, got "
                f"{tuple(x_q.shape)} and {tuple(x_kv.shape)}."
            )
        b, n_q, _ = x_q.shape
        n_k = x_kv.shape[1]
        if self.kind == "linear":
            if not self_attn or n_context is None:
                raise TabzooInputError(
                    "linear attention is self-attention where rows read the first n_context rows; "
                    "pass x_kv=None and n_context, or use kind='softmax'."
                )
            if mask is not None or key_mask is not None:
                raise TabzooInputError(
                    "linear attention takes no mask or key_mask (every row reads rows [0, n_context)); "
                    "drop the mask or use kind='softmax'."
                )
        if n_context is not None:
            if not 0 < n_context <= n_k:
                raise TabzooInputError(
                    f"n_context={n_context} must be in 1..{n_k} (the number of keys); pass the context length."
                )
            n_k = n_context
            x_kv = x_kv[:, :n_k]
        q = self.project_queries(x_q)
        k, v = self.project_keys_values(x_kv)
        if rope is not None:
            if self_attn and key_positions is None and positions is not None:
                key_positions = positions[..., :n_k]
            # positions None: 0 .. n-1, whose cos / sin tables the rotary module caches
            q = rope(q, _rope_positions(positions, n_q, q.device))
            k = rope(k, _rope_positions(key_positions, n_k, k.device))
        if self.kind == "linear":
            # k, v were sliced to the context rows; the kernel reads rows [0, n_context) of its inputs,
            # so pad them back to the query length with zeros that it never reads.
            if n_k < n_q:
                pad = q.new_zeros(b, self.n_heads, n_q - n_k, self.head_dim)
                k, v = torch.cat([k, pad], dim=2), torch.cat([v, pad], dim=2)
            assert n_context is not None  # checked when the arguments were validated
            out = kernels.linear_attention(q, k, v, n_context)
        else:
            kernel_mask = resolve_mask(mask, key_mask, b, self.n_heads, n_q, n_k, q.device)
            out = kernels.masked_attention(q, k, v, mask=kernel_mask)
        return self.merge_heads(out)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, kind={self.kind!r}"


def _rope_positions(positions: torch.Tensor | None, n: int, device: torch.device) -> torch.Tensor | None:
    """RoPE positions ``[n]`` or ``[B, n]`` -> broadcastable to ``[B, H, n]``; ``None`` (``0 .. n-1``) stays None."""
    if positions is None:
        return None
    if positions.shape[-1] != n:
        raise TabzooInputError(f"RoPE positions have length {positions.shape[-1]} but there are {n} tokens.")
    return positions[:, None] if positions.dim() == 2 else positions
