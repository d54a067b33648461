"""Transformer blocks: row-wise feed-forward, self-attention block and Perceiver cross-attention block."""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from tabzoo.errors import TabzooInputError
from tabzoo.nn.attention import AttentionKind, MaskLike, MultiHeadAttention
from tabzoo.nn.rope import RotaryEmbedding

__all__ = ["FeedForward", "TransformerBlock", "CrossAttentionBlock", "make_activation"]

Activation = Literal["gelu", "relu", "silu", "tanh"]
Norm = Literal["pre", "post"]


def make_activation(name: str) -> nn.Module:
    """Activation module by name: ``"gelu"``, ``"relu"``, ``"silu"`` or ``"tanh"``."""
    table = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU, "tanh": nn.Tanh}
    if name not in table:
        raise TabzooInputError(f"unknown activation {name!r}; use one of {sorted(table)}.")
    return table[name]()


class FeedForward(nn.Module):
    """Row-wise two-layer MLP ``Linear(d_model, d_ff) -> act -> dropout -> Linear(d_ff, d_model)``.

    :param d_model: input and output width.
    :param d_ff: hidden width.
    :param activation: ``"gelu"``, ``"relu"``, ``"silu"`` or ``"tanh"``.
    :param dropout: dropout after the activation.
    """

    def __init__(self, d_model: int, d_ff: int, activation: Activation = "gelu", dropout: float = 0.0) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff), make_activation(activation), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:param x: ``[..., d_model]``. :return: ``[..., d_model]``."""
        return self.net(x)


class TransformerBlock(nn.Module):
    """Self-attention + feed-forward block.

    ``norm="pre"`` (default): ``x = x + attn(LN(x)); x = x + ffn(LN(x))``.
    ``norm="post"`` (TabFlex / original transformer): ``x = LN(x + attn(x)); x = LN(x + ffn(x))``.

    :param d_model: width.
    :param n_heads: attention heads.
    :param d_ff: feed-forward hidden width.
    :param dropout: dropout on the attention and feed-forward outputs.
    :param norm: ``"pre"`` or ``"post"``.
    :param activation: feed-forward activation.
    :param attention_kind: ``"softmax"`` or ``"linear"`` (see :class:`MultiHeadAttention`).
    :param bias: bias in the attention projections.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm: Norm = "pre",
        activation: Activation = "gelu",
        attention_kind: AttentionKind = "softmax",
        bias: bool = True,
    ) -> None:
        super().__init__()
        if norm not in ("pre", "post"):
            raise TabzooInputError(f"unknown norm placement {norm!r}; use 'pre' or 'post'.")
        self.norm = norm
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias, kind=attention_kind)
        self.ffn = FeedForward(d_model, d_ff, activation, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        mask: MaskLike = None,
        n_context: int | None = None,
        rope: RotaryEmbedding | None = None,
        positions: torch.Tensor | None = None,
        *,
        key_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Apply the block.

        :param x: ``[B, N, d_model]`` tokens (e.g. rows: context rows first, then query rows).
        :param mask: attention mask (Mask, bool tensor or None), ``mask[i, j]`` = token i may read token j.
        :param n_context: if given, every token reads only the first ``n_context`` tokens
            (required for linear attention).
        :param rope: optional rotary embedding; ``positions``: ``[N]`` or ``[B, N]``.
        :param key_mask: ``[B, N]`` bool, True = real token (padding is never read).
        :return: ``[B, N, d_model]``.
        """
        kw = dict(mask=mask, n_context=n_context, rope=rope, positions=positions, key_mask=key_mask)
        return self.after_attention(x, self.attn(self.attention_input(x), **kw))

    def attention_input(self, x: torch.Tensor) -> torch.Tensor:
        """What the attention reads of ``x [B, N, d_model]``: ``LN(x)`` (pre-norm) or ``x`` (post-norm)."""
        return self.norm1(x) if self.norm == "pre" else x

    def after_attention(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The rest of the block given the attention's output ``attended [B, N, d_model]`` for ``x``:
        residual, norms and feed-forward. With :meth:`attention_input` and the attention's
        ``project_queries`` / ``project_keys_values`` / ``merge_heads`` a model can run this block
        around its own way of reading keys (e.g. TabFlex's streamed linear-attention state)."""
        if self.norm == "pre":
            x = x + attended
            return x + self.dropout(self.ffn(self.norm2(x)))
        x = self.norm1(x + attended)
        return self.norm2(x + self.dropout(self.ffn(x)))


class CrossAttentionBlock(nn.Module):
    """Perceiver-style cross-attention block: queries (e.g. latents) read inputs.

    ``q = q + attn(LN(q), LN_kv(x_kv)); q = q + ffn(LN(q))`` (pre-norm).
    With ``n_context`` only the first ``n_context`` inputs are read: a Perceiver memory "write"
    that reads context rows only. Swapping the roles (rows read latents) gives the "read" step.

    :param d_model: query width (and output width).
    :param n_heads: attention heads.
    :param d_ff: feed-forward hidden width (default ``4 * d_model``); ``0`` disables the feed-forward.
    :param dropout: dropout on attention and feed-forward outputs.
    :param d_kv: input width (default ``d_model``).
    :param n_latents: if given, the block owns ``n_latents`` learned latent queries ``[n_latents, d_model]``
        used when ``x_q`` is None.
    :param activation: feed-forward activation.
    """

    latents: nn.Parameter | None

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        d_kv: int | None = None,
        n_latents: int | None = None,
        activation: Activation = "gelu",
    ) -> None:
        super().__init__()
        d_kv = d_model if d_kv is None else d_kv
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, d_kv=d_kv)
        self.norm_q = nn.LayerNorm(d_model)
        self.norm_kv = nn.LayerNorm(d_kv)
        self.ffn = FeedForward(d_model, d_ff, activation, dropout) if d_ff > 0 else None
        self.norm_ff = nn.LayerNorm(d_model) if d_ff > 0 else None
        self.dropout = nn.Dropout(dropout)
        if n_latents is not None:
            self.latents = nn.Parameter(torch.randn(n_latents, d_model) * d_model**-0.5)
        else:
            self.register_parameter("latents", None)

    def forward(
        self,
        x_q: torch.Tensor | None,
        x_kv: torch.Tensor,
        mask: MaskLike = None,
        n_context: int | None = None,
        *,
        key_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Let the queries read the inputs.

        :param x_q: ``[B, Nq, d_model]`` queries, or None to use the learned latents (broadcast over B).
        :param x_kv: ``[B, Nk, d_kv]`` inputs.
        :param mask: attention mask over ``[Nq, Nk]`` (Mask, bool tensor or None).
        :param n_context: read only inputs ``[0, n_context)`` (context rows).
        :param key_mask: ``[B, Nk]`` bool, True = real input row.
        :return: ``[B, Nq, d_model]`` (``Nq = n_latents`` when ``x_q`` is None).
        """
        if x_q is None:
            if self.latents is None:
                raise TabzooInputError(
                    "CrossAttentionBlock got x_q=None but owns no latents; pass queries or build it with n_latents."
                )
            x_q = self.latents.unsqueeze(0).expand(x_kv.shape[0], -1, -1)
        kv = self.norm_kv(x_kv if n_context is None else x_kv[:, :n_context])
        h = x_q + self.attn(self.norm_q(x_q), kv, mask=mask, key_mask=key_mask)
        if self.ffn is not None and self.norm_ff is not None:
            h = h + self.dropout(self.ffn(self.norm_ff(h)))
        return h
