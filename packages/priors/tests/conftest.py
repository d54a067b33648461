"""Shared fixtures. Sizes stay small: the CI machine has 2 cores."""

import pytest
import torch
from tabzoo.testing.profiles import register_hypothesis_profiles, relax_rounding_xfails

register_hypothesis_profiles(ci=10)  # ci: derandomized; random: fresh examples (nox -s tests_random)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    relax_rounding_xfails(items)  # every other expected failure is strict


@pytest.fixture(autouse=True)
def _few_threads():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def has_core_table() -> bool:
    try:
        from tabzoo.table import EpisodeBatch  # noqa: F401
    except ImportError:
        return False
    return True
