"""Issue 31 item 4: every shipped plugin's spec is built from its config dataclass
(``tabzoo.plugins.spec_from_config``), and its content is what the hand-written key lists gave
before, or strictly more (NPT now also accepts overrides of its preset's sizes; a field added to a
config dataclass since, e.g. MultiTab's ``task_tokens``, appears without touching plugin.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tabzoo.plugins import get_architecture, reset_registry

# the specs' content before item 4 (hand-written _CONFIG_KEYS / DEFAULT_CONFIG of each plugin.py)
_TABFLEX = ("name", "max_features", "max_classes", "d_model", "n_heads", "n_layers", "d_ff", "d_decoder",
            "dropout", "attention", "train_rows")
_ORION = ("name", "max_features", "max_classes", "d", "col_inducing", "col_heads", "col_blocks", "col_ff",
          "scales", "n_cls", "n_global", "row_heads", "row_blocks", "row_ff", "window", "random_links",
          "link_seed", "rope_base", "pma_scope", "memory_slots", "memory_heads", "memory_write", "memory_read",
          "memory_gate", "centre_rows", "icl_blocks", "icl_heads", "icl_ff", "query_sees_query", "temperature")
_RAMBA = ("d_model", "n_layers", "n_heads", "d_state", "d_conv", "expand", "d_text", "d_gate", "d_ff",
          "max_rel_rows", "attention", "gating", "text_encoder")
BEFORE: dict[str, tuple[str, dict[str, Any]]] = {
    "tabflex": ("tabzoo_tabflex.config:TabFlexConfig", {"preset": "small", **dict.fromkeys(_TABFLEX)}),
    "orion-msp": ("tabzoo_orion_msp.config:OrionConfig", {"preset": "small", **dict.fromkeys(_ORION)}),
    "ramba": ("tabzoo_ramba.config:RambaConfig", {"preset": "small", **dict.fromkeys(_RAMBA)}),
    "npt": ("tabzoo_npt.config:NPTConfig", {"preset": "small", "cardinalities": None}),
    "multitab": ("tabzoo_multitab.config:MultiTabConfig", {
        "n_num": 4, "cat_cardinalities": [], "tasks": [["task0", "binary", 2], ["task1", "regression", 0]],
        "d_embed": 16, "n_layers": 2, "n_heads": 4, "row_heads": 4, "ff_mult": 2, "row_ff_mult": 1,
        "mask": "T-/->T", "inter_sample": True, "head_hidden": 32, "dropout": 0.1,
    }),
}


@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    reset_registry()


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_the_spec_keeps_every_old_key_and_value(name: str) -> None:
    pytest.importorskip(f"tabzoo_{name.replace('-', '_')}")
    path, before = BEFORE[name]
    spec = get_architecture(name)
    config = dict(spec.default_config)
    assert {k: config.get(k, "<missing>") for k in before} == before
    added = set(config) - set(before)
    # a key added since (a new config field, or an override NPT's spec lacked) changes nothing by
    # default: None (= the preset's value) or the dataclass's own default for it
    from tabzoo.plugins import resolve_object

    defaults = {f.name: f.default for f in dataclasses.fields(resolve_object(path))}
    assert all(config[k] is None or config[k] == defaults.get(k) for k in added), added


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_every_key_is_a_documented_field_of_the_config_dataclass(name: str) -> None:
    pytest.importorskip(f"tabzoo_{name.replace('-', '_')}")
    from tabzoo.plugins import resolve_object

    path, _ = BEFORE[name]
    spec = get_architecture(name)
    fields = {f.name for f in dataclasses.fields(resolve_object(path))}
    assert [f.name for f in spec.config_fields] == list(spec.default_config)
    assert set(spec.default_config) - {"preset"} <= fields
    undocumented = [f.name for f in spec.config_fields if not f.doc]
    assert not undocumented, f"{name}: config fields without a ':param' line: {undocumented}"


def test_npt_accepts_an_override_of_its_preset_through_the_spec() -> None:
    pytest.importorskip("tabzoo_npt")
    model = get_architecture("npt").create({"cardinalities": [0, 0, 2], "dim": 8, "n_heads": 2})
    assert model.config.dim == 8 and model.config.n_layers == 4  # the small preset's depth
