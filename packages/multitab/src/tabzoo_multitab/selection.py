"""Per-task model selection ("task-wise early stopping", issue 26): each task keeps the weights of
its own best validation epoch, and predicts with them.

Joint selection (the estimator's default until 2026-11-29; guarded selection since) early-stops
once, on the validation score summed or averaged over the tasks, and keeps one set of weights: an
epoch where one task is at its best and another has already started to overfit. A single-task twin (one network per task) picks each task's best epoch, which is
why it beat the multitask network on MultiTab-Bench (+1.23 vs +0.59 % Δm against the MLP on the 300-
and 1,000-row settings, ``benchmarks/results/multitab-grid-sizes-ablations-2026-11-29.json``).
:class:`PerTaskSelector` gives the multitask network the same freedom: during the one training run it
copies the weights whenever a task's own validation score improves; training stops when no task has
improved for ``patience`` epochs; :class:`PerTaskModel` then predicts task ``t`` with snapshot ``t``
(one forward pass per distinct snapshot; training costs the same, memory holds up to ``t`` copies).

Guarded selection (``"guarded"``, issue 26): on a small validation split one task's best epoch is
often noise (AER CPS1985's log wage, 107 validation rows, took epoch 3 in two of three seeds,
``benchmarks/results/multitab-real-pertask-summary-2026-11-29.json``). The selector also keeps the
joint-best epoch (the epoch joint selection would pick among those run) and, for every kept
snapshot, the per-row validation losses of each task. At the end, task ``t`` keeps its own epoch
only if its per-row losses there beat those of the joint-best epoch by more than ``z`` standard
errors of the paired difference, one-sided (:func:`guard`); otherwise it takes the joint-best
weights. ``z = 2`` (:data:`GUARD_Z`) was fixed before any measurement (about a 2.3 % one-sided false
positive rate per task on a normal difference); the evidence is the per-row loss (log-loss /
cross-entropy / squared error of the standardised target) whatever the early-stopping criterion,
because a per-task AUC has no per-row terms to pair.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from tabzoo_multitab.config import TaskSpec

__all__ = ["SELECTIONS", "GUARD_Z", "PerTaskSelector", "PerTaskModel", "guard"]

#: ``"joint"``: one set of weights, the best epoch of the mean (or summed) validation score;
#: ``"per_task"``: each task's best epoch by its own validation score; ``"guarded"``: a task's own
#: best epoch only where the validation rows give evidence for it (:func:`guard`), else the joint one
SELECTIONS = ("joint", "per_task", "guarded")
#: one-sided threshold, in standard errors of the paired per-row loss difference, fixed a priori
GUARD_Z = 2.0


def guard(own: np.ndarray, joint: np.ndarray, z: float = GUARD_Z) -> tuple[bool, float]:
    """Whether per-row losses ``own [n]`` beat ``joint [n]`` (the same validation rows) by more
    than ``z`` standard errors of the mean paired difference; returns ``(keep_own, statistic)``.

    The statistic is ``mean(d) / (std(d, ddof=1) / sqrt(n))`` with ``d = joint - own`` (positive:
    the own epoch has the lower loss). Fewer than 2 rows, or identical losses, give no evidence
    (``False``; statistic 0, or +-inf when every row moves the same way by the same amount)."""
    d = np.asarray(joint, dtype=np.float64) - np.asarray(own, dtype=np.float64)
    d = d[np.isfinite(d)]
    if len(d) < 2:
        return False, 0.0
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0.0:
        stat = 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    else:
        stat = mean / (sd / math.sqrt(len(d)))
    return stat > z, stat


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
        #: per task, the per-row validation losses ``[n_val]`` at its own best epoch (when given)
        self.rows: list[np.ndarray | None] = [None] * n_tasks
        #: the joint-best evaluation: its score, epoch, weights and per-row losses ``[n_val, t]``
        self.joint_best: float | None = None
        self.joint_epoch = -1
        self.joint_state: dict[str, torch.Tensor] | None = None
        self.joint_rows: np.ndarray | None = None
        self.calls = 0

    def update(self, model: torch.nn.Module, scores: Sequence[float], joint: float | None = None,
               rows: np.ndarray | None = None) -> list[bool]:
        """Record one evaluation (one per epoch) of ``model`` with per-task ``scores``; the tasks that improved.

        A task improves when its score is strictly below its best (the first evaluation always
        does), exactly the core loop's rule with ``min_delta = 0``; tasks that improve together share
        one copy of the weights. ``joint`` (lower is better) tracks the joint-best epoch by the same
        rule; ``rows [n_val, t]`` are the per-row validation losses, kept for each snapshot."""
        improved = [
            b is None or _rank(s) < _rank(b) for s, b in zip(scores, self.best, strict=True)
        ]
        joint_up = joint is not None and (self.joint_best is None or _rank(joint) < _rank(self.joint_best))
        # a detached copy of each tensor (the same values as a deepcopy of the state dict, without its
        # per-object bookkeeping: about 1 ms less per snapshot at the epoch benchmark's size)
        state = ({k: v.detach().clone() for k, v in model.state_dict().items()}
                 if any(improved) or joint_up else None)
        if any(improved):
            for t, up in enumerate(improved):
                if up:
                    self.best[t], self.epochs[t], self.states[t] = (
                        float(scores[t]),
                        self.calls,
                        state,
                    )
                    self.rows[t] = None if rows is None else np.array(rows[:, t], dtype=np.float64)
        if joint_up:
            assert joint is not None
            self.joint_best, self.joint_epoch, self.joint_state = float(joint), self.calls, state
            self.joint_rows = None if rows is None else np.array(rows, dtype=np.float64)
        self.calls += 1
        return improved

    def guarded(self, z: float = GUARD_Z) -> list[dict[str, Any]]:
        """Per task, the guarded choice (:func:`guard`): ``{"weights": "own" | "joint", "epoch",
        "own_epoch", "joint_epoch", "z", "reason"}``; ``"epoch"`` is the one used."""
        out = []
        for t, e in enumerate(self.epochs):
            rec: dict[str, Any] = {"own_epoch": e, "joint_epoch": self.joint_epoch, "z": None}
            if self.joint_state is None:
                rec.update(weights="own", epoch=e, reason="no joint score recorded")
            elif e == self.joint_epoch:
                rec.update(weights="joint", epoch=e, reason="own best epoch is the joint-best epoch")
            else:
                own, joint = self.rows[t], self.joint_rows
                if own is None or joint is None:
                    rec.update(weights="joint", epoch=self.joint_epoch, reason="no per-row losses recorded")
                else:
                    keep, stat = guard(own, joint[:, t], z)
                    rec["z"] = stat
                    rec.update(weights="own" if keep else "joint", epoch=e if keep else self.joint_epoch,
                               reason=(f"own epoch's per-row validation loss lower by {stat:.2f} > {z:g} "
                                       "standard errors" if keep else
                                       f"own epoch not better by more than {z:g} standard errors ({stat:.2f})"))
            out.append(rec)
        return out

    def model(self, base: torch.nn.Module, tasks: Sequence[TaskSpec],
              choices: Sequence[dict[str, Any]] | None = None) -> PerTaskModel:
        """The predictor: ``base``'s architecture with each task's best weights, or with the weights
        that ``choices`` (:meth:`guarded`) name per task."""
        states = [s if s is not None else base.state_dict() for s in self.states]
        epochs = list(self.epochs)
        if choices is not None:
            for t, c in enumerate(choices):
                if c["weights"] == "joint" and self.joint_state is not None:
                    states[t], epochs[t] = self.joint_state, self.joint_epoch
        return PerTaskModel(base, states, epochs, tasks)


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
