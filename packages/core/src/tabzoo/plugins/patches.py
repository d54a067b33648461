"""Detect a plugin that monkeypatches the core while it loads (issue 24 item 4).

A plugin adds models through its hooks; it must never replace ``tabzoo`` itself (a patched
``tabzoo.files.atomic_write`` or estimator method would silently change every other model). Around
each plugin's import and hooks the registry takes a :func:`snapshot` of the identities of every
public callable of every loaded ``tabzoo`` module and of every public attribute of the classes
defined there; :func:`changes` then names

* each one whose identity changed (a rebinding: ``tabzoo.files.atomic_write = mine``), and
* each new public attribute whose value was defined in the plugin's own top-level package (its
  code put into a core module or class, including modules the plugin itself first imported).

The plugin is then listed as failed (``patches core: <names>``), never ok; :func:`restore` puts
the original objects back, and discovery in a child (:mod:`tabzoo.plugins.discovery`) keeps the
command's own process from ever importing it.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

__all__ = ["Snapshot", "changes", "describe_changes", "restore", "snapshot"]

Key = tuple[str, str, str]
"""``(module, attribute, class attribute or "")``."""
Snapshot = dict[Key, Any]


def _core_modules() -> list[tuple[str, ModuleType]]:
    return [(name, mod) for name, mod in list(sys.modules.items())
            if isinstance(mod, ModuleType) and (name == "tabzoo" or name.startswith("tabzoo."))]


def _module_of(value: Any) -> str:
    try:
        owner = getattr(value, "__module__", None)
    except Exception:  # noqa: BLE001 - an object with a hostile __getattr__ is simply not ours
        return ""
    return owner if isinstance(owner, str) else ""


def _public(namespace: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in list(namespace.items()) if isinstance(k, str) and not k.startswith("_")]


def _is_callable(value: Any) -> bool:
    return not isinstance(value, ModuleType) and (
        callable(value) or isinstance(value, (classmethod, staticmethod, property)))


def snapshot() -> Snapshot:
    """The current objects behind every public callable of the loaded core (see the module docstring)."""
    out: Snapshot = {}
    for name, mod in _core_modules():
        try:
            namespace = vars(mod)
        except TypeError:
            continue
        for attr, value in _public(namespace):
            if not _is_callable(value):
                continue
            out[(name, attr, "")] = value
            if isinstance(value, type) and _module_of(value) == name:
                for member, inner in _public(dict(vars(value))):
                    if _is_callable(inner):
                        out[(name, attr, member)] = inner
    return out


def _owned(value: Any, package: str) -> bool:
    owner = _module_of(getattr(value, "__func__", value))
    return bool(package) and package != "tabzoo" and (owner == package or owner.startswith(package + "."))


def changes(before: Snapshot, after: Snapshot, package: str) -> dict[Key, Any]:
    """What changed between two snapshots: ``{key: the original object, or None if it was added}``.

    :param package: the plugin's top-level package (``tabzoo_tabflex``); new attributes defined
        there count as patches, new attributes of other origins (a submodule imported) do not.
    """
    out: dict[Key, Any] = {}
    for key, value in after.items():
        if key in before:
            if before[key] is not value:
                out[key] = before[key]
        elif _owned(value, package):
            out[key] = None
    return out


def describe_changes(found: dict[Key, Any]) -> str:
    """``tabzoo.files.atomic_write, tabzoo.x.Class.fit`` (sorted, at most 8 names)."""
    names = sorted(".".join(p for p in key if p) for key in found)
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return ", ".join(names[:8]) + more


def restore(found: dict[Key, Any]) -> None:
    """Put every original object back (and remove added attributes); best effort per attribute."""
    for (module, attr, member), original in sorted(found.items(), key=lambda kv: (kv[0][2] != "", kv[0])):
        mod = sys.modules.get(module)
        target: Any = mod if not member else getattr(mod, attr, None)
        name = member or attr
        if target is None:
            continue
        try:
            if original is None:
                delattr(target, name)
            else:
                setattr(target, name, original)
        except (AttributeError, TypeError):
            continue
