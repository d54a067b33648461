"""``icl``: the shared in-context pretraining prior of every in-context plugin.

A documented mixture of five components; each batch comes from one of them, chosen from the seed:

============  ======  ===================================================================
component     weight  what decides the target
============  ======  ===================================================================
``scm``       0.30    MLP-style SCM, 19 activations (ORION-MSP B.1.1)
``tree_scm``  0.30    tree SCM, random trees of depth 1-4 (ORION-MSP B.1.2)
``linear``    0.10    a linear function of correlated features
``mlp``       0.15    a random one-hidden-layer MLP (tanh or ReLU)
``rff``       0.15    a GP draw with an RBF kernel (random Fourier features; TabFlex's GP part)
============  ======  ===================================================================

Every component has the same dataset knobs (:class:`~tabzoo_priors.config.DatasetConfig`):
categorical columns (share uniform in ``categorical_share``), missing cells, balanced or
imbalanced classes (``imbalanced_prob``), irrelevant columns, and, added here, duplicated
columns (exact copies, or ``a * x + c`` of a numeric column: a unit change). Feature counts span
the model's whole input: per dataset log-uniform in ``[min_features, max_features]`` (50%),
uniform there (35%) or exactly ``max_features`` (15%), so every input slot is trained. Classes
are ``2..max_classes``.

Rows: a fixed range ``n_rows``, or a row ``curriculum`` over optimiser steps. The trainer
(:func:`tabzoo.train.pretrain`) passes ``step=`` to priors whose ``step_aware`` is True, and the
rows of a batch are drawn from the curriculum stage of that step (steps past the last stage stay
in it). The default curriculum (:data:`DEFAULT_CURRICULUM`) grows rows up to 4,096 in the spirit
of ORION-MSP appendix B.2 (fixed short datasets first, then log-uniform to long ones).

Everything is batched torch, deterministic in ``(config, batch_size, seed, step)``.

Example::

    prior = ICLPrior(max_features=100, max_classes=10, curriculum="default")
    batch = prior.sample(16, seed=0, step=12_000)   # EpisodeBatch, rows from stage 3
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tabzoo.errors import TabzooInputError

from tabzoo_priors._assemble import RawBatch
from tabzoo_priors._random import check_range, derive_seed
from tabzoo_priors.sampler import Curriculum
from tabzoo_priors.scm import SCMPrior, TreeSCMPrior
from tabzoo_priors.teachers import TeacherPrior

__all__ = ["ICLPrior", "DEFAULT_WEIGHTS", "DEFAULT_CURRICULUM", "duplicate_features"]

DEFAULT_WEIGHTS: dict[str, float] = {"scm": 0.30, "tree_scm": 0.30, "linear": 0.10, "mlp": 0.15, "rff": 0.15}

#: rows per dataset by optimiser step: 2,000 steps of 256-1,024 rows, 2,000 of 512-2,048, then
#: 1,024-4,096 (log-uniform) for the rest of the run
DEFAULT_CURRICULUM: list[dict[str, Any]] = [
    {"name": "short", "steps": 2000, "rows": [256, 1024], "rows_distribution": "log_uniform"},
    {"name": "medium", "steps": 2000, "rows": [512, 2048], "rows_distribution": "log_uniform"},
    {"name": "long", "steps": 1_000_000, "rows": [1024, 4096], "rows_distribution": "log_uniform"},
]

_COMPONENTS = ("scm", "tree_scm", "linear", "mlp", "rff")


def duplicate_features(raw: RawBatch, share: torch.Tensor, g: torch.Generator) -> RawBatch:
    """Turn a share of each dataset's columns into copies of other columns.

    A copy of a numeric column is ``a * x + c`` (``a`` log-uniform in [0.5, 2] with a random sign
    half of the time, ``c`` standard normal: a change of unit) or exact; a copy of a categorical
    column is exact. Missing cells and the categorical/irrelevant flags are copied too.

    :param raw: a batch, ``x [b, rows, f]``.
    :param share: ``[b]`` probability that a real column becomes a copy.
    :param g: generator on ``raw.x.device``.
    """
    x = raw.x
    b, n, f = x.shape
    dev = x.device
    cols = torch.arange(f, device=dev).view(1, f)
    dup = (torch.rand(b, f, generator=g, device=dev) < share.to(dev).view(b, 1)) & raw.feature_mask
    source_ok = raw.feature_mask & ~dup  # copies are made of original columns only
    dup &= source_ok.any(1, keepdim=True)
    keys = torch.rand(b, f, f, generator=g, device=dev).masked_fill(~source_ok.unsqueeze(1), -1.0)
    src = keys.argmax(-1)  # [b, f]: a random original column
    idx = torch.where(dup, src, cols.expand(b, f))
    xs = x.gather(2, idx.unsqueeze(1).expand(b, n, f))
    categorical = raw.categorical.gather(1, idx)
    a = torch.exp((torch.rand(b, f, generator=g, device=dev) * 2 - 1) * 0.6931)
    a = torch.where(torch.rand(b, f, generator=g, device=dev) < 0.25, -a, a)
    c = torch.randn(b, f, generator=g, device=dev)
    exact = torch.rand(b, f, generator=g, device=dev) < 0.5
    affine = dup & ~categorical & ~exact
    xs = torch.where(affine.unsqueeze(1), xs * a.unsqueeze(1) + c.unsqueeze(1), xs)
    return RawBatch(
        x=xs.contiguous(), y=raw.y, n_context=raw.n_context, feature_mask=raw.feature_mask,
        n_classes=raw.n_classes, task=raw.task, categorical=categorical,
        irrelevant=raw.irrelevant.gather(1, idx),
        missing=raw.missing.gather(2, idx.unsqueeze(1).expand(b, n, f)),
        duplicate_of=torch.where(dup, src, torch.full_like(src, -1)),
    )


class ICLPrior:
    """The shared in-context prior (registered as ``icl``); see the module docstring.

    :param max_features: the model's input width; feature counts span ``[min_features, max_features]``.
    :param max_classes: classes per classification dataset are uniform in ``[2, max_classes]``.
    :param task: ``"classification"``, ``"regression"`` or ``"mixed"``.
    :param n_rows: ``(min, max)`` rows per dataset (log-uniform) when no curriculum applies.
    :param curriculum: ``None``, ``"default"`` (:data:`DEFAULT_CURRICULUM`), ``"orion_msp"`` or a
        list of stage dicts ``{"steps", "rows", "rows_distribution"}`` (see
        :meth:`tabzoo_priors.Curriculum.from_config`). Used when ``sample`` gets ``step``.
    :param weights: ``{component: weight}`` over ``scm, tree_scm, linear, mlp, rff`` (missing = 0).
    :param min_features: the smallest feature count.
    :param duplicate_share: ``(min, max)`` share of a dataset's columns that are copies of others.
    :param dataset: further :class:`~tabzoo_priors.config.DatasetConfig` options for every
        component (e.g. ``missing_share=(0, 0.2)``, ``categorical_share``, ``imbalanced_prob``,
        ``context_fraction``).
    """

    kind = "episodes"
    step_aware = True  # tabzoo.train.pretrain passes step=

    def __init__(
        self, max_features: int = 100, max_classes: int = 10, task: str = "classification",
        n_rows: tuple[int, int] = (256, 1024), curriculum: Any = None,
        weights: Mapping[str, float] | None = None, min_features: int = 1,
        duplicate_share: tuple[float, float] = (0.0, 0.2), **dataset: Any,
    ) -> None:
        if int(max_features) < 1 or int(min_features) < 1 or int(min_features) > int(max_features):
            raise TabzooInputError(
                f"need 1 <= min_features <= max_features, got {min_features} and {max_features}."
            )
        if int(max_classes) < 2:
            raise TabzooInputError(f"max_classes={max_classes} must be >= 2.")
        check_range("duplicate_share", tuple(duplicate_share), 0.0, 1.0)
        self.max_features, self.max_classes = int(max_features), int(max_classes)
        self.duplicate_share = (float(duplicate_share[0]), float(duplicate_share[1]))
        if curriculum == "default":
            curriculum = DEFAULT_CURRICULUM
        self.curriculum = Curriculum.from_config(curriculum) if curriculum is not None else None
        base: dict[str, Any] = {
            "n_rows": tuple(n_rows), "n_features": (int(min_features), self.max_features),
            "n_features_uniform_share": 0.35, "n_features_full_share": 0.15,
            "n_classes": (2, self.max_classes), "task": task, "imbalanced_prob": 0.5,
            "min_class_fraction": min(0.02, 0.5 / self.max_classes),
            "categorical_share": (0.0, 0.5), "missing_share": (0.0, 0.1), "irrelevant_share": (0.0, 0.3),
        }
        base.update({k: tuple(v) if isinstance(v, list) else v for k, v in dataset.items()})
        w = dict(DEFAULT_WEIGHTS if weights is None else weights)
        unknown = sorted(set(w) - set(_COMPONENTS))
        if unknown or any(float(v) < 0 for v in w.values()) or sum(float(v) for v in w.values()) <= 0:
            raise TabzooInputError(
                f"weights={weights!r}: give non-negative weights with a positive sum over {_COMPONENTS}"
                + (f" (unknown: {unknown})" if unknown else "") + "."
            )
        self.components: dict[str, Any] = {}
        for name in _COMPONENTS:
            if float(w.get(name, 0.0)) <= 0:
                continue
            if name == "scm":
                self.components[name] = SCMPrior(**base)
            elif name == "tree_scm":
                self.components[name] = TreeSCMPrior(**base)
            else:
                self.components[name] = TeacherPrior(kind=name, **base)
        total = sum(float(w.get(k, 0.0)) for k in self.components)
        self.weights = {k: float(w[k]) / total for k in self.components}

    def __repr__(self) -> str:
        return (f"ICLPrior(max_features={self.max_features}, max_classes={self.max_classes}, "
                f"weights={self.weights}, curriculum={self.curriculum is not None})")

    def choose(self, seed: int) -> str:
        """The component that serves ``seed``."""
        g = torch.Generator().manual_seed(derive_seed(int(seed), 2))
        i = int(torch.multinomial(torch.tensor(list(self.weights.values())), 1, generator=g).item())
        return list(self.weights)[i]

    def rows_at(self, step: int, seed: int) -> int:
        """Rows per dataset of the batch of ``(step, seed)`` under the curriculum."""
        if self.curriculum is None:
            raise TabzooInputError("this ICLPrior has no curriculum; pass curriculum='default' or stage dicts.")
        g = torch.Generator().manual_seed(derive_seed(int(seed), 4))
        return self.curriculum.stage_at_step(int(step)).sample_rows(g)

    def sample_raw(
        self, batch_size: int, *, seed: int, device: str | torch.device = "cpu",
        n_rows: int | None = None, step: int | None = None,
    ) -> RawBatch:
        """A :class:`RawBatch` from one component (``x [batch, rows, <= max_features]``).

        :param n_rows: force the rows per dataset (wins over the curriculum).
        :param step: optimiser step; with a curriculum it sets the rows.
        """
        if n_rows is None and step is not None and self.curriculum is not None:
            n_rows = self.rows_at(step, seed)
        raw = self.components[self.choose(seed)].sample_raw(batch_size, seed=seed, device=device, n_rows=n_rows)
        lo, hi = self.duplicate_share
        if hi <= 0:
            return raw
        g = torch.Generator(device=raw.x.device).manual_seed(derive_seed(int(seed), 5))
        share = lo + (hi - lo) * torch.rand(batch_size, generator=g, device=raw.x.device)
        return duplicate_features(raw, share, g)

    def sample(
        self, batch_size: int, *, seed: int, device: str | torch.device = "cpu",
        n_rows: int | None = None, step: int | None = None,
    ):  # -> tabzoo.table.EpisodeBatch
        """A padded :class:`tabzoo.table.EpisodeBatch` ``x [batch, rows, <= max_features]``;
        rows ``[0, n_context)`` are context rows; NaN marks a missing cell."""
        return self.sample_raw(batch_size, seed=seed, device=device, n_rows=n_rows, step=step).to_episode_batch()
