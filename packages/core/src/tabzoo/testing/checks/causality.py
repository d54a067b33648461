"""The searching time-causality perturbations of relational databases (issue 23, item 6).

For a seed time ``t`` and a declared horizon ``h`` (a label of a row at time ``s`` is available
from ``s + h``), :func:`perturb_after` changes everything a causal model must not read:

* every non-key column of every timed table, in rows later than ``t``, with a magnitude taken
  from that column's own spread (numbers move by about their 5-95% quantile range, categories are
  swapped for another category of the column, booleans flipped, strings changed, other datetimes
  moved by their spread);
* the time of those rows, moved to other times after ``t`` (one second after it included);
* the target of rows whose label is not yet available (``s + h > t``) and of the seed row, and
  likewise every other outcome column of the target's table declared with its own horizon
  (``column_horizons``: a ``delayed`` flag derived from ``dep_delay`` hidden for two days);
* boundary rows (:func:`with_boundary_rows`): copies of existing rows placed exactly at ``t``
  (ties), one second after ``t``, and one second inside each horizon (``t - h + 1 s``), whose
  future content and unavailable labels are perturbed the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tabzoo.errors import TabzooInputError

SECOND = np.timedelta64(1, "s")


def key_columns(db: Any, table: str) -> set[str]:
    """Primary key, foreign keys and time column of ``table``."""
    keys = {fk.column for fk in db.parents(table)} | {db.time_columns.get(table), db.primary_keys.get(table)}
    return {k for k in keys if k is not None}


def rebuild(db: Any, tables: dict[str, Any]) -> Any:
    from tabzoo.table import RelationalDatabase

    return RelationalDatabase(tables, db.primary_keys, db.foreign_keys, db.time_columns)


def changed(values: np.ndarray, ctype: str, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``values`` with ``rows`` (bool) changed by a scale-aware amount for column type ``ctype``."""
    out = values.copy()
    n = int(rows.sum())
    if not n:
        return out
    if ctype == "numeric":
        v = values.astype(np.float64)
        finite = v[np.isfinite(v)]
        spread = float(np.subtract(*np.quantile(finite, [0.95, 0.05]))) if finite.size else 1.0
        spread = spread if spread > 0 else max(1.0, float(np.abs(finite).max()) if finite.size else 1.0)
        out = v.copy()
        out[rows] = v[rows] + spread * rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.5, n)
        return out
    if ctype == "boolean":
        out = values.astype(object)
        out[rows] = [None if x is None else not bool(x) for x in values[rows]]
        return out
    if ctype == "datetime":
        v = values.astype("datetime64[s]")
        ok = v[~np.isnat(v)]
        span = (ok.max() - ok.min()) if ok.size > 1 else np.timedelta64(86400, "s")
        out = v.copy()
        out[rows] = v[rows] + max(span, SECOND)
        return out
    out = values.astype(object)
    if ctype == "categorical":
        cats = sorted({str(x) for x in values if x is not None})
        swap = {c: cats[(i + 1) % len(cats)] if len(cats) > 1 else c + "_changed" for i, c in enumerate(cats)}
        out[rows] = [None if x is None else swap[str(x)] for x in values[rows]]
        return out
    out[rows] = [None if x is None else (str(x)[::-1] + " changed") for x in values[rows]]  # text
    return out


def outcome_horizons(horizon_s: float, target: tuple[str, str],
                     column_horizons: Mapping[str, float] | None = None) -> dict[str, float]:
    """``{outcome column of the target's table: seconds until it is available}``: the target at
    ``horizon_s`` and each declared column at its own horizon."""
    return {**{c: float(h) for c, h in (column_horizons or {}).items()}, target[1]: float(horizon_s)}


