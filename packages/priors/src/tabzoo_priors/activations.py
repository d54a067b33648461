"""Per-node activations of the SCM prior (ORION-MSP appendix B.1.1), vectorised over datasets.

Every node of every dataset in a batch draws its own activation uniformly from
:data:`ACTIVATIONS`. :func:`apply_activations` evaluates them with one pass per activation kind
over the nodes that drew it, so the cost is about one elementwise op per node value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

__all__ = ["ACTIVATIONS", "apply_activations", "random_fourier"]

RFF_FEATURES = 256  # N in eq. 59


def _indicator(x: torch.Tensor) -> torch.Tensor:
    return (x.abs() < 1).to(x.dtype)


_ELEMENTWISE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "identity": lambda x: x,
    "tanh": torch.tanh,
    "leaky_relu": F.leaky_relu,
    "elu": F.elu,
    "relu": F.relu,
    "relu6": F.relu6,
    "selu": F.selu,
    "silu": F.silu,
    "softplus": F.softplus,
    "hardtanh": F.hardtanh,
    "sign": torch.sign,
    "sin": torch.sin,
    "rbf": lambda x: torch.exp(-x * x),
    "exp": lambda x: torch.exp(x.clamp(max=8.0)),
    "sqrt_abs": lambda x: x.abs().sqrt(),
    "square": lambda x: x * x,
    "abs": torch.abs,
    "indicator": _indicator,
}

#: Names of all activations, in the order used by integer activation codes.
ACTIVATIONS: tuple[str, ...] = (*_ELEMENTWISE, "random_fourier")


def random_fourier(x: torch.Tensor, generator: torch.Generator, n: int = RFF_FEATURES) -> torch.Tensor:
    """Random Fourier feature function, one independent draw per row of ``x``.

    ``f(x) = sum_i (w_i / ||w||) * sin(a_i x + b_i) * z_i`` with ``a_i ~ U[0, N]``,
    ``b_i ~ U[0, 2 pi]``, ``w_i = a_i ** -exp(u)``, ``u ~ U[0.7, 3]``, ``z ~ N(0, I)`` (eq. 59).

    :param x: ``[nodes, rows]``; each node gets its own random function.
    :param generator: generator on ``x.device``.
    :param n: number of Fourier features N.
    :return: ``[nodes, rows]``.
    """
    m = x.shape[0]
    dev, dt = x.device, x.dtype
    a = torch.rand(m, n, generator=generator, device=dev, dtype=dt) * n
    a = a.clamp_min(1e-3)  # a_i = 0 would give an infinite weight
    b = torch.rand(m, n, generator=generator, device=dev, dtype=dt) * (2 * math.pi)
    u = 0.7 + 2.3 * torch.rand(m, 1, generator=generator, device=dev, dtype=dt)
    log_w = -torch.exp(u) * torch.log(a)
    w = torch.exp(log_w - log_w.amax(dim=1, keepdim=True))  # rescaling cancels in w / ||w||
    w = w / w.norm(dim=1, keepdim=True)
    z = torch.randn(m, n, generator=generator, device=dev, dtype=dt)
    coef = (w * z).unsqueeze(2)  # [m, n, 1]
    out = torch.empty_like(x)
    chunk = max(1, (1 << 22) // max(1, n * x.shape[1]))
    for s in range(0, m, chunk):
        phase = a[s : s + chunk, :, None] * x[s : s + chunk, None, :] + b[s : s + chunk, :, None]
        out[s : s + chunk] = (torch.sin(phase) * coef[s : s + chunk]).sum(dim=1)
    return out


def apply_activations(
    h: torch.Tensor, codes: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Apply activation ``ACTIVATIONS[codes[b, j]]`` to node ``j`` of dataset ``b``.

    :param h: pre-activations ``[batch, rows, nodes]``.
    :param codes: ``[batch, nodes]`` long, values in ``[0, len(ACTIVATIONS))``.
    :param generator: generator on ``h.device`` (used by random Fourier features).
    :return: ``[batch, rows, nodes]``.
    """
    hp = h.permute(0, 2, 1)  # [B, nodes, rows] view
    out = torch.empty(hp.shape, dtype=hp.dtype, device=hp.device)
    flat_codes = codes.reshape(-1)
    hp_flat = hp.reshape(-1, hp.shape[-1])
    out_flat = out.view(-1, hp.shape[-1])
    order = torch.argsort(flat_codes, stable=True)
    counts = torch.bincount(flat_codes, minlength=len(ACTIVATIONS)).tolist()
    start = 0
    for k, name in enumerate(ACTIVATIONS):
        c = counts[k]
        if c == 0:
            continue
        idx = order[start : start + c]
        start += c
        sel = hp_flat.index_select(0, idx)
        if name == "random_fourier":
            res = random_fourier(sel, generator)
        else:
            res = _ELEMENTWISE[name](sel)
        out_flat.index_copy_(0, idx, res)
    return out.permute(0, 2, 1)
