"""Configuration dataclasses of the episode priors.

All ranges are inclusive ``(min, max)`` pairs. Integer sizes are sampled log-uniformly,
shares and probabilities uniformly.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from tabzoo.errors import TabzooInputError

from tabzoo_priors._random import check_range

__all__ = ["DatasetConfig", "SCMConfig", "TreeSCMConfig", "build_config"]

_TASKS = ("classification", "regression", "mixed")


@dataclass(frozen=True)
class DatasetConfig:
    """What every generated dataset looks like (shared by the SCM and tree SCM priors).

    :param n_rows: rows per dataset (context + query), log-uniform; one value per batch call.
    :param n_features: features per dataset, log-uniform; one value per dataset.
    :param n_features_uniform_share: share of datasets whose feature count is instead uniform in
        ``n_features`` (log-uniform alone rarely reaches the top of the range).
    :param n_features_full_share: share of datasets with exactly ``n_features[1]`` features (the
        model's full input width, as after a random projection of a wide table), so that every
        input slot is trained.
    :param n_classes: classes per classification dataset, uniform; one value per dataset
        (capped at ``n_context // 2`` so every class can appear in the context).
    :param task: ``"classification"``, ``"regression"`` or ``"mixed"`` (one task per batch call,
        regression with probability ``regression_prob``).
    :param imbalanced_prob: probability that a classification dataset has imbalanced classes
        (log-normal class proportions); otherwise classes are balanced (equal-frequency bins).
    :param min_class_fraction: lower bound on any class's share of the rows.
    :param categorical_share: share of features that are discretised into categories.
    :param max_categories: categories per categorical feature are uniform in ``[2, max_categories]``.
    :param missing_share: share of feature cells set to NaN (missing completely at random).
    :param irrelevant_share: share of features replaced by noise independent of everything.
    :param context_fraction: fraction of rows that are context rows (rest are query rows).
    """

    n_rows: tuple[int, int] = (256, 1024)
    n_features: tuple[int, int] = (2, 20)
    n_features_uniform_share: float = 0.0
    n_features_full_share: float = 0.0
    n_classes: tuple[int, int] = (2, 10)
    task: str = "classification"
    regression_prob: float = 0.5
    imbalanced_prob: float = 0.5
    min_class_fraction: float = 0.02
    categorical_share: tuple[float, float] = (0.0, 0.3)
    max_categories: int = 10
    missing_share: tuple[float, float] = (0.0, 0.1)
    irrelevant_share: tuple[float, float] = (0.0, 0.2)
    context_fraction: tuple[float, float] = (0.5, 0.8)

    def __post_init__(self) -> None:
        check_range("n_rows", self.n_rows, 4)
        check_range("n_features", self.n_features, 1)
        check_range("n_classes", self.n_classes, 2)
        check_range("categorical_share", self.categorical_share, 0.0, 1.0)
        check_range("missing_share", self.missing_share, 0.0, 0.95)
        check_range("irrelevant_share", self.irrelevant_share, 0.0, 1.0)
        check_range("context_fraction", self.context_fraction, 0.05, 0.95)
        if self.task not in _TASKS:
            raise TabzooInputError(f"task={self.task!r} is unknown; use one of {_TASKS}.")
        for name in ("regression_prob", "imbalanced_prob", "n_features_uniform_share", "n_features_full_share"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise TabzooInputError(f"{name}={v} must lie in [0, 1].")
        if self.n_features_uniform_share + self.n_features_full_share > 1.0:
            raise TabzooInputError(
                "n_features_uniform_share + n_features_full_share must be <= 1, got "
                f"{self.n_features_uniform_share} + {self.n_features_full_share}."
            )
        if self.max_categories < 2:
            raise TabzooInputError(f"max_categories={self.max_categories} must be >= 2.")
        if self.task != "regression":
            if self.min_class_fraction * self.n_classes[1] >= 1.0 or self.min_class_fraction < 0:
                raise TabzooInputError(
                    f"min_class_fraction={self.min_class_fraction} is infeasible with up to "
                    f"{self.n_classes[1]} classes; use a value below 1/{self.n_classes[1]}."
                )
            min_context = int(self.n_rows[0] * self.context_fraction[0])
            if min_context < 2 * self.n_classes[0]:
                raise TabzooInputError(
                    f"n_rows={self.n_rows} with context_fraction={self.context_fraction} can give "
                    f"{min_context} context rows, too few for {self.n_classes[0]} classes; "
                    "raise n_rows[0] or lower n_classes[0]."
                )


@dataclass(frozen=True)
class SCMConfig(DatasetConfig):
    """MLP-style SCM prior: a layered random DAG, per-node activations, Gaussian noise.

    :param n_layers: layers of the DAG below the root causes (uniform, one value per batch call).
    :param hidden: nodes per layer (log-uniform, one value per batch call).
    :param edge_prob: per-dataset probability that a parent->child edge exists.
    :param n_causes: live root causes per dataset (log-uniform, at most ``hidden``); every other
        node is a function of these (plus noise), so the features are informative about each other
        and about the target.
    :param noise_std: per-dataset std of the Gaussian noise added to every node's standardised
        pre-activation (log-uniform), i.e. a noise-to-signal std ratio.
    """

    n_layers: tuple[int, int] = (1, 4)
    hidden: tuple[int, int] = (8, 32)
    n_causes: tuple[int, int] = (1, 8)
    edge_prob: tuple[float, float] = (0.2, 1.0)
    noise_std: tuple[float, float] = (1e-3, 0.3)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("n_layers", self.n_layers, 1)
        check_range("hidden", self.hidden, 1)
        check_range("n_causes", self.n_causes, 1)
        check_range("edge_prob", self.edge_prob, 0.0, 1.0)
        check_range("noise_std", self.noise_std, 1e-8)


@dataclass(frozen=True)
class TreeSCMConfig(DatasetConfig):
    """Tree SCM prior: every node is a random decision tree over the previous layer's nodes.

    :param n_layers: layers below the root causes.
    :param hidden: nodes per layer.
    :param depth: tree depth, uniform per node in this range (ORION-MSP: 1 to 4).
    :param n_trees: trees averaged per node (1 = a decision tree, more = a small random forest).
    :param n_causes: live root causes per dataset (log-uniform, at most ``hidden``).
    :param noise_std: std of Gaussian noise added to every node's standardised tree output
        (log-uniform per dataset), i.e. a noise-to-signal std ratio.
    """

    n_layers: tuple[int, int] = (1, 3)
    hidden: tuple[int, int] = (8, 32)
    n_causes: tuple[int, int] = (1, 8)
    depth: tuple[int, int] = (1, 4)
    n_trees: tuple[int, int] = (1, 2)
    noise_std: tuple[float, float] = (1e-3, 0.3)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("n_layers", self.n_layers, 1)
        check_range("hidden", self.hidden, 1)
        check_range("n_causes", self.n_causes, 1)
        check_range("depth", self.depth, 1, 8)
        check_range("n_trees", self.n_trees, 1)
        check_range("noise_std", self.noise_std, 1e-8)


def build_config(cls: type, config: Any = None, **overrides: Any) -> Any:
    """Build a config of type ``cls`` from an instance, a dict and/or keyword overrides.

    Lists are turned into tuples so that JSON/YAML configs work.
    """
    base: dict[str, Any] = {}
    if isinstance(config, cls):
        base = {f.name: getattr(config, f.name) for f in fields(cls)}
    elif isinstance(config, dict):
        base = dict(config)
    elif config is not None:
        raise TabzooInputError(f"config must be a {cls.__name__} or a dict, got {type(config)}.")
    base.update(overrides)
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(base) - known)
    if unknown:
        raise TabzooInputError(
            f"unknown {cls.__name__} option(s) {unknown}; valid options: {sorted(known)}."
        )
    base = {k: tuple(v) if isinstance(v, list) else v for k, v in base.items()}
    return cls(**base)
