"""MultiTab-Net's task heads, one two-layer GELU MLP per task, run together (issue 26 item 4).

Each task ``i`` reads its task token through its own ``Linear(e, hidden) -> GELU -> Linear(hidden,
n_out_i)`` (the paper's per-task heads, :class:`tabzoo.nn.MLPHead`). The weights of all tasks are
stacked, so both layers are one batched matmul over the tasks instead of one small matmul per task
(a third of the heads' forward + backward time at batch 32, and 4 parameter tensors instead of
4 per task for the optimizer and the gradient clipping). Tasks with fewer outputs than the widest
get zero columns in the second layer that are never read (their gradient is 0, so they stay 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from tabzoo.nn import MLPHead
from torch import nn

__all__ = ["TaskHeads"]


class TaskHeads(nn.Module):
    """Per-task heads ``[..., t, e] -> [..., sum(n_outs)]`` (task ``i`` reads slot ``i``).

    :param d_in: token width ``e``.
    :param hidden: hidden width of every head.
    :param n_outs: outputs of each task's head, in task order.
    """

    def __init__(self, d_in: int, hidden: int, n_outs: Sequence[int]) -> None:
        super().__init__()
        self.n_outs = [int(o) for o in n_outs]
        width = max(self.n_outs)
        # built as the per-task MLPHeads, in task order, so the initial weights are theirs
        heads = [MLPHead(d_in, hidden, o) for o in self.n_outs]
        with torch.no_grad():
            self.w1 = nn.Parameter(torch.stack([h.net[0].weight.t() for h in heads]))  # [t, e, hidden]
            self.b1 = nn.Parameter(torch.stack([h.net[0].bias for h in heads])[:, None])  # [t, 1, hidden]
            w2, b2 = torch.zeros(len(heads), hidden, width), torch.zeros(len(heads), 1, width)
            for i, h in enumerate(heads):
                last = h.net[-1]
                w2[i, :, : last.out_features] = last.weight.t()
                b2[i, 0, : last.out_features] = last.bias
        self.w2, self.b2 = nn.Parameter(w2), nn.Parameter(b2)  # [t, hidden, width], [t, 1, width]
        cols = [i * width + j for i, o in enumerate(self.n_outs) for j in range(o)]
        self.register_buffer("cols", None if len(cols) == len(heads) * width else torch.tensor(cols), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:param x: ``[..., t, e]`` task tokens. :return: ``[..., sum(n_outs)]``, task by task."""
        lead, (t, e) = x.shape[:-2], x.shape[-2:]
        z = x.reshape(-1, t, e).transpose(0, 1)  # [t, R, e]
        y = torch.baddbmm(self.b2, F.gelu(torch.baddbmm(self.b1, z, self.w1)), self.w2)  # [t, R, width]
        y = y.transpose(0, 1).reshape(*lead, t * y.shape[-1])
        return y if self.cols is None else y.index_select(-1, self.cols)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        """Also loads the per-task form of checkpoints written before the heads were stacked
        (``{i}.net.0.weight``, ``{i}.net.0.bias``, ``{i}.net.3.weight``, ``{i}.net.3.bias``)."""
        if f"{prefix}0.net.0.weight" in state_dict:
            old = [{k: state_dict.pop(f"{prefix}{i}.net.{k}") for k in ("0.weight", "0.bias", "3.weight", "3.bias")}
                   for i in range(len(self.n_outs))]
            width = self.w2.shape[-1]
            state_dict[f"{prefix}w1"] = torch.stack([o["0.weight"].t() for o in old])
            state_dict[f"{prefix}b1"] = torch.stack([o["0.bias"] for o in old])[:, None]
            w2 = torch.stack([F.pad(o["3.weight"].t(), (0, width - o["3.weight"].shape[0])) for o in old])
            b2 = torch.stack([F.pad(o["3.bias"], (0, width - o["3.bias"].shape[0])) for o in old])[:, None]
            state_dict[f"{prefix}w2"], state_dict[f"{prefix}b2"] = w2, b2
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
