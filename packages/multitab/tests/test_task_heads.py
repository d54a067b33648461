"""MultiTab-Net's stacked task heads: the same function, initial weights and gradients as one
:class:`tabzoo.nn.MLPHead` per task, and checkpoints of the per-task form still load."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.nn import MLPHead
from tabzoo_multitab import MultiTabConfig, MultiTabNet
from tabzoo_multitab.heads import TaskHeads


def _per_task(seed: int, e: int, hidden: int, n_outs: list[int]) -> tuple[TaskHeads, torch.nn.ModuleList]:
    torch.manual_seed(seed)
    stacked = TaskHeads(e, hidden, n_outs)
    torch.manual_seed(seed)
    heads = torch.nn.ModuleList(MLPHead(e, hidden, o) for o in n_outs)
    return stacked, heads


@given(n_outs=st.lists(st.integers(1, 4), min_size=1, max_size=4), rows=st.integers(1, 6), seed=st.integers(0, 20))
def test_equals_one_mlp_head_per_task(n_outs, rows, seed) -> None:
    stacked, heads = _per_task(seed, 6, 5, n_outs)
    x = torch.randn(2, rows, len(n_outs), 6, generator=torch.Generator().manual_seed(seed), requires_grad=True)
    got = stacked(x)
    want = torch.cat([h(x[:, :, i]) for i, h in enumerate(heads)], dim=-1)
    assert got.shape == (2, rows, sum(n_outs))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)  # same initial weights, same function
    w = torch.randn(got.shape, generator=torch.Generator().manual_seed(seed + 1))
    (gx,) = torch.autograd.grad((got * w).sum(), x, retain_graph=True)
    (wx,) = torch.autograd.grad((want * w).sum(), x)
    torch.testing.assert_close(gx, wx, rtol=1e-5, atol=1e-6)
    (g2,) = torch.autograd.grad((got * w).sum(), stacked.w2)
    for i, o in enumerate(n_outs):  # the unread columns of narrower tasks get no gradient
        assert bool((g2[i, :, o:] == 0).all())


def test_four_parameter_tensors_whatever_the_task_count() -> None:
    assert len(list(TaskHeads(8, 16, [1, 3, 1, 2, 1]).parameters())) == 4


@pytest.mark.parametrize("task_tokens,mask", [("multi", "T-/->T"), ("single", "F-/->T")])
def test_a_checkpoint_of_per_task_heads_loads(task_tokens, mask) -> None:
    cfg = MultiTabConfig(n_num=3, tasks=[("a", "binary"), ("b", "multiclass", 3), ("c", "regression")], d_embed=8,
                         n_heads=2, row_heads=2, head_hidden=8, task_tokens=task_tokens, mask=mask, dropout=0.0,
                         skip_hidden=0)  # per-task-head checkpoints predate the skip path
    model = MultiTabNet(cfg).eval()
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("heads.")}
    g = torch.Generator().manual_seed(3)
    old = torch.nn.ModuleList(MLPHead(8, 8, t.n_out) for t in cfg.tasks)
    for p in old.parameters():
        p.data = torch.randn(p.shape, generator=g)
    state |= {f"heads.{k}": v for k, v in old.state_dict().items()}  # heads.{i}.net.{0,3}.{weight,bias}
    fresh = MultiTabNet(cfg).eval()
    fresh.load_state_dict(state)  # strict
    x = torch.randn(5, 3, generator=g)
    with torch.no_grad():
        tokens = fresh.norm(fresh.encode(x[None])[:, :, 3:])[0]
        want = torch.cat([h(tokens[:, 0 if task_tokens == "single" else i]) for i, h in enumerate(old)], -1)
        torch.testing.assert_close(fresh(x), want, rtol=1e-5, atol=1e-6)
