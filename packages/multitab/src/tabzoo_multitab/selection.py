"""Per-task model selection ("task-wise early stopping", issue 26): each task keeps the weights of
its own best validation epoch, and predicts with them.

Joint selection (the default) early-stops once, on the validation score summed or averaged over the
tasks, and keeps one set of weights: an epoch where one task is at its best and another has already
started to overfit. A single-task twin (one network per task) picks each task's best epoch, which is
why it beat the multitask network on MultiTab-Bench (+1.23 vs +0.59 % Δm against the MLP on the 300-
and 1,000-row settings, ``benchmarks/results/multitab-grid-sizes-ablations-2026-11-29.json``).
:class:`PerTaskSelector` gives the multitask network the same freedom: during the one training run it
copies the weights whenever a task's own validation score improves; training stops when no task has
improved for ``patience`` epochs; :class:`PerTaskModel` then predicts task ``t`` with snapshot ``t``
(one forward pass per distinct snapshot; training costs the same, memory holds up to ``t`` copies).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import torch

from tabzoo_multitab.config import TaskSpec

__all__ = ["SELECTIONS", "PerTaskSelector", "PerTaskModel"]

#: ``"joint"``: one set of weights, the best epoch of the mean (or summed) validation score;
#: ``"per_task"``: each task's best epoch by its own validation score
SELECTIONS = ("joint", "per_task")


def _rank(v: float) -> float:
    """NaN ranks below every number (worst), as in the core loop."""
    return math.inf if math.isnan(v) else v


class PerTaskSelector:
    """Tracks, per task, the best validation score (lower is better: a loss, or minus a metric) and a
    copy of the weights at that evaluation."""

    def __init__(self, n_tasks: int) -> None:
        self.best: list[float | None] = [None] * n_tasks
        self.epochs: list[int] = [-1] * n_tasks
        self.states: list[dict[str, torch.Tensor] | None] = [None] * n_tasks
        self.calls = 0

    def update(self, model: torch.nn.Module, scores: Sequence[float]) -> list[bool]:
        """Record one evaluation (one per epoch) of ``model`` with per-task ``scores``; the tasks that improved.

        A task improves when its score is strictly below its best (the first evaluation always
        does), exactly the core loop's rule with ``min_delta = 0``; tasks that improve together share
        one copy of the weights."""
        improved = [
            b is None or _rank(s) < _rank(b) for s, b in zip(scores, self.best, strict=True)
        ]
        if any(improved):
            state = copy.deepcopy(model.state_dict())
            for t, up in enumerate(improved):
                if up:
                    self.best[t], self.epochs[t], self.states[t] = (
                        float(scores[t]),
                        self.calls,
                        state,
                    )
        self.calls += 1
        return improved

    def model(self, base: torch.nn.Module, tasks: Sequence[TaskSpec]) -> PerTaskModel:
        """The predictor: ``base``'s architecture with each task's best weights."""
        return PerTaskModel(
            base,
            [s if s is not None else base.state_dict() for s in self.states],
            self.epochs,
            tasks,
        )


class PerTaskModel(torch.nn.Module):
    """Task ``t``'s outputs from ``base`` loaded with ``states[t]``; tasks whose best epochs coincide
    share one copy. ``predict`` and ``forward`` map like the wrapped model's to ``[N, sum(n_out)]``.

    :ivar task_epochs: the 0-based epoch of each task's weights.
    :ivar owner: per task, the index of its network in ``nets``.
    """

    def __init__(
        self,
        base: torch.nn.Module,
        states: Sequence[dict[str, torch.Tensor]],
        epochs: Sequence[int],
        tasks: Sequence[TaskSpec],
    ) -> None:
        super().__init__()
        self.task_epochs = [int(e) for e in epochs]
        self.n_out = [t.n_out for t in tasks]
        distinct = sorted(set(self.task_epochs))
        self.owner = [distinct.index(e) for e in self.task_epochs]
        nets = []
        for e in distinct:
            net = copy.deepcopy(base)
            net.load_state_dict(states[self.task_epochs.index(e)])
            nets.append(net.eval())
        self.nets = torch.nn.ModuleList(nets)
        self.eval()

    def _join(self, outs: Sequence[torch.Tensor]) -> torch.Tensor:
        parts = [torch.split(o, self.n_out, dim=-1) for o in outs]
        return torch.cat([parts[k][t] for t, k in enumerate(self.owner)], dim=-1)

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self._join([net(*args, **kwargs) for net in self.nets])

    @torch.no_grad()
    def predict(
        self, x_num: torch.Tensor, x_cat: torch.Tensor | None, context: Any = None
    ) -> torch.Tensor:
        """``[N, sum(n_out)]``: each task's columns from its own network."""
        return self._join([net.predict(x_num, x_cat, context) for net in self.nets])  # type: ignore[operator]
