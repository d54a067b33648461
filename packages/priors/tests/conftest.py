"""Shared fixtures. Sizes stay small: the CI machine has 2 cores."""

import pytest
import torch


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
