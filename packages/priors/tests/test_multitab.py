"""MultiTab-Bench and the MMoE two-task generator."""

import itertools

import pytest
import torch
from tabzoo.errors import TabzooInputError
from tabzoo_priors import MMoEPrior, MultiTabBench, correlated_weights


def _cos(W):
    Wn = W / W.norm(dim=1, keepdim=True)
    return Wn @ Wn.T


@pytest.mark.parametrize("t,p", [(2, 0.0), (3, 0.6), (5, 0.2), (7, 1.0), (4, -0.2)])
def test_weight_cosines_equal_P(t, p):
    W, P = correlated_weights(t, 32, p, torch.Generator().manual_seed(t))
    assert W.shape == (t, 32)
    assert torch.allclose(_cos(W), P, atol=1e-6, rtol=0)
    assert torch.allclose(W.norm(dim=1), torch.ones(t, dtype=W.dtype), atol=1e-6)


def test_invalid_correlation_rejected():
    with pytest.raises(TabzooInputError):
        correlated_weights(3, 8, -0.9, torch.Generator())
    with pytest.raises(TabzooInputError):
        MultiTabBench(n_tasks=3, degrees=[1, 2])


def _mean_label_corr(y):
    c = torch.corrcoef(y.T)
    t = c.shape[0]
    return float(c[~torch.eye(t, dtype=torch.bool)].mean())


def test_label_correlation_rises_with_p():
    means = []
    for p in (0.0, 0.3, 0.6, 0.9):
        vals = [_mean_label_corr(MultiTabBench(n_tasks=3, p=p, degrees=2, sizes=(4000, 10, 10))
                                 .sample(seed=s).train.y) for s in range(3)]
        means.append(sum(vals) / len(vals))
    assert all(a < b for a, b in itertools.pairwise(means)), means
    assert means[-1] > 0.6 and abs(means[0]) < 0.15


def test_degree_one_label_correlation_equals_p():
    s = MultiTabBench(n_tasks=4, p=0.5, degrees=1, noise=0.0, sizes=(20000, 10, 10)).sample(seed=0)
    assert abs(_mean_label_corr(s.train.y) - 0.5) < 0.03


def test_splits_are_independent_draws_sharing_W():
    gen = MultiTabBench(n_tasks=3, p=0.6, degrees=[2, 3, 4], noise=[0.01, 0.1, 0.5], sizes=(200, 100, 100))
    s = gen.sample(seed=1)
    assert s.train.x.shape == (200, 32) and s.val.y.shape == (100, 3) and s.test.y.shape == (100, 3)
    assert not torch.equal(s.val.x, s.test.x) and not torch.equal(s.train.x[:100], s.test.x)
    # every split follows the same W: labels minus the noise-free polynomial are small
    for part in (s.train, s.val, s.test):
        z = part.x.double() @ s.W.T
        poly = torch.stack([sum(z[:, i] ** k for k in range(1, d + 1)) for i, d in enumerate((2, 3, 4))], 1)
        resid = (part.y.double() - poly).std(0)
        assert resid[0] < 0.02 and resid[1] < 0.2 and resid[2] < 1.0
    again = gen.sample(seed=1)
    assert torch.equal(again.test.y, s.test.y)


def test_multitarget_table_wrapper():
    pytest.importorskip("tabzoo.table", reason="needs the core's tabzoo.table")
    s = MultiTabBench(n_tasks=2, sizes=(20, 5, 5)).sample(seed=0)
    mt = s.train.to_multitarget_table()
    assert mt.features.n_rows == 20 and mt.targets.n_columns == 2


def test_mmoe_two_task_correlation():
    corr = []
    for p in (0.0, 0.5, 0.95):
        s = MMoEPrior(p=p, sizes=(5000, 10, 10)).sample(seed=2)
        assert torch.allclose(_cos(s.W)[0, 1], torch.tensor(p, dtype=torch.float64), atol=1e-6)
        corr.append(float(torch.corrcoef(s.train.y.T)[0, 1]))
    assert corr[0] < corr[1] < corr[2]
