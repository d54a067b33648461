"""Teacher priors: the target is a random smooth function of observed, correlated features.

Three kinds, each batched over datasets (one batched op per call, no Python loop over datasets):

* ``linear``: ``t = x w``;
* ``mlp``: ``t = act(x W1 + b1) w2``, one hidden layer of ``hidden`` units, ``act`` tanh or ReLU
  per dataset;
* ``rff``: a draw of a Gaussian process with an RBF kernel through ``n_fourier`` random Fourier
  features, ``t = cos(x Omega / l + phi) w``, lengthscale ``l`` log-uniform per dataset and scaled
  by ``sqrt(n_features)`` (the TabFlex authors' GP component).

The features are correlated Gaussians ``x = z (I + c G / sqrt(f))``, standardised, and only the
dataset's own ``n_features`` columns feed the teacher (the padded ones are constant 0). The target
gets Gaussian noise of std ``noise_std`` relative to its standardised signal. The rest (classes by
quantiles of ``t``, balanced or imbalanced; categorical columns; missing cells; irrelevant columns;
context/query split with every class in the context) is the shared
:func:`~tabzoo_priors._assemble.assemble` step of the SCM priors, so the teachers have every
property of those episodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from tabzoo.errors import TabzooInputError

from tabzoo_priors._assemble import RawBatch, assemble, sample_shapes, standardize
from tabzoo_priors._random import check_range, generators, uniform_int
from tabzoo_priors.config import DatasetConfig
from tabzoo_priors.scm import EpisodePrior

__all__ = ["TeacherConfig", "TeacherPrior", "TEACHER_KINDS"]

TEACHER_KINDS = ("linear", "mlp", "rff")


@dataclass(frozen=True)
class TeacherConfig(DatasetConfig):
    """Options of :class:`TeacherPrior` (besides the shared :class:`DatasetConfig` ones).

    :param kind: ``"linear"``, ``"mlp"`` or ``"rff"``.
    :param hidden: MLP hidden units (uniform, one value per call).
    :param n_fourier: random Fourier features of the ``rff`` teacher.
    :param lengthscale: RBF lengthscale relative to ``sqrt(n_features)`` (log-uniform per dataset).
    :param feature_corr: strength ``c`` of the feature correlation (uniform per dataset).
    :param noise_std: target noise std relative to the standardised signal (log-uniform per dataset).
    """

    kind: str = "linear"
    hidden: tuple[int, int] = (4, 64)
    n_fourier: int = 128
    lengthscale: tuple[float, float] = (0.3, 3.0)
    feature_corr: tuple[float, float] = (0.0, 1.0)
    noise_std: tuple[float, float] = (1e-3, 0.5)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in TEACHER_KINDS:
            raise TabzooInputError(f"teacher kind={self.kind!r} is unknown; use one of {TEACHER_KINDS}.")
        check_range("hidden", self.hidden, 1)
        check_range("lengthscale", self.lengthscale, 1e-6)
        check_range("feature_corr", self.feature_corr, 0.0)
        check_range("noise_std", self.noise_std, 1e-8)
        if self.n_fourier < 1:
            raise TabzooInputError(f"n_fourier={self.n_fourier} must be >= 1.")


def _log_uniform(g: torch.Generator, n: int, rng: tuple[float, float], device: torch.device) -> torch.Tensor:
    lo, hi = math.log(rng[0]), math.log(rng[1])
    return torch.exp(lo + (hi - lo) * torch.rand(n, generator=g, device=device))


class TeacherPrior(EpisodePrior):
    """Episodes whose target is a random linear, MLP or GP (random Fourier feature) function.

    Example::

        prior = TeacherPrior(kind="rff", n_rows=(256, 512), n_features=(2, 30))
        batch = prior.sample(16, seed=0)   # EpisodeBatch, x [16, rows, <= 30]
    """

    config_class = TeacherConfig

    def sample_raw(
        self, batch_size: int, *, seed: int, device: str | torch.device = "cpu",
        n_rows: int | None = None,
    ) -> RawBatch:
        """``batch_size`` datasets as a :class:`RawBatch` (pure function of the arguments)."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise TabzooInputError(f"batch_size={batch_size!r} must be a positive int.")
        if n_rows is not None and n_rows < 4:
            raise TabzooInputError(f"n_rows={n_rows} must be >= 4 (context and query rows).")
        cfg = self.config
        device = torch.device(device)
        g_cpu, g_dev = generators(seed, device)
        shapes = sample_shapes(cfg, batch_size, g_cpu, n_rows=n_rows)
        b, n, f = batch_size, shapes.n_rows, shapes.max_features
        n_feat = shapes.n_features.to(device)
        live = (torch.arange(f, device=device).view(1, f) < n_feat.view(b, 1)).float()  # [b, f]
        # correlated Gaussian features; padded columns are exactly 0 (assemble drops them)
        c = cfg.feature_corr[0] + (cfg.feature_corr[1] - cfg.feature_corr[0]) * torch.rand(
            b, 1, 1, generator=g_dev, device=device)
        mix = torch.eye(f, device=device) + c * torch.randn(b, f, f, generator=g_dev, device=device) / math.sqrt(f)
        mix = mix * live.unsqueeze(2) * live.unsqueeze(1)
        x = standardize(torch.bmm(torch.randn(b, n, f, generator=g_dev, device=device) * live.unsqueeze(1), mix))
        x = x * live.unsqueeze(1)
        t = self._teacher(x, live, n_feat, g_cpu, g_dev)  # [b, n]
        sigma = _log_uniform(g_dev, b, cfg.noise_std, device).view(b, 1)
        t = standardize(t) + sigma * torch.randn(b, n, generator=g_dev, device=device)
        nodes = torch.cat([x, t.unsqueeze(2)], dim=2)  # pool: the features, then the target
        ties = torch.cat([torch.ones(b, f, device=device), torch.zeros(b, 1, device=device)], dim=1)
        adj = torch.zeros(b, f + 1, f + 1, dtype=torch.bool, device=device)
        adj[:, :f, f] = live.bool()  # every observed feature is a parent of the target
        return assemble(nodes, ties, adj, shapes, cfg, g_dev)

    def _teacher(self, x: torch.Tensor, live: torch.Tensor, n_feat: torch.Tensor, g_cpu: torch.Generator,
                 g: torch.Generator) -> torch.Tensor:
        """``t [b, n]`` from ``x [b, n, f]`` (padded columns are 0 and get weight 0)."""
        cfg = self.config
        b, _, f = x.shape
        dev = x.device
        scale = n_feat.float().clamp_min(1).sqrt().view(b, 1, 1)
        if cfg.kind == "linear":
            w = torch.randn(b, f, 1, generator=g, device=dev) * live.unsqueeze(2)
            return torch.bmm(x, w).squeeze(2)
        if cfg.kind == "mlp":
            h = uniform_int(g_cpu, *cfg.hidden)
            w1 = torch.randn(b, f, h, generator=g, device=dev) * live.unsqueeze(2) * (2.0 / scale)
            pre = torch.bmm(x, w1) + torch.randn(b, 1, h, generator=g, device=dev)
            relu = torch.rand(b, 1, 1, generator=g, device=dev) < 0.5
            act = torch.where(relu, torch.relu(pre), torch.tanh(pre))
            return torch.bmm(act, torch.randn(b, h, 1, generator=g, device=dev)).squeeze(2)
        m = cfg.n_fourier
        ell = _log_uniform(g, b, cfg.lengthscale, dev).view(b, 1, 1) * scale
        omega = torch.randn(b, f, m, generator=g, device=dev) * live.unsqueeze(2) / ell
        phase = torch.rand(b, 1, m, generator=g, device=dev) * (2 * math.pi)
        feats = torch.cos(torch.bmm(x, omega) + phase)
        return torch.bmm(feats, torch.randn(b, m, 1, generator=g, device=dev)).squeeze(2)
