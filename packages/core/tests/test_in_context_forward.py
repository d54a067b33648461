"""The core's in-context prediction path (tabzoo.estimators.forward / ensemble): its pure steps, and a
plugin's own InContextForward hook giving what the default ConcatForward gives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from _icl_testmodel import ICLTestClassifier
from sklearn.datasets import make_classification
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.forward import (
    ConcatForward,
    InContextForward,
    average_members,
    class_log_proba,
)


def test_class_log_proba_undoes_each_members_class_shift() -> None:
    k, shifts = 4, np.array([0, 1, 3])
    base = torch.randn(5, k, dtype=torch.float64)
    # member i shows class c at head position (c + shift_i) % k; the head is wider than k
    logits = torch.zeros(3, 5, k + 2, dtype=torch.float64)
    for i, s in enumerate(shifts):
        logits[i, :, (np.arange(k) + s) % k] = base
    out = class_log_proba(logits, k, shifts)
    expected = torch.log_softmax(base, -1)
    for i in range(3):
        torch.testing.assert_close(out[i], expected)
    with pytest.raises(TabzooInputError, match="larger head"):
        class_log_proba(logits, k + 3, shifts)


def test_average_members_means_probabilities_or_log_probabilities() -> None:
    logp = torch.log_softmax(torch.randn(3, 5, 4, dtype=torch.float64), -1)
    np.testing.assert_allclose(average_members(logp, "probabilities"), logp.exp().mean(0).numpy())
    geo = average_members(logp, "logits")
    np.testing.assert_allclose(geo, torch.softmax(logp.mean(0), -1).numpy())
    assert not np.allclose(geo, logp.exp().mean(0).numpy())
    prior = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    np.testing.assert_allclose(average_members(logp, "logits", prior), torch.softmax(logp.mean(0) + prior, -1).numpy())
    with pytest.raises(TabzooInputError, match='average="logits"'):
        average_members(logp, "probabilities", prior)


class _CountingForward:
    """A plugin's own hook: one member at a time (``per_member``), counting the context encodings."""

    per_member = True
    calls = 0

    def __init__(self, model: torch.nn.Module) -> None:
        self.inner = ConcatForward(model)

    def encode_context(self, x_context: torch.Tensor, y_context: torch.Tensor, weights: Any) -> Any:
        type(self).calls += 1
        assert x_context.shape[0] == 1  # per member
        return self.inner.encode_context(x_context, y_context, weights)

    def merge(self, states: Any) -> Any:
        return self.inner.merge(states)

    def predict_query(self, state: Any, x_query: torch.Tensor) -> torch.Tensor:
        return self.inner.predict_query(state, x_query)


class _OwnHook(ICLTestClassifier):
    fit_mode = "fit_with_cache"  # the context states are computed in fit, then only read

    def _context_forward(self) -> InContextForward:
        return _CountingForward(self.model_)


def test_a_plugins_own_hook_predicts_what_the_default_hook_predicts_and_caches_its_context() -> None:
    X, y = make_classification(n_samples=90, n_features=5, n_informative=3, n_classes=3, random_state=0)
    assert isinstance(_CountingForward(torch.nn.Identity()), InContextForward)
    plain = ICLTestClassifier(n_estimators=3, chunk_size=7, device="cpu").fit(X[:60], y[:60])
    _CountingForward.calls = 0
    own = _OwnHook(n_estimators=3, chunk_size=7, device="cpu").fit(X[:60], y[:60])
    assert _CountingForward.calls == 3  # one context state per member, in fit
    np.testing.assert_allclose(own.predict_proba(X[60:]), plain.predict_proba(X[60:]), rtol=0, atol=1e-6)
    own.predict_proba(X[60:])
    assert _CountingForward.calls == 3  # predict read the cached states
