"""Training with early stopping on the validation loss (or the mean per-task validation metric),
and post-hoc temperature scaling of the classification heads (shared by every model).

Models map ``(x_num [N, F_num], x_cat [N, F_cat] | None)`` to ``[N, sum(n_out)]`` and offer
``predict(x_num, x_cat, context)``; MultiTab-Net reads each minibatch as one set of rows
(inter-sample attention over the minibatch) and predicts against a fixed, seeded context.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError

from tabzoo_multitab.config import TaskSpec
from tabzoo_multitab.losses import multitask_loss
from tabzoo_multitab.metrics import task_metric

__all__ = ["TaskData", "FitResult", "fit_model", "evaluate", "fit_temperatures", "select_context", "progress_bar"]

MONITORS = ("loss", "metric")

log = logging.getLogger(__name__)


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


@dataclass
class FitResult:
    """What :func:`fit_model` did: best epoch (0-based), its score (minus the validation loss, or the
    mean validation metric, as monitored), per-epoch history."""

    best_epoch: int = -1
    best_score: float = -math.inf
    epochs_run: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)


def progress_bar(iterable: Any, enabled: bool, **kw: Any) -> Any:
    """A tqdm bar when ``enabled`` and tqdm is installed; the plain iterable otherwise."""
    if not enabled:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is in the sklearn extra
        log.info("tqdm is not installed; no progress bar (pip install 'tabzoo-core[progress]')")
        return iterable
    return tqdm(iterable, **kw)


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


def fit_model(model: torch.nn.Module, tasks: Sequence[TaskSpec], train: TaskData, val: TaskData | None, *,
              task_weights: Sequence[float] | None = None, max_epochs: int = 100, batch_size: int = 256,
              lr: float = 1e-3, weight_decay: float = 1e-5, patience: int = 10, seed: int = 0,
              context: Any = None, progress: bool = False, grad_clip: float = 1.0,
              monitor: str = "loss") -> FitResult:
    """Adam with weight decay; after each epoch, the validation score: ``monitor="loss"`` = minus
    the validation loss (the training loss on the held-out rows: it rewards calibrated
    probabilities), ``"metric"`` = the mean per-task metric (AUC / EV, blind to calibration); stop
    after ``patience`` epochs without improvement and restore the best weights. Without ``val`` it
    trains ``max_epochs`` epochs.

    Deterministic for ``seed``: shuffling and dropout draw from seeded generators; the caller's
    global RNG state is restored afterwards.
    """
    if train.y is None or len(train) < 1:
        raise TabzooInputError("fit needs at least one labelled training row.")
    if monitor not in MONITORS:
        raise TabzooInputError(f"early stopping monitors one of {MONITORS}, got {monitor!r}.")
    if max_epochs < 1 or batch_size < 1 or patience < 1:
        raise TabzooInputError(f"max_epochs, batch_size and patience must be >= 1, got {max_epochs}, {batch_size}, {patience}.")
    result = FitResult()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    g = torch.Generator().manual_seed(int(seed))
    best_state: dict[str, torch.Tensor] | None = None
    n = len(train)
    n_batches = max(1, math.ceil(n / batch_size))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        bar = progress_bar(range(max_epochs), progress, desc=type(model).__name__, unit="epoch", leave=False)
        for epoch in bar:
            model.train()
            perm = torch.randperm(n, generator=g).to(train.x_num.device)
            total = 0.0
            for b in range(n_batches):
                batch = train.rows(perm[b * batch_size:(b + 1) * batch_size])
                assert batch.y is not None
                out = model(batch.x_num, batch.x_cat)
                parts = list(torch.split(out, [t.n_out for t in tasks], dim=-1))
                loss = multitask_loss(parts, batch.y, tasks, task_weights)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if grad_clip:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
                opt.step()
                total += float(loss.detach())
            entry: dict[str, Any] = {"epoch": epoch, "train_loss": total / n_batches}
            result.epochs_run = epoch + 1
            if val is None or len(val) == 0:
                result.history.append(entry)
                continue
            scores = evaluate(model, val, tasks, context)
            entry["val_metrics"], entry["val_mean"] = scores, _mean(scores)
            entry["val_loss"] = validation_loss(model, val, tasks, context, task_weights)
            result.history.append(entry)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{entry['train_loss']:.3f}", val=f"{entry['val_loss']:.4f}")
            score = -entry["val_loss"] if monitor == "loss" else entry["val_mean"]
            score = score if score == score else -math.inf
            if result.best_epoch < 0 or score > result.best_score:
                result.best_epoch, result.best_score = epoch, score
                best_state = copy.deepcopy(model.state_dict())
            elif epoch - result.best_epoch >= patience:
                log.info("early stop at epoch %d (best %d: %.4f)", epoch, result.best_epoch, result.best_score)
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return result
