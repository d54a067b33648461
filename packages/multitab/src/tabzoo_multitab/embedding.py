"""Per-feature token embeddings for numeric and categorical columns (shared with the baselines)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tabzoo.errors import TabzooInputError
from torch import nn

from tabzoo_multitab.config import NUM_EMBEDDINGS

__all__ = ["FeatureEmbedding", "check_features", "NUM_EMBEDDINGS"]


def check_features(x_num: torch.Tensor, x_cat: torch.Tensor | None, n_num: int, n_cat: int) -> None:
    """Raise :class:`TabzooInputError` unless ``x_num [..., rows, n_num]`` float and ``x_cat [..., rows, n_cat]`` integer agree."""
    if not isinstance(x_num, torch.Tensor) or not x_num.is_floating_point():
        raise TabzooInputError("x_num must be a float tensor [batch, rows, numeric features]; convert with .float().")
    if x_num.shape[-1] != n_num:
        raise TabzooInputError(f"x_num has {x_num.shape[-1]} numeric columns, the model expects {n_num}; pass the fitted columns.")
    if torch.isinf(x_num).any():
        raise TabzooInputError("x_num contains inf; replace it by NaN (missing) or a finite value.")
    if n_cat:
        if x_cat is None:
            raise TabzooInputError(f"the model has {n_cat} categorical columns; pass x_cat [batch, rows, {n_cat}] (int64 codes).")
        if x_cat.is_floating_point() or x_cat.shape[-1] != n_cat or x_cat.shape[:-1] != x_num.shape[:-1]:
            raise TabzooInputError(
                f"x_cat must be an integer tensor {tuple(x_num.shape[:-1]) + (n_cat,)}, got {x_cat.dtype} "
                f"{tuple(x_cat.shape)}; encode categories as int64 codes (0 = unseen/missing)."
            )
    elif x_cat is not None and x_cat.shape[-1] != 0:
        raise TabzooInputError("x_cat was given but the model has no categorical columns; pass x_cat=None.")


class FeatureEmbedding(nn.Module):
    """Numeric value ``v`` of column ``j`` -> ``v * W_j + b_j`` (NaN -> a learned missing token);
    categorical code ``c`` of column ``j`` -> row ``c`` of column ``j``'s table, where code 0 (and
    any code outside ``1..cardinality_j``: a category unseen in training) is the reserved index.

    With ``numeric="plr"`` a numeric value is embedded as in Gorishniy, Rubachev, Babenko (2022),
    *On Embeddings for Numerical Features in Tabular Deep Learning* (NeurIPS), "PLR": periodic
    features ``[sin(2 pi c_j v), cos(2 pi c_j v)]`` of ``k`` trainable frequencies ``c_j ~ N(0,
    sigma^2)`` per column, then a per-column ``Linear(2k, e)`` and a ReLU. Their
    paper shows that this embedding closes most of the gap between attention models over feature
    tokens and MLPs; on MultiTab-Bench it did not (mean validation EV 0.924 vs 0.959 linear; it is
    bounded, so it follows the degree-3 tails badly), so it is an option, not the default (issue 26,
    ``benchmarks/results/multitab-backbone-2026-11-29.json``).

    :param n_num: numeric columns.
    :param cat_cardinalities: categories per categorical column (tables get one more row).
    :param d: token width ``e``.
    :param numeric: ``"linear"`` (the paper's ``v * W_j + b_j``) or ``"plr"``.
    :param n_frequencies: ``k``, frequencies per column (PLR).
    :param sigma: standard deviation of the initial frequencies (PLR; inputs are z-scores).
    """

    def __init__(self, n_num: int, cat_cardinalities: Sequence[int], d: int, numeric: str = "linear",
                 n_frequencies: int = 16, sigma: float = 0.1) -> None:
        super().__init__()
        if numeric not in NUM_EMBEDDINGS:
            raise TabzooInputError(f"numeric embedding {numeric!r} is unknown; use one of {NUM_EMBEDDINGS}.")
        self.n_num, self.cards, self.d = int(n_num), tuple(int(c) for c in cat_cardinalities), int(d)
        self.numeric = numeric
        if numeric == "plr":
            k = int(n_frequencies)
            self.frequencies = nn.Parameter(torch.randn(self.n_num, k) * float(sigma))  # [n_num, k]
            bound = (2 * k) ** -0.5  # nn.Linear's default init, per column
            self.num_weight = nn.Parameter((torch.rand(self.n_num, 2 * k, d) * 2 - 1) * bound)  # [n_num, 2k, e]
            self.num_bias = nn.Parameter((torch.rand(self.n_num, d) * 2 - 1) * bound)
        else:
            self.num_weight = nn.Parameter(torch.randn(self.n_num, d) * d**-0.5)
            # a non-zero bias keeps the magnitude of v visible through a LayerNorm (LN(v * W) alone is sign(v) * W / |W|)
            self.num_bias = nn.Parameter((torch.rand(self.n_num, d) * 2 - 1) * d**-0.5)
        self.num_missing = nn.Parameter(torch.randn(self.n_num, d) * 0.02)
        sizes = [c + 1 for c in self.cards]
        offsets = torch.tensor([0, *sizes[:-1]], dtype=torch.long).cumsum(0) if sizes else torch.zeros(0, dtype=torch.long)
        self.register_buffer("cat_offsets", offsets, persistent=False)
        self.register_buffer("cat_cards", torch.tensor(self.cards, dtype=torch.long), persistent=False)
        self.cat_table = nn.Embedding(max(1, sum(sizes)), d)
        nn.init.normal_(self.cat_table.weight, std=d**-0.5)

    @property
    def n_features(self) -> int:
        return self.n_num + len(self.cards)

    def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor | None = None) -> torch.Tensor:
        """:param x_num: ``[..., n_num]`` float (NaN = missing). :param x_cat: ``[..., n_cat]`` int64.
        :return: ``[..., n_num + n_cat, d]`` tokens, numeric columns first."""
        check_features(x_num, x_cat, self.n_num, len(self.cards))
        miss = torch.isnan(x_num)
        v = torch.nan_to_num(x_num, nan=0.0).unsqueeze(-1)
        if self.numeric == "plr":
            z = 2 * torch.pi * v * self.frequencies  # [..., n_num, k]
            periodic = torch.cat([torch.sin(z), torch.cos(z)], dim=-1)  # [..., n_num, 2k]
            tok = torch.relu(torch.einsum("...jk,jkd->...jd", periodic, self.num_weight) + self.num_bias)
        else:
            tok = v * self.num_weight + self.num_bias
        tok = torch.where(miss.unsqueeze(-1), self.num_missing.expand_as(tok), tok)
        if not self.cards:
            return tok
        assert x_cat is not None
        codes = x_cat.long()
        codes = torch.where((codes < 0) | (codes > self.cat_cards), torch.zeros_like(codes), codes)
        return torch.cat([tok, self.cat_table(codes + self.cat_offsets)], dim=-2)
