"""The multitab conformance case passes the kit; the plugin registers through its entry point."""

from __future__ import annotations

import pytest
import torch
from tabzoo.testing import parametrize_with_checks
from tabzoo_multitab.conformance import make_case, make_model, rows_forward


@parametrize_with_checks([make_case()], max_examples=5)
def test_conformance(case, check) -> None:
    torch.set_num_threads(1)
    check(case)


def test_plugin_registers_the_architecture_and_case() -> None:
    from tabzoo.plugins import get_architecture, list_conformance_cases

    spec = get_architecture("multitab")
    assert spec.kind == "multitask"
    assert {"row_equivariance", "query_independence", "no_context_query_leak"} <= spec.capabilities
    model = spec.create({"d_embed": 8, "n_heads": 2, "row_heads": 2})
    assert model.cfg.n_tasks == 2 and model.cfg.mask == "T-/->T"
    assert "multitab" in [getattr(c, "name", c) for c in list_conformance_cases()]
    with pytest.raises(Exception, match="known keys"):
        spec.create({"width": 3})


def test_rows_forward_query_rows_read_context_and_themselves() -> None:
    model = make_model(0)
    x = torch.randn(1, 8, 4)
    y = torch.randn(1, 8)
    q = torch.zeros(1, 8, dtype=torch.bool)
    q[0, [1, 5, 6]] = True  # queries anywhere, not only at the end
    with torch.no_grad():
        a = rows_forward(model, x, y, q)
        x2 = x.clone()
        x2[0, 5] += 3.0
        b = rows_forward(model, x2, y, q)
    same = [0, 1, 2, 3, 4, 6, 7]
    torch.testing.assert_close(a[0, same], b[0, same])
    x3 = x.clone()
    x3[0, 2] += 3.0  # a context row moves every output
    with torch.no_grad():
        c = rows_forward(model, x3, y, q)
    assert (c[0, 5] - a[0, 5]).abs().max() > 1e-6
