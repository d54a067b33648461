"""Regression fine-tuning: the squared-error default learns a right-skewed target, and the
validation-fitted linear recalibration."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.metrics import r2_score
from tabzoo_ramba import Ramba, RelationalTask, SamplerConfig, temporal_split
from tabzoo_ramba.train import FinetuneTask, cv_recalibrated_r2, finetune, linear_recalibration

T0 = np.datetime64("2024-01-01T00:00:00", "s")
TASK = RelationalTask("orders", "spend", "regression", horizon_s=3600.0, lookback_s=7 * 86400.0)


def skewed_shop(n_orders: int = 360, seed: int = 0) -> tuple[object, dict]:
    """Customers and their orders; ``spend`` is lognormal in the order's own ``x`` (right-skewed:
    mean well above median), the split by time (60 / 20 / 20 %)."""
    from tabzoo.table import ForeignKey, RelationalDatabase, Table

    rng = np.random.default_rng(seed)
    times = T0 + np.sort(rng.choice(30 * 86400, n_orders, replace=False)).astype("timedelta64[s]")
    x = rng.normal(0.0, 1.0, n_orders)
    spend = np.exp(1.0 * x + 0.5 * rng.normal(0.0, 1.0, n_orders))
    customers = Table.from_dict({"customer_id": np.arange(10), "joined": np.full(10, T0 - np.timedelta64(1, "D"))})
    orders = Table.from_dict({"order_id": np.arange(n_orders), "customer_id": rng.integers(0, 10, n_orders),
                              "time": times, "x": x, "spend": spend})
    db = RelationalDatabase({"customers": customers, "orders": orders},
                            primary_keys={"customers": "customer_id", "orders": "order_id"},
                            foreign_keys=[ForeignKey("orders", "customer_id", "customers")],
                            time_columns={"customers": "joined", "orders": "time"})
    q = [times[int(p * n_orders)] for p in (0.6, 0.8)]
    return db, temporal_split(db, TASK, q[0], q[1])


@pytest.fixture(scope="module")
def shop() -> tuple[object, dict]:
    return skewed_shop()


def _assert_learns(r: Ramba, db: object, split: dict) -> None:
    """Test R^2 above 0.2 and 0.2 above predicting the training mean."""
    test = split["test"]
    constant = r2_score(test.y, np.full(len(test), split["train"].y.mean()))
    r2 = r.evaluate(db, test)["value"]
    assert r2 > 0.2 and r2 > constant + 0.2, (r2, constant)


def _uncalibrated(r: Ramba) -> Ramba:
    """``r``'s model and binding without its recalibration line."""
    raw = Ramba(r.model, sampler=r.sampler, progress=False)
    raw.task, raw.stats = r.task, r.stats
    return raw


def test_the_target_is_skewed(shop: tuple[object, dict]) -> None:
    _, split = shop
    y = split["train"].y
    assert np.mean(y) > 1.3 * np.median(y)  # mean and median differ: the loss decides which is learnt (R^2 scores the mean)


def test_regression_head_learns_a_skewed_target(shop: tuple[object, dict]) -> None:
    db, split = shop
    r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SamplerConfig(n_child=4, max_rows=12),
              progress=False).fit(db, TASK, split, steps=60, batch_size=16, lr=5e-3, eval_every=20)  # the default loss
    _assert_learns(r, db, split)


def test_recalibration_is_fitted_on_val_and_applied(shop: tuple[object, dict]) -> None:
    db, split = shop
    r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SamplerConfig(n_child=4, max_rows=12),
              progress=False).fit(db, TASK, split, steps=2, batch_size=16, eval_every=2, recalibrate=True)
    assert r.calibration is not None
    raw = _uncalibrated(r)
    a, b = r.calibration
    va = raw._seqs(db, split["val"].seeds)
    assert (a, b) == pytest.approx(linear_recalibration(raw._predict_seqs(va), split["val"].y))
    np.testing.assert_allclose(r.predict(db, split["test"].seeds), a * raw.predict(db, split["test"].seeds) + b,
                               rtol=1e-9, atol=1e-9)
    r.bind(db, TASK, split["val"].seeds[0][2])
    assert r.calibration is None  # a new binding drops the old line


def test_recalibration_needs_a_val_split(shop: tuple[object, dict]) -> None:
    db, split = shop
    r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, progress=False)
    with pytest.raises(TabzooInputError, match="val split"):
        r.fit(db, TASK, {"train": split["train"]}, steps=1, recalibrate=True)


def test_finetune_refuses_an_unknown_loss() -> None:
    with pytest.raises(TabzooInputError, match="huber"):
        finetune(None, [object()], np.zeros(1), kind="regression", loss="l1", encoder=object())
    with pytest.raises(TabzooInputError, match="huber_delta"):
        finetune(None, [object()], np.zeros(1), kind="regression", loss="huber", huber_delta=0.0, encoder=object())


