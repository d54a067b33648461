"""Per-task model selection (``select="per_task"``): each task predicts with the weights of its own
best validation epoch; training stops when no task has improved for ``patience`` epochs."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sklearn", reason="the estimator needs the sklearn extra")

from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_multitab.config import TaskSpec  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_multitab.selection import PerTaskModel, PerTaskSelector, guard  # noqa: E402

SMALL = dict(
    d_embed=8,
    n_heads=2,
    row_heads=2,
    n_layers=1,
    hidden=(16,),
    batch_size=32,
    n_context=24,
    skip_hidden=16,
    lr=3e-3,
)


def _two_tasks(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A smooth task that keeps improving and a noisy one that overfits early: their best epochs differ."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = np.stack([X[:, 0] + 0.5 * X[:, 1] ** 2, 0.3 * X[:, 2] + 2.0 * rng.normal(size=n)], 1)
    return X, Y


def _fit(select: str, **kw: object) -> tuple[MultiTabEstimator, tuple[np.ndarray, np.ndarray]]:
    X, Y = _two_tasks(120, 0)
    val = _two_tasks(60, 1)
    params = (
        dict(SMALL, task_types=["regression"] * 2, max_epochs=14, patience=4, select=select) | kw
    )
    return MultiTabEstimator(**params).fit(X, Y, eval_set=val), val  # type: ignore[arg-type]


def test_select_is_validated() -> None:
    X, Y = _two_tasks(30, 0)
    with pytest.raises(TabzooInputError, match="select=.best.*joint.*per_task.*guarded"):
        MultiTabEstimator(select="best", **SMALL).fit(X, Y)  # type: ignore[arg-type]


def test_each_task_predicts_with_its_own_best_epoch_and_stops_on_the_last_improvement() -> None:
    est, (Xv, Yv) = _fit("per_task", early_stopping="metric")
    hist = est.fit_result_.history
    per_task = np.array([h["val_metrics"] for h in hist])  # [epochs, tasks]
    # each task's epoch is the first argmax of its own validation metric ...
    assert est.task_epochs_ == [int(np.argmax(per_task[:, t])) for t in range(2)]
    assert len(set(est.task_epochs_)) == 2, (
        "the draw should give the two tasks different best epochs"
    )
    # ... and its predictions are those weights: the validation scores are that epoch's, task by task
    np.testing.assert_allclose(est.task_scores(Xv, Yv), per_task.max(0), rtol=1e-5)
    # the run stops `patience` epochs after the last epoch where some task improved
    if est.fit_result_.stopped_early:
        assert est.n_epochs_ - 1 - max(est.task_epochs_) == est.patience
    joint, _ = _fit("joint", early_stopping="metric")
    assert joint.task_epochs_ == [joint.fit_result_.best_epoch] * 2
    assert np.mean(est.task_scores(Xv, Yv)) >= np.mean(joint.task_scores(Xv, Yv))


def test_per_task_selection_is_deterministic_and_survives_pickle() -> None:
    a, (Xv, _) = _fit("per_task")
    b, _ = _fit("per_task")
    assert a.task_epochs_ == b.task_epochs_
    np.testing.assert_array_equal(a.predict(Xv), b.predict(Xv))
    c = pickle.loads(pickle.dumps(a))  # every task's weights travel with the estimator
    np.testing.assert_array_equal(c.predict(Xv), a.predict(Xv))
    assert c.task_model_ is not None and len(c.task_model_.nets) == len(set(a.task_epochs_))


@pytest.mark.parametrize("monitor", ["loss", "metric"])
def test_with_one_task_per_task_selection_is_joint_selection(monitor: str) -> None:
    X, Y = _two_tasks(120, 0)
    Xv, Yv = _two_tasks(60, 1)
    fits = [
        MultiTabEstimator(
            **SMALL,
            max_epochs=10,
            patience=3,
            early_stopping=monitor,  # type: ignore[arg-type]
            select=s,
        ).fit(X, Y[:, 1], eval_set=(Xv, Yv[:, 1]))
        for s in ("joint", "per_task")
    ]
    assert fits[0].n_epochs_ == fits[1].n_epochs_ and fits[1].task_epochs_ == [
        fits[0].fit_result_.best_epoch
    ]
    np.testing.assert_array_equal(fits[0].predict(Xv), fits[1].predict(Xv))


def test_selector_keeps_a_copy_per_improvement_and_nan_never_improves() -> None:
    net = torch.nn.Linear(2, 2)
    sel = PerTaskSelector(2)
    for scores in ([3.0, 1.0], [2.0, float("nan")], [2.5, 0.5], [2.0, 0.7]):
        with torch.no_grad():
            net.weight.add_(1.0)  # a different weight per epoch
        sel.update(net, scores)
    assert sel.epochs == [1, 2] and sel.best == [2.0, 0.5]  # 2.0 again is not an improvement
    tasks = [TaskSpec("a", "regression"), TaskSpec("b", "regression")]
    model = sel.model(net, tasks)
    assert isinstance(model, PerTaskModel) and model.task_epochs == [1, 2]
    x = torch.randn(5, 2)
    for t, epoch in enumerate([1, 2]):
        ref = torch.nn.Linear(2, 2)
        ref.load_state_dict(net.state_dict())
        with torch.no_grad():
            ref.weight.sub_(4 - (epoch + 1))  # the weights after epoch `epoch`
        torch.testing.assert_close(model(x)[:, t], ref(x)[:, t])


# -- guarded selection ------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(n=st.integers(10, 300), seed=st.integers(0, 2**31 - 1))
def test_guard_rarely_keeps_the_own_epoch_on_pure_noise(n: int, seed: int) -> None:
    """Two epochs whose per-row losses are draws of one distribution: the guard must fall back.
    One-sided z = 2 lets ~2.3 % through per pair; over 50 pairs per example we allow 6."""
    rng = np.random.default_rng(seed)
    kept = sum(guard(rng.exponential(size=n), rng.exponential(size=n))[0] for _ in range(50))
    assert kept <= 6


def test_guard_keeps_a_clear_gain_and_refuses_a_loss_or_no_rows() -> None:
    rng = np.random.default_rng(0)
    joint = rng.exponential(size=200)
    assert guard(joint * 0.7, joint) == (True, pytest.approx(guard(joint * 0.7, joint)[1]))
    assert guard(joint * 0.7, joint)[1] > 2.0
    assert guard(joint * 1.3, joint)[0] is False  # the own epoch is worse
    assert guard(joint, joint) == (False, 0.0)  # no difference, no evidence
    assert guard(joint[:1] * 0.5, joint[:1])[0] is False  # one row is no evidence


def _selector_with_rows(own_gain: float, n: int = 200) -> PerTaskSelector:
    """Epoch 0: the joint best (task 0 at its best); epoch 1: task 1's own best, its per-row losses
    ``own_gain`` lower than at epoch 0 (plus noise)."""
    rng = np.random.default_rng(1)
    base = rng.exponential(size=(n, 2))
    sel = PerTaskSelector(2)
    net = torch.nn.Linear(2, 2)
    sel.update(net, [1.0, 1.0], joint=2.0, rows=base)
    with torch.no_grad():
        net.weight.add_(1.0)
    second = base.copy()
    second[:, 0] += 0.2
    second[:, 1] = base[:, 1] * (1.0 - own_gain) + rng.normal(0, 0.05, size=n)
    sel.update(net, [1.2, 1.0 - own_gain - 1e-3], joint=2.1, rows=second)  # the joint best stays epoch 0
    return sel


def test_guarded_choice_falls_back_without_evidence_and_keeps_a_clear_peak() -> None:
    weak = _selector_with_rows(0.001).guarded()
    assert [c["weights"] for c in weak] == ["joint", "joint"] and [c["epoch"] for c in weak] == [0, 0]
    assert weak[1]["own_epoch"] == 1 and weak[1]["z"] is not None and weak[1]["z"] < 2.0
    strong = _selector_with_rows(0.5).guarded()
    assert [c["weights"] for c in strong] == ["joint", "own"] and [c["epoch"] for c in strong] == [0, 1]
    assert strong[1]["z"] > 2.0 and "standard errors" in strong[1]["reason"]
    sel = _selector_with_rows(0.5)
    model = sel.model(torch.nn.Linear(2, 2), [TaskSpec("a", "regression"), TaskSpec("b", "regression")], strong)
    assert model.task_epochs == [0, 1] and len(model.nets) == 2


def test_guarded_estimator_is_deterministic_and_records_its_choice() -> None:
    a, (Xv, _) = _fit("guarded", early_stopping="metric")
    b, _ = _fit("guarded", early_stopping="metric")
    p, _ = _fit("per_task", early_stopping="metric")
    assert a.n_epochs_ == p.n_epochs_  # the same training run as per-task selection
    assert a.selection_ == b.selection_ and a.task_epochs_ == b.task_epochs_
    np.testing.assert_array_equal(a.predict(Xv), b.predict(Xv))
    for c, own in zip(a.selection_, p.task_epochs_, strict=True):
        assert c["own_epoch"] == own and c["weights"] in ("own", "joint")
        assert c["epoch"] == (own if c["weights"] == "own" else c["joint_epoch"])
    assert a.task_epochs_ == [c["epoch"] for c in a.selection_]
    joint = [c["joint_epoch"] for c in a.selection_]
    hist = a.fit_result_.history
    assert joint[0] == int(np.argmax([h["val_mean"] for h in hist]))  # the joint-best epoch of the run
    j, _ = _fit("joint", early_stopping="metric")
    assert j.selection_[0]["weights"] == "joint" and j.selection_[0]["reason"] == "joint selection"
