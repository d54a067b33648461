"""One-hot expansion, class balance and local contexts (tabzoo.estimators.encoding / .local)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sklearn")

from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo.estimators import TabularPreprocessor  # noqa: E402
from tabzoo.estimators.encoding import OneHotExpander, check_encoding, class_balance, plan_onehot  # noqa: E402
from tabzoo.estimators.local import fit_local_contexts, kmeans  # noqa: E402
from tabzoo.estimators.members import category_tables  # noqa: E402


def test_plan_onehot_keeps_within_width_fewest_levels_first():
    levels = {0: 2, 1: 5, 2: 3, 3: 70, 4: 10}
    # width 10 -> col 2 (+2) = 12 -> col 1 (+4) = 16 -> col 4 (+9) = 25 > 20: stop
    assert plan_onehot(levels, 10, 20) == [1, 2]
    assert plan_onehot(levels, 10, None) == [1, 2, 4]  # 2 levels never, 70 > max_levels never
    assert plan_onehot(levels, 10, 10) == []
    assert plan_onehot(levels, 10, None, max_levels=4) == [2]


def test_check_encoding():
    assert check_encoding("onehot") == "onehot"
    with pytest.raises(TabzooInputError, match="ordinal"):
        check_encoding("target")


def _cat_table(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = np.empty((n, 3), dtype=object)
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = rng.choice(["a", "b", "c", "d"], size=n)
    X[:, 2] = rng.choice(["x", "y"], size=n)
    X[3, 1] = None
    return X


def test_onehot_expander_indicators_and_missing():
    X = _cat_table()
    pre = TabularPreprocessor().fit(X)
    xt = pre.transform(X)
    enc = OneHotExpander([1], category_tables(pre, [1]), 3)
    out = enc.transform(xt)
    assert out.shape == (40, 2 + 4) and enc.n_out == 6
    assert list(enc.source_) == [0, 1, 1, 1, 1, 2] and enc.indicator_.sum() == 4
    ind = out[:, 1:5]
    assert set(np.unique(ind)) <= {0.0, 1.0}
    known = np.array([v is not None for v in X[:, 1]])
    assert np.all(ind[known].sum(1) == 1) and np.all(ind[~known] == 0)
    cats = sorted({v for v in X[:, 1] if v is not None})
    for i in np.flatnonzero(known):  # the indicator of the row's own level is set
        assert ind[i, cats.index(X[i, 1])] == 1
    np.testing.assert_array_equal(out[:, 0], xt[:, 0])
    np.testing.assert_array_equal(out[:, 5], xt[:, 2])
    again = OneHotExpander.from_state_dict(enc.state_dict()).transform(xt)
    np.testing.assert_array_equal(again, out)
    with pytest.raises(TabzooInputError):
        enc.transform(xt[:, :2])
    with pytest.raises(TabzooInputError):
        OneHotExpander([5], {}, 3)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=60), st.floats(0.0, 2.0))
def test_class_balance_correction_restores_the_context_prior(labels, strength):
    y = np.asarray(labels)
    k = 5  # class 4 (and maybe others) absent
    w, corr = class_balance(y, k, strength)
    assert w.shape == y.shape and np.all(w >= 1.0)
    counts = np.bincount(y, minlength=k).astype(float)
    present = counts > 0
    mass = np.bincount(y, weights=w, minlength=k)
    if strength == 0:
        assert np.all(w == 1.0) and np.allclose(corr, 0.0)
    if strength == 1.0:
        assert np.allclose(mass[present], mass[present].max())  # balanced
    # the weighted prior, corrected, is the context's class frequencies again
    logp = np.log(mass[present] / mass[present].sum()) + corr[present]
    p = np.exp(logp) / np.exp(logp).sum()
    np.testing.assert_allclose(p, counts[present] / counts.sum(), rtol=1e-6)
    assert np.all(corr[~present] == 0)


def test_class_balance_bad_strength():
    with pytest.raises(TabzooInputError):
        class_balance(np.array([0, 1]), 2, -1.0)
    with pytest.raises(TabzooInputError):
        class_balance(np.array([0, 1]), 2, float("nan"))


def _blobs(n=300, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [6, 0], [0, 6], [6, 6]], dtype=float)
    lab = rng.integers(0, 4, size=n)
    return centres[lab] + rng.normal(size=(n, 2)) * 0.5, lab


def test_kmeans_finds_separated_blobs_and_ignores_row_order():
    x, _ = _blobs()
    c = kmeans(x, 4, seed=0)
    assert c.shape == (4, 2)
    found = sorted(map(tuple, np.round(c)))
    assert found == [(0.0, 0.0), (0.0, 6.0), (6.0, 0.0), (6.0, 6.0)]
    perm = np.random.default_rng(1).permutation(len(x))
    np.testing.assert_allclose(kmeans(x[perm], 4, seed=0), c)
    with pytest.raises(TabzooInputError):
        kmeans(x, 0, seed=0)
    with pytest.raises(TabzooInputError):
        kmeans(x[:3], 4, seed=0)


def test_local_contexts_cover_route_and_are_order_free():
    x, lab = _blobs(400)
    loc = fit_local_contexts(x, size=100, seed=3, overlap=1.5, labels=lab)
    assert loc.centres.shape == (4, 2) and len(loc.rows) == 4
    assert all(len(r) == 150 and np.all(np.diff(r) > 0) for r in loc.rows)
    route = loc.route(x)
    assert route.shape == (400,)
    # a row's own cluster context contains it (the 100-row clusters sit inside the 150 nearest)
    assert np.mean([i in set(loc.rows[c]) for i, c in enumerate(route)]) > 0.95
    perm = np.random.default_rng(2).permutation(len(x))
    loc2 = fit_local_contexts(x[perm], size=100, seed=3, overlap=1.5, labels=lab[perm])
    np.testing.assert_allclose(loc2.centres, loc.centres)
    for r1, r2 in zip(loc.rows, loc2.rows, strict=True):  # the same rows, under the permutation
        assert set(r1.tolist()) == set(perm[r2].tolist())
    with pytest.raises(TabzooInputError):
        fit_local_contexts(x, size=0, seed=0)
    with pytest.raises(TabzooInputError):
        fit_local_contexts(x, size=10, seed=0, overlap=0.5)
