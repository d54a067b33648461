"""Training: losses, stratified batches, λ annealing, modes, early stopping, progress bar."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo_npt.model import NPT, NPTConfig
from tabzoo_npt.predict import context_indices, predict_cells
from tabzoo_npt.train import (
    NPTFitConfig,
    cell_losses,
    fit_npt,
    lambda_schedule,
    objective,
    stratified_batches,
)


def _table(n: int = 60, seed: int = 0) -> np.ndarray:
    """Two numeric features, a 3-class categorical feature and a numeric target = x0 + class."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2))
    c = rng.integers(0, 3, n)
    y = x[:, 0] + c - 1
    return np.column_stack([x, c, y]).astype(np.float32)


def _model(cards=(0, 0, 3, 0), seed: int = 0) -> NPT:
    torch.manual_seed(seed)
    return NPT(NPTConfig(cardinalities=cards, dim=8, n_layers=2, n_heads=2, ff_mult=2, dropout=0.0))


@given(n=st.integers(1, 200), bs=st.integers(2, 64), k=st.integers(1, 5), seed=st.integers(0, 1000))
def test_stratified_batches_partition_rows_and_keep_class_shares(n: int, bs: int, k: int, seed: int) -> None:
    strata = np.random.default_rng(seed).integers(0, k, n)
    batches = stratified_batches(n, bs, np.random.default_rng(seed), strata)
    assert sorted(np.concatenate(batches).tolist()) == list(range(n))
    assert all(len(b) <= bs for b in batches) and len(batches) == -(-n // bs)
    for cls in range(k):
        total = int((strata == cls).sum())
        for b in batches:  # each batch holds its share of every class: floor or ceil of total / n_batches
            got = int((strata[b] == cls).sum())
            assert total // len(batches) <= got <= -(-total // len(batches))


def test_cell_losses_mse_and_cross_entropy() -> None:
    cards = torch.tensor([0, 3])
    logits = torch.zeros(1, 2, 3)
    logits[0, 0, 0] = 2.0
    logits[0, 1] = torch.tensor([0.0, 1.0, 0.0])
    values = torch.tensor([[0.5, 1.0]])
    out = cell_losses(logits, values, cards)
    assert out[0, 0] == pytest.approx(2.25)
    assert out[0, 1] == pytest.approx(float(-torch.log_softmax(torch.tensor([0.0, 1.0, 0.0]), 0)[1]))
    two = torch.zeros(1, 2, 3)
    two[0, 1] = torch.tensor([0.0, 1.0, 50.0])  # slot 2 of a 2-class attribute is never a class
    ce2 = cell_losses(two, torch.tensor([[0.0, 1.0]]), torch.tensor([0, 2]))
    assert ce2[0, 1] == pytest.approx(float(-torch.log_softmax(torch.tensor([0.0, 1.0]), 0)[1]))


def test_each_loss_term_is_normalised_by_its_count() -> None:
    per_cell = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    feat = torch.tensor([[True, True, False], [False, False, False]])  # mean 1.5
    tgt = torch.tensor([[False, False, True], [False, False, True]])  # mean 4.5
    assert float(objective(per_cell, feat, tgt, 1.0)) == pytest.approx(1.5)
    assert float(objective(per_cell, feat, tgt, 0.0)) == pytest.approx(4.5)
    assert float(objective(per_cell, feat, tgt, 0.25)) == pytest.approx(0.25 * 1.5 + 0.75 * 4.5)
    # doubling the number of selected target cells with the same losses leaves the term unchanged
    big = per_cell.repeat(2, 1)
    assert float(objective(big, feat.repeat(2, 1), tgt.repeat(2, 1), 0.25)) == pytest.approx(0.25 * 1.5 + 0.75 * 4.5)
    nothing = torch.zeros_like(feat)
    assert float(objective(per_cell, nothing, tgt, 1.0)) == 0.0


def test_training_reduces_the_target_loss_and_predicts() -> None:
    m = _model()
    data = _table(80)
    cfg = NPTFitConfig(steps=60, lr=1e-2, flat_fraction=0.5, seed=0)
    res = fit_npt(m, data[:60], (3,), cfg)
    assert res.steps == 60 and len(res.losses) == 60
    hide = np.zeros((20, 4), dtype=bool)
    hide[:, 3] = True
    pred = predict_cells(m, data[:60], data[60:], hide)[:, 3, 0].numpy()
    rmse = float(np.sqrt(np.mean((pred - data[60:, 3]) ** 2)))
    assert rmse < 0.8 * float(data[60:, 3].std())


def test_early_stopping_restores_the_best_weights() -> None:
    m = _model()
    data = _table(80)
    cfg = NPTFitConfig(steps=200, lr=5e-2, eval_every=5, patience=2, seed=0)
    res = fit_npt(m, data[:60], (3,), cfg, validation=data[60:])
    assert res.val_losses and res.best_step in [s for s, _ in res.val_losses]
    assert res.best_loss == min(v for _, v in res.val_losses)
    if res.stopped_early:
        assert res.steps < 200


def test_missing_values_are_masked_cells_and_never_in_the_loss() -> None:
    m = _model()
    data = _table(50)
    data[::3, 0] = np.nan
    data[::5, 2] = np.nan
    res = fit_npt(m, data, (3,), NPTFitConfig(steps=5, seed=0))
    assert np.isfinite(res.losses).all()


def test_multi_target_and_pure_imputation() -> None:
    data = _table(50)
    m = _model()
    res = fit_npt(m, data, (2, 3), NPTFitConfig(steps=5, seed=0))  # a categorical and a numeric target
    assert np.isfinite(res.losses).all()
    m2 = _model()
    res2 = fit_npt(m2, data, (), NPTFitConfig(steps=5, seed=0))  # imputation: feature loss only
    assert np.isfinite(res2.losses).all()


def test_unlabeled_rows_need_an_explicit_mode() -> None:
    data = _table(30)
    with pytest.raises(TabzooInputError, match="semi_supervised"):
        fit_npt(_model(), data, (3,), NPTFitConfig(steps=1), unlabeled=data[:5])
    res = fit_npt(_model(), data, (3,), NPTFitConfig(steps=3, mode="semi_supervised"), unlabeled=data[:5])
    assert res.steps == 3
    with pytest.raises(TabzooInputError, match="mode"):
        NPTFitConfig(mode="psychic")


def test_progress_bar_is_switchable(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm", reason="the progress bar needs tqdm (tabzoo-npt[progress])")
    data = _table(20)
    fit_npt(_model(), data, (3,), NPTFitConfig(steps=3, progress=False))
    assert "npt fit" not in capsys.readouterr().err
    fit_npt(_model(), data, (3,), NPTFitConfig(steps=3, progress=True))
    assert "npt fit" in capsys.readouterr().err


def test_prediction_does_not_depend_on_batch_composition() -> None:
    m = _model()
    data = _table(70)
    fit_npt(m, data[:50], (3,), NPTFitConfig(steps=5, seed=0))
    q = data[50:]
    hide = np.zeros(q.shape, dtype=bool)
    hide[:, 3] = True
    full = predict_cells(m, data[:50], q, hide, chunk_size=256)
    chunked = predict_cells(m, data[:50], q, hide, chunk_size=3)
    p = np.random.default_rng(0).permutation(len(q))
    shuffled = predict_cells(m, data[:50], q[p], hide[p], chunk_size=7)
    single = torch.cat([predict_cells(m, data[:50], q[i:i + 1], hide[i:i + 1]) for i in range(len(q))])
    # bit for bit at one chunk size (each chunk padded to it, a row's own key in a fixed column) ...
    assert torch.equal(single, full)
    assert torch.equal(shuffled[np.argsort(p)], predict_cells(m, data[:50], q, hide, chunk_size=7))
    # ... and equal up to float rounding at another chunk size (the CPU GEMM rounds tiny shapes differently)
    assert torch.allclose(chunked, full, atol=1e-5)
    # query targets are hidden: their values change nothing
    q2 = q.copy()
    q2[:, 3] += 100.0
    assert torch.allclose(predict_cells(m, data[:50], q2, hide), full, atol=1e-6)


def test_lambda_schedule_anneals_from_features_to_targets() -> None:
    assert lambda_schedule(0, 10) == 1.0 and lambda_schedule(10, 10) == pytest.approx(0.0, abs=1e-12)
    assert lambda_schedule(5, 10) == pytest.approx(0.5)
    assert lambda_schedule(3, 10) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.3)))


