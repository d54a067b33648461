"""A kNN-style attention in-context classifier that works without training.

Every row is mapped to a ``d``-dimensional key by a fixed, seeded Gaussian projection (which
roughly preserves distances). Each query row attends with a softmax over the context rows
(``tabzoo.kernels.masked_attention``, so any registered backend can run it), and its class
probabilities are the attention-weighted average of the one-hot context labels: a soft kNN.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from torch import nn


class KNNAttentionClassifier(nn.Module):
    """``forward(x [B, N, F], y_context [B, n_context]) -> log-probabilities [B, N - n_context, max_classes]``.

    :param max_features: features beyond this are refused; fewer are zero-padded.
    :param max_classes: classes of the output head; labels must be integers in ``[0, max_classes)``.
    :param d: key dimension of the projection.
    :param temperature: softmax temperature (smaller = closer to 1-nearest-neighbour).
    :param seed: seed of the projection (stored in the state dict, so checkpoints round-trip).
    """

    task = "classification"

    def __init__(self, max_features: int = 8, max_classes: int = 10, d: int = 16, temperature: float = 1.0,
                 seed: int = 0) -> None:
        super().__init__()
        if temperature <= 0:
            raise TabzooInputError(f"temperature must be > 0, got {temperature}; use e.g. 1.0.")
        self.max_features, self.max_classes, self.d, self.temperature = max_features, max_classes, d, temperature
        g = torch.Generator().manual_seed(seed)
        self.proj = nn.Linear(max_features, d, bias=False)
        with torch.no_grad():
            self.proj.weight.copy_(torch.randn(d, max_features, generator=g) / math.sqrt(d))

    def _validate(self, x: torch.Tensor, y_context: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            raise TabzooInputError(
                f"x must be a float tensor [batch, rows, features]; got shape {tuple(getattr(x, 'shape', ()))}. "
                "Add a batch dimension with x[None].")
        if not isinstance(y_context, torch.Tensor) or not y_context.is_floating_point() or y_context.dim() != 2 \
                or y_context.shape[0] != x.shape[0]:
            raise TabzooInputError(
                f"y_context must be a float tensor [batch, n_context] with the batch size of x ({x.shape[0]}); "
                f"got {tuple(getattr(y_context, 'shape', ()))}.")
        n_context = y_context.shape[1]
        if n_context == 0 or n_context >= x.shape[1]:
            raise TabzooInputError(
                f"y_context has {n_context} rows and x has {x.shape[1]}: x must hold the context rows first, "
                "then at least one query row, and the context must not be empty.")
        if x.shape[2] > self.max_features:
            raise TabzooInputError(
                f"x has {x.shape[2]} features but this model takes at most {self.max_features}; select "
                "features or build the model with a larger max_features.")
        if not torch.isfinite(y_context).all():
            raise TabzooInputError("y_context holds NaN or inf labels; drop those context rows or fix the labels.")
        bad = (y_context < 0) | (y_context >= self.max_classes) | (y_context != y_context.round())
        if bad.any():
            raise TabzooInputError(
                f"class labels must be integers in [0, {self.max_classes}); got {y_context[bad][0].item()}. "
                "Encode the classes as 0..n_classes-1.")
        if torch.isinf(x).any():
            raise TabzooInputError("x holds inf; features may be NaN (missing) but not inf: clip them or use NaN.")
        for b, labels in enumerate(y_context):
            if torch.unique(labels).numel() < 2:
                raise TabzooInputError(
                    f"episode {b}: the context holds a single class; a classifier needs context rows of at least "
                    "two classes.")

    def keys(self, x: torch.Tensor) -> torch.Tensor:
        """Row keys ``[B, N, d]`` (missing values count as 0)."""
        x = torch.nan_to_num(x.float(), nan=0.0)
        return self.proj(nn.functional.pad(x, (0, self.max_features - x.shape[2])))

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        from tabzoo.kernels import masked_attention

        self._validate(x, y_context)
        n_context = y_context.shape[1]
        keys = self.keys(x)
        width = max(self.d, self.max_classes)
        q = nn.functional.pad(keys[:, n_context:], (0, width - self.d)).unsqueeze(1)  # [B, 1, Nq, width]
        k = nn.functional.pad(keys[:, :n_context], (0, width - self.d)).unsqueeze(1)  # [B, 1, Nc, width]
        v = nn.functional.one_hot(y_context.long(), width).to(q.dtype).unsqueeze(1)  # [B, 1, Nc, width]
        probs = masked_attention(q, k, v, scale=1.0 / self.temperature).squeeze(1)[..., : self.max_classes]
        return torch.log(probs.clamp_min(1e-6))


def build(config: dict[str, Any]) -> KNNAttentionClassifier:
    """The plugin's ``build``: the model from its config dict (:class:`~tabzoo_example_plugin.plugin.KNNConfig`)."""
    return KNNAttentionClassifier(**config)
