"""Δm (eq. 5) on hand-computed values, per-task metrics against scikit-learn, and the losses
(ROC-AUC and EV themselves: core tests/test_core_metrics.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo_multitab import (
    TaskSpec,
    delta_m,
    multitask_loss,
    task_losses,
    task_metric,
)


def test_delta_m_hand_computed() -> None:
    # task 1: AUC 0.9 vs 0.8 -> +12.5 %; task 2: equal -> 0; task 3: MSE 2.0 vs 2.5 (lower is better) -> +20 %
    assert delta_m([0.9, 0.5, 2.0], [0.8, 0.5, 2.5], [False, False, True]) == pytest.approx(32.5 / 3)
    assert delta_m([0.9, 0.5, 2.0], [0.8, 0.5, 2.5], [False, False, True], percent=False) == pytest.approx(0.325 / 3)
    # a worse lower-is-better metric counts negative: MSE 3.0 vs 2.0 -> -50 %
    assert delta_m([3.0], [2.0], [True]) == pytest.approx(-50.0)
    # the paper's ACS Income MMoE row: AUC 90.29/88.60 vs STL 90.19/88.54 -> Δm ≈ 0.0893
    assert delta_m([90.29, 88.60], [90.19, 88.54]) == pytest.approx(0.0893, abs=2e-4)
    assert delta_m([0.7, 0.7], [0.7, 0.7]) == 0.0


def test_delta_m_rejects_bad_input() -> None:
    with pytest.raises(TabzooInputError, match="one metric per task"):
        delta_m([0.1, 0.2], [0.1])
    with pytest.raises(TabzooInputError, match="non-zero"):
        delta_m([0.1], [0.0])
    with pytest.raises(TabzooInputError, match="one flag per task"):
        delta_m([0.1, 0.2], [0.1, 0.2], [True])


@given(seed=st.integers(0, 10_000), n=st.integers(4, 40))
def test_metrics_match_sklearn(seed, n) -> None:
    metrics = pytest.importorskip("sklearn.metrics", reason="reference implementation")
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    s = rng.normal(size=n)
    assert task_metric("binary", y, s) == pytest.approx(metrics.roc_auc_score(y, s))
    yr, pr = rng.normal(size=n), rng.normal(size=n)
    assert task_metric("regression", yr, pr) == pytest.approx(metrics.explained_variance_score(yr, pr))
    yc = rng.integers(0, 3, n)
    yc[:3] = [0, 1, 2]
    logits = rng.normal(size=(n, 3))
    proba = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    assert task_metric("multiclass", yc, logits) == pytest.approx(
        metrics.roc_auc_score(yc, proba, multi_class="ovr", average="macro"), abs=1e-9)


def test_task_metric_directions_and_errors() -> None:
    y = np.array([1.0, 2.0, 3.0])
    assert task_metric("regression", y, y, "mse") == 0.0
    assert task_metric("binary", np.array([0, 1, 1]), np.array([-1.0, 2.0, -0.5]), "accuracy") == pytest.approx(2 / 3)
    with pytest.raises(TabzooInputError, match="does not apply"):
        task_metric("binary", np.array([0, 1]), np.array([0.0, 1.0]), "ev")


def test_losses_per_kind_and_weights() -> None:
    tasks = (TaskSpec("b", "binary"), TaskSpec("m", "multiclass", 3), TaskSpec("r", "regression"))
    outs = [torch.tensor([[0.0], [2.0]]), torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), torch.tensor([[1.0], [-1.0]])]
    y = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]])
    per = task_losses(outs, y, tasks)
    bce = (np.log(2) + np.log(1 + np.exp(2.0))) / 2
    ce = ((-1 + np.log(np.exp(1) + 2)) + np.log(3)) / 2
    mse = (1.0 + 4.0) / 2
    np.testing.assert_allclose(per.numpy(), [bce, ce, mse], rtol=1e-5)
    total = multitask_loss(outs, y, tasks, [1.0, 0.0, 2.0])
    assert float(total) == pytest.approx(bce + 2 * mse, rel=1e-5)
    with pytest.raises(TabzooInputError, match="task_weights"):
        multitask_loss(outs, y, tasks, [1.0, -1.0, 1.0])
