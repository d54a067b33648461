"""Checkpoints: safetensors + JSON, atomic writes, no unpickling, clear errors on damage."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.checkpoint import (
    flatten_state,
    load_checkpoint,
    load_model,
    load_state,
    read_checkpoint_cached,
    resolve_checkpoint,
    save_checkpoint,
    save_state,
    unflatten_state,
)
from tabzoo.errors import CheckpointError, TabzooError


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _build(config: dict) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(config["d_in"], 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
    )


@pytest.fixture(autouse=True)
def _no_pickle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any unpickling during these tests is a failure."""

    def refuse(*a, **k):
        raise AssertionError("checkpoint code must never unpickle")

    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)


def test_roundtrip_gives_identical_outputs(tmp_path: Path) -> None:
    model = _model()
    save_checkpoint(tmp_path / "m", model, architecture="mlp", config={"d_in": 4}, prior="scm", steps=7)
    assert (tmp_path / "m.safetensors").exists() and (tmp_path / "m.json").exists()
    meta = json.loads((tmp_path / "m.json").read_text())
    assert meta["architecture"] == "mlp" and meta["steps"] == 7 and meta["prior"] == "scm"
    loaded = load_model(tmp_path / "m.safetensors", build=_build)
    x = torch.randn(5, 4)
    assert torch.equal(model(x), loaded(x))


@pytest.mark.parametrize("cut", [0, 10, 100, -1])
def test_truncated_weights_are_refused(tmp_path: Path, cut: int) -> None:
    save_checkpoint(tmp_path / "m", _model(), architecture="mlp", config={"d_in": 4})
    w = tmp_path / "m.safetensors"
    data = w.read_bytes()
    w.write_bytes(data[:cut] if cut >= 0 else data[:-1])
    with pytest.raises(CheckpointError, match="truncated, corrupt"):
        load_checkpoint(tmp_path / "m")


def test_flipped_byte_and_bad_json_are_refused(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "m", _model(), architecture="mlp", config={"d_in": 4})
    w = tmp_path / "m.safetensors"
    data = bytearray(w.read_bytes())
    data[-3] ^= 0xFF
    w.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="SHA-256"):
        load_checkpoint(tmp_path / "m")
    (tmp_path / "m.json").write_text('{"format": "tabzoo-checkpoint/1", ')
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_checkpoint(tmp_path / "m")


def test_missing_files_and_wrong_format(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nothing")
    save_state(tmp_path / "s", {"a": torch.ones(2)})
    with pytest.raises(CheckpointError, match="format"):
        load_checkpoint(tmp_path / "s")
    save_checkpoint(tmp_path / "m", _model(), architecture="mlp", config={"d_in": 4})
    os.remove(tmp_path / "m.safetensors")
    with pytest.raises(CheckpointError, match="incomplete"):
        load_checkpoint(tmp_path / "m")


def test_config_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "m", _model(), architecture="mlp", config={"d_in": 4})
    with pytest.raises((CheckpointError, RuntimeError)):
        load_model(tmp_path / "m", build=lambda c: torch.nn.Linear(3, 3))


def test_failed_write_keeps_previous_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model()
    save_checkpoint(tmp_path / "m", model, architecture="mlp", config={"d_in": 4}, steps=1)
    before = (tmp_path / "m.safetensors").read_bytes()

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path / "m", _model().apply(lambda m: None), architecture="mlp", config={"d_in": 4}, steps=2)
    monkeypatch.undo()
    assert (tmp_path / "m.safetensors").read_bytes() == before
    assert load_checkpoint(tmp_path / "m").meta["steps"] == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")], "temporary files left behind"


def test_unserialisable_metadata_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TabzooError, match="JSON"):
        save_checkpoint(tmp_path / "m", _model(), architecture="mlp", config={"f": object()})


def test_optimizer_state_roundtrip(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    state = {"opt": opt.state_dict(), "rng": torch.get_rng_state(), "np": np.arange(3), "step": 5}
    save_state(tmp_path / "s", state)
    back = load_state(tmp_path / "s")
    opt2 = torch.optim.AdamW(_model().parameters(), lr=1.0)
    opt2.load_state_dict(back["opt"])
    assert opt2.param_groups[0]["lr"] == 1e-3
    assert torch.equal(back["rng"], state["rng"]) and back["step"] == 5
    assert np.array_equal(back["np"], state["np"])


json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), st.text(max_size=5)
)
trees = st.recursive(
    json_leaf | st.builds(lambda n: torch.arange(n, dtype=torch.float32), st.integers(0, 4)),
    lambda children: st.lists(children, max_size=3)
    | st.tuples(children, children)
    | st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 9)), children, max_size=3),
    max_leaves=12,
)


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b and type(a) is type(b)


