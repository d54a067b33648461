"""``bimamba_inner``: the inner part of a bidirectional Mamba mixer, both directions in one op.

Per direction (forward in ``t``, then reversed), from the gated input ``x [B, L, E]``::

    xc = silu(causal_conv(x)) * open            # depthwise, causal in scan order
    dt_low, Bm, Cm = split(xc @ x_proj^T)       # [B, L, R], [B, L, N], [B, L, N]
    y = selective_scan(xc, dt_low @ dt_proj^T, -exp(A_log), Bm, Cm, D, delta_bias=dt_bias,
                       delta_softplus=True, delta_scale=gate, z=z)

and the two ``y`` concatenated ``[B, L, 2 E]`` (the merge projection stays outside).

Backends (priority): ``cpu_fused`` (30; CPU, fp32, no autocast, where the compiled library of
:mod:`tabzoo.kernels.scan_cpu` is built: one autograd node for both directions that calls the
compiled conv and scan and the projections' matmuls directly, with a written backward; the eager
chain is about 30 autograd nodes per mixer, each with its own dispatch, checks and saved tensors),
``reference`` (0; the chain above from the ops' reference backends).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from tabzoo.errors import TabzooInputError
from tabzoo.kernels import scan_cpu
from tabzoo.kernels.causal_conv import causal_conv1d_reference
from tabzoo.kernels.op_registry import Backend, Cost, define_op, dispatch, register_backend
from tabzoo.kernels.selective_scan import scan_epilogue, scan_prologue, selective_scan_reference

__all__ = ["PARAMS", "bimamba_inner", "bimamba_inner_reference"]

OP = "bimamba_inner"
PARAMS = ("conv_weight", "conv_bias", "x_proj", "dt_proj", "dt_bias", "A_log", "D")
"""Each direction's parameters, suffixed ``_f`` (forward) and ``_b`` (reverse): conv ``[E, K]``,
``[E]``; ``x_proj [R + 2 N, E]``; ``dt_proj [E, R]``; ``dt_bias [E]``; ``A_log [E, N]``; ``D [E]``."""


def _direction_reference(x: torch.Tensor, z: torch.Tensor, gate: torch.Tensor, open_: torch.Tensor,
                         p: Mapping[str, torch.Tensor], reverse: bool) -> torch.Tensor:
    xc = causal_conv1d_reference(x, p["conv_weight"], p["conv_bias"], reverse=reverse, activation="silu", mask=open_)
    r, n = p["dt_proj"].shape[1], p["A_log"].shape[1]
    dt, b, c = F.linear(xc, p["x_proj"]).split([r, n, n], dim=-1)
    delta = scan_prologue(F.linear(dt, p["dt_proj"]), p["dt_bias"], True, gate)
    return scan_epilogue(selective_scan_reference(xc, delta, -torch.exp(p["A_log"]), b, c, p["D"], reverse=reverse), z)


def _split(inputs: Mapping[str, Any], suffix: str) -> dict[str, torch.Tensor]:
    return {k: inputs[f"{k}_{suffix}"] for k in PARAMS}


def bimamba_inner_reference(x: torch.Tensor, z: torch.Tensor, gate: torch.Tensor, open_: torch.Tensor,
                            **params: torch.Tensor) -> torch.Tensor:
    """The chain of the module docstring from the reference conv and scan: ``[B, L, 2 E]``."""
    return torch.cat([_direction_reference(x, z, gate, open_, _split(params, "f"), False),
                      _direction_reference(x, z, gate, open_, _split(params, "b"), True)], dim=-1)


def _f32(t: torch.Tensor) -> torch.Tensor:
    return t.float().contiguous()


class _Fused(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, z: torch.Tensor, gate: torch.Tensor, open_: torch.Tensor,
                *flat: torch.Tensor) -> torch.Tensor:
        lib = scan_cpu._module()
        x, z, gate, open_ = _f32(x), _f32(z), _f32(gate), _f32(open_)
        e = x.shape[-1]
        ys, saved = [], []
        for i, reverse in enumerate((False, True)):
            cw, cb, xp, dp, db, a_log, dv = flat[7 * i:7 * i + 7]
            r, n = dp.shape[1], a_log.shape[1]
            wt = _f32(cw.t())
            xc = lib.conv_fwd(x, wt, _f32(cb), open_, True, reverse)
            dt, b, c = F.linear(xc, xp).split([r, n, n], dim=-1)
            delta = F.linear(dt, dp)
            a = -torch.exp(a_log)
            b, c = b.contiguous(), c.contiguous()
            y, hs, ypre = lib.scan_fwd(xc, delta, _f32(a), b, c, _f32(dv), _f32(db), gate, z, True, reverse,
                                       scan_cpu.SEGMENT)
            ys.append(y)
            saved += [wt, xc, dt, delta, a, b, c, hs, ypre]
        ctx.save_for_backward(x, z, gate, open_, *flat, *saved)
        ctx.e = e
        return torch.cat(ys, dim=-1)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        lib = scan_cpu._module()
        saved = ctx.saved_tensors
        x, z, gate, open_ = saved[:4]
        flat, per = saved[4:18], saved[18:]
        e = ctx.e
        g = g.float()
        shared: list[list[torch.Tensor]] = []  # per direction: the gradients of x, z, gate, open_
        grads: list[torch.Tensor] = []
        for i, reverse in enumerate((False, True)):
            cw, cb, xp, dp, db, a_log, dv = flat[7 * i:7 * i + 7]
            wt, xc, dt, delta, a, b, c, hs, ypre = per[9 * i:9 * i + 9]
            gy = g[..., e * i:e * (i + 1)].contiguous()
            gxc, gdelta, ga, gb, gc, gdv, gdb, gs, gzi = lib.scan_bwd(
                xc, delta, a, b, c, _f32(dv), _f32(db), gate, z, ypre, gy, hs, True, reverse, scan_cpu.SEGMENT)
            r = dp.shape[1]
            gdt = gdelta.matmul(dp)  # [B, L, R]
            g_dp = gdelta.reshape(-1, e).t().matmul(dt.reshape(-1, r))
            gproj = torch.cat([gdt, gb, gc], dim=-1)
            g_xp = gproj.reshape(-1, gproj.shape[-1]).t().matmul(xc.reshape(-1, e))
            gxc = gxc + gproj.matmul(xp)
            gxi, gwt, gcb, gm = lib.conv_bwd(x, wt, _f32(cb), open_, gxc.contiguous(), True, reverse)
            shared.append([gxi, gzi, gs, gm])
            grads += [gwt.t(), gcb, g_xp, g_dp, gdb, ga * a, gdv]
        ins = ctx.saved_tensors[:18]
        both = [f + b for f, b in zip(*shared, strict=True)]
        out = [gr.to(t.dtype) for gr, t in zip([*both, *grads], ins, strict=True)]
        return tuple(out)


def bimamba_inner_cpu(x: torch.Tensor, z: torch.Tensor, gate: torch.Tensor, open_: torch.Tensor,
                      **params: torch.Tensor) -> torch.Tensor:
    """Both directions as one autograd node over the compiled conv and scan (fp32): ``[B, L, 2 E]``."""
    flat = [params[f"{k}_{s}"] for s in ("f", "b") for k in PARAMS]
    return _Fused.apply(x, z, gate, open_, *flat)


def _fused_reasons(inputs: Mapping[str, Any]) -> list[str]:
    reasons: list[str] = []
    if torch.is_autocast_enabled("cpu"):
        reasons.append("CPU autocast is on: the fused mixer runs fp32 matmuls where autocast asks for bf16 "
                       "(the eager chain follows autocast)")
    return reasons


def _cost(inputs: Mapping[str, Any]) -> Cost:
    x, a = inputs["x"], inputs["A_log_f"]
    elems = float(x.numel())
    p = inputs["x_proj_f"].shape[0]
    flops = 2.0 * (2 * elems * p + 8 * elems * a.shape[1] + 2 * elems * inputs["conv_weight_f"].shape[1])
    return Cost(flops=flops, bytes=8.0 * elems * x.element_size())


define_op(OP, {})
register_backend(Backend("reference", OP, bimamba_inner_reference, priority=0, cost=_cost))
register_backend(Backend("cpu_fused", OP, bimamba_inner_cpu, priority=30, devices=("cpu",), dtypes=(torch.float32,),
                         is_available=scan_cpu.available, not_supported_reasons=_fused_reasons, cost=_cost))


def bimamba_inner(x: torch.Tensor, z: torch.Tensor, gate: torch.Tensor, open_: torch.Tensor,
                  **params: torch.Tensor) -> torch.Tensor:
    """Both directions of a gated bidirectional Mamba mixer (see the module docstring).

    :param x: ``[B, L, E]`` the mixer's input half (zero on padding).
    :param z: ``[B, L, E]`` the output gate (``y * silu(z)``).
    :param gate: ``[B, L]`` the step-size scale (the schema gate; 0 on padding).
    :param open_: ``[B, L]`` multiplies the conv's output (``gate > 0`` as a float).
    :param params: :data:`PARAMS` of each direction, suffixed ``_f`` and ``_b``.
    :returns: ``[B, L, 2 E]`` (forward direction first), in the dtype of ``x``.
    :raises TabzooInputError: on a missing parameter or inconsistent shapes.
    """
    need = {f"{k}_{s}" for s in ("f", "b") for k in PARAMS}
    if set(params) != need:
        raise TabzooInputError(f"bimamba_inner: parameters {sorted(need)} expected; missing "
                               f"{sorted(need - set(params))}, unknown {sorted(set(params) - need)}")
    if x.dim() != 3 or z.shape != x.shape or tuple(gate.shape) != tuple(x.shape[:2]) or open_.shape != gate.shape:
        raise TabzooInputError(f"bimamba_inner: x, z [B, L, E] and gate, open_ [B, L] expected; got "
                               f"{list(x.shape)}, {list(z.shape)}, {list(gate.shape)}, {list(open_.shape)}")
    return dispatch(OP, {"x": x, "z": z, "gate": gate, "open_": open_, **params})
