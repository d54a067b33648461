"""What became of each plugin: its record, and every failure at every stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STAGES = ("import", "register", "hook", "validate", "conflict", "case", "build", "patch")


@dataclass(frozen=True)
class PluginFailure:
    """One failure of one plugin.

    :param stage: one of :data:`STAGES`: ``import`` (``ep.load()`` raised), ``register``
        (pluggy refused the module), ``hook`` (a hook raised), ``validate`` (``register()`` got a
        wrong type or an invalid object), ``conflict`` (a name another distribution also
        registers), ``case`` (a conformance-case factory raised), ``build`` (an architecture's
        ``build`` raised), ``patch`` (its loading replaced core callables, :mod:`tabzoo.plugins.patches`).
    :param error: ``"ExceptionType: message"``.
    :param hook: the hook that was running, if any.
    :param kind: ``architectures``, ``kernel_backends``, ``priors``, ``conformance_cases``, ``commands`` or ``demos``.
    :param name: the registered thing's name, when known.
    """

    stage: str
    error: str
    hook: str | None = None
    kind: str | None = None
    name: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "error": self.error, "hook": self.hook, "kind": self.kind, "name": self.name}


@dataclass
class PluginRecord:
    """One entry point of the ``tabzoo`` group and what became of it.

    ``error`` is the first failure's message (kept for the ``tabzoo plugins`` schema);
    ``failures`` holds every failure with its stage.
    """

    name: str
    distribution: str
    version: str
    module: str
    loaded: bool = False
    skipped: str | None = None
    error: str | None = None
    provides: dict[str, list[str]] = field(default_factory=dict)
    failures: list[PluginFailure] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``"plugin 'x' from dist 1.0"``: how messages name this plugin."""
        return f"plugin {self.name!r} from {self.distribution} {self.version}"

    def add_failure(self, failure: PluginFailure) -> str:
        """Append ``failure``; returns its one-line message (also kept in ``error`` if first)."""
        self.failures.append(failure)
        if failure.stage == "import":
            message = f"import failed: {failure.error}"
        elif failure.stage == "register":
            message = f"registration failed: {failure.error}"
        elif failure.stage in ("conflict", "patch"):
            message = failure.error
        elif failure.stage == "hook":
            message = f"{failure.hook} failed: {failure.error}"
        else:
            what = f" {failure.kind[:-1].replace('_', ' ')}" if failure.kind else ""
            named = f" {failure.name!r}" if failure.name else ""
            message = f"{failure.stage} of{what}{named} failed: {failure.error}"
        if self.error is None:
            self.error = message
        return message

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
            "failures": [f.as_dict() for f in self.failures],
        }


@dataclass(frozen=True)
class CaseFailure:
    """A conformance case that could not be built or registered, for ``tabzoo conformance``."""

    case: str
    plugin: str
    distribution: str
    version: str
    stage: str
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "plugin": self.plugin, "distribution": self.distribution,
                "version": self.version, "stage": self.stage, "error": self.error}
