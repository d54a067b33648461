"""Deprecated aliases of renamed public names.

A module that renamed a public name keeps the old one for a while::

    __getattr__ = renamed(__name__, {"TrainConfig": "PretrainConfig"})

``module.TrainConfig`` (and ``from module import TrainConfig``) then returns ``PretrainConfig`` with
a :class:`DeprecationWarning` naming the new name. Imports nothing of tabzoo (any floor may use it).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["renamed"]


def renamed(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each old name of ``names`` (old -> new name in ``module``).

    :param module: the module's ``__name__``.
    :param names: old name -> its new name, an attribute of the same module.
    :return: the function to assign to the module's ``__getattr__``.
    """
    table = dict(names)

    def __getattr__(name: str) -> Any:
        if name in table:
            warnings.warn(f"{module}.{name} is renamed {table[name]}; use {module}.{table[name]} "
                          f"({name} will be removed).", DeprecationWarning, stacklevel=2)
            return getattr(sys.modules[module], table[name])
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
