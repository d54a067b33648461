"""Seeded random helpers. Nothing here touches the global RNG.

Two generators are used per call: a CPU generator for *shape* decisions (row counts, task,
widths), so that shapes are identical on every device, and a generator on the target device for
the tensors themselves.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from tabzoo.errors import TabzooInputError

__all__ = [
    "derive_seed",
    "generators",
    "log_uniform_int",
    "uniform_int",
    "check_range",
]


def derive_seed(*parts: int) -> int:
    """Mix integers into one 63-bit seed (numpy ``SeedSequence``; stable across platforms).

    :param parts: non-negative integers, e.g. ``(seed, step)`` or ``(seed, worker_id, step)``.
    :return: a seed in ``[0, 2**63)``.
    """
    clean = [int(p) % (2**64) for p in parts]
    state = np.random.SeedSequence(clean).generate_state(2, dtype=np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1])) & ((1 << 63) - 1)


def generators(seed: int, device: torch.device | str) -> tuple[torch.Generator, torch.Generator]:
    """Return ``(cpu_generator, device_generator)`` both derived from ``seed``.

    :param seed: any Python int.
    :param device: device of the tensors to be sampled.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TabzooInputError(f"seed must be an int, got {type(seed).__name__}; pass seed=<int>.")
    device = torch.device(device)
    g_cpu = torch.Generator(device="cpu")
    g_cpu.manual_seed(derive_seed(int(seed), 0))
    g_dev = torch.Generator(device=device)
    g_dev.manual_seed(derive_seed(int(seed), 1))
    return g_cpu, g_dev


def uniform_int(g: torch.Generator, lo: int, hi: int) -> int:
    """One integer uniform in ``[lo, hi]`` (inclusive) from a CPU generator."""
    if hi <= lo:
        return int(lo)
    return int(torch.randint(lo, hi + 1, (1,), generator=g).item())


def log_uniform_int(g: torch.Generator, lo: int, hi: int) -> int:
    """One integer log-uniform in ``[lo, hi]`` (inclusive) from a CPU generator."""
    if hi <= lo:
        return int(lo)
    u = float(torch.rand((), generator=g))
    value = math.exp(math.log(lo) + u * (math.log(hi + 1) - math.log(lo)))
    return int(min(hi, max(lo, math.floor(value))))


def check_range(name: str, value: tuple[float, float], lo: float, hi: float | None = None) -> None:
    """Validate a ``(min, max)`` config range, raising :class:`TabzooInputError` with the fix."""
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise TabzooInputError(f"{name} must be a (min, max) pair, got {value!r}.")
    a, b = value
    if a > b:
        raise TabzooInputError(f"{name}={value!r}: min > max; swap the two values.")
    if a < lo or (hi is not None and b > hi):
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise TabzooInputError(f"{name}={value!r} is out of range; both ends must lie in {bound}.")
