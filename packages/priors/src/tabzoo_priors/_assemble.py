"""Turn a pool of SCM node values into padded episodes (shared by the SCM and tree priors).

Steps, all batched over datasets: choose the target node and the feature nodes, replace some
features by independent noise (irrelevant features), make the target (balanced/imbalanced
classes or a standardised regression value), discretise categorical features, blank out missing
cells, and split rows into context and query so that every class appears in the context.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tabzoo_priors._random import log_uniform_int
from tabzoo_priors.config import DatasetConfig

__all__ = ["DatasetShapes", "RawBatch", "sample_shapes", "assemble", "standardize"]

#: rows used to estimate the category thresholds of categorical columns
_QUANTILE_ROWS = 256


def standardize(h: torch.Tensor, dim: int = 1, eps: float = 1e-6) -> torch.Tensor:
    """Zero-mean unit-std along ``dim`` (rows); constant columns become 0."""
    mu = h.mean(dim=dim, keepdim=True)
    sd = h.std(dim=dim, keepdim=True, unbiased=False)
    return (h - mu) / (sd + eps)


@dataclass(frozen=True)
class DatasetShapes:
    """Sizes and per-dataset knobs of one batch call, drawn on CPU (identical on every device)."""

    n_rows: int
    n_context: int
    task: str
    n_features: torch.Tensor  # [B] long
    n_classes: torch.Tensor  # [B] long (0 for regression)
    imbalanced: torch.Tensor  # [B] bool
    categorical_share: torch.Tensor  # [B]
    missing_share: torch.Tensor  # [B]
    irrelevant_share: torch.Tensor  # [B]

    @property
    def max_features(self) -> int:
        return int(self.n_features.max())


def _uniform(g: torch.Generator, n: int, rng: tuple[float, float]) -> torch.Tensor:
    return rng[0] + (rng[1] - rng[0]) * torch.rand(n, generator=g)


def sample_shapes(
    cfg: DatasetConfig, batch_size: int, g: torch.Generator, n_rows: int | None = None
) -> DatasetShapes:
    """Draw the sizes of one batch from ``cfg`` with the CPU generator ``g``.

    :param n_rows: force the number of rows (e.g. from a curriculum stage).
    """
    n = int(n_rows) if n_rows is not None else log_uniform_int(g, *cfg.n_rows)
    task = cfg.task
    if task == "mixed":
        task = "regression" if float(torch.rand((), generator=g)) < cfg.regression_prob else (
            "classification"
        )
    frac = float(_uniform(g, 1, cfg.context_fraction))
    n_context = min(n - 1, max(1, round(frac * n)))
    lo, hi = cfg.n_features
    logs = torch.log(torch.tensor([lo, hi + 1.0]))
    f = torch.exp(logs[0] + (logs[1] - logs[0]) * torch.rand(batch_size, generator=g))
    n_features = f.floor().long().clamp(lo, hi)
    if cfg.n_features_uniform_share > 0 or cfg.n_features_full_share > 0:  # (no extra draws otherwise)
        u = torch.rand(batch_size, generator=g)
        uni = torch.randint(lo, hi + 1, (batch_size,), generator=g)
        full_cut = 1.0 - cfg.n_features_full_share
        n_features = torch.where(u >= full_cut, torch.full_like(n_features, hi), n_features)
        n_features = torch.where((u >= full_cut - cfg.n_features_uniform_share) & (u < full_cut), uni, n_features)
    if task == "classification":
        k_hi = min(cfg.n_classes[1], n_context // 2)
        k_lo = min(cfg.n_classes[0], k_hi)
        n_classes = torch.randint(k_lo, k_hi + 1, (batch_size,), generator=g)
    else:
        n_classes = torch.zeros(batch_size, dtype=torch.long)
    imbalanced = torch.rand(batch_size, generator=g) < cfg.imbalanced_prob
    return DatasetShapes(
        n_rows=n,
        n_context=n_context,
        task=task,
        n_features=n_features,
        n_classes=n_classes,
        imbalanced=imbalanced,
        categorical_share=_uniform(g, batch_size, cfg.categorical_share),
        missing_share=_uniform(g, batch_size, cfg.missing_share),
        irrelevant_share=_uniform(g, batch_size, cfg.irrelevant_share),
    )


@dataclass(frozen=True)
class RawBatch:
    """A generated batch as plain tensors, with what is known about how it was made.

    :ivar x: ``[batch, rows, features]`` float32; NaN marks a missing cell; padding is 0.
    :ivar y: ``[batch, rows]`` float32 class index or regression value (context rows first).
    :ivar n_context: rows ``[0, n_context)`` are context rows in every dataset.
    :ivar feature_mask: ``[batch, features]`` bool, True for real features.
    :ivar n_classes: ``[batch]`` long, 0 for regression.
    :ivar task: ``"classification"`` or ``"regression"``.
    :ivar categorical: ``[batch, features]`` bool, True where a feature holds category codes.
    :ivar irrelevant: ``[batch, features]`` bool, True where a feature is noise independent of y.
    :ivar missing: ``[batch, rows, features]`` bool, True where a cell was blanked (x is NaN).
    :ivar duplicate_of: ``[batch, features]`` long, the index of the feature a column copies
        (exactly, or as ``a * x + c`` for numeric columns), -1 for original columns; ``None`` when
        the prior makes no duplicates.
    """

    x: torch.Tensor
    y: torch.Tensor
    n_context: int
    feature_mask: torch.Tensor
    n_classes: torch.Tensor
    task: str
    categorical: torch.Tensor
    irrelevant: torch.Tensor
    missing: torch.Tensor
    duplicate_of: torch.Tensor | None = None

    @property
    def batch_size(self) -> int:
        return int(self.x.shape[0])

    def to_episode_batch(self):  # -> tabzoo.table.EpisodeBatch
        """Wrap as the core's padded :class:`tabzoo.table.EpisodeBatch` (all rows are real)."""
        from tabzoo.table import EpisodeBatch

        b, n, _ = self.x.shape
        return EpisodeBatch(
            x=self.x,
            y=self.y,
            n_context=self.n_context,
            row_mask=torch.ones(b, n, dtype=torch.bool, device=self.x.device),
            feature_mask=self.feature_mask,
            n_classes=self.n_classes.to(self.x.device),
            task=self.task,
            categorical=tuple(self.categorical_indices(i) for i in range(b)),
        )

    def categorical_indices(self, i: int) -> tuple[int, ...]:
        """Indices of the categorical features of dataset ``i`` (for :class:`Episode`)."""
        return tuple(int(j) for j in torch.nonzero(self.categorical[i].cpu()).flatten().tolist())


