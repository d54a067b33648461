"""OrionMSPClassifier's member features (issue 28): scored subsets, ``member_features="auto"`` chosen on an
inner split of the training rows, and the optional ``linear_blend``; all deterministic and saved."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sklearn", reason="the estimator needs scikit-learn (tabzoo-core[sklearn])")

from sklearn.metrics import roc_auc_score  # noqa: E402
from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_orion_msp.estimators import (  # noqa: E402
    AUTO_MEMBER_FEATURES,
    BLEND_WEIGHTS,
    LinearMember,
    OrionMSPClassifier,
    _mean_ovr_auc,
    blend,
    inner_split,
)


def _wide(n: int = 90, d: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 5] + 0.5 * X[:, 17] > 0).astype(int)
    return X, y


def _fit(**kw: object) -> tuple[OrionMSPClassifier, np.ndarray]:
    X, y = _wide()
    est = OrionMSPClassifier(device="cpu", n_estimators=2, random_state=0, **kw).fit(X[:70], y[:70])
    return est, est.predict_proba(X[70:])


def test_auto_member_features_is_chosen_on_the_inner_split_and_deterministic() -> None:
    est, p = _fit()
    sel = est.member_selection_
    assert sel["source"] == "inner split" and sel["features"] in (AUTO_MEMBER_FEATURES, 40)
    assert set(sel["inner_roc_auc"]) == {str(AUTO_MEMBER_FEATURES), "40"}
    assert sum(sel["inner_rows"]) == 70
    assert all(len(m.features) == sel["features"] for m in est.members_)
    _, again = _fit()
    np.testing.assert_array_equal(p, again)
    narrow, _ = _fit(member_features=None)
    assert narrow.member_selection_["source"] == "model"


def test_scored_members_keep_the_informative_features() -> None:
    est, _ = _fit(member_features=8, feature_top_share=0.5)
    assert est.member_selection_ == {"features": 8, "source": "member_features"}
    for m in est.members_:
        assert len(m.features) == 8 and {5, 17} <= set(m.features)
    balanced, _ = _fit(member_features=8, feature_selection="balanced")
    assert all(len(m.features) == 8 for m in balanced.members_)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1000), n=st.integers(4, 300), k=st.integers(2, 5))
def test_inner_split_is_a_stratified_partition(seed: int, n: int, k: int) -> None:
    y = np.random.default_rng(seed).integers(0, k, n)
    train, hold = inner_split(y, seed, max_query=50)
    assert np.array_equal(np.sort(np.concatenate([train, hold])), np.arange(n))
    assert hold.size <= 50 + k and set(np.unique(y)) == set(np.unique(y[train]))  # every class keeps a row
    t2, h2 = inner_split(y, seed, max_query=50)
    assert np.array_equal(train, t2) and np.array_equal(hold, h2)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1000), k=st.integers(2, 4))
def test_mean_ovr_auc_is_sklearns_macro_ovr(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(k), rng.integers(0, k, 40)])
    p = rng.random((y.size, k)).round(1) + 1e-3  # ties included
    p /= p.sum(1, keepdims=True)
    want = roc_auc_score(y, p[:, 1]) if k == 2 else roc_auc_score(y, p, multi_class="ovr", average="macro")
    # binary: the mean of AUC(p1) for class 1 and AUC(p0) for class 0, the same when p0 = 1 - p1
    assert _mean_ovr_auc(y, p) == pytest.approx(want, abs=1e-12)


def test_linear_blend_auto_fixed_and_save_load(tmp_path) -> None:
    X, y = _wide()
    est, p = _fit(linear_blend="auto")
    assert est.linear_blend_ in BLEND_WEIGHTS
    assert set(est.linear_blend_inner_) == {str(w) for w in BLEND_WEIGHTS}
    plain, p0 = _fit(linear_blend=0)
    fixed, p25 = _fit(linear_blend=0.25)
    lin = LinearMember().fit(fixed.X_context_, fixed.y_context_, 2)
    np.testing.assert_allclose(p25, blend(p0, lin.log_proba(fixed._transform_query(X[70:])), 0.25), atol=1e-9)
    stem = fixed.save(tmp_path / "orion")
    back = OrionMSPClassifier.load(stem)
    np.testing.assert_allclose(back.predict_proba(X[70:]), p25, atol=1e-6)
    assert back.linear_blend_ == 0.25 and back.member_selection_ == fixed.member_selection_
    assert np.allclose(p.sum(1), 1.0)


@pytest.mark.parametrize("kw", [{"linear_blend": 1.0}, {"linear_blend": "yes"}, {"member_features": 0},
                                {"member_features": "all"}, {"feature_selection": "top"},
                                {"feature_top_share": 1.5}])
def test_bad_member_options_are_refused(kw: dict) -> None:
    X, y = _wide(20)
    with pytest.raises(TabzooInputError):
        OrionMSPClassifier(device="cpu", n_estimators=1, **kw).fit(X, y)


def test_the_linear_member_one_hot_encodes_categoricals_and_round_trips() -> None:
    rng = np.random.default_rng(0)
    cat = rng.integers(0, 4, 200).astype(float)
    x = np.column_stack([rng.standard_normal(200), cat])
    x[::7, 0] = np.nan
    y = (cat == 2).astype(int)  # not monotone in the code: only the one-hot sees it
    member = LinearMember(categorical=[1]).fit(x, y, 2)
    assert member.levels_[0].tolist() == [0.0, 1.0, 2.0, 3.0] and member.missing_.tolist() == [0]
    p = np.exp(member.log_proba(x))
    assert roc_auc_score(y, p[:, 1]) > 0.99
    np.testing.assert_array_equal(LinearMember.from_state(member.state()).log_proba(x), member.log_proba(x))
