"""Discovery and loading of plugins from the ``tabzoo`` entry-point group.

Loading survives a broken plugin at every stage: ``EntryPoint.load()``, each hook call, each
``register()`` (a wrong type or an invalid spec), each conformance-case factory and each
architecture ``build``. The failure is recorded on the plugin's :class:`PluginRecord` with the
distribution and its version, a ``RuntimeWarning`` is given and everything else keeps working.

A name registered by two distributions (architecture, prior, kernel backend or conformance case)
is *ambiguous*: neither registration is used, ``tabzoo plugins`` lists the conflict, and using the
name raises :class:`~tabzoo.errors.AmbiguousPluginError` naming both distributions and how to
disable either. Every other name keeps working; a conflict never silently picks a winner.

Environment variables (comma-separated names; a name matches an entry-point name or a
distribution name):

* ``TABZOO_STRICT_PLUGINS=1``: raise :class:`~tabzoo.errors.PluginLoadError` at the first failure.
* ``TABZOO_LOAD_PLUGINS``: allow-list; only these plugins are loaded.
* ``TABZOO_DISABLE_PLUGINS``: block-list; these plugins are skipped.

The process-wide registry (:func:`get_registry`) first discovers plugins in a child process
(:mod:`tabzoo.plugins.discovery`, cached by the installed distributions): a plugin that calls
``os._exit`` or hangs there is recorded as failed and never imported here.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any

import pluggy

from tabzoo.errors import AmbiguousPluginError, PluginBuildError, PluginLoadError, TabzooInputError
from tabzoo.plugins import hookspecs, patches
from tabzoo.plugins.lazy_cases import LazyCases
from tabzoo.plugins.records import CaseFailure, PluginFailure, PluginRecord, install_command
from tabzoo.plugins.specs import ArchitectureSpec, CaseFactory, CommandSpec, DemoSpec, PriorSpec

logger = logging.getLogger(__name__)
GROUP = "tabzoo"
PATCH_ERROR = "PluginPatchesCore"
CORE = "tabzoo-core"

__all__ = ["CORE", "GROUP", "CaseFailure", "PluginFailure", "PluginRecord", "PluginRegistry",
           "get_registry", "reset_registry"]


@dataclass
class _Entry:
    obj: Any
    record: PluginRecord


def _env_names(var: str) -> set[str] | None:
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _strict() -> bool:
    return os.environ.get("TABZOO_STRICT_PLUGINS", "").strip().lower() in {"1", "true", "yes", "on"}


def _dist_of(ep: metadata.EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "<unknown>", "?"
    return dist.metadata["Name"] or "<unknown>", dist.version or "?"


class _StrictAbort(PluginLoadError):
    """Raised by strict mode; passes through every guard."""


def _pass_interrupt(exc: BaseException) -> None:
    """Re-raise Ctrl-C; any other ``BaseException`` of a plugin (SystemExit, a custom one) is its failure."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc


def _exc_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _is_conformance_case(obj: Any) -> bool:
    """``isinstance(obj, tabzoo.testing.ConformanceCase)`` without importing the kit, a floor above this
    one: an object can only be a case once ``tabzoo.testing.case`` is imported."""
    case_module = sys.modules.get("tabzoo.testing.case")
    return case_module is not None and isinstance(obj, case_module.ConformanceCase)


def _what(kind: str) -> str:
    return kind[:-1].replace("_", " ")


