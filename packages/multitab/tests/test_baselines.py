"""STL, shared-bottom, MMoE and PLE: shapes, independence of the STL towers, no row mixing."""

from __future__ import annotations

import pytest
import torch
from tabzoo_multitab import PLE, MMoE, SharedBottom, SingleTaskMLP

TASKS = (("b", "binary", 2), ("m", "multiclass", 4), ("r", "regression", 0))


@pytest.mark.parametrize("cls", [SingleTaskMLP, SharedBottom, MMoE, PLE])
def test_shapes_and_row_independence(cls) -> None:
    torch.manual_seed(0)
    model = cls(3, (5,), TASKS, d_embed=4, hidden=(16, 8), dropout=0.0).eval()
    x_num, x_cat = torch.randn(6, 3), torch.randint(0, 6, (6, 1))
    out = model(x_num, x_cat)
    assert out.shape == (6, 1 + 4 + 1)
    x2 = x_num.clone()
    x2[5] += 3
    torch.testing.assert_close(model(x2, x_cat)[:5], out[:5])
    torch.testing.assert_close(model.predict(x_num, x_cat, None, chunk=4), out)


def test_stl_towers_share_nothing() -> None:
    """The loss of task k moves only tower k: STL is a set of independent single-task models."""
    torch.manual_seed(0)
    model = SingleTaskMLP(3, (), TASKS, d_embed=4, hidden=(8,), dropout=0.0)
    out = model(torch.randn(5, 3))
    model.split(out)[1].sum().backward()
    for k in range(3):
        grads = [p.grad for p in list(model.embeds[k].parameters()) + list(model.towers[k].parameters())]
        touched = any(g is not None and g.abs().sum() > 0 for g in grads)
        assert touched == (k == 1)


def test_mmoe_gates_are_per_task() -> None:
    torch.manual_seed(0)
    model = MMoE(3, (), TASKS, d_embed=4, hidden=(16, 8), n_experts=4, dropout=0.0)
    assert len(model.gates) == 3 and len(model.experts) == 4
    with torch.no_grad():
        model.gates[0].weight.zero_()
        model.gates[0].bias.copy_(torch.tensor([100.0, 0, 0, 0]))  # task 0 reads expert 0 only
        x = torch.randn(4, 3)
        a = model(x)[:, 0]
        for p in model.experts[1].parameters():
            p.add_(1.0)
        b = model(x)
    torch.testing.assert_close(b[:, 0], a)


def test_ple_task_experts_are_private() -> None:
    """Task k's gate mixes the shared experts and task k's own: changing task 1's experts never
    moves task 0's output, changing a shared expert may move both."""
    torch.manual_seed(0)
    model = PLE(3, (), TASKS, d_embed=4, hidden=(16, 8), n_shared=2, n_specific=2, dropout=0.0)
    assert len(model.shared) == 2 and [len(s) for s in model.specific] == [2, 2, 2]
    x = torch.randn(5, 3)
    with torch.no_grad():
        a = model(x)
        for p in model.specific[1].parameters():
            p.add_(1.0)
        b = model(x)
        for p in model.shared[0].parameters():
            p.add_(1.0)
        c = model(x)
    torch.testing.assert_close(b[:, 0], a[:, 0])
    assert not torch.allclose(b[:, 1:5], a[:, 1:5])
    assert not torch.allclose(c[:, 0], b[:, 0])
