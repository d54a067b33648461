"""Column-wise embedding ``TF_col`` (appendix A.3, eqs. 1-9).

Each column ``c_j`` (its values over all rows) is a set. A shared Set Transformer turns it into a
per-cell affine map: ``U = Linear(c_j)`` (eq. 1), ``L`` ISAB blocks whose inducing points read the
CONTEXT rows only (eq. 2) and which every row then reads (eq. 3), and a feed-forward generator of a
weight and a bias per cell (eqs. 7-8). The cell embedding is ``E = c * LN(W) + LN(B)`` (eq. 9 with the
LayerNorms of the authors' implementation, which keep the generated maps on one scale).

Leak-freeness: a query row's embedding depends on its own value and on the context rows of the
column (through the inducing points); a context row's embedding depends on context rows only.

In two steps (what :class:`~tabzoo_orion_msp.model.OrionMSP` runs, so that the column stage can be
fused with the row stage chunk by chunk): :meth:`ColumnEmbedding.summarise` computes, once per
column, each ISAB block's inducing-point summary of the context rows as the projected keys and values
its second stage reads; :meth:`ColumnEmbedding.embed` then embeds any subset of rows against them.
Each cell reads only those summaries and itself, so embedding the rows in chunks gives what one piece
gives, and the keys and values are projected once instead of once per chunk.
"""

from __future__ import annotations

import torch
from tabzoo import kernels
from tabzoo.nn import ISAB, MAB, FeedForward
from torch import nn

from tabzoo_orion_msp import rows as _rows
from tabzoo_orion_msp.config import OrionConfig

__all__ = ["ColumnEmbedding", "Summary"]

#: per ISAB block, the keys and values ``[B*m, H, k, d/H]`` that a cell's second stage reads
Summary = list[tuple[torch.Tensor, torch.Tensor]]


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
        return self.embed(x, self.summarise(x, n_context))

    @staticmethod
    def _columns(x: torch.Tensor) -> torch.Tensor:
        """``[B, N, m]`` cells -> ``[B*m, N, 1]``: one set per column."""
        b, n, m = x.shape
        return x.transpose(1, 2).reshape(b * m, n, 1)

    @staticmethod
    def _read(mab: MAB, h: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """A pre-norm MAB whose keys and values are already projected: ``h [R, n, d]`` reads ``kv``
        (``h + attn(LN h, kv)``, then ``+ ffn(LN .)``, as :meth:`tabzoo.nn.MAB.forward` with ``norm="pre"``)."""
        q = mab.attn.project_queries(mab.norm_x(h))
        h = h + mab.attn.merge_heads(kernels.masked_attention(q, kv[0], kv[1]))
        return h + mab.ffn(mab.norm_h(h))

    def summarise(self, x: torch.Tensor, n_context: int) -> Summary:
        """Eq. 2 for every ISAB block: the inducing points read the CONTEXT cells of each column.

        :param x: ``[B, N, m]`` cells (only rows ``[0, n_context)`` are read) or just the context rows.
        :return: per block, the keys and values ``[B*m, H, k, d/H]`` of its summary, as the block's
            second stage (eq. 3) projects them.
        """
        cols = self._columns(x[:, :n_context])  # [B*m, n_context, 1]
        # the columns are independent: summarise about :data:`~tabzoo_orion_msp.rows.COL_TOKENS` context cells at a time, so each
        # piece's activations stay in the CPU caches (measured on 2,000 columns x 128 context rows:
        # 0.06 s in pieces of 128 columns against 0.12-0.20 s in one piece, same values bitwise)
        step = max(1, _rows.COL_TOKENS // max(1, cols.shape[1]))
        pieces = [self._summarise(cols[i:i + step]) for i in range(0, cols.shape[0], step)]
        if len(pieces) == 1:
            return pieces[0]
        return [(torch.cat([p[i][0] for p in pieces]), torch.cat([p[i][1] for p in pieces]))
                for i in range(len(self.isabs))]

    def _summarise(self, cols: torch.Tensor) -> Summary:
        """:meth:`summarise` of the column sets ``cols [R, n_context, 1]``."""
        h = self.proj(cols)  # eq. 1 on the context rows: [R, n_context, d]
        out: Summary = []
        for i, isab in enumerate(self.isabs):
            mab = isab.mab_out
            summary = isab.mab_in(isab.inducing.unsqueeze(0).expand(h.shape[0], -1, -1), h)  # eq. 2
            k, v = mab.attn.project_keys_values(mab.norm_y(summary))
            out.append((k.contiguous(), v.contiguous()))  # read by every chunk: laid out once
            if i + 1 < len(self.isabs):  # the next block's inducing points read this block's output
                h = self._read(mab, h, out[-1])
        return out

    @staticmethod
    def select(summary: Summary, batch: int, start: int, stop: int) -> Summary:
        """The summaries of columns ``[start, stop)`` of each of ``batch`` episodes (for :meth:`embed`)."""
        out: Summary = []
        for k, v in summary:
            if start == 0 and stop * batch == k.shape[0]:
                out.append((k, v))
                continue
            m = k.shape[0] // batch
            out.append(tuple(t.view(batch, m, *t.shape[1:])[:, start:stop].reshape(-1, *t.shape[1:])
                             for t in (k, v)))  # type: ignore[misc]
        return out

    def embed(self, x: torch.Tensor, summary: Summary) -> torch.Tensor:
        """Eqs. 1, 3 and 7-9 for the rows of ``x``: each cell reads its column's summaries.

        :param x: ``[B, R, m]`` cells of any ``R`` rows (context or query), same columns as ``summary``.
        :return: ``[B, R, m, d]``.
        """
        b, r, m = x.shape
        cols = self._columns(x)
        h = self.proj(cols)  # eq. 1: [B*m, R, d]
        for isab, kv in zip(self.isabs, summary, strict=True):
            h = self._read(isab.mab_out, h, kv)  # eq. 3
        w, bias = self.out(self.generator(h)).chunk(2, dim=-1)  # eqs. 7-8
        e = cols * self.norm_w(w) + self.norm_b(bias)  # eq. 9
        return e.view(b, m, r, self.d).transpose(1, 2)
