"""tabzoo.estimators.members / options: member transforms, category shuffles, balanced subsets,
categorical column specs and inference precision (shared by every in-context estimator)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.estimators import TabularPreprocessor, make_members
from tabzoo.estimators.members import (
    FeatureTransform,
    balanced_subsets,
    check_transforms,
    feature_scores,
    fit_member_transforms,
    scored_subsets,
)
from tabzoo.estimators.options import (
    PrecisionFallbackWarning,
    check_fit_mode,
    resolve_categorical_features,
    resolve_inference_dtype,
)
from tabzoo.train.loop import cpu_has_fast_bf16


@given(seed=st.integers(0, 10_000), n=st.integers(5, 40), kind=st.sampled_from(["power", "quantile"]))
def test_transforms_are_monotone_rowwise_and_skip_categoricals(seed: int, n: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.exp(rng.standard_normal(n)), rng.integers(0, 3, n).astype(float),
                         rng.standard_normal(n)]).astype(np.float32)
    t = FeatureTransform(kind, skip=[1]).fit(x)
    out = t.transform(x)
    assert out.dtype == np.float32 and np.isfinite(out).all()
    np.testing.assert_array_equal(out[:, 1], x[:, 1])  # categorical codes untouched
    for j in (0, 2):
        order = np.argsort(x[:, j], kind="stable")
        assert (np.diff(out[order, j]) >= -1e-5).all()  # monotone: ranks are kept
    rows = np.concatenate([t.transform(x[i:i + 1]) for i in range(n)])
    np.testing.assert_allclose(rows, out, atol=1e-6)  # row-wise: a row never sees the others
    far = t.transform(x * 1e6)
    assert np.isfinite(far).all()


def test_power_transform_unskews() -> None:
    rng = np.random.default_rng(0)
    x = np.exp(rng.standard_normal((500, 1)))
    out = FeatureTransform("power").fit(x).transform(x)[:, 0]
    skew = lambda v: float(np.mean(((v - v.mean()) / v.std()) ** 3))  # noqa: E731
    assert skew(x[:, 0]) > 2 and abs(skew(out)) < 0.3
    assert abs(out.mean()) < 1e-3 and abs(out.std() - 1) < 1e-3



def _yeo_johnson_both_branches(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The transform as written before (both branches on every entry, then selected): the reference."""
    pos, lam_b = x >= 0, np.broadcast_to(lam, x.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = np.where(np.abs(lam_b) < 1e-6, np.log1p(np.maximum(x, 0)),
                     (np.power(np.maximum(x, 0) + 1, lam_b) - 1) / np.where(np.abs(lam_b) < 1e-6, 1, lam_b))
        l2 = 2 - lam_b
        b = np.where(np.abs(l2) < 1e-6, -np.log1p(np.maximum(-x, 0)),
                     -(np.power(np.maximum(-x, 0) + 1, l2) - 1) / np.where(np.abs(l2) < 1e-6, 1, l2))
    return np.where(pos, a, b)


@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), scale=st.sampled_from([1e-3, 1.0, 50.0]))
def test_yeo_johnson_matches_the_two_branch_form_and_scipy(seed: int, n: int, scale: float) -> None:
    """Each branch on its own entries gives bit-identical values (NaN, zeros and lambdas 0 and 2 included),
    and the values of scipy's Yeo-Johnson."""
    from tabzoo.estimators.members import _LAMBDAS, _yeo_johnson

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)) * scale
    x[rng.random((n, 4)) < 0.2] = 0.0
    x[rng.random((n, 4)) < 0.1] = np.nan
    lam = np.array([0.0, 2.0, rng.choice(_LAMBDAS), rng.uniform(-2, 3)])
    out = _yeo_johnson(x, lam[None, :])
    assert out.tobytes() == _yeo_johnson_both_branches(x, lam[None, :]).tobytes()
    stats = pytest.importorskip("scipy.stats", reason="scipy is the independent reference")
    for j in range(4):
        ok = ~np.isnan(x[:, j])
        if ok.any():
            np.testing.assert_allclose(out[ok, j], stats.yeojohnson(x[ok, j], lmbda=lam[j]), rtol=1e-9, atol=1e-12)
        assert np.isnan(out[~ok, j]).all()

def test_check_transforms() -> None:
    assert check_transforms("power") == ("power",)
    for bad in ((), ("boxcox",), 3):
        with pytest.raises(TabzooInputError, match="feature_transforms"):
            check_transforms(bad)


