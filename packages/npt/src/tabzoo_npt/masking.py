"""Stochastic feature and target masking (appendix C.4.3), with an exact randomised share.

Of the candidate cells, a share ``p`` is selected; of the selected cells a share
``random_share`` (10%) is *randomised* (a uniform class for categorical attributes, ``N(0, 1)``
for numeric ones; the mask bit stays 0) and the rest are *masked out* (value zeroed, mask bit 1).
The loss is computed on every selected cell.

Counts are exact: with ``c`` candidates, ``p * c`` selected and ``0.1 * m`` of the ``m``
selected cells randomised, each rounded *stochastically* (``floor(x)`` plus one with probability
``x - floor(x)``). Every draw is within one cell of the share and the expected share is exact
for every count, small ones included (a fixed ``int(0.1 * m)`` would randomise nothing below
ten selected cells).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tabzoo.errors import TabzooInputError

__all__ = ["MaskDraw", "stochastic_count", "select_exact", "stochastic_mask", "randomise"]


def stochastic_count(x: float, generator: torch.Generator) -> int:
    """``floor(x)`` plus one with probability ``x - floor(x)`` (unbiased integer rounding)."""
    base = int(x // 1)
    frac = x - base
    if frac > 0 and float(torch.rand((), generator=generator)) < frac:
        base += 1
    return base


def select_exact(candidates: torch.Tensor, share: float, generator: torch.Generator) -> torch.Tensor:
    """A bool tensor like ``candidates`` with ``stochastic_count(share * #candidates)`` True
    entries, chosen uniformly among the candidates."""
    if not 0.0 <= share <= 1.0:
        raise TabzooInputError(f"masking share {share} must lie in [0, 1].")
    flat = candidates.reshape(-1)
    idx = torch.nonzero(flat).flatten()
    k = min(stochastic_count(share * idx.numel(), generator), idx.numel())
    out = torch.zeros_like(flat)
    if k:
        pick = idx[torch.randperm(idx.numel(), generator=generator)[:k].to(idx.device)]
        out[pick] = True
    return out.view_as(candidates)


@dataclass
class MaskDraw:
    """One draw: ``selected = masked | randomised`` (disjoint), all ``[..., d]`` bool."""

    masked: torch.Tensor
    randomised: torch.Tensor

    @property
    def selected(self) -> torch.Tensor:
        return self.masked | self.randomised


def stochastic_mask(candidates: torch.Tensor, p: float, generator: torch.Generator,
                    random_share: float = 0.1) -> MaskDraw:
    """Select a share ``p`` of ``candidates``; randomise a share ``random_share`` of those."""
    selected = select_exact(candidates, p, generator)
    randomised = select_exact(selected, random_share, generator)
    return MaskDraw(masked=selected & ~randomised, randomised=randomised)


def randomise(values: torch.Tensor, where: torch.Tensor, cards: torch.Tensor,
              generator: torch.Generator) -> torch.Tensor:
    """``values [..., d]`` with the ``where`` cells replaced: a uniform class in ``[0, K_j)`` for
    categorical attributes, ``N(0, 1)`` for numeric ones."""
    if not bool(where.any()):
        return values
    noise = torch.randn(values.shape, generator=generator).to(values)
    u = torch.rand(values.shape, generator=generator).to(values)
    k = cards.to(values).expand_as(values)
    classes = torch.floor(u * k.clamp(min=1)).clamp(max=(k - 1).clamp(min=0))
    repl = torch.where(k > 0, classes, noise)
    return torch.where(where, repl, values)
