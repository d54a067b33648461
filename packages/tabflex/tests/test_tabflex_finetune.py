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
