"""Issue 10 item 5: transform members, wide-table subsets, fit_mode cache, categorical columns,
inference precision and bin-shift regression ensembles of the TabFlex estimators."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the estimators need scikit-learn (tabzoo-core[sklearn])")

import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo.estimators.options import PrecisionFallbackWarning  # noqa: E402
from tabzoo_tabflex.estimators import TabFlexClassifier, TabFlexRegressor  # noqa: E402
from tabzoo_tabflex.model import TabFlex  # noqa: E402

warnings.filterwarnings("ignore", message=".*Algorithm 1 wants.*")


def _data(n: int = 90, d: int = 4, k: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, 0] = np.exp(X[:, 0])  # skewed: the power transform has something to do
    y = (X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5).astype(int) if k == 3 else rng.integers(0, k, n)
    return X, y


def _clf(**kw) -> TabFlexClassifier:
    return TabFlexClassifier(device="cpu", chunk_size=32, **kw)


# -- a. transform members -------------------------------------------------------------------------
def test_members_alternate_transforms_fitted_on_context_only() -> None:
    X, y = _data()
    clf = _clf(n_estimators=4, feature_transforms=("none", "power")).fit(X[:60], y[:60])
    assert [m.transform for m in clf.members_] == ["none", "power", "none", "power"]
    view = clf.member_views_[1]
    lam = view.transformer_.lambdas_.copy()
    assert abs(lam[0]) < 1.0  # exp-skewed column: Yeo-Johnson pulls it towards log (lambda ~ 0)
    wild = X[60:] * 100
    clf.predict_proba(wild)
    np.testing.assert_array_equal(view.transformer_.lambdas_, lam)  # the query never refits the transform
    # and the power members change the prediction
    plain = _clf(n_estimators=4, feature_transforms=("none",)).fit(X[:60], y[:60])
    assert not np.allclose(plain.predict_proba(X[60:]), clf.predict_proba(X[60:]))
    quant = _clf(n_estimators=2, feature_transforms=("quantile",)).fit(X[:60], y[:60])
    assert np.isfinite(quant.predict_proba(wild)).all()


def test_bad_transform_name_says_the_fix() -> None:
    X, y = _data()
    with pytest.raises(TabzooInputError, match="feature_transforms"):
        _clf(feature_transforms=("log",)).fit(X, y)


def test_query_rows_are_independent_to_1e6() -> None:
    X, y = _data()
    clf = _clf(n_estimators=2).fit(X[:60], y[:60])
    full = clf.predict_proba(X[60:])
    rows = np.concatenate([clf.predict_proba(X[60 + i:61 + i]) for i in range(30)])
    np.testing.assert_allclose(full, rows, atol=1e-6)


# -- b. wide tables ---------------------------------------------------------------------------------
def test_wide_members_see_different_balanced_subsets() -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((70, 130))
    y = (X[:, 120] > 0).astype(int)  # the signal sits beyond the first 100 columns
    clf = _clf(n_estimators=3).fit(X[:50], y[:50])
    assert clf.projection_ is None
    sets = [set(m.features) for m in clf.members_]
    assert all(len(s) == 100 for s in sets) and len({frozenset(s) for s in sets}) == 3
    assert set().union(*sets) == set(range(130))  # every feature is seen by some member
    p = clf.predict_proba(X[50:])
    X2 = X.copy()
    X2[50:, 120] *= -1
    assert not np.allclose(clf.predict_proba(X2[50:]), p)  # a column past 100 reaches the output
    proj = _clf(n_estimators=3, wide_features="project").fit(X[:50], y[:50])
    assert proj.projection_ is not None and all(len(m.features) == 100 for m in proj.members_)
    with pytest.raises(TabzooInputError, match="wide_features"):
        _clf(wide_features="crop").fit(X, y)


# -- c. fit_mode ------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [3, 13])
def test_cached_predict_agrees_and_never_encodes_the_context(monkeypatch: pytest.MonkeyPatch, k: int) -> None:
    X, y = _data(n=130, k=k, seed=2)
    if k == 13:
        y = np.arange(130) % 13
    plain = _clf(n_estimators=2).fit(X[:100], y[:100])
    cached = _clf(n_estimators=2, fit_mode="fit_with_cache").fit(X[:100], y[:100])
    assert cached.context_cache_
    calls = {"n": 0}
    original = TabFlex.encode_context

    def counting(self, *a, **kw):
        calls["n"] += 1
        return original(self, *a, **kw)

    monkeypatch.setattr(TabFlex, "encode_context", counting)
    p_cached = cached.predict_proba(X[100:])
    assert calls["n"] == 0
    p_plain = plain.predict_proba(X[100:])
    assert calls["n"] >= 2  # the uncached estimator encodes every member's context per call
    np.testing.assert_allclose(p_cached, p_plain, atol=1e-5)
    with pytest.raises(TabzooInputError, match="fit_mode"):
        _clf(fit_mode="lazy").fit(X, y)


def test_cached_regressor_and_save_load(tmp_path) -> None:
    X, _ = _data(n=100)
    y = X[:, 1] * 3 + X[:, 2]
    a = TabFlexRegressor(device="cpu", n_estimators=2, fit_mode="fit_with_cache").fit(X[:70], y[:70])
    b = TabFlexRegressor(device="cpu", n_estimators=2).fit(X[:70], y[:70])
    np.testing.assert_allclose(a.predict(X[70:]), b.predict(X[70:]), atol=1e-4)
    again = TabFlexRegressor.load(a.save(tmp_path / "reg"))
    np.testing.assert_allclose(again.predict(X[70:]), a.predict(X[70:]), atol=1e-5)


# -- d. categorical columns ------------------------------------------------------------------------
def _cat_data(n: int = 80, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cat = rng.integers(0, 5, n).astype(float) * 10  # numbers that are really labels
    X = np.column_stack([rng.standard_normal(n), cat, rng.standard_normal(n)])
    y = (np.isin(cat, [10, 30]) ^ (X[:, 0] > 1)).astype(int)
    return X, y


def test_categorical_indices_mask_and_names_agree() -> None:
    pd = pytest.importorskip("pandas", reason="column names need pandas")
    X, y = _cat_data()
    by_idx = _clf(n_estimators=2, categorical_features=[1]).fit(X, y)
    by_mask = _clf(n_estimators=2, categorical_features=[False, True, False]).fit(X, y)
    df = pd.DataFrame(X, columns=["a", "c", "b"])
    by_name = _clf(n_estimators=2, categorical_features=["c"]).fit(df, y)
    assert by_idx.categorical_indices_ == by_mask.categorical_indices_ == by_name.categorical_indices_ == (1,)
    p = by_idx.predict_proba(X)
    np.testing.assert_allclose(by_mask.predict_proba(X), p)
    np.testing.assert_allclose(by_name.predict_proba(df), p)
    assert _clf(n_estimators=1).fit(X, y).categorical_indices_ == ()  # "auto" on floats: none
    # an unseen category is handled (it shares the code of a missing value)
    Xq = X[:5].copy()
    Xq[:, 1] = 777.0
    assert np.isfinite(by_idx.predict_proba(Xq)).all()


def test_members_shuffle_category_codes() -> None:
    X, y = _cat_data()
    clf = _clf(n_estimators=3, categorical_features=[1]).fit(X, y)
    views = clf.member_views_
    assert not views[0].perms_ and views[1].perms_ and views[2].perms_
    col0 = views[0]._view(clf.X_context_)[:, list(clf.members_[0].features).index(1)]
    col1 = views[1]._view(clf.X_context_)[:, list(clf.members_[1].features).index(1)]
    assert set(np.round(col0, 5)) == set(np.round(col1, 5))  # same code values, permuted
    assert not np.array_equal(col0, col1)
    codes = {v: set(col1[col0 == v]) for v in set(col0)}
    assert all(len(s) == 1 for s in codes.values())  # a bijection of codes, row by row


@settings(max_examples=12, deadline=None)
@given(bad=st.one_of(
    st.lists(st.integers(3, 50), min_size=1, max_size=3),
    st.lists(st.integers(-9, -1), min_size=1, max_size=2),
    st.lists(st.booleans(), min_size=1, max_size=6).filter(lambda m: len(m) != 3),
    st.just([0, 0]), st.just([0.5]), st.just("some"), st.just(["nope"]), st.just([1, "a"]),
))
def test_bad_categorical_features_raise_with_the_fix(bad) -> None:
    X, y = _cat_data(n=30)
    with pytest.raises(TabzooInputError, match="categorical_features|pass"):
        _clf(n_estimators=1, categorical_features=bad).fit(X, y)


def test_table_categoricals_are_auto() -> None:
    from tabzoo.table import Table

    X, y = _cat_data()
    t = Table.from_dict({"a": X[:, 0], "c": np.array([f"k{int(v)}" for v in X[:, 1]]), "b": X[:, 2]},
                        types={"c": "categorical"})
    clf = _clf(n_estimators=2).fit(t, y)
    assert clf.categorical_indices_ == (1,)
    assert clf.predict_proba(t).shape == (80, 2)


# -- e. precision -----------------------------------------------------------------------------------
def test_precision_auto_fp32_bf16() -> None:
    from tabzoo.train.loop import cpu_has_fast_bf16

    X, y = _data()
    ref = _clf(n_estimators=2, inference_precision="fp32").fit(X[:60], y[:60])
    assert ref.inference_dtype_ == torch.float32
    auto = _clf(n_estimators=2).fit(X[:60], y[:60])
    assert auto.inference_dtype_ == (torch.bfloat16 if cpu_has_fast_bf16() else torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionFallbackWarning)
        half = _clf(n_estimators=2, inference_precision="bf16").fit(X[:60], y[:60])
    assert half.inference_dtype_ == torch.bfloat16
    p, q = ref.predict_proba(X[60:]), half.predict_proba(X[60:])
    assert np.abs(p - q).max() < 0.08 and (p.argmax(1) == q.argmax(1)).mean() >= 0.9
    if not cpu_has_fast_bf16():
        with pytest.warns(PrecisionFallbackWarning, match="slower"):
            _clf(n_estimators=1, inference_precision="fp16").fit(X[:60], y[:60])
    with pytest.raises(TabzooInputError, match="inference_precision"):
        _clf(inference_precision="int8").fit(X, y)


# -- f. bin shifts ----------------------------------------------------------------------------------
def test_regression_members_shift_bins() -> None:
    rng = np.random.default_rng(4)
    X = rng.standard_normal((120, 3))
    y = 2 * X[:, 0] + np.sin(X[:, 1])
    reg = TabFlexRegressor(device="cpu", n_estimators=4, n_bins=10).fit(X[:90], y[:90])
    edges = [b.edges_ for b in reg.binners_]
    assert len({e.tobytes() for e in edges}) == 4
    width = np.diff(edges[0]).max()
    np.testing.assert_allclose(edges[2][1] - edges[0][0], 0.5 * width)  # member 2 of 4: half a bin
    flat = TabFlexRegressor(device="cpu", n_estimators=4, n_bins=10, bin_shift=False).fit(X[:90], y[:90])
    assert len({b.edges_.tobytes() for b in flat.binners_}) == 1
    p, q = reg.predict(X[90:]), flat.predict(X[90:])
    assert np.isfinite(p).all() and not np.allclose(p, q)
    mode = TabFlexRegressor(device="cpu", n_estimators=4, n_bins=10, point="mode").fit(X[:90], y[:90]).predict(X[90:])
    assert np.isfinite(mode).all() and y[:90].min() - 1e-9 <= mode.min() and mode.max() <= y[:90].max() + 1e-9
    # the regressor's quality: better than predicting the mean
    assert np.mean((p - y[90:]) ** 2) < np.var(y[90:])


def test_many_class_ecoc_path() -> None:
    X, _ = _data(n=160, seed=5)
    y = np.arange(160) % 13
    X[:, 3] += y  # learnable
    ecoc = _clf(n_estimators=2, many_class="ecoc").fit(X[:130], y[:130])
    cached = _clf(n_estimators=2, many_class="ecoc", fit_mode="fit_with_cache").fit(X[:130], y[:130])
    p = ecoc.predict_proba(X[130:])
    assert p.shape == (30, 13) and (p > 0).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(cached.predict_proba(X[130:]), p, atol=1e-5)
    assert len(cached.context_cache_) == 16  # one state per code
    hier = _clf(n_estimators=2, many_class="hierarchical").fit(X[:130], y[:130]).predict_proba(X[130:])
    assert not np.allclose(hier, p)
    with pytest.raises(TabzooInputError, match="many_class"):
        _clf(many_class="ovr").fit(X, y)
