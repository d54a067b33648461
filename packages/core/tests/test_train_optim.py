"""tabzoo.train.optim: LAMB trust ratio, Lookahead slow/fast synchronisation, schedules, building by name."""

from __future__ import annotations

import math

import pytest
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.train.optim import Lamb, Lookahead, build_optimizer, build_schedule, flat_then_cosine


def _one_step(scale: float, grad_scale: float, lr: float = 1e-2) -> tuple[torch.Tensor, torch.Tensor, float]:
    g = torch.Generator().manual_seed(0)
    p = torch.nn.Parameter(torch.randn(5, 4, generator=g) * scale)
    before = p.detach().clone()
    opt = Lamb([p], lr=lr)
    p.grad = torch.randn(5, 4, generator=g) * grad_scale
    opt.step()
    return before, p.detach().clone(), opt.state[p]["trust_ratio"]


def test_lamb_step_norm_is_lr_times_weight_norm() -> None:
    """The trust ratio rescales every tensor's update to lr * ||p||, whatever the gradient scale."""
    for scale in (0.1, 1.0, 30.0):
        for grad_scale in (1e-4, 1.0, 1e3):
            before, after, ratio = _one_step(scale, grad_scale)
            step = float((after - before).norm())
            assert step == pytest.approx(1e-2 * float(before.norm()), rel=1e-4)
            assert ratio > 0


def test_lamb_trust_ratio_is_one_for_zero_weights_and_clamp_bounds_it() -> None:
    p = torch.nn.Parameter(torch.zeros(3))
    opt = Lamb([p], lr=0.1)
    p.grad = torch.ones(3)
    opt.step()
    assert opt.state[p]["trust_ratio"] == 1.0
    # Adam's first bias-corrected step is sign(g) in magnitude ~1, so each entry moves by lr
    assert torch.allclose(p.detach(), torch.full((3,), -0.1), atol=1e-4)
    q = torch.nn.Parameter(torch.full((3,), 100.0))
    opt = Lamb([q], lr=0.1, clamp=2.0)
    q.grad = torch.ones(3)
    opt.step()
    assert opt.state[q]["trust_ratio"] == 2.0


def test_lamb_rejects_bad_hyperparameters() -> None:
    with pytest.raises(TabzooInputError):
        Lamb([torch.nn.Parameter(torch.zeros(1))], lr=-1.0)


def test_lookahead_syncs_slow_and_fast_weights_every_k_steps() -> None:
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    base = torch.optim.SGD([p], lr=0.1)
    opt = Lookahead(base, k=3, alpha=0.5)
    slow0 = p.detach().clone()
    fast = slow0.clone()
    for step in range(1, 7):
        p.grad = torch.tensor([1.0, 1.0])
        opt.step()
        fast = fast - 0.1
        if step % 3 == 0:
            slow0 = slow0 + 0.5 * (fast - slow0)
            fast = slow0.clone()
            assert torch.allclose(opt.slow[0][0], p.detach())  # fast reset to slow
        assert torch.allclose(p.detach(), fast, atol=1e-6)
    state = opt.state_dict()
    again = Lookahead(torch.optim.SGD([p], lr=0.1), k=3, alpha=0.5)
    again.load_state_dict(state)
    assert again.counter == 6 and torch.equal(again.slow[0][0], opt.slow[0][0])


def test_lookahead_with_alpha_one_and_k_one_is_the_base_optimizer() -> None:
    a = torch.nn.Parameter(torch.tensor([0.5, 1.5]))
    b = torch.nn.Parameter(a.detach().clone())
    opt_a = Lookahead(Lamb([a], lr=0.05), k=1, alpha=1.0)
    opt_b = Lamb([b], lr=0.05)
    for i in range(5):
        for p in (a, b):
            p.grad = torch.tensor([float(i) - 2.0, 1.0])
        opt_a.step()
        opt_b.step()
    assert torch.allclose(a.detach(), b.detach(), atol=1e-7)
    with pytest.raises(TabzooInputError):
        Lookahead(torch.optim.SGD([a], lr=0.1), k=0)


