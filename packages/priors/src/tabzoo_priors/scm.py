"""SCM priors: MLP-style (ORION-MSP B.1.1) and tree-based (B.1.2), batched over datasets.

Both build a layered random DAG per dataset. Layer 0 holds the root causes; every node of
layer ``l + 1`` is a mechanism of nodes of layer ``l`` plus Gaussian noise. All datasets of a
call share the number of rows, layers and nodes per layer (so one batched op serves them all);
weights, edges, activations, trees, noise levels, cause distributions, feature and target
choice, class counts and the other knobs differ per dataset.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tabzoo.errors import TabzooInputError

from tabzoo_priors._assemble import RawBatch, assemble, sample_shapes, standardize
from tabzoo_priors._random import generators, log_uniform_int, uniform_int
from tabzoo_priors.activations import ACTIVATIONS, apply_activations
from tabzoo_priors.config import DatasetConfig, SCMConfig, TreeSCMConfig, build_config
from tabzoo_priors.trees import tree_layer

__all__ = ["SCMPrior", "TreeSCMPrior", "EpisodePrior"]


def _log_uniform(g: torch.Generator, n: int, rng: tuple[float, float]) -> torch.Tensor:
    lo, hi = math.log(rng[0]), math.log(rng[1])
    return torch.exp(lo + (hi - lo) * torch.rand(n, generator=g))


def _root_causes(b: int, n: int, h: int, g: torch.Generator, device: torch.device) -> torch.Tensor:
    """``[b, n, h]`` causes: per dataset Gaussian or uniform, standardised per node."""
    is_uniform = torch.rand(b, 1, 1, generator=g, device=device) < 0.5
    normal = torch.randn(b, n, h, generator=g, device=device)
    unif = torch.rand(b, n, h, generator=g, device=device) * 2.0 - 1.0
    return standardize(torch.where(is_uniform, unif, normal), dim=1)


class EpisodePrior:
    """Base class: a prior of kind ``"episodes"``. Subclasses implement :meth:`_nodes`."""

    kind = "episodes"
    config_class: type[DatasetConfig] = DatasetConfig

    def __init__(self, config: Any = None, **overrides: Any) -> None:
        self.config = build_config(self.config_class, config, **overrides)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    def sample_raw(
        self, batch_size: int, *, seed: int, device: str | torch.device = "cpu",
        n_rows: int | None = None,
    ) -> RawBatch:
        """Generate ``batch_size`` datasets as plain tensors plus generation metadata.

        :param batch_size: number of datasets.
        :param seed: the output is a pure function of ``(config, batch_size, seed, n_rows,
            device type)``.
        :param device: where the tensors are generated.
        :param n_rows: force the rows per dataset (otherwise drawn from ``config.n_rows``).
        :return: :class:`RawBatch` with ``x [batch, rows, features]``, ``y [batch, rows]``.
        """
        if not isinstance(batch_size, int) or batch_size < 1:
            raise TabzooInputError(f"batch_size={batch_size!r} must be a positive int.")
        if n_rows is not None and n_rows < 4:
            raise TabzooInputError(f"n_rows={n_rows} must be >= 4 (context and query rows).")
        device = torch.device(device)
        g_cpu, g_dev = generators(seed, device)
        shapes = sample_shapes(self.config, batch_size, g_cpu, n_rows=n_rows)
        nodes, n_candidates = self._nodes(batch_size, shapes.n_rows, shapes.max_features,
                                          g_cpu, g_dev, device)
        return assemble(nodes, n_candidates, shapes, self.config, g_dev)

    def sample(
        self, batch_size: int, *, seed: int, device: str | torch.device = "cpu",
        n_rows: int | None = None,
    ):  # -> tabzoo.table.EpisodeBatch
        """Generate a padded :class:`tabzoo.table.EpisodeBatch` of ``batch_size`` datasets.

        ``x [batch, rows, features]``; rows ``[0, n_context)`` are context rows; NaN = missing.
        """
        return self.sample_raw(batch_size, seed=seed, device=device, n_rows=n_rows).to_episode_batch()

    def _nodes(
        self, b: int, n: int, f_max: int, g_cpu: torch.Generator, g_dev: torch.Generator,
        device: torch.device,
    ) -> tuple[torch.Tensor, int]:
        raise NotImplementedError

    def _layout(self, g_cpu: torch.Generator, f_max: int) -> tuple[int, int]:
        cfg = self.config
        n_layers = uniform_int(g_cpu, *cfg.n_layers)
        hidden = log_uniform_int(g_cpu, *cfg.hidden)
        hidden = max(hidden, math.ceil((f_max + 1) / (n_layers + 1)))
        return n_layers, hidden


class SCMPrior(EpisodePrior):
    """MLP-style SCM prior (ORION-MSP appendix B.1.1).

    Node ``j`` of layer ``l + 1``: ``f_j(sum_i W_ij * parent_i + eps_j)`` where the edges ``W`` are
    sparse per dataset (probability ``edge_prob``, at least one parent per node), ``f_j`` is drawn
    uniformly per node from :data:`~tabzoo_priors.activations.ACTIVATIONS` (19 functions incl.
    random Fourier features) and ``eps_j ~ N(0, noise_std**2)``. Pre-activations and node values
    are standardised over rows, so nothing overflows.

    Example::

        prior = SCMPrior(n_rows=(512, 1024), n_features=(5, 20), task="classification")
        batch = prior.sample(32, seed=0)        # EpisodeBatch, x [32, rows, 20]
    """

    config_class = SCMConfig

    def _nodes(self, b, n, f_max, g_cpu, g_dev, device):
        cfg = self.config
        n_layers, hidden = self._layout(g_cpu, f_max)
        edge_p = (cfg.edge_prob[0] + (cfg.edge_prob[1] - cfg.edge_prob[0]) * torch.rand(b, generator=g_cpu))
        sigma = _log_uniform(g_cpu, b, cfg.noise_std).to(device).view(b, 1, 1)
        edge_p = edge_p.to(device).view(b, 1, 1)
        h = _root_causes(b, n, hidden, g_dev, device)
        layers = [h]
        for _ in range(n_layers):
            w = torch.randn(b, hidden, hidden, generator=g_dev, device=device)
            keep = torch.rand(b, hidden, hidden, generator=g_dev, device=device) < edge_p
            forced = torch.randint(0, hidden, (b, 1, hidden), generator=g_dev, device=device)
            keep.scatter_(1, forced, True)  # every child keeps at least one parent
            w = w * keep / keep.sum(1, keepdim=True).clamp_min(1).sqrt()
            pre = torch.bmm(h, w)
            pre = pre + sigma * torch.randn(b, n, hidden, generator=g_dev, device=device)
            codes = torch.randint(0, len(ACTIVATIONS), (b, hidden), generator=g_dev, device=device)
            h = standardize(apply_activations(standardize(pre), codes, g_dev))
            layers.append(h)
        return torch.cat(layers, dim=2), hidden


class TreeSCMPrior(EpisodePrior):
    """Tree SCM prior (ORION-MSP appendix B.1.2).

    Node ``j`` of layer ``l + 1`` is the mean of ``n_trees`` random decision trees over the nodes of
    layer ``l`` (random split feature, threshold = that feature's value at a random row, depth
    uniform in ``depth`` per node, leaf values Gaussian or uniform per dataset) plus Gaussian
    noise. The relationships are piecewise constant.

    Example::

        prior = TreeSCMPrior(n_rows=(1024, 1024), n_features=(20, 20), depth=(1, 4))
        batch = prior.sample(16, seed=3)
    """

    config_class = TreeSCMConfig

    def _nodes(self, b, n, f_max, g_cpu, g_dev, device):
        cfg = self.config
        n_layers, hidden = self._layout(g_cpu, f_max)
        n_trees = uniform_int(g_cpu, *cfg.n_trees)
        sigma = _log_uniform(g_cpu, b, cfg.noise_std).to(device).view(b, 1, 1)
        h = _root_causes(b, n, hidden, g_dev, device)
        layers = [h]
        for _ in range(n_layers):
            out = tree_layer(h, hidden, n_trees, cfg.depth, g_dev)
            out = out + sigma * torch.randn(b, n, hidden, generator=g_dev, device=device)
            h = standardize(out)
            layers.append(h)
        return torch.cat(layers, dim=2), hidden
