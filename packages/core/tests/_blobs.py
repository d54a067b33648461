"""The blob prior of core's tests, in a module that imports only torch and ``tabzoo.table`` (no
scikit-learn), so that a prefetch worker process unpickling it starts fast."""

from __future__ import annotations

import time
from typing import Any

import torch


class BlobsPrior:
    """Deterministic Gaussian-blob episodes: ``sample(batch_size, *, seed)`` is a pure function.

    ``delay`` (seconds per draw) slows sampling down for the kill-and-resume test. Every episode has ``n_context`` context rows (each class present) and ``n_query`` query rows,
    2..``max_features`` real features (rest padded with 0) and 2..``max_classes`` classes.
    """

    def __init__(self, n_context: int = 24, n_query: int = 24, max_features: int = 6,
                 max_classes: int = 3, task: str = "classification", delay: float = 0.0) -> None:
        self.n_context, self.n_query, self.delay = n_context, n_query, delay
        self.max_features, self.max_classes, self.task = max_features, max_classes, task

    def sample(self, batch_size: int, *, seed: int, device: str = "cpu") -> Any:
        from tabzoo.table import EpisodeBatch

        if self.delay:
            time.sleep(self.delay)  # lets a test kill a run between checkpoints
        g = torch.Generator().manual_seed(int(seed))
        n = self.n_context + self.n_query
        x = torch.zeros(batch_size, n, self.max_features)
        y = torch.zeros(batch_size, n)
        fmask = torch.zeros(batch_size, self.max_features, dtype=torch.bool)
        ncls = torch.zeros(batch_size, dtype=torch.long)
        for b in range(batch_size):
            f = int(torch.randint(2, self.max_features + 1, (1,), generator=g))
            fmask[b, :f] = True
            if self.task == "regression":
                xb = torch.randn(n, f, generator=g)
                w = torch.randn(f, generator=g)
                x[b, :, :f] = xb
                y[b] = xb @ w + 0.1 * torch.randn(n, generator=g)
                continue
            k = int(torch.randint(2, self.max_classes + 1, (1,), generator=g))
            ncls[b] = k
            centers = 2.0 * torch.randn(k, f, generator=g)
            yc = torch.arange(self.n_context) % k
            yc = yc[torch.randperm(self.n_context, generator=g)]
            yq = torch.randint(0, k, (self.n_query,), generator=g)
            yb = torch.cat([yc, yq])
            x[b, :, :f] = centers[yb] + torch.randn(n, f, generator=g)
            y[b] = yb.float()
        batch = EpisodeBatch(
            x=x, y=y, n_context=self.n_context, row_mask=torch.ones(batch_size, n, dtype=torch.bool),
            feature_mask=fmask, n_classes=ncls, task=self.task,
        )
        return batch.to(device) if str(device) != "cpu" else batch
