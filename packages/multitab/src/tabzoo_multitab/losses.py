"""The multitask loss: BCE-with-logits (binary), cross-entropy (multiclass), MSE (regression,
on targets standardised with training statistics), weighted per task."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from tabzoo.errors import TabzooInputError

from tabzoo_multitab.config import TaskSpec

__all__ = ["task_losses", "row_losses", "multitask_loss"]


def task_losses(outputs: Sequence[torch.Tensor], y: torch.Tensor, tasks: Sequence[TaskSpec]) -> torch.Tensor:
    """Per-task mean losses ``[t]``.

    :param outputs: one ``[N, n_out]`` per task (logits, or the standardised regression value).
    :param y: ``[N, t]`` float: class index (0/1 for binary) or the *standardised* regression target.
    """
    if y.dim() != 2 or y.shape[1] != len(tasks) or len(outputs) != len(tasks):
        raise TabzooInputError(f"y must be [rows, {len(tasks)}] with one output per task, got {tuple(y.shape)}.")
    losses = []
    for out, t, col in zip(outputs, tasks, y.unbind(1), strict=True):
        if t.kind == "binary":
            losses.append(F.binary_cross_entropy_with_logits(out[:, 0], col))
        elif t.kind == "multiclass":
            losses.append(F.cross_entropy(out, col.long()))
        else:
            losses.append(F.mse_loss(out[:, 0], col))
    return torch.stack(losses)


def row_losses(outputs: Sequence[torch.Tensor], y: torch.Tensor, tasks: Sequence[TaskSpec]) -> torch.Tensor:
    """Per-row, per-task losses ``[N, t]`` (their column means are :func:`task_losses`); same arguments."""
    if y.dim() != 2 or y.shape[1] != len(tasks) or len(outputs) != len(tasks):
        raise TabzooInputError(f"y must be [rows, {len(tasks)}] with one output per task, got {tuple(y.shape)}.")
    cols = []
    for out, t, col in zip(outputs, tasks, y.unbind(1), strict=True):
        if t.kind == "binary":
            cols.append(F.binary_cross_entropy_with_logits(out[:, 0], col, reduction="none"))
        elif t.kind == "multiclass":
            cols.append(F.cross_entropy(out, col.long(), reduction="none"))
        else:
            cols.append((out[:, 0] - col) ** 2)
    return torch.stack(cols, 1)


def multitask_loss(outputs: Sequence[torch.Tensor], y: torch.Tensor, tasks: Sequence[TaskSpec],
                   weights: Sequence[float] | torch.Tensor | None = None) -> torch.Tensor:
    """``sum_i w_i L_i`` (default ``w_i = 1``)."""
    per = task_losses(outputs, y, tasks)
    if weights is None:
        return per.sum()
    w = torch.as_tensor(weights, dtype=per.dtype, device=per.device)
    if w.shape != per.shape or bool((w < 0).any()):
        raise TabzooInputError(f"task_weights need {len(tasks)} non-negative values, got {w.tolist()}.")
    return (w * per).sum()
