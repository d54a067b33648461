"""Label embedding for in-context learning: labels are added to context rows only.

:func:`add_label_embedding` slices ``y[:, :n_context]`` before anything else, so the labels of
query rows are never read (they may hold anything, including NaN).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from tabzoo.errors import TabzooInputError

__all__ = ["LabelEmbedding", "add_label_embedding"]


class LabelEmbedding(nn.Module):
    """Embed class labels (or regression targets) into the model width.

    :param n_classes_max: the largest number of classes; ``0`` means regression (a linear map of the value).
    :param d: embedding width.
    :param kind: ``"onehot"`` (one-hot -> Linear, TabFlex / ORION-MSP style) or ``"embedding"`` (``nn.Embedding``).
    """

    def __init__(self, n_classes_max: int, d: int, kind: Literal["onehot", "embedding"] = "onehot") -> None:
        super().__init__()
        if n_classes_max < 0:
            raise TabzooInputError(f"n_classes_max must be >= 0 (0 = regression), got {n_classes_max}.")
        if kind not in ("onehot", "embedding"):
            raise TabzooInputError(f"unknown label embedding kind {kind!r}; use 'onehot' or 'embedding'.")
        self.n_classes_max, self.d, self.kind = n_classes_max, d, kind
        self.proj: nn.Module
        if n_classes_max == 0:
            self.proj = nn.Linear(1, d)
        elif kind == "onehot":
            self.proj = nn.Linear(n_classes_max, d)
        else:
            self.proj = nn.Embedding(n_classes_max, d)

    @property
    def _dtype(self) -> torch.dtype:
        """The parameters' dtype (inputs are cast to it)."""
        return self.proj.weight.dtype  # type: ignore[return-value]

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """:param y: ``[...]`` labels: class indices (float or long) in ``0 .. n_classes_max-1``, or values
        for regression. :return: ``[..., d]``.
        """
        if self.n_classes_max == 0:
            return self.proj(y.unsqueeze(-1).to(self._dtype))
        if y.is_floating_point() and not bool(torch.all(y == torch.round(y))):
            raise TabzooInputError(
                "class labels must be whole numbers (class indices); got fractional or NaN values. "
                "Encode labels as 0..n_classes-1, or build LabelEmbedding(0, d) for regression."
            )
        idx = y.long()
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= self.n_classes_max):
            raise TabzooInputError(
                f"class labels must lie in 0..{self.n_classes_max - 1}, got range "
                f"{int(idx.min())}..{int(idx.max())}; raise n_classes_max or re-encode the labels."
            )
        if self.kind == "embedding":
            return self.proj(idx)
        onehot = nn.functional.one_hot(idx, self.n_classes_max).to(self._dtype)
        return self.proj(onehot)

    def add_to(self, h: torch.Tensor, y: torch.Tensor, n_context: int) -> torch.Tensor:
        """Shorthand for :func:`add_label_embedding` ``(h, y, n_context, self)``."""
        return add_label_embedding(h, y, n_context, self)


def add_label_embedding(
    h: torch.Tensor,
    y: torch.Tensor,
    n_context: int,
    embedding: LabelEmbedding,
    row_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Add the label embedding to the context rows of ``h``; query rows are returned unchanged.

    :param h: ``[B, N, d]`` row tokens, context rows first.
    :param y: ``[B, N]`` or ``[B, n_context]`` labels; only ``y[:, :n_context]`` is read.
    :param n_context: number of context rows (``1 <= n_context <= N``).
    :param embedding: the :class:`LabelEmbedding`.
    :param row_mask: optional ``[B, N]`` bool, True = real row; padded context rows get no embedding
        (their labels are not read either).
    :return: ``[B, N, d]``, a new tensor (``h`` is not modified in place).
    """
    if h.dim() != 3 or y.dim() != 2 or y.shape[0] != h.shape[0]:
        raise TabzooInputError(
            f"add_label_embedding expects h [B, N, d] and y [B, >=n_context], got {tuple(h.shape)} and {tuple(y.shape)}."
        )
    if not 0 < n_context <= h.shape[1] or y.shape[1] < n_context:
        raise TabzooInputError(
            f"n_context={n_context} must be in 1..{h.shape[1]} and y must hold at least n_context labels "
            f"(has {y.shape[1]})."
        )
    y_ctx = y[:, :n_context]
    if row_mask is not None:
        real = row_mask[:, :n_context].to(torch.bool)
        y_ctx = torch.where(real, y_ctx, torch.zeros((), dtype=y_ctx.dtype, device=y_ctx.device))
    emb = embedding(y_ctx).to(h.dtype)
    if row_mask is not None:
        emb = emb * real.unsqueeze(-1).to(emb.dtype)
    return torch.cat([h[:, :n_context] + emb, h[:, n_context:]], dim=1)
