"""Multi-scale sparse row interaction ``TF_row^MS`` (appendix A.4, eqs. 13-24, Algorithm 1).

For every row, at each scale ``s`` in ``S = {1, 4, 16}``:

1. **Grouping** (A.4.2): ``K_s = ceil(m / s)`` group tokens by pooling-by-attention. A group's query
   is a learned seed plus a sinusoidal slot encoding; keys and values are linear maps of the cell
   embeddings (single head, no residual, as the authors). With ``pma_scope="block"`` (default) the
   query of group ``g`` reads the features ``[g*s, (g+1)*s)`` - the "groups of size s" of A.4.2 -
   so grouping costs ``O(m d)``. ``pma_scope="global"`` is A.4.2's formula taken literally: every
   query reads all ``m`` features, ``O(m^2 d / s)``, which would make scale 1 quadratic in the
   features and contradict eq. 27; it is kept as an option.
2. **Special tokens** (A.4.3): ``X_s = [CLS_1..4, GLOBAL_1..4, G^(s)]``.
3. **Block-sparse mask** (A.4.4, eqs. 15-18), built with :mod:`tabzoo.masks`:
   ``global_tokens(8) | window(8) | random_links(2, seed)``; self is inside the window. The random
   links are a pure hash of ``(seed, position)``: fixed at inference, identical on every call,
   never drawn from the global RNG (the authors' code resampled them on every call).
4. **Encoder** (A.4.5): ``row_blocks`` pre-norm transformer blocks per scale, RoPE (base 1e5) on
   queries and keys, GELU feed-forward. The attention is :func:`tabzoo.kernels.masked_attention`
   with the Mask object, so the kernel registry picks the path (the banded block-sparse kernel on
   wide rows, SDPA on short ones).
5. **Fusion** (eqs. 22-24): the CLS outputs are averaged over scales, flattened to ``n_cls * d``
   and LayerNormed.

Each row is processed on its own: nothing here mixes rows.
"""

from __future__ import annotations

import math

import torch
from tabzoo import kernels
from tabzoo.masks import Mask, global_tokens, random_links, window
from tabzoo.nn import RotaryEmbedding, TransformerBlock
from torch import nn

from tabzoo_orion_msp.config import OrionConfig

__all__ = ["RowInteraction", "ScaleEncoder", "row_mask", "sinusoidal", "ROW_TOKENS", "COL_TOKENS", "CELLS", "rows_per_chunk"]

#: feature tokens (rows x features) that the column and row stages process at once. Rows are
#: independent there, so chunks give what one piece gives; small chunks keep each stage's
#: activations in the CPU caches (on 2,000 features the fast path's row stage ran 2.8x faster in
#: chunks of 8 rows than in one piece of 192) and bound the peak memory.
ROW_TOKENS = 16384
#: cells (rows x columns) that the column stage embeds at once, a few columns of a block of rows
#: (:meth:`tabzoo_orion_msp.model.OrionMSP.row_embeddings`): 192 rows x 85 columns embedded in 0.33 s
#: where chunks of 8 rows x 2,000 columns took 0.40 s (the per-cell attention reads more queries at once)
COL_TOKENS = 16384
#: cells per block of rows that goes through the column stage and then the row stage (64 MB at d = 32)
CELLS = 1 << 19


def rows_per_chunk(n_tokens: int, batch: int = 1) -> int:
    """Table rows per chunk when each row has ``n_tokens`` tokens in each of ``batch`` episodes (>= 1)."""
    return max(1, ROW_TOKENS // max(1, int(n_tokens) * int(batch)))


def sinusoidal(n: int, d: int, device: torch.device | None = None) -> torch.Tensor:
    """Sinusoidal slot encodings ``[n, d]`` (positions ``0..n-1``; ``d`` even or odd)."""
    pos = torch.arange(n, dtype=torch.float32, device=device)[:, None]
    half = (d + 1) // 2
    freq = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=device) / half)
    ang = pos * freq[None]
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)[:, :d]


def row_mask(cfg: OrionConfig, scale_index: int) -> Mask:
    """The block-sparse mask of one scale (eqs. 15-18): global | window | random links (| self).

    The random-link seed depends on ``cfg.link_seed`` and the scale, never on the call.
    """
    m = global_tokens(cfg.n_special) | window(cfg.window)
    if cfg.random_links > 0:
        m = m | random_links(cfg.random_links, seed=int(cfg.link_seed) * 1009 + scale_index)
    return m


