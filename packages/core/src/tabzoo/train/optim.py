"""Optimisers and learning-rate schedules of per-dataset training (:mod:`tabzoo.train.fit`).

* :class:`Lamb` (You et al. 2020): Adam moments with bias correction; the update
  ``u = m_hat / (sqrt(v_hat) + eps) + weight_decay * p`` is scaled per parameter tensor by the
  trust ratio ``||p|| / ||u||`` (1 when either norm is 0), so every tensor moves by ``lr * ||p||``
  in norm, whatever the scale of its gradient.
* :class:`Lookahead` (Zhang et al. 2019): every ``k`` inner steps the slow weights move a share
  ``alpha`` toward the fast weights and the fast weights are reset to them.
* :func:`flat_then_cosine`: NPT's schedule (papers/002 appendix C.1.1).
* :func:`build_optimizer` and :func:`build_schedule` turn a :class:`~tabzoo.train.fit.FitConfig`'s
  names into objects.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch

from tabzoo.errors import TabzooInputError

__all__ = ["OPTIMIZERS", "SCHEDULES", "Lamb", "Lookahead", "build_optimizer", "build_schedule", "flat_then_cosine"]

OPTIMIZERS = ("adam", "adamw", "lamb")
SCHEDULES = ("constant", "flat_cosine", "cosine")


class Lamb(torch.optim.Optimizer):
    """LAMB with NPT's defaults ``betas=(0.9, 0.999)``, ``eps=1e-6``.

    :param clamp: upper bound of the trust ratio (``None`` = unbounded, as in the paper).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.0, clamp: float | None = None) -> None:
        if lr < 0 or eps <= 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1) or weight_decay < 0:
            raise TabzooInputError(f"invalid LAMB hyperparameters lr={lr} betas={betas} eps={eps} wd={weight_decay}.")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "clamp": clamp})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                m, v = state["m"], state["v"]
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                update = (m / (1 - b1**t)) / ((v / (1 - b2**t)).sqrt() + group["eps"])
                if group["weight_decay"]:
                    update = update + group["weight_decay"] * p
                w_norm, u_norm = float(p.norm()), float(update.norm())
                ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
                if group["clamp"] is not None:
                    ratio = min(ratio, group["clamp"])
                state["trust_ratio"] = ratio
                p.add_(update, alpha=-group["lr"] * ratio)
        return loss


class Lookahead(torch.optim.Optimizer):
    """Wrap ``base``: slow weights, synchronised every ``k`` steps with rate ``alpha``.

    Exposes the base optimizer's ``param_groups`` (schedulers work on it unchanged).
    """

    def __init__(self, base: torch.optim.Optimizer, k: int = 6, alpha: float = 0.5) -> None:
        if k < 1 or not 0.0 < alpha <= 1.0:
            raise TabzooInputError(f"Lookahead needs k >= 1 and alpha in (0, 1]; got k={k}, alpha={alpha}.")
        self.base, self.k, self.alpha = base, int(k), float(alpha)
        self.param_groups = base.param_groups
        self.defaults = base.defaults
        self.state = base.state
        self.counter = 0
        self.slow = [[p.detach().clone() for p in g["params"]] for g in base.param_groups]

    @torch.no_grad()
    def sync(self) -> None:
        """slow += alpha * (fast - slow); fast = slow."""
        for group, slows in zip(self.param_groups, self.slow, strict=True):
            for p, s in zip(group["params"], slows, strict=True):
                s.add_(p.detach() - s, alpha=self.alpha)
                p.copy_(s)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        loss = self.base.step(closure)
        self.counter += 1
        if self.counter % self.k == 0:
            self.sync()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {"base": self.base.state_dict(), "counter": self.counter, "slow": self.slow,
                "k": self.k, "alpha": self.alpha}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.base.load_state_dict(state["base"])
        self.counter = int(state["counter"])
        self.slow = [[s.clone() for s in group] for group in state["slow"]]


def flat_then_cosine(step: int, total: int, flat_fraction: float = 0.7) -> float:
    """LR multiplier: 1 for the first ``flat_fraction`` of steps, then a cosine to 0 at ``total``."""
    if total <= 0:
        return 1.0
    flat = flat_fraction * total
    if step <= flat:
        return 1.0
    frac = min(1.0, (step - flat) / max(total - flat, 1e-9))
    return 0.5 * (1.0 + math.cos(math.pi * frac))


def build_optimizer(params: Iterable[Any], name: str, *, lr: float, weight_decay: float = 0.0,
                    lookahead_k: int = 0, lookahead_alpha: float = 0.5, fused: bool = False) -> torch.optim.Optimizer:
    """``name`` in :data:`OPTIMIZERS` (Adam's ``weight_decay`` is the L2 kind, AdamW's the
    decoupled kind), wrapped in :class:`Lookahead` when ``lookahead_k >= 1``.

    Adam and AdamW update all parameters with the multi-tensor (``foreach``) kernels: torch's
    default on CUDA, and on the CPU the same arithmetic as its per-tensor loop (bitwise equal,
    tested) at about half the cost for models of many small tensors. ``fused=True`` uses torch's
    fused kernel instead (CPU and CUDA; faster still, but rounds differently from the loop, so a
    fit's numbers change in the last bits); the other optimisers refuse it."""
    foreach, fused_kernel = (None, True) if fused else (True, None)
    if fused and name not in ("adam", "adamw"):
        raise TabzooInputError(f"fused=True needs optimizer 'adam' or 'adamw', got {name!r}; drop fused or pick one of those.")
    if name == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, foreach=foreach,
                                                  fused=fused_kernel)
    elif name == "adamw":
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=foreach, fused=fused_kernel)
    elif name == "lamb":
        opt = Lamb(params, lr=lr, weight_decay=weight_decay)
    else:
        raise TabzooInputError(f"optimizer={name!r} is unknown; use one of {OPTIMIZERS}.")
    return Lookahead(opt, k=lookahead_k, alpha=lookahead_alpha) if lookahead_k else opt


def build_schedule(opt: torch.optim.Optimizer, name: str, *, total_steps: int | None,
                   flat_fraction: float = 0.7) -> torch.optim.lr_scheduler.LRScheduler | None:
    """The per-step schedule ``name`` in :data:`SCHEDULES` (``None`` for ``"constant"``); a
    :class:`Lookahead` is scheduled through its base optimiser. ``"cosine"`` is ``"flat_cosine"``
    with ``flat_fraction=0`` (a cosine from the first step to 0 at ``total_steps``; the given
    ``flat_fraction`` is ignored)."""
    if name == "constant":
        return None
    if name not in ("flat_cosine", "cosine"):
        raise TabzooInputError(f"schedule={name!r} is unknown; use one of {SCHEDULES}.")
    if total_steps is None or total_steps < 1:
        raise TabzooInputError(f"schedule={name!r} needs max_steps >= 1 (the step where it reaches 0).")
    if name == "cosine":
        flat_fraction = 0.0
    base = opt.base if isinstance(opt, Lookahead) else opt
    total = int(total_steps)
    return torch.optim.lr_scheduler.LambdaLR(base, lambda s: flat_then_cosine(s, total, flat_fraction))
