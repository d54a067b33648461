"""Output heads: a generic MLP and a classification head with temperature and per-episode class masking."""

from __future__ import annotations

import torch
from torch import nn

from tabzoo.errors import TabzooInputError
from tabzoo.nn.transformer import Activation, make_activation

__all__ = ["MLPHead", "ClassificationHead"]


class MLPHead(nn.Module):
    """``Linear(d_in, d_hidden) -> act -> dropout -> ... -> Linear(d_hidden, d_out)``.

    :param d_in: input width.
    :param d_hidden: hidden width.
    :param d_out: output width.
    :param activation: ``"gelu"``, ``"relu"``, ``"silu"`` or ``"tanh"``.
    :param n_layers: number of linear layers (>= 1; 1 = a single ``Linear(d_in, d_out)``).
    :param dropout: dropout after each hidden activation.
    """

    def __init__(
        self,
        d_in: int,
        d_hidden: int,
        d_out: int,
        activation: Activation = "gelu",
        n_layers: int = 2,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if n_layers < 1:
            raise TabzooInputError(f"MLPHead needs n_layers >= 1, got {n_layers}.")
        layers: list[nn.Module] = []
        width = d_in
        for _ in range(n_layers - 1):
            layers += [nn.Linear(width, d_hidden), make_activation(activation), nn.Dropout(dropout)]
            width = d_hidden
        layers.append(nn.Linear(width, d_out))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:param x: ``[..., d_in]``. :return: ``[..., d_out]``."""
        return self.net(x)


class ClassificationHead(nn.Module):
    """Classification head: MLP to ``n_classes_max`` logits, masking classes an episode does not have.

    ``forward`` returns raw logits (for cross-entropy training); ``predict_proba`` divides by the
    temperature before the softmax (e.g. 0.8 for TabFlex, 0.9 for ORION-MSP).

    :param d_in: input width.
    :param n_classes_max: number of logits.
    :param d_hidden: hidden width (default ``2 * d_in``); ``0`` = a single linear layer.
    :param activation: hidden activation.
    :param temperature: softmax temperature used by :meth:`predict_proba` (> 0).
    :param dropout: hidden dropout.
    """

    def __init__(
        self,
        d_in: int,
        n_classes_max: int,
        d_hidden: int | None = None,
        activation: Activation = "gelu",
        temperature: float = 1.0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if n_classes_max < 2:
            raise TabzooInputError(f"ClassificationHead needs n_classes_max >= 2, got {n_classes_max}.")
        if temperature <= 0:
            raise TabzooInputError(f"temperature must be > 0, got {temperature}.")
        d_hidden = 2 * d_in if d_hidden is None else d_hidden
        self.n_classes_max, self.temperature = n_classes_max, temperature
        self.mlp = MLPHead(d_in, max(d_hidden, 1), n_classes_max, activation, 2 if d_hidden > 0 else 1, dropout)

    def forward(self, h: torch.Tensor, n_classes: torch.Tensor | int | None = None) -> torch.Tensor:
        """Logits.

        :param h: ``[B, N, d_in]`` (or ``[B, d_in]``).
        :param n_classes: per-episode class count ``[B]`` long (or one int); logits of classes
            ``>= n_classes[b]`` are set to ``-inf``. None = no masking.
        :return: ``[B, N, n_classes_max]`` (or ``[B, n_classes_max]``).
        """
        logits = self.mlp(h)
        if n_classes is None:
            return logits
        nc = torch.as_tensor(n_classes, device=logits.device).long()
        if nc.dim() == 0:
            nc = nc.expand(logits.shape[0])
        if nc.shape != (logits.shape[0],) or int(nc.min()) < 1 or int(nc.max()) > self.n_classes_max:
            raise TabzooInputError(
                f"n_classes must be an int or [B={logits.shape[0]}] with values in 1..{self.n_classes_max}, "
                f"got {nc.tolist()}; regression episodes (n_classes 0) need a regression head."
            )
        cls = torch.arange(self.n_classes_max, device=logits.device)
        keep = cls < nc.view(-1, *([1] * (logits.dim() - 1)))
        return logits.masked_fill(~keep, float("-inf"))

    def predict_proba(self, h: torch.Tensor, n_classes: torch.Tensor | int | None = None) -> torch.Tensor:
        """``softmax(logits / temperature)``, ``[..., n_classes_max]``; masked classes get probability 0."""
        return self.proba_from_logits(self(h, n_classes))

    def proba_from_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """``softmax(logits / temperature)`` in float32 (for logits averaged over ensemble members)."""
        return torch.softmax(logits.float() / self.temperature, dim=-1)
