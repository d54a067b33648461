"""Small database slices that the kit's relational cases of this plugin run on.

Each builder maps a seed to ``(database, seeds)``: nycflights13 (about 400 flights of
2013-01-01..04), the Lahman seasons 2008-2012 and six planes' flights with the ``plane_weeks``
table. Shared by Ramba's own cases (:mod:`tabzoo_ramba.conformance`) and the baseline features'
cases (:mod:`tabzoo_ramba.aggregate_case`); it imports neither.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from tabzoo_ramba.data import Seed

__all__ = ["NYC_DAYS", "NYC_FLIGHTS", "database_for", "nycflights_database"]

NYC_DAYS, NYC_FLIGHTS = 4, 400


@functools.lru_cache(maxsize=1)
def _nyc_frames() -> Any:
    """Every ``k``-th flight of 2013-01-01..04 (about :data:`NYC_FLIGHTS`), so that seeds of the
    last days have earlier flights whose outcomes are available (two-day horizon) and others
    whose outcomes are not yet."""
    from tabzoo_ramba.nycflights import nycflights13_frames

    end = str(np.datetime64("2013-01-01") + np.timedelta64(NYC_DAYS, "D"))
    frames = nycflights13_frames(start="2013-01-01", end=end)
    flights = frames["flights"]
    step = max(1, len(flights) // NYC_FLIGHTS)
    return {**frames, "flights": flights.iloc[::step].reset_index(drop=True)}


def nycflights_database(seed: int) -> tuple[Any, list[tuple[str, Any, Any]]]:
    """About 400 flights of nycflights13 (2013-01-01..04) and three seed flights of its second half."""
    from tabzoo.table import RelationalDatabase

    from tabzoo_ramba.nycflights import TIME_COLUMNS, TYPES, _keys

    frames = _nyc_frames()
    pks, fks = _keys()
    db = RelationalDatabase.from_dataframes(frames, primary_keys=pks, foreign_keys=fks, time_columns=TIME_COLUMNS,
                                            types=TYPES)
    fl = frames["flights"]
    labelled = np.flatnonzero(fl["arr_delay"].notna().to_numpy())
    rng = np.random.default_rng(seed)
    picks = sorted(rng.choice(labelled[len(labelled) // 2:], 3, replace=False))
    return db, [("flights", int(fl["flight_id"].iloc[i]), np.datetime64(fl["sched_dep"].iloc[i], "s")) for i in picks]


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


def database_for(task_name: str) -> Callable[[int], tuple[Any, list[Seed]]]:
    """The ``make_database`` of a benchmark task's kit cases: seed -> (database slice, seeds)."""
    if task_name == "lahman-plays-next":
        return _lahman_database
    if task_name == "nyc-plane-flights-4w":
        return _plane_weeks_database
    return nycflights_database
