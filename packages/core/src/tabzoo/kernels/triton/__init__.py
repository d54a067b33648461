"""Triton backends of the kernel registry (the ``tabzoo-core[triton]`` extra).

Registered under the name ``triton`` (priority 40, above every torch backend) for
``masked_attention`` (block-sparse over the mask's block layout), ``linear_attention`` and its
stateful pair ``linear_attention_state`` / ``linear_attention_read``, and ``selective_scan``
(chunked). Registration imports nothing from triton: the kernel modules load on first call.

Where they run: CUDA devices of capability >= 8.0, fp32/bf16/fp16. CPU tensors only when this
process runs Triton's interpreter (``TRITON_INTERPRET=1`` set before triton is imported); that is
how CI checks every kernel against the reference without a GPU. Dispatch refuses them on CPU
otherwise, with that reason.

For tests, :func:`implementation` returns the raw implementation of an op (it runs CPU tensors
in the interpreter, whatever dispatch would say).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import torch

from tabzoo.kernels.op_registry import Backend, Cost, register_backend
from tabzoo.kernels.triton._common import (
    DTYPES,
    MAX_HEAD_DIM,
    MIN_CAPABILITY,
    device_reasons,
    interpreting,
    is_available,
    triton_installed,
)

__all__ = ["NAME", "PRIORITY", "OPS", "implementation", "interpreting", "is_available", "register", "triton_installed"]

NAME = "triton"
PRIORITY = 40
#: op -> (kernel module, function name)
OPS: dict[str, tuple[str, str]] = {
    "masked_attention": ("attention", "masked_attention"),
    "linear_attention": ("linear", "linear_attention"),
    "linear_attention_state": ("linear", "linear_attention_state"),
    "linear_attention_read": ("linear", "linear_attention_read"),
    "selective_scan": ("scan", "selective_scan"),
}


def implementation(op: str) -> Callable[..., Any]:
    """The Triton implementation of ``op`` (imports triton and compiles or interprets on call).

    :raises KeyError: for an op without a Triton kernel.
    """
    module, name = OPS[op]
    fn: Callable[..., Any] = getattr(importlib.import_module(f"tabzoo.kernels.triton.{module}"), name)
    return fn


def _lazy(op: str) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        return implementation(op)(**kwargs)

    call.__name__ = f"triton_{op}"
    call.__qualname__ = call.__name__
    call.__module__ = __name__
    return call


def _head_reasons(**dims: int) -> list[str]:
    return [f"{name} = {d} > {MAX_HEAD_DIM}: too wide for one tile; split the heads" for name, d in dims.items()
            if d > MAX_HEAD_DIM]


def _attention_reasons(inputs: Mapping[str, Any]) -> list[str]:
    reasons = device_reasons(inputs)
    q, v, mask = inputs["q"], inputs["v"], inputs["mask"]
    if q.shape[2] == 0 or inputs["k"].shape[2] == 0:
        reasons.append("no query or no key rows: nothing for the kernel to do (the torch backends return the empty/zero result)")
    if v.shape[-1] != q.shape[-1]:
        reasons.append(f"value head dim {v.shape[-1]} != query head dim {q.shape[-1]}; the kernel needs them equal")
    reasons += _head_reasons(head_dim=q.shape[-1])
    if isinstance(mask, torch.Tensor) and mask.dim() > 2 and any(s != 1 for s in mask.shape[:-2]):
        reasons.append(f"bool mask {tuple(mask.shape)} differs per batch or head; the block layout is shared by "
                       "all heads (pass a [Nq, Nk] mask or a tabzoo.masks.Mask, or use sdpa)")
    return reasons


def _linear_reasons(inputs: Mapping[str, Any]) -> list[str]:
    reasons = device_reasons(inputs)
    q = inputs.get("q", inputs.get("k"))
    dv = inputs["v"].shape[-1] if "v" in inputs else inputs["S"].shape[-1]
    return reasons + _head_reasons(head_dim=q.shape[-1], value_dim=dv)


def _scan_reasons(inputs: Mapping[str, Any]) -> list[str]:
    reasons = device_reasons(inputs)
    n = inputs["A"].shape[1]
    if n > 256:
        reasons.append(f"state size N = {n} > 256 does not fit one tile")
    return reasons


def _attention_cost(inputs: Mapping[str, Any]) -> Cost:
    q, k = inputs["q"], inputs["k"]
    b, h, nq, dh = q.shape
    nk = k.shape[2]
    block = 64 if q.device.type == "cuda" else 16
    mask = inputs["mask"]
    nbq, nbk = -(-nq // block), -(-nk // block)
    if mask is None:
        nnz = nbq * nbk
    elif isinstance(mask, torch.Tensor):
        dense = mask.reshape(mask.shape[-2], mask.shape[-1]).to(torch.bool)
        pad = torch.nn.functional.pad(dense, (0, nbk * block - nk, 0, nbq * block - nq))
        nnz = int(pad.view(nbq, block, nbk, block).any(dim=3).any(dim=1).sum())
    else:
        nnz = int(mask.block_layout(nq, nk, block=block).shape[0])
    area = float(nnz) * block * block
    io = (2 * q.numel() + 2 * nnz * block * dh * b * h) * q.element_size()
    return Cost(flops=4.0 * b * h * area * dh, bytes=float(io))


def _linear_cost(inputs: Mapping[str, Any]) -> Cost:
    q, v, nc = inputs["q"], inputs["v"], inputs["n_context"]
    b, h, n, dh = q.shape
    dv = v.shape[-1]
    io = (q.numel() + n * b * h * dv + nc * b * h * (dh + dv)) * q.element_size()
    return Cost(flops=2.0 * b * h * (nc + n) * dh * (dv + 1), bytes=float(io))


def _scan_cost(inputs: Mapping[str, Any]) -> Cost:
    x, A = inputs["x"], inputs["A"]
    batch, length, d = x.shape
    elems = float(batch * length * d * A.shape[1])
    io = sum(t.numel() * t.element_size() for t in (x, inputs["delta"], inputs["B"], inputs["C"]))
    # two passes over the sequence (local states, then the output) read the inputs twice
    return Cost(flops=2 * 7.0 * elems, bytes=float(2 * io + x.numel() * 4))


def _register_one(op: str, reasons: Callable[[Mapping[str, Any]], list[str]],
                  cost: Callable[[Mapping[str, Any]], Cost]) -> None:
    register_backend(Backend(
        NAME, op, _lazy(op), priority=PRIORITY, devices=("cuda", "cpu"), dtypes=DTYPES,
        min_capability=MIN_CAPABILITY, is_available=is_available, not_supported_reasons=reasons,
        cost=cost, origin="tabzoo.kernels.triton",
    ))


def register() -> None:
    """Register every Triton backend (called once by :mod:`tabzoo.kernels`)."""
    from tabzoo.kernels.linear_state import _read_cost, _state_cost

    _register_one("masked_attention", _attention_reasons, _attention_cost)
    _register_one("linear_attention", _linear_reasons, _linear_cost)
    _register_one("linear_attention_state", _linear_reasons, _state_cost)
    _register_one("linear_attention_read", _linear_reasons, _read_cost)
    _register_one("selective_scan", _scan_reasons, _scan_cost)

