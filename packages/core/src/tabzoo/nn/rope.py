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

__all__ = ["RotaryEmbedding", "apply_rope", "rope_angles", "rope_inv_freq"]


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


def rope_angles(positions: torch.Tensor, inv_freq: torch.Tensor, dtype: torch.dtype,
                device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos`` and ``sin`` of RoPE's angles ``positions[..., None] * inv_freq``, computed in ``dtype``.

    :param positions: any shape of integer or float positions.
    :param inv_freq: ``[dim // 2]`` inverse frequencies.
    :param dtype: the working dtype (float32, or float64 for float64 inputs).
    :return: ``(cos, sin)``, each ``positions.shape + (dim // 2,)``.
    """
    device = positions.device if device is None else device
    angles = positions.to(device=device, dtype=dtype)[..., None] * inv_freq.to(device, dtype)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    base: float = 10000.0,
    dim: int | None = None,
    inv_freq: torch.Tensor | None = None,
    cos_sin: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Rotate the first ``dim`` channels of ``x`` by position-dependent angles.

    :param x: ``[..., n, d]`` queries or keys (e.g. ``[batch, heads, rows, head_dim]``).
    :param positions: ``[n]`` or any shape broadcastable to ``x.shape[:-1]`` (e.g. ``[batch, 1, n]``);
        integer or float positions. ``None`` means ``0 .. n-1``.
    :param base: wavelength base (ignored when ``inv_freq`` is given).
    :param dim: number of rotated channels (even, ``<= d``); default all ``d`` channels.
        The remaining channels pass through unchanged.
    :param inv_freq: optional precomputed ``[dim // 2]`` inverse frequencies.
    :param cos_sin: optional precomputed :func:`rope_angles` of ``positions`` in the working dtype
        (what :class:`RotaryEmbedding` caches per length); ``positions`` and ``inv_freq`` are then unused.
    :return: ``[..., n, d]``, same dtype as ``x``. Angles are computed in float32 (float64 for float64 input).
    """
    d = x.shape[-1]
    dim = d if dim is None else dim
    if dim > d:
        raise TabzooInputError(f"RoPE dim={dim} exceeds the tensor's last dimension {d}; pass dim <= {d}.")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    if cos_sin is None:
        if inv_freq is None:
            inv_freq = rope_inv_freq(dim, base, device=x.device)
        if inv_freq.shape[-1] * 2 != dim:
            raise TabzooInputError(
                f"RoPE inv_freq has {inv_freq.shape[-1]} entries but dim={dim}; pass dim = 2 * len(inv_freq)."
            )
        if positions is None:
            positions = torch.arange(x.shape[-2], device=x.device)
        cos, sin = rope_angles(positions, inv_freq, work, x.device)
    else:
        cos, sin = cos_sin
        if cos.shape[-1] * 2 != dim:
            raise TabzooInputError(f"RoPE cos_sin has {cos.shape[-1]} frequencies but dim={dim}; pass dim = 2 * that.")
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

    Called without ``positions`` (positions ``0 .. n-1``), it reuses the ``cos`` / ``sin`` tables of
    that length: they are cached per ``(n, working dtype, device)`` (the last :data:`CACHE_SIZE`
    keys), computed by the same operations as uncached, so the result is bitwise the same.

    :param dim: number of rotated channels per head (even); usually the head dimension.
    :param base: wavelength base.
    """

    inv_freq: torch.Tensor
    #: lengths x dtypes x devices whose tables one module keeps
    CACHE_SIZE = 8

    def __init__(self, dim: int, base: float = 10000.0) -> None:
        super().__init__()
        self.dim = dim
        self.base = base
        self.register_buffer("inv_freq", rope_inv_freq(dim, base), persistent=False)
        self._tables: dict[tuple[int, torch.dtype, torch.device], tuple[torch.Tensor, torch.Tensor]] = {}

    def _inv_freq(self, device: torch.device) -> torch.Tensor:
        inv_freq = self.inv_freq
        if inv_freq.dtype != torch.float32:  # e.g. after module.to(torch.bfloat16): keep full precision
            inv_freq = rope_inv_freq(self.dim, self.base, device=device)
        return inv_freq

    def cos_sin(self, n: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """The cached :func:`rope_angles` of positions ``0 .. n-1`` in working dtype ``dtype`` on ``device``.

        The tables depend on no parameter (``inv_freq`` is a fixed buffer), so they carry no graph.
        """
        key = (int(n), dtype, torch.device(device))
        hit = self._tables.get(key)
        if hit is not None:
            return hit
        with torch.no_grad():
            table = rope_angles(torch.arange(n, device=key[2]), self._inv_freq(key[2]), dtype, key[2])
        if len(self._tables) >= self.CACHE_SIZE:
            self._tables.pop(next(iter(self._tables)))
        self._tables[key] = table
        return table

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Rotate ``x``.

        :param x: ``[..., n, d]`` with ``d >= dim``.
        :param positions: ``[n]`` or broadcastable to ``x.shape[:-1]``; default ``0 .. n-1``.
        :return: ``[..., n, d]``.
        """
        if positions is None:
            work = torch.float64 if x.dtype == torch.float64 else torch.float32
            if self.dim > x.shape[-1]:
                raise TabzooInputError(f"RoPE dim={self.dim} exceeds the tensor's last dimension {x.shape[-1]}.")
            return apply_rope(x, dim=self.dim, cos_sin=self.cos_sin(x.shape[-2], work, x.device))
        return apply_rope(x, positions, dim=self.dim, inv_freq=self._inv_freq(x.device))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, base={self.base}"
