"""Per-task model selection (``select="per_task"``): each task predicts with the weights of its own
best validation epoch; training stops when no task has improved for ``patience`` epochs."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn", reason="the estimator needs the sklearn extra")

from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_multitab.config import TaskSpec  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_multitab.selection import PerTaskModel, PerTaskSelector  # noqa: E402

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
    with pytest.raises(TabzooInputError, match="select='best'.*joint.*per_task"):
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
