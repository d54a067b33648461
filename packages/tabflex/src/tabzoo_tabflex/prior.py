"""``tabflex_mix``: the pretraining prior of the shipped checkpoint.

The TabFlex authors pretrained on a bag of MLP-SCM (about 96%) and Gaussian-process (about 4%)
datasets. On a 2-core CPU budget (a few hundred thousand episodes) the SCM mixture of
``tabzoo_priors`` alone was measured to be too weak a teacher: on its default episodes a random
forest is barely above the majority class (32.5% vs 30.9% accuracy with 2-10 classes), and a small
TabFlex trained on it for 1,000 steps matched the class-frequency baseline exactly. This prior
therefore mixes the ``mix`` prior of ``tabzoo_priors`` with *teacher* tasks whose labels are a clean
function of the features, which is what teaches in-context learning quickly:

* ``linear``: ``y = argmax_k (x W)_k``; ``x`` correlated Gaussian features;
* ``mlp``: ``y = argmax_k`` of a random one-hidden-layer tanh MLP of ``x``;
* ``rff``: ``y = argmax_k`` of a random-Fourier-feature function of ``x`` (a draw of a GP with an
  RBF kernel, the paper's GP component);

each with label noise (a share of labels resampled), irrelevant features and missing values.
Every batch comes from one component, chosen from the seed; output is deterministic for a seed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError

__all__ = ["TabFlexPrior", "TeacherPrior"]


def _log_uniform_int(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


class TeacherPrior:
    """Episodes labelled by a random teacher function (linear, MLP or random Fourier features).

    :param n_rows: rows per episode (one value per batch), log-uniform.
    :param n_features: features per episode, log-uniform.
    :param n_classes: classes per episode, uniform.
    :param context_fraction: share of rows that are context.
    :param label_noise: max share of labels replaced by a random class (uniform per episode).
    :param irrelevant_share: max share of features replaced by noise.
    :param missing_share: max share of cells set to NaN.
    :param kinds: teacher kinds to draw from.
    """

    kind = "episodes"

    def __init__(self, n_rows: tuple[int, int] = (128, 768), n_features: tuple[int, int] = (2, 64),
                 n_classes: tuple[int, int] = (2, 10), context_fraction: tuple[float, float] = (0.5, 0.8),
                 label_noise: float = 0.2, irrelevant_share: float = 0.3, missing_share: float = 0.05,
                 kinds: tuple[str, ...] = ("linear", "mlp", "rff")) -> None:
        if n_classes[0] < 2 or n_rows[0] < 4 * n_classes[1]:
            raise TabzooInputError(f"TeacherPrior needs n_classes >= 2 and n_rows[0] >= 4 * max classes; got "
                                   f"n_rows={n_rows}, n_classes={n_classes}.")
        self.n_rows, self.n_features, self.n_classes = tuple(n_rows), tuple(n_features), tuple(n_classes)
        self.context_fraction = tuple(context_fraction)
        self.label_noise, self.irrelevant_share, self.missing_share = label_noise, irrelevant_share, missing_share
        self.kinds = tuple(kinds)

    def _logits(self, x: torch.Tensor, k: int, kind: str, g: torch.Generator) -> torch.Tensor:
        f = x.shape[-1]
        if kind == "linear":
            return x @ torch.randn(f, k, generator=g)
        if kind == "mlp":
            h = int(torch.randint(8, 64, (1,), generator=g))
            w1 = torch.randn(f, h, generator=g) * (2.0 / math.sqrt(f))
            return torch.tanh(x @ w1 + torch.randn(h, generator=g)) @ torch.randn(h, k, generator=g)
        length = math.exp(float(torch.empty(1).uniform_(math.log(0.5), math.log(4.0), generator=g))) * math.sqrt(f)
        m = 128
        omega = torch.randn(f, m, generator=g) / length
        phase = torch.rand(m, generator=g) * 2 * math.pi
        return torch.cos(x @ omega + phase) @ torch.randn(m, k, generator=g)

    def sample(self, batch_size: int, *, seed: int, device: str | torch.device = "cpu") -> Any:
        """``batch_size`` episodes as a :class:`tabzoo.table.EpisodeBatch` (deterministic in ``seed``)."""
        from tabzoo.table import EpisodeBatch

        rng = np.random.default_rng(seed)
        g = torch.Generator().manual_seed(int(rng.integers(2**62)))
        n = _log_uniform_int(rng, *self.n_rows)
        n_ctx = int(round(n * rng.uniform(*self.context_fraction)))
        n_ctx = min(max(n_ctx, 2 * self.n_classes[1]), n - 1)
        feats = [_log_uniform_int(rng, *self.n_features) for _ in range(batch_size)]
        f_max = max(feats)
        x_all = torch.zeros(batch_size, n, f_max)
        y_all = torch.zeros(batch_size, n)
        n_classes = torch.zeros(batch_size, dtype=torch.long)
        for b, f in enumerate(feats):
            k = int(rng.integers(self.n_classes[0], self.n_classes[1] + 1))
            kind = self.kinds[int(rng.integers(len(self.kinds)))]
            z = torch.randn(n, f, generator=g)
            mix = torch.eye(f) + 0.5 * torch.randn(f, f, generator=g) / math.sqrt(f)
            x = z @ mix
            y = self._logits(x, k, kind, g).argmax(-1)
            noisy = torch.rand(n, generator=g) < rng.uniform(0, self.label_noise)
            y = torch.where(noisy, torch.randint(0, k, (n,), generator=g), y)
            # keep only classes seen in the context, relabelled 0..k'-1 in a random order
            present = torch.unique(y[:n_ctx])
            if present.numel() < 2:
                y = (x[:, 0] > x[:n_ctx, 0].median()).long()
                present = torch.unique(y[:n_ctx])
            code = torch.full((k,), -1, dtype=torch.long)
            code[present[torch.randperm(present.numel(), generator=g)]] = torch.arange(present.numel())
            y = code[y]
            keep = y >= 0
            y = torch.where(keep, y, torch.zeros_like(y))  # query rows of unseen classes -> masked below
            x = (x - x[:n_ctx].mean(0)) / x[:n_ctx].std(0).clamp_min(1e-6)
            irr = torch.rand(f, generator=g) < rng.uniform(0, self.irrelevant_share)
            x[:, irr] = torch.randn(n, int(irr.sum()), generator=g)
            miss = torch.rand(n, f, generator=g) < rng.uniform(0, self.missing_share)
            x = x.masked_fill(miss, float("nan"))
            x_all[b, :, :f] = x
            y_all[b] = y.float()
            n_classes[b] = present.numel()
            if not bool(keep.all()):  # an unseen class in the query: give it a seen label (rare)
                y_all[b, ~keep] = 0.0
        return EpisodeBatch(
            x=x_all.to(device), y=y_all.to(device), n_context=n_ctx,
            row_mask=torch.ones(batch_size, n, dtype=torch.bool, device=device),
            feature_mask=(torch.arange(f_max)[None, :] < torch.tensor(feats)[:, None]).to(device),
            n_classes=n_classes.to(device), task="classification",
        )


class TabFlexPrior:
    """``tabzoo_priors``' ``mix`` (SCM + tree SCM) with share ``1 - teacher_share`` of the batches,
    :class:`TeacherPrior` with the rest.

    :param teacher_share: probability that a batch comes from the teacher prior.
    :param config: options shared by both (``n_rows``, ``n_features``, ``n_classes``).
    """

    kind = "episodes"

    def __init__(self, teacher_share: float = 0.5, **config: Any) -> None:
        from tabzoo.plugins import get_prior  # tabzoo_priors registers "mix"

        if not 0.0 <= teacher_share <= 1.0:
            raise TabzooInputError(f"teacher_share must lie in [0, 1], got {teacher_share}.")
        self.teacher_share = float(teacher_share)
        shared = {k: config[k] for k in ("n_rows", "n_features", "n_classes") if k in config}
        self.scm = get_prior("mix", **config)
        self.teacher = TeacherPrior(**{k: tuple(v) for k, v in shared.items()})

    def sample(self, batch_size: int, *, seed: int, device: str | torch.device = "cpu") -> Any:
        """One batch, from the teacher prior or the SCM mixture (chosen by ``seed``)."""
        u = np.random.default_rng([int(seed) & 0xFFFFFFFF, 7]).uniform()
        src = self.teacher if u < self.teacher_share else self.scm
        return src.sample(batch_size, seed=seed, device=device)
