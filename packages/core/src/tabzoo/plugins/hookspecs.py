"""Typed hook specifications of the ``tabzoo`` entry-point group.

Each hook receives a single ``register`` callback; a plugin calls it once per thing it provides::

    from tabzoo.plugins import hookimpl, ArchitectureSpec

    @hookimpl
    def tabzoo_register_architectures(register):
        register(ArchitectureSpec(name="mymodel", build=_build, default_config={"d": 64}))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

PROJECT = "tabzoo"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Register = Callable[[Any], None]


@hookspec
def tabzoo_register_architectures(register: Register) -> None:
    """Register model architectures: call ``register(ArchitectureSpec(...))`` for each."""


@hookspec
def tabzoo_register_kernel_backends(register: Register) -> None:
    """Register extra kernel backends: call ``register(tabzoo.kernels.Backend(...))`` for each."""


@hookspec
def tabzoo_register_priors(register: Register) -> None:
    """Register synthetic-data priors: call ``register(PriorSpec(...))`` for each."""


@hookspec
def tabzoo_conformance_cases(register: Register) -> None:
    """Register conformance cases: call ``register(tabzoo.testing.ConformanceCase(...))`` for each."""


@hookspec
def tabzoo_register_commands(register: Register) -> None:
    """Register ``tabzoo`` subcommands: call ``register(CommandSpec(name, "pkg.cli:add_parser"))`` for each
    (like ``llm``'s ``register_commands``; the parser is imported only when its subcommand runs)."""


@hookspec
def tabzoo_register_demos(register: Register) -> None:
    """Register ``tabzoo demo`` entries: call ``register(DemoSpec(name, "pkg.demo:run_demo"))`` for each."""


HOOK_NAMES: tuple[str, ...] = (
    "tabzoo_register_architectures",
    "tabzoo_register_kernel_backends",
    "tabzoo_register_priors",
    "tabzoo_conformance_cases",
    "tabzoo_register_commands",
    "tabzoo_register_demos",
)
