"""The ORION-MSP network (papers/000): column embedding -> multi-scale sparse row interaction ->
Perceiver memory -> split-masked ICL transformer -> MLP decoder.

``model(x [B, N, F], y_context [B, n_context]) -> [B, N - n_context, max_classes]`` logits of the
query rows (the in-context protocol of :mod:`tabzoo.train` and :mod:`tabzoo.estimators`).

Inputs. Cells are standardised per column with the mean and standard deviation of the CONTEXT
rows (missing cells become the context mean, i.e. 0, and values are clipped to +-``CLIP``). A column
that is constant over the context rows of an episode (the zero padding of a batch, or a
useless column) is *invalid*: its embeddings are set to 0, and trailing columns invalid in every
episode of the batch are cut off before any work is done. Whether a column is valid depends on
context rows only.

Leak-freeness, stage by stage (row positions, context rows first):

* column embedding: the inducing points read context rows; every row reads the inducing points;
* row interaction: within one row only;
* memory: the latents read context rows; every row reads the latents;
* ICL: ``context_query(n_context, query_sees_query)`` in every block.

:meth:`OrionMSP.mask_stack` returns that stack as :class:`tabzoo.masks.Mask` objects, so that
``tabzoo.masks.leaks`` proves, before any number is computed, that no query row reaches a context
row and (with the default ``query_sees_query=False``, eq. 29) that no query row reaches another.
"""

from __future__ import annotations

from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from tabzoo.masks import Mask, context_query, window
from tabzoo.nn import LabelEmbedding, MLPHead, TransformerBlock
from torch import nn

from tabzoo_orion_msp import rows as _rows
from tabzoo_orion_msp.column import ColumnEmbedding
from tabzoo_orion_msp.config import OrionConfig, get_config
from tabzoo_orion_msp.memory import PerceiverMemory
from tabzoo_orion_msp.rows import RowInteraction

__all__ = ["OrionMSP", "build", "CLIP"]

#: standardised cells are clipped to this magnitude
CLIP = 10.0


