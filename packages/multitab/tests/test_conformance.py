"""The multitab conformance case passes the kit; the plugin registers through its entry point."""

from __future__ import annotations

import pytest
import torch
from tabzoo.testing import parametrize_with_checks
from tabzoo_multitab.conformance import (
    make_case,
    make_model,
    make_sized,
    multitask_forward,
    rows_forward,
)


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


def test_multitask_case_searches_up_to_four_tasks_and_64_features(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.testing.checks.sizes import PROFILE_ENV, largest_spec

    assert make_case().protocol == "multitask" and make_case().tasks == (2, 3, 0)
    monkeypatch.setenv(PROFILE_ENV, "thorough")
    sizes = largest_spec(make_case(), 0)["sizes"]
    assert len(sizes["tasks"]) == 4 and max(sizes["tasks"]) >= 12 and sizes["n_features"] == 64
    model = make_sized(0, {"n_features": 64, "tasks": sizes["tasks"]})
    assert [t.n_classes for t in model.cfg.tasks] == sizes["tasks"] and model.cfg.n_num == 64


def test_multitask_forward_splits_rows_by_all_tasks_masked() -> None:
    model = make_model(0)
    x, y = torch.randn(1, 6, 4), torch.zeros(1, 6, 3)
    q = torch.zeros(1, 6, 3, dtype=torch.bool)
    q[0, 4:] = True  # rows 4, 5: queries
    q[0, 1, 0] = True  # row 1: one task missing, still a context row
    with torch.no_grad():
        a = multitask_forward(model, x, y, q)
        b = rows_forward(model, x, y[..., 0], q.all(-1))
    torch.testing.assert_close(a, b)
    y2 = y.clone()
    y2[0, 0, 1] = 3.0  # class 3 of a 3-class task
    with pytest.raises(Exception, match="classes 0..2"):
        multitask_forward(model, x, y2, q)
