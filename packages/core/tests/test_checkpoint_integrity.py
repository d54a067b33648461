"""A checkpoint's JSON is covered by the weights' digest and checked before anything is allocated
(issue 24 item 3): an edited config is refused as edited, a config that builds other shapes or too
much memory is refused on the meta device, and the shipped checkpoints carry valid digests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from tabzoo.checkpoint import FORMAT, load_checkpoint, load_model, save_checkpoint
from tabzoo.checkpoint.io import sha256
from tabzoo.checkpoint.validate import MAX_INT, meta_digest
from tabzoo.errors import CheckpointError, MemoryLimitError

REPO = Path(__file__).resolve().parents[3]


class Spy:
    """``build(config)`` that records the device every build allocated on."""

    def __init__(self) -> None:
        self.devices: list[str] = []

    def __call__(self, config: dict[str, Any]) -> torch.nn.Module:
        self.devices.append(torch.empty(0).device.type)
        return torch.nn.Sequential(torch.nn.Linear(3, config["d_model"]), torch.nn.Linear(config["d_model"], 2))

    @property
    def real_builds(self) -> int:
        return sum(d != "meta" for d in self.devices)


def _save(tmp_path: Path, d_model: int = 8) -> Path:
    stem = tmp_path / "m"
    save_checkpoint(stem, Spy()({"d_model": d_model}), architecture="spy", config={"d_model": d_model})
    return stem


def _edit(stem: Path, **changes: Any) -> dict[str, Any]:
    path = stem.with_suffix(".json")
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))
    return meta


def test_saved_json_carries_one_digest_over_config_and_weights(tmp_path: Path) -> None:
    stem = _save(tmp_path)
    meta = json.loads(stem.with_suffix(".json").read_text())
    assert meta["format"] == FORMAT == "tabzoo-checkpoint/2"
    assert meta["digest"] == meta_digest(meta)
    assert meta["sha256"] == sha256(stem.with_suffix(".safetensors").read_bytes())
    spy = Spy()
    model = load_model(stem, build=spy)
    assert spy.devices == ["cpu"] and isinstance(model, torch.nn.Sequential)


def test_an_edited_d_model_is_refused_as_edited_before_any_build(tmp_path: Path) -> None:
    stem = _save(tmp_path)
    _edit(stem, config={"d_model": 60_000})
    spy = Spy()
    with pytest.raises(CheckpointError, match="does not match its digest.*edited"):
        load_model(stem, build=spy)
    assert spy.devices == []


@pytest.mark.parametrize("key", ["sha256", "architecture", "steps", "prior"])
def test_every_field_of_the_json_is_covered(tmp_path: Path, key: str) -> None:
    stem = _save(tmp_path)
    _edit(stem, **{key: "0" * 64 if key == "sha256" else 7})
    with pytest.raises(CheckpointError, match="digest"):
        load_checkpoint(stem)


def test_a_json_without_its_digest_is_refused(tmp_path: Path) -> None:
    stem = _save(tmp_path)
    meta = json.loads(stem.with_suffix(".json").read_text())
    del meta["digest"]
    stem.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="has no digest"):
        load_checkpoint(stem)


def test_a_format_1_config_that_builds_other_shapes_is_refused_on_the_meta_device(tmp_path: Path) -> None:
    """A format-1 file has no digest: its config is built on the meta device first and refused
    before the real build when it does not fit the weights."""
    stem = _save(tmp_path)
    meta = json.loads(stem.with_suffix(".json").read_text())
    meta.update(config={"d_model": 60_000}, format="tabzoo-checkpoint/1")
    del meta["digest"]
    stem.with_suffix(".json").write_text(json.dumps(meta))
    spy = Spy()
    with pytest.raises(CheckpointError, match=r"does not fit its weights.*\[60000, 3\].*\[8, 3\]"):
        load_model(stem, build=spy)
    assert spy.real_builds == 0


def test_a_recomputed_digest_over_another_config_is_still_a_checkpoint_error(tmp_path: Path) -> None:
    """SHA-256 without a key cannot stop a forger; the strict load still refuses the other shapes
    with a CheckpointError (it was a raw RuntimeError 'size mismatch')."""
    stem = _save(tmp_path)
    meta = json.loads(stem.with_suffix(".json").read_text())
    meta["config"] = {"d_model": 16}
    meta["digest"] = meta_digest(meta)
    stem.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="does not fit.*size mismatch"):
        load_model(stem, build=Spy())


def test_a_format_1_checkpoint_still_loads(tmp_path: Path) -> None:
    stem = _save(tmp_path)
    meta = json.loads(stem.with_suffix(".json").read_text())
    meta["format"] = "tabzoo-checkpoint/1"
    del meta["digest"]
    stem.with_suffix(".json").write_text(json.dumps(meta))
    assert isinstance(load_model(stem, build=Spy()), torch.nn.Sequential)


def test_a_model_beyond_the_memory_limit_is_refused_before_it_is_built(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    stem = _save(tmp_path, d_model=300)
    monkeypatch.setenv("TABZOO_MEMORY_LIMIT", "4KB")
    spy = Spy()
    with pytest.raises(MemoryLimitError, match="loading checkpoint.*TABZOO_MEMORY_LIMIT"):
        load_model(stem, build=spy)
    assert spy.real_builds == 0


@pytest.mark.parametrize("value", [float("nan"), float("inf"), MAX_INT + 1, -MAX_INT - 1,
                                   [[[[[[[[[[1]]]]]]]]]]])
def test_a_config_beyond_the_limits_is_refused(tmp_path: Path, value: Any) -> None:
    stem = tmp_path / "m"
    save_checkpoint(stem, torch.nn.Linear(3, 2), architecture="lin", config={"width": value})
    with pytest.raises(CheckpointError, match="config entry"):
        load_checkpoint(stem)


SHIPPED = sorted(REPO.glob("packages/*/src/*/checkpoints/*.json"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_checkpoints_carry_a_valid_digest(path: Path) -> None:
    meta = json.loads(path.read_text())
    assert meta["format"] == FORMAT and meta["digest"] == meta_digest(meta)
    assert meta["sha256"] == sha256(path.with_suffix(".safetensors").read_bytes())
    assert load_checkpoint(path.with_suffix("")).meta["digest"] == meta["digest"]


def test_shipped_checkpoints_are_found() -> None:
    assert len(SHIPPED) >= 4, "the shipped checkpoints moved; update SHIPPED"