def perturb_after(db: Any, t_seed: Any, horizon_s: float, target: tuple[str, str], seed_key: Any,
                  seed: int, fixed_rows: dict[str, np.ndarray] | None = None,
                  column_horizons: Mapping[str, float] | None = None) -> Any:
    """``db`` with everything after ``t_seed`` and every unavailable label changed (module doc).

    ``fixed_rows``: ``{table: bool [n_rows]}`` rows whose time must stay (boundary rows placed on
    purpose); their content is still perturbed when they lie after ``t_seed``.
    ``column_horizons``: other outcome columns of the target's table and their own horizons
    (seconds); each is changed where it is not yet available, like the target."""
    from tabzoo.table import Table

    rng = np.random.default_rng(seed)
    t_seed = np.datetime64(t_seed, "s")
    outcomes = outcome_horizons(horizon_s, target, column_horizons)
    tables = {}
    for name, table in db.tables.items():
        tcol = db.time_columns.get(name)
        if tcol is None:
            tables[name] = table
            continue
        data, types = table.to_dict(), {k: v.value for k, v in table.types.items()}
        times = data[tcol].astype("datetime64[s]")
        later = times > t_seed
        keys = key_columns(db, name)
        for col in data:
            if col not in keys:
                data[col] = changed(data[col], types[col], later, rng)
        if name == target[0]:
            pk = db.primary_keys.get(name)
            seed_row = data[pk] == seed_key if pk is not None else np.zeros(len(times), bool)
            for col, h in outcomes.items():
                if col not in data:
                    raise TabzooInputError(f"column_horizons names {col!r}, which table {name!r} does not have "
                                   f"(its columns: {sorted(data)}); name outcome columns of the target's table only")
                hidden = (times + np.timedelta64(int(h), "s") > t_seed) & ~later
                if col == target[1]:  # the seed's own label is what is predicted
                    hidden |= seed_row
                data[col] = changed(data[col], types[col], hidden, rng)
        movable = later & ~(fixed_rows or {}).get(name, np.zeros(len(times), bool))
        if movable.any():  # rows after the cutoff move to other times after it (one second after included)
            span = max(int((times.max() - t_seed) / SECOND), 2)
            new = t_seed + rng.integers(1, span + 1, int(movable.sum())).astype("timedelta64[s]")
            new[0] = t_seed + SECOND
            times = times.copy()
            times[movable] = new
            data[tcol] = times.astype(data[tcol].dtype)
        tables[name] = Table.from_dict(data, types=types)
    return rebuild(db, tables)


def with_boundary_rows(db: Any, t_seed: Any, horizon_s: float, target: tuple[str, str],
                       seed: int, column_horizons: Mapping[str, float] | None = None) -> tuple[Any, dict[str, np.ndarray]]:
    """``db`` plus, in every timed table, copies of existing rows (new primary keys) at ``t_seed``
    (ties), ``t_seed + 1 s`` and (target table) ``t_seed - h + 1 s`` for each distinct horizon
    ``h > 0`` (the target's and ``column_horizons``'); and the ``fixed_rows`` mask of the added
    rows for :func:`perturb_after`."""
    from tabzoo.table import Table

    rng = np.random.default_rng(seed)
    t_seed = np.datetime64(t_seed, "s")
    tables, fixed = dict(db.tables), {}
    for name, table in db.tables.items():
        tcol = db.time_columns.get(name)
        if tcol is None or table.n_rows == 0:
            continue
        at = [t_seed, t_seed, t_seed + SECOND]
        if name == target[0]:
            edges = sorted({int(h) for h in outcome_horizons(horizon_s, target, column_horizons).values() if h > 0})
            at.extend(t_seed - np.timedelta64(h, "s") + SECOND for h in edges)
        data, types = table.to_dict(), {k: v.value for k, v in table.types.items()}
        src = rng.integers(0, table.n_rows, len(at))
        pk = db.primary_keys.get(name)
        for col in data:
            extra = data[col][src]
            if col == tcol:
                extra = np.asarray(at, dtype="datetime64[s]").astype(data[col].dtype)
            elif col == pk:
                extra = np.max(data[col]) + np.arange(1, len(at) + 1)
            data[col] = np.concatenate([data[col], np.asarray(extra, dtype=data[col].dtype)])
        tables[name] = Table.from_dict(data, types=types)
        fixed[name] = np.arange(table.n_rows + len(at)) >= table.n_rows
    return rebuild(db, tables), fixed
