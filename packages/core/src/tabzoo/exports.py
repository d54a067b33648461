"""Lazy public names of a package (one mechanism for the core and every plugin).

A package's ``__init__`` lists its public names and the submodule holding each; they are imported on
first use, so ``import tabzoo_<plugin>`` (what plugin discovery does) imports no torch::

    __getattr__, __dir__ = lazy_exports(__name__, {"TabFlex": "model", "load_tabflex": "estimators"})

Imports nothing of tabzoo (any floor and any plugin may use it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` serving ``names`` lazily.

    :param package: the package's ``__name__``.
    :param names: public name -> the submodule of ``package`` that defines it (``"model"`` for
        ``package.model``). Each access imports the submodule (once; Python caches it) and returns
        its attribute, so a deprecated alias served by the submodule still warns on every use.
    :return: ``(__getattr__, __dir__)`` to assign in the package's ``__init__``.
    """
    table = dict(names)

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
