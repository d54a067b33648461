"""Discovery and loading of plugins from the ``tabzoo`` entry-point group.

Loading survives a broken plugin: each ``EntryPoint.load()`` and each hook call is wrapped, the
error is recorded with the distribution and its version, a warning is given and loading goes on.

Environment variables (comma-separated names; a name matches an entry-point name or a
distribution name):

* ``TABZOO_STRICT_PLUGINS=1``: raise :class:`~tabzoo.errors.PluginLoadError` instead of warning.
* ``TABZOO_LOAD_PLUGINS``: allow-list; only these plugins are loaded.
* ``TABZOO_DISABLE_PLUGINS``: block-list; these plugins are skipped.
"""

from __future__ import annotations

import logging
import os
import threading
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any

import pluggy

from tabzoo.errors import PluginLoadError
from tabzoo.plugins import hookspecs
from tabzoo.plugins.specs import ArchitectureSpec, PriorSpec

logger = logging.getLogger(__name__)
GROUP = "tabzoo"
CORE = "tabzoo-core"


@dataclass
class PluginRecord:
    """One entry point of the ``tabzoo`` group and what became of it."""

    name: str
    distribution: str
    version: str
    module: str
    loaded: bool = False
    skipped: str | None = None
    error: str | None = None
    provides: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "loaded": self.loaded,
            "skipped": self.skipped,
            "error": self.error,
            "provides": {k: sorted(v) for k, v in self.provides.items()},
        }


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


class PluginRegistry:
    """Everything plugins registered, keyed by kind then name, with the record of who gave it."""

    KINDS = ("architectures", "kernel_backends", "priors", "conformance_cases")

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.records: list[PluginRecord] = []
        self.items: dict[str, dict[str, _Entry]] = {k: {} for k in self.KINDS}

    # -- loading -------------------------------------------------------------------------
    def load_entry_points(self, entry_points: Iterable[metadata.EntryPoint] | None = None) -> None:
        """Load every plugin of the ``tabzoo`` group, honouring the allow- and block-lists."""
        eps = list(entry_points) if entry_points is not None else list(metadata.entry_points(group=GROUP))
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
            try:
                module = ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not break tabzoo
                self._fail(record, f"import failed: {type(exc).__name__}: {exc}", exc)
                continue
            self.add_plugin(module, record)

    def add_plugin(self, module: ModuleType | object, record: PluginRecord) -> None:
        """Register an already imported plugin object and run its hooks."""
        try:
            self.pm.register(module, name=f"{record.distribution}:{record.name}")
        except Exception as exc:  # noqa: BLE001
            self._fail(record, f"registration failed: {type(exc).__name__}: {exc}", exc)
            return
        record.loaded = True
        if record not in self.records:
            self.records.append(record)
        for hook_name, kind in zip(hookspecs.HOOK_NAMES, self.KINDS, strict=True):
            impl = getattr(module, hook_name, None)
            if impl is None or not hasattr(impl, f"{hookspecs.PROJECT}_impl"):
                continue  # not a @hookimpl: pluggy would not call it either
            try:
                impl(register=self._register_callback(kind, record))
            except PluginLoadError:
                raise
            except Exception as exc:  # noqa: BLE001
                self._fail(record, f"{hook_name} failed: {type(exc).__name__}: {exc}", exc)

    def _fail(self, record: PluginRecord, message: str, exc: BaseException) -> None:
        record.error = message
        full = f"tabzoo plugin {record.name!r} from {record.distribution} {record.version}: {message}"
        if _strict():
            raise PluginLoadError(
                full + " (TABZOO_STRICT_PLUGINS is set; unset it to skip broken plugins, or set "
                f"TABZOO_DISABLE_PLUGINS={record.name} to skip this one)"
            ) from exc
        logger.debug("%s\n%s", full, "".join(traceback.format_exception(exc)))
        warnings.warn(
            full + f"; it is skipped. Set TABZOO_DISABLE_PLUGINS={record.name} to silence this, or "
            "TABZOO_STRICT_PLUGINS=1 to make it an error.",
            RuntimeWarning,
            stacklevel=3,
        )

    # -- registration --------------------------------------------------------------------
    def _register_callback(self, kind: str, record: PluginRecord) -> Callable[[Any], None]:
        def register(obj: Any) -> None:
            self.add(kind, obj, record)

        return register

    def add(self, kind: str, obj: Any, record: PluginRecord) -> None:
        """Add one registered object; a duplicate name is an error naming both distributions."""
        _validate(kind, obj)
        name = obj.name
        key = f"{obj.op}:{name}" if kind == "kernel_backends" else name
        existing = self.items[kind].get(key)
        if existing is not None:
            other = existing.record
            raise PluginLoadError(
                f"{kind[:-1].replace('_', ' ')} {name!r} is registered twice: by "
                f"{other.distribution} {other.version} (entry point {other.name!r}) and by "
                f"{record.distribution} {record.version} (entry point {record.name!r}). Uninstall one, "
                f"or disable one with TABZOO_DISABLE_PLUGINS={record.name}."
            )
        if kind == "kernel_backends":
            from tabzoo.kernels import register_backend

            register_backend(obj)
        self.items[kind][key] = _Entry(obj, record)
        record.provides.setdefault(kind, []).append(key)

    # -- queries -------------------------------------------------------------------------
    def get(self, kind: str, name: str) -> Any:
        entry = self.items[kind].get(name)
        if entry is None:
            known = sorted(self.items[kind])
            failed = [r.name for r in self.records if r.error]
            hint = f" Plugins that failed to load: {failed} (see `tabzoo plugins`)." if failed else ""
            raise PluginLoadError(
                f"no {kind[:-1].replace('_', ' ')} named {name!r}; installed: {known}. Install the "
                f"package that provides it (e.g. `pip install tabzoo-{name.replace('_', '-')}`).{hint}"
            )
        return entry.obj

    def names(self, kind: str) -> list[str]:
        return sorted(self.items[kind])

    def source(self, kind: str, name: str) -> PluginRecord:
        return self.items[kind][name].record


def _validate(kind: str, obj: Any) -> None:
    expected = {"architectures": ArchitectureSpec, "priors": PriorSpec}.get(kind)
    if expected is not None and not isinstance(obj, expected):
        raise PluginLoadError(
            f"register() for {kind} expects a {expected.__name__}, got {type(obj).__name__}; "
            f"wrap it: register({expected.__name__}(name=..., ...))."
        )
    if not isinstance(getattr(obj, "name", None), str):
        raise PluginLoadError(f"a registered {kind[:-1]} needs a string attribute 'name'; got {obj!r}.")


_lock = threading.Lock()
_registry: PluginRegistry | None = None


def get_registry(reload: bool = False) -> PluginRegistry:
    """The process-wide registry, loading entry points on first use."""
    global _registry
    with _lock:
        if _registry is None or reload:
            registry = PluginRegistry()
            registry.load_entry_points()
            _registry = registry
        return _registry


def reset_registry() -> None:
    """Forget loaded plugins (tests use this after changing the environment)."""
    global _registry
    with _lock:
        _registry = None
