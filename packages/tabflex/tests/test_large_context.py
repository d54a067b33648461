"""Class-balanced contexts, one-hot categorical encoding and local contexts (issue 10, session 4)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the estimators need scikit-learn (tabzoo-core[sklearn])")

import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_tabflex.estimators import TabFlexClassifier, TabFlexRegressor  # noqa: E402
from tabzoo_tabflex.inference import AUTO_BALANCE, AUTO_LOCAL_ROWS  # noqa: E402
from tabzoo_tabflex.model import TabFlex  # noqa: E402

warnings.filterwarnings("ignore", message=".*Algorithm 1 wants.*")


def _blobs(n: int = 240, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four blobs whose label depends on the blob and, inside it, on a local threshold."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [8, 0], [0, 8], [8, 8]], dtype=float)
    blob = rng.integers(0, 4, size=n)
    x = centres[blob] + rng.normal(size=(n, 2))
    y = ((x[:, 0] - centres[blob, 0]) > (blob - 1.5) * 0.5).astype(int)
    return np.column_stack([x, rng.normal(size=n)]), y


def _clf(**kw) -> TabFlexClassifier:
    return TabFlexClassifier(device="cpu", chunk_size=64, n_estimators=2, **kw)


# -- weighted context sums ------------------------------------------------------------------------
def test_integer_row_weights_equal_repeated_rows() -> None:
    torch.manual_seed(0)
    model = TabFlex("tiny").eval()
    x = torch.randn(1, 12, 16)
    y = torch.randint(0, 3, (1, 12)).float()
    q = torch.randn(1, 5, 16)
    reps = torch.tensor([1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 4, 1])
    weighted = model.predict_query(q, model.encode_context(x, y, weights=reps[None].float()))
    idx = torch.repeat_interleave(torch.arange(12), reps)
    repeated = model.predict_query(q, model.encode_context(x[:, idx], y[:, idx]))
    torch.testing.assert_close(weighted, repeated, rtol=1e-4, atol=1e-5)
    plain = model.predict_query(q, model.encode_context(x, y))
    torch.testing.assert_close(model.predict_query(q, model.encode_context(x, y, weights=torch.ones(1, 12))), plain,
                               rtol=1e-5, atol=1e-6)
    for bad in (torch.zeros(1, 12), torch.ones(1, 11), torch.full((1, 12), float("nan"))):
        with pytest.raises(TabzooInputError, match="weights"):
            model.encode_context(x, y, weights=bad)


# -- class balance --------------------------------------------------------------------------------
def test_class_balance_zero_is_the_unweighted_model_and_auto_changes_rare_classes() -> None:
    X, y = _blobs()
    y = np.where(np.arange(len(y)) % 9 == 0, 2, y)  # a rare third class
    p0 = _clf(class_balance=0).fit(X[:180], y[:180]).predict_proba(X[180:])
    auto = _clf().fit(X[:180], y[:180])
    assert auto._balance_strength() == AUTO_BALANCE > 0
    pa = auto.predict_proba(X[180:])
    p1 = _clf(class_balance=1.0).fit(X[:180], y[:180]).predict_proba(X[180:])
    assert not np.allclose(p0, pa) and not np.allclose(p0, p1)
    for p in (p0, pa, p1):
        np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-9)
    # the prior correction keeps the predicted class shares near the context's
    share = np.bincount(y[:180], minlength=3) / 180
    assert np.abs(p1.mean(0) - share).max() < 0.15


@pytest.mark.parametrize("bad", [-0.5, float("inf"), "strong", True])
def test_bad_class_balance_says_the_fix(bad) -> None:
    X, y = _blobs()
    with pytest.raises(TabzooInputError, match="class_balance"):
        _clf(class_balance=bad).fit(X, y).predict_proba(X[:3])


def test_regressor_is_never_balanced() -> None:
    X, y = _blobs()
    reg = TabFlexRegressor(device="cpu", n_estimators=2, n_bins=8).fit(X, X[:, 0] + y)
    assert reg._balance_strength() == 0.0


# -- one-hot categorical encoding -----------------------------------------------------------------
def _with_category(n: int = 200, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cat = rng.choice(list("abcdefg"), size=n)
    num = rng.normal(size=n)
    y = np.isin(cat, ["b", "e", "f"]).astype(int) ^ (num > 1.2)
    X = np.empty((n, 2), dtype=object)
    X[:, 0], X[:, 1] = cat, num
    return X, y


def test_onehot_expands_the_category_and_saves(tmp_path) -> None:
    X, y = _with_category()
    clf = _clf(categorical_encoding="onehot").fit(X[:150], y[:150])
    assert clf.encoder_ is not None and clf.X_context_.shape[1] == 7 + 1
    assert clf._view_categoricals() == ()  # no ordinal code left to shuffle
    p = clf.predict_proba(X[150:])
    assert p.shape == (50, 2) and np.isfinite(p).all()
    assert (clf.predict(X[150:]) == y[150:]).mean() > 0.6
    stem = clf.save(tmp_path / "oh")
    np.testing.assert_allclose(TabFlexClassifier.load(stem).predict_proba(X[150:]), p, rtol=1e-6, atol=1e-7)
    ordinal = _clf().fit(X[:150], y[:150])
    assert ordinal.encoder_ is None and ordinal.X_context_.shape[1] == 2
    with pytest.raises(TabzooInputError, match="categorical_encoding"):
        _clf(categorical_encoding="hash").fit(X, y)


# -- local contexts -------------------------------------------------------------------------------
def _local(**kw) -> TabFlexClassifier:
    return _clf(context_strategy="local", local_size=40, **kw)


def test_local_contexts_shapes_determinism_and_save(tmp_path) -> None:
    X, y = _blobs(300)
    clf = _local().fit(X[:240], y[:240])
    assert clf.local_ is not None and len(clf.local_.rows) == 6  # ceil(240 / 40)
    p = clf.predict_proba(X[240:])
    assert p.shape == (60, 2)
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-9)
    np.testing.assert_array_equal(_local().fit(X[:240], y[:240]).predict_proba(X[240:]), p)
    stem = clf.save(tmp_path / "loc")
    np.testing.assert_allclose(TabFlexClassifier.load(stem).predict_proba(X[240:]), p, rtol=1e-6, atol=1e-7)
    mixed = _clf(context_strategy="local+global", local_size=40).fit(X[:240], y[:240]).predict_proba(X[240:])
    glob = _clf(context_strategy="global").fit(X[:240], y[:240]).predict_proba(X[240:])
    assert not np.allclose(mixed, p) and not np.allclose(mixed, glob)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_local_contexts_keep_query_independence_and_context_order(seed: int) -> None:
    X, y = _blobs(200, seed=seed % 7)
    clf = _local().fit(X[:160], y[:160])
    full = clf.predict_proba(X[160:])
    rng = np.random.default_rng(seed)
    sub = rng.choice(40, size=7, replace=False)
    np.testing.assert_allclose(clf.predict_proba(X[160:][sub]), full[sub], rtol=1e-5, atol=1e-6)
    perm = rng.permutation(160)
    again = _local().fit(X[:160][perm], y[:160][perm]).predict_proba(X[160:])
    np.testing.assert_allclose(again, full, rtol=1e-4, atol=1e-5)


def test_local_contexts_use_the_neighbourhood() -> None:
    # labels flip between two far-apart regions that share the same local rule's sign: one global
    # context averages them, local contexts separate them
    rng = np.random.default_rng(0)
    n = 400
    region = rng.integers(0, 2, size=n)
    x = rng.normal(size=(n, 2)) + region[:, None] * 12.0
    y = ((x[:, 1] > region * 12.0) ^ region.astype(bool)).astype(int)
    loc = _clf(context_strategy="local", local_size=150).fit(x[:300], y[:300])
    acc_local = (loc.predict(x[300:]) == y[300:]).mean()
    assert acc_local > 0.75


def test_auto_strategy_turns_local_above_the_trained_rows() -> None:
    X, y = _blobs(120)
    clf = _clf().fit(X, y)
    assert clf._strategy() == "global" and clf.local_ is None
    assert AUTO_LOCAL_ROWS >= 4096


@pytest.mark.parametrize("kw", [{"context_strategy": "knn"}, {"context_strategy": "local", "local_size": 4},
                                {"context_strategy": "local", "local_size": 50.5}])
def test_bad_local_parameters_say_the_fix(kw) -> None:
    X, y = _blobs(120)
    with pytest.raises(TabzooInputError, match="context_strategy|local_size"):
        _clf(**kw).fit(X, y)


def test_local_contexts_with_cache_match_uncached() -> None:
    X, y = _blobs(260)
    a = _local(fit_mode="fit_with_cache").fit(X[:200], y[:200])
    b = _local().fit(X[:200], y[:200])
    np.testing.assert_allclose(a.predict_proba(X[200:]), b.predict_proba(X[200:]), rtol=1e-5, atol=1e-6)


# -- regression calibration -----------------------------------------------------------------------
def test_regressor_calibration_is_fitted_on_the_context_and_saved(tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    y = 3 * X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=150)
    reg = TabFlexRegressor(device="cpu", n_estimators=2, n_bins=8).fit(X[:120], y[:120])
    a, b = reg.calibration_
    assert 1 / 3 <= b <= 3 and np.isfinite(a)
    off = TabFlexRegressor(device="cpu", n_estimators=2, n_bins=8, calibrate=False).fit(X[:120], y[:120])
    assert off.calibration_ == (0.0, 1.0)
    p, q = reg.predict(X[120:]), off.predict(X[120:])
    # the calibrated prediction is the affine map of the uncalibrated one (in standardised units)
    zq = (q - off.y_mean_) / off.y_scale_
    np.testing.assert_allclose((p - reg.y_mean_) / reg.y_scale_, a + b * zq, rtol=1e-6, atol=1e-6)
    # the query rows never enter the calibration
    reg2 = TabFlexRegressor(device="cpu", n_estimators=2, n_bins=8).fit(X[:120], y[:120])
    reg2.predict(X[120:] * 50)
    assert reg2.calibration_ == reg.calibration_
    stem = reg.save(tmp_path / "cal")
    np.testing.assert_allclose(TabFlexRegressor.load(stem).predict(X[120:]), p, rtol=1e-6, atol=1e-6)
    # the folds do not depend on the row order (untuned: fine-tuning, the default, amplifies the rounding of a
    # permuted context sum over its Adam steps - 0.4% of the target's spread on this table)
    perm = rng.permutation(120)
    plain = TabFlexRegressor(device="cpu", n_estimators=2, n_bins=8, fine_tune=False).fit(X[:120], y[:120])
    again = TabFlexRegressor(device="cpu", n_estimators=2, n_bins=8, fine_tune=False).fit(X[:120][perm], y[:120][perm])
    np.testing.assert_allclose(again.calibration_, plain.calibration_, rtol=1e-4, atol=1e-5)
    with pytest.raises(TabzooInputError, match="calibrate"):
        TabFlexRegressor(device="cpu", n_estimators=2, calibrate="yes").fit(X, y)
