"""Meta-tests of the searching time causality (issue 23, item 6): each broken relational model is
caught by time_causality, the correct one passes, and the perturbations reach every column type,
the times after the cutoff, ties and the horizon's edge."""

from __future__ import annotations

import numpy as np
import pytest
from kit_models.broken_causality import BROKEN_CAUSALITY, DAY, causal_case
from tabzoo.testing import capabilities as cap
from tabzoo.testing import run_check
from tabzoo.testing.checks.causality import perturb_after, with_boundary_rows
from tabzoo.testing.checks.relational import toy_database


@pytest.mark.parametrize(("what", "make"), BROKEN_CAUSALITY, ids=[w for w, _ in BROKEN_CAUSALITY])
def test_causality_gallery_model_is_caught(what: str, make: object) -> None:
    result = run_check(make(), cap.TIME_CAUSALITY, max_examples=3)  # type: ignore[operator]
    assert result.status == "failed", f"time_causality did not catch '{what}': {result}"


def test_database_size_search_shrinks_to_the_smallest_failing_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 item 2 for the relational protocol: the large phase grows the database (the largest
    scale first) and shrinks a failure to the smallest failing scale (25 users at scale 5)."""
    from kit_models.broken_causality import FutureAbove20Users
    from tabzoo.testing.checks.sizes import PROFILE_ENV, bounds

    result = run_check(causal_case("future_above_20_users", FutureAbove20Users), cap.TIME_CAUSALITY, max_examples=2)
    assert result.status == "failed" and "large phase" in result.message, result
    assert result.reproducer["sizes"] == {"db_scale": 5}, result.reproducer
    monkeypatch.setenv(PROFILE_ENV, "thorough")
    assert bounds(causal_case())["db_scale"] == (1, 171)  # 24 x 171 = 4,104 events


def test_batch_snapshot_is_named() -> None:
    result = run_check(causal_case("snap", "kit_models.broken_causality:SnapshotAtLatestSeed"), cap.TIME_CAUSALITY,
                       max_examples=2)
    assert "single calls" in result.message


@pytest.mark.parametrize("check", [cap.TIME_CAUSALITY, cap.INPUT_ORDER_INVARIANCE, cap.FINITE_OUTPUTS])
def test_correct_relational_model_passes(check: str) -> None:
    assert run_check(causal_case(), check, max_examples=3).status == "passed"


def test_every_column_after_the_cutoff_changes_and_nothing_before_it() -> None:
    db, seeds = toy_database(3)
    t = np.datetime64(seeds[0][2], "s")
    base, fixed = with_boundary_rows(db, t, DAY, ("events", "label"), 1)
    moved = perturb_after(base, t, DAY, ("events", "label"), seeds[0][1], 2, fixed)
    a, b = base.table("events").to_dict(), moved.table("events").to_dict()
    times = a["time"].astype("datetime64[s]")
    later, ties = times > t, times == t
    assert later.sum() >= 1 and ties.sum() >= 2  # boundary rows: ties and one second after
    assert (times == t + np.timedelta64(1, "s")).any() and (times == t - np.timedelta64(DAY - 1, "s")).any()
    for col in ("amount", "delayed", "channel", "note"):
        diff = np.asarray(a[col]).astype(str) != np.asarray(b[col]).astype(str)
        assert diff[later].all() and not diff[~later].any(), col
    hidden = times + np.timedelta64(DAY, "s") > t
    label_diff = a["label"] != b["label"]
    assert label_diff[hidden].all() and not label_diff[~hidden].any()
    new_times = b["time"].astype("datetime64[s]")
    assert (new_times[later] > t).all() and (new_times[~later] == times[~later]).all()
    assert (new_times[later & ~fixed["events"]] != times[later & ~fixed["events"]]).any()
    spread = np.subtract(*np.quantile(a["amount"], [0.95, 0.05]))
    moved_by = np.abs(b["amount"][later] - a["amount"][later])
    assert (moved_by >= 0.5 * spread - 1e-9).all() and (moved_by <= 1.5 * spread + 1e-9).all()  # scale-aware


def test_a_derived_column_with_its_own_horizon_passes_when_read_after_it() -> None:
    from kit_models.broken_causality import FlagAfterTwoDays

    case = causal_case("flag_two_days", FlagAfterTwoDays, column_horizons={"delayed": float(2 * DAY)})
    result = run_check(case, cap.TIME_CAUSALITY, max_examples=3)
    assert result.status == "passed", result


def test_declared_column_horizons_hide_their_column_and_place_boundary_rows() -> None:
    db, seeds = toy_database(5)
    t = np.datetime64(seeds[1][2], "s")
    horizons = {"delayed": float(2 * DAY), "amount": 0.0}
    base, fixed = with_boundary_rows(db, t, DAY, ("events", "label"), 1, horizons)
    times = base.table("events").column("time").astype("datetime64[s]")
    assert (times == t - np.timedelta64(2 * DAY - 1, "s")).any() and (times == t - np.timedelta64(DAY - 1, "s")).any()
    moved = perturb_after(base, t, DAY, ("events", "label"), seeds[1][1], 2, fixed, horizons)
    a, b = base.table("events").to_dict(), moved.table("events").to_dict()
    later = times > t
    flag_hidden = (times + np.timedelta64(2 * DAY, "s") > t) & ~later
    diff = np.asarray(a["delayed"]).astype(str) != np.asarray(b["delayed"]).astype(str)
    assert flag_hidden.sum() > 1 and diff[flag_hidden].all() and not diff[~flag_hidden & ~later].any()
    assert (a["amount"][~later] == b["amount"][~later]).all()  # horizon 0: known at its row's time


@pytest.mark.parametrize("bad", [{"label": 5.0}, {"delayed": -1.0}, {"delayed": float("inf")}, {"delayed": True}])
def test_column_horizons_are_validated(bad: dict[str, float]) -> None:
    from tabzoo.errors import TabzooInputError

    with pytest.raises(TabzooInputError, match="column_horizons"):
        causal_case("bad_horizons", column_horizons=bad)


def test_column_horizons_need_the_relational_protocol() -> None:
    from kit_models.broken import icl_case
    from tabzoo.errors import TabzooInputError

    with pytest.raises(TabzooInputError, match="relational protocol"):
        icl_case("icl_horizons", column_horizons={"x": 1.0})