def test_schedules() -> None:
    assert flat_then_cosine(0, 100, 0.7) == 1.0 and flat_then_cosine(70, 100, 0.7) == 1.0
    assert flat_then_cosine(85, 100, 0.7) == pytest.approx(0.5)
    assert flat_then_cosine(100, 100, 0.7) == pytest.approx(0.0, abs=1e-12)
    vals = [flat_then_cosine(s, 100, 0.5) for s in range(101)]
    assert all(x >= y for x, y in zip(vals, vals[1:], strict=False))
    assert flat_then_cosine(3, 10, 0.0) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.3)))


def test_build_optimizer_and_schedule_by_name() -> None:
    p = torch.nn.Parameter(torch.ones(3))
    assert isinstance(build_optimizer([p], "adam", lr=0.1), torch.optim.Adam)
    look = build_optimizer([p], "lamb", lr=0.1, lookahead_k=6)
    assert isinstance(look, Lookahead) and isinstance(look.base, Lamb)
    assert build_schedule(look, "constant", total_steps=None) is None
    sched = build_schedule(look, "flat_cosine", total_steps=10, flat_fraction=0.5)
    assert sched is not None and sched.optimizer is look.base
    for _ in range(10):
        sched.step()
    assert look.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(TabzooInputError, match="optimizer='sgd'"):
        build_optimizer([p], "sgd", lr=0.1)
    with pytest.raises(TabzooInputError, match="max_steps"):
        build_schedule(look, "flat_cosine", total_steps=None)


def test_cosine_is_flat_cosine_without_the_flat_part() -> None:
    """``"cosine"`` = ``"flat_cosine"`` with ``flat_fraction=0``, whatever flat_fraction is passed."""
    lrs = {}
    for name, flat in (("cosine", 0.7), ("flat_cosine", 0.0)):
        p = torch.nn.Parameter(torch.ones(3))
        opt = build_optimizer([p], "adamw", lr=0.1)
        sched = build_schedule(opt, name, total_steps=10, flat_fraction=flat)
        assert sched is not None
        seen = []
        for _ in range(10):
            seen.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        lrs[name] = seen + [opt.param_groups[0]["lr"]]
    assert lrs["cosine"] == lrs["flat_cosine"]
    assert lrs["cosine"][1] < 0.1 and lrs["cosine"][-1] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(TabzooInputError, match="'cosine' needs max_steps"):
        build_schedule(build_optimizer([torch.nn.Parameter(torch.ones(1))], "adam", lr=0.1), "cosine",
                       total_steps=None)


def _adam_trajectory(name: str, **impl: bool) -> torch.Tensor:
    """Parameters after 12 steps of ``name`` on a small MLP of many tensors (weight decay on)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(6, 6) for _ in range(4)))
    opt = (build_optimizer(model.parameters(), name, lr=1e-2, weight_decay=1e-3, **impl) if "loop" not in impl
           else getattr(torch.optim, {"adam": "Adam", "adamw": "AdamW"}[name])(model.parameters(), lr=1e-2,
                                                                                weight_decay=1e-3, foreach=False))
    x = torch.randn(8, 6)
    for _ in range(12):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_adam_multi_tensor_update_equals_the_per_tensor_loop_bitwise(name: str) -> None:
    """The core's Adam/AdamW use torch's multi-tensor kernels (faster on the CPU); the numbers
    must be those of the per-tensor loop, bit for bit, so no fit's results move."""
    opt = build_optimizer([torch.nn.Parameter(torch.ones(2))], name, lr=0.1)
    assert opt.param_groups[0]["foreach"] is True
    assert torch.equal(_adam_trajectory(name), _adam_trajectory(name, loop=True))
    fused = _adam_trajectory(name, fused=True)  # the opt-in fused kernel: same update up to rounding
    assert torch.allclose(fused, _adam_trajectory(name), atol=1e-5) and build_optimizer(
        [torch.nn.Parameter(torch.ones(2))], name, lr=0.1, fused=True).param_groups[0]["fused"] is True


def test_fused_is_refused_for_optimizers_without_a_fused_kernel() -> None:
    with pytest.raises(TabzooInputError, match="fused=True needs optimizer 'adam' or 'adamw'"):
        build_optimizer([torch.nn.Parameter(torch.ones(2))], "lamb", lr=0.1, fused=True)
