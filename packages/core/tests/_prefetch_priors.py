"""Priors for the prefetch tests, at module level so that spawned worker processes can unpickle them."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from typing import Any

import torch
from _blobs import BlobsPrior


class StepBlobs(BlobsPrior):
    """A step-aware blob prior (like a row curriculum): the step changes the batch."""

    step_aware = True

    def sample(self, batch_size: int, *, seed: int, device: str = "cpu", step: int | None = None) -> Any:
        assert step is not None
        batch = super().sample(batch_size, seed=seed, device=device)
        batch.x[..., 0] += 0.01 * step
        batch.x[..., 1] += 0.001 * float(torch.rand(()))  # the global RNG: seeded per draw by the loop
        return batch


class SlowInWorker(StepBlobs):
    """Takes 0.2 s per batch in a worker process, no time in the training process."""

    def sample(self, batch_size: int, *, seed: int, device: str = "cpu", step: int | None = None) -> Any:
        if mp.parent_process() is not None:
            time.sleep(0.2)
        return super().sample(batch_size, seed=seed, device=device, step=step)


class FailingPrior(StepBlobs):
    """Raises ``ValueError`` at step ``fail_at``; the message says where it ran (pid, threads)."""

    name = "StepBlobs"  # the same prior until it fails: a resume with StepBlobs continues its run

    def __init__(self, fail_at: int, how: str = "raise") -> None:
        super().__init__()
        self.fail_at, self.how = fail_at, how

    def sample(self, batch_size: int, *, seed: int, device: str = "cpu", step: int | None = None) -> Any:
        if step == self.fail_at:
            if self.how == "unpicklable":
                raise UnpicklableError(lambda: None)
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise ValueError(
                f"boom at step {step} (pid {os.getpid()}, torch threads {torch.get_num_threads()}, "
                f"OMP {os.environ.get('OMP_NUM_THREADS')})"
            )
        return super().sample(batch_size, seed=seed, device=device, step=step)


class UnpicklableError(Exception):
    """An exception whose argument (a lambda) cannot be pickled."""
