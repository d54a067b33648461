"""Plugins: pluggy hooks discovered through the ``tabzoo`` entry-point group.

A plugin package declares ``[project.entry-points.tabzoo] myname = "mypkg.plugin:plugin"``; its
``plugin.py`` holds one :class:`ModelPlugin` declaration (specs from the config dataclass, paths of
its cases, demo and subcommands) and imports its model lazily. A module of ``@hookimpl`` functions
(``myname = "mypkg.plugin"``) works too, for plugins that add no model (e.g. only priors).
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins.from_config import config_fields, spec_from_config
from tabzoo.plugins.hookspecs import HOOK_NAMES, hookimpl, hookspec
from tabzoo.plugins.manager import (
    GROUP,
    PluginRegistry,
    get_registry,
    reset_registry,
)
from tabzoo.plugins.model_plugin import ModelPlugin
from tabzoo.plugins.records import CaseFailure, PluginFailure, PluginRecord
from tabzoo.plugins.specs import (
    ArchitectureSpec,
    CaseFactory,
    CommandSpec,
    ConfigField,
    DemoSpec,
    PriorSpec,
    lazy_callable,
    resolve_object,
)

__all__ = [
    "GROUP",
    "HOOK_NAMES",
    "ArchitectureSpec",
    "CaseFactory",
    "CaseFailure",
    "CommandSpec",
    "ConfigField",
    "DemoSpec",
    "ModelPlugin",
    "PluginFailure",
    "PluginRecord",
    "PluginRegistry",
    "PriorSpec",
    "config_fields",
    "get_architecture",
    "get_prior",
    "get_registry",
    "hookimpl",
    "hookspec",
    "lazy_callable",
    "list_architectures",
    "list_conformance_cases",
    "list_plugins",
    "list_priors",
    "reset_registry",
    "resolve_object",
    "spec_from_config",
]


def get_architecture(name: str) -> ArchitectureSpec:
    """The :class:`ArchitectureSpec` registered under ``name``."""
    return get_registry().get("architectures", name)


def get_prior(name: str, **config: Any) -> Any:
    """Instantiate the prior registered under ``name`` with ``config``."""
    spec: PriorSpec = get_registry().get("priors", name)
    return spec.create(**config)


def list_architectures() -> list[str]:
    return get_registry().names("architectures")


def list_priors() -> list[str]:
    return get_registry().names("priors")


def list_conformance_cases() -> list[Any]:
    """Every registered conformance case object."""
    return [e.obj for e in get_registry().items["conformance_cases"].values()]


def list_plugins() -> list[PluginRecord]:
    """One record per entry point: loaded, skipped (and why) or failed (and the error)."""
    return list(get_registry().records)