class PluginRegistry:
    """Everything plugins registered, keyed by kind then name, with the record of who gave it.

    ``items[kind]`` holds only usable (unambiguous) entries; ``conflicted[kind][name]`` holds the
    entries of every distribution that registered an ambiguous name.
    """

    KINDS = ("architectures", "kernel_backends", "priors", "conformance_cases", "commands", "demos")

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.records: list[PluginRecord] = []
        self.items: dict[str, dict[str, _Entry]] = {k: {} for k in self.KINDS}
        self.items["conformance_cases"] = LazyCases(self._realize_case)  # lazy factories build on first read
        self.conflicted: dict[str, dict[str, list[_Entry]]] = {k: {} for k in self.KINDS}

    # -- loading -------------------------------------------------------------------------
    def load_entry_points(self, entry_points: Iterable[metadata.EntryPoint] | None = None, *,
                          excluded: dict[str, str] | None = None,
                          progress: Callable[[str, str], None] | None = None) -> None:
        """Load every plugin of the ``tabzoo`` group, honouring the allow- and block-lists.

        :param excluded: entry-point names not to import, each with the import failure to record
            (plugins that killed or hung the discovery child, :mod:`tabzoo.plugins.discovery`).
        :param progress: called as ``progress("start" | "done", name)`` around each plugin's load.
        """
        eps = list(entry_points) if entry_points is not None else list(metadata.entry_points(group=GROUP))
        excluded = excluded or {}
        allow, block = _env_names("TABZOO_LOAD_PLUGINS"), _env_names("TABZOO_DISABLE_PLUGINS")
        for ep in sorted(eps, key=lambda e: e.name):
            dist, version = _dist_of(ep)
            record = PluginRecord(ep.name, dist, version, ep.value)
            self.records.append(record)
            names = {ep.name, dist}
            if allow is not None and not names & allow:
                record.skipped = "not in TABZOO_LOAD_PLUGINS"
                continue
            if block is not None and names & block:
                record.skipped = "in TABZOO_DISABLE_PLUGINS"
                continue
            if ep.name in excluded:
                self._fail(record, PluginFailure("import", excluded[ep.name]), None)
                continue
            if progress is not None:
                progress("start", ep.name)
            self._load_one(ep, record)
            if progress is not None:
                progress("done", ep.name)

    def _load_one(self, ep: metadata.EntryPoint, record: PluginRecord) -> None:
        before = patches.snapshot()
        try:
            try:
                module = ep.load()
            except _StrictAbort:
                raise
            except BaseException as exc:  # noqa: BLE001 - a broken plugin must not break tabzoo
                _pass_interrupt(exc)
                self._fail(record, PluginFailure("import", _exc_text(exc)), exc)
                return
            self.add_plugin(module, record)
        finally:
            self._check_patches(record, before)

    def _check_patches(self, record: PluginRecord, before: patches.Snapshot, case: str | None = None) -> bool:
        """A plugin that replaced core callables while loading (or while building its lazy case
        ``case``) fails: the originals are put back, its registrations are withdrawn, and it is
        listed as ``patches core: <names>``. ``True`` when it did."""
        found = patches.changes(before, patches.snapshot(), record.module.split(":")[0].split(".")[0].strip())
        if not found:
            return False
        patches.restore(found)
        self._withdraw(record)
        where = f" (while building its conformance case {case!r})" if case is not None else ""
        self._fail(record, PluginFailure(
            "patch", f"{PATCH_ERROR}: patches core{where}: {patches.describe_changes(found)}; tabzoo does not "
                     "load it (a plugin adds models through its hooks and must not change tabzoo itself)",
            kind=None if case is None else "conformance_cases", name=case), None)
        return True

    def _withdraw(self, record: PluginRecord) -> None:
        """Remove everything ``record`` registered and unregister it from pluggy."""
        for kind, names in record.provides.items():
            for key in names:
                entry = dict.get(self.items[kind], key)  # never builds a lazy case
                if entry is not None and entry.record is record:
                    del self.items[kind][key]
                    if kind == "kernel_backends":
                        self._unregister_backend(entry.obj)
        record.provides.clear()
        record.loaded = False
        try:
            self.pm.unregister(name=f"{record.distribution}:{record.name}")
        except (ValueError, KeyError, AssertionError):
            pass

    def add_plugin(self, module: ModuleType | object, record: PluginRecord) -> None:
        """Register an already imported plugin object and run its hooks, each under its own guard."""
        if record not in self.records:
            self.records.append(record)
        try:
            self.pm.register(module, name=f"{record.distribution}:{record.name}")
        except BaseException as exc:  # noqa: BLE001
            _pass_interrupt(exc)
            self._fail(record, PluginFailure("register", _exc_text(exc)), exc)
            return
        record.loaded = True
        for hook_name, kind in zip(hookspecs.HOOK_NAMES, self.KINDS, strict=True):
            impl = getattr(module, hook_name, None)
            if impl is None or not hasattr(impl, f"{hookspecs.PROJECT}_impl"):
                continue  # not a @hookimpl: pluggy would not call it either
            try:
                impl(register=self._register_callback(kind, record, hook_name))
            except _StrictAbort:
                raise
            except BaseException as exc:  # noqa: BLE001
                _pass_interrupt(exc)
                self._fail(record, PluginFailure("hook", _exc_text(exc), hook=hook_name, kind=kind), exc)

    def _fail(self, record: PluginRecord, failure: PluginFailure, exc: BaseException | None) -> None:
        message = record.add_failure(failure)
        full = f"tabzoo {record.label}: {message}"
        if _strict():
            raise _StrictAbort(
                full + " (TABZOO_STRICT_PLUGINS is set; unset it to skip what is broken, or set "
                f"TABZOO_DISABLE_PLUGINS={record.name} to skip this plugin)"
            ) from exc
        if exc is not None:
            logger.debug("%s\n%s", full, "".join(traceback.format_exception(exc)))
        lost = "that name is unusable" if failure.stage == "conflict" else "it is skipped"
        warnings.warn(
            full + f"; {lost}. Set TABZOO_DISABLE_PLUGINS={record.name} to silence this, or "
            "TABZOO_STRICT_PLUGINS=1 to make it an error.",
            RuntimeWarning,
            stacklevel=3,
        )

    # -- registration --------------------------------------------------------------------
    def _register_callback(self, kind: str, record: PluginRecord, hook: str | None = None) -> Callable[[Any], None]:
        def register(obj: Any) -> None:
            try:
                self.add(kind, obj, record)
            except _StrictAbort:
                raise
            except Exception as exc:  # noqa: BLE001 - a bad registration loses only itself
                stage = "conflict" if isinstance(exc, AmbiguousPluginError) else "validate"
                name = getattr(obj, "name", None)
                self._fail(record, PluginFailure(stage, _exc_text(exc), hook=hook, kind=kind,
                                                 name=name if isinstance(name, str) else None), exc)

        return register

    def add(self, kind: str, obj: Any, record: PluginRecord) -> None:
        """Add one registered object.

        :raises PluginLoadError: for a wrong type; :class:`AmbiguousPluginError` when another
            distribution registered the same name (both registrations are then withdrawn).
        """
        obj = _validate(kind, obj)
        if kind == "conformance_cases" and isinstance(obj, CaseFactory) and not obj.lazy:
            obj = self._build_case(obj, record)
            if obj is None:
                return
        name = obj.name
        if kind == "kernel_backends":
            key = f"{obj.op}:{name}"
            if not obj.origin:
                obj = dataclasses.replace(obj, origin=f"{record.distribution} {record.version}")
        else:
            key = name
        if kind == "architectures":
            obj = _guard_build(obj, record, self)
        if key in self.conflicted[kind]:
            self.conflicted[kind][key].append(_Entry(obj, record))
            raise AmbiguousPluginError(self._ambiguity_message(kind, key))
        existing = dict.get(self.items[kind], key)  # never builds a lazy case
        if existing is not None and existing.record.distribution != record.distribution:
            del self.items[kind][key]
            if kind == "kernel_backends":
                self._unregister_backend(existing.obj)
            self.conflicted[kind][key] = [existing, _Entry(obj, record)]
            existing.record.add_failure(PluginFailure(
                "conflict", f"{_what(kind)} {key!r} is also registered by {record.distribution} "
                f"{record.version}", kind=kind, name=key))
            raise AmbiguousPluginError(self._ambiguity_message(kind, key))
        if existing is not None:
            raise PluginLoadError(
                f"{_what(kind)} {key!r} is registered twice by {record.label}; register each name once."
            )
        if kind == "kernel_backends":
            self._register_backend(obj)
        self.items[kind][key] = _Entry(obj, record)
        record.provides.setdefault(kind, []).append(key)

    def _build_case(self, factory: CaseFactory, record: PluginRecord) -> Any:
        """Call a case factory under its own guard; ``None`` (and a recorded failure) if it fails."""
        try:
            case = factory.factory()
            if not _is_conformance_case(case):
                raise TypeError(f"the factory returned a {type(case).__name__}, not a ConformanceCase")
            if case.name != factory.name:
                raise TabzooInputError(
                    f"the factory of case {factory.name!r} built a case named {case.name!r}; make them equal"
                )
        except BaseException as exc:  # noqa: BLE001 - a broken case must not break the others
            _pass_interrupt(exc)
            self._fail(record, PluginFailure("case", _exc_text(exc), hook="tabzoo_conformance_cases",
                                             kind="conformance_cases", name=factory.name), exc)
            return None
        return case

    def _realize_case(self, entry: _Entry) -> _Entry | None:
        """Build a lazy case factory (:mod:`tabzoo.plugins.lazy_cases`); ``None`` when it failed.

        The build runs under the same core-patching check as the plugin's load: a case module that
        patches the core at import fails the whole plugin (core put back, registrations withdrawn)."""
        before = patches.snapshot()
        try:
            case = self._build_case(entry.obj, entry.record)
        finally:
            if self._check_patches(entry.record, before, case=entry.obj.name):
                case = None
        if case is None:
            names = entry.record.provides.get("conformance_cases", [])
            if entry.obj.name in names:
                names.remove(entry.obj.name)
            return None
        return _Entry(case, entry.record)

    @staticmethod
    def _register_backend(backend: Any) -> None:
        from tabzoo.kernels import list_backends, register_backend, unregister_backend

        for old in list_backends(backend.op):  # the same distribution, loaded by an earlier registry
            if old.name == backend.name and old.origin == backend.origin:
                unregister_backend(old.op, old.name)
        register_backend(backend)

    @staticmethod
    def _unregister_backend(backend: Any) -> None:
        from tabzoo.kernels import unregister_backend

        try:
            unregister_backend(backend.op, backend.name)
        except KeyError:
            pass

    def _ambiguity_message(self, kind: str, key: str) -> str:
        entries = self.conflicted[kind][key]
        who = " and ".join(f"{e.record.distribution} {e.record.version} (entry point {e.record.name!r})"
                           for e in entries)
        disable = " or ".join(f"TABZOO_DISABLE_PLUGINS={e.record.name}" for e in entries)
        return (f"{_what(kind)} {key!r} is ambiguous: it is registered by {who}. tabzoo will not pick one. "
                f"Uninstall one of them, or disable one with {disable}.")

    # -- queries -------------------------------------------------------------------------
    def check_name(self, kind: str, name: str) -> None:
        """Raise :class:`AmbiguousPluginError` when ``name`` is registered by several distributions."""
        if name in self.conflicted[kind]:
            raise AmbiguousPluginError(self._ambiguity_message(kind, name))

    def get(self, kind: str, name: str) -> Any:
        """The object registered under ``name``.

        :raises AmbiguousPluginError: when several distributions registered ``name``.
        :raises PluginLoadError: when nothing did; the message lists what is installed.
        """
        self.check_name(kind, name)
        entry = self.items[kind].get(name)
        if entry is None:
            known = sorted(self.items[kind])
            failed = [r.name for r in self.records if r.error]
            hint = f" Plugins that failed to load: {failed} (see `tabzoo plugins`)." if failed else ""
            dist = known_distribution(kind, name)
            where = (f"It is provided by {dist}; from a clone of this repository: {install_command(dist)}." if dist else
                     "Install the package that provides it (`tabzoo plugins` lists what is installed).")
            raise PluginLoadError(f"no {_what(kind)} named {name!r}; installed: {known}. {where}{hint}")
        return entry.obj

    def names(self, kind: str) -> list[str]:
        """Usable names of ``kind`` (ambiguous names are listed by :meth:`conflicts` instead)."""
        return sorted(self.items[kind])

    def source(self, kind: str, name: str) -> PluginRecord:
        self.check_name(kind, name)
        return self.items[kind][name].record

    def conflicts(self) -> dict[str, dict[str, list[PluginRecord]]]:
        """``kind -> name -> records`` of every ambiguous name (each with two or more records)."""
        return {kind: {name: [e.record for e in entries] for name, entries in sorted(table.items())}
                for kind, table in self.conflicted.items() if table}

    def conformance_cases(self) -> list[tuple[Any, PluginRecord]]:
        """Usable conformance cases with the record of the plugin that registered each."""
        return [(e.obj, e.record) for e in self.items["conformance_cases"].values()]

    def case_failures(self) -> list[CaseFailure]:
        """Every conformance case that could not be built or registered (see ``plugins-api``).

        Includes case factories that raised, ``tabzoo_conformance_cases`` hooks that raised, cases
        of a wrong type, case names registered by two distributions (one entry each) and plugins
        whose import failed (case = the entry-point name; their cases are unknown).
        """
        self.items["conformance_cases"].realize()  # type: ignore[attr-defined]
        out: list[CaseFailure] = []
        for rec in self.records:
            for f in rec.failures:
                relevant = f.kind == "conformance_cases" or f.stage in ("import", "register")
                if relevant and f.stage != "conflict":
                    out.append(CaseFailure(f.name or rec.name, rec.name, rec.distribution, rec.version,
                                           f.stage, f.error))
        for name, entries in sorted(self.conflicted["conformance_cases"].items()):
            message = self._ambiguity_message("conformance_cases", name)
            out.extend(CaseFailure(name, e.record.name, e.record.distribution, e.record.version, "conflict",
                                   f"AmbiguousPluginError: {message}") for e in entries)
        return out


