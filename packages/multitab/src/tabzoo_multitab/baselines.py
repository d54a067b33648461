"""MLP baselines of the paper, on the same per-feature embeddings as MultiTab-Net.

* :class:`SingleTaskMLP` (STL): one independent embedding + MLP per task -- the Δm reference.
  All towers sit in one module for convenience, but share no parameter, so with Adam (a
  per-parameter update) training them together equals training them apart, step for step.
* :class:`SharedBottom` (MTL, Caruana 1997): one shared embedding + MLP, one tower per task.
* :class:`MMoE` (Ma et al. 2018): shared experts, one softmax gate and one tower per task.
* :class:`PLE` (Tang et al. 2020): shared experts plus experts owned by each task; each task's
  gate mixes the shared experts and its own (one extraction layer, i.e. CGC).

Every model maps ``x_num [..., F_num]``, ``x_cat [..., F_cat]`` to ``[..., sum(n_out)]``;
rows never interact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tabzoo.nn import MLPHead
from torch import nn

from tabzoo_multitab.config import TaskSpec, parse_tasks
from tabzoo_multitab.embedding import FeatureEmbedding

__all__ = ["SingleTaskMLP", "SharedBottom", "MMoE", "PLE", "mlp", "BASELINES"]


def mlp(d_in: int, hidden: Sequence[int], dropout: float) -> nn.Sequential:
    """``Linear -> ReLU -> Dropout`` for each hidden width."""
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(d_in, h), nn.ReLU(), nn.Dropout(dropout)]
        d_in = h
    return nn.Sequential(*layers)


class _RowModel(nn.Module):
    tasks: tuple[TaskSpec, ...]

    def _expert_setup(self, n_num: int, cat_cardinalities: Sequence[int], tasks: Sequence[Any], d_embed: int,
                      hidden: Sequence[int]) -> tuple[int, list[int]]:
        """The shared embedding of the expert models (MMoE, PLE): sets ``tasks`` and ``embed``;
        returns the flattened input width ``(d_num + d_cat) * e`` and the expert widths (half of
        ``hidden``, at least 8: the experts together keep a capacity comparable to the shared
        bottom's, as the paper matches capacities)."""
        self.tasks = parse_tasks(tasks)
        self.embed = FeatureEmbedding(n_num, cat_cardinalities, d_embed)
        return (n_num + len(cat_cardinalities)) * d_embed, [max(8, h // 2) for h in hidden]

    @staticmethod
    def _experts(d_in: int, width: Sequence[int], n: int, dropout: float) -> nn.ModuleList:
        """``n`` expert MLPs ``d_in -> width``."""
        return nn.ModuleList(mlp(d_in, width, dropout) for _ in range(n))

    def _towers(self, d_in: int, tower_hidden: int) -> nn.ModuleList:
        """One ReLU MLP tower per task, ``d_in -> tower_hidden -> n_out``."""
        return nn.ModuleList(MLPHead(d_in, tower_hidden, t.n_out, activation="relu") for t in self.tasks)

    @staticmethod
    def _mix(gate: nn.Module, x: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        """``sum_i softmax(gate(x))_i experts_i``: ``x [..., d_in]``, ``experts [..., n, w]`` -> ``[..., w]``."""
        return (torch.softmax(gate(x), dim=-1).unsqueeze(-1) * experts).sum(-2)

    def split(self, out: torch.Tensor) -> list[torch.Tensor]:
        return list(torch.split(out, [t.n_out for t in self.tasks], dim=-1))

    @torch.no_grad()
    def predict(self, x_num: torch.Tensor, x_cat: torch.Tensor | None, context: Any = None, chunk: int = 4096) -> torch.Tensor:
        """``[N, sum(n_out)]``; rows are independent, so ``context`` is ignored."""
        outs = [self(x_num[s:s + chunk], x_cat[s:s + chunk] if x_cat is not None else None)
                for s in range(0, x_num.shape[0], chunk)]
        return torch.cat(outs) if outs else x_num.new_zeros(0, sum(t.n_out for t in self.tasks))


class SingleTaskMLP(_RowModel):
    """STL: per task, its own embedding ``e`` and MLP ``hidden`` then a linear output."""

    def __init__(self, n_num: int, cat_cardinalities: Sequence[int], tasks: Sequence[Any], d_embed: int = 16,
                 hidden: Sequence[int] = (256, 128), dropout: float = 0.1) -> None:
        super().__init__()
        self.tasks = parse_tasks(tasks)
        d_in = (n_num + len(cat_cardinalities)) * d_embed
        self.embeds = nn.ModuleList(FeatureEmbedding(n_num, cat_cardinalities, d_embed) for _ in self.tasks)
        self.towers = nn.ModuleList(
            nn.Sequential(mlp(d_in, hidden, dropout), nn.Linear(hidden[-1], t.n_out)) for t in self.tasks
        )

    def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor | None = None) -> torch.Tensor:
        return torch.cat([tower(emb(x_num, x_cat).flatten(-2)) for emb, tower in zip(self.embeds, self.towers, strict=True)], -1)


class SharedBottom(_RowModel):
    """Shared embedding and bottom MLP, then a small tower per task."""

    def __init__(self, n_num: int, cat_cardinalities: Sequence[int], tasks: Sequence[Any], d_embed: int = 16,
                 hidden: Sequence[int] = (256, 128), tower_hidden: int = 64, dropout: float = 0.1) -> None:
        super().__init__()
        self.tasks = parse_tasks(tasks)
        self.embed = FeatureEmbedding(n_num, cat_cardinalities, d_embed)
        self.bottom = mlp((n_num + len(cat_cardinalities)) * d_embed, hidden, dropout)
        self.towers = self._towers(hidden[-1], tower_hidden)

    def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor | None = None) -> torch.Tensor:
        h = self.bottom(self.embed(x_num, x_cat).flatten(-2))
        return torch.cat([tower(h) for tower in self.towers], -1)


class MMoE(_RowModel):
    """Multi-gate mixture of experts: ``f_k(x) = sum_i softmax(G_k x)_i E_i(x)``, then tower ``k``."""

    def __init__(self, n_num: int, cat_cardinalities: Sequence[int], tasks: Sequence[Any], d_embed: int = 16,
                 hidden: Sequence[int] = (256, 128), n_experts: int = 8, tower_hidden: int = 64,
                 dropout: float = 0.1) -> None:
        super().__init__()
        d_in, width = self._expert_setup(n_num, cat_cardinalities, tasks, d_embed, hidden)
        self.experts = self._experts(d_in, width, n_experts, dropout)
        self.gates = nn.ModuleList(nn.Linear(d_in, n_experts) for _ in self.tasks)
        self.towers = self._towers(width[-1], tower_hidden)

    def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor | None = None) -> torch.Tensor:
        x = self.embed(x_num, x_cat).flatten(-2)
        experts = torch.stack([e(x) for e in self.experts], dim=-2)  # [..., n_experts, w]
        return torch.cat([tower(self._mix(gate, x, experts)) for gate, tower in zip(self.gates, self.towers, strict=True)], -1)


class PLE(_RowModel):
    """Progressive layered extraction, one extraction layer (CGC): task ``k``'s input to its tower is
    ``sum_i softmax(G_k x)_i E_i(x)`` over the shared experts and task ``k``'s own experts.

    :param n_shared: shared experts; :param n_specific: experts per task. The defaults keep the
        total near MMoE's 8 experts for 2-3 tasks (paper appendix: 8 experts); experts have MMoE's widths.
    """

    def __init__(self, n_num: int, cat_cardinalities: Sequence[int], tasks: Sequence[Any], d_embed: int = 16,
                 hidden: Sequence[int] = (256, 128), n_shared: int = 4, n_specific: int = 2, tower_hidden: int = 64,
                 dropout: float = 0.1) -> None:
        super().__init__()
        d_in, width = self._expert_setup(n_num, cat_cardinalities, tasks, d_embed, hidden)
        self.shared = self._experts(d_in, width, n_shared, dropout)
        self.specific = nn.ModuleList(self._experts(d_in, width, n_specific, dropout) for _ in self.tasks)
        self.gates = nn.ModuleList(nn.Linear(d_in, n_shared + n_specific) for _ in self.tasks)
        self.towers = self._towers(width[-1], tower_hidden)

    def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor | None = None) -> torch.Tensor:
        x = self.embed(x_num, x_cat).flatten(-2)
        shared = [e(x) for e in self.shared]
        outs = []
        for own, gate, tower in zip(self.specific, self.gates, self.towers, strict=True):
            experts = torch.stack(shared + [e(x) for e in own], dim=-2)  # [..., n_shared + n_specific, w]
            outs.append(tower(self._mix(gate, x, experts)))
        return torch.cat(outs, -1)


BASELINES: dict[str, type[_RowModel]] = {"stl": SingleTaskMLP, "shared_bottom": SharedBottom, "mmoe": MMoE, "ple": PLE}
