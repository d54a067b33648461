"""SCM priors: MLP-style (ORION-MSP B.1.1) and tree-based (B.1.2), batched over datasets.

Both build a layered random DAG per dataset. Layer 0 holds the root causes (``n_causes`` live
ones per dataset, so the data lie near a low-dimensional latent, as real tables do); every node
of layer ``l + 1`` is a mechanism of nodes of layer ``l`` plus Gaussian noise whose std is a
fraction ``noise_std`` of the (standardised) signal. The node pool (causes and layers 1..L)
then goes to :func:`~tabzoo_priors._assemble.assemble`, which draws the target among the
non-root nodes whose values can carry the task's classes and the features preferably from the
target's neighbourhood in the DAG (so that the tasks are learnable). All datasets of a
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


def _root_causes(
    b: int, n: int, h: int, n_causes: torch.Tensor, g: torch.Generator, device: torch.device
) -> torch.Tensor:
    """``[b, n, h]`` causes: per dataset Gaussian or uniform, standardised per node.

    Only the first ``n_causes[i]`` columns of dataset ``i`` are causes; the others are 0 (they
    feed nothing), so every later node is a function of a low-dimensional latent.
    """
    is_uniform = torch.rand(b, 1, 1, generator=g, device=device) < 0.5
    normal = torch.randn(b, n, h, generator=g, device=device)
    unif = torch.rand(b, n, h, generator=g, device=device) * 2.0 - 1.0
    live = torch.arange(h, device=device).view(1, 1, h) < n_causes.view(b, 1, 1)
    return standardize(torch.where(is_uniform, unif, normal), dim=1) * live


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
        nodes, ties, adj = self._nodes(batch_size, shapes.n_rows, shapes.max_features,
                                    g_cpu, g_dev, device)
        return assemble(nodes, ties, adj, shapes, self.config, g_dev)

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
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return ``(nodes [b, n, pool], ties [b, pool], adjacency [b, pool, pool])``: node
        values, each node's largest share of rows with one (noise-free) value, and the DAG's
        parent->child edges among the pool nodes; see :func:`~tabzoo_priors._assemble.assemble`."""
        raise NotImplementedError

    def _layout(self, g_cpu: torch.Generator, f_max: int) -> tuple[int, int]:
        cfg = self.config
        n_layers = uniform_int(g_cpu, *cfg.n_layers)
        hidden = log_uniform_int(g_cpu, *cfg.hidden)
        hidden = max(hidden, math.ceil((f_max + 1) / n_layers))  # layers 1..L alone fill x
        return n_layers, hidden

    def _n_causes(self, b: int, hidden: int, g_cpu: torch.Generator, device: torch.device) -> torch.Tensor:
        """Root causes per dataset, log-uniform in ``config.n_causes`` and at most ``hidden``."""
        lo, hi = self.config.n_causes
        c = _log_uniform(g_cpu, b, (lo, hi + 1)).floor().long().clamp(lo, hi)
        return c.clamp_max(hidden).to(device)


