"""OrionMSPClassifier's ``class_balance`` (context rows of rare classes repeated, the implied prior divided
out by the core) and ``many_class`` (the hierarchical split of appendix A.6, or the core's ECOC)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn", reason="the estimator needs scikit-learn (tabzoo-core[sklearn])")

from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_orion_msp.estimators import MAX_REPEAT, OrionMSPClassifier, RepeatForward  # noqa: E402


def _table(counts: list[int], n_test: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.full(c, i) for i, c in enumerate(counts)])
    X = rng.standard_normal((y.size, 4)) + y[:, None] * 0.8
    return X, y, rng.standard_normal((n_test, 4))


def test_repeat_forward_repeats_rows_by_their_class_weight_up_to_the_cap() -> None:
    hook = RepeatForward(torch.nn.Identity(), strength=1.0)
    # 2 members (the second with shifted labels), 4 rows: class counts 2, 1, 1 -> weights 1, 2, 2
    y = torch.tensor([[0.0, 0.0, 1.0, 2.0], [1.0, 1.0, 2.0, 0.0]])
    x = torch.arange(2 * 4 * 2, dtype=torch.float32).view(2, 4, 2)
    assert hook.encode_context(x, y, None)[0] is x
    xs, ys = hook.encode_context(x, y, torch.ones(1, 4))
    assert xs.shape == (2, 6, 2)
    torch.testing.assert_close(ys, torch.tensor([[0.0, 0.0, 1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0, 0.0, 0.0]]))
    torch.testing.assert_close(xs[:, 2:4], x[:, 2:3].expand(-1, 2, -1))
    big = torch.cat([torch.zeros(1, 1000), torch.ones(1, 1)], dim=1)  # weight 1000, capped
    assert hook.encode_context(torch.zeros(1, 1001, 1), big, torch.ones(1, 1001))[0].shape[1] == 1000 + MAX_REPEAT


def test_class_balance_with_context_subsets() -> None:
    """Members reading class-stratified subsets (``max_context_rows``) repeat their own rows."""
    X, y, q = _table([50, 6])
    est = OrionMSPClassifier(device="cpu", n_estimators=2, max_context_rows=30).fit(X, y)
    p = est.predict_proba(q)
    assert p.shape == (20, 2) and np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=0, atol=1e-9)


def test_class_balance_moves_imbalanced_tables_only() -> None:
    X, y, q = _table([60, 6])
    plain = OrionMSPClassifier(device="cpu", n_estimators=2, class_balance=0).fit(X, y).predict_proba(q)
    balanced = OrionMSPClassifier(device="cpu", n_estimators=2, class_balance=1.0).fit(X, y)
    p = balanced.predict_proba(q)
    np.testing.assert_array_equal(p, balanced.predict_proba(q))  # deterministic
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=0, atol=1e-9)
    assert np.abs(p - plain).max() > 1e-3  # the rare class's 6 rows were read 10 times each
    Xb, yb, qb = _table([30, 30])  # equal counts: every weight is 1, nothing changes
    a = OrionMSPClassifier(device="cpu", n_estimators=2, class_balance=0).fit(Xb, yb).predict_proba(qb)
    b = OrionMSPClassifier(device="cpu", n_estimators=2, class_balance=1.0).fit(Xb, yb).predict_proba(qb)
    np.testing.assert_array_equal(a, b)


def test_many_classes_by_ecoc_or_the_class_tree() -> None:
    X, y, q = _table([8] * 12, n_test=10)
    tree = OrionMSPClassifier(device="cpu", n_estimators=2).fit(X, y).predict_proba(q)
    # ECOC runs one member per code: each reads its own context (failed before the core's
    # _member_inputs picked the called members' entries of _context_subsets)
    ecoc = OrionMSPClassifier(device="cpu", n_estimators=2, many_class="ecoc").fit(X, y).predict_proba(q)
    for p in (tree, ecoc):
        assert p.shape == (10, 12) and np.isfinite(p).all()
        np.testing.assert_allclose(p.sum(1), 1.0, rtol=0, atol=1e-9)
    assert np.abs(tree - ecoc).max() > 1e-3


@pytest.mark.parametrize("kw", [{"class_balance": "x"}, {"class_balance": -1.0}, {"many_class": "tree"}])
def test_bad_balance_or_many_class_options_are_refused_at_fit(kw: dict) -> None:
    X, y, _ = _table([10, 10])
    with pytest.raises(TabzooInputError, match="class_balance|many_class"):
        OrionMSPClassifier(device="cpu", **kw).fit(X, y)
