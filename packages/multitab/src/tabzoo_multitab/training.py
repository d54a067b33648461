"""Training through the core loop (:func:`tabzoo.train.fit.fit`) with early stopping on the
validation loss (or the mean per-task validation metric), and post-hoc temperature scaling of the classification heads (shared by every model).

Models map ``(x_num [N, F_num], x_cat [N, F_cat] | None)`` to ``[N, sum(n_out)]`` and offer
``predict(x_num, x_cat, context)``; MultiTab-Net reads each minibatch as one set of rows
(inter-sample attention over the minibatch) and predicts against a fixed, seeded context.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.train.fit import Evaluation, FitConfig, FitResult, fit

from tabzoo_multitab.config import TaskSpec
from tabzoo_multitab.losses import multitask_loss, row_losses, task_losses
from tabzoo_multitab.metrics import task_metric
from tabzoo_multitab.selection import PerTaskSelector

__all__ = ["TaskData", "MultiTaskFit", "fit_model", "evaluate", "fit_temperatures", "select_context"]

MONITORS = ("loss", "metric")
SCHEDULES = ("constant", "cosine")


@dataclass
class TaskData:
    """Encoded rows: ``x_num [N, F_num]`` float (NaN = missing), ``x_cat [N, F_cat]`` int64 or None,
    ``y [N, t]`` float (class indices, or standardised regression targets)."""

    x_num: torch.Tensor
    x_cat: torch.Tensor | None
    y: torch.Tensor | None = None

    def __len__(self) -> int:
        return self.x_num.shape[0]

    def rows(self, idx: torch.Tensor) -> TaskData:
        return TaskData(self.x_num[idx], self.x_cat[idx] if self.x_cat is not None else None,
                        self.y[idx] if self.y is not None else None)

    def to(self, device: torch.device) -> TaskData:
        return TaskData(self.x_num.to(device), self.x_cat.to(device) if self.x_cat is not None else None,
                        self.y.to(device) if self.y is not None else None)


def select_context(train: TaskData, n_context: int, seed: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A fixed, seeded sample of ``min(n_context, N)`` training rows: ``(ctx_num, ctx_cat)``."""
    g = torch.Generator().manual_seed(int(seed))
    idx = torch.randperm(len(train), generator=g)[: max(1, min(int(n_context), len(train)))]
    idx = idx.sort().values.to(train.x_num.device)
    sub = train.rows(idx)
    return sub.x_num, sub.x_cat


def evaluate(model: Any, data: TaskData, tasks: Sequence[TaskSpec], context: Any = None,
             metrics: Sequence[str | None] | None = None) -> list[float]:
    """Per-task metrics of ``model`` on ``data`` (``data.y`` needed)."""
    if data.y is None:
        raise TabzooInputError("evaluate needs labels: pass TaskData with y.")
    was = model.training
    model.eval()
    out = model.predict(data.x_num, data.x_cat, context)
    model.train(was)
    parts = torch.split(out, [t.n_out for t in tasks], dim=-1)
    y = data.y.cpu().numpy()
    metrics = metrics or [None] * len(tasks)
    return [task_metric(t.kind, y[:, i], p.float().cpu().numpy(), m)
            for i, (t, p, m) in enumerate(zip(tasks, parts, metrics, strict=True))]


def _outputs(model: Any, data: TaskData, tasks: Sequence[TaskSpec], context: Any) -> list[torch.Tensor]:
    was = model.training
    model.eval()
    with torch.no_grad():
        out = model.predict(data.x_num, data.x_cat, context)
    model.train(was)
    return list(torch.split(out.float(), [t.n_out for t in tasks], dim=-1))


def validation_loss(model: Any, data: TaskData, tasks: Sequence[TaskSpec], context: Any = None,
                    task_weights: Sequence[float] | None = None) -> float:
    """The training loss (weighted BCE / CE / MSE on standardised targets) on ``data``, in eval mode."""
    assert data.y is not None
    return float(multitask_loss(_outputs(model, data, tasks, context), data.y, tasks, task_weights))


