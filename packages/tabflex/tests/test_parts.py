"""Model selection, random projection, the class tree and target binning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.hierarchy import class_tree, hierarchical_proba
from tabzoo_tabflex.binning import TargetBinner
from tabzoo_tabflex.config import CONFIGS
from tabzoo_tabflex.projection import RandomProjection, gaussian_matrix
from tabzoo_tabflex.selection import algorithm1, select_model


@pytest.mark.parametrize(("n", "d", "want"), [
    (500, 10, "S100"), (2999, 100, "S100"), (3000, 100, "L100"), (1_000_000, 10, "L100"),
    (500, 101, "H1K"), (10_000, 800, "H1K"), (200, 5000, "H1K"),
])
def test_algorithm1(n: int, d: int, want: str) -> None:
    assert algorithm1(n, d) == want


def test_selection_projects_beyond_1000_features_and_counts_classes() -> None:
    s = select_model(5000, 3000, n_classes=2)
    assert (s.name, s.project_to, s.hierarchical) == ("H1K", 1000, False)
    s = select_model(500, 20, n_classes=26)
    assert s.name == "S100" and s.hierarchical and "hierarchical" in s.reason
    wide = {"S100": CONFIGS["S100"], "S100-c30": CONFIGS["S100"].with_(name="S100-c30", max_classes=30)}
    s = select_model(500, 20, n_classes=26, available=wide)
    assert s.name == "S100-c30" and not s.hierarchical


def test_selection_falls_back_to_available_weights() -> None:
    s = select_model(100_000, 300, n_classes=3, available={"small": CONFIGS["small"]})
    assert (s.preferred, s.name, s.project_to) == ("H1K", "small", 100)


def test_projection_is_seeded_and_used() -> None:
    a = gaussian_matrix(50, 10, seed=3)
    assert np.array_equal(a.numpy(), gaussian_matrix(50, 10, seed=3).numpy())
    assert not np.array_equal(a.numpy(), gaussian_matrix(50, 10, seed=4).numpy())
    x = np.random.default_rng(0).standard_normal((200, 50)).astype(np.float32)
    p = RandomProjection(10, seed=3).fit(50)
    z = p.transform(x)
    assert z.shape == (200, 10)
    np.testing.assert_allclose(z, x @ a.numpy(), rtol=1e-5, atol=1e-5)
    # a real projection: every output mixes all inputs (not a column subset)
    assert not any(np.allclose(z[:, j], x[:, i]) for j in range(10) for i in range(50))
    assert 0.7 < z.var(axis=0).mean() < 1.3
    with pytest.raises(TabzooInputError, match="fitted for 50"):
        p.transform(x[:, :40])


@settings(max_examples=20, deadline=None)
@given(c=st.integers(1, 250), m=st.integers(2, 12))
def test_class_tree_covers_every_class_once(c: int, m: int) -> None:
    tree = class_tree(c, m)

    def leaves(node):
        if node.is_leaf:
            return [node.classes]
        assert len(node.children) <= m
        return [x for ch in node.children for x in leaves(ch)]

    got = np.concatenate(leaves(tree))
    assert np.array_equal(got, np.arange(c))
    assert all(len(leaf) <= m for leaf in leaves(tree))


def test_hierarchical_proba_is_exact_for_an_oracle() -> None:
    rng = np.random.default_rng(0)
    n_classes, max_classes, n_query = 37, 10, 5
    y = np.repeat(np.arange(n_classes), 3)
    target = rng.dirichlet(np.ones(n_classes), size=n_query)  # the true class distribution per query row
    calls = []

    def oracle(rows: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
        calls.append(k)
        assert k <= max_classes and labels.max() < k
        classes = y[rows]
        out = np.zeros((n_query, k))
        for g in range(k):
            members = np.unique(classes[labels == g])
            out[:, g] = target[:, members].sum(axis=1)
        return out / out.sum(axis=1, keepdims=True)

    p = hierarchical_proba(oracle, y, n_classes, max_classes, n_query)
    np.testing.assert_allclose(p, target, atol=1e-12)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert len(calls) == class_tree(n_classes, max_classes).n_calls() == 5


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n_bins=st.sampled_from([2, 10, 100]), n=st.integers(2, 300))
def test_binning_round_trip(seed: int, n_bins: int, n: int) -> None:
    y = np.random.default_rng(seed).standard_exponential(n) * 7 - 3
    b = TargetBinner(n_bins).fit(y)
    cls = b.transform(y)
    assert cls.min() >= 0 and cls.max() == b.n_classes_ - 1
    assert set(np.unique(cls)) == set(range(b.n_classes_))  # no gaps: every class has a training target
    err = np.abs(b.inverse_transform(cls) - y)
    assert err.max() <= b.max_error() + 1e-9
    onehot = np.eye(b.n_classes_)[cls]
    np.testing.assert_allclose(b.expected_value(onehot), b.inverse_transform(cls))


def test_binning_rejects_bad_targets() -> None:
    with pytest.raises(TabzooInputError, match="finite"):
        TargetBinner().fit(np.array([1.0, np.nan]))


def test_selection_warns_when_it_falls_back() -> None:
    import warnings

    from tabzoo_tabflex.selection import ModelFallbackWarning

    with pytest.warns(ModelFallbackWarning, match="L100.*falling back to 'small'"):
        sel = select_model(5000, 10, 2, {"small": CONFIGS["small"]})
    assert sel.name == "small" and sel.preferred == "L100"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the wanted config is available: no warning
        assert select_model(5000, 10, 2, {"L100": CONFIGS["L100"], "small": CONFIGS["small"]}).name == "L100"


def test_estimator_fit_does_not_warn_on_the_documented_fallback() -> None:
    """Issue 28 item 3: every default call warned that no S100 checkpoint ships; "auto" uses the default measured
    on the real-data suite (recorded in ``selection_.reason``), a named checkpoint is the user's choice."""
    import warnings

    from tabzoo_tabflex.estimators import DEFAULT_CHECKPOINT, TabFlexClassifier

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 3)), np.repeat([0, 1], 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        auto = TabFlexClassifier(n_estimators=1).fit(x, y)
        TabFlexClassifier(checkpoint="tabflex-small", n_estimators=1).fit(x, y)
    assert auto.selection_.name == DEFAULT_CHECKPOINT and "S100" in auto.selection_.reason


def test_tabflex_icl_checkpoint_loads_offline_with_metadata() -> None:
    import json

    from tabzoo_tabflex.estimators import _CKPT_DIR, load_tabflex

    meta = json.loads((_CKPT_DIR / "tabflex-icl.json").read_text())
    assert meta["prior"] == "icl" and meta["extra"]["package_version"] and meta["steps"] >= 400
    assert meta["config"]["train_rows"] >= 4096 and meta["extra"]["train_config"]["init_from"]
    model = load_tabflex("tabflex-icl")
    assert model.max_features == 100 and not model.training
    small = load_tabflex("tabflex-small")
    import torch

    assert not torch.equal(model.x_encoder.weight, small.x_encoder.weight)


def test_tabflex_long_checkpoint_loads_offline_with_metadata() -> None:
    """The GPU-pretrained continuation of tabflex-icl (issue 30): longer contexts, same architecture."""
    import json

    import torch
    from tabzoo_tabflex.estimators import _CKPT_DIR, load_tabflex

    meta = json.loads((_CKPT_DIR / "tabflex-long.json").read_text())
    assert meta["prior"] == "icl" and meta["steps"] == 800 and meta["extra"]["episodes_seen"] == 25600
    assert meta["config"]["train_rows"] == 16384
    assert meta["extra"]["train_config"]["init_from"].endswith("tabflex-icl")
    model = load_tabflex("tabflex-long")
    icl = load_tabflex("tabflex-icl")
    assert model.max_features == icl.max_features == 100 and not model.training
    assert not torch.equal(model.x_encoder.weight, icl.x_encoder.weight)
