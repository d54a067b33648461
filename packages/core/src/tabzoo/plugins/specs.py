"""What plugins register: small frozen records, cheap to build (heavy code is imported lazily)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from tabzoo.errors import PluginLoadError, TabzooInputError

ARCHITECTURE_KINDS = ("in-context", "row-attention", "multitask", "relational", "other")
PRIOR_KINDS = ("episodes", "multitask", "relational", "lookup")


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not name or not name.replace("-", "_").replace(".", "_").isidentifier():
        raise TabzooInputError(
            f"{what} name {name!r} is invalid: use a non-empty identifier such as 'my_model' "
            "(letters, digits, '_', '-', '.')."
        )


def resolve_object(path: str) -> Any:
    """Import ``"package.module:attr"`` and return the attribute.

    :raises PluginLoadError: when the module or attribute does not exist.
    """
    module_name, _, attr = path.partition(":")
    if not attr:
        raise PluginLoadError(f"{path!r} is not of the form 'package.module:attribute'.")
    try:
        module = import_module(module_name)
    except ImportError as exc:
        raise PluginLoadError(f"cannot import {module_name!r} for {path!r}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise PluginLoadError(f"module {module_name!r} has no attribute {attr!r}.") from exc


@dataclass(frozen=True)
class ConfigField:
    """One key of an architecture's config, read from the plugin's config dataclass.

    :param name: the key.
    :param type: its annotation, as written in the dataclass (e.g. ``"int"``, ``"str | None"``).
    :param default: the value ``default_config`` holds for it (``None`` = the preset's value when
        the config has a ``preset`` key).
    :param doc: its ``:param name:`` line of the dataclass docstring ("" when it has none).
    :param required: the dataclass has no default for it (the caller must give it).
    """

    name: str
    type: str
    default: Any = None
    doc: str = ""
    required: bool = False


def lazy_callable(path: str) -> Callable[..., Any]:
    """A function that imports ``"package.module:attr"`` on its first call and forwards to it."""
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise TabzooInputError(f"{path!r} is not of the form 'package.module:function'.")

    def call(*args: Any, **kwargs: Any) -> Any:
        return resolve_object(path)(*args, **kwargs)

    call.__name__ = path.rpartition(":")[2]
    call.__qualname__ = path
    call.__doc__ = f"Import and call ``{path}``."
    return call


@dataclass(frozen=True)
class ArchitectureSpec:
    """A model architecture a plugin provides.

    :param name: unique name, e.g. ``"tabflex"``.
    :param build: ``build(config: dict) -> torch.nn.Module``, or ``"package.module:build"`` (imported
        on the first build, so registering imports no model code).
    :param default_config: the config ``build`` uses when none is given.
    :param capabilities: property names from :mod:`tabzoo.testing` the model claims.
    :param kind: one of :data:`ARCHITECTURE_KINDS`.
    :param estimator: ``"pkg.module:ClassName"`` of its scikit-learn estimator, or ``None``.
    :param regressor: ``"pkg.module:ClassName"`` of its scikit-learn regressor, or ``None`` (when
        ``estimator`` is a classifier and the plugin also ships a regressor).
    :param pretrained: names of the checkpoints it ships as package data.
    :param config_fields: type, default and docstring of every key of ``default_config`` (see
        :func:`tabzoo.plugins.spec_from_config`, which fills it from the plugin's config dataclass).
    """

    name: str
    build: Callable[[dict[str, Any]], Any]
    default_config: Mapping[str, Any] = field(default_factory=dict)
    capabilities: frozenset[str] = frozenset()
    kind: str = "in-context"
    estimator: str | None = None
    regressor: str | None = None
    pretrained: tuple[str, ...] = ()
    description: str = ""
    config_fields: tuple[ConfigField, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.build, str):
            object.__setattr__(self, "build", lazy_callable(self.build))
        object.__setattr__(self, "config_fields", tuple(self.config_fields))
        ArchitectureSpec.validate(self)
        object.__setattr__(self, "capabilities", frozenset(self.capabilities))

    def validate(self) -> None:
        """Check every field; the registry re-runs this at ``register()`` (subclasses cannot skip it).

        :raises TabzooInputError: naming the field and the fix.
        """
        _check_name(self.name, "architecture")
        if self.kind not in ARCHITECTURE_KINDS:
            raise TabzooInputError(
                f"architecture {self.name!r} has kind {self.kind!r}; use one of {ARCHITECTURE_KINDS}."
            )
        if not callable(self.build):
            raise TabzooInputError(f"architecture {self.name!r}: build must be callable(config) -> nn.Module.")
        if not isinstance(self.default_config, Mapping) or not all(isinstance(k, str) for k in self.default_config):
            raise TabzooInputError(
                f"architecture {self.name!r}: default_config must be a mapping with string keys, "
                f"got {type(self.default_config).__name__}."
            )
        if isinstance(self.capabilities, str) or not all(isinstance(c, str) for c in self.capabilities):
            raise TabzooInputError(
                f"architecture {self.name!r}: capabilities must be a set of capability names (strings), "
                f"e.g. frozenset({{'in_context'}}); got {self.capabilities!r}."
            )
        if not all(isinstance(f, ConfigField) for f in self.config_fields):
            raise TabzooInputError(
                f"architecture {self.name!r}: config_fields must be ConfigField records "
                "(tabzoo.plugins.spec_from_config builds them from the config dataclass)."
            )
        if self.regressor is not None and (not isinstance(self.regressor, str) or ":" not in self.regressor):
            raise TabzooInputError(
                f"architecture {self.name!r}: regressor must be 'package.module:ClassName' or None, "
                f"got {self.regressor!r}."
            )

    def create(self, config: Mapping[str, Any] | None = None) -> Any:
        """Build the model from ``default_config`` updated with ``config``."""
        merged = dict(self.default_config)
        unknown = set(config or {}) - set(merged) if merged else set()
        if unknown:
            raise TabzooInputError(
                f"architecture {self.name!r} has no config keys {sorted(unknown)}; "
                f"known keys are {self.describe_keys(sorted(merged))}."
            )
        merged.update(config or {})
        return self.build(merged)

    def describe_keys(self, keys: list[str]) -> str:
        """``keys`` with their types (from ``config_fields``), for messages: ``"d (int), name (str)"``."""
        types = {f.name: f.type for f in self.config_fields}
        return ", ".join(f"{k} ({types[k]})" if k in types else k for k in keys)

    def estimator_class(self) -> Any:
        """Import and return the estimator class, or raise when the plugin has none."""
        if self.estimator is None:
            raise TabzooInputError(f"architecture {self.name!r} ships no estimator.")
        return resolve_object(self.estimator)

    def regressor_class(self) -> Any:
        """Import and return the regressor class, or raise when the plugin has none."""
        if self.regressor is None:
            raise TabzooInputError(f"architecture {self.name!r} ships no regressor.")
        return resolve_object(self.regressor)


@dataclass(frozen=True)
class PriorSpec:
    """A synthetic-data prior a plugin provides.

    :param factory: ``factory(**config) -> prior``. For ``kind="episodes"`` the prior has
        ``sample(batch_size, *, seed, device="cpu") -> EpisodeBatch``.
    """

    name: str
    factory: Callable[..., Any]
    kind: str = "episodes"
    description: str = ""

    def __post_init__(self) -> None:
        PriorSpec.validate(self)

    def validate(self) -> None:
        """Check every field (re-run by the registry at ``register()``)."""
        _check_name(self.name, "prior")
        if self.kind not in PRIOR_KINDS:
            raise TabzooInputError(f"prior {self.name!r} has kind {self.kind!r}; use one of {PRIOR_KINDS}.")
        if not callable(self.factory):
            raise TabzooInputError(f"prior {self.name!r}: factory must be callable(**config).")

    def create(self, **config: Any) -> Any:
        """Instantiate the prior with ``config``."""
        return self.factory(**config)


@dataclass(frozen=True)
class CaseFactory:
    """A conformance case built on demand: ``register(CaseFactory("mycase", make_case))``.

    The registry calls ``factory()`` inside its own guard, so a factory that raises (or returns
    something else than a ``ConformanceCase`` named ``name``) loses only this case: the failure is
    recorded on the plugin's record and reported by ``tabzoo conformance``.

    ``lazy=True``: the registry calls ``factory()`` only when conformance cases are first asked for
    (``tabzoo conformance``, the kit), not while the plugin loads, so loading (and plugin
    discovery) imports nothing of the case (torch, data). A failure of a lazy factory is then
    recorded at that moment: ``tabzoo conformance`` reports it, ``tabzoo plugins`` does not see it.
    """

    name: str
    factory: Callable[[], Any]
    lazy: bool = False

    def __post_init__(self) -> None:
        CaseFactory.validate(self)

    def validate(self) -> None:
        """Check every field (re-run by the registry at ``register()``)."""
        _check_name(self.name, "conformance case")
        if not callable(self.factory):
            raise TabzooInputError(f"conformance case {self.name!r}: factory must be callable() -> ConformanceCase.")


def _check_path(value: Any, what: str, example: str) -> None:
    if not callable(value) and (not isinstance(value, str) or value.count(":") != 1 or not all(value.split(":"))):
        raise TabzooInputError(f"{what} must be 'package.module:function' (e.g. {example!r}) or a callable; "
                               f"got {value!r}.")


@dataclass(frozen=True)
class DemoSpec:
    """A plugin's ``tabzoo demo`` entry: ``register(DemoSpec("mymodel", "my_pkg.demo:run_demo"))``.

    :param name: the demo's name (usually the architecture's).
    :param run: ``run_demo(*, seed=0, quick=True) -> list[dict]`` (the contract is in
        :mod:`tabzoo.cli._demo`), or its ``"package.module:function"`` path, imported when it runs.
        An in-context classifier that registers no demo gets the core's default demo.
    """

    name: str
    run: Callable[..., Any] | str
    description: str = ""

    def __post_init__(self) -> None:
        DemoSpec.validate(self)

    def validate(self) -> None:
        """Check every field (re-run by the registry at ``register()``)."""
        _check_name(self.name, "demo")
        _check_path(self.run, f"demo {self.name!r}: run", "my_pkg.demo:run_demo")

    @property
    def target(self) -> str:
        """Where the demo lives, for reports: its path, or the function's module and name."""
        if isinstance(self.run, str):
            return self.run
        return f"{getattr(self.run, '__module__', '?')}:{getattr(self.run, '__qualname__', '?')}"

    def load(self) -> Callable[..., Any]:
        """The demo function (imported now when ``run`` is a path)."""
        return resolve_object(self.run) if isinstance(self.run, str) else self.run


@dataclass(frozen=True)
class CommandSpec:
    """A ``tabzoo`` subcommand a plugin adds: ``register(CommandSpec("ramba", "tabzoo_ramba.cli:add_parser"))``.

    :param name: the subcommand (``tabzoo <name> ...``); it may not shadow a core command.
    :param add_parser: ``add_parser(subparsers)`` (adds the subcommand's argparse parser and sets
        ``func(args) -> exit code`` on it), or its ``"package.module:function"`` path. It is imported
        only when ``tabzoo <name>`` runs, so ``tabzoo --help`` stays fast.
    :param help: one line for ``tabzoo plugins``.
    """

    name: str
    add_parser: Callable[[Any], None] | str
    help: str = ""

    def __post_init__(self) -> None:
        CommandSpec.validate(self)

    def validate(self) -> None:
        """Check every field (re-run by the registry at ``register()``)."""
        _check_name(self.name, "command")
        _check_path(self.add_parser, f"command {self.name!r}: add_parser", "my_pkg.cli:add_parser")

    def load(self) -> Callable[[Any], None]:
        """The ``add_parser`` function (imported now when given as a path)."""
        return resolve_object(self.add_parser) if isinstance(self.add_parser, str) else self.add_parser