class ScaleEncoder(nn.Module):
    """Grouping, special tokens and the sparse encoder of one scale.

    :param cfg: model config.
    :param scale: group size ``s``.
    :param index: position of the scale in ``cfg.scales`` (seeds its random links).
    """

    def __init__(self, cfg: OrionConfig, scale: int, index: int) -> None:
        super().__init__()
        d = cfg.d
        self.cfg, self.scale, self.d = cfg, int(scale), d
        self.seed = nn.Parameter(torch.zeros(d))
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.blocks = nn.ModuleList(
            TransformerBlock(d, cfg.row_heads, cfg.row_ff, norm="pre", activation="gelu") for _ in range(cfg.row_blocks)
        )
        self.rope = RotaryEmbedding(d // cfg.row_heads, base=cfg.rope_base)
        self.mask = row_mask(cfg, index)

    def group(self, e: torch.Tensor) -> torch.Tensor:
        """PMA grouping: ``[R, m, d]`` cell embeddings -> ``[R, K_s, d]`` group tokens."""
        r, m, d = e.shape
        s = self.scale
        k_groups = -(-m // s)
        q = self.seed + sinusoidal(k_groups, d, e.device).to(e.dtype)  # [K, d]
        if s == 1 and self.cfg.pma_scope == "block":
            # a group of one feature: the softmax over its single key is exactly 1, so the group
            # token is that feature's value (bitwise the same result, without the key and softmax)
            return self.value(e)
        keys, vals = self.key(e), self.value(e)
        if self.cfg.pma_scope == "global":
            qh = q[None, None].expand(r, 1, k_groups, d)
            out = kernels.masked_attention(qh, keys[:, None], vals[:, None])  # every query reads all m
            return out[:, 0]
        pad = k_groups * s - m
        if pad:
            keys = nn.functional.pad(keys, (0, 0, 0, pad))
            vals = nn.functional.pad(vals, (0, 0, 0, pad))
        keys = keys.view(r, k_groups, s, d)
        vals = vals.view(r, k_groups, s, d)
        # broadcast products and sums: with groups of 4 or 16 keys these are several times faster
        # on CPU than einsum, which permutes the keys into batched matmuls of tiny matrices
        scores = (keys * (q / math.sqrt(d))[None, :, None, :]).sum(-1)  # [R, K, s]
        if pad:
            real = (torch.arange(k_groups * s, device=e.device) < m).view(k_groups, s)
            scores = scores.masked_fill(~real, float("-inf"))
        attn = torch.softmax(scores.float(), dim=-1).to(vals.dtype)
        return (attn[..., None] * vals).sum(2)

    def forward(self, e: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
        """:param e: ``[R, m, d]`` cell embeddings of ``R`` rows. :param special: ``[n_special, d]``.
        :return: ``[R, n_cls, d]`` CLS outputs of this scale.
        """
        g = self.group(e)
        x = torch.cat([special.to(g.dtype)[None].expand(g.shape[0], -1, -1), g], dim=1)  # eq. 14
        for block in self.blocks:  # RoPE positions 0 .. n-1 (None: the rotary module's cached tables)
            x = block(x, mask=self.mask, rope=self.rope)  # eqs. 19-21
        return x[:, : self.cfg.n_cls]  # eq. 22


class RowInteraction(nn.Module):
    """``TF_row^MS``: cell embeddings ``[B, N, m, d]`` -> row embeddings ``[B, N, n_cls * d]``."""

    def __init__(self, cfg: OrionConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.cls = nn.Parameter(torch.randn(cfg.n_cls, cfg.d) * 0.02)
        self.glob = nn.Parameter(torch.randn(cfg.n_global, cfg.d) * 0.02)
        self.scales = nn.ModuleList(ScaleEncoder(cfg, s, i) for i, s in enumerate(cfg.scales))
        self.norm = nn.LayerNorm(cfg.d_row)

    def masks(self) -> list[Mask]:
        """The block-sparse mask of each scale (over ``n_special + K_s`` token positions)."""
        return [enc.mask for enc in self.scales]

    def forward(self, e: torch.Tensor) -> torch.Tensor:
        """:param e: ``[B, N, m, d]``. :return: ``[B, N, n_cls * d]`` (eqs. 23-24).

        Rows are processed about :data:`ROW_TOKENS` tokens at a time (each row on its own, so the
        result is the same): the activations of one scale are ``[rows, n_special + K_s, d]`` several
        times over, which for 4 members x 4,000 rows x 108 tokens peaked at 3.2 GB in one piece.
        """
        b, n, m, d = e.shape
        rows = e.reshape(b * n, m, d)
        special = torch.cat([self.cls, self.glob], dim=0)
        step = rows_per_chunk(m + self.cfg.n_special)
        parts = [self._cls_mean(rows[i:i + step], special) for i in range(0, rows.shape[0], step)]
        agg = parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)
        return self.norm(agg.reshape(b, n, self.cfg.n_cls * d))

    def _cls_mean(self, rows: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
        """``[R, m, d]`` cell embeddings -> ``[R, n_cls, d]`` CLS outputs averaged over the scales."""
        agg = None
        for enc in self.scales:
            h = enc(rows, special)
            agg = h if agg is None else agg + h
        assert agg is not None
        return agg / len(self.scales)
