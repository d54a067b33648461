"""``selective_scan``: the Mamba-style diagonal selective state-space recurrence.

For every batch element, channel ``d`` and state ``n`` (state ``h: [batch, D, N]``)::

    h_t = exp(delta_t * A) * h_{t-1} + (delta_t * x_t) B_t       (h_{-1} = 0)
    y_t = <h_t, C_t> + D * x_t

``reverse=True`` runs from ``t = L-1`` down to 0 (flip, scan, flip). Any real ``A`` is accepted:
negative entries decay (the usual, stable case); positive entries make the state grow
exponentially and both backends compute that growth faithfully (no log-space division is used,
so nothing overflows that the recurrence itself would not). Computation is in fp32 for every
input dtype; the output has the dtype of ``x``.

Backends (priority): ``chunked`` (20; blocked recurrence, no Python loop over every position),
``reference`` (0; a Python loop over t, vectorised over batch, D and N).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any

import torch

from tabzoo.errors import TabzooInputError
from tabzoo.kernels.registry import Backend, Cost, define_op, dispatch, register_backend

__all__ = ["selective_scan", "default_chunk_length"]

OP = "selective_scan"
LOG2E = 1.0 / math.log(2.0)


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


def default_chunk_length(length: int) -> int:
    """Chunk length T of the chunked backend: about sqrt(L) (balances the two loops), at most 256."""
    return int(min(256, max(8, 2 ** round(math.log2(max(1, length)) / 2))))


def _loops(dt: torch.Tensor, ut: torch.Tensor, bt: torch.Tensor, ct: torch.Tensor, a2: torch.Tensor,
           batch: int, n_chunks: int, buffers: bool) -> torch.Tensor:
    """The three loops of the chunked scan on time-major inputs ``[T, batch*chunks, k]``.

    ``buffers=True`` reuses preallocated step buffers (no autograd); otherwise every step is a
    fresh differentiable op. Either way nothing of size ``L*D*N`` is allocated: the decays and
    inputs of one step of all chunks (``[batch*chunks, D, N]``) are made when needed.
    :returns: ``y`` time-major, ``[T, batch*chunks, D]``.
    """
    t_len, bc, d = dt.shape
    n = a2.shape[1]
    if buffers:
        dec = torch.empty(bc, d, n, dtype=torch.float32, device=dt.device)
        inp = torch.empty_like(dec)

    def step(h: torch.Tensor | None, j: int) -> torch.Tensor:
        if not buffers:
            decay = torch.exp2(dt[j, :, :, None] * a2)
            u = ut[j, :, :, None] * bt[j, :, None, :]
            return u if h is None else torch.addcmul(u, decay, h)
        torch.mul(ut[j, :, :, None], bt[j, :, None, :], out=inp)
        if h is None:
            return inp.clone()
        torch.mul(dt[j, :, :, None], a2, out=dec).exp2_()
        return h.mul_(dec).add_(inp)

    # 1. all chunks side by side from a zero state -> local state at each chunk end
    h = step(None, 0)
    for j in range(1, t_len):
        h = step(h, j)
    local_end = h.reshape(batch, n_chunks, d, n)
    chunk_decay = torch.exp2(dt.sum(0).reshape(batch, n_chunks, d)[..., None] * a2)  # [b, chunks, D, N]
    # 2. carry the true state across chunks: H_c = P_c * H_{c-1} + local_c
    starts = [torch.zeros(batch, d, n, dtype=torch.float32, device=dt.device)]
    for c in range(n_chunks - 1):
        starts.append(torch.addcmul(local_end[:, c], chunk_decay[:, c], starts[-1]))
    h = torch.stack(starts, dim=1).reshape(bc, d, n)
    # 3. rerun every chunk from its true start state, emitting y_t = <h_t, C_t>
    ct3 = ct[..., None]  # [T, bc, N, 1]
    if buffers:
        y = torch.empty(t_len, bc, d, dtype=torch.float32, device=dt.device)
        for j in range(t_len):
            h = step(h, j)
            torch.sum(torch.mul(h, ct[j, :, None, :], out=inp), dim=-1, out=y[j])
        return y
    ys = []
    for j in range(t_len):
        h = step(h, j)
        ys.append(torch.bmm(h, ct3[j])[..., 0])
    return torch.stack(ys, dim=0)


def selective_scan_chunked(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor,
                           C: torch.Tensor, D: torch.Tensor | None = None, reverse: bool = False,
                           chunk: int | None = None) -> torch.Tensor:
    """Blocked recurrence: L/T chunks of length T run side by side, a short loop carries the state.

    1. T steps, all chunks in parallel from a zero state: the local state at each chunk end;
    2. L/T steps carry the true state across chunks: ``H_c = P_c * H_{c-1} + local_c`` with
       ``P_c = exp(A * sum of delta over chunk c)`` (one exp per chunk, no cumulative-sum
       division, so it is as stable as the recurrence itself, for any sign of A);
    3. T steps again, all chunks in parallel from their true start states, emitting
       ``y_t = <h_t, C_t>`` as a batched matmul.

    Python-level iterations: ``2T + L/T`` instead of ``L``; ``exp(z)`` is computed as
    ``exp2(z log2 e)`` (much faster in torch on CPU).

    :param chunk: the chunk length T; default :func:`default_chunk_length`.
    :returns: ``[batch, L, D]`` in the dtype of ``x``.
    """
    xf, df, af, bf, cf = (t.float() for t in (x, delta, A, B, C))
    if reverse:
        xf, df, bf, cf = (t.flip(1) for t in (xf, df, bf, cf))
    batch, length, d = x.shape
    t_len = max(1, min(int(chunk or default_chunk_length(length)), length))
    n_chunks = -(-length // t_len)
    pad = n_chunks * t_len - length
    if pad:  # delta = 0 and x = 0: decay 1, no input -> the state passes through unchanged
        xf, df, bf, cf = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (xf, df, bf, cf))

    def time_major(t: torch.Tensor) -> torch.Tensor:  # [b, L, k] -> [T, b*chunks, k]
        return t.reshape(batch, n_chunks, t_len, t.shape[-1]).permute(2, 0, 1, 3).reshape(t_len, batch * n_chunks, -1)

    buffers = not (torch.is_grad_enabled() and any(t.requires_grad for t in (x, delta, A, B, C)))
    with contextlib.nullcontext() if not buffers else torch.no_grad():
        y = _loops(time_major(df), time_major(df * xf), time_major(bf), time_major(cf), af * LOG2E,
                   batch, n_chunks, buffers)
    y = y.reshape(t_len, batch, n_chunks, d).permute(1, 2, 0, 3).reshape(batch, -1, d)[:, :length]
    if reverse:
        y = y.flip(1)
    return _finish(y, x, D)


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
register_backend(Backend("chunked", OP, selective_scan_chunked, priority=20, cost=_cost(9.0 / 7.0)))


def selective_scan(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                   D: torch.Tensor | None = None, reverse: bool = False) -> torch.Tensor:
    """Diagonal selective scan (Mamba's S6 recurrence).

    :param x: ``[batch, L, D]`` input.
    :param delta: ``[batch, L, D]`` step sizes (normally positive, e.g. after softplus).
    :param A: ``[D, N]`` continuous-time state matrix (diagonal); normally negative.
    :param B: ``[batch, L, N]`` input projection per position.
    :param C: ``[batch, L, N]`` output projection per position.
    :param D: ``[D]`` skip connection, optional.
    :param reverse: scan from the last position to the first.
    :returns: ``[batch, L, D]`` in the dtype of ``x``.
    :raises TabzooInputError: on inconsistent shapes or non-floating inputs.
    """
    _validate(x, delta, A, B, C, D)
    return dispatch(OP, {"x": x, "delta": delta, "A": A, "B": B, "C": C, "D": D, "reverse": bool(reverse)})
