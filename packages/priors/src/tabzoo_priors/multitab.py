"""Multitask generators: MultiTab-Bench (MultiTab paper, sec. 4) and MMoE's two-task generator.

MultiTab-Bench: ``P`` has 1 on the diagonal and ``p`` elsewhere, ``P = Q diag(lambda) Q^T``,
``W = Q diag(sqrt(lambda)) U^T`` with ``U [d, t]`` orthonormal columns, so the task weight rows
``w_i`` have unit norm and ``w_i . w_j = P_ij``. Features ``x ~ N(0, I_d)``; task ``i``'s label is
``sum_{k=1..d_i} (w_i . x)^k + eps_i`` with ``eps_i ~ N(0, sigma_i^2)``.

Unlike the authors' listing, the train, validation and test splits here are three *independent*
draws of ``x`` and noise that share one ``W`` (their code reused the training set as test set),
and ``U`` is properly orthonormalised (QR), not by an in-place update that drops the projection.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from tabzoo.errors import TabzooInputError

from tabzoo_priors._random import derive_seed

__all__ = ["MultiTaskData", "MultiTaskSplits", "MultiTabBench", "correlated_weights", "MMoEPrior"]


@dataclass(frozen=True)
class MultiTaskData:
    """One split. ``x [rows, features]`` float32; ``y [rows, tasks]`` float32 (regression)."""

    x: torch.Tensor
    y: torch.Tensor
    task_names: tuple[str, ...]

    def to_multitarget_table(self):  # -> tabzoo.table.MultiTargetTable
        """Wrap as the core's ``MultiTargetTable`` (numeric features ``x0..``, targets by task)."""
        from tabzoo.table import MultiTargetTable, Table

        feats = Table.from_numpy(self.x.cpu().numpy(), names=[f"x{j}" for j in range(self.x.shape[1])])
        targets = Table.from_numpy(self.y.cpu().numpy(), names=list(self.task_names))
        return MultiTargetTable(features=feats, targets=targets)


@dataclass(frozen=True)
class MultiTaskSplits:
    """Train/validation/test splits sharing the task weights ``W [tasks, features]``."""

    train: MultiTaskData
    val: MultiTaskData
    test: MultiTaskData
    W: torch.Tensor
    P: torch.Tensor