@given(n_members=st.integers(1, 8), n_features=st.integers(2, 60), data=st.data())
def test_balanced_subsets_cover_every_feature(n_members: int, n_features: int, data: st.DataObject) -> None:
    size = data.draw(st.integers(1, n_features))
    subsets = balanced_subsets(n_members, n_features, size, seed=data.draw(st.integers(0, 99)))
    assert len(subsets) == n_members
    for s in subsets:
        assert s.size == size and np.unique(s).size == size and (np.diff(s) > 0).all()
    if n_members * size >= n_features:
        assert set(np.concatenate(subsets).tolist()) == set(range(n_features))
    counts = np.bincount(np.concatenate(subsets), minlength=n_features)
    assert counts.max() - counts.min() <= max(2, n_members * size // n_features)


def test_make_members_transforms_seeds_and_unchanged_default_stream() -> None:
    old = make_members(5, 8, 3, seed=11)
    assert [m.transform for m in old] == ["none"] * 5
    new = make_members(5, 8, 3, seed=11, transforms=("none", "power"))
    assert [m.features for m in new] == [m.features for m in old]  # transforms do not change the draws
    assert [m.transform for m in new] == ["none", "power", "none", "power", "none"]
    assert len({m.seed for m in new}) == 5
    wide = make_members(4, 30, 2, seed=1, max_features=10, subsample="balanced")
    assert set().union(*[set(m.features) for m in wide]) == set(range(30))
    with pytest.raises(TabzooInputError, match="subsample"):
        make_members(2, 30, 2, seed=1, max_features=10, subsample="first")


def test_category_shuffle_is_a_bijection_keeping_missing() -> None:
    rng = np.random.default_rng(2)
    raw = np.column_stack([rng.standard_normal(60), rng.integers(0, 6, 60).astype(float)])
    raw[:3, 1] = np.nan
    pre = TabularPreprocessor().fit(raw, categorical=[1])
    assert pre.kinds == ["numeric", "categorical"]
    x = pre.transform(raw)
    members = make_members(3, 2, 1, seed=0)
    views = fit_member_transforms(members, x, categorical=[1], preprocessor=pre, shuffle_categories=True)
    assert not views[0].perms_ and 1 in views[1].perms_
    a = views[0].apply(x)[:, list(members[0].features).index(1)]
    b = views[1].apply(x)[:, list(members[1].features).index(1)]
    mapping = {}
    for u, v in zip(a.tolist(), b.tolist(), strict=True):
        assert mapping.setdefault(u, v) == v
    assert len(set(mapping.values())) == len(mapping)  # injective
    missing = a[:3]
    np.testing.assert_array_equal(b[:3], missing)  # the missing level stays put
    unseen = raw[:2].copy()
    unseen[:, 1] = 99.0
    np.testing.assert_array_equal(pre.transform(unseen)[:, 1], pre.transform(raw[:2] * np.array([1, np.nan]))[:, 1])


@given(spec=st.one_of(st.lists(st.integers(4, 99), min_size=1, max_size=3), st.lists(st.integers(-5, -1), min_size=1),
                      st.lists(st.booleans(), min_size=1, max_size=7).filter(lambda m: len(m) != 4),
                      st.just([1, 1]), st.just([1.0]), st.just("yes"), st.just(["x"]), st.just(5)))
def test_bad_categorical_specs_name_the_fix(spec) -> None:
    with pytest.raises(TabzooInputError, match="pass|list each"):
        resolve_categorical_features(spec, np.zeros((3, 4)), 4)


def test_good_categorical_specs() -> None:
    X = np.zeros((3, 4))
    assert resolve_categorical_features([3, 0], X, 4) == (0, 3)
    assert resolve_categorical_features(np.array([True, False, False, True]), X, 4) == (0, 3)
    assert resolve_categorical_features(None, X, 4) == ()
    assert resolve_categorical_features("auto", X, 4) == ()
    assert resolve_categorical_features("auto", X, 4, table_categoricals=(2,)) == (2,)


def test_inference_precision() -> None:
    assert resolve_inference_dtype("fp32", "cpu") == torch.float32
    assert resolve_inference_dtype("auto", "cpu") == (torch.bfloat16 if cpu_has_fast_bf16() else torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionFallbackWarning)
        assert resolve_inference_dtype("fp16", "cpu") == torch.float16
        assert resolve_inference_dtype("bf16", "cpu") == torch.bfloat16
    if not cpu_has_fast_bf16():
        with pytest.warns(PrecisionFallbackWarning):
            resolve_inference_dtype("bf16", "cpu")
    with pytest.raises(TabzooInputError, match="inference_precision"):
        resolve_inference_dtype("half", "cpu")
    assert check_fit_mode("fit_with_cache") == "fit_with_cache"
    with pytest.raises(TabzooInputError, match="fit_mode"):
        check_fit_mode("cache")


@given(n_classes=st.integers(11, 40), n_codes=st.integers(1, 20), seed=st.integers(0, 99))
def test_ecoc_codebook_is_balanced(n_classes: int, n_codes: int, seed: int) -> None:
    from tabzoo.estimators.hierarchy import ecoc_codebook

    book = ecoc_codebook(n_classes, 10, n_codes, seed)
    assert book.shape == (n_codes, n_classes) and book.min() == 0 and book.max() == 9
    for code in book:
        sizes = np.bincount(code, minlength=10)
        assert sizes.max() - sizes.min() <= 1


def test_ecoc_decodes_an_oracle_and_sums_to_one() -> None:
    from tabzoo.estimators.hierarchy import ecoc_codebook, ecoc_proba

    n_classes, truth = 26, np.arange(52) % 26  # query row j is of class truth[j]
    y_context = np.arange(260) % 26
    book = ecoc_codebook(n_classes, 10, 12, seed=5)

    def oracle(i: int, labels: np.ndarray, k: int) -> np.ndarray:
        np.testing.assert_array_equal(labels, book[i][y_context])  # the model sees code i's groups
        p = np.full((truth.size, k), 0.05 / (k - 1))
        p[np.arange(truth.size), book[i][truth]] = 0.95
        return p

    p = ecoc_proba(oracle, y_context, n_classes, 10, truth.size, n_codes=12, seed=5)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert (p.argmax(axis=1) == truth).all() and (p > 0).all()


def test_renamed_member_names_stay_importable_with_a_warning() -> None:
    """``MemberView``/``fit_member_views`` were renamed ``MemberTransform``/``fit_member_transforms`` (issue 31)."""
    import tabzoo.estimators as est
    from tabzoo.estimators import members

    for module in (est, members):
        for old, new in (("MemberView", "MemberTransform"), ("fit_member_views", "fit_member_transforms")):
            with pytest.warns(DeprecationWarning, match=new):
                assert getattr(module, old) is getattr(module, new)


# -- scored feature subsets (issue 28: ORION-MSP's members on wide tables) --------------------------
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n_members=st.integers(1, 6), n_features=st.integers(2, 40), data=st.data())
def test_scored_subsets_are_deterministic_sorted_and_keep_the_top(seed: int, n_members: int, n_features: int,
                                                                  data: st.DataObject) -> None:
    size = data.draw(st.integers(1, n_features))
    share = data.draw(st.sampled_from([0.0, 0.5, 0.75, 1.0]))
    scores = np.random.default_rng(seed).exponential(size=n_features)
    a = scored_subsets(n_members, scores, size, seed, share)
    b = scored_subsets(n_members, scores, size, seed, share)
    assert len(a) == n_members
    top = np.argsort(-scores, kind="stable")[: int(round(share * size))]
    for s, t in zip(a, b, strict=True):
        np.testing.assert_array_equal(s, t)  # deterministic for the seed
        assert s.size == size == np.unique(s).size and np.all(np.diff(s) > 0)
        assert s.min() >= 0 and s.max() < n_features
        assert set(top.tolist()) <= set(s.tolist())  # the top share is always kept


