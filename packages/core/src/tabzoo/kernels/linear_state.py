"""The stateful pair of :func:`~tabzoo.kernels.linear_attention`, for streamed inference.

With ``phi(x) = elu(x) + 1``::

    linear_attention_state(k, v) -> (S, z)
        S = sum_j phi(k_j) v_j^T      [B, H, Dh, Dv]   fp32
        z = sum_j phi(k_j)            [B, H, Dh]       fp32
    linear_attention_read(q, S, z, eps) -> out
        out_i = phi(q_i) S / (phi(q_i) . z + eps)     [B, H, N, Dv]   in the dtype of q

The state is a plain sum over rows, so it is accumulable over chunks of rows:
``state(k[:, :, :a], v[:, :, :a]) + state(k[:, :, a:], v[:, :, a:]) == state(k, v)`` (both parts
summed in fp32). ``read(q, *state(k[:, :, :n], v[:, :, :n]))`` equals
``linear_attention(q, k, v, n)``.

Backends (priority): ``einsum`` (20; rows streamed in chunks through reused buffers without
autograd, one skinny matmul per chunk), ``reference`` (0; the obvious fp32 matmuls).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from tabzoo.errors import TabzooInputError
from tabzoo.kernels.linear_attention import DEFAULT_CHUNK_ROWS, _phi, fast_read, fast_state
from tabzoo.kernels.op_registry import Backend, Cost, define_op, dispatch, register_backend

__all__ = ["linear_attention_state", "linear_attention_read", "STATE_OP", "READ_OP", "EXAMPLE_INPUTS"]

STATE_OP = "linear_attention_state"
READ_OP = "linear_attention_read"


def _four_d(op: str, name: str, t: Any, what: str) -> None:
    if not isinstance(t, torch.Tensor) or t.dim() != 4 or not t.is_floating_point():
        raise TabzooInputError(f"{op}: {name} must be a floating 4-d tensor {what}; got "
                               f"{getattr(t, 'dtype', type(t).__name__)} {tuple(getattr(t, 'shape', ()))}")


def _validate_state(k: torch.Tensor, v: torch.Tensor) -> None:
    _four_d(STATE_OP, "k", k, "[B, H, N, Dh]")
    _four_d(STATE_OP, "v", v, "[B, H, N, Dv]")
    if k.shape[:3] != v.shape[:3]:
        raise TabzooInputError(f"{STATE_OP}: k {tuple(k.shape)} and v {tuple(v.shape)} must share [B, H, N]")
    if k.dtype != v.dtype:
        raise TabzooInputError(f"{STATE_OP}: k and v dtypes differ ({k.dtype}, {v.dtype}); cast them to one")


def _validate_read(q: torch.Tensor, S: torch.Tensor, z: torch.Tensor) -> None:
    _four_d(READ_OP, "q", q, "[B, H, N, Dh]")
    _four_d(READ_OP, "S", S, "[B, H, Dh, Dv] (from linear_attention_state)")
    b, h, _, dh = q.shape
    if S.shape[:3] != (b, h, dh):
        raise TabzooInputError(f"{READ_OP}: S {tuple(S.shape)} must be [B={b}, H={h}, Dh={dh}, Dv] to match q {tuple(q.shape)}")
    if not isinstance(z, torch.Tensor) or tuple(z.shape) != (b, h, dh) or not z.is_floating_point():
        raise TabzooInputError(f"{READ_OP}: z must be a floating [B={b}, H={h}, Dh={dh}] tensor (from "
                               f"linear_attention_state); got {tuple(getattr(z, 'shape', ()))}")


# ----------------------------------------------------------------------------- reference
def state_reference(k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``S = phi(k)^T v`` and ``z = sum phi(k)`` in fp32: ``([B, H, Dh, Dv], [B, H, Dh])``."""
    pk = _phi(k.float())
    return torch.matmul(pk.transpose(-1, -2), v.float()), pk.sum(dim=2)


