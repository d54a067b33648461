"""ORION-MSP's ``fine_tune="auto"``: the size rule, its wiring into ``fit``, determinism and save/load."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from tabzoo.errors import TabzooInputError
from tabzoo.train import FineTune
from tabzoo_orion_msp.estimators import OrionMSPClassifier
from tabzoo_orion_msp.fine_tune import AUTO_FINE_TUNE_ROWS, auto_fine_tune, auto_record


def test_the_rule_is_on_up_to_the_bound_and_off_above() -> None:
    assert auto_fine_tune(AUTO_FINE_TUNE_ROWS) == FineTune()  # the core's defaults, progress bar on
    assert auto_fine_tune(AUTO_FINE_TUNE_ROWS).progress
    assert auto_fine_tune(1) == FineTune()
    assert auto_fine_tune(AUTO_FINE_TUNE_ROWS + 1) is None
    assert auto_fine_tune(0) is None
    off = auto_record(AUTO_FINE_TUNE_ROWS + 1, None)
    assert off["kept"] is False and off["steps"] == 0 and off["auto"]["on"] is False
    on = auto_record(10, {"kept": True, "steps": 4})
    assert on["kept"] is True and on["auto"] == {
        "on": True,
        "training_rows": 10,
        "max_rows": AUTO_FINE_TUNE_ROWS,
    }


def test_a_bad_fine_tune_value_is_refused_before_fitting() -> None:
    x, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(TabzooInputError, match="auto"):
        OrionMSPClassifier(n_estimators=1, fine_tune="sometimes").fit(x[:80], y[:80])


def test_auto_above_the_bound_does_not_fine_tune_and_predicts_as_off() -> None:
    x, y = load_breast_cancer(return_X_y=True)
    x, y = x[: AUTO_FINE_TUNE_ROWS + 20], y[: AUTO_FINE_TUNE_ROWS + 20]
    auto = OrionMSPClassifier(n_estimators=1, linear_blend=0, fine_tune="auto").fit(x, y)
    off = OrionMSPClassifier(n_estimators=1, linear_blend=0, fine_tune=None).fit(x, y)
    assert auto.fine_tune == "auto"  # the parameter is left as given
    rec = auto.fine_tune_
    assert rec["auto"] == {
        "on": False,
        "training_rows": AUTO_FINE_TUNE_ROWS + 20,
        "max_rows": AUTO_FINE_TUNE_ROWS,
    }
    assert rec["steps"] == 0 and not rec["kept"]
    np.testing.assert_array_equal(auto.predict_proba(x[:30]), off.predict_proba(x[:30]))


# the rule's decision, with a few tiny steps (the conftest fixture)
@pytest.mark.usefixtures("few_auto_fine_tune_steps")
def test_auto_below_the_bound_fine_tunes_deterministically_and_save_load_keep_it(tmp_path) -> None:
    x, y = load_breast_cancer(return_X_y=True)
    x, y = x[:160], y[:160]

    def fit(seed: int) -> OrionMSPClassifier:
        return OrionMSPClassifier(
            n_estimators=2, linear_blend=0, random_state=seed, fine_tune="auto"
        ).fit(x, y)

    a, b = fit(0), fit(0)
    rec = a.fine_tune_
    assert rec["auto"] == {"on": True, "training_rows": 160, "max_rows": AUTO_FINE_TUNE_ROWS}
    assert rec["steps"] >= 2 and rec["kept"] == (rec["best_loss"] < rec["baseline_loss"])
    assert a.fine_tune == "auto" and a.get_params()["fine_tune"] == "auto"
    strip = {k: v for k, v in rec.items() if k != "seconds"}
    assert strip == {k: v for k, v in b.fine_tune_.items() if k != "seconds"}
    for p, q in zip(a.model_.parameters(), b.model_.parameters(), strict=True):
        assert bool((p == q).all())
    np.testing.assert_array_equal(a.predict_proba(x[:40]), b.predict_proba(x[:40]))
    back = OrionMSPClassifier.load(a.save(tmp_path / "auto"))
    assert back.fine_tune == "auto" and back.fine_tune_ == rec
    np.testing.assert_array_equal(back.predict_proba(x[:40]), a.predict_proba(x[:40]))
