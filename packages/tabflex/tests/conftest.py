"""Shared fixtures of the tabflex tests (tiny sizes: the machine has 2 shared cores)."""

from __future__ import annotations

import pytest
import torch
from tabzoo_tabflex.conformance import make_model


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)


@pytest.fixture
def tiny():
    return make_model(0)
