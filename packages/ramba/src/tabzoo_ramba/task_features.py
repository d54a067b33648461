"""Feature tables for the baselines of :mod:`tabzoo_ramba.tasks`, as a user would build them.

* :func:`flat_features`: the seed row alone, flattened: its own columns and those of its
  foreign-key parents (one join each), datetimes as calendar parts (year, day of year, day of
  week, hour), categories as a stable hash code; never a label or hidden outcome column of the entity
  table, never a parent later than the seed.
* :func:`relational_features`: the flattened row plus hand-made aggregates over the seed's
  relatives (counts, means, last values over time windows), each from
  :func:`~tabzoo_ramba.aggregates.window_aggregates`, so only events known strictly before the
  seed time enter; label and outcome columns of earlier rows count only once available
  (``t + task.horizon_of(column)``).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError
from tabzoo.table import ColumnType

from tabzoo_ramba.aggregates import window_aggregates
from tabzoo_ramba.data import Seed, to_seconds

__all__ = ["flat_features", "relational_features"]

_H, _D = 3600.0, 86400.0
_INF = float("inf")


def _calendar(prefix: str, t: np.ndarray) -> dict[str, np.ndarray]:
    days = t // 86400
    return {f"{prefix}year": (t.astype("datetime64[s]").astype("datetime64[Y]").astype(np.int64) + 1970).astype(float),
            f"{prefix}doy": (days - t.astype("datetime64[s]").astype("datetime64[Y]").astype("datetime64[D]")
                             .astype(np.int64)).astype(float),
            f"{prefix}dow": ((days + 3) % 7).astype(float), f"{prefix}hour": ((t % 86400) / 3600.0).astype(float)}


def _columns(db: Any, table: str, rows: np.ndarray, skip: set[str], prefix: str) -> dict[str, np.ndarray]:
    """Feature columns of ``table`` at ``rows`` (-1 = no row: NaN); keys, ``skip`` and the time
    column (the seed time's calendar parts stand for it) left out."""
    t = db.table(table)
    keys = {db.primary_key(table), db.time_columns.get(table)} | {fk.column for fk in db.parents(table)}
    ok = rows >= 0
    r = np.where(ok, rows, 0)
    out: dict[str, np.ndarray] = {}
    for c in t.names:
        if c in keys or c in skip:
            continue
        ctype = t.column_type(c)
        miss = t.missing[r, t.names.index(c)] | ~ok
        if ctype is ColumnType.DATETIME:
            for k, v in _calendar(f"{prefix}{c}_", to_seconds(t.column(c)[r])).items():
                out[k] = np.where(miss, np.nan, v)
        elif ctype in (ColumnType.CATEGORICAL, ColumnType.TEXT):
            vals = np.asarray(t.column(c), dtype=object)[r]  # a stable hash code: no vocabulary of later rows
            out[f"{prefix}{c}"] = np.where(miss, np.nan, [float(zlib.crc32(str(v).encode())) for v in vals])
        else:
            out[f"{prefix}{c}"] = np.where(miss, np.nan, np.asarray(t.column(c), dtype=np.float64)[r])
    return out


def _seed_rows(db: Any, seeds: list[Seed]) -> tuple[str, np.ndarray, np.ndarray]:
    from tabzoo_ramba.sampling import graph_index

    if not seeds:
        raise TabzooInputError("no seeds: pass a non-empty list of (table, primary key, timestamp)")
    times = np.array([s[2] for s in seeds]).astype("datetime64[s]")
    if np.isnat(times).any():
        bad = seeds[int(np.flatnonzero(np.isnat(times))[0])]
        raise TabzooInputError(f"seed {bad!r} has no timestamp (NaT); give the time the features are computed at")
    idx = graph_index(db)
    table = seeds[0][0]
    return table, np.array([idx.row(table, k) for _, k, _ in seeds]), to_seconds(times)


def flat_features(db: Any, task: Any, seeds: list[Seed]) -> dict[str, np.ndarray]:
    """``{name: [n_seeds] float64}`` of the flattened seed rows (see the module doc)."""
    from tabzoo_ramba.sampling import graph_index

    idx = graph_index(db)
    table, rows, t = _seed_rows(db, seeds)
    out = _calendar("t_", t)
    out.update(_columns(db, table, rows, set(task.label_columns), ""))
    for j, fk in enumerate(idx.fks):
        if fk.table != table:
            continue
        prow = idx.parent_rows[j][rows]
        pt = idx.times[fk.ref_table]
        if pt is not None:  # a timed parent later than the seed is not there yet
            prow = np.where((prow >= 0) & (pt[np.maximum(prow, 0)] <= t), prow, -1)
        out.update(_columns(db, fk.ref_table, prow, set(), f"{fk.column}.{fk.ref_table}."))
    return out


def _events(db: Any, table: str) -> Any:
    return db.table(table).to_pandas()


def _nyc_flight_aggregates(db: Any, task: Any, seeds: list[Seed]) -> dict[str, np.ndarray]:
    fl = _events(db, "flights")
    ts = to_seconds(fl["sched_dep"].to_numpy())
    _, rows, t = _seed_rows(db, seeds)
    route = (fl["origin"].astype(str) + "-" + fl["dest"].astype(str)).to_numpy(dtype=object)
    keys = {"plane": fl["tailnum"].to_numpy(dtype=object), "route": route,
            "origin": fl["origin"].to_numpy(dtype=object), "carrier": fl["carrier"].to_numpy(dtype=object),
            "dest": fl["dest"].to_numpy(dtype=object)}
    windows = {"plane": {"6h": 6 * _H, "24h": _D, "all": _INF}, "route": {"3h": 3 * _H, "24h": _D, "7d": 7 * _D},
               "origin": {"1h": _H, "3h": 3 * _H, "24h": _D}, "carrier": {"3h": 3 * _H, "24h": _D, "7d": 7 * _D},
               "dest": {"3h": 3 * _H, "24h": _D}}
    out: dict[str, np.ndarray] = {}
    for g, k in keys.items():
        q = k[rows]
        out.update(window_aggregates(k, ts, {"scheduled": np.ones(len(fl))}, q, t,
                                     {"1h": _H, "3h": 3 * _H, "24h": _D}, prefix=f"{g}.", last=g == "plane"))
        for col in ("dep_delayed", "dep_delay", "arr_delay"):
            if g not in ("plane", "route", "origin") and col != "dep_delayed":
                continue
            avail = ts + int(task.horizon_of(col))
            out.update(window_aggregates(k, avail, {col: fl[col].astype(float).to_numpy()}, q, t, windows[g],
                                         prefix=f"{g}.", last=g == "plane"))
    we = _events(db, "weather")
    wt = to_seconds(we["time_hour"].to_numpy())
    vals = {c: we[c].astype(float).to_numpy() for c in ("precip", "visib", "wind_speed", "temp", "humid")}
    out.update(window_aggregates(we["origin"].to_numpy(dtype=object), wt, vals,
                                 fl["origin"].to_numpy(dtype=object)[rows], t, {"3h": 3 * _H, "6h": 6 * _H},
                                 prefix="origin_weather.", last=False))
    return out


def _plane_week_aggregates(db: Any, task: Any, seeds: list[Seed]) -> dict[str, np.ndarray]:
    fl = _events(db, "flights")
    ts = to_seconds(fl["sched_dep"].to_numpy())
    _, rows, t = _seed_rows(db, seeds)
    pw = _events(db, "plane_weeks")
    q = pw["tailnum"].to_numpy(dtype=object)[rows]
    departed = fl["dep_delay"].notna().to_numpy().astype(float)
    k = fl["tailnum"].to_numpy(dtype=object)
    out = window_aggregates(k, ts + int(_D), {"departed": departed, "distance": fl["distance"].astype(float).to_numpy(),
                                              "dep_delay": fl["dep_delay"].astype(float).to_numpy()},
                            q, t, {"7d": 7 * _D, "28d": 28 * _D, "all": _INF}, prefix="plane.")
    out.update(window_aggregates(k, ts, {"scheduled": np.ones(len(fl))}, q, t, {"7d": 7 * _D, "28d": 28 * _D},
                                 prefix="plane.", last=False))
    pt = to_seconds(pw["week_start"].to_numpy()) + int(task.horizon_s)
    out.update(window_aggregates(pw["tailnum"].to_numpy(dtype=object), pt,
                                 {"n_flights_next_4w": pw["n_flights_next_4w"].astype(float).to_numpy()},
                                 q, t, {"all": _INF}, prefix="plane_weeks."))
    return out


def _lahman_aggregates(db: Any, task: Any, seeds: list[Seed]) -> dict[str, np.ndarray]:
    bat = _events(db, "batting")
    teams = _events(db, "teams").set_index("team_season_id")
    _, rows, t = _seed_rows(db, seeds)
    q = _events(db, "player_seasons")["playerID"].to_numpy(dtype=object)[rows]
    bt = to_seconds(bat["season_end"].to_numpy())
    frac = np.full(int(teams.index.max()) + 2, np.nan)
    frac[teams.index.to_numpy(dtype=np.int64)] = (teams["W"] / (teams["W"] + teams["L"])).to_numpy(dtype=float)
    win = frac[bat["team_season_id"].fillna(-1).to_numpy(dtype=np.int64)]  # -1: no team, the NaN at the end
    vals = {c: bat[c].astype(float).to_numpy() for c in ("G", "AB", "H", "HR", "RBI", "SB", "BB", "SO")}
    vals["team_win_frac"] = win
    return window_aggregates(bat["playerID"].to_numpy(dtype=object), bt, vals, q, t,  # seasons end before the seed
                             {"1y": 366 * _D, "3y": 3 * 366 * _D, "all": _INF}, prefix="batting.")


_AGGREGATES = {"flights": _nyc_flight_aggregates, "plane_weeks": _plane_week_aggregates,
               "player_seasons": _lahman_aggregates}


def relational_features(db: Any, task: Any, seeds: list[Seed]) -> dict[str, np.ndarray]:
    """The flattened row plus the task's hand-made causal aggregates (see the module doc)."""
    out = flat_features(db, task, seeds)
    agg = _AGGREGATES[task.entity_table](db, task, seeds)
    out.update({k: v for k, v in agg.items() if "scheduled_mean" not in k and "scheduled_last" not in k})  # all 1
    return out