@given(trees)
def test_flatten_state_roundtrip(tree) -> None:
    encoded, tensors = flatten_state(tree)
    json.dumps(encoded)  # must be pure JSON
    assert _same(tree, unflatten_state(json.loads(json.dumps(encoded)), tensors))


def test_flatten_refuses_arbitrary_objects() -> None:
    with pytest.raises(CheckpointError, match="without pickle"):
        flatten_state({"x": object()})


def test_resolve_checkpoint_takes_a_shipped_name_or_a_users_pair(tmp_path: Path) -> None:
    shipped, runs = tmp_path / "shipped", tmp_path / "runs"
    save_checkpoint(shipped / "small", _model(), architecture="mlp", config={"d_in": 4})
    save_checkpoint(runs / "mine", _model(), architecture="mlp", config={"d_in": 4})
    assert resolve_checkpoint("small", shipped, model="M", cli_name="m") == shipped / "small"
    for given_as in ("mine", "mine.json", "mine.safetensors"):
        assert resolve_checkpoint(str(runs / given_as), shipped, model="M", cli_name="m") == runs / "mine"
    (runs / "half.json").write_text("{}")  # a JSON without its weights is not a checkpoint
    for bad in ("nope", str(runs / "half")):
        with pytest.raises(CheckpointError, match=r"M checkpoint .* \['small'\].*--model m"):
            resolve_checkpoint(bad, shipped, model="M", cli_name="m")


def test_read_checkpoint_cached_reads_once_and_again_after_a_rewrite(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "c", _model(), architecture="mlp", config={"d_in": 4})
    first = read_checkpoint_cached(tmp_path / "c")
    assert read_checkpoint_cached(tmp_path / "c")[0] is first[0] and first[1] == {"d_in": 4}  # read once
    save_checkpoint(tmp_path / "c2", _model(), architecture="mlp", config={"d_in": 5})
    os.replace(tmp_path / "c2.safetensors", tmp_path / "c.safetensors")
    os.replace(tmp_path / "c2.json", tmp_path / "c.json")
    os.utime(tmp_path / "c.json", (1e9, 2e9))  # a new mtime, whatever the clock's resolution
    again = read_checkpoint_cached(tmp_path / "c")
    assert again[0] is not first[0] and again[1] == {"d_in": 5}


def test_load_weights_refuses_missing_and_unexpected_keys_with_the_callers_error_and_fix() -> None:
    from tabzoo.checkpoint import load_weights
    from tabzoo.errors import CheckpointError, TabzooInputError

    model = torch.nn.Linear(3, 2)
    good = {k: torch.full_like(v, 0.5) for k, v in model.state_dict().items()}
    load_weights(model, good, what="ckpt", target="the model", fix="Fix it.")
    assert torch.equal(model.weight, torch.full((2, 3), 0.5))
    bad = {"weight": good["weight"], "extra.weight": torch.zeros(1)}
    with pytest.raises(CheckpointError, match=r"ckpt does not fit the model: missing keys \['bias'\], "
                                              r"unexpected keys \['extra.weight'\]. Fix it."):
        load_weights(model, bad, what="ckpt", target="the model", fix="Fix it.")
    with pytest.raises(TabzooInputError, match="does not fit"):
        load_weights(model, bad, what="init_from='x'", target="the model", fix="", error=TabzooInputError)


def test_checkpoint_stem_drops_only_the_pair_suffixes(tmp_path: Path) -> None:
    from tabzoo.checkpoint import checkpoint_stem

    for name in ("m", "m.json", "m.safetensors"):
        assert checkpoint_stem(tmp_path / name) == tmp_path / "m"
    assert checkpoint_stem(tmp_path / "m.v2") == tmp_path / "m.v2"


def test_refuse_existing_names_the_files_unless_overwrite(tmp_path: Path) -> None:
    from tabzoo.checkpoint import refuse_existing
    from tabzoo.errors import TabzooInputError

    there, absent = tmp_path / "a.json", tmp_path / "b.json"
    there.write_text("{}")
    assert refuse_existing([absent], overwrite=False) == []
    with pytest.raises(TabzooInputError, match=r"a\.json already exist\(s\).*overwrite=True"):
        refuse_existing([there, absent], overwrite=False)
    assert refuse_existing([there, absent], overwrite=True) == [there]
    assert there.exists()  # it only reports: the caller decides what to replace
