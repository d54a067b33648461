"""Pretraining recipe: the prior covers every input slot, the shipped run resumes, export never overwrites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tabzoo_orion_msp.config import get_config

PKG = Path(__file__).resolve().parents[1]
ROOT = PKG.parents[1]
RECIPE = json.loads((PKG / "pretrain-icl.json").read_text())
STAGE3 = json.loads((PKG / "pretrain-icl-stage3.json").read_text())


def test_prior_feature_range_covers_max_features() -> None:
    cfg = get_config(RECIPE["model_config"])
    for recipe in (RECIPE, STAGE3):
        prior = recipe["prior_config"]
        assert prior.get("min_features", 1) <= 2 and prior["max_features"] == cfg.max_features, \
            "every input slot up to max_features must be trained"
        assert prior["max_classes"] == cfg.max_classes
        assert recipe["model_config"] == RECIPE["model_config"]
    assert STAGE3["freeze"] == ["columns", "rows", "memory"]  # B.2 stage 3: the ICL transformer only


def test_shipped_checkpoint_matches_the_recipe() -> None:
    meta = json.loads((PKG / "src/tabzoo_orion_msp/checkpoints/orion-msp-small.json").read_text())
    cfg = get_config(meta["config"])
    assert cfg == get_config(RECIPE["model_config"]).with_(**{k: getattr(cfg, k) for k in ("name",)})
    assert meta["prior"] == "icl"
    assert meta["extra"]["train_config"]["prior_config"]["max_features"] >= cfg.max_features


def test_prior_draws_the_widest_tables() -> None:
    priors = pytest.importorskip("tabzoo_priors", reason="the prior lives in tabzoo-priors")
    del priors
    from tabzoo.plugins import get_registry

    spec = get_registry().get("priors", "icl")
    config = {k: v for k, v in RECIPE["prior_config"].items() if k != "curriculum"}
    prior = spec.create(**{**config, "n_rows": [32, 32]})
    widths = [int(prior.sample(1, seed=s).feature_mask.sum()) for s in range(40)]
    assert max(widths) == get_config(RECIPE["model_config"]).max_features  # the last slot is trained too


def test_training_state_is_committed_for_resume() -> None:
    run = ROOT / "pretraining" / "orion-msp"
    latest = json.loads((run / "latest.json").read_text())
    state = run / f"{latest['state']}.safetensors"
    assert state.exists() and state.stat().st_size < 50 * 2**20
    assert not (run / "model.safetensors").exists()  # the export comes from the state (no duplicated weights)


def test_export_refuses_to_overwrite(tmp_path, monkeypatch) -> None:
    from tabzoo.errors import CheckpointError
    from tabzoo_orion_msp import pretraining

    monkeypatch.setattr(pretraining, "CHECKPOINT_DIR", tmp_path)
    run = ROOT / "pretraining" / "orion-msp"
    stem = pretraining.export_checkpoint(run, "copy")
    assert Path(str(stem) + ".json").exists()
    with pytest.raises(CheckpointError, match="overwrite"):
        pretraining.export_checkpoint(run, "copy")
    pretraining.export_checkpoint(run, "copy", overwrite=True)
    from tabzoo.checkpoint import load_checkpoint

    # the state's model is the shipped one: same weights, architecture and config
    ours = load_checkpoint(stem)
    shipped = load_checkpoint(Path(pretraining.__file__).parent / "checkpoints" / "orion-msp-small")
    assert (ours.meta["architecture"], ours.meta["config"], ours.meta["steps"]) == (
        shipped.meta["architecture"], shipped.meta["config"], shipped.meta["steps"])
    assert set(ours.tensors) == set(shipped.tensors)
    assert all(torch.equal(ours.tensors[k], shipped.tensors[k]) for k in ours.tensors)
