"""OrionMSPClassifier: shipped checkpoint offline, temperature ensembling, many classes, scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the estimator needs scikit-learn (tabzoo-core[sklearn])")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402
from tabzoo.errors import CheckpointError, TabzooInputError  # noqa: E402
from tabzoo.testing.fixtures import blobs, mixed_frame  # noqa: E402
from tabzoo_orion_msp.estimators import (  # noqa: E402
    _CKPT_DIR,
    DEFAULT_CHECKPOINT,
    OrionMSPClassifier,
    load_orion,
)
from tabzoo_orion_msp.model import OrionMSP  # noqa: E402


def _meta() -> dict:
    return json.loads((_CKPT_DIR / f"{DEFAULT_CHECKPOINT}.json").read_text())


@pytest.mark.usefixtures("no_network")
def test_shipped_checkpoint_loads_offline_with_metadata() -> None:
    model = load_orion()
    assert isinstance(model, OrionMSP) and model.max_classes == 10 and model.cfg.name == "small"
    meta = _meta()
    assert meta["architecture"] == "orion-msp" and meta["steps"] > 0 and meta["prior"]
    assert meta["package_version"] and meta["extra"]["episodes_seen"] > 0
    assert (_CKPT_DIR / f"{DEFAULT_CHECKPOINT}-learning-curve.png").exists()
    with pytest.raises(CheckpointError, match="shipped"):
        load_orion("no-such-checkpoint")


def test_probabilities_temperature_and_save_load(tmp_path) -> None:
    X, y = blobs()
    clf = OrionMSPClassifier(device="cpu", n_estimators=2).fit(X[:80], y[:80])
    p = clf.predict_proba(X[80:])
    assert p.shape == (40, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    sharper = OrionMSPClassifier(device="cpu", n_estimators=2, softmax_temperature=0.3).fit(X[:80], y[:80])
    assert sharper.predict_proba(X[80:]).max(axis=1).mean() > p.max(axis=1).mean()
    stem = clf.save(tmp_path / "clf")
    again = OrionMSPClassifier.load(stem)
    np.testing.assert_allclose(again.predict_proba(X[80:]), p, atol=1e-6)
    with pytest.raises(TabzooInputError, match="temperature"):
        OrionMSPClassifier(softmax_temperature=0).fit(X, y)


def test_ensemble_is_deterministic_and_uses_shifts_and_shuffles() -> None:
    X, y = blobs(n=60, d=4)
    a = OrionMSPClassifier(device="cpu", n_estimators=3, random_state=1).fit(X[:40], y[:40])
    b = OrionMSPClassifier(device="cpu", n_estimators=3, random_state=1).fit(X[:40], y[:40])
    np.testing.assert_array_equal(a.predict_proba(X[40:]), b.predict_proba(X[40:]))
    assert {m.class_shift for m in a.members_} == {0, 1, 2}
    assert len({m.features for m in a.members_}) > 1


def test_more_classes_than_the_head_go_hierarchical() -> None:
    X, _ = blobs(n=150, d=4, k=13, seed=1)
    y = np.arange(150) % 13
    clf = OrionMSPClassifier(device="cpu", n_estimators=1).fit(X, y)
    p = clf.predict_proba(X[:7])
    assert p.shape == (7, 13)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert (p > 0).all()  # no class merged away
    assert set(clf.predict(X)) <= set(range(13))


def test_wider_tables_than_trained_use_feature_subsets_per_member() -> None:
    X, y = blobs(n=50, d=130, k=2)
    clf = OrionMSPClassifier(device="cpu", n_estimators=2).fit(X, y)
    assert all(len(m.features) == 100 for m in clf.members_)
    assert set(clf.members_[0].features) != set(clf.members_[1].features)
    assert clf.predict_proba(X[:5]).shape == (5, 2)


def test_dataframe_with_categories_and_missing_values() -> None:
    pytest.importorskip("pandas", reason="needs pandas")
    df, y = mixed_frame()
    clf = OrionMSPClassifier(device="cpu", n_estimators=2).fit(df, y)
    assert list(clf.classes_) == ["neg", "pos"]
    p = clf.predict_proba(df.iloc[:10])
    assert p.shape == (10, 2) and np.isfinite(p).all()


_ROUNDING = ("float rounding only: a query row's output is independent of the other query rows (proven on the "
             "masks and numerically by the conformance kit's query_independence check), but BLAS and attention "
             "kernels round differently for other batch shapes (~1e-7 relative, above scikit-learn's rtol=1e-7)")


def _expected_failed(estimator) -> dict[str, str]:
    # the step-720 checkpoint passes the learning checks (check_classifiers_train / _classes,
    # check_supervised_y_2d), which were expected failures up to step 355
    return {"check_methods_sample_order_invariance": _ROUNDING, "check_methods_subset_invariance": _ROUNDING}


@pytest.mark.slow
@parametrize_with_checks([OrionMSPClassifier(device="cpu", n_estimators=1, chunk_size=64)],
                         expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)


def test_member_views_and_pad_features_are_used() -> None:
    """Members see their own view (transforms, shuffled category codes) and the padded row layout."""
    X, y = blobs(n=90, d=4, k=2, seed=3)
    X = np.column_stack([X, np.tile([0.0, 1.0, 2.0], 30)])  # one categorical column
    base = dict(device="cpu", n_estimators=2, random_state=0)
    clf = OrionMSPClassifier(**base, categorical_features=[4]).fit(X[:60], y[:60])
    assert clf.categorical_indices_ == (4,)
    views = clf._views()
    assert [v.transform_kind for v in views] == ["none", "power"]
    assert not views[0].shuffle_categories and views[1].shuffle_categories
    p = clf.predict_proba(X[60:])
    plain = OrionMSPClassifier(**base, feature_transforms=("none",), categorical_features=None).fit(X[:60], y[:60])
    assert not np.allclose(p, plain.predict_proba(X[60:]))
    uncut = OrionMSPClassifier(**base, pad_features=False).fit(X[:60], y[:60])
    assert not np.allclose(OrionMSPClassifier(**base).fit(X[:60], y[:60]).predict_proba(X[60:]),
                           uncut.predict_proba(X[60:]))
    with pytest.raises(TabzooInputError, match="pad_features"):
        OrionMSPClassifier(pad_features="yes").fit(X[:60], y[:60])
    with pytest.raises(TabzooInputError):
        OrionMSPClassifier(feature_transforms=("sqrt",)).fit(X[:60], y[:60])


def test_context_subsets_are_stratified_order_free_and_per_member() -> None:
    X, y = blobs(n=300, d=4, k=3, seed=5)
    y = np.where(np.arange(300) < 20, 2, y % 2)  # class 2 is rare
    clf = OrionMSPClassifier(device="cpu", n_estimators=3, max_context_rows=60).fit(X, y)
    rows = np.arange(300)
    subs = clf._context_subsets(rows, clf.y_context_, 3)
    assert all(s.size == 60 for s in subs) and not np.array_equal(subs[0], subs[1])
    for s in subs:  # every class kept, in proportion
        counts = np.bincount(clf.y_context_[s], minlength=3)
        assert counts.min() >= 1 and abs(counts[2] - 4) <= 1
    # the same rows are chosen whatever the order of the training rows
    perm = np.random.default_rng(0).permutation(300)
    again = OrionMSPClassifier(device="cpu", n_estimators=3, max_context_rows=60).fit(X[perm], y[perm])
    subs2 = again._context_subsets(rows, again.y_context_, 3)
    for a, b in zip(subs, subs2, strict=True):
        assert {tuple(r) for r in clf.X_context_[a].round(5)} == {tuple(r) for r in again.X_context_[b].round(5)}
    np.testing.assert_allclose(clf.predict_proba(X[:5]), again.predict_proba(X[:5]), atol=1e-4)
    assert OrionMSPClassifier(device="cpu", max_context_rows=None).fit(X, y)._context_subsets(rows, y, 3)[0].size == 300
    with pytest.raises(TabzooInputError, match="max_context_rows"):
        OrionMSPClassifier(max_context_rows=1).fit(X, y)
