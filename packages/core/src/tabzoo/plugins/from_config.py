"""Architecture specs built from a plugin's config dataclass, never from a hand-written key list.

A plugin's config is a frozen dataclass whose docstring documents each field with a
``:param name: text`` line. :func:`spec_from_config` reads its fields (names, annotations,
defaults, those docstring lines) into the spec's ``default_config`` and ``config_fields``::

    register(spec_from_config(
        MyConfig, name="mymodel", build="my_pkg.model:build", preset="small",
        capabilities=CAPABILITIES, estimator="my_pkg.estimators:MyClassifier",
    ))

Two config forms:

* ``preset="small"``: ``{"preset": "small", <every field>: None}``; ``None`` means "the preset's
  value" (the plugin's ``build`` resolves the preset, then applies the keys that are not ``None``);
* no preset: every field's own default (``defaults=`` supplies or replaces some, e.g. a required
  field), converted to JSON (tuples become lists, nested dataclasses dicts).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tabzoo.errors import TabzooInputError
from tabzoo.plugins.specs import ArchitectureSpec, ConfigField

__all__ = ["config_fields", "spec_from_config"]

_PARAM = re.compile(r"^\s*:param\s+(\w+):\s?(.*)$")


def _param_docs(doc: str | None) -> dict[str, str]:
    """``{name: text}`` of the ``:param name: text`` lines of ``doc`` (continuation lines joined)."""
    out: dict[str, str] = {}
    current: str | None = None
    for line in (doc or "").splitlines():
        match = _PARAM.match(line)
        if match:
            current = match.group(1)
            out[current] = match.group(2).strip()
        elif current is not None and line.strip() and not line.lstrip().startswith(":"):
            out[current] = f"{out[current]} {line.strip()}".strip()
        else:
            current = None
    return out


def _json(value: Any) -> Any:
    """``value`` as plain JSON-able data: tuples -> lists, dataclasses -> dicts (recursively)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    return value


def _default(f: dataclasses.Field[Any]) -> tuple[Any, bool]:
    """``(default, required)`` of one dataclass field."""
    if f.default is not dataclasses.MISSING:
        return _json(f.default), False
    if f.default_factory is not dataclasses.MISSING:
        return _json(f.default_factory()), False
    return None, True


def config_fields(config: type, *, exclude: Iterable[str] = ()) -> tuple[ConfigField, ...]:
    """One :class:`ConfigField` per field of the dataclass ``config``, in declaration order.

    :param exclude: fields that are not part of the plugin's config form (e.g. informational ones).
    :raises TabzooInputError: when ``config`` is not a dataclass or ``exclude`` names no field.
    """
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise TabzooInputError(f"spec_from_config needs a dataclass type, got {config!r}; "
                               "declare the plugin's config with @dataclass.")
    skip = set(exclude)
    known = {f.name for f in dataclasses.fields(config)}
    if skip - known:
        raise TabzooInputError(f"{config.__name__} has no fields {sorted(skip - known)} to exclude; "
                               f"its fields are {sorted(known)}.")
    docs = _param_docs(config.__doc__)
    out = []
    for f in dataclasses.fields(config):
        if f.name in skip:
            continue
        default, required = _default(f)
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", repr(f.type))
        out.append(ConfigField(f.name, kind, default, docs.get(f.name, ""), required))
    return tuple(out)


def spec_from_config(
    config: type,
    *,
    name: str,
    build: Any,
    preset: str | None = None,
    presets: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    exclude: Iterable[str] = (),
    **spec: Any,
) -> ArchitectureSpec:
    """An :class:`ArchitectureSpec` whose config keys come from the dataclass ``config``.

    :param config: the plugin's config dataclass (import it from a module without torch).
    :param name: the architecture's name.
    :param build: ``build(config_dict) -> nn.Module`` or ``"package.module:build"``.
    :param preset: the default preset; the config form is then ``{"preset": preset, field: None, ...}``.
    :param presets: the preset names (documented in the ``preset`` key's ``config_fields`` entry).
    :param defaults: values that replace fields' defaults (or give required fields one); with a
        ``preset`` they replace the ``None``.
    :param exclude: dataclass fields left out of the config form.
    :param spec: every other :class:`ArchitectureSpec` field (``capabilities``, ``kind``,
        ``estimator``, ``regressor``, ``pretrained``, ``description``).
    :raises TabzooInputError: when ``defaults`` names a key the dataclass does not have.
    """
    fields = config_fields(config, exclude=exclude)
    given = dict(defaults or {})
    unknown = set(given) - {f.name for f in fields}
    if unknown:
        raise TabzooInputError(f"defaults {sorted(unknown)} are not fields of {config.__name__}; "
                               f"its fields are {[f.name for f in fields]}.")
    if preset is not None:
        fields = tuple(dataclasses.replace(f, default=None, required=False) for f in fields)
        names = ", ".join(presets) or preset
        fields = (ConfigField("preset", "str", preset, f"named size to start from ({names}); every other "
                              "key set to None keeps the preset's value"), *fields)
    fields = tuple(dataclasses.replace(f, default=_json(given[f.name]), required=False) if f.name in given else f for f in fields)
    default_config = {f.name: f.default for f in fields}
    return ArchitectureSpec(name=name, build=build, default_config=default_config, config_fields=fields, **spec)