def test_finetune_refuses_bad_stabilisers() -> None:
    with pytest.raises(TabzooInputError, match="schedule"):
        finetune(None, [object()], np.zeros(1), kind="regression", schedule="linear", encoder=object())
    for q in (-0.1, 0.5):
        with pytest.raises(TabzooInputError, match="winsorize"):
            finetune(None, [object()], np.zeros(1), kind="regression", winsorize=q, encoder=object())


class _Recorder(FinetuneTask):
    """Keeps the (z-scored, clipped) targets the loss saw."""

    seen: torch.Tensor | None = None

    def __init__(self, *a: object, **k: object) -> None:
        super().__init__(*a, **k)  # type: ignore[arg-type]
        _Recorder.seen = self.y


def test_winsorize_clips_the_training_target_and_head_init_starts_at_its_mean(
        shop: tuple[object, dict], monkeypatch: pytest.MonkeyPatch) -> None:
    import tabzoo_ramba.train as train_mod

    db, split = shop
    r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SamplerConfig(n_child=4, max_rows=12),
              progress=False).bind(db, TASK, split["val"].seeds[0][2])
    seqs = r._seqs(db, split["train"].seeds)
    y = split["train"].y
    mu, sd = 1.0, 2.0
    monkeypatch.setattr(train_mod, "FinetuneTask", _Recorder)
    monkeypatch.setattr(train_mod, "fit", lambda model, task, cfg, validate=None: cfg)
    cfg = finetune(r.model, seqs, y, kind="regression", mu=mu, sd=sd, steps=4, winsorize=0.05, head_init=True,
                   schedule="cosine", weight_decay=0.01, encoder=r.encoder)
    lo, hi = np.quantile(y, [0.05, 0.95])
    assert _Recorder.seen is not None
    np.testing.assert_allclose(_Recorder.seen.numpy(), (np.clip(y, lo, hi) - mu) / sd, rtol=1e-5, atol=1e-5)
    last = r.model.num_head[-1]
    assert float(last.weight.detach().abs().max()) == 0.0
    assert float(last.bias.detach()) == pytest.approx(float(_Recorder.seen.mean()), abs=1e-6)
    assert (cfg.schedule, cfg.weight_decay) == ("cosine", 0.01)  # the core's name, no special case here


finite = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=3, max_size=30), st.floats(-5, 5), st.floats(-50, 50))
def test_recalibration_line(pairs: list[tuple[float, float]], slope: float, intercept: float) -> None:
    p, y0 = np.array(pairs).T
    a, b = linear_recalibration(p, y0)
    assert a >= 0.0
    # in sample, the line is never worse than the val mean (slope 0 when the data is anti-correlated)
    assert r2_score(y0, a * p + b) >= -1e-9 or np.ptp(y0) == 0
    if np.ptp(p) > 1e-3 * max(1.0, float(np.abs(p).max())) and slope > 0:
        y = slope * p + intercept  # an exact affine map is recovered
        a2, b2 = linear_recalibration(p, y)
        assert a2 == pytest.approx(slope, rel=1e-6, abs=1e-9)
        assert b2 == pytest.approx(intercept, rel=1e-6, abs=1e-6 * (1 + abs(slope) * np.abs(p).max()))
    if slope < 0:
        assert linear_recalibration(p, slope * p) == (0.0, pytest.approx(float(np.mean(slope * p))))


def test_recalibration_refuses_bad_input() -> None:
    with pytest.raises(TabzooInputError, match="same length"):
        linear_recalibration(np.zeros(3), np.zeros(4))
    with pytest.raises(TabzooInputError, match="NaN"):
        linear_recalibration(np.array([0.0, np.nan]), np.zeros(2))
    with pytest.raises(TabzooInputError, match=">= 10 rows"):
        cv_recalibrated_r2(np.zeros(5), np.zeros(5))


def test_cross_validated_recalibration_scores_held_out_folds() -> None:
    rng = np.random.default_rng(0)
    p = rng.normal(size=200)
    y = 2.0 * p + rng.normal(size=200)
    cv = cv_recalibrated_r2(p, y)
    assert 0.6 < cv < r2_score(y, 2.0 * p + 0.0) + 0.05  # near the true line's R^2 (0.8)
    assert cv_recalibrated_r2(rng.normal(size=200), y) < 0.02  # no signal: no R^2 from refitting


def test_finetune_schedules_are_core_schedule_names() -> None:
    from tabzoo.train.optim import SCHEDULES
    from tabzoo_ramba.train import FINETUNE_SCHEDULES

    assert set(FINETUNE_SCHEDULES) <= set(SCHEDULES)


def _tiny(**kw: object) -> Ramba:
    return Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SamplerConfig(n_child=4, max_rows=12),
                 progress=False, **kw)  # type: ignore[arg-type]


