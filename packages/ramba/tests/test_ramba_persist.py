"""Saving and loading a whole Ramba (every ensemble member, the binding and the calibration)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from tabzoo.errors import CheckpointError, NotFittedError, TabzooInputError
from tabzoo_ramba import Ramba, SamplerConfig
from tabzoo_ramba.persist import member_stem
from test_ramba_regression import TASK, skewed_shop


@pytest.fixture(scope="module")
def shop() -> tuple[object, dict]:
    return skewed_shop(n_orders=120)


def _fit(shop: tuple[object, dict], k: int, **kw: object) -> Ramba:
    db, split = shop
    r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SamplerConfig(n_child=4, max_rows=12),
              seed=2, progress=False)
    return r.fit(db, TASK, split, steps=2, batch_size=8, eval_every=2, ensemble=k, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [1, 3])
def test_a_saved_ensemble_loads_back_to_identical_predictions(shop: tuple[object, dict], tmp_path: Path,
                                                              k: int) -> None:
    db, split = shop
    r = _fit(shop, k, recalibrate=True)
    stem = r.save(tmp_path / "ens")
    back = Ramba.load(stem)
    assert len(back.members) == k and back.members[0] is back.model
    assert back.task == r.task and back.sampler == r.sampler and back.seed == r.seed
    assert back.stats is not None and r.stats is not None and back.stats.stats == r.stats.stats
    assert back.calibration == r.calibration
    for a, b in zip(r.members, back.members, strict=True):
        for (na, ta), (nb, tb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
            assert na == nb and torch.equal(ta, tb)
    seeds = split["test"].seeds
    np.testing.assert_array_equal(back.predict(db, seeds), r.predict(db, seeds))
    if k > 1:  # every member counts: member 0 alone predicts something else
        alone = Ramba.load(stem)
        alone.members = alone.members[:1]
        assert not np.allclose(alone.predict(db, seeds), r.predict(db, seeds))


def test_save_refuses_to_overwrite_unless_asked(shop: tuple[object, dict], tmp_path: Path) -> None:
    db, split = shop
    three, one = _fit(shop, 3), _fit(shop, 1)
    stem = three.save(tmp_path / "m")
    with pytest.raises(TabzooInputError, match="overwrite=True"):
        one.save(stem)
    one.save(stem, overwrite=True)
    m1 = member_stem(stem, 1)
    assert not m1.with_name(m1.name + ".json").exists()  # no stale member of the earlier save
    back = Ramba.load(stem)
    assert len(back.members) == 1
    np.testing.assert_array_equal(back.predict(db, split["test"].seeds), one.predict(db, split["test"].seeds))


def test_load_names_a_missing_or_foreign_member(shop: tuple[object, dict], tmp_path: Path) -> None:
    three = _fit(shop, 3)
    stem = three.save(tmp_path / "e")
    other = _fit(shop, 1).save(tmp_path / "o")
    m1 = member_stem(stem, 1)
    m1.with_name(m1.name + ".safetensors").unlink()
    with pytest.raises(CheckpointError, match="member 1.*missing"):
        Ramba.load(stem)
    for ext in (".safetensors", ".json"):  # another save's member in its place
        member_stem(other, 0).with_name(member_stem(other, 0).name + ext).replace(m1.with_name(m1.name + ext))
    with pytest.raises(CheckpointError, match="member 1"):
        Ramba.load(stem)


def test_save_needs_a_bound_model_and_load_a_saved_ramba(tmp_path: Path) -> None:
    from tabzoo.checkpoint import save_checkpoint

    r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, progress=False)
    with pytest.raises(NotFittedError):
        r.save(tmp_path / "x")
    save_checkpoint(tmp_path / "single", r.model, architecture="ramba", config=r.model.config)
    with pytest.raises(CheckpointError, match="not a saved Ramba"):
        Ramba.load(tmp_path / "single")
    with pytest.raises(CheckpointError):
        Ramba.load(tmp_path / "nothing")
