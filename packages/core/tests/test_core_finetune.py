"""Fine-tuning of in-context estimators on the user's table (:mod:`tabzoo.train.finetune`, issue 28 item 1).

The estimator is the core's test classifier around ``KernelICL`` (learnable temperature and feature
weights), so every property is checked on the core's one path, not on a plugin's model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from _icl_testmodel import ICLTestClassifier, build
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.train.finetune import FineTune, FineTuneMixin, resolve_fine_tune

FAST = {"steps": 12, "eval_every": 4, "context_size": 64, "query_size": 32, "progress": False, "min_rows": 16}


class TunedClassifier(FineTuneMixin, ICLTestClassifier):
    """The core's test classifier with ``fine_tune``."""

    def __init__(self, n_estimators: int = 3, random_state: int | None = 0, fine_tune: Any = None) -> None:
        super().__init__(n_estimators=n_estimators, random_state=random_state, device="cpu")
        self.fine_tune = fine_tune


def _table(n: int = 160, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two informative features and four noise features (tuning the feature weights helps)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    x[:, 2:] *= 4.0
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64)
    return x, y


def _params(model: torch.nn.Module) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_settings_are_checked_with_the_fix() -> None:
    assert resolve_fine_tune(None) is None and resolve_fine_tune(False) is None
    assert resolve_fine_tune(True) == FineTune()
    assert resolve_fine_tune(7).steps == 7
    assert resolve_fine_tune({"lr": 1e-4}).lr == 1e-4
    for bad in ("yes", {"stepz": 3}, {"steps": 0}, {"lr": -1.0}, {"validation_fraction": 1.0}, 2.5):
        with pytest.raises(TabzooInputError, match="fine_tune|FineTune"):
            resolve_fine_tune(bad)


def test_off_by_default_and_identical_to_the_plain_estimator() -> None:
    x, y = _table()
    plain = ICLTestClassifier(n_estimators=3, device="cpu").fit(x, y).predict_proba(x[:20])
    est = TunedClassifier().fit(x, y)
    assert est.fine_tune_ is None
    np.testing.assert_array_equal(est.predict_proba(x[:20]), plain)


def test_deterministic_for_a_random_state_and_row_order_free() -> None:
    x, y = _table()
    a = TunedClassifier(fine_tune=FAST).fit(x, y)
    b = TunedClassifier(fine_tune=FAST).fit(x, y)
    assert a.fine_tune_ == {**b.fine_tune_, "seconds": a.fine_tune_["seconds"]}
    for pa, pb in zip(_params(a.model_), _params(b.model_), strict=True):
        np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(a.predict_proba(x[:30]), b.predict_proba(x[:30]))
    perm = np.random.default_rng(1).permutation(len(y))
    c = TunedClassifier(fine_tune=FAST).fit(x[perm], y[perm])
    np.testing.assert_allclose(c.predict_proba(x[:30]), a.predict_proba(x[:30]), rtol=1e-5, atol=1e-7)
    # another seed draws other episodes
    d = TunedClassifier(random_state=1, fine_tune=FAST).fit(x, y)
    assert a.fine_tune_["steps"] > 0 and d.fine_tune_["steps"] > 0


def test_kept_only_when_better_on_the_inner_split_and_the_pretrained_weights_are_untouched(monkeypatch) -> None:
    x, y = _table()
    shipped = build({})
    before = _params(shipped)
    monkeypatch.setattr(TunedClassifier, "_load_model", lambda self: shipped)
    est = TunedClassifier(fine_tune=FAST).fit(x, y)
    rec = est.fine_tune_
    assert rec["kept"] and rec["best_loss"] < rec["baseline_loss"]
    assert est.model_ is not shipped
    for p, q in zip(_params(shipped), before, strict=True):
        np.testing.assert_array_equal(p, q)  # the copy was tuned, never the loaded model
    assert any(not np.array_equal(p, q) for p, q in zip(_params(est.model_), before, strict=True))


@settings(max_examples=4, deadline=None)
@given(lr=st.sampled_from([0.5, 2.0, 8.0]), seed=st.integers(0, 3))
def test_never_worse_than_not_fine_tuning_on_the_inner_split(lr: float, seed: int) -> None:
    x, y = _table(seed=seed)
    est = TunedClassifier(random_state=seed, fine_tune={**FAST, "lr": lr}).fit(x, y)
    rec = est.fine_tune_
    plain = TunedClassifier(random_state=seed).fit(x, y)
    if rec["kept"]:
        assert rec["best_loss"] < rec["baseline_loss"]
    else:  # the pretrained weights: predictions exactly those of the estimator without fine-tuning
        np.testing.assert_array_equal(est.predict_proba(x[:25]), plain.predict_proba(x[:25]))


def test_a_query_reads_only_the_training_rows_and_itself() -> None:
    x, y = _table()
    est = TunedClassifier(fine_tune=FAST).fit(x[:120], y[:120])
    q = x[120:]
    together = est.predict_proba(q)
    alone = np.concatenate([est.predict_proba(q[i:i + 1]) for i in range(q.shape[0])])
    np.testing.assert_allclose(together, alone, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(est.predict_proba(q[::-1])[::-1], together)


def test_save_and_load_keep_the_fine_tuned_weights(tmp_path) -> None:
    x, y = _table()
    est = TunedClassifier(fine_tune=FineTune(**FAST)).fit(x, y)
    assert est.fine_tune_["kept"]
    stem = est.save(tmp_path / "tuned")
    back = TunedClassifier.load(stem)
    assert back.fine_tune_ == est.fine_tune_
    assert resolve_fine_tune(back.fine_tune) == resolve_fine_tune(est.fine_tune)
    np.testing.assert_array_equal(back.predict_proba(x[:40]), est.predict_proba(x[:40]))
    plain = TunedClassifier().fit(x, y).predict_proba(x[:40])
    assert not np.array_equal(back.predict_proba(x[:40]), plain)


def test_too_few_rows_or_too_many_classes_skip_with_a_reason() -> None:
    x, y = _table(n=40)
    est = TunedClassifier(fine_tune={**FAST, "min_rows": 64}).fit(x, y)
    assert est.fine_tune_["kept"] is False and "min_rows" in est.fine_tune_["reason"]
