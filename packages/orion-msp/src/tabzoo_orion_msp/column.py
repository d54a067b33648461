"""Column-wise embedding ``TF_col`` (appendix A.3, eqs. 1-9).

Each column ``c_j`` (its values over all rows) is a set. A shared Set Transformer turns it into a
per-cell affine map: ``U = Linear(c_j)`` (eq. 1), ``L`` ISAB blocks whose inducing points read the
CONTEXT rows only (eq. 2) and which every row then reads (eq. 3), and a feed-forward generator of a
weight and a bias per cell (eqs. 7-8). The cell embedding is ``E = c * LN(W) + LN(B)`` (eq. 9 with the
LayerNorms of the authors' implementation, which keep the generated maps on one scale).

Leak-freeness: a query row's embedding depends on its own value and on the context rows of the
column (through the inducing points); a context row's embedding depends on context rows only.
"""

from __future__ import annotations

import torch
from tabzoo.nn import ISAB, FeedForward
from torch import nn

from tabzoo_orion_msp.config import OrionConfig

__all__ = ["ColumnEmbedding"]


class ColumnEmbedding(nn.Module):
    """``TF_col``: cells ``[B, N, m]`` -> embeddings ``[B, N, m, d]``.

    :param cfg: the model config (``d``, ``col_inducing``, ``col_heads``, ``col_blocks``, ``col_ff``).
    """

    def __init__(self, cfg: OrionConfig) -> None:
        super().__init__()
        d = cfg.d
        self.proj = nn.Linear(1, d)
        self.isabs = nn.ModuleList(
            ISAB(d, cfg.col_heads, cfg.col_inducing, d_ff=cfg.col_ff, norm="pre") for _ in range(cfg.col_blocks)
        )
        for isab in self.isabs:  # appendix B.3.1: inducing points ~ N(0, 0.02^2)
            nn.init.normal_(isab.inducing, std=0.02)
        self.generator = FeedForward(d, cfg.col_ff, "gelu")
        self.out = nn.Linear(d, 2 * d)
        self.norm_w = nn.LayerNorm(d)
        self.norm_b = nn.LayerNorm(d)
        self.d = d

    def forward(self, x: torch.Tensor, n_context: int) -> torch.Tensor:
        """Embed every cell.

        :param x: ``[B, N, m]`` finite cells (standardised on the context rows), context rows first.
        :param n_context: context rows; the inducing points read rows ``[0, n_context)`` only.
        :return: ``[B, N, m, d]``.
        """
        b, n, m = x.shape
        cols = x.transpose(1, 2).reshape(b * m, n, 1)  # one set per column
        h = self.proj(cols)  # eq. 1: [B*m, N, d]
        for isab in self.isabs:
            h = isab(h, n_context=n_context)  # eqs. 2-3
        w, bias = self.out(self.generator(h)).chunk(2, dim=-1)  # eqs. 7-8
        e = cols * self.norm_w(w) + self.norm_b(bias)  # eq. 9
        return e.view(b, m, n, self.d).transpose(1, 2)