def _validate(kind: str, obj: Any) -> Any:
    expected: type[ArchitectureSpec | PriorSpec | CommandSpec | DemoSpec] | None = {
        "architectures": ArchitectureSpec, "priors": PriorSpec, "commands": CommandSpec, "demos": DemoSpec,
    }.get(kind)
    if expected is not None and not isinstance(obj, expected):
        raise PluginLoadError(
            f"register() for {kind} expects a {expected.__name__}, got {type(obj).__name__}; "
            f"wrap it: register({expected.__name__}(name=..., ...))."
        )
    if expected is not None:
        expected.validate(obj)  # the base class's checks, even for a subclass that skips them
    if kind == "kernel_backends":
        from tabzoo.kernels import Backend

        if not isinstance(obj, Backend):
            raise PluginLoadError(
                f"register() for kernel backends expects a tabzoo.kernels.Backend, got {type(obj).__name__}."
            )
    if isinstance(obj, CaseFactory):
        CaseFactory.validate(obj)
    if kind == "conformance_cases" and not isinstance(obj, CaseFactory):
        if not _is_conformance_case(obj):
            raise PluginLoadError(
                f"register() for conformance cases expects a tabzoo.testing.ConformanceCase or a "
                f"tabzoo.plugins.CaseFactory, got {type(obj).__name__}."
            )
    if not isinstance(getattr(obj, "name", None), str):
        raise PluginLoadError(f"a registered {_what(kind)} needs a string attribute 'name'; got {obj!r}.")
    return obj