def correlated_weights(n_tasks: int, n_features: int, p: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit task weight vectors with pairwise cosine similarity ``p``.

    :return: ``(W [tasks, features], P [tasks, tasks])`` in float64.
    """
    t, d = n_tasks, n_features
    if t < 1 or d < t:
        raise TabzooInputError(f"need 1 <= n_tasks <= n_features, got n_tasks={t}, n_features={d}.")
    if t > 1 and not (-1.0 / (t - 1) - 1e-12 <= p <= 1.0):
        raise TabzooInputError(
            f"p={p} gives no valid correlation matrix for {t} tasks; use p in [{-1 / (t - 1):.4f}, 1]."
        )
    P = torch.full((t, t), float(p), dtype=torch.float64)
    P.fill_diagonal_(1.0)
    lam, Q = torch.linalg.eigh(P)
    lam = lam.clamp_min(0.0)
    A = torch.randn(d, t, generator=generator, dtype=torch.float64)
    U, R = torch.linalg.qr(A)  # [d, t] orthonormal columns
    U = U * torch.sign(torch.diagonal(R)).unsqueeze(0)
    W = Q @ torch.diag(lam.sqrt()) @ U.T
    return W, P


class MultiTabBench:
    """MultiTab-Bench generator with any number of tasks.

    :param n_tasks: number of tasks ``t``.
    :param n_features: feature dimension ``d`` (paper: 32).
    :param p: pairwise task correlation (cosine similarity of the task weights).
    :param degrees: polynomial degree per task (int = same for all; paper: 3).
    :param noise: noise std ``sigma_i`` per task (float = same for all; paper: 0.01).
    :param sizes: rows of the train, validation and test splits.

    Example::

        splits = MultiTabBench(n_tasks=3, p=0.6, degrees=[2, 3, 4]).sample(seed=0)
        splits.train.x.shape, splits.train.y.shape   # [n_train, 32], [n_train, 3]
    """

    kind = "multitask"

    def __init__(
        self, n_tasks: int = 3, n_features: int = 32, p: float = 0.6,
        degrees: int | Sequence[int] = 3, noise: float | Sequence[float] = 0.01,
        sizes: tuple[int, int, int] = (10_000, 2_000, 2_000),
    ) -> None:
        self.n_tasks, self.n_features, self.p = int(n_tasks), int(n_features), float(p)
        self.degrees = tuple([int(degrees)] * self.n_tasks if isinstance(degrees, int) else map(int, degrees))
        self.noise = tuple([float(noise)] * self.n_tasks if isinstance(noise, (int, float)) else map(float, noise))
        if len(self.degrees) != self.n_tasks or min(self.degrees, default=1) < 1:
            raise TabzooInputError(f"degrees={degrees!r}: need one degree >= 1 per task ({self.n_tasks}).")
        if len(self.noise) != self.n_tasks or min(self.noise, default=0) < 0:
            raise TabzooInputError(f"noise={noise!r}: need one std >= 0 per task ({self.n_tasks}).")
        if len(sizes) != 3 or min(sizes) < 1:
            raise TabzooInputError(f"sizes={sizes!r} must be three positive row counts (train, val, test).")
        self.sizes = tuple(int(s) for s in sizes)
        correlated_weights(self.n_tasks, self.n_features, self.p, torch.Generator())  # validate early

    def labels(self, x: torch.Tensor, W: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """``y [rows, tasks]`` for features ``x [rows, features]``."""
        z = x.double() @ W.T  # [rows, tasks]
        cols = []
        for i in range(self.n_tasks):
            zi = z[:, i]
            poly = sum(zi**k for k in range(1, self.degrees[i] + 1))
            eps = torch.randn(zi.shape, generator=generator, dtype=torch.float64) * self.noise[i]
            cols.append(poly + eps)
        return torch.stack(cols, dim=1).float()

    def sample(self, *, seed: int) -> MultiTaskSplits:
        """Draw ``W`` once, then three independent splits."""
        g = torch.Generator().manual_seed(derive_seed(int(seed), 10))
        W, P = correlated_weights(self.n_tasks, self.n_features, self.p, g)
        names = tuple(f"task{i}" for i in range(self.n_tasks))
        parts = []
        for n in self.sizes:
            x = torch.randn(n, self.n_features, generator=g, dtype=torch.float64)
            parts.append(MultiTaskData(x=x.float(), y=self.labels(x, W, g), task_names=names))
        return MultiTaskSplits(train=parts[0], val=parts[1], test=parts[2], W=W, P=P)


class MMoEPrior:
    """MMoE's two-task regression generator (as summarised in the MultiTab appendix).

    ``u1 ⟂ u2`` unit vectors; ``w1 = c u1``, ``w2 = c (p u1 + sqrt(1 - p^2) u2)``; ``x ~ N(0, I)``;
    ``y_k = w_k . x + sum_{i=1..m} sin(alpha_i w_k . x + beta_i) + eps_k``, ``eps_k ~ N(0, 0.01)``
    (std ``noise_std`` = 0.1). ``alpha_i, beta_i ~ N(0, 1)`` are shared by both tasks (the
    MultiTab text does not give their distribution). Train/val/test share ``W``, ``alpha``, ``beta``
    and are independent draws of ``x`` and noise.

    :param n_features: input dimension ``d`` (MMoE: 100).
    :param p: cosine similarity of ``w1`` and ``w2``, in ``[-1, 1]``.
    :param scale: the constant ``c``.
    :param n_sin: number ``m`` of sine terms.
    :param sizes: rows of the train, validation and test splits.
    """

    kind = "multitask"

    def __init__(self, n_features: int = 100, p: float = 0.5, scale: float = 1.0, n_sin: int = 10,
                 noise_std: float = 0.1, sizes: tuple[int, int, int] = (10_000, 2_000, 2_000)) -> None:
        if not -1.0 <= p <= 1.0:
            raise TabzooInputError(f"p={p} must lie in [-1, 1].")
        if n_features < 2:
            raise TabzooInputError(f"n_features={n_features} must be >= 2.")
        if len(sizes) != 3 or min(sizes) < 1:
            raise TabzooInputError(f"sizes={sizes!r} must be three positive row counts (train, val, test).")
        self.n_features, self.p, self.scale, self.n_sin = int(n_features), float(p), float(scale), int(n_sin)
        self.noise_std, self.sizes = float(noise_std), tuple(int(s) for s in sizes)

    def sample(self, *, seed: int) -> MultiTaskSplits:
        """Draw ``W`` (``[2, n_features]``), ``alpha``, ``beta`` once, then three independent splits."""
        g = torch.Generator().manual_seed(derive_seed(int(seed), 11))
        U, _ = torch.linalg.qr(torch.randn(self.n_features, 2, generator=g, dtype=torch.float64))
        u1, u2 = U[:, 0], U[:, 1]
        c, p = self.scale, self.p
        W = torch.stack([c * u1, c * (p * u1 + math.sqrt(max(0.0, 1 - p * p)) * u2)])
        alpha = torch.randn(self.n_sin, generator=g, dtype=torch.float64)
        beta = torch.randn(self.n_sin, generator=g, dtype=torch.float64)
        parts = []
        for n in self.sizes:
            x = torch.randn(n, self.n_features, generator=g, dtype=torch.float64)
            z = x @ W.T  # [rows, 2]
            y = z + torch.sin(alpha.view(1, 1, -1) * z.unsqueeze(-1) + beta.view(1, 1, -1)).sum(-1)
            y = y + self.noise_std * torch.randn(y.shape, generator=g, dtype=torch.float64)
            parts.append(MultiTaskData(x=x.float(), y=y.float(), task_names=("task0", "task1")))
        P = torch.tensor([[1.0, p], [p, 1.0]], dtype=torch.float64)
        return MultiTaskSplits(train=parts[0], val=parts[1], test=parts[2], W=W, P=P)
