"""Seeded Gaussian random projection for inputs wider than the model (Algorithm 1, d > 1000).

The authors' code meant to project but kept a random, unseeded subset of 1000 columns. Here the
projection is a real one: ``X @ W`` with ``W [d, k]`` drawn i.i.d. ``N(0, 1/d)`` from a
:class:`torch.Generator` seeded with ``seed`` - the same seed always gives the same matrix, on any
machine. With standardised, uncorrelated inputs every output column has unit variance, and by the
Johnson-Lindenstrauss lemma pairwise distances are preserved up to ``1 +- O(sqrt(log n / k))``
(scaled by ``sqrt(k / d)``).
"""

from __future__ import annotations

import numpy as np
import torch
from tabzoo.errors import TabzooInputError

__all__ = ["RandomProjection", "gaussian_matrix"]


def gaussian_matrix(n_features: int, n_components: int, seed: int) -> torch.Tensor:
    """The projection matrix ``[n_features, n_components]`` float32, entries ``N(0, 1/n_features)``."""
    if n_features < 1 or n_components < 1:
        raise TabzooInputError(
            f"random projection needs n_features >= 1 and n_components >= 1, got {n_features}, {n_components}."
        )
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    return torch.randn(n_features, n_components, generator=gen, dtype=torch.float32) / float(np.sqrt(n_features))


class RandomProjection:
    """``d -> n_components`` seeded Gaussian projection.

    :param n_components: output width (1000 for H1K, the model's ``max_features`` in general).
    :param seed: seed of the matrix.

    After :meth:`fit`, ``components_`` is ``[n_features_in_, n_components]``. NaN inputs are read as 0
    (impute before projecting to do better).
    """

    def __init__(self, n_components: int = 1000, seed: int = 0) -> None:
        self.n_components = int(n_components)
        self.seed = int(seed)

    def fit(self, n_features: int) -> RandomProjection:
        """Draw the matrix for ``n_features`` inputs."""
        self.n_features_in_ = int(n_features)
        self.components_ = gaussian_matrix(self.n_features_in_, self.n_components, self.seed)
        return self

    def transform(self, x: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        """Project ``[..., n_features_in_]`` -> ``[..., n_components]`` (numpy in, numpy out)."""
        if not hasattr(self, "components_"):
            raise TabzooInputError("RandomProjection is not fitted; call fit(n_features) first.")
        if x.shape[-1] != self.n_features_in_:
            raise TabzooInputError(
                f"RandomProjection was fitted for {self.n_features_in_} features, got {x.shape[-1]}; "
                "refit it or pass the same columns."
            )
        if isinstance(x, torch.Tensor):
            w = self.components_.to(device=x.device)
            return torch.nan_to_num(x.float(), nan=0.0) @ w
        w_np = self.components_.numpy()
        return np.nan_to_num(np.asarray(x, dtype=np.float32), nan=0.0) @ w_np

    def __repr__(self) -> str:
        return f"RandomProjection(n_components={self.n_components}, seed={self.seed})"