def test_ensemble_predicts_the_mean_of_its_members_and_member_0_is_the_plain_fit(shop: tuple[object, dict]) -> None:
    db, split = shop
    ens = _tiny(seed=3).fit(db, TASK, split, steps=3, batch_size=16, eval_every=3, ensemble=2)
    plain = _tiny(seed=3).fit(db, TASK, split, steps=3, batch_size=16, eval_every=3)
    other = _tiny(seed=1003).fit(db, TASK, split, steps=3, batch_size=16, eval_every=3)
    assert len(ens.members) == 2 and ens.members[0] is ens.model
    seeds = split["test"].seeds
    p0, p1 = plain.predict(db, seeds), other.predict(db, seeds)
    assert not np.allclose(p0, p1)  # different init and batches
    np.testing.assert_allclose(ens.predict(db, seeds), (p0 + p1) / 2, rtol=1e-6, atol=1e-6)


def test_ensemble_from_a_given_model_starts_every_member_from_its_weights(shop: tuple[object, dict]) -> None:
    import copy

    db, split = shop
    start = _tiny().model
    ens = Ramba(copy.deepcopy(start), sampler=SamplerConfig(n_child=4, max_rows=12), seed=0, progress=False).fit(
        db, TASK, split, steps=3, batch_size=16, eval_every=3, ensemble=2)
    second = Ramba(copy.deepcopy(start), sampler=SamplerConfig(n_child=4, max_rows=12), seed=1000, progress=False).fit(
        db, TASK, split, steps=3, batch_size=16, eval_every=3)
    for a, b in zip(ens.members[1].state_dict().values(), second.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_ensemble_refuses_a_bad_size(shop: tuple[object, dict]) -> None:
    db, split = shop
    for bad in (0, -1, 1.5):
        with pytest.raises(TabzooInputError, match="ensemble"):
            _tiny().fit(db, TASK, split, steps=1, ensemble=bad)  # type: ignore[arg-type]


def test_an_ensemble_learns_the_skewed_target(shop: tuple[object, dict]) -> None:
    db, split = shop
    r = _tiny().fit(db, TASK, split, steps=60, batch_size=16, lr=5e-3, eval_every=20, ensemble=2)
    _assert_learns(r, db, split)


def test_fit_checks_the_loss_options_before_any_work(shop: tuple[object, dict]) -> None:
    db, split = shop
    with pytest.raises(TabzooInputError, match="loss 'l1'"):
        _tiny().fit(db, TASK, split, steps=1, loss="l1")
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(TabzooInputError, match="huber_delta"):
            _tiny().fit(db, TASK, split, steps=1, loss="huber", huber_delta=bad)


def test_huber_fit_is_deterministic_and_its_delta_reaches_the_loss(shop: tuple[object, dict]) -> None:
    db, split = shop
    kw = {"steps": 3, "batch_size": 16, "eval_every": 3, "loss": "huber"}
    a, b = _tiny(seed=4).fit(db, TASK, split, **kw), _tiny(seed=4).fit(db, TASK, split, **kw)
    c = _tiny(seed=4).fit(db, TASK, split, **kw, huber_delta=0.05)
    seeds = split["test"].seeds
    np.testing.assert_array_equal(a.predict(db, seeds), b.predict(db, seeds))
    assert not np.allclose(a.predict(db, seeds), c.predict(db, seeds))


def test_huber_fit_learns_the_skewed_target(shop: tuple[object, dict]) -> None:
    db, split = shop
    r = _tiny().fit(db, TASK, split, steps=60, batch_size=16, lr=5e-3, eval_every=20, loss="huber", huber_delta=2.0)
    _assert_learns(r, db, split)


def test_recalibrate_on_a_hold_out_split_fits_the_line_there(shop: tuple[object, dict]) -> None:
    from tabzoo_ramba import Split

    db, split = shop
    tr = split["train"]
    cut = len(tr) * 3 // 4  # the last quarter of the training period, kept out of training
    parts = {"train": Split(tr.seeds[:cut], tr.y[:cut]), "val": split["val"], "hold": Split(tr.seeds[cut:], tr.y[cut:])}
    r = _tiny(seed=5).fit(db, TASK, parts, steps=2, batch_size=16, eval_every=2, recalibrate=True,
                          recalibrate_on="hold")
    raw = _uncalibrated(r)
    assert r.calibration == pytest.approx(linear_recalibration(raw.predict(db, parts["hold"].seeds), parts["hold"].y))
    assert r.calibration != pytest.approx(linear_recalibration(raw.predict(db, parts["val"].seeds), parts["val"].y))


def test_select_on_names_the_split_that_picks_the_state(shop: tuple[object, dict]) -> None:
    db, split = shop
    kw = {"steps": 4, "batch_size": 16, "eval_every": 2}
    same = _tiny(seed=6).fit(db, TASK, split | {"hold": split["val"]}, select_on="hold", **kw)
    plain = _tiny(seed=6).fit(db, TASK, split, **kw)
    seeds = split["test"].seeds
    np.testing.assert_array_equal(same.predict(db, seeds), plain.predict(db, seeds))
    for name in ("select_on", "recalibrate_on"):
        for bad in ("train", "nope", 3):
            with pytest.raises(TabzooInputError, match=name):
                _tiny().fit(db, TASK, split, steps=1, **{name: bad})  # type: ignore[arg-type]