def _nll(z: np.ndarray, y: np.ndarray, beta: float, binary: bool, eps: float = 0.0) -> float:
    """Mean negative log-likelihood of logits ``z`` scaled by ``beta`` (= 1 / temperature), against
    targets smoothed by ``eps`` (``(1 - eps)`` on the label, ``eps`` spread over all classes)."""
    if binary:
        s, t = beta * z[:, 0], y * (1.0 - eps) + 0.5 * eps
        return float(np.mean(np.logaddexp(0.0, s) - t * s))
    s = beta * z
    m = s.max(1, keepdims=True)
    logp = s - (m + np.log(np.exp(s - m).sum(1, keepdims=True)))
    own = logp[np.arange(len(y)), y.astype(np.int64)]
    return float(np.mean(-(1.0 - eps) * own - eps * logp.mean(1)))


def fit_temperatures(model: Any, data: TaskData, tasks: Sequence[TaskSpec], context: Any = None,
                     bounds: tuple[float, float] = (0.05, 20.0)) -> list[float]:
    """Per task, the temperature ``T`` in ``bounds`` that minimises the log-loss of ``logits / T``
    on ``data`` (held-out rows); 1.0 for regression tasks.

    The targets are smoothed by ``1 / (n + 2)`` (``n`` held-out rows, Laplace's rule): on a small
    held-out set that the model separates perfectly, the plain log-loss keeps falling as ``T -> 0``
    and the fitted temperature would make every probability 0 or 1, so one test mistake would cost
    a huge log-loss; smoothed, the optimum is finite. The smoothed log-likelihood is convex in
    ``1 / T``, so a golden-section search on ``1 / T`` finds it. A temperature never changes a
    prediction (argmax, or the sign of a binary logit), only how confident the probabilities are.
    """
    if data.y is None or len(data) == 0:
        return [1.0] * len(tasks)
    outs, y = _outputs(model, data, tasks, context), data.y.cpu().numpy()
    temps = []
    for j, (t, o) in enumerate(zip(tasks, outs, strict=True)):
        if t.kind == "regression":
            temps.append(1.0)
            continue
        z, yj, binary = o.cpu().numpy().astype(np.float64), y[:, j], t.kind == "binary"
        eps = 1.0 / (len(yj) + 2.0)
        lo, hi = 1.0 / bounds[1], 1.0 / bounds[0]
        ratio = (math.sqrt(5.0) - 1.0) / 2.0
        for _ in range(60):
            a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
            if _nll(z, yj, a, binary, eps) <= _nll(z, yj, b, binary, eps):
                hi = b
            else:
                lo = a
        beta = (lo + hi) / 2.0
        # keep T = 1 unless scaling really lowers the (smoothed) held-out log-loss
        temps.append(1.0 / beta if _nll(z, yj, beta, binary, eps) < _nll(z, yj, 1.0, binary, eps) else 1.0)
    return temps


def _mean(xs: Sequence[float]) -> float:
    vals = [x for x in xs if x == x]
    return float(np.mean(vals)) if vals else float("nan")


