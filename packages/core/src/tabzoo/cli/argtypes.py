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
