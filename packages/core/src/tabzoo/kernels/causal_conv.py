"""``causal_conv1d``: the depthwise causal convolution in front of a Mamba-style scan.

For every batch element, position ``t`` and channel ``d`` (``K`` taps, token-major layout)::

    pre[t, d] = bias[d] + sum_k weight[d, k] x[t - (K-1-k), d]      (x = 0 outside [0, L))
    out[t, d] = act(pre[t, d]) * mask[t]

``reverse=True`` is causal in the other direction (``x[t + (K-1-k)]``: flip, convolve, flip);
``act`` is the identity or SiLU; ``mask`` (one number per position, optional) multiplies the
output last. ``weight [D, K]`` is ``nn.Conv1d(D, D, K, groups=D).weight[:, 0, :]``.

Backends (priority): ``cpu_fused`` (30; CPU, where the compiled library of
:mod:`tabzoo.kernels.scan_cpu` is built: the taps, bias, activation and mask in one pass, and
one pass back), ``reference`` (0; ``K`` shifted multiply-adds on the token-major layout, no
transposes; torch's depthwise ``conv1d`` is slower on CPU).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from tabzoo.errors import TabzooInputError
from tabzoo.kernels import scan_cpu
from tabzoo.kernels.op_registry import Backend, Cost, define_op, dispatch, register_backend

__all__ = ["causal_conv1d", "causal_conv1d_reference"]

OP = "causal_conv1d"
ACTIVATIONS = (None, "silu")


def causal_conv1d_reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                            reverse: bool = False, activation: str | None = None,
                            mask: torch.Tensor | None = None) -> torch.Tensor:
    """``K`` shifted multiply-adds in the dtype of ``x``: ``[batch, L, D]``."""
    length, k = x.shape[1], weight.shape[1]
    w = weight.t().to(x.dtype)  # [K, D]
    xp = F.pad(x, (0, 0, 0, k - 1) if reverse else (0, 0, k - 1, 0))
    first = xp[:, k - 1:k - 1 + length] if reverse else xp[:, :length]
    out = first * w[0] if bias is None else torch.addcmul(bias.to(x.dtype), first, w[0])
    for i in range(1, k):
        start = k - 1 - i if reverse else i
        out = out + xp[:, start:start + length] * w[i]
    if activation == "silu":
        out = F.silu(out)
    return out if mask is None else out * mask[..., None].to(x.dtype)


class _Conv(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, mask: torch.Tensor | None,
                reverse: bool, silu: bool) -> torch.Tensor:
        f32 = lambda t: t.float().contiguous()  # noqa: E731
        ins = [f32(x), f32(weight.t()),
               f32(bias) if bias is not None else x.new_zeros(x.shape[-1], dtype=torch.float32),
               f32(mask) if mask is not None else x.new_ones(x.shape[:2], dtype=torch.float32)]
        out = scan_cpu._module().conv_fwd(*ins, silu, reverse)
        ctx.save_for_backward(*ins)
        ctx.flags = (silu, reverse)
        ctx.dtypes = tuple(t.dtype if t is not None else None for t in (x, weight, bias, mask))
        return out.to(x.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        silu, reverse = ctx.flags
        gx, gw, gb, gm = scan_cpu._module().conv_bwd(*ctx.saved_tensors, g.float().contiguous(), silu, reverse)
        grads = [gx, gw.t(), gb, gm]
        out = [gr.to(dt) if dt is not None else None for gr, dt in zip(grads, ctx.dtypes, strict=True)]
        return (*out, None, None)


def causal_conv1d_cpu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, reverse: bool = False,
                      activation: str | None = None, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The compiled one-pass convolution (fp32 inside): ``[batch, L, D]`` in the dtype of ``x``."""
    return _Conv.apply(x, weight, bias, mask, bool(reverse), activation == "silu")


def _cost(inputs: Mapping[str, Any]) -> Cost:
    x, w = inputs["x"], inputs["weight"]
    return Cost(flops=2.0 * x.numel() * w.shape[1], bytes=float(2 * x.numel() * x.element_size()))


define_op(OP, {"bias": None, "reverse": False, "activation": None, "mask": None})
register_backend(Backend("reference", OP, causal_conv1d_reference, priority=0, cost=_cost))
register_backend(Backend("cpu_fused", OP, causal_conv1d_cpu, priority=30, devices=("cpu",),
                         is_available=scan_cpu.available, cost=_cost))


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, reverse: bool = False,
                  activation: str | None = None, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Depthwise causal convolution along L (see the module docstring).

    :param x: ``[batch, L, D]`` input.
    :param weight: ``[D, K]`` taps per channel (the last tap reads position ``t`` itself).
    :param bias: ``[D]``, optional.
    :param reverse: causal from the end (position ``t`` reads ``t .. t + K - 1``).
    :param activation: None or ``"silu"``, applied after the bias.
    :param mask: ``[batch, L]`` multiplies each position's output last, optional.
    :returns: ``[batch, L, D]`` in the dtype of ``x``.
    :raises TabzooInputError: on inconsistent shapes, an unknown activation or non-floating inputs.
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or not x.is_floating_point():
        raise TabzooInputError(f"causal_conv1d: x must be a floating [batch, L, D] tensor; got {getattr(x, 'shape', x)}")
    b, length, d = x.shape
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or weight.shape[0] != d or weight.shape[1] < 1:
        raise TabzooInputError(f"causal_conv1d: weight must be [D={d}, K >= 1]; got {getattr(weight, 'shape', weight)}")
    for name, t, shape in (("bias", bias, (d,)), ("mask", mask, (b, length))):
        if t is not None and (not isinstance(t, torch.Tensor) or tuple(t.shape) != shape or not t.is_floating_point()):
            raise TabzooInputError(f"causal_conv1d: {name} must be a floating tensor of shape {list(shape)}; "
                                   f"got {list(getattr(t, 'shape', []))}")
    if activation not in ACTIVATIONS:
        raise TabzooInputError(f"causal_conv1d: activation={activation!r}; use one of {list(ACTIVATIONS)}")
    return dispatch(OP, {"x": x, "weight": weight, "bias": bias, "reverse": bool(reverse), "activation": activation,
                         "mask": mask})