def read_reference(q: torch.Tensor, S: torch.Tensor, z: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``phi(q) S / (phi(q) . z + eps)`` in fp32; ``[B, H, N, Dv]`` in the dtype of ``q``."""
    pq = _phi(q.float())
    num = torch.matmul(pq, S.float())
    den = torch.matmul(pq, z.float().unsqueeze(-1)) + eps
    return (num / den).to(q.dtype)


# ----------------------------------------------------------------------------- einsum
def _wants_grad(*ts: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in ts)


def state_einsum(k: torch.Tensor, v: torch.Tensor, chunk_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``[S | z]`` as one ``[Dh, Dv + 1]`` matmul per chunk of rows; see :func:`state_reference`."""
    b, h, n, dh = k.shape
    dv = v.shape[-1]
    if _wants_grad(k, v):
        pk = _phi(k.float())
        ones = torch.ones(b, h, n, 1, dtype=torch.float32, device=k.device)
        sz = torch.matmul(pk.transpose(-1, -2), torch.cat([v.float(), ones], dim=-1))
        return sz[..., :dv], sz[..., dv]
    with torch.no_grad():
        sz = fast_state(k.reshape(b * h, n, dh), v.reshape(b * h, n, dv), max(1, int(chunk_size or DEFAULT_CHUNK_ROWS)))
    sz = sz.view(b, h, dh, dv + 1)
    return sz[..., :dv].contiguous(), sz[..., dv].contiguous()


def read_einsum(q: torch.Tensor, S: torch.Tensor, z: torch.Tensor, eps: float = 1e-6,
                chunk_size: int | None = None) -> torch.Tensor:
    """Rows in chunks: one ``[rows, Dh] @ [Dh, Dv + 1]`` matmul each; see :func:`read_reference`."""
    b, h, n, dh = q.shape
    dv = S.shape[-1]
    state = torch.cat([S.float(), z.float().unsqueeze(-1)], dim=-1)  # [B, H, Dh, Dv + 1]
    if _wants_grad(q, S, z):
        nd = torch.matmul(_phi(q.float()), state)
        return (nd[..., :dv] / (nd[..., dv:] + eps)).to(q.dtype)
    with torch.no_grad():
        out = fast_read(q.reshape(b * h, n, dh), state.reshape(b * h, dh, dv + 1), eps,
                        max(1, int(chunk_size or DEFAULT_CHUNK_ROWS)), q.dtype)
    return out.view(b, h, n, dv)


# ----------------------------------------------------------------------------- costs
def _state_cost(inputs: Mapping[str, Any]) -> Cost:
    k, v = inputs["k"], inputs["v"]
    b, h, n, dh = k.shape
    dv = v.shape[-1]
    io = (k.numel() + v.numel()) * k.element_size() + b * h * dh * (dv + 1) * 4
    return Cost(flops=2.0 * b * h * n * dh * (dv + 1), bytes=float(io))


def _read_cost(inputs: Mapping[str, Any]) -> Cost:
    q, S = inputs["q"], inputs["S"]
    b, h, n, dh = q.shape
    dv = S.shape[-1]
    io = q.numel() * q.element_size() * (1 + dv / dh) + b * h * dh * (dv + 1) * 4
    return Cost(flops=2.0 * b * h * n * dh * (dv + 1) + 2.0 * b * h * n * dv, bytes=float(io))


define_op(STATE_OP, {})
define_op(READ_OP, {"eps": 1e-6})
register_backend(Backend("reference", STATE_OP, state_reference, priority=0, cost=_state_cost))
register_backend(Backend("einsum", STATE_OP, state_einsum, priority=20, cost=_state_cost))
register_backend(Backend("reference", READ_OP, read_reference, priority=0, cost=_read_cost))
register_backend(Backend("einsum", READ_OP, read_einsum, priority=20, cost=_read_cost))


def linear_attention_state(k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The summed context of linear attention (feature map elu+1), accumulable over row chunks.

    :param k: ``[B, H, N, Dh]`` keys of the rows to sum (``N`` may be 0).
    :param v: ``[B, H, N, Dv]`` their values.
    :returns: ``(S, z)``: ``S = sum_j phi(k_j) v_j^T`` ``[B, H, Dh, Dv]`` and ``z = sum_j phi(k_j)``
        ``[B, H, Dh]``, both fp32 whatever the input dtype.
    :raises TabzooInputError: on inconsistent shapes or dtypes.
    """
    _validate_state(k, v)
    result: tuple[torch.Tensor, torch.Tensor] = dispatch(STATE_OP, {"k": k, "v": v})
    return result


def linear_attention_read(q: torch.Tensor, S: torch.Tensor, z: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Rows ``q`` reading a summed context: ``phi(q) S / (phi(q) . z + eps)``.

    :param q: ``[B, H, N, Dh]``.
    :param S: ``[B, H, Dh, Dv]`` from :func:`linear_attention_state` (summed over any chunks).
    :param z: ``[B, H, Dh]`` likewise.
    :param eps: added to the normaliser.
    :returns: ``[B, H, N, Dv]`` in the dtype of ``q``; computed in fp32.
    :raises TabzooInputError: on inconsistent shapes.
    """
    _validate_read(q, S, z)
    out: torch.Tensor = dispatch(READ_OP, {"q": q, "S": S, "z": z, "eps": eps})
    return out


# ----------------------------------------------------------------------------- example inputs
def state_example_inputs(seed: int, dtype: torch.dtype, device: str) -> dict[str, Any]:
    """Small random inputs of :func:`linear_attention_state` (for equivalence checks): k, v ``[B, H, N, D]``."""
    import random

    rnd, g = random.Random(seed), torch.Generator().manual_seed(seed)
    b, h, n, dh, dv = rnd.randint(1, 2), rnd.randint(1, 2), rnd.randint(0, 12), rnd.choice([4, 8]), rnd.choice([4, 8])
    return {"k": torch.randn(b, h, n, dh, generator=g).to(device, dtype),
            "v": torch.randn(b, h, n, dv, generator=g).to(device, dtype)}


def read_example_inputs(seed: int, dtype: torch.dtype, device: str) -> dict[str, Any]:
    """Small random inputs of :func:`linear_attention_read`: q and a state summed from random rows."""
    import random

    rnd, g = random.Random(seed), torch.Generator().manual_seed(seed)
    b, h, n, dh, dv = rnd.randint(1, 2), rnd.randint(1, 2), rnd.randint(1, 12), rnd.choice([4, 8]), rnd.choice([4, 8])
    m = rnd.randint(1, 12)
    S, z = state_reference(torch.randn(b, h, m, dh, generator=g), torch.randn(b, h, m, dv, generator=g))
    return {"q": torch.randn(b, h, n, dh, generator=g).to(device, dtype), "S": S.to(device), "z": z.to(device),
            "eps": 1e-6}


#: input generators ``op -> fn(seed, dtype, device) -> dict`` for the kit's kernel-equivalence check
EXAMPLE_INPUTS = {STATE_OP: state_example_inputs, READ_OP: read_example_inputs}