def test_anneal_fraction_ends_the_trade_off_early_and_lets_early_stopping_act_from_then() -> None:
    """``anneal_fraction``: ``lam`` reaches 0 at ``anneal_fraction * steps`` and stays there; the fit
    may stop early from that step on (the default 1 keeps the old rule: not before half the budget)."""
    assert lambda_schedule(30, 20) == 0.0 and lambda_schedule(10, 20) == pytest.approx(0.5)
    base = NPTFitConfig(steps=1200, flat_fraction=0.5)
    assert (base.anneal_steps, base.min_steps) == (1200, 600)
    short = NPTFitConfig(steps=1200, flat_fraction=0.5, anneal_fraction=0.25)
    assert (short.anneal_steps, short.min_steps) == (300, 300)
    assert short.fit_config().min_steps == 300
    with pytest.raises(TabzooInputError, match="anneal_fraction"):
        NPTFitConfig(anneal_fraction=0.0)
    data = _table(80)
    cfg = NPTFitConfig(steps=60, lr=1e-2, batch_size=64, eval_every=2, patience=1, anneal_fraction=0.1, flat_fraction=0.5)
    res = fit_npt(_model(), data[:60], (3,), cfg, validation=data[60:])
    assert res.stopped_early and 6 <= res.steps < 30  # stopped before half the budget, never before step 6


def test_fixed_context_is_seeded() -> None:
    a = context_indices(1000, 64, seed=5)
    assert np.array_equal(a, context_indices(1000, 64, seed=5)) and len(np.unique(a)) == 64
    assert not np.array_equal(a, context_indices(1000, 64, seed=6))
    assert np.array_equal(context_indices(10, 64, seed=5), np.arange(10))


def test_renamed_train_config_stays_importable_with_a_warning() -> None:
    """NPT's ``TrainConfig`` was renamed ``NPTFitConfig`` (issue 31: the core's pretraining config had the name)."""
    import tabzoo_npt
    from tabzoo_npt import train

    for module in (tabzoo_npt, train):
        with pytest.warns(DeprecationWarning, match="NPTFitConfig"):
            assert module.TrainConfig is NPTFitConfig
    assert "TrainConfig" not in tabzoo_npt.__all__ and "NPTFitConfig" in tabzoo_npt.__all__
