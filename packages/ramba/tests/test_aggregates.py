"""The baselines' window aggregates: equal to a brute-force count, and causal (events available
at or after a query's time never change its features)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from tabzoo_ramba.aggregates import window_aggregates

WINDOWS = {"5": 5.0, "20": 20.0, "all": float("inf")}


@st.composite
def events_and_queries(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    n = draw(st.integers(0, 25))
    keys = np.array(draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n)), dtype=object)
    avail = np.array(draw(st.lists(st.integers(-30, 60), min_size=n, max_size=n)), dtype=np.int64)
    vals = np.array(draw(st.lists(st.one_of(st.floats(-5, 5), st.just(float("nan"))), min_size=n, max_size=n)))
    m = draw(st.integers(1, 6))
    qkeys = np.array(draw(st.lists(st.sampled_from(["a", "b", "d", None]), min_size=m, max_size=m)), dtype=object)
    qt = np.array(draw(st.lists(st.integers(-10, 70), min_size=m, max_size=m)), dtype=np.int64)
    return keys, avail, vals, qkeys, qt


def _feats(keys: np.ndarray, avail: np.ndarray, vals: np.ndarray, qkeys: np.ndarray, qt: np.ndarray) -> dict:
    return window_aggregates(keys, avail, {"y": vals}, qkeys, qt, WINDOWS)


@given(events_and_queries())
def test_matches_brute_force(case: tuple[np.ndarray, ...]) -> None:
    keys, avail, vals, qkeys, qt = case
    f = _feats(keys, avail, vals, qkeys, qt)
    for i, (k, t) in enumerate(zip(qkeys, qt, strict=True)):
        if k is None:
            assert np.isnan(f["y_n_all"][i])
            continue
        mine = [j for j in range(len(keys)) if keys[j] == k and np.isfinite(vals[j]) and avail[j] < t]
        for suffix, w in WINDOWS.items():
            inw = [j for j in mine if avail[j] >= t - w]
            assert f[f"y_n_{suffix}"][i] == len(inw)
            if inw:
                assert np.isclose(f[f"y_mean_{suffix}"][i], np.mean(vals[inw]))
            else:
                assert np.isnan(f[f"y_mean_{suffix}"][i])
        if mine:
            latest = max(avail[j] for j in mine)
            assert f["y_last"][i] in {vals[j] for j in mine if avail[j] == latest}
            assert np.isclose(f["y_age_h"][i], (t - latest) / 3600.0)
        else:
            assert np.isnan(f["y_last"][i]) and np.isnan(f["y_age_h"][i])


@given(events_and_queries(), st.integers(0, 2**31 - 1))
def test_events_at_or_after_the_query_time_change_nothing(case: tuple[np.ndarray, ...], seed: int) -> None:
    """Perturb the values and keys of every event available at or after the cutoff, and add new
    late events: the features of each query at that cutoff are unchanged."""
    keys, avail, vals, qkeys, qt = case
    rng = np.random.default_rng(seed)
    cutoff = int(qt[0])
    qt = np.full_like(qt, cutoff)
    base = _feats(keys, avail, vals, qkeys, qt)
    late = avail >= cutoff
    keys2, vals2, avail2 = keys.copy(), vals.copy(), avail.copy()
    vals2[late] = rng.normal(0, 100, late.sum())
    keys2[late] = rng.choice(np.array(["a", "b", "d"], dtype=object), late.sum())
    avail2[late] = cutoff + rng.integers(0, 50, late.sum())
    extra = 5
    keys2 = np.concatenate([keys2, rng.choice(np.array(["a", "b", "d"], dtype=object), extra)])
    vals2 = np.concatenate([vals2, rng.normal(0, 100, extra)])
    avail2 = np.concatenate([avail2, cutoff + rng.integers(0, 50, extra)])
    after = _feats(keys2, avail2, vals2, qkeys, qt)
    for name in base:
        np.testing.assert_array_equal(base[name], after[name], err_msg=name)


def test_an_earlier_event_does_change_the_features() -> None:
    """The positive control: the perturbation test would see a leak."""
    keys = np.array(["a", "a"], dtype=object)
    f0 = window_aggregates(keys, np.array([1, 9]), {"y": np.array([1.0, 3.0])}, keys[:1], np.array([10]), WINDOWS)
    f1 = window_aggregates(keys, np.array([1, 9]), {"y": np.array([1.0, 5.0])}, keys[:1], np.array([10]), WINDOWS)
    assert f0["y_mean_all"][0] == 2.0 and f1["y_mean_all"][0] == 3.0 and f1["y_last"][0] == 5.0
    f2 = window_aggregates(keys, np.array([1, 10]), {"y": np.array([1.0, 5.0])}, keys[:1], np.array([10]), WINDOWS)
    assert f2["y_n_all"][0] == 1 and f2["y_last"][0] == 1.0  # available AT the query time: not yet used
