"""The registry's table of conformance cases, whose lazy factories are built on first read (issue 24).

A plugin declares a case as ``CaseFactory(name, factory, lazy=True)`` (a :class:`ModelPlugin`
does so for ``cases={name: "pkg.module:function"}``): the name is registered while the plugin
loads (so a name claimed twice is a conflict at once), and ``factory()``, which imports the
model, torch and data, runs when the table is first read. Plugin discovery and every command that
never asks for cases (``tabzoo plugins``, ``predict``, ``demo``) so import none of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tabzoo.plugins.specs import CaseFactory

__all__ = ["LazyCases"]


class LazyCases(dict[str, Any]):
    """``{name: entry}``; an entry whose ``obj`` is a lazy :class:`CaseFactory` is replaced by
    ``build(entry)`` (an entry holding the built case, or ``None`` when the factory failed, which
    removes it) before any read. The registry writes with :meth:`peek` and ``dict`` methods."""

    def __init__(self, build: Callable[[Any], Any | None]) -> None:
        super().__init__()
        self._build = build
        self._pending: dict[str, None] = {}

    def __setitem__(self, key: str, entry: Any) -> None:
        super().__setitem__(key, entry)
        if isinstance(entry.obj, CaseFactory) and entry.obj.lazy:
            self._pending[key] = None
        else:
            self._pending.pop(key, None)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._pending.pop(key, None)

    def pending(self) -> list[str]:
        """Names whose factory has not run yet."""
        return list(self._pending)

    def peek(self, key: str) -> Any | None:
        """The entry of ``key`` as it is (a factory not built yet stays unbuilt)."""
        return super().get(key)

    def realize(self) -> None:
        """Build every pending factory, in registration order."""
        while self._pending:
            key = next(iter(self._pending))
            del self._pending[key]
            entry = super().get(key)
            if entry is None:
                continue
            built = self._build(entry)
            if built is None:
                super().pop(key, None)  # the build may have withdrawn it (a plugin that patches the core)
            else:
                super().__setitem__(key, built)

    def __getitem__(self, key: str) -> Any:
        self.realize()
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.realize()
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.realize()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self.realize()
        return super().__iter__()

    def __len__(self) -> int:
        self.realize()
        return super().__len__()

    def keys(self) -> Any:
        self.realize()
        return super().keys()

    def values(self) -> Any:
        self.realize()
        return super().values()

    def items(self) -> Any:
        self.realize()
        return super().items()
