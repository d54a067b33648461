"""SCM and tree SCM priors: shapes, ranges, determinism, data properties."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo_priors import ACTIVATIONS, SCMPrior, TreeSCMPrior
from tabzoo_priors.activations import apply_activations, random_fourier

PRIORS = [SCMPrior, TreeSCMPrior]


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(torch.nan_to_num(a, nan=-123.0), torch.nan_to_num(b, nan=-123.0))


def test_activation_list_is_orion_b11():
    expected = {"identity", "tanh", "leaky_relu", "elu", "relu", "relu6", "selu", "silu",
                "softplus", "hardtanh", "sign", "sin", "rbf", "exp", "sqrt_abs", "square", "abs",
                "indicator", "random_fourier"}
    assert set(ACTIVATIONS) == expected


def test_apply_activations_matches_per_node_function():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(2, 50, len(ACTIVATIONS), generator=g)
    codes = torch.arange(len(ACTIVATIONS)).repeat(2, 1)
    out = apply_activations(h, codes, torch.Generator().manual_seed(1))
    i = ACTIVATIONS.index
    torch.testing.assert_close(out[:, :, i("tanh")], torch.tanh(h[:, :, i("tanh")]))
    torch.testing.assert_close(out[:, :, i("square")], h[:, :, i("square")] ** 2)
    torch.testing.assert_close(out[:, :, i("rbf")], torch.exp(-h[:, :, i("rbf")] ** 2))
    ind = out[:, :, i("indicator")]
    assert set(ind.unique().tolist()) <= {0.0, 1.0}
    assert torch.isfinite(out).all()


def test_random_fourier_is_smooth_bounded_and_varied():
    g = torch.Generator().manual_seed(0)
    x = torch.linspace(-3, 3, 2001).repeat(4, 1)
    f = random_fourier(x, g)
    # |f| <= ||w/||w|| * z||_1 is finite; functions differ per node and are not constant
    assert torch.isfinite(f).all()
    assert (f.std(dim=1) > 1e-3).all()
    assert not torch.allclose(f[0], f[1])


@pytest.mark.parametrize("cls", PRIORS)
def test_determinism_and_seed_sensitivity(cls):
    p = cls(n_rows=(64, 128), n_features=(3, 8), missing_share=(0.1, 0.2))
    a = p.sample_raw(4, seed=7)
    b = p.sample_raw(4, seed=7)
    c = p.sample_raw(4, seed=8)
    assert _same(a.x, b.x) and torch.equal(a.y, b.y) and a.n_context == b.n_context
    assert not (a.x.shape == c.x.shape and _same(a.x, c.x))


@pytest.mark.parametrize("cls", PRIORS)
def test_global_rng_untouched(cls):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    cls(n_rows=(32, 32)).sample_raw(2, seed=0)
    assert torch.equal(torch.rand(3), expected)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**40),
    rows=st.tuples(st.integers(40, 120), st.integers(0, 80)),
    feats=st.tuples(st.integers(1, 6), st.integers(0, 10)),
    classes=st.tuples(st.integers(2, 4), st.integers(0, 4)),
    tree=st.booleans(),
)
def test_shapes_and_ranges_honoured(seed, rows, feats, classes, tree):
    n_rows = (rows[0], rows[0] + rows[1])
    n_features = (feats[0], feats[0] + feats[1])
    n_classes = (classes[0], classes[0] + classes[1])
    cls = TreeSCMPrior if tree else SCMPrior
    r = cls(n_rows=n_rows, n_features=n_features, n_classes=n_classes).sample_raw(3, seed=seed)
    b, n, f = r.x.shape
    assert b == 3 and n_rows[0] <= n <= n_rows[1]
    counts = r.feature_mask.sum(1)
    assert (counts >= n_features[0]).all() and (counts <= n_features[1]).all()
    assert f == int(counts.max())
    assert ((r.n_classes >= n_classes[0]) & (r.n_classes <= n_classes[1])).all()
    assert 1 <= r.n_context < n
    for i in range(b):
        k = int(r.n_classes[i])
        labels = r.y[i]
        assert set(labels.unique().long().tolist()) == set(range(k))  # every class occurs
        assert set(labels[: r.n_context].unique().long().tolist()) == set(range(k))  # in context
    assert (r.x[~r.feature_mask.unsqueeze(1).expand_as(r.x)] == 0).all()  # zero padding


@pytest.mark.parametrize("cls", PRIORS)
def test_categorical_columns_are_discrete(cls):
    r = cls(n_rows=(200, 200), n_features=(10, 10), categorical_share=(0.5, 0.5),
            max_categories=6, missing_share=(0, 0)).sample_raw(6, seed=3)
    assert r.categorical.any()
    x = r.x.permute(0, 2, 1)[r.categorical]  # [n_cat, rows]
    assert torch.equal(x, x.round())
    assert x.min() >= 0 and x.max() <= 5
    n_levels = torch.tensor([c.unique().numel() for c in x])
    assert (n_levels >= 2).all() and (n_levels <= 6).all()
    cont = r.x.permute(0, 2, 1)[r.feature_mask & ~r.categorical]
    assert max(c.unique().numel() for c in cont) > 50  # numeric columns stay continuous


@pytest.mark.parametrize("share", [0.0, 0.1, 0.3])
def test_missing_share_roughly_as_configured(share):
    r = SCMPrior(n_rows=(256, 256), n_features=(10, 10), missing_share=(share, share)).sample_raw(8, seed=1)
    real = r.feature_mask.unsqueeze(1).expand_as(r.x)
    frac = torch.isnan(r.x[real]).float().mean().item()
    assert abs(frac - share) < 0.02
    assert torch.equal(torch.isnan(r.x), r.missing)


def test_irrelevant_features_independent_of_target():
    p = SCMPrior(n_rows=(2000, 2000), n_features=(10, 10), irrelevant_share=(0.3, 0.3),
                 missing_share=(0, 0), categorical_share=(0, 0), task="regression")
    r = p.sample_raw(8, seed=5)
    assert r.irrelevant.any() and (~r.irrelevant & r.feature_mask).any()

    def abs_corr(col, y):
        col, y = col - col.mean(), y - y.mean()
        return float((col * y).sum() / (col.norm() * y.norm() + 1e-12)).__abs__()

    irr = [abs_corr(r.x[i, :, j], r.y[i]) for i, j in r.irrelevant.nonzero().tolist()]
    # n = 2000: sd of a null correlation is ~0.022, so 0.1 is > 4 sd
    assert max(irr) < 0.1
    rel = [abs_corr(r.x[i, :, j], r.y[i]) for i, j in (~r.irrelevant & r.feature_mask).nonzero().tolist()]
    assert max(rel) > 0.1  # some relevant feature does carry signal


def test_balanced_and_imbalanced_classes():
    kw = dict(n_rows=(1000, 1000), n_classes=(4, 4), min_class_fraction=0.02)
    bal = SCMPrior(imbalanced_prob=0.0, **kw).sample_raw(6, seed=2)
    imb = SCMPrior(imbalanced_prob=1.0, **kw).sample_raw(6, seed=2)

    def fractions(r):
        return torch.stack([torch.bincount(r.y[i].long(), minlength=4).float() / 1000 for i in range(6)])

    fb, fi = fractions(bal), fractions(imb)
    assert (fb - 0.25).abs().max() < 0.005
    assert (fi.max(1).values - fi.min(1).values).mean() > 0.1
    assert fi.min() >= 0.02 - 1e-3


@pytest.mark.parametrize("cls", PRIORS)
def test_regression_targets_finite_and_standardised(cls):
    r = cls(task="regression", n_rows=(300, 300)).sample_raw(8, seed=4)
    assert r.task == "regression" and (r.n_classes == 0).all()
    assert torch.isfinite(r.y).all()
    assert r.y.mean(1).abs().max() < 1e-4
    assert (r.y.std(1, unbiased=False) - 1).abs().max() < 1e-3


def test_mixed_task_gives_both():
    p = SCMPrior(task="mixed", regression_prob=0.5, n_rows=(32, 32))
    tasks = {p.sample_raw(1, seed=s).task for s in range(20)}
    assert tasks == {"classification", "regression"}


def test_tree_prior_is_piecewise_constant_without_noise():
    from tabzoo_priors.trees import tree_layer

    g = torch.Generator().manual_seed(0)
    h = torch.randn(2, 500, 3, generator=g)
    out = tree_layer(h, 4, 1, (1, 2), g)
    for b in range(2):
        for j in range(4):
            assert out[b, :, j].unique().numel() <= 4  # depth <= 2: at most 4 leaves


def test_tree_depth_one_is_a_single_split():
    from tabzoo_priors.trees import tree_layer

    g = torch.Generator().manual_seed(1)
    h = torch.randn(1, 400, 2, generator=g)
    out = tree_layer(h, 6, 1, (1, 1), g)
    assert all(out[0, :, j].unique().numel() <= 2 for j in range(6))


@pytest.mark.parametrize("bad", [dict(n_rows=(10, 5)), dict(task="ranking"), dict(hidden=(0, 3)),
                                 dict(n_classes=(15, 20), n_rows=(40, 40)), dict(colour="blue")])
def test_bad_config_raises(bad):
    with pytest.raises(TabzooInputError):
        SCMPrior(**bad)


def test_bad_seed_raises():
    with pytest.raises(TabzooInputError, match="seed"):
        SCMPrior().sample_raw(2, seed="x")


@pytest.mark.slow
@pytest.mark.parametrize("cls", PRIORS)
def test_500_seeds_no_nan_or_inf(cls):
    """500 seeds of 1024 x 20 episodes: no NaN/inf except intended missing cells."""
    p = cls(n_rows=(1024, 1024), n_features=(20, 20), task="mixed")
    for start in range(0, 500, 50):  # 50 datasets per call -> 10 calls
        r = p.sample_raw(50, seed=start)
        assert torch.isfinite(r.x[~r.missing]).all()
        assert torch.isnan(r.x[r.missing]).all()
        assert torch.isfinite(r.y).all()
        assert not math.isnan(float(r.x.nan_to_num().abs().max()))
