"""Optional extras of the CLI, checked before a command does any work.

Each optional module maps to the ``tabzoo-core`` extra that installs it, so the one-line error
names a real distribution and extra (``pip install 'tabzoo-core[pandas]'``), never a guess.
"""

from __future__ import annotations

import importlib.util
import sys

from tabzoo.errors import TabzooError

__all__ = ["EXTRAS", "MissingExtraError", "is_missing", "require", "note_once"]

#: import name -> (tabzoo-core extra, distribution it installs)
EXTRAS: dict[str, tuple[str, str]] = {
    "pandas": ("pandas", "pandas"),
    "pyarrow": ("arrow", "pyarrow"),
    "sklearn": ("sklearn", "scikit-learn"),
    "tqdm": ("progress", "tqdm"),
    "matplotlib": ("plot", "matplotlib"),
    "duckdb": ("duckdb", "duckdb"),
}


class MissingExtraError(TabzooError, ImportError):
    """A command needs an optional module that is not installed; the message names the extra."""


def is_missing(module: str) -> bool:
    """True when ``module`` cannot be imported (``sys.modules[module] = None`` counts as missing)."""
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def install_hint(modules: list[str]) -> str:
    """The pip command (tabzoo-core with its extras) for the extras that install ``modules``."""
    extras = ",".join(dict.fromkeys(EXTRAS[m][0] for m in modules))
    return f"pip install 'tabzoo-core[{extras}]'"


def require(command: str, needs: dict[str, str]) -> None:
    """Raise one :class:`MissingExtraError` naming every missing module of ``needs``.

    :param command: the subcommand, e.g. ``"predict"``.
    :param needs: import name -> why the command needs it (e.g. ``{"pandas": "to read CSV"}``).
    """
    missing = [m for m in needs if is_missing(m)]
    if not missing:
        return
    what = " and ".join(f"{EXTRAS[m][1]} ({needs[m]})" for m in missing)
    raise MissingExtraError(f"tabzoo {command} needs {what}: {install_hint(missing)}")


_noted: set[str] = set()


def note_once(message: str) -> None:
    """Print ``message`` to stderr once per process (e.g. a flag that cannot take effect)."""
    if message not in _noted:
        _noted.add(message)
        print(f"tabzoo: note: {message}", file=sys.stderr)
