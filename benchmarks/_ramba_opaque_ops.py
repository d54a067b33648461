"""The compiled CPU library's functions (:mod:`tabzoo.kernels.scan_cpu`) as ``torch.library`` custom
ops with fake (shape-only) implementations, so that dynamo traces Ramba's fused ops (their
autograd.Functions call these) instead of breaking the graph at each pybind call; for
``benchmarks/ramba_compile_ab.py --opaque-ops`` only (the same kernels, the same numbers).

:func:`install` makes ``scan_cpu._module()`` return them for the rest of the process.
"""

from __future__ import annotations

import math
import types

import torch
from tabzoo.kernels import scan_cpu

_lib = scan_cpu._module()
NS = "tabzoo_scan_ab"


@torch.library.custom_op(f"{NS}::conv_fwd", mutates_args=())
def conv_fwd(
    x: torch.Tensor, wt: torch.Tensor, cb: torch.Tensor, m: torch.Tensor, silu: bool, reverse: bool
) -> torch.Tensor:
    return _lib.conv_fwd(x, wt, cb, m, silu, reverse)


@conv_fwd.register_fake
def _(x, wt, cb, m, silu, reverse):
    return torch.empty_like(x)


@torch.library.custom_op(f"{NS}::conv_bwd", mutates_args=())
def conv_bwd(
    x: torch.Tensor,
    wt: torch.Tensor,
    cb: torch.Tensor,
    m: torch.Tensor,
    g: torch.Tensor,
    silu: bool,
    reverse: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(_lib.conv_bwd(x, wt, cb, m, g, silu, reverse))


@conv_bwd.register_fake
def _(x, wt, cb, m, g, silu, reverse):
    return torch.empty_like(x), torch.empty_like(wt), torch.empty_like(cb), torch.empty_like(m)


@torch.library.custom_op(f"{NS}::scan_fwd", mutates_args=())
def scan_fwd(
    x: torch.Tensor,
    d: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    dv: torch.Tensor,
    db: torch.Tensor,
    s: torch.Tensor,
    z: torch.Tensor,
    sp: bool,
    rev: bool,
    seg: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(_lib.scan_fwd(x, d, a, b, c, dv, db, s, z, sp, rev, seg))


@scan_fwd.register_fake
def _(x, d, a, b, c, dv, db, s, z, sp, rev, seg):
    bsz, length, e = x.shape
    return (
        torch.empty_like(x),
        x.new_empty(bsz, math.ceil(length / seg), a.shape[1], e),
        torch.empty_like(x),
    )


@torch.library.custom_op(f"{NS}::scan_bwd", mutates_args=())
def scan_bwd(
    x: torch.Tensor,
    d: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    dv: torch.Tensor,
    db: torch.Tensor,
    s: torch.Tensor,
    z: torch.Tensor,
    ypre: torch.Tensor,
    gy: torch.Tensor,
    hs: torch.Tensor,
    sp: bool,
    rev: bool,
    seg: int,
) -> list[torch.Tensor]:
    return list(_lib.scan_bwd(x, d, a, b, c, dv, db, s, z, ypre, gy, hs, sp, rev, seg))


@scan_bwd.register_fake
def _(x, d, a, b, c, dv, db, s, z, ypre, gy, hs, sp, rev, seg):
    return [torch.empty_like(t) for t in (x, d, a, b, c, dv, db, s, z)]


@torch.library.custom_op(f"{NS}::gat_fwd", mutates_args=())
def gat_fwd(
    qkv: torch.Tensor, q: torch.Tensor, k: torch.Tensor, h: int, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    return tuple(_lib.gat_fwd(qkv, q, k, h, scale))


@gat_fwd.register_fake
def _(qkv, q, k, h, scale):
    return qkv.new_empty(qkv.shape[0], qkv.shape[1] // 3), qkv.new_empty(qkv.shape[0], h)


@torch.library.custom_op(f"{NS}::gat_bwd", mutates_args=())
def gat_bwd(
    qkv: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    go: torch.Tensor,
    h: int,
    scale: float,
) -> torch.Tensor:
    return _lib.gat_bwd(qkv, q, k, out, lse, go, h, scale)


@gat_bwd.register_fake
def _(qkv, q, k, out, lse, go, h, scale):
    return torch.empty_like(qkv)


OPS = types.SimpleNamespace(
    conv_fwd=conv_fwd,
    conv_bwd=conv_bwd,
    scan_fwd=scan_fwd,
    scan_bwd=scan_bwd,
    gat_fwd=gat_fwd,
    gat_bwd=gat_bwd,
    attn_fwd=_lib.attn_fwd,
    attn_bwd=_lib.attn_bwd,
)


def install() -> None:
    """Route the fused ops' library calls through the custom ops (this process only)."""
    scan_cpu._module = lambda may_build=False: OPS  # type: ignore[assignment]
