"""The baselines' hand-made relational features held to the conformance kit's relational protocol.

The "model" of these cases is a feature builder (:func:`tabzoo_ramba.task_features.relational_features`
by default: the flattened row plus the counts, means and last values over time windows): its
output for a seed is the seed's feature row. The kit's time-causality check then perturbs
everything the builder may not know at the seed time (every row later than the seed, its time
moved across the cutoff, every outcome column of the entity table not yet available within its
declared horizon, with boundary rows at the seed time and one second inside a horizon) and
requires an identical feature row; the input-order check shuffles the stored rows of every table.
So the features of every baseline task are checked by the same code as Ramba itself.

The output is ``asinh`` of each feature (float64; NaN as -100), so that the kit's tolerance,
relative to the largest output, is not widened by large raw values (hash codes of categories
are ~1e9) while a count that moves by one still moves its output by > 0.01.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ConformanceCase

from tabzoo_ramba.case_databases import database_for
from tabzoo_ramba.data import RelationalTask, Seed

__all__ = ["FeatureBuilder", "feature_forward", "make_aggregates_case", "AGGREGATE_TASKS"]

Features = Callable[[Any, RelationalTask, list[Seed]], dict[str, np.ndarray]]
AGGREGATE_TASKS = ("nyc-dep-delayed", "nyc-arr-delay", "nyc-plane-flights-4w", "lahman-plays-next")
"""The benchmark tasks whose baseline features have a kit case."""


class FeatureBuilder:
    """The case's "model": ``features(db, task, seeds)`` for a fixed task (no weights)."""

    def __init__(self, task: RelationalTask, features: Features) -> None:
        self.task, self.features = task, features

    def state_dict(self) -> dict[str, torch.Tensor]:
        """No weights: the features are a function of the database alone."""
        return {}

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> None:
        """Accepts only the empty state of :meth:`state_dict`."""
        if state:
            raise TabzooInputError(f"a feature builder has no weights; got a state with {sorted(state)[:5]}")


def feature_forward(model: FeatureBuilder, db: Any, seeds: list[Seed]) -> torch.Tensor:
    """The feature rows ``[n_seeds, n_features]`` (float64; ``asinh``, NaN as -100), columns by name."""
    feats = model.features(db, model.task, list(seeds))
    cols = [np.asarray(feats[k], dtype=np.float64) for k in sorted(feats)]
    out = np.arcsinh(np.stack(cols, 1)) if cols else np.zeros((len(seeds), 0))
    return torch.from_numpy(np.nan_to_num(out, nan=-100.0))


def make_aggregates_case(task_name: str = "nyc-dep-delayed", features: Features | None = None,
                         feature_task: RelationalTask | None = None) -> ConformanceCase:
    """The kit case of ``task_name``'s baseline features (see the module doc).

    :param features: the feature builder under test (default: the baselines'
        :func:`~tabzoo_ramba.task_features.relational_features`).
    :param feature_task: the task the builder is given (default: the benchmark task). The kit
        always checks against the benchmark task's declared target and horizons, so a builder
        given other horizons (e.g. 0: outcomes read as soon as their row exists) is caught.
    """
    from tabzoo_ramba.task_features import relational_features
    from tabzoo_ramba.tasks import get_task

    task = get_task(task_name).task
    builder_task, fn = feature_task or task, features or relational_features
    return ConformanceCase(
        name=f"aggregates-{task_name}", make_model=lambda seed: FeatureBuilder(builder_task, fn),
        capabilities=frozenset({cap.TIME_CAUSALITY, cap.INPUT_ORDER_INVARIANCE, cap.DETERMINISM, cap.BAD_INPUT}),
        config={"task": task_name}, protocol="relational", forward=feature_forward,
        make_database=database_for(task_name), target=(task.entity_table, task.target),
        horizon=float(task.horizon_s), column_horizons=dict(task.column_horizons), dtype="float64",
        factory=None if features or feature_task else "tabzoo_ramba.aggregate_case:make_aggregates_case",
        factory_args={"task_name": task_name},
        description=f"the baseline features (flattened row + causal window aggregates) of {task_name}")
