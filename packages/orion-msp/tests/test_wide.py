"""ORION-MSP's fast path for wide tables (issue 28 item 4): ``wide_features`` runs a member over all
of a wide table's features, the row attention then dispatches to the block-sparse ``banded``
kernel, and its predictions equal those of the dense masked attention."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn", reason="the estimator needs scikit-learn (tabzoo-core[sklearn])")

from tabzoo import kernels  # noqa: E402
from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_orion_msp.estimators import OrionMSPClassifier, load_orion  # noqa: E402

#: 400 features: 8 special tokens + 400 group tokens at scale 1 = 408 >= 320, the banded threshold
N_FEATURES = 400


def _wide(n: int = 48, d: int = N_FEATURES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, :10].sum(1) > 0).astype(int)
    return X, y


def _fitted(**kw: object) -> OrionMSPClassifier:
    X, y = _wide()
    return OrionMSPClassifier(device="cpu", n_estimators=1, random_state=0, **kw).fit(X[:36], y[:36])


def test_wide_features_dispatch_to_the_banded_kernel_and_equal_dense(caplog: pytest.LogCaptureFixture) -> None:
    X, _ = _wide()
    est = _fitted(wide_features=N_FEATURES)
    assert est.model_.max_features == N_FEATURES
    with caplog.at_level(logging.DEBUG, logger="tabzoo.kernels"):
        auto = est.predict_proba(X[36:])
    chosen = {r.getMessage() for r in caplog.records if r.getMessage().startswith("masked_attention ->")}
    assert any("-> banded" in m for m in chosen), chosen  # the wide rows took the block-sparse path
    with kernels.use("sdpa"):  # the dense path everywhere: the row Mask materialised as an [N, N] matrix
        dense = est.predict_proba(X[36:])
    np.testing.assert_array_equal(est.predict_proba(X[36:]), auto)  # deterministic
    # the same predictions; the probabilities differ by fp32 rounding only (softmax sums in another
    # order through 10 attention layers; measured max 1.8e-5)
    np.testing.assert_array_equal(auto.argmax(1), dense.argmax(1))
    np.testing.assert_allclose(auto, dense, rtol=0, atol=1e-4)
    assert np.isfinite(auto).all() and np.allclose(auto.sum(1), 1.0)


def test_without_wide_features_members_read_subsets_on_dense_attention(caplog: pytest.LogCaptureFixture) -> None:
    X, _ = _wide()
    est = _fitted()
    assert est.model_.max_features == est.model_.cfg.max_features == 100
    with caplog.at_level(logging.DEBUG, logger="tabzoo.kernels"):
        est.predict_proba(X[36:])
    assert not any("-> banded" in r.getMessage() for r in caplog.records)


def test_wide_estimator_saves_and_loads(tmp_path) -> None:
    X, _ = _wide()
    est = _fitted(wide_features=N_FEATURES)
    est.save(tmp_path / "wide")
    back = OrionMSPClassifier.load(tmp_path / "wide")
    assert back.wide_features == N_FEATURES
    np.testing.assert_array_equal(back.predict_proba(X[36:]), est.predict_proba(X[36:]))


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "400"])
def test_wide_features_refuses_non_counts(bad: object) -> None:
    X, y = _wide(d=8)
    with pytest.raises(TabzooInputError, match="wide_features"):
        OrionMSPClassifier(device="cpu", n_estimators=1, wide_features=bad).fit(X, y)


def test_model_refuses_wide_input_until_widened() -> None:
    model = load_orion()
    x, y = torch.randn(1, 12, 150), torch.zeros(1, 8, dtype=torch.long)
    with pytest.raises(TabzooInputError, match="widen"):
        model(x, y)
    assert model.widen(20).max_features == model.cfg.max_features  # never below the trained width
    assert model.widen(150) is model and model.max_features == 150
    with torch.no_grad():
        out = model(x, y)
    assert out.shape == (1, 4, model.max_classes) and torch.isfinite(out).all()
    with pytest.raises(TabzooInputError, match="positive int"):
        model.widen(0)
