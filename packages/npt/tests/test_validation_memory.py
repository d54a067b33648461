"""Issue 25: the validation split of small tables, and the memory estimate's inputs and predict bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo_npt.memory import partition_rows, predict_bytes
from tabzoo_npt.train import (
    FULL_BATCH_ROWS,
    LARGE_TABLE_BATCH,
    MIN_VALIDATION_ROWS,
    auto_batch_rows,
    holdout_rows,
)

pytest.importorskip("sklearn", reason="the estimators need scikit-learn (tabzoo-npt[sklearn])")

from tabzoo_npt import NPTClassifier, NPTRegressor  # noqa: E402


@given(n=st.integers(0, 1200), frac=st.sampled_from([0.0, 0.05, 0.1, 0.3]), k=st.integers(0, 6),
       min_rows=st.integers(1, 80), seed=st.integers(0, 100))
def test_holdout_takes_enough_rows_or_none(n: int, frac: float, k: int, min_rows: int, seed: int) -> None:
    strata = None if k == 0 else np.random.default_rng(seed).integers(0, k, n)
    pick = holdout_rows(n, frac, strata, seed, min_rows)
    assert len(np.unique(pick)) == len(pick) and (pick < max(n, 1)).all()
    want = max(1, round(frac * n), min_rows)
    if frac == 0 or n < 20 or want > n // 4:
        assert len(pick) == 0  # too few rows: no split, the fixed step budget
    else:
        assert len(pick) == want <= n // 4
        if strata is not None:  # evenly spread over the class-sorted rows: every class of >= n / want rows is in
            counts = np.bincount(strata, minlength=k)
            for c in np.flatnonzero(counts >= -(-n // want)):
                assert (strata[pick] == c).any()

def test_holdout_keeps_the_old_split_with_min_rows_one() -> None:
    """min_rows=1 is the rule before issue 25's change (the saved reference outputs depend on it)."""
    rng = np.random.default_rng(3)
    order = rng.permutation(56)
    np.testing.assert_array_equal(holdout_rows(56, 0.1, None, 3, 1), order[:6])


def test_small_tables_train_the_fixed_budget_and_larger_ones_hold_out_fifty_rows() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((320, 3))
    y = (X[:, 0] > 0).astype(int)
    fast = {"preset": "tiny", "steps": 4, "eval_every": 2}
    small = NPTClassifier(**fast).fit(X[:150], y[:150])
    assert small.validation_rows_ == 0  # 150 < 4 * 50: no split of 15 rows any more
    assert small.history_.steps == 4 and not small.history_.evaluations  # no early stopping ran
    big = NPTClassifier(**fast).fit(X, y)
    assert big.validation_rows_ == MIN_VALIDATION_ROWS == 50 and big.history_.evaluations  # 10% would be 32
    assert NPTClassifier(**fast, min_validation_rows=1).fit(X[:150], y[:150]).validation_rows_ == 15


@pytest.mark.parametrize("cards", [Path("table.csv"), "0,0,2", (0, 2.5), (0, 2.0), (0, True), [], (0, None), 7])
def test_memory_estimate_refuses_what_is_not_integer_cardinalities(cards: object) -> None:
    with pytest.raises(TabzooInputError, match=r"memory_estimate: .*pass cardinalities as a sequence of integers"):
        NPTRegressor().memory_estimate(cards, 100)  # type: ignore[arg-type]


@pytest.mark.parametrize("rows", [0, -3, 2.5, "100", None, True])
def test_memory_estimate_refuses_a_bad_row_count(rows: object) -> None:
    with pytest.raises(TabzooInputError, match=r"n_rows=.*integer >= 1"):
        NPTRegressor().memory_estimate((0, 0, 3), rows)  # type: ignore[arg-type]


def test_memory_estimate_takes_numpy_integers() -> None:
    est = NPTRegressor().memory_estimate(np.array([0, 0, 3]), np.int64(500))  # type: ignore[arg-type]
    assert est["fit_bytes"] > 0 and est["predict_bytes"] > 0


def test_predict_estimate_counts_one_partition_and_stays_near_the_measured_peak() -> None:
    """Measured (benchmarks/npt_memory.py, peak RSS above the fitted model): 10,000 x 50 predict
    0.165 GiB, 3,000 x 20 0.083 GiB; the old formula said 4.73 and 1.98 GiB (every layer's maps
    of 4,352 rows). The estimate must stay above those peaks and within 3x of them."""
    reg = NPTRegressor()
    gib = 2.0**30
    for (rows, features), measured in {(10_000, 50): 0.165, (3_000, 20): 0.083}.items():
        est = reg.memory_estimate((0,) * (features + 1), rows)
        params = est["parameters"] * 4 / gib
        assert measured <= est["predict_bytes"] / gib - params < 3 * measured
        assert est["peak_bytes"] < 8 * gib  # the target: 10,000 x 50 fit and predict within 8 GB
    # beyond context_size the context is partitioned: the estimate follows one partition, not the table
    assert partition_rows(10_000, 4096) == 3334 and partition_rows(4096, 4096) == 4096
    cfg = reg._config((0,) * 11)
    assert predict_bytes(cfg, 0, 40_000, 4096, 256) < predict_bytes(cfg, 0, 4096, 4096, 256) * 1.01


def test_many_string_classes() -> None:
    """Deliver item 5: string labels and many classes (40 here; each a one-hot target width)."""
    rng = np.random.default_rng(0)
    y = np.array([f"class-{i:02d}" for i in np.arange(120) % 40], dtype=object)
    X = rng.standard_normal((120, 2)) + (np.arange(120) % 40)[:, None] / 10
    clf = NPTClassifier(preset="tiny", steps=3, validation_fraction=0.0).fit(X, y)
    proba = clf.predict_proba(X[:7])
    assert proba.shape == (7, 40) and np.allclose(proba.sum(axis=1), 1.0)
    assert clf.classes_.tolist() == sorted(set(y.tolist())) and set(clf.predict(X)) <= set(y.tolist())


def test_default_batch_is_the_whole_table_up_to_1024_rows_and_256_rows_above() -> None:
    assert auto_batch_rows(1) == auto_batch_rows(1024) == FULL_BATCH_ROWS == 1024  # one batch: the old default
    assert auto_batch_rows(1025) == auto_batch_rows(10_000) == LARGE_TABLE_BATCH == 256
    est = NPTRegressor()
    assert est.memory_estimate((0, 0, 0), 900)["batch_rows"] == 900
    assert est.memory_estimate((0, 0, 0), 10_000)["batch_rows"] == 256
    assert NPTRegressor(batch_size=2048).memory_estimate((0, 0, 0), 10_000)["batch_rows"] == 2048
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1100, 2))
    fast = {"preset": "tiny", "steps": 3, "validation_fraction": 0.0}
    assert NPTRegressor(**fast).fit(X, X[:, 0]).history_.epochs == 1  # 5 batches of ~220-256 rows per pass
    assert NPTRegressor(**fast).fit(X[:300], X[:300, 0]).history_.epochs == 3  # full batch: a step is an epoch