class SCMPrior(EpisodePrior):
    """MLP-style SCM prior (ORION-MSP appendix B.1.1).

    Node ``j`` of layer ``l + 1``: ``f_j(sum_i W_ij * parent_i + eps_j)`` where the edges ``W`` are
    sparse per dataset (probability ``edge_prob``, at least one parent per node), ``f_j`` is drawn
    uniformly per node from :data:`~tabzoo_priors.activations.ACTIVATIONS` (19 functions incl.
    random Fourier features) and ``eps_j ~ N(0, sigma**2)``, ``sigma`` log-uniform in
    ``noise_std`` per dataset. ``sum_i W_ij * parent_i`` is standardised over rows before the
    noise is added (so ``sigma`` is the noise-to-signal std ratio), and so are the node values,
    so nothing overflows or vanishes through the layers. Layer 1 reads only the live causes.

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
        n_causes = self._n_causes(b, hidden, g_cpu, device)
        h = _root_causes(b, n, hidden, n_causes, g_dev, device)
        rows = torch.arange(hidden, device=device).view(1, hidden, 1)
        layers, ties, edges = [h], [], []
        for layer in range(n_layers):
            n_par = n_causes.view(b, 1, 1) if layer == 0 else torch.full_like(n_causes, hidden).view(b, 1, 1)
            w = torch.randn(b, hidden, hidden, generator=g_dev, device=device)
            keep = torch.rand(b, hidden, hidden, generator=g_dev, device=device) < edge_p
            keep &= rows < n_par  # layer 1 reads only the live causes
            u = torch.rand(b, 1, hidden, generator=g_dev, device=device)
            forced = (u * n_par).long().clamp_max(hidden - 1)
            keep.scatter_(1, forced, True)  # every child keeps at least one parent
            w = w * keep / keep.sum(1, keepdim=True).clamp_min(1).sqrt()
            pre = standardize(torch.bmm(h, w))
            pre = pre + sigma * torch.randn(b, n, hidden, generator=g_dev, device=device)
            codes = torch.randint(0, len(ACTIVATIONS), (b, hidden), generator=g_dev, device=device)
            h = standardize(apply_activations(standardize(pre), codes, g_dev))
            layers.append(h)
            ties.append(_edge_tie_share(h))
            edges.append(keep)
        return _finish(layers, ties, edges)


class TreeSCMPrior(EpisodePrior):
    """Tree SCM prior (ORION-MSP appendix B.1.2).

    Node ``j`` of layer ``l + 1`` is the mean of ``n_trees`` random decision trees over the nodes of
    layer ``l`` (random split feature, threshold = midpoint of that feature's values at two
    random rows, depth uniform in ``depth`` per tree, leaf values Gaussian or uniform per
    dataset), standardised, plus Gaussian noise of std ``sigma`` (log-uniform in ``noise_std``
    per dataset, relative to the standardised signal). The relationships are piecewise constant.

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
        n_causes = self._n_causes(b, hidden, g_cpu, device)
        h = _root_causes(b, n, hidden, n_causes, g_dev, device)
        layers, ties, edges = [h], [], []
        for layer in range(n_layers):
            out, parents = tree_layer(h, hidden, n_trees, cfg.depth, g_dev,
                                      n_inputs=n_causes if layer == 0 else None, return_parents=True)
            edges.append(parents)
            ties.append(_tie_share(out))
            out = standardize(out) + sigma * torch.randn(b, n, hidden, generator=g_dev, device=device)
            h = standardize(out)
            layers.append(h)
        return _finish(layers, ties, edges)


def _pool_adjacency(blocks: list[torch.Tensor]) -> torch.Tensor:
    """``[b, pool, pool]`` parent->child mask of the node pool (the causes, then layers 1..L,
    ``hidden`` nodes each) from the ``[b, hidden, hidden]`` parent->child masks of the L layers."""
    b, hid, _ = blocks[0].shape
    n_l = len(blocks) + 1
    adj = torch.zeros(b, n_l * hid, n_l * hid, dtype=torch.bool, device=blocks[0].device)
    for layer, block in enumerate(blocks):
        adj[:, layer * hid : (layer + 1) * hid, (layer + 1) * hid : (layer + 2) * hid] = block
    return adj


def _finish(layers: list[torch.Tensor], ties: list[torch.Tensor], edges: list[torch.Tensor]):
    """Pool = causes + layers 1..L. Causes are never the target (tie share set to 1)."""
    ties = [torch.ones_like(ties[0]), *ties]
    return torch.cat(layers, dim=2), torch.cat(ties, dim=1), _pool_adjacency(edges)


def _edge_tie_share(h: torch.Tensor) -> torch.Tensor:
    """``[b, nodes]``: share of rows tied at a node's minimum or maximum, whichever is larger.

    The activations only create ties at their extremes (ReLU/ReLU6/hardtanh clip, sign and the
    indicator take two or three values), so this is the node's largest tie group, in O(rows).
    """
    lo = (h <= h.amin(dim=1, keepdim=True) + 1e-6).float().mean(1)
    hi = (h >= h.amax(dim=1, keepdim=True) - 1e-6).float().mean(1)
    return torch.maximum(lo, hi)


def _tie_share(v: torch.Tensor, max_rows: int = 256) -> torch.Tensor:
    """``[b, nodes]``: share of rows in the largest group of equal values of ``v [b, rows, nodes]``.

    Rows are i.i.d., so the share is estimated on the first ``max_rows`` rows (for speed).
    """
    v = v[:, :max_rows]
    b, n, m = v.shape
    s = torch.sort(v, dim=1).values
    new = s.diff(dim=1).abs() > 1e-6 * (1 + s[:, 1:].abs())
    gid = torch.cat([torch.zeros(b, 1, m, dtype=torch.long, device=v.device), new.long().cumsum(1)], 1)
    counts = torch.zeros(b, n, m, device=v.device).scatter_add_(1, gid, torch.ones_like(s))
    return counts.amax(dim=1) / n