class MultiTaskFit:
    """MultiTab's side of the core loop (:func:`tabzoo.train.fit.fit`): each epoch a seeded
    shuffle of the training rows cut into minibatches, and the weighted multitask loss."""

    def __init__(self, tasks: Sequence[TaskSpec], train: TaskData, batch_size: int, seed: int,
                 task_weights: Sequence[float] | None = None) -> None:
        self.tasks, self.train, self.batch_size, self.task_weights = tasks, train, batch_size, task_weights
        self.g = torch.Generator().manual_seed(int(seed))

    def batches(self, epoch: int) -> Iterator[TaskData]:
        """``ceil(N / batch_size)`` minibatches of a fresh permutation of the training rows."""
        n = len(self.train)
        perm = torch.randperm(n, generator=self.g).to(self.train.x_num.device)
        for b in range(max(1, math.ceil(n / self.batch_size))):
            yield self.train.rows(perm[b * self.batch_size:(b + 1) * self.batch_size])

    def loss(self, model: torch.nn.Module, batch: TaskData, step: int) -> torch.Tensor:
        assert batch.y is not None
        out = model(batch.x_num, batch.x_cat)
        parts = list(torch.split(out, [t.n_out for t in self.tasks], dim=-1))
        return multitask_loss(parts, batch.y, self.tasks, self.task_weights)

    def state_dict(self) -> dict[str, Any]:
        return {"g": self.g.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.g.set_state(state["g"])


def fit_model(model: torch.nn.Module, tasks: Sequence[TaskSpec], train: TaskData, val: TaskData | None, *,
              task_weights: Sequence[float] | None = None, max_epochs: int = 100, batch_size: int = 256,
              lr: float = 1e-3, weight_decay: float = 1e-5, patience: int = 10, seed: int = 0,
              context: Any = None, progress: bool = False, grad_clip: float = 1.0,
              monitor: str = "loss", schedule: str = "constant",
              selector: PerTaskSelector | None = None) -> FitResult:
    """Adam with weight decay, through the core loop; after each epoch, the validation score:
    ``monitor="loss"`` = the validation loss (the training loss on the held-out rows: it rewards
    calibrated probabilities), ``"metric"`` = the mean per-task metric (AUC / EV, blind to
    calibration); stop after ``patience`` epochs without improvement and restore the best
    weights. Without ``val`` it trains ``max_epochs`` epochs. ``schedule="cosine"`` decays the
    learning rate from ``lr`` to 0 along a cosine over the ``max_epochs`` budget (per step);
    ``"constant"`` keeps ``lr``.

    With a ``selector`` (per-task selection, :mod:`tabzoo_multitab.selection`), each task's own
    validation score (its loss, or minus its metric, by ``monitor``) picks that task's weights in the
    selector, and the run stops after ``patience`` epochs in which no task improved; the model itself
    ends with the weights of the last epoch where some task improved. History rows then also hold
    ``task_improved`` (per task). The selector also records the joint-best epoch (by the monitored
    joint score) and each snapshot's per-row validation losses, for the guarded choice.

    The result's ``history`` holds per epoch ``train_loss`` and, with ``val``, ``val_loss``,
    ``val_metrics`` (per task) and ``val_mean``; ``best_epoch`` is 0-based.

    Deterministic for ``seed``: shuffling and dropout draw from seeded generators; the caller's
    global RNG state is left untouched.
    """
    if train.y is None or len(train) < 1:
        raise TabzooInputError("fit needs at least one labelled training row.")
    if monitor not in MONITORS:
        raise TabzooInputError(f"early stopping monitors one of {MONITORS}, got {monitor!r}.")
    if max_epochs < 1 or batch_size < 1 or patience < 1:
        raise TabzooInputError(f"max_epochs, batch_size and patience must be >= 1, got {max_epochs}, {batch_size}, {patience}.")
    if schedule not in SCHEDULES:
        raise TabzooInputError(f"schedule={schedule!r}: use one of {SCHEDULES}.")
    steps = max_epochs * max(1, math.ceil(len(train) / batch_size))
    cfg = FitConfig(max_epochs=max_epochs, optimizer="adam", lr=lr, weight_decay=weight_decay, clip_norm=grad_clip,
                    patience=patience, seed=seed, progress=progress, desc=type(model).__name__,
                    **({"schedule": "flat_cosine", "flat_fraction": 0.0, "max_steps": steps} if schedule == "cosine" else {}))
    validate = None
    if val is not None and len(val):
        held_out = val

        def validate(m: torch.nn.Module) -> Evaluation:
            # one prediction pass gives both the metrics and the loss (MultiTab-Net's pass also
            # encodes its whole context, so two passes cost about a third of an epoch)
            assert held_out.y is not None
            outs = _outputs(m, held_out, tasks, context)
            y = held_out.y.cpu().numpy()
            scores = [task_metric(t.kind, y[:, i], o.cpu().numpy()) for i, (t, o) in enumerate(zip(tasks, outs, strict=True))]
            mean = _mean(scores)
            loss = float(multitask_loss(outs, held_out.y, tasks, task_weights))
            details: dict[str, Any] = {"val_metrics": scores, "val_mean": mean, "val_loss": loss}
            if selector is None:
                return Evaluation(loss if monitor == "loss" else -mean, details)
            own = task_losses(outs, held_out.y, tasks).tolist() if monitor == "loss" else [-v for v in scores]
            joint = loss if monitor == "loss" else -mean
            rows = row_losses(outs, held_out.y, tasks).cpu().numpy()
            details["task_improved"] = improved = selector.update(m, own, joint=joint, rows=rows)
            return Evaluation(joint, details, improved=any(improved))

    return fit(model, MultiTaskFit(tasks, train, batch_size, seed, task_weights), cfg, validate=validate)
