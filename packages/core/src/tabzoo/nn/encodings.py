"""Numeric feature encodings: per-feature linear and piecewise-linear (Gorishniy et al. 2022).

Both are NaN-safe: a missing value (NaN) encodes as zeros, and with ``missing_indicator=True`` a
learned per-feature "missing" vector is added (or, for the raw PLE, a 0/1 indicator channel appended).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from tabzoo.errors import TabzooInputError

__all__ = ["LinearEncoding", "PiecewiseLinearEncoding"]


def _check_features(x: torch.Tensor, n_features: int, who: str) -> None:
    if x.dim() < 1 or x.shape[-1] != n_features:
        raise TabzooInputError(
            f"{who} was built for {n_features} features but got input of shape {tuple(x.shape)}; "
            f"pass [..., {n_features}] (pad or select features to match)."
        )


class LinearEncoding(nn.Module):
    """Per-feature linear embedding: ``e[..., f, :] = x[..., f] * W[f] + b[f]``.

    :param n_features: number of features ``F``.
    :param d: embedding width.
    :param missing_indicator: add a learned per-feature vector ``M[f]`` where ``x`` is NaN
        (the value itself then encodes as 0).
    :param bias: learn ``b``.
    """

    def __init__(self, n_features: int, d: int, missing_indicator: bool = False, bias: bool = True) -> None:
        super().__init__()
        self.n_features, self.d = n_features, d
        bound = 1.0 / d**0.5
        self.weight = nn.Parameter(torch.empty(n_features, d).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(n_features, d).uniform_(-bound, bound)) if bias else None
        self.missing = nn.Parameter(torch.empty(n_features, d).uniform_(-bound, bound)) if missing_indicator else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:param x: ``[..., F]`` float, NaN = missing. :return: ``[..., F, d]``."""
        _check_features(x, self.n_features, "LinearEncoding")
        nan = torch.isnan(x)
        out = torch.where(nan, 0.0, x).unsqueeze(-1) * self.weight
        if self.bias is not None:
            out = out + self.bias
        if self.missing is not None:
            out = out + nan.unsqueeze(-1).to(out.dtype) * self.missing
        return out


