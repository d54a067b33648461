"""Shared fixtures of the npt tests (tiny sizes: the machine has 2 shared cores)."""

from __future__ import annotations

from tabzoo.testing.fixtures import one_torch_thread, pytest_collection_modifyitems  # noqa: F401  (pytest finds them here)
from tabzoo.testing.profiles import register_hypothesis_profiles

register_hypothesis_profiles(ci=20)  # ci: derandomized; random: fresh examples (nox -s tests_random)
