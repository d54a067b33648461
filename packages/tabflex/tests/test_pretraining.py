"""Pretraining through tabzoo.train on the priors package, resume, and export as package data."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("tabzoo_priors", reason="pretraining needs the tabzoo-priors package")
pytest.importorskip("tabzoo.train", reason="needs tabzoo.train")


def test_pretrain_resume_and_export(tmp_path) -> None:
    import torch
    from tabzoo_tabflex.estimators import load_tabflex
    from tabzoo_tabflex.pretraining import export, run

    torch.set_num_threads(1)
    opts = dict(model_config={"preset": "tiny"}, init_from=None,
                prior_config={"n_rows": (32, 48), "max_features": 8, "max_classes": 3, "curriculum": None},
                batch_size=2, checkpoint_every=1, progress=False, plot=False, warmup_steps=0)
    first = run(tmp_path / "run", steps=2, resume=False, **opts)
    assert first.steps == 2 and len(first.losses) == 2
    again = run(tmp_path / "run", steps=3, resume=True, **opts)
    assert again.resumed_from == 2 and again.steps == 3
    stem = export(tmp_path / "run", name="t", dest=tmp_path)
    meta = json.loads(stem.with_suffix(".json").read_text())
    assert meta["prior"] == "icl" and meta["steps"] == 3
    assert meta["extra"]["episodes_seen"] == 6 and "machine" in meta["extra"] and meta["extra"]["wall_time_s"] > 0
    assert meta["config"]["name"] == "tiny" and meta["config"]["d_model"] == 32
    model = load_tabflex(str(stem))
    assert model.cfg.name == "tiny"


def test_plugin_registers_no_private_prior() -> None:
    """TabFlex pretrains on the shared ``icl`` prior; plugins do not register priors of their own."""
    from tabzoo.plugins import list_priors

    names = set(list_priors())
    assert "icl" in names
    assert not {"tabflex_mix", "tabflex_teacher"} & names


def test_icl_recipe_starts_from_the_shipped_weights(tmp_path) -> None:
    """One step of the shipped recipe: the ``icl`` prior with its curriculum at full width."""
    import torch
    from tabzoo_tabflex.pretraining import run

    torch.set_num_threads(1)
    res = run(tmp_path / "r", recipe="icl", steps=1, batch_size=2, progress=False, plot=False,
              prior_config={"curriculum": [{"steps": 1, "rows": [64, 64]}]})
    assert res.steps == 1 and res.losses[0] < 2.5  # the shipped weights, not a random init (log 10 = 2.3)
    meta = json.loads((tmp_path / "r" / "model.json").read_text())
    assert meta["prior"] == "icl" and meta["extra"]["train_config"]["init_from"].endswith("tabflex-small")