def _guard_build(spec: ArchitectureSpec, record: PluginRecord, registry: PluginRegistry) -> ArchitectureSpec:
    """A copy of ``spec`` whose ``build`` records a failure on ``record`` and names the distribution."""
    inner = spec.build
    if getattr(inner, "_tabzoo_guarded", False):
        return spec

    def build(config: dict[str, Any]) -> Any:
        try:
            return inner(config)
        except TabzooInputError:
            raise  # the user's config is at fault; the plugin said so
        except Exception as exc:
            failure = PluginFailure("build", _exc_text(exc), kind="architectures", name=spec.name)
            message = record.add_failure(failure)
            raise PluginBuildError(
                f"architecture {spec.name!r} of {record.label} could not be built: {message}. Report it to "
                f"the plugin's authors; other architectures are unaffected "
                f"(TABZOO_DISABLE_PLUGINS={record.name} hides this plugin)."
            ) from exc

    build._tabzoo_guarded = True  # type: ignore[attr-defined]
    return dataclasses.replace(spec, build=build)


_lock = threading.Lock()
_registry: PluginRegistry | None = None


#: the workspace's distributions and what they register: install hints name only these, never a guess
KNOWN_DISTRIBUTIONS: dict[str, dict[str, str]] = {
    "architectures": {"tabflex": "tabzoo-tabflex", "orion-msp": "tabzoo-orion-msp", "npt": "tabzoo-npt",
                      "multitab": "tabzoo-multitab", "ramba": "tabzoo-ramba"},
    "priors": {n: "tabzoo-priors" for n in ("icl", "mix", "mmoe", "multitab_bench", "npt_lookup",
                                            "relational", "scm", "teacher", "tree_scm")},
}
KNOWN_DISTRIBUTIONS["conformance_cases"] = {**KNOWN_DISTRIBUTIONS["architectures"],
                                            "ramba-nycflights": "tabzoo-ramba"}


def known_distribution(kind: str, name: str) -> str | None:
    """The tabzoo distribution that registers ``name`` of ``kind``, or ``None`` when unknown."""
    return KNOWN_DISTRIBUTIONS.get(kind, {}).get(name)


def get_registry(reload: bool = False) -> PluginRegistry:
    """The process-wide registry, loading entry points on first use."""
    global _registry
    with _lock:
        if _registry is None or reload:
            from tabzoo.plugins.discovery import excluded_plugins

            registry = PluginRegistry()
            registry.load_entry_points(excluded=excluded_plugins())
            _registry = registry
        return _registry


def reset_registry() -> None:
    """Forget loaded plugins (tests use this after changing the environment)."""
    global _registry
    with _lock:
        _registry = None