class OrionMSP(nn.Module):
    """ORION-MSP in-context classifier network.

    :param config: an :class:`OrionConfig`, a preset name (``"paper"``, ``"small"``, ``"tiny"``) or a
        dict (``{"preset": "small", "query_sees_query": True, ...}``).
    """

    task = "classification"
    architecture = "orion-msp"

    def __init__(self, config: OrionConfig | str | dict[str, Any] | None = "small") -> None:
        super().__init__()
        cfg = get_config(config)
        self.cfg = cfg
        self.max_features, self.max_classes = cfg.max_features, cfg.max_classes
        self.columns = ColumnEmbedding(cfg)
        self.rows = RowInteraction(cfg)
        self.memory = PerceiverMemory(cfg) if cfg.memory_slots > 0 else None
        self.label = LabelEmbedding(cfg.max_classes, cfg.d_row, kind="onehot")
        self.icl = nn.ModuleList(
            TransformerBlock(cfg.d_row, cfg.icl_heads, cfg.icl_ff, norm="pre", activation="gelu")
            for _ in range(cfg.icl_blocks)
        )
        self.final_norm = nn.LayerNorm(cfg.d_row)
        self.decoder = MLPHead(cfg.d_row, 2 * cfg.d_row, cfg.max_classes, activation="gelu", n_layers=2)
        self._init_weights()

    def _init_weights(self) -> None:
        """Xavier-uniform linear weights, zero biases (appendix B.3)."""
        for mod in self.modules():
            if isinstance(mod, nn.Linear):
                nn.init.xavier_uniform_(mod.weight)
                if mod.bias is not None:
                    nn.init.zeros_(mod.bias)

    @property
    def config(self) -> dict[str, Any]:
        """The config as a JSON-able dict (stored in checkpoints; :func:`build` reads it back)."""
        return self.cfg.to_dict()

    def widen(self, n_features: int) -> OrionMSP:
        """Accept tables of up to ``n_features`` columns (at least the trained ``cfg.max_features``).

        No weight depends on the number of features: columns are embedded one by one (shared ISABs),
        the row stage groups them with sinusoidal slot queries and RoPE, so any width runs. Above
        ~312 features a row has >= 320 tokens and the kernel registry picks the block-sparse
        ``banded`` row attention (linear in the features) instead of dense SDPA. The checkpoint saw
        at most ``cfg.max_features`` columns in pretraining, so whether a wide table is better run
        whole or as feature subsets is a question of accuracy, not of the code. Returns ``self``.
        """
        if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
            raise TabzooInputError(f"widen(n_features) needs a positive int, got {n_features!r}.")
        self.max_features = max(int(self.cfg.max_features), int(n_features))
        return self

    # ------------------------------------------------------------------ inputs
    def _check(self, x: torch.Tensor, y_context: torch.Tensor) -> int:
        if not isinstance(x, torch.Tensor) or not isinstance(y_context, torch.Tensor):
            raise TabzooInputError("ORION-MSP expects torch tensors x [B, N, F] and y_context [B, n_context].")
        if x.dim() != 3 or y_context.dim() != 2 or x.shape[0] != y_context.shape[0]:
            raise TabzooInputError(
                f"ORION-MSP expects x [B, N, F] and y_context [B, n_context] with the same B, got "
                f"{tuple(x.shape)} and {tuple(y_context.shape)}."
            )
        n_context = int(y_context.shape[1])
        if not 1 <= n_context <= x.shape[1]:
            raise TabzooInputError(
                f"ORION-MSP needs 1 <= n_context <= N rows; got n_context={n_context} for N={x.shape[1]}. "
                "Pass the labels of the context rows only."
            )
        if x.shape[2] < 1:
            raise TabzooInputError("ORION-MSP needs at least one feature column.")
        if x.shape[2] > self.max_features:
            raise TabzooInputError(
                f"ORION-MSP({self.cfg.name}) was trained on at most {self.cfg.max_features} features and "
                f"takes {self.max_features}, got {x.shape[2]}. Select or project features first "
                "(OrionMSPClassifier gives each ensemble member a feature subset), or call "
                "model.widen(n_features) (OrionMSPClassifier(wide_features=...)) to run the table whole."
            )
        if not x.is_floating_point():
            raise TabzooInputError(f"x must be a float tensor, got {x.dtype}; cast it with x.float().")
        return n_context

    def standardise(self, x: torch.Tensor, n_context: int, pad_features: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Context-standardised cells and the per-episode valid-column mask.

        :param x: ``[B, N, F]`` raw cells (NaN = missing, +-inf treated as missing).
        :param pad_features: keep (or add) empty columns up to ``max_features`` instead of cutting
            the trailing ones: the width every episode had in pretraining (see :meth:`forward`).
        :return: ``(z [B, N, F'], valid [B, F'])`` with trailing columns that are invalid in every
            episode removed (``F' <= F``, at least 1), or ``F' = max_features`` with ``pad_features``.
        """
        x = x.float()
        if pad_features and x.shape[-1] < self.cfg.max_features:
            x = torch.nn.functional.pad(x, (0, self.cfg.max_features - x.shape[-1]))
        x = torch.where(torch.isfinite(x), x, torch.full_like(x, float("nan")))
        ctx = x[:, :n_context]
        present = ~torch.isnan(ctx)
        count = present.sum(1).clamp_min(1)
        mean = torch.where(present, ctx, torch.zeros_like(ctx)).sum(1) / count
        dev = torch.where(present, ctx - mean[:, None], torch.zeros_like(ctx))
        std = (dev.pow(2).sum(1) / count).sqrt()
        valid = (std > 1e-6) & (present.sum(1) > 1)
        any_valid = valid.any(0)
        keep = int(any_valid.nonzero().max()) + 1 if bool(any_valid.any()) else 1
        if pad_features:
            keep = x.shape[-1]
        z = (x[..., :keep] - mean[:, None, :keep]) / torch.where(valid[:, :keep], std[:, :keep], 1.0)[:, None]
        z = torch.nan_to_num(z, nan=0.0).clamp(-CLIP, CLIP)
        z = z * valid[:, None, :keep]
        return z, valid[:, :keep]

    # ------------------------------------------------------------------ stages
    def row_embeddings(self, x: torch.Tensor, n_context: int, pad_features: bool = False) -> torch.Tensor:
        """Column embedding + row interaction: ``[B, N, F]`` -> ``[B, N, d_R]`` (Algorithm 1).

        The columns' context summaries are computed once (:meth:`ColumnEmbedding.summarise`); then the
        rows go through in blocks of about :data:`~tabzoo_orion_msp.rows.CELLS` cells: each block's cells
        are embedded a few columns at a time (:data:`~tabzoo_orion_msp.rows.COL_TOKENS` cells per piece,
        so every piece's activations stay in the CPU caches) and the block goes straight through the
        row stage (which runs its own cache-sized chunks of rows). No stage holds activations for the
        whole table. Columns invalid in every episode (constant on the context, e.g. the empty ones of
        ``pad_features``) embed to 0 without being computed. Rows and columns are independent in the
        column stage once the summaries are known, and rows are independent in the row stage, so this
        equals embedding the whole table in one piece.
        """
        z, valid = self.standardise(x, n_context, pad_features)
        z = z.to(self.rows.cls.dtype)
        b, n, m = z.shape
        used = valid.any(0)
        every = bool(used.all())
        idx = used.nonzero().squeeze(1)
        zu, vu = (z, valid) if every else (z[..., idx], valid[:, idx])
        vu = vu[:, None, :, None].to(z.dtype)
        k = int(idx.numel())
        summary = self.columns.summarise(zu, n_context) if k else []
        block = max(1, _rows.CELLS // (b * m))
        parts = []
        for r0 in range(0, n, block):
            r1 = min(n, r0 + block)
            e = z.new_zeros(b, r1 - r0, m, self.cfg.d)
            step = max(1, _rows.COL_TOKENS // (b * (r1 - r0)))
            for c0 in range(0, k, step):
                c1 = min(k, c0 + step)
                piece = self.columns.embed(zu[:, r0:r1, c0:c1], self.columns.select(summary, b, c0, c1))
                piece = piece * vu[:, :, c0:c1]
                if every:
                    e[:, :, c0:c1] = piece
                else:
                    e[:, :, idx[c0:c1]] = piece
            parts.append(self.rows(e))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)

    @staticmethod
    def centre_rows(h: torch.Tensor, n_context: int, eps: float = 1e-4) -> torch.Tensor:
        """Remove the part every row of an episode shares and rescale: ``[B, N, d] -> [B, N, d]``.

        ``(h - mean_ctx(h)) / rms_ctx(h - mean_ctx(h))`` with the mean per dimension and one rms per
        episode, both over the CONTEXT rows only (leak-free, order-invariant). The row stage's CLS
        outputs share a large episode-level component; the rows differ by a few percent of it
        (measured: 1.7% after 375 training steps, 22% at initialisation), so the ICL blocks could not
        tell them apart and training collapsed to a constant prediction. Centred, the differences
        between rows are the signal at unit scale.
        """
        # statistics in float64: their value must not depend on the order of the context rows
        ctx = h[:, :n_context].double()
        mean = ctx.mean(1, keepdim=True)
        scale = (ctx - mean).pow(2).mean(dim=(1, 2), keepdim=True).add(eps).sqrt()
        return (h - mean.to(h.dtype)) / scale.to(h.dtype)

    def encode(self, x: torch.Tensor, y_context: torch.Tensor, pad_features: bool = False) -> torch.Tensor:
        """Every stage up to the final LayerNorm: ``[B, N, d_R]`` representations of all rows."""
        n_context = self._check(x, y_context)
        h = self.row_embeddings(x, n_context, pad_features)
        if self.cfg.centre_rows:
            h = self.centre_rows(h, n_context)
        r = self.memory(h, n_context) if self.memory is not None else h
        r = self.label.add_to(r, y_context.to(r.device), n_context)  # eq. 49, context rows only
        mask = context_query(n_context, query_sees_query=self.cfg.query_sees_query)  # eq. 50 / eq. 29
        for block in self.icl:
            r = block(r, mask=mask)
        return self.final_norm(r)

    def forward(self, x: torch.Tensor, y_context: torch.Tensor, pad_features: bool = False) -> torch.Tensor:
        """In-context prediction (Algorithms 2-3).

        :param x: ``[B, N, F]`` float cells, the first ``n_context`` rows are context.
        :param y_context: ``[B, n_context]`` class indices ``0..max_classes-1`` of the context rows.
        :param pad_features: row interaction over ``max_features`` feature tokens, the real ones and
            empty (zero) ones, as in pretraining: the trainer pads every episode to ``max_features``
            columns and the batch keeps them up to its widest episode, so most pretraining episodes
            had many empty tokens beside their real features. Without it, the empty trailing columns
            are cut (less work, but a row stage the checkpoint was not trained on; see the estimator).
        :return: ``[B, N - n_context, max_classes]`` raw logits of the query rows (divide by
            ``cfg.temperature`` before a softmax for the paper's calibrated probabilities).
        """
        r = self.encode(x, y_context, pad_features)
        return self.decoder(r[:, y_context.shape[1]:])

    # ------------------------------------------------------------------ analysis
    def mask_stack(self, n_context: int, n_rows: int) -> list[Mask]:
        """Row-level attention masks of the whole network, first stage first.

        ISAB blocks and the memory are written from context rows and read by every row, so at row
        level each is ``context_query(n_context)`` (a row reads the context rows and itself); the row
        interaction stays inside a row (``window(0)``); the ICL blocks use the split mask.
        """
        if not 1 <= n_context <= n_rows:
            raise TabzooInputError(f"need 1 <= n_context <= n_rows, got {n_context} and {n_rows}.")
        summary = context_query(n_context)
        stack: list[Mask] = [summary] * len(self.columns.isabs) + [window(0)]
        if self.memory is not None:
            stack.append(summary)
        stack += [context_query(n_context, query_sees_query=self.cfg.query_sees_query)] * len(self.icl)
        return stack

    def row_flops(self, n_features: int, n_rows: int = 1) -> float:
        """Analytic forward FLOPs of the row-interaction path (grouping + sparse encoders) for
        ``n_rows`` rows of ``n_features`` features; linear in ``n_features``."""
        cfg = self.cfg
        d = cfg.d
        total = 0.0
        for enc in self.rows.scales:
            k = -(-n_features // enc.scale)
            length = cfg.n_special + k
            group = 2 * 2 * n_features * d * d + (4 * n_features * d if cfg.pma_scope == "block" else 4 * k * n_features * d)
            keys = enc.mask.nnz(length)
            per_block = 2 * length * d * (4 * d + 2 * cfg.row_ff) + 4 * keys * d
            total += group + cfg.row_blocks * per_block
        return float(total * n_rows)


def build(config: dict[str, Any] | OrionConfig | str | None = None) -> OrionMSP:
    """Plugin ``build`` callable: an :class:`OrionMSP` from a config dict (``{"preset": "small", ...}``)."""
    return OrionMSP(config if config is not None else "small")
