"""Distributed data parallel helpers: torchrun environment, gradient and loss averaging.

Gradients are averaged with one coalesced ``all_reduce`` after a process has accumulated all
its draws of a step. This is what ``DistributedDataParallel`` computes, without its hooks, so
any architecture (also one with parameters unused for a task) trains under it unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

__all__ = ["DistInfo", "all_reduce_mean", "average_gradients", "setup"]


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    owns_group: bool = False  # True when setup() created the process group (and must destroy it)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def setup(device_hint: str = "auto") -> DistInfo:
    """Join the process group torchrun describes (``WORLD_SIZE``/``RANK``/``LOCAL_RANK``).

    Uses an existing group when there is one; otherwise initialises ``nccl`` for CUDA and
    ``gloo`` for CPU. A single process without torchrun gets ``DistInfo()``.
    """
    if dist.is_available() and dist.is_initialized():
        return DistInfo(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    use_cuda = torch.cuda.is_available() and device_hint in ("auto", "cuda") or str(device_hint).startswith("cuda")
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return DistInfo(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)), owns_group=True)


def average_gradients(params: list[torch.nn.Parameter], world_size: int) -> None:
    """Average ``.grad`` over processes in place (a missing grad counts as zeros)."""
    if world_size <= 1:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1).float() for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= world_size
    offset = 0
    for p, g in zip(params, grads, strict=True):
        n = g.numel()
        p.grad = flat[offset : offset + n].view_as(g).to(g.dtype)
        offset += n


def all_reduce_mean(value: float, world_size: int, device: torch.device) -> float:
    """Mean of a Python float over processes."""
    if world_size <= 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return float(t.item()) / world_size
