"""Checks of numeric settings: one rule and one message style for every estimator argument and
config dataclass field (``steps`` must be an integer >= 1, ``lr`` a finite number > 0, ...).

Torch-free (numpy and :mod:`tabzoo.errors` only), so a plugin's config dataclass may use it while
registering, without importing torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tabzoo.errors import InvalidValueError

__all__ = ["check_number", "check_params"]

_NUMBER_KINDS: dict[str, tuple[str, bool, Callable[[float], bool]]] = {
    "positive_int": ("an integer >= 1", True, lambda v: v >= 1),
    "nonnegative_int": ("an integer >= 0", True, lambda v: v >= 0),
    "positive": ("a finite number > 0", False, lambda v: v > 0),
    "nonnegative": ("a finite number >= 0", False, lambda v: v >= 0),
    "fraction": ("a finite number in [0, 1)", False, lambda v: 0 <= v < 1),
    "unit": ("a finite number in [0, 1]", False, lambda v: 0 <= v <= 1),
    "open_unit": ("a finite number in (0, 1)", False, lambda v: 0 < v < 1),
}
"""The argument kinds :func:`check_number` knows: what each must be."""


def check_number(name: str, value: object, kind: str, where: str = "") -> None:
    """An argument that must be a positive integer, a finite positive number, a fraction, ...
    (``kind`` is a key of ``_NUMBER_KINDS``); refused with its name, value and what it must be."""
    need, integer, ok = _NUMBER_KINDS[kind]
    good = not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)
    if good and integer:
        good = isinstance(value, int | np.integer)
    if good:
        v = float(value)  # type: ignore[arg-type]
        good = bool(np.isfinite(v)) and ok(v)
    if not good:
        raise InvalidValueError(f"{where}{name}={value!r}: {name} must be {need}; pass such a value")


def check_params(owner: Any, **kinds: tuple[str, ...]) -> None:
    """Check the numeric settings of an estimator or a config dataclass, once for every one of them
    (one message style); a ``None`` value is skipped (it means "use the default").

    ``kinds`` maps an argument kind to attribute names of ``owner``, e.g. ``positive_int=("steps",),
    positive=("lr",), fraction=("dropout",)``; kinds: ``positive_int``, ``nonnegative_int``,
    ``positive``, ``nonnegative``, ``fraction`` (``[0, 1)``), ``unit`` (``[0, 1]``), ``open_unit``
    (``(0, 1)``), as in :func:`check_number`.

    :raises InvalidValueError: naming the owner's class, the first bad setting, its value and what it must be.
    """
    for kind, names in kinds.items():
        for name in names:
            value = getattr(owner, name)
            if value is not None:
                check_number(name, value, kind, where=f"{type(owner).__name__}: ")
