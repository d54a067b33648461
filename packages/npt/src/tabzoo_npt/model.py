"""The Non-Parametric Transformer (NPT): attention between datapoints and between attributes.

Input: a whole (mini)batch of rows ``values [B, N, d]`` with a cell mask ``mask [B, N, d]``
(True = the cell is hidden: a masked-out target, a stochastically masked feature or a missing
value). Each attribute ``j`` is encoded (one-hot for a categorical attribute with ``K_j``
classes, the standardised value for a numeric one), the mask bit is concatenated, a
per-attribute linear map takes it to ``e`` dimensions, and learned attribute-index and
attribute-type embeddings are added: ``H [B, N, d, e]``.

Layers alternate, each a pre-LayerNorm multi-head self-attention with a residual and a
row-wise feed-forward (``tabzoo.nn.TransformerBlock``, attention through the kernel registry):

* ABD (attention between datapoints): every row is flattened to ``d * e`` and attention runs
  across the ``N`` rows;
* ABA (attention between attributes): attention across the ``d`` attributes of each row, with
  the same weights for every row.

A final LayerNorm and per-attribute linear heads map back to each attribute's encoding
(``K_j`` logits or one value). ``isolated [B, N]`` marks rows that no OTHER row may read
(query rows in the fixed-context prediction mode): they read every non-isolated row and
themselves, so their outputs do not depend on one another.

Because isolated rows never change the context rows, prediction can encode the context once
(:meth:`NPT.encode_context`: the keys and values of every ABD layer for the context rows) and
then run any number of query chunks against it (:meth:`NPT.forward_queries`); this is
numerically the ``isolated`` forward, without re-encoding the context per chunk, and each query
row's own key is read in a fixed column (:func:`read_context_and_self`), so that a row's logits
do not change in their last bits with its position in the chunk.
"""

from __future__ import annotations

from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from tabzoo.nn import TransformerBlock
from torch import nn

from tabzoo_npt.config import PRESETS, NPTConfig

__all__ = ["NPTConfig", "NPT", "build", "PRESETS", "MAX_ROW_WIDTH", "MIN_DIM", "read_context_and_self", "row_dim"]

#: default cap on the ABD row width ``d * e`` (the paper's Breast Cancer model: 31 attributes x
#: e = 32 = 992, "e = 32 due to memory constraints", appendix C.1.2)
MAX_ROW_WIDTH = 1024
#: the smallest per-attribute width the cap may shrink ``e`` to
MIN_DIM = 4


def row_dim(n_attributes: int, dim: int, max_row_width: int | None = MAX_ROW_WIDTH) -> int:
    """Per-attribute width ``e`` for ``n_attributes`` columns: ``dim``, lowered so that the ABD
    row width ``n_attributes * e`` stays within ``max_row_width`` (``None`` = no cap).

    ABD attention mixes whole rows of ``d * e`` values, so its parameters grow with
    ``(d * e)**2``. With the row width capped, only the per-attribute embeddings, heads and the
    ABA layers grow with ``d``: the parameter count grows linearly with the column count, as the
    paper does by hand when it lowers ``e`` on its widest small table. ``e`` never goes below
    :data:`MIN_DIM`, so ``max_row_width // MIN_DIM`` columns (256 by default) is NPT's width limit.

    :raises TabzooInputError: more columns than the cap holds at ``e = MIN_DIM``.
    """
    if max_row_width is None or n_attributes * dim <= max_row_width:
        return dim
    e = max_row_width // n_attributes
    if e < MIN_DIM:
        raise TabzooInputError(
            f"{n_attributes} columns (features + targets) exceed NPT's width limit of {max_row_width // MIN_DIM} "
            f"columns (max_row_width={max_row_width}, at least {MIN_DIM} dimensions per column); select or "
            "compress features (e.g. PCA) first, or raise max_row_width (memory grows with its square)."
        )
    return e


def build(config: dict[str, Any]) -> NPT:
    """Build an NPT from a JSON-able config (``preset`` plus overrides; ``cardinalities`` required)."""
    cfg = dict(config)
    preset = cfg.pop("preset", None)
    if preset and preset not in PRESETS:
        raise TabzooInputError(f"unknown NPT preset {preset!r}; use one of {sorted(PRESETS)}.")
    base = dict(PRESETS[preset]) if preset else {}
    base.update({k: v for k, v in cfg.items() if v is not None})
    if "cardinalities" not in base:
        raise TabzooInputError("the NPT config needs 'cardinalities' (0 = numeric, K = classes) per attribute.")
    return NPT(NPTConfig(**base))


