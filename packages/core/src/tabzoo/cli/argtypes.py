"""Argument types that check numbers at the command line's boundary (argparse ``type=``).

A bad value is refused by argparse with a one-line message that names the flag and the allowed
range, before any work starts: ``tabzoo ramba --steps -5`` exits 2 instead of running.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def whole(minimum: int = 0) -> Callable[[str], int]:
    """A whole number ``>= minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


def finite(minimum: float = 0.0, *, strict: bool = False) -> Callable[[str], float]:
    """A finite number ``>= minimum`` (``> minimum`` when ``strict``)."""
    bound = f"{'>' if strict else '>='} {minimum:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text!r}") from None
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text}")
        return value

    parse.__name__ = f"finite number {bound}"
    return parse


def device(text: str) -> str:
    """A device this machine has: ``auto``, ``cpu``, ``cuda[:i]`` (present), ``mps`` (available)...

    Checked by :func:`tabzoo.estimators.base.resolve_device` (torch is imported only when the flag
    is given, so ``--help`` stays fast)."""
    if text == "auto":
        return text
    from tabzoo.errors import TabzooError
    from tabzoo.estimators.base import resolve_device

    try:
        resolve_device(text)
    except TabzooError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


device.__name__ = "device"


def readable_file(text: str) -> str:
    """A path to an existing file this process can read (a pipe such as ``/dev/stdin`` counts)."""
    import os

    if not text:
        raise argparse.ArgumentTypeError("expected a path to a file, got an empty string")
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r} does not exist; check the path")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give the path of a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text!r} cannot be read (permissions); make it readable or copy it")
    return text


readable_file.__name__ = "readable file"



def json_object(text: str) -> str:
    """A JSON object (``{...}``), kept as the text; anything else is refused at the boundary."""
    import json

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text[:60]!r} ({exc}); copy it whole, "
                                         "in single quotes") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object {{...}}, got a {type(value).__name__}: {text[:60]!r}")
    return text


json_object.__name__ = "JSON object"
