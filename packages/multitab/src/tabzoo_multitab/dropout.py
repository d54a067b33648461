"""Dropout whose masks come from 16-bit random words (issue 26 item 4: MultiTab-Net's speed).

``nn.Dropout`` draws one Bernoulli sample per element (``bernoulli_``: about 7 ns an element on one
CPU thread), and MultiTab-Net's default step drops ~870 values per row at 7 sites: the largest
single op of its training step (``benchmarks/results/multitab-step-breakdown-2026-11-29.json``).
:class:`WordDropout` draws one 32-bit random word per two elements instead and keeps an element
where its 16-bit half is at least ``round(p * 2**16)`` (so ``p`` is exact to ``2**-16``); the kept
values are scaled by ``1 / (1 - p)``, as ``nn.Dropout`` does. The masks are a different stream of
the same global generator, so a seeded fit stays deterministic, but its numbers differ from
``nn.Dropout``'s. In eval mode both are the identity.
"""

from __future__ import annotations

import torch
from tabzoo.errors import TabzooInputError
from torch import nn

from tabzoo_multitab.config import DROPOUT_MASKS

__all__ = ["DROPOUT_MASKS", "WordDropout", "use_word_dropout"]

_LOW, _HIGH = -(2**31), 2**31 - 1  # random_'s bounds for (all but one of) the 2**32 int32 values


class WordDropout(nn.Module):
    """Dropout of ``x [...]`` with probability ``p``: ``x * mask / (1 - p)``, ``mask`` from 16-bit words.

    :param p: drop probability in ``[0, 1]``.
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise TabzooInputError(f"dropout probability {p} must be in [0, 1].")
        self.p = float(p)
        # keep a 16-bit value v (uniform on [-2**15, 2**15)) iff v >= threshold: P(drop) = round(p 2**16) / 2**16
        self.threshold = int(round(self.p * 2**16)) - 2**15

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:param x: any shape. :return: same shape (``x`` itself in eval mode or at ``p = 0``)."""
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0:
            return x * 0.0
        n = x.numel()
        words = torch.empty((n + 1) // 2, dtype=torch.int32, device=x.device).random_(_LOW, _HIGH)
        keep = words.view(torch.int16)[:n].view(x.shape) >= self.threshold
        return x * keep.to(x.dtype).mul_(1.0 / (1.0 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}"


def use_word_dropout(module: nn.Module) -> nn.Module:
    """Replace every ``nn.Dropout`` inside ``module`` by a :class:`WordDropout` of the same ``p``
    (in place; dropout holds no parameters, so state dicts are unchanged); returns ``module``."""
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:
                setattr(parent, name, WordDropout(child.p))
    return module
