"""ORION-MSP with ``fine_tune`` and ``linear_blend="auto"`` together: one inner split of the training rows.

Fine-tuning trains on its inner training rows only and validates on the holdout; the blend weight is chosen on the
same holdout rows, which the tuned weights never trained on."""

from __future__ import annotations

import numpy as np
import pytest
import tabzoo.train.finetune as ft_mod
import tabzoo_orion_msp.estimators as est_mod
from sklearn.datasets import load_breast_cancer
from tabzoo.estimators.base import _seed_from
from tabzoo_orion_msp.estimators import SHARED_SPLIT, OrionMSPClassifier, inner_split

CFG = {"steps": 4, "eval_every": 2, "context_size": 64, "query_size": 32, "progress": False}


def _data(n: int = 160) -> tuple[np.ndarray, np.ndarray]:
    x, y = load_breast_cancer(return_X_y=True)
    return x[:n], y[:n]


def test_fine_tuning_and_the_blend_share_one_inner_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows of every fine-tuning episode are disjoint from the blend's holdout, the fine-tuning validation rows
    are that holdout, and the linear member is scored on exactly those rows."""
    episode_rows: list[np.ndarray] = []
    val_rows: list[np.ndarray] = []
    scored: list[np.ndarray] = []
    episodes_init = ft_mod._Episodes.__init__
    loss = OrionMSPClassifier._fine_tune_loss
    log_proba = est_mod.LinearMember.log_proba

    def spy_episodes(self, est, rows, cfg, seed):  # type: ignore[no-untyped-def]
        episode_rows.append(np.array(rows))
        episodes_init(self, est, rows, cfg, seed)

    def spy_loss(self, context, rows):  # type: ignore[no-untyped-def]
        val_rows.append(np.array(rows))
        return loss(self, context, rows)

    def spy_log_proba(self, x):  # type: ignore[no-untyped-def]
        scored.append(np.array(x))
        return log_proba(self, x)

    monkeypatch.setattr(ft_mod._Episodes, "__init__", spy_episodes)
    monkeypatch.setattr(OrionMSPClassifier, "_fine_tune_loss", spy_loss)
    monkeypatch.setattr(est_mod.LinearMember, "log_proba", spy_log_proba)
    x, y = _data()
    est = OrionMSPClassifier(n_estimators=2, fine_tune=dict(CFG)).fit(x, y)
    train, hold = inner_split(est.y_context_, _seed_from(0), x=est.X_context_)
    assert est.fine_tune_["inner_split"] == SHARED_SPLIT
    assert (
        est.fine_tune_["validation_rows"] == hold.size
        and est.fine_tune_["train_rows"] == train.size
    )
    assert len(episode_rows) == 1 and np.array_equal(np.sort(episode_rows[0]), train)
    assert not np.intersect1d(episode_rows[0], hold).size
    assert val_rows and all(np.array_equal(np.sort(v), hold) for v in val_rows)
    # the blend's choice: the linear member's log-probabilities of the holdout rows (first call, in fit)
    np.testing.assert_array_equal(scored[0], est.X_context_[hold])
    assert set(est.linear_blend_inner_) == {"0.0", "0.25", "0.5"}


def test_with_a_fixed_blend_weight_fine_tuning_keeps_the_core_split() -> None:
    """Only ``linear_blend="auto"`` chooses on the holdout; otherwise the core's split (20% validation) as before."""
    x, y = _data()
    est = OrionMSPClassifier(n_estimators=2, linear_blend=0, fine_tune=dict(CFG)).fit(x, y)
    assert "inner_split" not in est.fine_tune_
    assert est.fine_tune_["validation_rows"] == int(round(0.2 * np.bincount(y)[0])) + int(
        round(0.2 * np.bincount(y)[1])
    )


def test_fine_tune_with_the_blend_is_deterministic_and_save_load_keep_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    x, y = _data()

    def tuned(seed: int) -> OrionMSPClassifier:
        return OrionMSPClassifier(n_estimators=2, random_state=seed, fine_tune=dict(CFG)).fit(x, y)

    a, b = tuned(0), tuned(0)
    strip = {k: v for k, v in a.fine_tune_.items() if k != "seconds"}
    assert strip == {k: v for k, v in b.fine_tune_.items() if k != "seconds"}
    assert a.linear_blend_ == b.linear_blend_ and a.linear_blend_inner_ == b.linear_blend_inner_
    np.testing.assert_array_equal(a.predict_proba(x[:40]), b.predict_proba(x[:40]))
    back = OrionMSPClassifier.load(a.save(tmp_path / "tuned"))
    assert back.fine_tune_ == a.fine_tune_ and back.linear_blend_ == a.linear_blend_
    np.testing.assert_array_equal(back.predict_proba(x[:40]), a.predict_proba(x[:40]))


def test_never_worse_than_untuned_on_the_shared_inner_split(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the shared holdout, ORION-MSP's log-loss with the weights fit keeps is at most the pretrained weights',
    the blend weight is chosen on the holdout predicted with the weights kept (a wide table, so that
    ``member_features="auto"`` has predicted it with the pretrained weights before), and the chosen weight's inner
    ROC-AUC is the best of the weights tried."""
    seed = 0
    x, y = _data()
    x = np.hstack(
        [x, np.random.default_rng(0).standard_normal((x.shape[0], 6))]
    )  # 36 > 30 features
    tuned_at: list[bool] = []
    inner_proba = OrionMSPClassifier._inner_proba

    def spy(self, *args):  # type: ignore[no-untyped-def]
        tuned_at.append(bool((getattr(self, "fine_tune_", None) or {}).get("kept")))
        return inner_proba(self, *args)

    monkeypatch.setattr(OrionMSPClassifier, "_inner_proba", spy)
    tuned = OrionMSPClassifier(n_estimators=2, random_state=seed, fine_tune=dict(CFG)).fit(x, y)
    assert tuned.member_selection_["source"] == "inner split"
    kept = tuned.fine_tune_["kept"]
    assert (
        kept
    )  # this table and seed: the tuned copy is kept (the dropped case: the first test's table)
    assert (
        tuned_at[-1] == kept and (len(tuned_at) == 3) == kept
    )  # kept: the holdout predicted once more
    plain = OrionMSPClassifier(n_estimators=2, random_state=seed, fine_tune=None).fit(x, y)
    train, hold = inner_split(tuned.y_context_, _seed_from(seed), x=tuned.X_context_)
    mine, base = tuned._fine_tune_loss(train, hold), plain._fine_tune_loss(train, hold)
    assert mine <= base + 1e-9
    assert np.isclose(tuned.fine_tune_["baseline_loss"], base)
    if not kept:
        assert tuned.linear_blend_inner_ == plain.linear_blend_inner_
    scores = tuned.linear_blend_inner_
    assert scores[str(tuned.linear_blend_)] == max(scores.values())


@pytest.mark.usefixtures("few_auto_fine_tune_steps")
def test_auto_fine_tunes_small_tables_on_the_shared_split() -> None:
    """``fine_tune="auto"`` (an option; the default is ``None``): a table of at most 400 training rows is fine-tuned
    (here with the conftest's few steps) on the split shared with the default ``linear_blend="auto"``."""
    x, y = _data()
    est = OrionMSPClassifier(n_estimators=2, fine_tune="auto").fit(x, y)
    assert OrionMSPClassifier().get_params()["fine_tune"] is None
    rec = est.fine_tune_
    assert rec["auto"]["on"] and rec["steps"] > 0 and rec["inner_split"] == SHARED_SPLIT
