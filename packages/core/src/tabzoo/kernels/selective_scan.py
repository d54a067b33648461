"""``selective_scan``: the Mamba-style diagonal selective state-space recurrence.

For every batch element, channel ``d`` and state ``n`` (state ``h: [batch, D, N]``)::

    h_t = exp(delta_t * A) * h_{t-1} + (delta_t * x_t) B_t       (h_{-1} = 0)
    y_t = <h_t, C_t> + D * x_t

Optional, as in Mamba's kernel (the defaults leave the recurrence above unchanged): the step
size is ``delta = f(delta + delta_bias) * delta_scale`` (``f`` = softplus when ``delta_softplus``,
else the identity; ``delta_scale`` one number per position) and the output is gated,
``y * silu(z)``. The ``cpu_fused`` backend computes these inside its one pass (forward and
backward); for every other backend the op computes them around the backend's call in torch, so
every backend gives the same numbers.

``reverse=True`` runs from ``t = L-1`` down to 0 (flip, scan, flip). Any real ``A`` is accepted:
negative entries decay (the usual, stable case); positive entries make the state grow
exponentially and both backends compute that growth faithfully (no log-space division is used,
so nothing overflows that the recurrence itself would not). Computation is in fp32 for every
input dtype; the output has the dtype of ``x``.

Backends (priority): ``cpu_fused`` (30; CPU only, used once built for this torch installation by
``python -m tabzoo.kernels.scan_build`` or ``TABZOO_SCAN_CPU=1``, never built unasked, off with
``TABZOO_SCAN_CPU=0``: the recurrence as one compiled C++ pass with the state in cache, 7-11x
faster forward and 7-9x faster forward + backward than ``chunked`` (v3, D = 128, N = 16, one thread); :mod:`tabzoo.kernels.scan_cpu`), ``chunked`` (20; blocked
recurrence with a hand-written backward, no Python loop over every position;
:mod:`tabzoo.kernels.scan_chunked`), ``reference`` (0; a Python loop over t, vectorised over
batch, D and N). A sequential Python loop is no cheaper than ``chunked`` even at L = 512 (70 ms
against 10 ms at ``[1, 512, 128, 16]``, measured), so no length threshold picks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from tabzoo.errors import TabzooInputError
from tabzoo.kernels import scan_cpu
from tabzoo.kernels.op_registry import (
    Backend,
    Cost,
    define_op,
    dispatch,
    register_backend,
    select_backend,
)
from tabzoo.kernels.scan_chunked import default_chunk_length, selective_scan_chunked

__all__ = ["selective_scan", "default_chunk_length", "scan_prologue", "scan_epilogue"]

OP = "selective_scan"


def _validate(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
              D: torch.Tensor | None) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        raise TabzooInputError(f"selective_scan: x must be [batch, L, D]; got {getattr(x, 'shape', x)}")
    b, length, d = x.shape
    if not isinstance(A, torch.Tensor) or A.dim() != 2 or A.shape[0] != d:
        raise TabzooInputError(f"selective_scan: A must be [D={d}, N]; got {getattr(A, 'shape', A)}")
    n = A.shape[1]
    expected: dict[str, tuple[Any, tuple[int, ...]]] = {"delta": (delta, (b, length, d)), "B": (B, (b, length, n)), "C": (C, (b, length, n))}
    if D is not None:
        expected["D"] = (D, (d,))
    for name, (t, shape) in expected.items():
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape:
            raise TabzooInputError(
                f"selective_scan: {name} must have shape {list(shape)} to match x {list(x.shape)} and A {list(A.shape)}; "
                f"got {list(getattr(t, 'shape', [])) or t!r}"
            )
    for name, t in (("x", x), ("delta", delta), ("A", A), ("B", B), ("C", C)):
        if not t.is_floating_point():
            raise TabzooInputError(f"selective_scan: {name} must be a floating tensor; got {t.dtype}")
    if length == 0:
        raise TabzooInputError("selective_scan: the sequence is empty (L = 0); pass at least one position")


def _validate_fused(x: torch.Tensor, delta_bias: torch.Tensor | None, delta_scale: torch.Tensor | None,
                    z: torch.Tensor | None) -> None:
    b, length, d = x.shape
    for name, t, shape in (("delta_bias", delta_bias, (d,)), ("delta_scale", delta_scale, (b, length)),
                           ("z", z, (b, length, d))):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape or not t.is_floating_point():
            raise TabzooInputError(
                f"selective_scan: {name} must be a floating tensor of shape {list(shape)} to match x {list(x.shape)}; "
                f"got {getattr(t, 'dtype', type(t).__name__)} {list(getattr(t, 'shape', []))}"
            )


def _finish(y: torch.Tensor, x: torch.Tensor, D: torch.Tensor | None) -> torch.Tensor:
    if D is not None:
        y = y + D.float() * x.float()
    return y.to(x.dtype)


def selective_scan_reference(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor,
                             C: torch.Tensor, D: torch.Tensor | None = None, reverse: bool = False) -> torch.Tensor:
    """A Python loop over positions (vectorised over batch, D and N), fp32.

    :returns: ``[batch, L, D]`` in the dtype of ``x``.
    """
    xf, df, af, bf, cf = (t.float() for t in (x, delta, A, B, C))
    batch, length, d = x.shape
    h = torch.zeros(batch, d, A.shape[1], dtype=torch.float32, device=x.device)
    ys: list[torch.Tensor] = [None] * length  # type: ignore[list-item]
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for t in steps:
        decay = torch.exp(df[:, t, :, None] * af)  # [b, D, N]
        h = decay * h + (df[:, t] * xf[:, t])[:, :, None] * bf[:, t, None, :]
        ys[t] = torch.einsum("bdn,bn->bd", h, cf[:, t])
    return _finish(torch.stack(ys, dim=1), x, D)


def scan_prologue(delta: torch.Tensor, delta_bias: torch.Tensor | None = None, delta_softplus: bool = False,
                  delta_scale: torch.Tensor | None = None) -> torch.Tensor:
    """The step size in torch: ``f(delta + delta_bias) * delta_scale[..., None]`` (``f`` = softplus
    when ``delta_softplus``); ``delta [batch, L, D]``, ``delta_bias [D]``, ``delta_scale [batch, L]``."""
    if delta_bias is not None:
        delta = delta + delta_bias
    if delta_softplus:
        delta = F.softplus(delta)
    return delta if delta_scale is None else delta * delta_scale[..., None]


def scan_epilogue(y: torch.Tensor, z: torch.Tensor | None) -> torch.Tensor:
    """The output gate in torch: ``y * silu(z)`` (``[batch, L, D]``), or ``y`` when ``z`` is None."""
    return y if z is None else (y.float() * F.silu(z.float())).to(y.dtype)


#: backends whose function takes ``delta_bias, delta_softplus, delta_scale, z`` itself
FUSING_BACKENDS = frozenset({"cpu_fused"})


def _cost(passes: float) -> Any:
    def cost(inputs: Mapping[str, Any]) -> Cost:
        x, A = inputs["x"], inputs["A"]
        batch, length, d = x.shape
        elems = float(batch * length * d * A.shape[1])
        io = sum(t.numel() * t.element_size() for t in (x, inputs["delta"], inputs["B"], inputs["C"], x))
        # per element: delta*A, exp (counted 1), (delta x) B, decay*h + u (2), <h, C> (2) -> 7
        return Cost(flops=7.0 * elems * passes, bytes=float(io) + (2 * 4 * elems if passes > 1 else 0.0))

    return cost


define_op(OP, {"D": None, "reverse": False})
register_backend(Backend("reference", OP, selective_scan_reference, priority=0, cost=_cost(1.0)))
register_backend(Backend("chunked", OP, selective_scan_chunked, priority=20, cost=_cost(10.0 / 7.0)))
register_backend(Backend("cpu_fused", OP, scan_cpu.selective_scan_cpu, priority=30, devices=("cpu",),
                         is_available=scan_cpu.available, cost=_cost(1.0)))


def selective_scan(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                   D: torch.Tensor | None = None, reverse: bool = False, *, delta_bias: torch.Tensor | None = None,
                   delta_softplus: bool = False, delta_scale: torch.Tensor | None = None,
                   z: torch.Tensor | None = None) -> torch.Tensor:
    """Diagonal selective scan (Mamba's S6 recurrence).

    :param x: ``[batch, L, D]`` input.
    :param delta: ``[batch, L, D]`` step sizes (normally positive, e.g. after softplus), or the raw
        step sizes that ``delta_bias`` / ``delta_softplus`` / ``delta_scale`` turn into them.
    :param A: ``[D, N]`` continuous-time state matrix (diagonal); normally negative.
    :param B: ``[batch, L, N]`` input projection per position.
    :param C: ``[batch, L, N]`` output projection per position.
    :param D: ``[D]`` skip connection, optional.
    :param reverse: scan from the last position to the first.
    :param delta_bias: ``[D]`` added to ``delta`` first, optional.
    :param delta_softplus: apply softplus to ``delta (+ delta_bias)``.
    :param delta_scale: ``[batch, L]`` multiplies the step size of each position last, optional
        (0 leaves the state unchanged there).
    :param z: ``[batch, L, D]`` output gate: the result is ``y * silu(z)``, optional.
    :returns: ``[batch, L, D]`` in the dtype of ``x``.
    :raises TabzooInputError: on inconsistent shapes or non-floating inputs.
    """
    _validate(x, delta, A, B, C, D)
    inputs = {"x": x, "delta": delta, "A": A, "B": B, "C": C, "D": D, "reverse": bool(reverse)}
    if delta_bias is None and not delta_softplus and delta_scale is None and z is None:
        return dispatch(OP, inputs)
    _validate_fused(x, delta_bias, delta_scale, z)
    backend = select_backend(OP, **inputs)
    if backend.name in FUSING_BACKENDS:
        return backend.fn(**inputs, delta_bias=delta_bias, delta_softplus=bool(delta_softplus),
                          delta_scale=delta_scale, z=z)
    y = backend.fn(**{**inputs, "delta": scan_prologue(delta, delta_bias, delta_softplus, delta_scale)})
    return scan_epilogue(y, z)
