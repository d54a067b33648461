"""Shared fixtures of the tabflex tests (tiny sizes: the machine has 2 shared cores)."""

from __future__ import annotations

import pytest
import torch
from tabzoo.testing.profiles import (
    pin_auto_precision_to_fp32,
    register_hypothesis_profiles,
    relax_rounding_xfails,
)
from tabzoo_tabflex.conformance import make_model

register_hypothesis_profiles(ci=10)  # ci: derandomized; random: fresh examples (nox -s tests_random)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    relax_rounding_xfails(items)  # every other expected failure is strict


@pytest.fixture(autouse=True)
def _auto_precision_is_fp32(monkeypatch: pytest.MonkeyPatch) -> None:
    pin_auto_precision_to_fp32(monkeypatch)


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)


@pytest.fixture
def tiny():
    return make_model(0)
