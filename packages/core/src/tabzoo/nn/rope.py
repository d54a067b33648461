"""Rotary position embeddings (RoPE, Su et al. 2021).

RoPE rotates pairs of channels of queries and keys by an angle proportional to the position,
so that the dot product of a rotated query at position ``m`` and a rotated key at position ``n``
depends only on the offset ``m - n``. Channels are paired "half-split" style: channel ``i`` is
rotated together with channel ``i + dim // 2``.
"""

from __future__ import annotations

import torch
from torch import nn

from tabzoo.errors import TabzooInputError

__all__ = ["RotaryEmbedding", "apply_rope", "rope_inv_freq"]


def rope_inv_freq(dim: int, base: float = 10000.0, device: torch.device | str | None = None) -> torch.Tensor:
    """Inverse frequencies of RoPE.

    :param dim: number of rotated channels (even).
    :param base: the wavelength base.
    :return: ``[dim // 2]`` float32, ``base ** (-2i / dim)``.
    """
    if dim <= 0 or dim % 2:
        raise TabzooInputError(f"RoPE needs a positive even number of channels, got dim={dim}; use an even dim.")
    exps = torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim
    return torch.pow(torch.tensor(float(base), device=device), -exps)


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    base: float = 10000.0,
    dim: int | None = None,
    inv_freq: torch.Tensor | None = None,
) -> torch.Tensor:
    """Rotate the first ``dim`` channels of ``x`` by position-dependent angles.

    :param x: ``[..., n, d]`` queries or keys (e.g. ``[batch, heads, rows, head_dim]``).
    :param positions: ``[n]`` or any shape broadcastable to ``x.shape[:-1]`` (e.g. ``[batch, 1, n]``);
        integer or float positions. ``None`` means ``0 .. n-1``.
    :param base: wavelength base (ignored when ``inv_freq`` is given).
    :param dim: number of rotated channels (even, ``<= d``); default all ``d`` channels.
        The remaining channels pass through unchanged.
    :param inv_freq: optional precomputed ``[dim // 2]`` inverse frequencies.
    :return: ``[..., n, d]``, same dtype as ``x``. Angles are computed in float32 (float64 for float64 input).
    """
    d = x.shape[-1]
    dim = d if dim is None else dim
    if dim > d:
        raise TabzooInputError(f"RoPE dim={dim} exceeds the tensor's last dimension {d}; pass dim <= {d}.")
    if inv_freq is None:
        inv_freq = rope_inv_freq(dim, base, device=x.device)
    if inv_freq.shape[-1] * 2 != dim:
        raise TabzooInputError(
            f"RoPE inv_freq has {inv_freq.shape[-1]} entries but dim={dim}; pass dim = 2 * len(inv_freq)."
        )
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = positions.to(device=x.device, dtype=work)[..., None] * inv_freq.to(x.device, work)
    cos, sin = torch.cos(angles), torch.sin(angles)
    half = dim // 2
    # contiguous first: the per-head views of attention are strided, and the broadcast products
    # below run several times faster on a contiguous tensor (same values)
    xf = x.to(work).contiguous()
    x1, x2 = xf[..., :half], xf[..., half:dim]
    rotated = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    if dim < d:
        rotated = torch.cat([rotated, xf[..., dim:]], dim=-1)
    return rotated.to(x.dtype)


class RotaryEmbedding(nn.Module):
    """RoPE as a module holding its inverse frequencies (a non-persistent buffer).

    :param dim: number of rotated channels per head (even); usually the head dimension.
    :param base: wavelength base.
    """

    inv_freq: torch.Tensor

    def __init__(self, dim: int, base: float = 10000.0) -> None:
        super().__init__()
        self.dim = dim
        self.base = base
        self.register_buffer("inv_freq", rope_inv_freq(dim, base), persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Rotate ``x``.

        :param x: ``[..., n, d]`` with ``d >= dim``.
        :param positions: ``[n]`` or broadcastable to ``x.shape[:-1]``; default ``0 .. n-1``.
        :return: ``[..., n, d]``.
        """
        inv_freq = self.inv_freq
        if inv_freq.dtype != torch.float32:  # e.g. after module.to(torch.bfloat16): keep full precision
            inv_freq = rope_inv_freq(self.dim, self.base, device=x.device)
        return apply_rope(x, positions, dim=self.dim, inv_freq=inv_freq)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, base={self.base}"