class PiecewiseLinearEncoding(nn.Module):
    """Piecewise-linear encoding (PLE) of numeric features.

    For a feature with bin edges ``b_0 < b_1 < ... < b_T`` the encoding has ``T`` entries;
    entry ``t`` is ``(x - b_{t-1}) / (b_t - b_{t-1})`` clipped to ``[0, 1]``, except that the first
    entry is not clipped below and the last entry is not clipped above (so values outside the
    training range stay distinguishable). Features with fewer bins are zero-padded to ``T_max``.

    :param bins: per-feature bin edges: a sequence of 1-d increasing tensors (each with >= 2 edges),
        or a ``[F, T + 1]`` tensor.
    :param d: if given, each feature's encoding is mapped by its own linear layer to width ``d``.
    :param missing_indicator: without ``d``: append a 0/1 missing channel (output ``T_max + 1``);
        with ``d``: add a learned per-feature missing vector.
    """

    left: torch.Tensor
    width: torch.Tensor
    valid: torch.Tensor
    is_last: torch.Tensor

    def __init__(
        self,
        bins: Sequence[torch.Tensor] | torch.Tensor,
        d: int | None = None,
        missing_indicator: bool = False,
    ) -> None:
        super().__init__()
        edges = [torch.as_tensor(b, dtype=torch.float32).flatten() for b in bins]
        if not edges:
            raise TabzooInputError("PiecewiseLinearEncoding needs bins for at least one feature.")
        for f, e in enumerate(edges):
            if e.numel() < 2 or not bool(torch.all(e[1:] > e[:-1])) or not bool(torch.isfinite(e).all()):
                raise TabzooInputError(
                    f"bin edges of feature {f} must be >= 2 finite, strictly increasing values, got {e.tolist()}; "
                    "use PiecewiseLinearEncoding.fit(x, n_bins) to compute them from training data."
                )
        self.n_features = len(edges)
        self.n_bins = max(e.numel() - 1 for e in edges)
        left = torch.zeros(self.n_features, self.n_bins)
        width = torch.ones(self.n_features, self.n_bins)
        valid = torch.zeros(self.n_features, self.n_bins, dtype=torch.bool)
        is_last = torch.zeros(self.n_features, self.n_bins, dtype=torch.bool)
        for f, e in enumerate(edges):
            t = e.numel() - 1
            left[f, :t] = e[:-1]
            width[f, :t] = e[1:] - e[:-1]
            valid[f, :t] = True
            is_last[f, t - 1] = True
        self.register_buffer("left", left)
        self.register_buffer("width", width)
        self.register_buffer("valid", valid)
        self.register_buffer("is_last", is_last)
        self.missing_indicator = missing_indicator
        self.d = d
        if d is not None:
            bound = 1.0 / self.n_bins**0.5
            self.weight = nn.Parameter(torch.empty(self.n_features, self.n_bins, d).uniform_(-bound, bound))
            self.bias = nn.Parameter(torch.empty(self.n_features, d).uniform_(-bound, bound))
            self.missing = nn.Parameter(torch.zeros(self.n_features, d)) if missing_indicator else None

    @property
    def out_dim(self) -> int:
        """Width of each feature's encoding: ``d``, or ``T_max`` (+1 with the raw missing channel)."""
        if self.d is not None:
            return self.d
        return self.n_bins + int(self.missing_indicator)

    @classmethod
    def fit(
        cls, x: torch.Tensor, n_bins: int, d: int | None = None, missing_indicator: bool = False
    ) -> PiecewiseLinearEncoding:
        """Build a PLE with quantile bin edges computed on training data.

        :param x: ``[n_rows, F]`` training features, NaN = missing (ignored when computing quantiles).
        :param n_bins: maximum number of bins per feature; duplicate quantiles are merged, so a feature
            with few distinct values gets fewer bins. A constant or all-missing feature gets one bin.
        :param d: see the constructor.
        :param missing_indicator: see the constructor.
        :return: the encoding module.
        """
        if x.dim() != 2 or x.shape[0] == 0:
            raise TabzooInputError(f"PiecewiseLinearEncoding.fit expects [n_rows > 0, F], got {tuple(x.shape)}.")
        if n_bins < 1:
            raise TabzooInputError(f"n_bins must be >= 1, got {n_bins}.")
        x = x.detach().to("cpu", torch.float64)
        qs = torch.linspace(0.0, 1.0, n_bins + 1, dtype=torch.float64)
        bins: list[torch.Tensor] = []
        for f in range(x.shape[1]):
            col = x[:, f]
            col = col[torch.isfinite(col)]
            if col.numel() == 0:
                bins.append(torch.tensor([0.0, 1.0]))
                continue
            edges = torch.unique(torch.quantile(col, qs).to(torch.float32))
            if edges.numel() < 2:
                edges = torch.stack([edges[0], edges[0] + 1.0])
            bins.append(edges)
        return cls(bins, d=d, missing_indicator=missing_indicator)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Raw PLE.

        :param x: ``[..., F]`` float, NaN = missing.
        :return: ``[..., F, T_max]`` (``+1`` channel with the missing indicator); missing values encode as 0.
        """
        _check_features(x, self.n_features, "PiecewiseLinearEncoding")
        nan = torch.isnan(x)
        xv = torch.where(nan, 0.0, x).unsqueeze(-1).to(self.left.dtype)
        r = (xv - self.left) / self.width
        first = torch.zeros_like(self.valid)
        first[:, 0] = True
        r = torch.where(first, r, r.clamp(min=0.0))
        r = torch.where(self.is_last, r, r.clamp(max=1.0))
        r = torch.where(self.valid & ~nan.unsqueeze(-1), r, 0.0)
        if self.missing_indicator and self.d is None:
            r = torch.cat([r, nan.unsqueeze(-1).to(r.dtype)], dim=-1)
        return r

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:param x: ``[..., F]`` float, NaN = missing. :return: ``[..., F, out_dim]``."""
        r = self.encode(x)
        if self.d is None:
            return r
        out = torch.einsum("...ft,ftd->...fd", r, self.weight) + self.bias
        if self.missing is not None:
            out = out + torch.isnan(x).unsqueeze(-1).to(out.dtype) * self.missing
        return out
