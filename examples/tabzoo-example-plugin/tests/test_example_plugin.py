"""The plugin's own tests: it is discovered, it predicts sensibly untrained, it passes the kit."""

from __future__ import annotations

import torch
from tabzoo.testing import parametrize_with_checks
from tabzoo_example_plugin.conformance import example_case
from tabzoo_example_plugin.model import KNNAttentionClassifier


@parametrize_with_checks([example_case()])
def test_conformance(case, check):
    check(case)


def test_nearest_neighbour_wins() -> None:
    model = KNNAttentionClassifier(max_features=2, max_classes=3, temperature=0.05).eval()
    x = torch.tensor([[[0.0, 0.0], [5.0, 5.0], [-5.0, 5.0], [5.1, 4.9], [-4.9, 5.2]]])
    y = torch.tensor([[0.0, 1.0, 2.0]])
    assert model(x, y).argmax(-1).tolist() == [[1, 2]]


def test_plugin_registers_through_the_entry_point() -> None:
    from tabzoo.plugins import get_architecture, list_conformance_cases

    spec = get_architecture("example_knn")
    assert "query_independence" in spec.capabilities
    assert "example" in [c.name for c in list_conformance_cases()]


def test_the_estimator_is_the_cores_in_context_path_around_the_model() -> None:
    import numpy as np
    from tabzoo_example_plugin.estimators import KNNAttentionEstimator

    rng = np.random.default_rng(0)
    centres = np.array([[4.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 4.0]])
    y = rng.integers(0, 3, 90)
    X = centres[y] + rng.normal(size=(90, 3))
    clf = KNNAttentionEstimator(n_estimators=3, device="cpu").fit(X[:60], y[:60])
    proba = clf.predict_proba(X[60:])
    assert proba.shape == (30, 3) and np.allclose(proba.sum(1), 1.0)
    assert (clf.predict(X[60:]) == y[60:]).mean() > 0.9  # well-separated blobs: a soft kNN gets them
