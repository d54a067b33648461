"""Cross-component Perceiver memory (appendix A.5, eqs. 30-42, Algorithm 2 lines 1-17).

``P`` learned latents ``L_0 ~ N(0, 0.02^2)`` are written by ``N_write`` cross-attention blocks that
read the CONTEXT rows only (eq. 38), then every row reads the written memory through ``N_read``
cross-attention blocks (eq. 41). Each block is pre-norm with a residual and a GELU feed-forward of
``2 d_R`` (eqs. 33-36).

**Gated read (a departure from appendix B.3's Xavier-only initialisation).** Each read block's
update is scaled by a learned scalar gate initialised at 0, ``R <- R + g_i (CrossAttnBlock(R, L) - R)``,
so at initialisation the memory is the identity and the network is exactly the memory-free model.
Without the gate the read adds, to every row, a vector that is nearly the same for all rows of an
episode but differs from episode to episode (attention over 32 slots is near-uniform at
initialisation); it is ~7x larger than the row-to-row variation of the row embeddings, so after the
ICL blocks' LayerNorm the rows are hard to tell apart and the label embedding is drowned. Measured:
the ``small`` model without the gate did not learn ``y = (x_0 > 0) xor flip`` in context (loss stuck
at ln 2 for 200 steps), nor the ``mix`` prior in 600 steps; without the memory or with the gate it
did. ``memory_gate=False`` restores the ungated form.

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
        # one scalar per read block, 0 at initialisation: the memory starts as the identity
        self.gate = nn.Parameter(torch.zeros(cfg.memory_read)) if cfg.memory_gate else None

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
        for i, block in enumerate(self.read):
            out = block(r, mem)  # eq. 41: every row reads the memory, nothing else
            r = out if self.gate is None else r + self.gate[i].to(r.dtype) * (out - r)
        return r
