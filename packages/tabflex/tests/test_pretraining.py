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
    opts = dict(model_config={"preset": "tiny"},
                prior_config={"n_rows": (32, 48), "n_features": (2, 8), "n_classes": (2, 3)},
                batch_size=2, checkpoint_every=1, progress=False, plot=False, warmup_steps=0)
    first = run(tmp_path / "run", steps=2, resume=False, **opts)
    assert first.steps == 2 and len(first.losses) == 2
    again = run(tmp_path / "run", steps=3, resume=True, **opts)
    assert again.resumed_from == 2 and again.steps == 3
    stem = export(tmp_path / "run", name="t", dest=tmp_path)
    meta = json.loads(stem.with_suffix(".json").read_text())
    assert meta["prior"] == "tabflex_mix" and meta["steps"] == 3
    assert meta["extra"]["episodes_seen"] == 6 and "machine" in meta["extra"] and meta["extra"]["wall_time_s"] > 0
    assert meta["config"]["name"] == "tiny" and meta["config"]["d_model"] == 32
    model = load_tabflex(str(stem))
    assert model.cfg.name == "tiny"


def test_tabflex_mix_prior_is_registered_and_mixes() -> None:
    from tabzoo.plugins import get_prior

    prior = get_prior("tabflex_mix", n_rows=(64, 96), n_features=(2, 8), n_classes=(2, 3), teacher_share=0.5)
    sources = set()
    for s in range(8):
        u = __import__("numpy").random.default_rng([s, 7]).uniform()
        sources.add(u < 0.5)
        b = prior.sample(2, seed=s)
        assert b.task == "classification" and b.x.shape[0] == 2 and int(b.n_classes.max()) <= 3
    assert sources == {True, False}  # both components were drawn
