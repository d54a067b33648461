"""Set Transformer blocks (Lee et al. 2019): MAB, ISAB and PMA.

``MAB(X, Y) = LN(H + rFF(H))`` with ``H = LN(X + Attention(X, Y, Y))`` (``norm="post"``, as in the paper), or
the pre-norm variant ``H = X + Attention(LN X, LN Y); H + rFF(LN H)``.

``ISAB`` supports reading only a subset of rows in its first stage: with ``n_context`` the inducing
points read only the context rows (ORION-MSP eqs. 2-3), so no context row's output depends on a query row,
and each query row's output depends only on the context rows and itself.
"""

from __future__ import annotations

import torch
from torch import nn

from tabzoo.errors import TabzooInputError
from tabzoo.nn.attention import MaskLike, MultiHeadAttention
from tabzoo.nn.transformer import Activation, FeedForward, Norm

__all__ = ["MAB", "ISAB", "PMA"]


class MAB(nn.Module):
    """Multihead attention block: ``x`` reads ``y``.

    :param d_model: width of ``x``, ``y`` and the output.
    :param n_heads: attention heads.
    :param d_ff: feed-forward hidden width (default ``d_model``, the rFF of the paper).
    :param dropout: dropout on attention and feed-forward outputs.
    :param norm: ``"post"`` (paper) or ``"pre"``; ``None`` disables the LayerNorms.
    :param activation: feed-forward activation.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        norm: Norm | None = "post",
        activation: Activation = "relu",
    ) -> None:
        super().__init__()
        if norm not in ("pre", "post", None):
            raise TabzooInputError(f"unknown norm placement {norm!r}; use 'pre', 'post' or None.")
        self.norm = norm
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ffn = FeedForward(d_model, d_model if d_ff is None else d_ff, activation, dropout)
        self.norm_x = nn.LayerNorm(d_model) if norm else nn.Identity()
        self.norm_y = nn.LayerNorm(d_model) if norm == "pre" else nn.Identity()
        self.norm_h = nn.LayerNorm(d_model) if norm else nn.Identity()

    def forward(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        mask: MaskLike = None,
        n_context: int | None = None,
        *,
        key_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """:param x: ``[B, Nx, d]`` queries. :param y: ``[B, Ny, d]`` keys/values.
        :param mask: attention mask over ``[Nx, Ny]``. :param n_context: read only ``y[:, :n_context]``.
        :param key_mask: ``[B, Ny]`` bool, True = real row.
        :return: ``[B, Nx, d]``.
        """
        kw = dict(mask=mask, n_context=n_context, key_mask=key_mask)
        if self.norm == "pre":
            h = x + self.attn(self.norm_x(x), self.norm_y(y), **kw)
            return h + self.ffn(self.norm_h(h))
        h = self.norm_x(x + self.attn(x, y, **kw))
        return self.norm_h(h + self.ffn(h))


class ISAB(nn.Module):
    """Induced set attention block: ``H = MAB(I, X[:n_context]); out = MAB(X, H)``.

    Cost is linear in the number of rows. With ``n_context`` the learned inducing points read only
    the first ``n_context`` rows.

    :param d_model: width.
    :param n_heads: attention heads.
    :param n_inducing: number of inducing points.
    :param d_ff: feed-forward hidden width of the two MABs (default ``d_model``).
    :param dropout: dropout.
    :param norm: norm placement of the two MABs (see :class:`MAB`).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_inducing: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        norm: Norm | None = "post",
    ) -> None:
        super().__init__()
        if n_inducing <= 0:
            raise TabzooInputError(f"ISAB needs n_inducing >= 1, got {n_inducing}.")
        self.inducing = nn.Parameter(torch.randn(n_inducing, d_model) * d_model**-0.5)
        self.mab_in = MAB(d_model, n_heads, d_ff, dropout, norm)
        self.mab_out = MAB(d_model, n_heads, d_ff, dropout, norm)

    def forward(
        self, x: torch.Tensor, n_context: int | None = None, *, key_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """:param x: ``[B, N, d]`` set elements (e.g. the rows of one column; context rows first).
        :param n_context: if given, the inducing points read only rows ``[0, n_context)``.
        :param key_mask: ``[B, N]`` bool, True = real row; padding rows are never read.
        :return: ``[B, N, d]``; row ``i`` depends only on itself and the rows the inducing points read.
        """
        ind = self.inducing.unsqueeze(0).expand(x.shape[0], -1, -1)
        h = self.mab_in(ind, x, n_context=n_context, key_mask=key_mask)
        return self.mab_out(x, h)


class PMA(nn.Module):
    """Pooling by multihead attention: ``MAB(S, rFF(X))`` with ``n_seeds`` learned seed vectors.

    The output is invariant to permutations of the rows of ``X``.

    :param d_model: width.
    :param n_heads: attention heads.
    :param n_seeds: number of seed vectors (output set size).
    :param d_ff: feed-forward hidden width (default ``d_model``).
    :param dropout: dropout.
    :param norm: norm placement of the MAB.
    :param rff: apply a row-wise feed-forward to ``X`` before pooling (as in the paper).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_seeds: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        norm: Norm | None = "post",
        rff: bool = True,
    ) -> None:
        super().__init__()
        if n_seeds <= 0:
            raise TabzooInputError(f"PMA needs n_seeds >= 1, got {n_seeds}.")
        self.seeds = nn.Parameter(torch.randn(n_seeds, d_model) * d_model**-0.5)
        self.rff = FeedForward(d_model, d_model if d_ff is None else d_ff, "relu", dropout) if rff else None
        self.mab = MAB(d_model, n_heads, d_ff, dropout, norm)

    def forward(
        self,
        x: torch.Tensor,
        n_context: int | None = None,
        *,
        key_mask: torch.Tensor | None = None,
        seeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """:param x: ``[B, N, d]`` set elements.
        :param n_context: pool only rows ``[0, n_context)``.
        :param key_mask: ``[B, N]`` bool, True = real row.
        :param seeds: optional ``[n_seeds, d]`` or ``[B, n_seeds, d]`` queries added to the learned seeds
            (e.g. a slot encoding).
        :return: ``[B, n_seeds, d]``.
        """
        s = self.seeds.unsqueeze(0).expand(x.shape[0], -1, -1)
        if seeds is not None:
            s = s + seeds
        y = self.rff(x) if self.rff is not None else x
        return self.mab(s, y, n_context=n_context, key_mask=key_mask)
