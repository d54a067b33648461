"""The ``npt`` case passes the conformance kit, and the plugin registers through its entry point."""

from __future__ import annotations

import torch
from tabzoo.testing import parametrize_with_checks
from tabzoo_npt.conformance import make_case


@parametrize_with_checks([make_case()], max_examples=5)
def test_conformance(case, check) -> None:
    torch.set_num_threads(1)
    check(case)


def test_plugin_registers_the_architecture_and_case() -> None:
    from tabzoo.plugins import get_architecture, list_conformance_cases

    spec = get_architecture("npt")
    assert {"row_equivariance", "query_independence", "label_leak", "no_context_query_leak"} <= spec.capabilities
    model = spec.create({"preset": "tiny", "cardinalities": [0, 0, 2]})
    assert model.n_attributes == 3 and len(model.layers) == 4
    names = [getattr(c, "name", c) for c in list_conformance_cases()]
    assert "npt" in names
