"""Shared fixtures. Sizes stay small: the CI machine has 2 cores."""

from __future__ import annotations

from tabzoo.testing.fixtures import one_torch_thread, pytest_collection_modifyitems  # noqa: F401  (pytest finds them here)
from tabzoo.testing.profiles import register_hypothesis_profiles

register_hypothesis_profiles(ci=10)  # ci: derandomized; random: fresh examples (nox -s tests_random)


def has_core_table() -> bool:
    try:
        from tabzoo.table import EpisodeBatch  # noqa: F401
    except ImportError:
        return False
    return True