class NPT(nn.Module):
    """Non-Parametric Transformer over ``d`` attributes (see the module docstring)."""

    def __init__(self, config: NPTConfig) -> None:
        super().__init__()
        self.config = config
        cards = config.cardinalities
        d, e = len(cards), config.dim
        self.n_attributes = d
        self.in_width = max(max(cards), 1) + 1  # encoding slots + the mask bit (last slot)
        self.out_width = max(max(cards), 1)
        self.register_buffer("cards", torch.tensor(cards, dtype=torch.long), persistent=True)
        w = torch.randn(d, self.in_width, e)
        w /= torch.tensor([max(c, 1) + 1 for c in cards], dtype=torch.float32).sqrt()[:, None, None]
        self.w_in = nn.Parameter(w)
        self.b_in = nn.Parameter(torch.zeros(d, e))
        self.index_emb = nn.Parameter(torch.randn(d, e) * 0.02)
        self.type_emb = nn.Parameter(torch.randn(2, e) * 0.02)
        self.in_drop = nn.Dropout(config.dropout)
        layers = []
        for i in range(config.n_layers):
            width, heads = (d * e, config.n_heads) if i % 2 == 0 else (e, config.heads_aba)
            layers.append(TransformerBlock(width, heads, config.ff_mult * width, dropout=config.dropout, norm="pre"))
        self.layers = nn.ModuleList(layers)
        self.out_norm = nn.LayerNorm(e)
        self.w_out = nn.Parameter(torch.randn(d, e, self.out_width) / e**0.5)
        self.b_out = nn.Parameter(torch.zeros(d, self.out_width))

    # -- inputs -------------------------------------------------------------------------------
    def validate(self, values: torch.Tensor, mask: torch.Tensor, isolated: torch.Tensor | None) -> None:
        """Raise :class:`TabzooInputError` on inputs the model cannot read."""
        d = self.n_attributes
        if not isinstance(values, torch.Tensor) or values.dim() != 3 or values.shape[-1] != d:
            raise TabzooInputError(
                f"values must be a tensor [batch, rows, {d} attributes]; got shape {tuple(getattr(values, 'shape', ()))}."
            )
        if not isinstance(mask, torch.Tensor) or mask.shape != values.shape or mask.dtype != torch.bool:
            raise TabzooInputError(
                f"mask must be a bool tensor of the shape of values {tuple(values.shape)}; got "
                f"{tuple(getattr(mask, 'shape', ()))} {getattr(mask, 'dtype', None)}."
            )
        if isolated is not None and (isolated.shape != values.shape[:2] or isolated.dtype != torch.bool):
            raise TabzooInputError(f"isolated must be a bool tensor [batch, rows] = {tuple(values.shape[:2])}.")
        if values.shape[1] < 1:
            raise TabzooInputError("the batch holds no rows; pass at least one row.")
        visible = values.masked_fill(mask, 0.0)
        if not torch.isfinite(visible).all():
            raise TabzooInputError(
                "a visible cell holds NaN or inf; mark missing cells in mask (True = hidden) or impute them."
            )
        cat = self.cards > 0
        if bool(cat.any()):
            codes = visible[..., cat]
            bad = (codes < 0) | (codes >= self.cards[cat].to(codes.dtype)) | (codes != codes.round())
            if bool(bad.any()):
                raise TabzooInputError(
                    "a visible categorical cell is not a class index in [0, K); encode categories as 0..K-1 "
                    "or mark the cell as hidden."
                )

    def embed(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``values, mask [B, N, d]`` -> ``H [B, N, d, e]`` (eq. 22 of the appendix)."""
        b, n, d = values.shape
        visible = values.masked_fill(mask, 0.0).to(self.w_in.dtype)
        enc = visible.new_zeros(b, n, d, self.in_width)
        cat = self.cards > 0
        num_idx = torch.nonzero(~cat).flatten()
        cat_idx = torch.nonzero(cat).flatten()
        if num_idx.numel():
            enc[:, :, num_idx, 0] = visible[:, :, num_idx]
        if cat_idx.numel():
            codes = visible[:, :, cat_idx].long()
            onehot = torch.nn.functional.one_hot(codes, self.in_width).to(enc.dtype)
            onehot = onehot * (~mask[:, :, cat_idx]).to(enc.dtype)[..., None]  # hidden cells: all zeros
            enc[:, :, cat_idx] = onehot
        enc[..., -1] = mask.to(enc.dtype)
        h = torch.einsum("bnjk,jke->bnje", enc, self.w_in) + self.b_in
        h = h + self.index_emb + self.type_emb[cat.long()]
        return self.in_drop(h)

    @staticmethod
    def abd_mask(isolated: torch.Tensor | None, n: int) -> torch.Tensor | None:
        """``[B, N, N]`` bool: row ``i`` may read row ``j`` iff ``j`` is not isolated or ``j == i``."""
        if isolated is None or not bool(isolated.any()):
            return None
        eye = torch.eye(n, dtype=torch.bool, device=isolated.device)
        return (~isolated)[:, None, :] | eye[None]

    # -- forward ------------------------------------------------------------------------------
    def forward(self, values: torch.Tensor, mask: torch.Tensor, isolated: torch.Tensor | None = None) -> torch.Tensor:
        """Predict every cell.

        :param values: ``[B, N, d]`` float: standardised numbers, or class indices of categorical
            attributes (as floats). Hidden cells may hold anything (NaN included).
        :param mask: ``[B, N, d]`` bool, True = hidden (the mask bit of the input embedding).
        :param isolated: optional ``[B, N]`` bool: rows no other row may read.
        :return: ``[B, N, d, out_width]`` logits; attribute ``j`` uses its first ``K_j`` slots
            (categorical) or slot 0 (numeric).
        """
        self.validate(values, mask, isolated)
        b, n, d = values.shape
        e = self.config.dim
        h = self.embed(values, mask)
        abd_mask = self.abd_mask(isolated, n)
        for i, layer in enumerate(self.layers):
            if i % 2 == 0:
                h = layer(h.reshape(b, n, d * e), mask=abd_mask).reshape(b, n, d, e)
            else:
                h = layer(h.reshape(b * n, d, e)).reshape(b, n, d, e)
        h = self.out_norm(h)
        return torch.einsum("bnje,jeo->bnjo", h, self.w_out) + self.b_out

    # -- fixed-context prediction: the context encoded once ------------------------------------
    @torch.no_grad()
    def encode_context(self, values: torch.Tensor, mask: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The context's keys and values for :meth:`forward_queries`.

        :param values, mask: ``[1, n_context, d]`` context cells (as for :meth:`forward`).
        :return: per ABD layer, the per-head keys and values of the context rows
            ``([1, H, n_context, d*e/H], [1, H, n_context, d*e/H])``.
        """
        self.validate(values, mask, None)
        b, n, d = values.shape
        e = self.config.dim
        h = self.embed(values, mask)
        states = []
        for i, layer in enumerate(self.layers):
            if i % 2 == 0:
                flat = h.reshape(b, n, d * e)
                states.append(layer.attn.project_keys_values(layer.attention_input(flat)))
                h = layer(flat).reshape(b, n, d, e)
            else:
                h = layer(h.reshape(b * n, d, e)).reshape(b, n, d, e)
        return states

    @torch.no_grad()
    def forward_queries(self, values: torch.Tensor, mask: torch.Tensor,
                        context: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Logits of isolated query rows against an encoded context (:meth:`encode_context`).

        Each query row reads every context row and itself, never another query row (the
        ``isolated`` forward of the same rows), through :func:`read_context_and_self` inside the
        blocks of :class:`tabzoo.nn.TransformerBlock`. Every computation is row-wise with shapes
        that do not depend on the row's position in the chunk, so a row's logits are the same
        bits at any position of a chunk of a given size.

        :param values, mask: ``[1, m, d]`` query cells.
        :return: ``[1, m, d, out_width]``.
        """
        self.validate(values, mask, None)
        b, m, d = values.shape
        e = self.config.dim
        h = self.embed(values, mask)
        for i, layer in enumerate(self.layers):
            if i % 2 == 0:
                flat = h.reshape(b, m, d * e)
                attn = layer.attn
                normed = layer.attention_input(flat)
                k_self, v_self = attn.project_keys_values(normed)
                read = read_context_and_self(attn.project_queries(normed), *context[i // 2], k_self, v_self)
                h = layer.after_attention(flat, attn.merge_heads(read)).reshape(b, m, d, e)
            else:
                h = layer(h.reshape(b * m, d, e)).reshape(b, m, d, e)
        h = self.out_norm(h)
        return torch.einsum("bnje,jeo->bnjo", h, self.w_out) + self.b_out


def read_context_and_self(q: torch.Tensor, k_ctx: torch.Tensor, v_ctx: torch.Tensor,
                          k_self: torch.Tensor, v_self: torch.Tensor) -> torch.Tensor:
    """Softmax attention of each query over the shared context keys plus its own key.

    Numerically the masked attention of :meth:`NPT.forward` with ``isolated`` query rows, but
    every query's own key sits in one fixed column (the last) instead of at the query's position
    among the chunk's keys: a masked kernel sums each row's terms in an order that depends on
    where its own key falls, so a row's bits would change with its position in a chunk. Here the
    scores are one GEMM against the context, the softmax is row-wise over ``n_ctx + 1`` columns
    and the values are one GEMM plus the own term, all independent of the row's position.

    :param q: ``[B, H, m, Dh]`` queries.
    :param k_ctx, v_ctx: ``[B, H, n_ctx, Dh]`` the context's keys and values.
    :param k_self, v_self: ``[B, H, m, Dh]`` each query row's own key and value.
    :return: ``[B, H, m, Dh]`` in the dtype of ``q`` (computed in fp32).
    """
    qf = q.float() / q.shape[-1] ** 0.5
    scores = torch.cat([torch.matmul(qf, k_ctx.float().transpose(-1, -2)),
                        (qf * k_self.float()).sum(-1, keepdim=True)], dim=-1)  # [B, H, m, n_ctx + 1]
    p = torch.softmax(scores, dim=-1)
    out = torch.matmul(p[..., :-1], v_ctx.float()) + p[..., -1:] * v_self.float()
    return out.to(q.dtype)
