"""One declaration for a plugin that adds models: what its ``plugin.py`` holds, and nothing else.

A model plugin's entry point names a :class:`ModelPlugin` object instead of a module of
``@hookimpl`` functions; the object implements every hook from what it was given::

    # pyproject.toml:  [project.entry-points.tabzoo]  mymodel = "my_pkg.plugin:plugin"
    plugin = ModelPlugin(
        spec_from_config(MyConfig, name="mymodel", build="my_pkg.model:build", ...),
        cases={"mymodel": "my_pkg.conformance:make_case"},   # built when cases are asked for
        demo="my_pkg.demo:run_demo",                   # optional
        commands=[CommandSpec("mymodel", "my_pkg.cli:add_parser")],   # optional
    )

Nothing heavy is imported while the plugin loads: conformance cases, demos and subcommands are
imported only when used (a case named in ``cases={name: source}`` when cases are first asked for,
a demo when it runs, a subcommand's parser when ``tabzoo <command>`` runs). Cases given without
their names (``cases="pkg.module:function"``) are built while the plugin loads. A plugin with needs beyond this can still be
a module of ``@hookimpl`` functions (see :mod:`tabzoo.plugins.hookspecs`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from tabzoo.errors import TabzooInputError
from tabzoo.plugins.hookspecs import Register, hookimpl
from tabzoo.plugins.specs import (
    ArchitectureSpec,
    CaseFactory,
    CommandSpec,
    DemoSpec,
    PriorSpec,
    resolve_object,
)

__all__ = ["ModelPlugin"]

CaseSource = str | Callable[[], Any]


class ModelPlugin:
    """The hooks of a plugin that adds architectures (and their priors, cases, demo and commands).

    :param architectures: the architectures' specs (usually from :func:`tabzoo.plugins.spec_from_config`).
    :param priors: priors the plugin adds (e.g. its own pretraining batches).
    :param cases: conformance-case factories, each ``"package.module:function"`` or a callable
        returning one ``ConformanceCase`` or a list of them; called when the registry loads. Or
        ``{name: source}``, each source returning the one case ``name``: registered by name at
        once and built only when cases are first asked for (:class:`CaseFactory` ``lazy=True``),
        so loading the plugin imports nothing of them (no torch).
    :param demo: its ``tabzoo demo`` function (``"package.module:run_demo"`` or a callable), or
        ``None`` (an in-context classifier then gets the core's default demo). Named after the
        first architecture.
    :param commands: ``tabzoo`` subcommands it adds.
    """

    def __init__(
        self,
        *architectures: ArchitectureSpec,
        priors: Sequence[PriorSpec] = (),
        cases: CaseSource | Sequence[CaseSource] | Mapping[str, CaseSource] = (),
        demo: str | Callable[..., Any] | None = None,
        commands: Sequence[CommandSpec] = (),
    ) -> None:
        if not architectures or not all(isinstance(a, ArchitectureSpec) for a in architectures):
            raise TabzooInputError("ModelPlugin needs one or more ArchitectureSpec (e.g. from spec_from_config).")
        self.architectures = tuple(architectures)
        self.priors = tuple(priors)
        self.named_cases = dict(cases) if isinstance(cases, Mapping) else {}
        self.cases: tuple[CaseSource, ...] = (
            () if isinstance(cases, Mapping) else (cases,) if isinstance(cases, str) or callable(cases) else tuple(cases))
        self.demos = () if demo is None else (DemoSpec(architectures[0].name, demo),)
        self.commands = tuple(commands)

    def __repr__(self) -> str:
        return f"ModelPlugin({', '.join(a.name for a in self.architectures)})"

    @staticmethod
    def _register_all(register: Register, things: Iterable[Any]) -> None:
        for thing in things:
            register(thing)

    @hookimpl
    def tabzoo_register_architectures(self, register: Register) -> None:
        """Register the architectures."""
        self._register_all(register, self.architectures)

    @hookimpl
    def tabzoo_register_priors(self, register: Register) -> None:
        """Register the plugin's priors."""
        self._register_all(register, self.priors)

    @hookimpl
    def tabzoo_conformance_cases(self, register: Register) -> None:
        """Register the conformance cases: those given without names are built now, named ones lazily."""
        for source in self.cases:
            made = _call_source(source)
            self._register_all(register, made if isinstance(made, list | tuple) else [made])
        for name, named in self.named_cases.items():
            register(CaseFactory(name, partial(_call_source, named), lazy=True))

    @hookimpl
    def tabzoo_register_demos(self, register: Register) -> None:
        """Register the demo, if any."""
        self._register_all(register, self.demos)

    @hookimpl
    def tabzoo_register_commands(self, register: Register) -> None:
        """Register the subcommands."""
        self._register_all(register, self.commands)


def _call_source(source: CaseSource) -> Any:
    """Call a case source (``"pkg.module:function"`` or a callable): now for ``cases=[...]``, when cases
    are first asked for for a ``cases={name: source}`` entry."""
    return resolve_object(source)() if isinstance(source, str) else source()
