"""A mixture of episode priors, the default pretraining prior (``"mix"``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from tabzoo.errors import TabzooInputError

from tabzoo_priors._assemble import RawBatch
from tabzoo_priors._random import derive_seed
from tabzoo_priors.scm import EpisodePrior, SCMPrior, TreeSCMPrior

__all__ = ["MixturePrior"]


class MixturePrior:
    """Draw each batch from one of several episode priors, chosen at random per call.

    A whole batch comes from one component (the components' batches cannot share one
    ``EpisodeBatch`` otherwise: tasks and sizes would differ).

    :param components: ``{name: prior}`` or a sequence of priors; default SCM (70%) and
        tree SCM (30%), both built with ``**shared`` options (e.g. ``n_rows``, ``task``).
    :param weights: relative weights, one per component.
    :param shared: options passed to both default components.

    Example::

        prior = MixturePrior(n_rows=(256, 512), task="mixed")
        batch = prior.sample(8, seed=0)
    """

    kind = "episodes"

    def __init__(
        self,
        components: Mapping[str, EpisodePrior] | Sequence[EpisodePrior] | None = None,
        weights: Sequence[float] | None = None,
        **shared: Any,
    ) -> None:
        if components is None:
            components = {"scm": SCMPrior(**shared), "tree_scm": TreeSCMPrior(**shared)}
            weights = weights if weights is not None else (0.7, 0.3)
        elif shared:
            raise TabzooInputError(
                f"options {sorted(shared)} apply only to the default components; "
                "configure your own components directly instead."
            )
        if not isinstance(components, Mapping):
            components = {f"{type(c).__name__}_{i}": c for i, c in enumerate(components)}
        if not components:
            raise TabzooInputError("MixturePrior needs at least one component prior.")
        self.components: dict[str, EpisodePrior] = dict(components)
        w = torch.tensor(
            list(weights) if weights is not None else [1.0] * len(components), dtype=torch.float64
        )
        if w.numel() != len(components) or bool((w < 0).any()) or float(w.sum()) <= 0:
            raise TabzooInputError(
                f"weights={weights!r} must be one non-negative number per component "
                f"({len(components)}) with a positive sum."
            )
        self.weights = (w / w.sum()).tolist()

    def choose(self, seed: int) -> str:
        """Name of the component that serves ``seed``."""
        g = torch.Generator().manual_seed(derive_seed(int(seed), 2))
        i = int(torch.multinomial(torch.tensor(self.weights), 1, generator=g).item())
        return list(self.components)[i]

    def sample_raw(
        self, batch_size: int, *, seed: int, device: str | torch.device = "cpu",
        n_rows: int | None = None,
    ) -> RawBatch:
        """Like :meth:`tabzoo_priors.SCMPrior.sample_raw`, from a randomly chosen component."""
        comp = self.components[self.choose(seed)]
        return comp.sample_raw(batch_size, seed=seed, device=device, n_rows=n_rows)

    def sample(
        self, batch_size: int, *, seed: int, device: str | torch.device = "cpu",
        n_rows: int | None = None,
    ):  # -> tabzoo.table.EpisodeBatch
        """A padded ``EpisodeBatch`` ``x [batch, rows, features]`` from one component."""
        return self.sample_raw(batch_size, seed=seed, device=device, n_rows=n_rows).to_episode_batch()
