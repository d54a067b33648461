"""CPU thread counts per operation size (issue 28 item 5).

Why 2 torch threads predicted ~12x slower than 1 on a small machine: torch's CPU ops run in OpenMP
parallel regions, and GNU OpenMP's default wait policy makes a thread that reaches a barrier spin
(busy-wait) for its peers. When the machine has more runnable threads than cores (other processes,
or the caller's own threads), a peer is often descheduled, and every barrier of every small op waits
a scheduler time slice for it. Measured on this project's 2-core machine at load ~8-12 (TabFlex
``predict_proba``, 3,000 context rows, 500 queries; ``benchmarks/threads.py``): 1 thread 4.3-5.9 s,
2 threads 27 s; with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep) 2 threads took 3.7-4.3 s.

What tabzoo does:

* ``import tabzoo`` sets ``OMP_WAIT_POLICY=PASSIVE`` when torch is not imported yet and the variable is
  not set (``tabzoo/__init__.py``; the OpenMP runtime reads it when torch loads it, so it must happen before
  torch is imported). A user's own setting is kept.
* :func:`op_threads` scopes the thread count of one forward pass: one thread when the pass is small
  (below :data:`SMALL_PASS_FLOPS`, where splitting costs more than it saves), or when the machine's load
  is at least its core count (a second thread then only waits for a core; measured with passive waiting
  at load ~11: 2 threads 1.06-1.16x the time of 1); otherwise the caller's ``torch.get_num_threads()``.
  So the default never runs the oversubscribed case, spinning or not.
* :func:`call_threads` (the :func:`host_threads` decorator) scopes a whole public estimator call (``fit``,
  ``predict``, ``predict_proba`` and the core's prediction path): on an oversubscribed machine every torch op
  of the call runs on one thread, not only the forward passes. Measured in ``benchmarks/realdata.py``'s
  runner (issue 28, 2026-11-28): with :func:`op_threads` alone, the ops between the passes (``torch.stack``
  of the members' outputs 21 ms a call, ``torch.isfinite`` 10 ms, softmax) still ran on the caller's 2
  threads and each paid a wake-up of a descheduled peer thread: predict_proba took 1.6x as long on 2 threads.
* :func:`wait_policy` says whether the passive policy took effect: ``import tabzoo`` after ``import torch``
  cannot set it any more (GNU OpenMP reads it when torch loads it), and OpenMP threads then spin.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch

__all__ = ["SMALL_PASS_FLOPS", "call_threads", "host_threads", "model_flops_per_row", "op_threads", "threads_for",
           "wait_policy"]

_F = TypeVar("_F", bound=Callable[..., Any])

#: passes with fewer estimated FLOPs run on one thread (about 10 ms of one core's fp32 matmul)
SMALL_PASS_FLOPS = 2e8


def model_flops_per_row(model: torch.nn.Module) -> float:
    """Forward FLOPs per row of ``model``: its ``flops_per_row()`` when it has one, else 2 x its parameters."""
    own = getattr(model, "flops_per_row", None)
    if callable(own):
        return float(own())
    return 2.0 * float(sum(p.numel() for p in model.parameters()))


def _oversubscribed() -> bool:
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - platforms without a load average
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return load >= cores


def threads_for(flops: float, available: int | None = None) -> int:
    """Threads for one pass of about ``flops`` floating-point operations (see the module doc)."""
    n = torch.get_num_threads() if available is None else int(available)
    if n <= 1 or flops < SMALL_PASS_FLOPS or _oversubscribed():
        return 1
    return n


@contextlib.contextmanager
def op_threads(flops: float) -> Iterator[int]:
    """Run the block with :func:`threads_for` ``(flops)`` torch threads, then restore the caller's count."""
    before = torch.get_num_threads()
    n = threads_for(flops, before)
    if n == before:
        yield n
        return
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(before)


def wait_policy() -> str:
    """The OpenMP wait policy torch's runtime was loaded with: ``"passive"`` (waiting threads sleep),
    ``"active"`` (they spin) or ``"default"`` (GNU OpenMP spins for a while, then sleeps).

    ``import tabzoo`` records it (``tabzoo.OMP_WAIT_POLICY_AT_TORCH_LOAD``): the policy it set when torch was
    not loaded yet, else the environment's value at that import (the best knowledge after the fact). To get
    the passive policy, import tabzoo before torch or set ``OMP_WAIT_POLICY=PASSIVE`` before Python starts.
    """
    root = sys.modules.get("tabzoo")
    value = getattr(root, "OMP_WAIT_POLICY_AT_TORCH_LOAD", None) if root is not None else None
    if value is None:
        value = os.environ.get("OMP_WAIT_POLICY")
    value = (value or "").strip().upper()
    return {"PASSIVE": "passive", "ACTIVE": "active"}.get(value, "default")


def call_threads() -> contextlib.AbstractContextManager[int]:
    """Run a whole estimator call on one torch thread when the machine is oversubscribed (load >= cores),
    else with the caller's count; restore the caller's count after. Nested scopes are free.

    This is :func:`op_threads` for a pass of unbounded size: only oversubscription picks one thread."""
    return op_threads(math.inf)


def host_threads(fn: _F) -> _F:
    """Decorator: ``fn`` runs inside :func:`call_threads` (the public calls of the core's estimators)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with call_threads():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
