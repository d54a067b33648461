"""Issue 24 item 3, training-state side: a hand-edited state is refused, and a resume with another
prior or model/batch config is refused naming the difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _icl_testmodel import BlobsPrior, build
from tabzoo.errors import CheckpointError, TabzooInputError
from tabzoo.train import load_latest, pretrain

FAST = {"progress": False, "plot": False, "lr": 0.05, "batch_size": 4}


class OtherPrior(BlobsPrior):
    """The same batches under another prior name."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    pretrain(build({}), BlobsPrior(), out=out, steps=3, checkpoint_every=3, **FAST)
    return out


def _copy(run: Path, to: Path) -> Path:
    to.mkdir()
    for p in run.iterdir():
        (to / p.name).write_bytes(p.read_bytes())
    return to


def _state_json(out: Path) -> Path:
    return out / (json.loads((out / "latest.json").read_text())["state"] + ".json")


def _edit_tree(out: Path, key: str, value: object) -> None:
    path = _state_json(out)
    meta = json.loads(path.read_text())
    meta["tree"][key] = value
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize(("key", "value"), [("step", 1), ("step", 2), ("prior", "scm"), ("episodes_seen", 7)])
def test_an_edited_state_is_refused(run: Path, tmp_path: Path, key: str, value: object) -> None:
    out = _copy(run, tmp_path / "copy")
    assert load_latest(out)["step"] == 3
    _edit_tree(out, key, value)
    with pytest.raises(CheckpointError, match="edited"):
        load_latest(out)
    with pytest.raises(CheckpointError, match="edited"):
        pretrain(build({}), BlobsPrior(), out=out, steps=5, resume=True, **FAST)


def test_a_pointer_with_another_step_is_refused(run: Path, tmp_path: Path) -> None:
    out = _copy(run, tmp_path / "copy")
    pointer = json.loads((out / "latest.json").read_text())
    (out / "latest.json").write_text(json.dumps({**pointer, "step": 1}))
    with pytest.raises(CheckpointError, match="says step 1"):
        load_latest(out)


@pytest.mark.parametrize(("change", "named"), [
    ({"prior": OtherPrior()}, "prior 'BlobsPrior' -> 'OtherPrior'"),
    ({"batch_size": 8}, "batch_size 4 -> 8"),
    ({"seed": 5}, "seed 0 -> 5"),
    ({"prior_config": {"n_context": 9}}, 'prior_config {} -> {"n_context": 9}'),
])
def test_resume_refuses_another_prior_or_config_naming_it(run: Path, tmp_path: Path, change: dict,
                                                          named: str) -> None:
    out = _copy(run, tmp_path / "copy")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    prior = change.pop("prior", BlobsPrior())
    with pytest.raises(TabzooInputError) as info:
        pretrain(build({}), prior, out=out, steps=5, resume=True, **{**FAST, **change})
    assert named in str(info.value) and "another --out" in str(info.value)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # what may change on resume: steps, lr
    done = pretrain(build({}), BlobsPrior(), out=out, steps=4, resume=True, **{**FAST, "lr": 0.01})
    assert done.resumed_from == 3 and done.steps == 4
