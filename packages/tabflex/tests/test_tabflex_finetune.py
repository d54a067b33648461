"""TabFlex with ``fine_tune`` (the core's :mod:`tabzoo.train.finetune` on the shipped checkpoint)."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from tabzoo_tabflex import TabFlexClassifier, TabFlexRegressor
from tabzoo_tabflex.inference import load_tabflex

FAST = {"steps": 6, "eval_every": 3, "context_size": 128, "query_size": 64, "progress": False}


def _params(model) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_classifier_fine_tunes_a_copy_and_save_load_keep_it(tmp_path) -> None:
    x, y = load_breast_cancer(return_X_y=True)
    x, y = x[:300], y[:300]
    shipped = _params(load_tabflex("tabflex-small"))
    est = TabFlexClassifier(checkpoint="tabflex-small", n_estimators=2, fine_tune={**FAST, "lr": 1e-3}).fit(x, y)
    rec = est.fine_tune_
    assert rec["steps"] == 6 and rec["train_rows"] + rec["validation_rows"] == 300
    assert rec["kept"] == (rec["best_loss"] < rec["baseline_loss"])
    for p, q in zip(_params(load_tabflex("tabflex-small")), shipped, strict=True):
        np.testing.assert_array_equal(p, q)  # the shipped weights are never tuned in place
    again = TabFlexClassifier(checkpoint="tabflex-small", n_estimators=2, fine_tune={**FAST, "lr": 1e-3}).fit(x, y)
    np.testing.assert_array_equal(again.predict_proba(x[:50]), est.predict_proba(x[:50]))
    back = TabFlexClassifier.load(est.save(tmp_path / "tuned"))
    assert back.fine_tune_ == rec
    np.testing.assert_array_equal(back.predict_proba(x[:50]), est.predict_proba(x[:50]))


def test_regressor_fine_tunes_on_its_bins() -> None:
    x, y = load_diabetes(return_X_y=True)
    est = TabFlexRegressor(checkpoint="tabflex-small", n_bins=8, n_estimators=2, fine_tune=FAST).fit(x[:240], y[:240])
    rec = est.fine_tune_
    assert rec["steps"] == 6 and rec["kept"] == (rec["best_loss"] < rec["baseline_loss"])
    assert np.isfinite(est.predict(x[240:260])).all()


def test_regressor_skips_fine_tuning_when_a_shifted_member_has_too_many_bins() -> None:
    """With ``bin_shift`` a member's shifted edges can give one bin more than member 0: at ``n_bins=10`` one
    member had 11 classes, and fine-tuning raised 'class labels must lie in 0..9' (real-data suite,
    regression-bins10 run). It must skip with the reason instead, as it does for 30 bins."""
    x, y = load_diabetes(return_X_y=True)
    est = TabFlexRegressor(checkpoint="tabflex-small", n_bins=10, n_estimators=4, fine_tune=FAST).fit(x[:240], y[:240])
    counts = [est._fine_tune_targets(i)[1] for i in range(len(est.members_))]
    assert max(counts) > 10  # the case of the bug: member 0 fits the head, another does not
    rec = est.fine_tune_
    assert rec["steps"] == 0 and not rec["kept"] and "classes in member" in rec["reason"]
    assert np.isfinite(est.predict(x[240:260])).all()


def test_regressor_auto_bins_fit_the_head_with_fine_tuning(tmp_path) -> None:
    """``n_bins="auto"`` (the default): 30 bins untuned, at most the head's classes - 1 with ``fine_tune``, so every
    bin-shifted member fits the head and fine-tuning runs by default; the fitted count survives save/load."""
    x, y = load_diabetes(return_X_y=True)
    plain = TabFlexRegressor(checkpoint="tabflex-small", n_estimators=2, fine_tune=False).fit(x[:240], y[:240])
    assert plain.n_bins_ == 30 and plain.fine_tune_ is None
    est = TabFlexRegressor(checkpoint="tabflex-small", n_estimators=4, fine_tune=FAST).fit(x[:240], y[:240])
    head = int(est.model_.max_classes)
    assert est.n_bins_ == head - 1
    assert max(est._fine_tune_targets(i)[1] for i in range(4)) <= head  # every member fits the head
    rec = est.fine_tune_
    assert rec["steps"] > 0 and rec["kept"] == (rec["best_loss"] < rec["baseline_loss"])
    back = TabFlexRegressor.load(est.save(tmp_path / "tuned"))
    assert back.n_bins_ == est.n_bins_
    np.testing.assert_array_equal(back.predict(x[240:260]), est.predict(x[240:260]))


def test_regressor_refuses_a_bad_bin_count() -> None:
    import pytest
    from tabzoo.errors import TabzooInputError

    x, y = load_diabetes(return_X_y=True)
    for bad in ("many", 1, True, 2.5):
        with pytest.raises(TabzooInputError, match="n_bins must be 'auto' or an int >= 2"):
            TabFlexRegressor(checkpoint="tabflex-small", n_estimators=1, n_bins=bad).fit(x[:60], y[:60])


def test_regressor_fine_tunes_by_default_and_keeps_30_bins_when_it_cannot() -> None:
    """Fine-tuning is the regressor's default (it reached Ridge's mean R² on the suite, issue 28); ``n_bins="auto"``
    drops to the head's classes - 1 only when fine-tuning runs: below ``min_rows`` it keeps the untuned 30 bins."""
    import inspect

    assert inspect.signature(TabFlexRegressor).parameters["fine_tune"].default is True
    assert inspect.signature(TabFlexClassifier).parameters["fine_tune"].default is None
    x, y = load_diabetes(return_X_y=True)
    few = TabFlexRegressor(checkpoint="tabflex-small", n_estimators=2, fine_tune={**FAST, "min_rows": 64}).fit(x[:50], y[:50])
    assert few.n_bins_ == 30 and few.fine_tune_["steps"] == 0 and "min_rows" in few.fine_tune_["reason"]
    tuned = TabFlexRegressor(checkpoint="tabflex-small", n_estimators=2, fine_tune={**FAST, "min_rows": 40}).fit(x[:50], y[:50])
    assert tuned.n_bins_ == int(tuned.model_.max_classes) - 1
