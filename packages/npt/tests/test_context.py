"""Prediction reads the whole training table, encoded once; query rows never read one another."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("sklearn", reason="the estimators need scikit-learn (tabzoo-npt[sklearn])")

from tabzoo_npt import NPTRegressor  # noqa: E402
from tabzoo_npt.predict import context_partitions, predict_cells  # noqa: E402

FAST = {"preset": "tiny", "steps": 2, "validation_fraction": 0.0, "batch_size": 256}


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, X[:, 0] - 2 * X[:, 1] + 0.1 * rng.standard_normal(n)


@pytest.fixture(scope="module")
def large_context() -> tuple[NPTRegressor, np.ndarray]:
    """A regressor fitted on 1,300 rows (more than 1,024: every prediction attends over all of them)."""
    X, y = _data(1300 + 40)
    return NPTRegressor(**FAST, chunk_size=16).fit(X[:1300], y[:1300]), X[1300:]


def test_predictions_do_not_depend_on_the_query_batch_with_a_large_context(
        large_context: tuple[NPTRegressor, np.ndarray]) -> None:
    reg, Xq = large_context
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 1,300 rows attend densely: no partition, no warning
        full = reg.predict(Xq)
    p = np.random.default_rng(1).permutation(40)
    assert np.array_equal(reg.predict(Xq[p])[np.argsort(p)], full)  # bit for bit
    assert np.array_equal(np.array([reg.predict(Xq[i:i + 1])[0] for i in range(0, 40, 7)]), full[::7])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(1, 39), max_size=4, unique=True), seed=st.integers(0, 2**16))
def test_any_split_into_query_batches_gives_the_same_bits(
        large_context: tuple[NPTRegressor, np.ndarray], cuts: list[int], seed: int) -> None:
    """The 40 query rows, shuffled and cut into batches of any sizes (1 to 40 rows, one or several
    chunks of 16), are predicted bit-identically: each chunk runs at one padded shape and a row's
    own key is read in a fixed column, so neither its position nor its neighbours change a bit."""
    reg, Xq = large_context
    full = reg.predict(Xq)
    order = np.random.default_rng(seed).permutation(len(Xq))
    parts = np.split(order, sorted(cuts))
    got = np.empty_like(full)
    for part in parts:
        got[part] = reg.predict(Xq[part])
    assert np.array_equal(got, full)


def test_save_load_keeps_the_bits_with_a_large_context(large_context: tuple[NPTRegressor, np.ndarray],
                                                       tmp_path: Path) -> None:
    reg, Xq = large_context
    reg.save(tmp_path / "m")
    back = NPTRegressor.load(tmp_path / "m")
    assert np.array_equal(back.predict(Xq[:5]), reg.predict(Xq)[:5])


def test_every_context_row_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """No silent sample: a context of 1,100 rows (more than the old 1,024 sample) is encoded whole."""
    from tabzoo_npt.model import NPT

    X, y = _data(1110)
    reg = NPTRegressor(**FAST).fit(X[:1100], y[:1100])
    seen: list[int] = []
    real = NPT.encode_context

    def spy(self: NPT, values: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        seen.append(values.shape[1])
        return real(self, values, mask)

    monkeypatch.setattr(NPT, "encode_context", spy)
    reg.predict(X[1100:])
    assert seen == [1100]


def test_a_context_beyond_the_dense_limit_is_partitioned_with_a_warning() -> None:
    X, y = _data(130)
    reg = NPTRegressor(**FAST, context_size=50).fit(X[:120], y[:120])
    with pytest.warns(UserWarning, match="3 disjoint partitions of ~40 rows"):
        a = reg.predict(X[120:])
    with pytest.warns(UserWarning, match="partitions"):
        b = reg.predict(X[120:])
    assert np.array_equal(a, b)  # the partitions are seeded, not resampled per call


def test_partitions_cover_every_row_once() -> None:
    parts = context_partitions(1001, 250, seed=3)
    assert len(parts) == 5 and max(map(len, parts)) <= 250
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(1001))
    assert [p.tolist() for p in parts] == [p.tolist() for p in context_partitions(1001, 250, seed=3)]
    assert len(context_partitions(250, 250, seed=3)) == 1


def test_partitioned_logits_are_the_mean_over_partitions() -> None:
    from tabzoo_npt.model import build

    m = build({"preset": "tiny", "cardinalities": [0, 0, 0]}).eval()
    rng = np.random.default_rng(0)
    ctx, q = rng.standard_normal((30, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    hide = np.zeros(q.shape, bool)
    hide[:, 2] = True
    got = predict_cells(m, ctx, q, hide, context_size=10, seed=2)
    want = sum(predict_cells(m, ctx[p], q, hide, context_size=10) for p in context_partitions(30, 10, 2)) / 3
    assert torch.allclose(got, want, atol=1e-6)
