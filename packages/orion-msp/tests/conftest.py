"""Shared fixtures of the orion-msp tests (tiny sizes: the machine has 2 shared cores)."""

from __future__ import annotations

import pytest
from tabzoo.testing.fixtures import (  # noqa: F401  (pytest finds them here)
    auto_precision_is_fp32,
    no_network,
    one_torch_thread,
    pytest_collection_modifyitems,
)
from tabzoo.testing.profiles import register_hypothesis_profiles

register_hypothesis_profiles(ci=10)  # ci: derandomized; random: fresh examples (nox -s tests_random)


@pytest.fixture
def tiny():  # type: ignore[no-untyped-def]
    from tabzoo_orion_msp.conformance import make_model

    return make_model(0)
