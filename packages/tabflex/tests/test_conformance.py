"""The tabflex conformance case passes the kit, and the plugin registers through its entry point."""

from __future__ import annotations

import pytest
import torch
from tabzoo.testing import parametrize_with_checks
from tabzoo.testing.fixtures import assert_checkpoint_round_trip
from tabzoo_tabflex.conformance import make_case


@parametrize_with_checks([make_case()], max_examples=5)
def test_conformance(case, check) -> None:
    torch.set_num_threads(1)
    check(case)


def test_plugin_registers_the_architecture_and_case() -> None:
    from tabzoo.plugins import get_architecture, list_conformance_cases

    spec = get_architecture("tabflex")
    assert {"in_context", "query_independence", "context_order_invariance", "linear_in_rows"} <= spec.capabilities
    assert spec.pretrained == ("tabflex-small", "tabflex-icl", "tabflex-long")
    model = spec.create({"preset": "tiny"})
    assert model.max_features == 16 and model.cfg.n_layers == 2
    names = [getattr(c, "name", c) for c in list_conformance_cases()]
    assert "tabflex" in names


def test_checkpoint_config_round_trip(tmp_path) -> None:  # load_model(stem) rebuilds it through the registry
    assert_checkpoint_round_trip(make_case(), tmp_path, torch.randn(1, 10, 4), torch.tensor([[0.0, 1, 2, 0, 1, 2]]))
    with pytest.raises(Exception, match="known keys"):
        from tabzoo.plugins import get_architecture

        get_architecture("tabflex").create({"width": 3})
