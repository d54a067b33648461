"""Peak-memory estimates checked before an estimator allocates (issue 24 item 7).

Every estimator estimates the peak memory of ``fit`` / ``predict`` from the input shape and
its settings, and calls :func:`check_memory` before it builds a model or a batch; above the
limit it raises :class:`~tabzoo.errors.MemoryLimitError` with the estimate, the limit and the
fix, instead of a raw ``RuntimeError`` / ``MemoryError`` after a long wait (or the OOM killer).

The limit is, in order: the ``TABZOO_MEMORY_LIMIT`` environment variable (bytes, or a number
with a unit: ``"8GB"``, ``"512MiB"``; ``"off"`` disables the check), else the memory available
on the device now (``MemAvailable`` of ``/proc/meminfo`` on CPU, free memory on a CUDA device).

Estimates are upper-bound approximations (parameters, gradients and Adam state in float32,
plus the largest activations times a safety factor); the tests check that they refuse what
cannot fit and accept the small tables the suite trains on.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable

import torch

from tabzoo.errors import MemoryLimitError, TabzooInputError

__all__ = ["ENV", "available_memory", "check_memory", "format_bytes", "in_context_bytes", "inference_bytes", "memory_limit",
           "parameter_count", "training_bytes"]

ENV = "TABZOO_MEMORY_LIMIT"
FLOAT = 4
"""Bytes per float32 value."""
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def format_bytes(n: float) -> str:
    """``1.5 GiB``-style text for a byte count."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _parse(text: str) -> int | None:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if text.strip().lower() in ("off", "none", "0"):
        return None
    if not m or m.group(2) not in _UNITS:
        raise TabzooInputError(
            f"{ENV}={text!r} is not a memory size; use bytes or a number with a unit, e.g. "
            f"{ENV}=8GB or {ENV}=512MiB ('off' disables the check)."
        )
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def available_memory(device: str | torch.device = "cpu") -> int | None:
    """Bytes available on ``device`` now (``None`` when unknown)."""
    dev = torch.device(device)
    if dev.type == "cuda" and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info(dev)
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def memory_limit(device: str | torch.device = "cpu") -> int | None:
    """The limit in bytes: ``TABZOO_MEMORY_LIMIT`` if set, else :func:`available_memory`."""
    text = os.environ.get(ENV)
    if text is not None:
        return _parse(text)
    return available_memory(device)


def parameter_count(build: Callable[[], torch.nn.Module]) -> int:
    """Parameters of the module ``build()`` makes, counted on the meta device (nothing allocated)."""
    with torch.device("meta"):
        module = build()
    return sum(p.numel() for p in module.parameters())


def check_memory(owner: str, estimate: float, fix: str, device: str | torch.device = "cpu",
                 detail: str = "") -> None:
    """Refuse when ``estimate`` bytes exceed :func:`memory_limit`.

    :param owner: who needs it, e.g. ``"NPTClassifier.fit"``.
    :param estimate: the estimated peak in bytes.
    :param fix: what to change, e.g. ``"use fewer features or a smaller dim"``.
    :param detail: how the estimate is made up (shown in the message).
    :raises MemoryLimitError: naming the estimate, the limit and the fix.
    """
    limit = memory_limit(device)
    if math.isfinite(estimate) and (limit is None or estimate <= limit):
        return
    where = f" on {torch.device(device)}"
    source = f"{ENV}" if os.environ.get(ENV) is not None else "the memory available now"
    raise MemoryLimitError(
        f"{owner} would need about {format_bytes(estimate)}{where}"
        + (f" ({detail})" if detail else "")
        + (f", more than the limit of {format_bytes(limit)} ({source})." if limit is not None else ".")
        + f" {fix[:1].upper()}{fix[1:]}; or, if you know it "
        f"fits, raise the limit with {ENV}=<size> (e.g. {ENV}=64GB)."
    )


def training_bytes(n_params: int, activations: float) -> float:
    """Peak bytes of a training step: float32 parameters, gradients and two Adam moments, plus
    ``activations`` values kept for the backward pass (times 2 for their gradients)."""
    return FLOAT * (4.0 * n_params + 2.0 * activations)


def inference_bytes(n_params: int, activations: float) -> float:
    """Peak bytes of a forward pass without gradients: parameters plus ``activations`` values
    (times 2: the largest two live at once)."""
    return FLOAT * (n_params + 2.0 * activations)


def in_context_bytes(model: torch.nn.Module, members: int, rows: int, width: int) -> float:
    """Peak bytes of one in-context forward pass: ``members`` episodes of ``rows`` rows (context
    plus one query chunk) by ``width`` features, through ``model`` without gradients.

    Per row: the input, the hidden state and its feed-forward expansion (``d_model`` and
    ``d_ff`` from ``model.cfg`` when it has them; 256 and 4x else), twice over (the largest two
    live at once). Attention maps are not counted: scaled-dot-product and linear attention do not
    materialise them.
    """
    cfg = getattr(model, "cfg", None)
    d = int(getattr(cfg, "d_model", 256) or 256)
    d_ff = int(getattr(cfg, "d_ff", 4 * d) or 4 * d)
    params = sum(p.numel() for p in model.parameters())
    return inference_bytes(params, float(members) * rows * (width + 6 * d + d_ff))
