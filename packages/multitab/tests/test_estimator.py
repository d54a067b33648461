"""MultiTabEstimator: mixed tasks, fixed-context predictions, early stopping, bad input."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the estimator needs the sklearn extra")

from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402

SMALL = dict(d_embed=8, n_heads=2, row_heads=2, n_layers=1, hidden=(16,), max_epochs=4, batch_size=32,
             n_context=24, patience=2)


def _mixed(n: int = 90, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    cat = rng.choice(np.array(["a", "b", "c"], dtype=object), n)
    Xo = np.empty((n, 5), dtype=object)
    Xo[:, :4] = X
    Xo[:, 4] = cat
    z = X[:, 0] + X[:, 1]
    Y = np.empty((n, 3), dtype=object)
    Y[:, 0] = np.where(z > 0, "yes", "no")
    Y[:, 1] = np.digitize(X[:, 2], [-0.5, 0.5])
    Y[:, 2] = 3.0 * z + 0.1 * rng.normal(size=n)
    return Xo, Y


def test_mixed_tasks_fit_predict_proba() -> None:
    Xo, Y = _mixed()
    est = MultiTabEstimator(task_types=["binary", "multiclass", "regression"], **SMALL).fit(Xo, Y)
    assert [t.kind for t in est.tasks_] == ["binary", "multiclass", "regression"]
    pred = est.predict(Xo[:7])
    assert pred.shape == (7, 3)
    assert set(pred[:, 0]) <= {"yes", "no"} and set(pred[:, 1]) <= {0, 1, 2}
    proba = est.predict_proba(Xo[:7])
    assert len(proba) == 2 and proba[0].shape == (7, 2) and proba[1].shape == (7, 3)
    np.testing.assert_allclose(proba[1].sum(1), 1.0, rtol=1e-6)
    assert len(est.fit_result_.history) == est.n_epochs_ >= 1
    assert "val_mean" in est.fit_result_.history[0]


def test_predictions_do_not_depend_on_batch_composition() -> None:
    """Each query row is read against the same fixed, seeded context: predicting it alone, in
    another order, or among other rows gives the same output."""
    Xo, Y = _mixed()
    est = MultiTabEstimator(task_types=["binary", "multiclass", "regression"], **SMALL).fit(Xo, Y)
    full = np.concatenate(est.predict_outputs(Xo[:20]), axis=1)
    alone = np.concatenate(est.predict_outputs(Xo[5:6]), axis=1)
    np.testing.assert_allclose(alone[0], full[5], rtol=1e-5, atol=1e-5)
    perm = np.random.default_rng(1).permutation(20)
    shuffled = np.concatenate(est.predict_outputs(Xo[:20][perm]), axis=1)
    np.testing.assert_allclose(shuffled, full[perm], rtol=1e-5, atol=1e-5)
    others = np.concatenate([Xo[:3], _mixed(30, seed=9)[0]])
    mixed_in = np.concatenate(est.predict_outputs(others), axis=1)
    np.testing.assert_allclose(mixed_in[:3], full[:3], rtol=1e-5, atol=1e-5)
    again = MultiTabEstimator(task_types=["binary", "multiclass", "regression"], **SMALL).fit(Xo, Y)
    np.testing.assert_array_equal(np.concatenate(again.predict_outputs(Xo[:20]), 1), full)


def test_unseen_category_at_predict_does_not_crash() -> None:
    Xo, Y = _mixed()
    est = MultiTabEstimator(task_types=["binary", "multiclass", "regression"], **SMALL).fit(Xo, Y)
    Xq = Xo[:4].copy()
    Xq[0, 4] = "never-seen"
    Xq[1, 4] = None
    assert est.predict(Xq).shape == (4, 3)
    assert est.encoder_.transform(Xq)[1][:2, 0].tolist() == [0, 0]


@pytest.mark.parametrize("arch", ["stl", "shared_bottom", "mmoe", "ple"])
def test_baseline_architectures(arch) -> None:
    Xo, Y = _mixed()
    est = MultiTabEstimator(architecture=arch, task_types=["binary", "multiclass", "regression"], **SMALL).fit(Xo, Y)
    assert est.context_ is None
    assert est.predict(Xo[:5]).shape == (5, 3)
    Xt, Yt = _mixed(40, seed=3)  # held-out rows
    assert len(est.task_scores(Xt, Yt)) == 3


def test_learns_a_linear_regression_target_on_held_out_rows() -> None:
    """Learnt from 200 rows, scored on 500 others (it was scored on its training rows)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 3))
    Y = np.stack([X[:, 0] - X[:, 1], X[:, 2]], 1) + 0.05 * rng.normal(size=(700, 2))
    est = MultiTabEstimator(d_embed=8, n_heads=2, row_heads=2, n_layers=1, max_epochs=40, batch_size=64,
                            n_context=64, patience=40, lr=3e-3).fit(X[:200], Y[:200])
    assert est.score(X[200:], Y[200:]) > 0.8


def test_early_stopping_stops() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 2)), rng.normal(size=60)  # pure noise: validation EV cannot keep improving
    est = MultiTabEstimator(architecture="shared_bottom", hidden=(8,), max_epochs=200, patience=3,
                            batch_size=16).fit(X, y)
    assert est.n_epochs_ < 200
    assert est.n_epochs_ - 1 - est.fit_result_.best_epoch == 3


