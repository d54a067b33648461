"""Issue 31 item 4: ``spec_from_config`` builds a spec's config keys from a config dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.plugins import (
    ArchitectureSpec,
    ConfigField,
    config_fields,
    lazy_callable,
    spec_from_config,
)


@dataclass(frozen=True)
class ToyConfig:
    """A toy model's shape.

    :param width: token width;
        continued on a second line.
    :param depth: layers.
    :param sizes: per-layer sizes.
    """

    width: int
    depth: int = 2
    sizes: tuple[int, ...] = (4, 8)
    note: str | None = None
    tags: list[str] = field(default_factory=lambda: ["a"])


def test_fields_carry_types_defaults_docs_and_required() -> None:
    fields = {f.name: f for f in config_fields(ToyConfig)}
    assert list(fields) == ["width", "depth", "sizes", "note", "tags"]
    assert fields["width"] == ConfigField("width", "int", None, "token width; continued on a second line.", True)
    assert fields["depth"].default == 2 and fields["depth"].doc == "layers." and not fields["depth"].required
    assert fields["sizes"].default == [4, 8] and fields["sizes"].type == "tuple[int, ...]"  # JSON form
    assert fields["note"].type == "str | None" and fields["note"].doc == ""
    assert fields["tags"].default == ["a"]


def test_the_plain_form_holds_defaults_and_given_values() -> None:
    spec = spec_from_config(ToyConfig, name="toy", build=dict, defaults={"width": 3}, exclude=("tags",))
    assert dict(spec.default_config) == {"width": 3, "depth": 2, "sizes": [4, 8], "note": None}
    assert not any(f.required for f in spec.config_fields)
    assert isinstance(spec, ArchitectureSpec) and spec.create({"depth": 5}) == {**spec.default_config, "depth": 5}


def test_the_preset_form_holds_the_preset_and_none_overrides() -> None:
    spec = spec_from_config(ToyConfig, name="toy", build=dict, preset="small", presets=("small", "big"))
    assert dict(spec.default_config) == {"preset": "small", "width": None, "depth": None, "sizes": None,
                                         "note": None, "tags": None}
    assert "small, big" in spec.config_fields[0].doc


def test_an_unknown_key_names_the_known_keys_with_their_types() -> None:
    spec = spec_from_config(ToyConfig, name="toy", build=dict, defaults={"width": 3})
    with pytest.raises(TabzooInputError, match=r"no config keys \['wdith'\].*width \(int\)"):
        spec.create({"wdith": 4})


@pytest.mark.parametrize("bad", [{"exclude": ("nope",)}, {"defaults": {"nope": 1}}])
def test_names_that_are_not_fields_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(TabzooInputError, match="nope"):
        spec_from_config(ToyConfig, name="toy", build=dict, **bad)  # type: ignore[arg-type]


def test_a_non_dataclass_is_refused_with_the_fix() -> None:
    with pytest.raises(TabzooInputError, match="@dataclass"):
        config_fields(dict)


def test_build_by_path_is_imported_only_when_called() -> None:
    spec = ArchitectureSpec(name="toy", build="json:dumps", default_config={"a": 1})
    assert spec.create() == '{"a": 1}'
    with pytest.raises(TabzooInputError, match="package.module:function"):
        lazy_callable("json.dumps")


@given(st.dictionaries(st.sampled_from(["width", "depth", "note"]), st.integers(-5, 5)))
def test_given_defaults_always_win(values: dict[str, int]) -> None:
    spec = spec_from_config(ToyConfig, name="toy", build=dict, defaults=values)
    assert {k: spec.default_config[k] for k in values} == values
