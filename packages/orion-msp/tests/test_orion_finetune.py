"""ORION-MSP with ``fine_tune`` (the core's :mod:`tabzoo.train.finetune` on the shipped checkpoint)."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_breast_cancer
from tabzoo_orion_msp.estimators import OrionMSPClassifier, load_orion


def test_fine_tune_keeps_only_a_better_copy_and_save_load_keep_it(tmp_path) -> None:
    x, y = load_breast_cancer(return_X_y=True)
    x, y = x[:200], y[:200]
    shipped = [p.detach().clone() for p in load_orion().parameters()]
    cfg = {"steps": 4, "eval_every": 2, "context_size": 96, "query_size": 48, "progress": False}
    est = OrionMSPClassifier(n_estimators=2, fine_tune=cfg).fit(x, y)
    rec = est.fine_tune_
    assert rec["steps"] >= 2 and rec["kept"] == (rec["best_loss"] < rec["baseline_loss"])
    for p, q in zip(load_orion().parameters(), shipped, strict=True):
        assert bool((p == q).all())
    back = OrionMSPClassifier.load(est.save(tmp_path / "tuned"))
    assert back.fine_tune_ == rec
    np.testing.assert_array_equal(back.predict_proba(x[:40]), est.predict_proba(x[:40]))
