"""``Ramba.fit(snapshot_every=...)`` (snapshot averaging) and ``Ramba.fit(hold=...)`` (the hold-out
carved by fit itself): what is kept, what is predicted, save / load, determinism, refusals."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo_ramba import Ramba, SamplerConfig
from tabzoo_ramba.api import carve_hold
from tabzoo_ramba.data import Split
from tabzoo_ramba.train import linear_recalibration, snapshot_steps
from test_ramba_regression import TASK, skewed_shop

SAMPLER = SamplerConfig(n_child=4, max_rows=12)


@pytest.fixture(scope="module")
def shop() -> tuple[object, dict]:
    return skewed_shop(n_orders=120)


def _ramba(seed: int = 2) -> Ramba:
    return Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SAMPLER, seed=seed, progress=False)


def _fit(shop: tuple[object, dict], **kw: object) -> Ramba:
    db, split = shop
    return _ramba().fit(db, TASK, split, **{"steps": 4, "batch_size": 8, **kw})  # type: ignore[arg-type]


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_snapshot_steps_are_the_multiples_in_the_last_half_and_the_last() -> None:
    assert snapshot_steps(150, 25) == [75, 100, 125, 150]
    assert snapshot_steps(4, 2) == [2, 4]
    assert snapshot_steps(7, 2) == [4, 6, 7]
    assert snapshot_steps(10, 50) == [10]
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(TabzooInputError, match="positive integer"):
            snapshot_steps(10, bad)  # type: ignore[arg-type]


def test_a_snapshot_fit_predicts_the_mean_of_its_states(shop: tuple[object, dict]) -> None:
    db, split = shop
    r = _fit(shop, ensemble=2, snapshot_every=2)  # states at steps 2 and 4 per member
    assert r.snapshots_per_member == 2 and len(r.members) == 4 and r.members[0] is r.model
    seqs = r._seqs(db, split["test"].seeds)
    each = [r._predict_seqs(seqs, [m]) for m in r.members]
    np.testing.assert_allclose(r.predict(db, split["test"].seeds), np.mean(each, axis=0), rtol=1e-12, atol=1e-12)
    assert not np.allclose(each[0], each[1])  # the states differ
    # member 0's kept states: its last (step 4) is the model, then the step-2 state, which a 2-step fit ends at
    two = _fit(shop, steps=2, eval_every=2)
    assert _same_weights(r.members[1], two.model)
    assert _same_weights(r.members[0], _fit(shop, steps=4, snapshot_every=4).model)


def test_snapshot_fits_are_deterministic(shop: tuple[object, dict]) -> None:
    db, split = shop
    a, b = (_fit(shop, snapshot_every=2, hold=0.3, recalibrate=True) for _ in range(2))
    np.testing.assert_array_equal(a.predict(db, split["test"].seeds), b.predict(db, split["test"].seeds))
    assert a.calibration == b.calibration


def test_a_snapshot_ensemble_saves_and_loads_to_identical_predictions(shop: tuple[object, dict],
                                                                       tmp_path: Path) -> None:
    db, split = shop
    r = _fit(shop, ensemble=2, snapshot_every=2, recalibrate=True)
    back = Ramba.load(r.save(tmp_path / "snap"))
    assert back.snapshots_per_member == 2 and len(back.members) == 4 and back.members[0] is back.model
    assert all(_same_weights(a, b) for a, b in zip(r.members, back.members, strict=True))
    assert back.calibration == r.calibration
    np.testing.assert_array_equal(back.predict(db, split["test"].seeds), r.predict(db, split["test"].seeds))


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_fit_refuses_a_bad_snapshot_period(shop: tuple[object, dict], bad: object) -> None:
    with pytest.raises(TabzooInputError, match="snapshot_every"):
        _fit(shop, snapshot_every=bad)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 40), hold=st.one_of(st.integers(2, 25), st.floats(0.01, 0.99)), seed=st.integers(0, 99))
def test_the_carved_hold_is_disjoint_from_the_rest_and_deterministic(n: int, hold: int | float, seed: int) -> None:
    t = np.datetime64("2024-01-01T00:00:00", "s")
    train = Split([("orders", i, t + np.timedelta64(i, "s")) for i in range(n)], np.arange(n, dtype=float))
    out = carve_hold(train, hold, seed)
    rows = hold if isinstance(hold, int) else round(hold * n)
    if rows < 2 or n - rows < rows:
        assert out is None
        return
    assert out is not None
    rest, held = out
    assert len(held) == rows and len(rest) == n - rows
    keys = [s[1] for s in rest.seeds], [s[1] for s in held.seeds]
    assert not set(keys[0]) & set(keys[1]) and sorted(keys[0] + keys[1]) == list(range(n))
    assert keys[0] == sorted(keys[0]) and keys[1] == sorted(keys[1])  # the train split's order is kept
    np.testing.assert_array_equal(held.y, np.array(keys[1], dtype=float))  # labels travel with their seeds
    again = carve_hold(train, hold, seed)
    assert again is not None and again[1].seeds == held.seeds


def test_fit_trains_on_the_rest_and_recalibrates_on_the_carved_hold(shop: tuple[object, dict]) -> None:
    db, split = shop
    r = _fit(shop, hold=0.3, recalibrate=True)
    carved = carve_hold(split["train"], 0.3, r.seed)
    assert carved is not None
    rest, held = carved
    assert not {s[1] for s in rest.seeds} & {s[1] for s in held.seeds}
    cal = r.calibration
    r.calibration = None
    assert cal == linear_recalibration(r.predict(db, held.seeds), held.y)  # the line is the hold-out's
    # the model trained on the rest only: the same fit given split["train"] = rest, split["hold"] = the hold
    explicit = _ramba().fit(db, TASK, {**split, "train": rest, "hold": held}, steps=4, batch_size=8,
                            select_on="hold", recalibrate=True, recalibrate_on="hold")
    assert explicit.calibration == cal and _same_weights(explicit.model, r.model)


def test_a_train_split_too_small_for_the_hold_falls_back_with_a_warning(shop: tuple[object, dict]) -> None:
    db, split = shop
    with pytest.warns(UserWarning, match="too few to carve"):
        r = _fit(shop, hold=len(split["train"]), recalibrate=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = _fit(shop, recalibrate=True)  # the fallback is the plain fit on val
    assert r.calibration == plain.calibration and _same_weights(r.model, plain.model)


@pytest.mark.parametrize("bad", [1, 0, 0.0, 1.0, 1.5, -0.2, "10", True])
def test_fit_refuses_a_bad_hold(shop: tuple[object, dict], bad: object) -> None:
    with pytest.raises(TabzooInputError, match="hold"):
        _fit(shop, hold=bad)


def test_fit_refuses_a_hold_beside_a_given_hold_split(shop: tuple[object, dict]) -> None:
    db, split = shop
    with pytest.raises(TabzooInputError, match="already"):
        _ramba().fit(db, TASK, {**split, "hold": split["val"]}, steps=2, hold=10)
