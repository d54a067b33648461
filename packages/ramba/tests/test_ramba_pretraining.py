"""Pretraining resolves its prior through the core's registry."""

from __future__ import annotations

import pytest
import torch
from tabzoo.errors import PluginLoadError
from tabzoo.plugins import manager
from tabzoo_ramba.pretraining import synthetic_source


def test_synthetic_source_resolves_the_prior_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tabzoo_priors", reason="the relational prior is registered by tabzoo-priors")
    db = synthetic_source(n_tables=(2, 2), root_rows=(20, 20))(0)
    assert len(db.table_names) == 2
    monkeypatch.setattr(manager, "_registry", manager.PluginRegistry())  # nothing registered
    with pytest.raises(PluginLoadError, match="uv build --package tabzoo-priors "):
        synthetic_source()


def test_tabzoo_pretrain_trains_ramba_and_the_run_exports(tmp_path, capsys) -> None:
    """One pretraining loop: `tabzoo pretrain --model ramba --prior ramba_mlm`, then export."""
    pytest.importorskip("tabzoo_priors", reason="the relational prior is registered by tabzoo-priors")
    import json

    from tabzoo.checkpoint import load_model
    from tabzoo.cli import main
    from tabzoo_ramba.model import RambaModel
    from tabzoo_ramba.pretraining import RECIPES, export

    config = {"model_config": RECIPES["tiny-synth"]["model_config"], "plot": False, "workers": 0,
              "prior_config": {"encoder": "hashing", "relational": {"n_tables": [2, 3], "root_rows": [20, 40]},
                               "sampler": {"n_child": 5, "max_rows": 30}}}
    out = tmp_path / "run"
    args = ["pretrain", "--model", "ramba", "--prior", "ramba_mlm", "--steps", "2", "--batch-size", "4",
            "--out", str(out), "--config", json.dumps(config), "--no-progress", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 2
    stem = export(out, "exported", directory=tmp_path / "ckpt")
    model = load_model(stem, build=RambaModel)
    trained = load_model(out / "model", build=RambaModel)  # the loop's own model checkpoint
    assert model.config == RambaModel(RECIPES["tiny-synth"]["model_config"]).config
    for a, b in zip(model.state_dict().values(), trained.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_a_state_of_the_earlier_loop_is_refused_not_restarted(tmp_path) -> None:
    from tabzoo.errors import TabzooInputError
    from tabzoo_ramba.model import RambaModel
    from tabzoo_ramba.train import pretrain_mlm

    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(TabzooInputError, match="earlier Ramba-only loop"):
        pretrain_mlm(RambaModel({"preset": "tiny", "text_encoder": "hashing"}), lambda s: None, steps=2,
                     out=tmp_path / "run", resume=True, progress=False)
