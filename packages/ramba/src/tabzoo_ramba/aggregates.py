"""Causal time-window aggregates, the hand-made relational features of the baselines.

An *event* is ``(key, available_at, value)``: e.g. a flight of plane ``N123`` whose
``dep_delayed`` becomes known 15 minutes after its scheduled departure. A *query* is
``(key, t)``: a prediction about key ``N123`` made at time ``t``. Every feature of a query is
computed from the events of its key with ``available_at < t`` **strictly**, so nothing known at
or after the prediction time can enter (``tests/test_aggregates.py`` perturbs and adds later
events and checks that no feature moves).

Per value column and window ``w`` (seconds, ``inf`` = all history): the number of events with a
finite value in ``[t - w, t)`` and their mean (NaN when none); over all history: the last value
and its age ``t - available_at`` in hours. Vectorised: events are sorted once by ``(key,
available_at)`` and every query is a pair of binary searches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["window_aggregates"]


def _codes(event_keys: Any, query_keys: Any) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the keys (``-1`` for a missing key), shared by events and queries."""
    import pandas as pd

    ev = pd.Series(np.asarray(event_keys, dtype=object))
    qu = pd.Series(np.asarray(query_keys, dtype=object))
    codes, _ = pd.factorize(pd.concat([ev, qu], ignore_index=True), use_na_sentinel=True)
    return codes[: len(ev)].astype(np.int64), codes[len(ev):].astype(np.int64)


def window_aggregates(event_keys: Any, available_at: np.ndarray, values: Mapping[str, np.ndarray],
                      query_keys: Any, query_times: np.ndarray, windows: Mapping[str, float],
                      prefix: str = "", last: bool = True) -> dict[str, np.ndarray]:
    """Features ``{name: [n_queries] float64}`` (see the module doc).

    :param event_keys: ``[n_events]`` group key of each event (None / NaN = no group, dropped).
    :param available_at: ``[n_events]`` int64 seconds at which each event's values are known.
    :param values: ``{column: [n_events] float}``; NaN values are not counted.
    :param query_keys: ``[n_queries]`` group key of each query.
    :param query_times: ``[n_queries]`` int64 seconds, the prediction times.
    :param windows: ``{suffix: seconds}``, e.g. ``{"24h": 86400.0, "all": inf}``.
    :returns: ``{prefix}{column}_n_{suffix}``, ``{prefix}{column}_mean_{suffix}`` and, with
        ``last``, ``{prefix}{column}_last`` and ``{prefix}{column}_age_h``.
    """
    import pandas as pd

    ecode, qcode = _codes(event_keys, query_keys)
    avail = np.asarray(available_at, dtype=np.int64)
    qt = np.asarray(query_times, dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    finite_w = [w for w in windows.values() if np.isfinite(w)]
    tmin = int(min(avail.min(initial=0), qt.min(initial=0) - int(max(finite_w, default=0)))) - 1
    tmax = int(max(avail.max(initial=0), qt.max(initial=0))) + 1
    span = tmax - tmin + 2

    def composite(code: np.ndarray, t: np.ndarray) -> np.ndarray:
        return code * span + np.clip(t - tmin, 0, span - 1)

    qok = qcode >= 0
    for col, v in values.items():
        v = np.asarray(v, dtype=np.float64)
        keep = (ecode >= 0) & np.isfinite(v)
        order = np.flatnonzero(keep)
        order = order[np.lexsort((avail[order], ecode[order]))]
        comp = composite(ecode[order], avail[order])
        vs = v[order]
        # running sums restart at each key, so a sum never touches another key's (later) events
        # and is bit-for-bit the same whatever happens after t
        csum = np.concatenate([[0.0], pd.Series(vs).groupby(ecode[order]).cumsum().to_numpy()])
        start = np.searchsorted(comp, composite(qcode, np.full_like(qt, tmin)), "left")
        hi = np.searchsorted(comp, composite(qcode, qt), "left")  # events strictly before t

        def before(i: np.ndarray, start: np.ndarray = start, csum: np.ndarray = csum) -> np.ndarray:
            return np.where(i > start, csum[i], 0.0)  # sum of the key's events before sorted position i

        for suffix, w in windows.items():
            lo_t = np.full_like(qt, tmin) if not np.isfinite(w) else qt - int(w)
            lo = np.searchsorted(comp, composite(qcode, lo_t), "left")
            n = np.where(qok, hi - lo, 0).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(n > 0, (before(hi) - before(lo)) / np.maximum(n, 1), np.nan)
            out[f"{prefix}{col}_n_{suffix}"] = np.where(qok, n, np.nan)
            out[f"{prefix}{col}_mean_{suffix}"] = mean
        if last:
            j = hi - 1
            has = qok & (j >= 0) & (j < len(comp))
            has &= np.where(has, (comp[np.clip(j, 0, None)] // span) == qcode, False) if len(comp) else False
            jj = np.clip(j, 0, max(len(vs) - 1, 0))
            out[f"{prefix}{col}_last"] = np.where(has, vs[jj] if len(vs) else np.nan, np.nan)
            age = (qt - (avail[order][jj] if len(vs) else 0)) / 3600.0
            out[f"{prefix}{col}_age_h"] = np.where(has, age, np.nan)
    return out