def test_scored_subsets_refuse_bad_sizes() -> None:
    with pytest.raises(TabzooInputError, match="size"):
        scored_subsets(2, np.ones(3), 4, 0)
    with pytest.raises(TabzooInputError, match="top_share"):
        scored_subsets(2, np.ones(3), 2, 0, top_share=1.5)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(60, 200), n_classes=st.integers(2, 4))
def test_feature_scores_favour_an_informative_feature(seed: int, n: int, n_classes: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    x = rng.standard_normal((n, 5))
    x[:, 3] = y + 0.1 * rng.standard_normal(n)  # the label, nearly
    x[rng.random(n) < 0.1, 1] = np.nan  # missing values are a bin of their own
    s = feature_scores(x, y, n_classes)
    assert s.shape == (5,) and np.all(s >= 0) and np.isfinite(s).all()
    assert int(np.argmax(s)) == 3
    np.testing.assert_array_equal(s, feature_scores(x, y, n_classes))  # deterministic


def test_make_members_scored_uses_the_scores_and_needs_them() -> None:
    scores = np.zeros(50)
    scores[[7, 11, 42]] = 1.0
    members = make_members(4, 50, 2, 0, 10, subsample="scored", scores=scores, top_share=0.3)
    for m in members:
        assert len(m.features) == 10 and {7, 11, 42} <= set(m.features)
    assert list(members[0].features) == sorted(members[0].features)
    with pytest.raises(TabzooInputError, match="scores"):
        make_members(4, 50, 2, 0, 10, subsample="scored")
