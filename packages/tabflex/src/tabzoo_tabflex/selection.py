"""Conditional model selection (TabFlex paper, Algorithm 1), extended by the class count.

Algorithm 1, for a dataset of ``n`` rows and ``d`` features:

1. ``n >= 3000`` and ``d <= 100`` -> **L100** (large, low-dimensional);
2. else ``d > 100`` or (``d / n >= 0.2`` and ``n >= 3000``) -> **H1K**, after a random projection
   to 1000 features when ``d > 1000``;
3. else -> **S100**.

(With ``d <= 100`` and ``n >= 3000`` step 1 already fires, so the ratio clause of step 2 never
decides; it is kept as written.) The authors' selection ignored the class count. Here, when the
chosen model's head has fewer logits than the task has classes, a model in the same regime whose
head is wide enough is preferred, and otherwise the task goes through the hierarchical class split
(:mod:`tabzoo.estimators.hierarchy`) - classes are never merged. When the chosen config has no
weights available (this package ships only the CPU-sized checkpoint), the nearest available one is
used and the features are projected to its width.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

from tabzoo.errors import TabzooInputError

from tabzoo_tabflex.config import CONFIGS, TabFlexConfig

__all__ = ["Selection", "ModelFallbackWarning", "algorithm1", "select_model", "LARGE_ROWS", "WIDE_FEATURES", "HIGH_DIM_FEATURES"]

LARGE_ROWS = 3000
WIDE_FEATURES = 100
HIGH_DIM_FEATURES = 1000


class ModelFallbackWarning(UserWarning):
    """The config model selection wanted has no weights; a nearest available one runs instead.

    Silence it with ``warnings.simplefilter("ignore", ModelFallbackWarning)``.
    """


@dataclass(frozen=True)
class Selection:
    """What to run.

    :param name: the chosen entry of ``available``.
    :param preferred: what Algorithm 1 alone would pick (``"S100"``, ``"L100"`` or ``"H1K"``).
    :param project_to: feature width to project to (``None`` = no projection).
    :param hierarchical: True when the classes exceed the head and go through the class tree.
    :param reason: one readable sentence.
    """

    name: str
    preferred: str
    project_to: int | None
    hierarchical: bool
    reason: str


def algorithm1(n_rows: int, n_features: int) -> str:
    """The paper's Algorithm 1 verbatim: ``"S100"``, ``"L100"`` or ``"H1K"``."""
    if n_rows < 1 or n_features < 1:
        raise TabzooInputError(f"model selection needs n_rows >= 1 and n_features >= 1, got {n_rows}, {n_features}.")
    if n_rows >= LARGE_ROWS and n_features <= WIDE_FEATURES:
        return "L100"
    if n_features > WIDE_FEATURES or (n_features / n_rows >= 0.2 and n_rows >= LARGE_ROWS):
        return "H1K"
    return "S100"


def select_model(n_rows: int, n_features: int, n_classes: int = 2,
                 available: Mapping[str, TabFlexConfig] | None = None, *, warn: bool = True) -> Selection:
    """Algorithm 1 plus the class count, over the configs that have weights.

    :param n_rows: context (training) rows.
    :param n_features: features after preprocessing.
    :param n_classes: classes of the task (regression: the number of occupied bins).
    :param available: name -> config of the models that can be run (default: the paper's three).
    :param warn: warn (:class:`ModelFallbackWarning`) when Algorithm 1's model is not available; the
        estimators pass False, since their fallback is the documented, measured default.
    """
    avail = dict(available) if available is not None else {k: CONFIGS[k] for k in ("S100", "L100", "H1K")}
    if not avail:
        raise TabzooInputError("model selection got no available TabFlex configs; pass at least one.")
    preferred = algorithm1(n_rows, n_features)
    reason = f"Algorithm 1 picks {preferred} for n={n_rows}, d={n_features}"
    if preferred in avail:
        name = preferred
    else:
        want = CONFIGS[preferred]
        # nearest available: enough features if possible, then closest training length
        name = min(avail, key=lambda k: (avail[k].max_features < min(n_features, want.max_features),
                                         abs(avail[k].train_rows - want.train_rows), avail[k].max_features))
        reason += f"; no weights for it, using {name!r}"
        if warn:
            warnings.warn(
                f"TabFlex: Algorithm 1 wants the {preferred} model for n={n_rows}, d={n_features}, but no weights "
                f"for it are available; falling back to {name!r} (trained on {avail[name].train_rows}-row prompts, "
                f"{avail[name].max_features} features). Pass checkpoint=<stem> of a {preferred} checkpoint to use one.",
                ModelFallbackWarning, stacklevel=3,
            )
    cfg = avail[name]
    if n_classes > cfg.max_classes:
        wider = [k for k, c in avail.items() if c.max_classes >= n_classes and c.max_features >= cfg.max_features
                 and c.train_rows >= cfg.train_rows]
        if wider:
            name = min(wider, key=lambda k: avail[k].max_classes)
            cfg = avail[name]
            reason += f"; {n_classes} classes exceed the head, switching to {name!r} ({cfg.max_classes} classes)"
    hierarchical = n_classes > cfg.max_classes
    if hierarchical:
        reason += f"; {n_classes} classes > {cfg.max_classes} logits: hierarchical class split"
    project_to = cfg.max_features if n_features > cfg.max_features else None
    if project_to is not None:
        reason += f"; random projection {n_features} -> {project_to} features"
    return Selection(name, preferred, project_to, hierarchical, reason + ".")
