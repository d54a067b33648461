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


def test_fine_tune_is_deterministic_for_a_random_state() -> None:
    """The same ``random_state`` twice: the same episodes, the same tuned weights, the same predictions;
    another ``random_state`` draws other episodes (so the check could fail)."""
    x, y = load_breast_cancer(return_X_y=True)
    x, y = x[:160], y[:160]
    cfg = {"steps": 4, "eval_every": 2, "context_size": 64, "query_size": 32, "progress": False}

    def tuned(seed: int) -> OrionMSPClassifier:
        return OrionMSPClassifier(n_estimators=2, random_state=seed, fine_tune=dict(cfg)).fit(x, y)

    def record(est: OrionMSPClassifier) -> dict:
        return {k: v for k, v in est.fine_tune_.items() if k != "seconds"}  # all but the wall time

    a, b, c = tuned(0), tuned(0), tuned(1)
    assert record(a) == record(b)
    for p, q in zip(a.model_.parameters(), b.model_.parameters(), strict=True):
        assert bool((p == q).all())
    np.testing.assert_array_equal(a.predict_proba(x[:40]), b.predict_proba(x[:40]))
    assert record(a) != record(c) or not np.array_equal(a.predict_proba(x[:40]), c.predict_proba(x[:40]))