def _rank01(v: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Rank of each value along dim 1 scaled to ``[0, 1)``; ties broken at random."""
    n = v.shape[1]
    jitter = torch.rand(v.shape, generator=g, device=v.device, dtype=v.dtype) * 1e-6
    order = torch.argsort(v + jitter * (v.abs() + 1), dim=1)
    ranks = torch.empty_like(order)
    ar = torch.arange(n, device=v.device).view(1, n, *([1] * (v.dim() - 2))).expand_as(order)
    ranks.scatter_(1, order, ar)
    return ranks.to(v.dtype) / n


def _random_code_perm(k: torch.Tensor, k_max: int, g: torch.Generator) -> torch.Tensor:
    """For each entry of ``k`` (any shape), a random permutation of ``0..k-1`` padded to k_max."""
    dev = k.device
    keys = torch.rand(*k.shape, k_max, generator=g, device=dev)
    pos = torch.arange(k_max, device=dev)
    keys = torch.where(pos < k.unsqueeze(-1), keys, 2.0 + pos.float())
    return torch.argsort(keys, dim=-1)


def _cut_points(
    k: torch.Tensor, k_max: int, imbalanced: torch.Tensor, min_frac: torch.Tensor,
    g: torch.Generator,
) -> torch.Tensor:
    """Class boundaries in rank space ``[..., k_max - 1]``; unused boundaries are 2 (never hit)."""
    dev = k.device
    pos = torch.arange(k_max, device=dev)
    valid = pos < k.unsqueeze(-1)
    spread = torch.where(imbalanced, 0.5 + torch.rand(k.shape, generator=g, device=dev), 0.0)
    logits = torch.randn(*k.shape, k_max, generator=g, device=dev) * spread.unsqueeze(-1)
    logits = logits.masked_fill(~valid, float("-inf"))
    p = torch.softmax(logits, dim=-1)
    kf = k.unsqueeze(-1).float()
    p = torch.where(valid, min_frac.unsqueeze(-1) + (1 - kf * min_frac.unsqueeze(-1)) * p, 0.0)
    cuts = torch.cumsum(p, dim=-1)[..., :-1]
    return torch.where(pos[:-1] < (k.unsqueeze(-1) - 1), cuts, 2.0)


def assemble(
    nodes: torch.Tensor, ties: torch.Tensor, adjacency: torch.Tensor, shapes: DatasetShapes, cfg: DatasetConfig,
    g: torch.Generator,
) -> RawBatch:
    """Build a :class:`RawBatch` from SCM node values.

    :param nodes: ``[batch, rows, pool]`` node values.
    :param ties: ``[batch, pool]`` share of rows in each node's largest group of equal (noise-free)
        values. The target of a k-class task is drawn uniformly among the nodes with
        ``ties <= 1/k + 0.05`` (of a regression task: among the non-constant nodes); if there are
        none, among the nodes with the fewest ties. A tie group wider than a class would be cut
        into classes by random tie-breaking, i.e. the labels would carry no signal.
    :param adjacency: ``[batch, pool, pool]`` bool parent->child edges. Feature nodes are drawn
        from the target's neighbourhood first: its parents and children (Markov-blanket-like,
        score +1), then nodes two edges away (co-parents, siblings, grandparents: +0.5), then
        the rest; within a group at random (score + U[0, 1)). Constant nodes (unused cause
        slots) are never features while others remain.
    """
    b, n, pool = nodes.shape
    dev, dt = nodes.device, nodes.dtype
    f_max = shapes.max_features
    n_feat = shapes.n_features.to(dev)
    # -- target and feature nodes --------------------------------------------------------
    k_t = shapes.n_classes.to(dev).view(b, 1)
    limit = torch.where(k_t > 0, 1.0 / k_t.clamp_min(1) + 0.05, 0.99)
    tv = ties.to(dev)
    eligible = (tv <= limit) | (tv <= tv.amin(dim=1, keepdim=True))
    t_scores = torch.rand(b, pool, generator=g, device=dev) + eligible.to(torch.float32)
    t_idx = t_scores.argmax(dim=1)  # uniform among the eligible nodes
    target = nodes.gather(2, t_idx.view(b, 1, 1).expand(b, n, 1)).squeeze(2)
    und = (adjacency | adjacency.transpose(1, 2)).to(nodes.dtype)
    onehot = torch.zeros(b, pool, 1, device=dev, dtype=nodes.dtype).scatter_(1, t_idx.view(b, 1, 1), 1.0)
    hop1 = torch.bmm(und, onehot)
    hop2 = torch.bmm(und, hop1)
    near = (hop1 > 0).to(nodes.dtype) + 0.5 * ((hop2 > 0) & (hop1 == 0)).to(nodes.dtype)
    live = (nodes.abs().amax(dim=1) > 0).to(nodes.dtype)  # constant nodes come last
    scores = torch.rand(b, pool, generator=g, device=dev, dtype=nodes.dtype) + near.squeeze(2)
    scores = scores + 3.0 * live
    scores.scatter_(1, t_idx.view(b, 1), -1.0)  # the target is never a feature
    f_idx = torch.argsort(scores, dim=1, descending=True)[:, :f_max]
    x = nodes.gather(2, f_idx.unsqueeze(1).expand(b, n, f_max))
    feature_mask = torch.arange(f_max, device=dev).unsqueeze(0) < n_feat.unsqueeze(1)
    # -- irrelevant features: fresh noise, independent of everything -----------------------
    irr_share = shapes.irrelevant_share.to(dev).unsqueeze(1)
    irrelevant = (torch.rand(b, f_max, generator=g, device=dev) < irr_share) & feature_mask
    noise = torch.randn(b, n, f_max, generator=g, device=dev, dtype=dt)
    x = torch.where(irrelevant.unsqueeze(1), noise, x)
    # -- target --------------------------------------------------------------------------
    if shapes.task == "classification":
        k = shapes.n_classes.to(dev)
        k_max = int(shapes.n_classes.max())
        min_frac = torch.full((b,), max(cfg.min_class_fraction, 1.5 / n), device=dev)
        cuts = _cut_points(k, k_max, shapes.imbalanced.to(dev), min_frac, g)  # [b, k_max-1]
        u = _rank01(target, g)
        cls = (u.unsqueeze(-1) >= cuts.unsqueeze(1)).sum(-1)  # [b, n]
        perm = _random_code_perm(k, k_max, g)
        y = perm.gather(1, cls).to(dt)
    else:
        k = torch.zeros(b, dtype=torch.long, device=dev)
        y = standardize(target, dim=1)
    # -- categorical features: quantile bins, shuffled codes ------------------------------
    cat_share = shapes.categorical_share.to(dev).unsqueeze(1)
    categorical = (torch.rand(b, f_max, generator=g, device=dev) < cat_share) & feature_mask
    if bool(categorical.any()):
        m = cfg.max_categories
        kc = torch.randint(2, m + 1, (b, f_max), generator=g, device=dev)
        imb = torch.rand(b, f_max, generator=g, device=dev) < 0.5
        cuts = _cut_points(kc, m, imb, torch.full((b, f_max), 0.5 / m, device=dev), g)  # [b, f, m-1]
        # quantile thresholds estimated on the first rows (rows are i.i.d. here), then binary search:
        # O(rows * log m) per column instead of a full sort and a [b, rows, f, m] comparison
        r = min(n, _QUANTILE_ROWS)
        # ties (ReLU zeros, tree leaves) are broken at random, as by rank, so no column collapses
        xj = x + torch.rand(x.shape, generator=g, device=dev, dtype=dt) * 1e-6 * (x.abs() + 1)
        srt = torch.sort(xj[:, :r], dim=1).values  # [b, r, f]
        pos = (cuts.clamp(0, 1) * r).long().clamp(0, r - 1).transpose(1, 2)  # [b, m-1, f]
        thr = srt.gather(1, pos).masked_fill(cuts.transpose(1, 2) >= 2.0, float("inf"))
        codes = torch.searchsorted(thr.permute(0, 2, 1).contiguous(), xj.permute(0, 2, 1).contiguous(), right=True)
        perm = _random_code_perm(kc, m, g)  # [b, f, m]
        codes = perm.gather(2, codes.clamp_max(m - 1)).permute(0, 2, 1)  # [b, n, f]
        x = torch.where(categorical.unsqueeze(1), codes.to(dt), x)
    # -- row order: context first, every class present in the context ---------------------
    keys = torch.rand(b, n, generator=g, device=dev)
    if shapes.task == "classification":
        yl = y.long()
        first = torch.full((b, int(k.max())), 2.0, device=dev)
        first = first.scatter_reduce(1, yl, keys, reduce="amin")
        keys = torch.where(keys == first.gather(1, yl), keys - 2.0, keys)
    order = torch.argsort(keys, dim=1)
    x = x.gather(1, order.unsqueeze(-1).expand(b, n, f_max))
    y = y.gather(1, order)
    # -- missing cells (MCAR) and padding ---------------------------------------------------
    miss_share = shapes.missing_share.to(dev).view(b, 1, 1)
    missing = (torch.rand(b, n, f_max, generator=g, device=dev) < miss_share) & feature_mask.unsqueeze(1)
    x = x.masked_fill(missing, float("nan"))
    x = x.masked_fill(~feature_mask.unsqueeze(1), 0.0)
    return RawBatch(
        x=x.float().contiguous(), y=y.float().contiguous(), n_context=shapes.n_context,
        feature_mask=feature_mask, n_classes=k.long(), task=shapes.task,
        categorical=categorical, irrelevant=irrelevant, missing=missing,
    )