def test_bad_inputs() -> None:
    Xo, Y = _mixed()
    with pytest.raises(TabzooInputError, match="task_types"):
        MultiTabEstimator(task_types=["binary"], **SMALL).fit(Xo, Y)
    with pytest.raises(TabzooInputError, match="architecture"):
        MultiTabEstimator(architecture="xgb", **SMALL).fit(Xo, Y)
    with pytest.raises(TabzooInputError, match="single class"):
        MultiTabEstimator(**SMALL).fit(Xo[:, :4].astype(float), np.zeros(90, dtype=int))
    with pytest.raises(TabzooInputError, match="continuous"):
        MultiTabEstimator(task_types=["binary"], **SMALL).fit(Xo[:, :4].astype(float), np.linspace(0, 1, 90))
    with pytest.raises(TabzooInputError, match="rows"):
        MultiTabEstimator(**SMALL).fit(Xo, Y[:10])
    est = MultiTabEstimator(task_types=["binary", "multiclass", "regression"], **SMALL).fit(Xo, Y)
    with pytest.raises(TabzooInputError, match="features"):
        est.predict(Xo[:, :3])


def test_eval_set_is_used_for_early_stopping() -> None:
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(80, 3)), rng.normal(size=(80, 2))
    est = MultiTabEstimator(architecture="shared_bottom", hidden=(8,), max_epochs=3, patience=3, val_fraction=0.5)
    est.fit(X[:60], Y[:60], eval_set=(X[60:], Y[60:]))
    assert len(est.fit_result_.history) == 3 and "val_mean" in est.fit_result_.history[0]
    with pytest.raises(TabzooInputError, match="targets"):
        est.fit(X[:60], Y[:60], eval_set=(X[60:], Y[60:, :1]))


def test_multi_output_api_shapes_as_sklearn() -> None:
    """``predict`` gives one column per task; ``predict_proba`` one ``[n, C]`` array per
    classification task (sklearn's MultiOutputClassifier convention), named by ``proba_tasks_``,
    with columns in the order of that task's ``classes_``; the CLI writes one column per task and class."""
    from tabzoo.batch import proba_columns as _proba_columns

    Xo, Y = _mixed()
    names = ["churn", "tier", "spend"]
    import pandas as pd

    est = MultiTabEstimator(task_types=["binary", "multiclass", "regression"], **SMALL).fit(
        Xo, pd.DataFrame(Y, columns=names))
    pred = est.predict(Xo[:9])
    assert pred.shape == (9, 3)
    proba = est.predict_proba(Xo[:9])
    assert isinstance(proba, list) and [p.shape for p in proba] == [(9, 2), (9, 3)]
    assert est.proba_tasks_ == ["churn", "tier"]
    assert est.classes_[2] is None
    for p, cls, col in zip(proba, est.classes_[:2], pred.T[:2], strict=True):
        np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-9)
        assert list(np.asarray(cls)[p.argmax(1)]) == list(col)  # predict = the most probable class
    assert sorted(_proba_columns(est, proba)) == ["proba_churn_no", "proba_churn_yes",
                                                  "proba_tier_0", "proba_tier_1", "proba_tier_2"]
    reg = MultiTabEstimator(task_types=["regression", "regression"], **SMALL).fit(Xo[:, :4].astype(float), Y[:, [2, 2]].astype(float))
    assert reg.predict(Xo[:5, :4].astype(float)).shape == (5, 2) and not hasattr(reg, "predict_proba")
    single = MultiTabEstimator(**SMALL).fit(Xo, Y[:, 0])
    assert single.predict(Xo[:4]).shape == (4,) and single.predict_proba(Xo[:4]).shape == (4, 2)


def test_cosine_schedule_decays_the_learning_rate_to_zero(monkeypatch) -> None:
    """``schedule="cosine"``: the core loop gets a cosine from ``lr`` to 0 ending at the last step
    of the ``max_epochs`` budget; ``"constant"`` keeps ``lr``."""
    import tabzoo_multitab.training as training
    from tabzoo.train.optim import flat_then_cosine

    seen = []
    real = training.fit
    monkeypatch.setattr(training, "fit", lambda model, task, cfg, **kw: seen.append(cfg) or real(model, task, cfg, **kw))
    Xo, Y = _mixed()
    kinds = ["binary", "multiclass", "regression"]
    MultiTabEstimator(task_types=kinds, schedule="cosine", **SMALL).fit(Xo, Y)
    MultiTabEstimator(task_types=kinds, **SMALL).fit(Xo, Y)
    n_train = len(Xo) - round(0.15 * len(Xo))
    steps = SMALL["max_epochs"] * -(-n_train // SMALL["batch_size"])
    assert (seen[0].schedule, seen[0].max_steps, seen[0].flat_fraction) == ("flat_cosine", steps, 0.0)
    assert flat_then_cosine(0, steps, 0.0) == 1.0 and flat_then_cosine(steps, steps, 0.0) == pytest.approx(0.0)
    assert seen[1].schedule == "constant"
    with pytest.raises(TabzooInputError, match="schedule"):
        MultiTabEstimator(task_types=kinds, schedule="linear", **SMALL).fit(Xo, Y)
