"""Cross-component Perceiver memory (appendix A.5, eqs. 30-42, Algorithm 2 lines 1-17).

``P`` learned latents ``L_0 ~ N(0, 0.02^2)`` are written by ``N_write`` cross-attention blocks that
read the CONTEXT rows only (eq. 38), then every row reads the written memory through ``N_read``
cross-attention blocks (eq. 41). Each block is pre-norm with a residual and a GELU feed-forward of
``2 d_R`` (eqs. 33-36).

That is all. The authors' implementation ends the read step with an unmasked self-attention over all
rows, so a query row's output depended on the other query rows (their logits moved by 2e-4 to 6e-3
when another query row changed). There is no such step here: after the memory a row's
representation is a function of itself and of the context rows only, which the static leak proof
(:meth:`tabzoo_orion_msp.model.OrionMSP.mask_stack`) and the conformance kit both check.
"""

from __future__ import annotations

import torch
from tabzoo.nn import CrossAttentionBlock
from torch import nn

from tabzoo_orion_msp.config import OrionConfig

__all__ = ["PerceiverMemory"]


class PerceiverMemory(nn.Module):
    """Write (latents read context rows), then read (every row reads the latents).

    :param cfg: model config (``memory_slots``, ``memory_heads``, ``memory_write``, ``memory_read``).
    """

    def __init__(self, cfg: OrionConfig) -> None:
        super().__init__()
        d = cfg.d_row
        self.latents = nn.Parameter(torch.empty(cfg.memory_slots, d))
        nn.init.trunc_normal_(self.latents, std=0.02)
        self.write = nn.ModuleList(
            CrossAttentionBlock(d, cfg.memory_heads, d_ff=2 * d) for _ in range(cfg.memory_write)
        )
        self.read = nn.ModuleList(CrossAttentionBlock(d, cfg.memory_heads, d_ff=2 * d) for _ in range(cfg.memory_read))

    def encode(self, h: torch.Tensor, n_context: int) -> torch.Tensor:
        """Write phase: ``[B, N, d_R]`` rows -> ``[B, P, d_R]`` memory, from rows ``[0, n_context)`` only."""
        mem = self.latents.to(h.dtype)[None].expand(h.shape[0], -1, -1)
        for block in self.write:
            mem = block(mem, h, n_context=n_context)  # eq. 38: KV = context rows
        return mem

    def forward(self, h: torch.Tensor, n_context: int) -> torch.Tensor:
        """:param h: ``[B, N, d_R]`` row embeddings, context rows first.
        :param n_context: context rows. :return: ``[B, N, d_R]`` refined rows (eq. 42).
        """
        mem = self.encode(h, n_context)
        r = h
        for block in self.read:
            r = block(r, mem)  # eq. 41: every row reads the memory, nothing else
        return r
