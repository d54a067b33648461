"""Pretraining through tabzoo.train on the priors package, resume, and export as package data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tabzoo.errors import CheckpointError

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
    (tmp_path / "run" / "model.json").unlink()  # the export reads the training state, not a run's model pair
    (tmp_path / "run" / "model.safetensors").unlink()
    stem = export(tmp_path / "run", name="t", dest=tmp_path, recipe="icl", note="n")
    meta = json.loads(Path(f"{stem}.json").read_text())
    assert meta["prior"] == "icl" and meta["steps"] == 3 and meta["architecture"] == "tabflex"
    assert meta["extra"]["episodes_seen"] == 6 and meta["extra"]["wall_time_s"] > 0
    assert (meta["extra"]["recipe"], meta["extra"]["note"], meta["extra"]["package"]) == ("icl", "n", "tabzoo-tabflex")
    assert meta["config"]["preset"] == "tiny"
    model = load_tabflex(str(stem))
    assert model.cfg.name == "tiny" and model.cfg.d_model == 32
    with pytest.raises(CheckpointError, match="overwrite"):  # never replaced silently
        export(tmp_path / "run", name="t", dest=tmp_path)
    export(tmp_path / "run", name="t", dest=tmp_path, overwrite=True)


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


@pytest.mark.parametrize("run", ["tabflex-small", "tabflex-icl", "tabflex-long"])
def test_kept_training_state_exports_the_shipped_checkpoint(tmp_path, run) -> None:
    """``pretraining/<run>`` keeps only the training state; exported, it is the shipped checkpoint
    (same weights, architecture, step), so the repository holds no second copy of the weights."""
    import torch
    from tabzoo.checkpoint import load_checkpoint
    from tabzoo_tabflex import pretraining

    folder = Path(__file__).resolve().parents[3] / "pretraining" / run
    if not (folder / "latest.json").exists():
        pytest.skip(f"{folder} is not in this checkout (an installed package's tests)")
    assert not (folder / "model.safetensors").exists()
    ours = load_checkpoint(pretraining.export(folder, name=run, dest=tmp_path))
    shipped = load_checkpoint(Path(pretraining.__file__).parent / "checkpoints" / run)
    assert (ours.meta["architecture"], ours.meta["steps"]) == (shipped.meta["architecture"], shipped.meta["steps"])
    assert set(ours.tensors) == set(shipped.tensors)
    assert all(torch.equal(ours.tensors[k], shipped.tensors[k]) for k in ours.tensors)
