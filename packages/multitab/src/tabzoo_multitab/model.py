"""MultiTab-Net (papers/001): feature tokens + one task token per task, encoder blocks of
inter-feature attention (under a multitask mask from :mod:`tabzoo.masks`) then inter-sample
attention over flattened rows, and one MLP head per task. By default (``skip_hidden > 0``, not in
the paper) an MLP on the row's flattened feature tokens is added to the task tokens before the
heads (:class:`~tabzoo_multitab.config.MultiTabConfig`).

Rows attend to rows only through the inter-sample attention. Its row mask is:

* training (``n_context=None``, no ``query_mask``): every row of the set reads every row;
* prediction (``n_context=k``): :func:`tabzoo.masks.context_query` -- the first ``k`` rows (a fixed,
  seeded context of training rows) read only each other; every later (query) row reads the
  context and itself, so a query row's output never depends on the other query rows;
* rows protocol (``query_mask [B, N]``): the same rule for rows flagged as queries anywhere.
"""

from __future__ import annotations

from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from tabzoo.masks import Mask, context_query, full, task_tokens
from tabzoo.nn import TransformerBlock
from torch import nn

from tabzoo_multitab.attention import short_keys
from tabzoo_multitab.config import MultiTabConfig
from tabzoo_multitab.dropout import use_word_dropout
from tabzoo_multitab.embedding import FeatureEmbedding
from tabzoo_multitab.heads import TaskHeads

__all__ = ["MultiTabNet", "EncoderBlock", "PREDICT_CHUNK", "feature_mask", "row_mask", "build"]


def feature_mask(cfg: MultiTabConfig) -> Mask:
    """The inter-feature mask over ``d`` feature tokens then ``t`` task tokens."""
    if cfg.mask == "none":
        return full()
    return task_tokens(cfg.n_features, cfg.n_task_tokens, cfg.mask)


#: query rows per prediction pass (:meth:`MultiTabNet.predict`). 1,024 since 2026-11-29 (512 before):
#: a validation split of 513-1,024 rows (600 in ``benchmarks/multitab_epoch.py``) takes one pass, so
#: its 256-row context is encoded once per epoch, not twice (issue 26 item 4)
PREDICT_CHUNK = 1024


def row_mask(n_rows: int, n_context: int | None, query_mask: torch.Tensor | None) -> Mask | torch.Tensor | None:
    """The inter-sample mask: ``None`` (all rows read all rows), a :class:`Mask`, or a bool
    ``[B, N, N]`` tensor built from ``query_mask [B, N]`` (True = query row)."""
    if query_mask is not None:
        eye = torch.eye(n_rows, dtype=torch.bool, device=query_mask.device)
        return (~query_mask)[:, None, :] | eye
    if n_context is not None and n_context < n_rows:
        return context_query(n_context)
    return None


class EncoderBlock(nn.Module):
    """Inter-feature block ``[B*N, d+t, e]`` then inter-sample block ``[B, N, (d+t)*e]`` (pre-norm each).

    With ``cfg.row_dim = r > 0`` the inter-sample block runs at width ``r``: ``x + up(block(down(LN(x))))``
    for the flattened rows ``x [B, N, (d+t)*e]`` (``down``/``up`` are per-row linear maps, so rows
    still meet only inside the attention, under the same row mask)."""

    def __init__(self, cfg: MultiTabConfig, first: bool = False) -> None:
        super().__init__()
        e = cfg.d_embed
        self.feature = TransformerBlock(e, cfg.n_heads, cfg.ff_mult * e, dropout=cfg.dropout)
        if first:  # as in FT-Transformer: the raw embeddings enter the first attention un-normalised
            self.feature.norm1 = nn.Identity()
        r = cfg.row_inner
        self.rows = (TransformerBlock(r, cfg.row_heads, cfg.row_ff_mult * r, dropout=cfg.dropout)
                     if cfg.inter_sample else None)
        self.row_down: nn.Module | None = None
        self.row_up: nn.Module | None = None
        if cfg.inter_sample and cfg.row_dim:
            self.row_down = nn.Sequential(nn.LayerNorm(cfg.row_width), nn.Linear(cfg.row_width, r))
            self.row_up = nn.Linear(r, cfg.row_width)

    def forward(self, h: torch.Tensor, fmask: Mask, rmask: Mask | torch.Tensor | None) -> torch.Tensor:
        """:param h: ``[B, N, d+t, e]``. :return: same shape."""
        b, n, k, e = h.shape
        h = self.feature(h.reshape(b * n, k, e), mask=fmask).reshape(b, n, k, e)
        if self.rows is None:
            return h
        x = h.reshape(b, n, k * e)
        if self.row_down is None or self.row_up is None:
            return self.rows(x, mask=rmask).reshape(b, n, k, e)
        return (x + self.row_up(self.rows(self.row_down(x), mask=rmask))).reshape(b, n, k, e)


class MultiTabNet(nn.Module):
    """MultiTab-Net.

    :param cfg: a :class:`MultiTabConfig` (or its dict form).

    ``forward(x_num [B, N, n_num], x_cat [B, N, n_cat] | None, n_context=None, query_mask=None)``
    returns ``[B, N, sum(task.n_out)]``; :meth:`split` cuts it per task. 2-D inputs ``[N, F]`` are
    treated as one set (``B = 1``) and the batch axis is dropped from the output.
    """

    def __init__(self, cfg: MultiTabConfig | dict[str, Any]) -> None:
        super().__init__()
        self.cfg = cfg if isinstance(cfg, MultiTabConfig) else MultiTabConfig.from_dict(cfg)
        c = self.cfg
        self.embed = FeatureEmbedding(c.n_num, c.cat_cardinalities, c.d_embed, numeric=c.num_embedding,
                                      n_frequencies=c.plr_frequencies, sigma=c.plr_sigma)
        self.task_tokens = nn.Parameter(torch.randn(c.n_task_tokens, c.d_embed) * c.d_embed**-0.5)
        self.blocks = nn.ModuleList(EncoderBlock(c, first=i == 0) for i in range(c.n_layers))
        self.norm = nn.LayerNorm(c.d_embed)
        self.heads = TaskHeads(c.d_embed, c.head_hidden, [t.n_out for t in c.tasks])  # one MLP per task, stacked
        self._fmask = feature_mask(c)
        # wide-and-deep skip path (cfg.skip_hidden > 0; not in the paper): flattened feature tokens -> task tokens
        self.skip: nn.Sequential | None = None
        if c.skip_hidden:
            widths = [c.n_features * c.d_embed] + [c.skip_hidden] * c.skip_layers
            layers: list[nn.Module] = []
            for a, b in zip(widths[:-1], widths[1:], strict=True):
                layers += [nn.Linear(a, b), nn.GELU(), nn.Dropout(c.dropout)]
            self.skip = nn.Sequential(*layers, nn.Linear(c.skip_hidden, c.n_task_tokens * c.d_embed))
        if c.dropout_sites == "hidden":  # no dropout on the residual branches (attention and feed-forward outputs)
            for block in self.blocks:
                for tb in (block.feature, block.rows):
                    if tb is not None:
                        tb.attn.dropout, tb.dropout = nn.Identity(), nn.Identity()
        if c.dropout_masks == "words":  # every dropout site draws its masks from 16-bit random words
            use_word_dropout(self)

    @property
    def config(self) -> dict[str, Any]:
        return self.cfg.to_dict()

    @property
    def tasks(self) -> tuple:
        return self.cfg.tasks

    def split(self, out: torch.Tensor) -> list[torch.Tensor]:
        """``[..., sum(n_out)]`` -> one ``[..., n_out]`` per task."""
        return list(torch.split(out, [t.n_out for t in self.cfg.tasks], dim=-1))

    def encode(self, x_num: torch.Tensor, x_cat: torch.Tensor | None = None, n_context: int | None = None,
               query_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Tokens after the encoder: ``[B, N, d + t, e]``."""
        return self._encode(self._embed(x_num, x_cat, n_context, query_mask), n_context, query_mask)

    def _embed(self, x_num: torch.Tensor, x_cat: torch.Tensor | None, n_context: int | None,
               query_mask: torch.Tensor | None) -> torch.Tensor:
        """Checked inputs -> feature tokens ``[B, N, d, e]``."""
        if x_num.dim() != 3:
            raise TabzooInputError(f"x_num must be [batch, rows, features], got shape {tuple(x_num.shape)}.")
        b, n = x_num.shape[:2]
        if n < 1:
            raise TabzooInputError("x_num has no rows; pass at least one row.")
        if query_mask is not None and (query_mask.dtype != torch.bool or query_mask.shape != (b, n)):
            raise TabzooInputError(f"query_mask must be bool [batch={b}, rows={n}], got {query_mask.dtype} {tuple(query_mask.shape)}.")
        if n_context is not None and not 0 < n_context <= n:
            raise TabzooInputError(f"n_context={n_context} must be in 1..{n} (the rows passed).")
        return self.embed(x_num, x_cat)

    def _encode(self, emb: torch.Tensor, n_context: int | None, query_mask: torch.Tensor | None) -> torch.Tensor:
        """The encoder on feature tokens ``emb [B, N, d, e]``: ``[B, N, d + t, e]``."""
        b, n = emb.shape[:2]
        h = torch.cat([emb, self.task_tokens.expand(b, n, -1, -1)], dim=2)
        rmask: Mask | torch.Tensor | None = row_mask(n, n_context, query_mask)
        if self.cfg.row_scope == "self":  # each row reads only itself
            rmask = torch.eye(n, dtype=torch.bool, device=emb.device).expand(b, n, n)
        with short_keys():  # the inter-feature attention's short key axis runs on tabzoo_multitab.attention's backend
            for block in self.blocks:
                h = block(h, self._fmask, rmask)
        return h

    def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor | None = None, n_context: int | None = None,
                query_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Per-task outputs concatenated: ``[B, N, sum(n_out)]`` (logits, or standardised regression values)."""
        squeeze = x_num.dim() == 2
        if squeeze:
            x_num = x_num.unsqueeze(0)
            x_cat = x_cat.unsqueeze(0) if x_cat is not None else None
            query_mask = query_mask.unsqueeze(0) if query_mask is not None else None
        emb = self._embed(x_num, x_cat, n_context, query_mask)  # [B, N, d, e]
        h = self.norm(self._encode(emb, n_context, query_mask)[:, :, self.cfg.n_features:])  # [B, N, t, e]
        if self.skip is not None:  # the wide-and-deep skip path, per row
            h = h + self.skip(emb.flatten(-2)).unflatten(-1, (self.cfg.n_task_tokens, self.cfg.d_embed))
        if self.cfg.task_tokens == "single":  # every head reads the one shared token
            h = h.expand(-1, -1, self.cfg.n_tasks, -1)
        out = self.heads(h)
        return out[0] if squeeze else out

    @torch.no_grad()
    def predict(self, x_num: torch.Tensor, x_cat: torch.Tensor | None, context: tuple[torch.Tensor, torch.Tensor | None] | None,
                chunk: int = PREDICT_CHUNK) -> torch.Tensor:
        """Outputs ``[N, sum(n_out)]`` of query rows ``x_num [N, F]``, each read against the fixed
        ``context = (ctx_num [K, F], ctx_cat)``; independent of how the query rows are chunked (up
        to float rounding). Each chunk encodes the context again, so ``chunk`` (:data:`PREDICT_CHUNK`)
        trades memory for passes."""
        outs = []
        for s in range(0, x_num.shape[0], chunk):
            qn, qc = x_num[s:s + chunk], (x_cat[s:s + chunk] if x_cat is not None else None)
            if context is None:
                outs.append(self(qn[:, None], qc[:, None] if qc is not None else None)[:, 0])
                continue
            cn, cc = context
            xn = torch.cat([cn, qn])
            xc = torch.cat([cc, qc]) if cc is not None and qc is not None else None
            outs.append(self(xn, xc, n_context=cn.shape[0])[cn.shape[0]:])
        return torch.cat(outs) if outs else x_num.new_zeros(0, sum(t.n_out for t in self.cfg.tasks))


def build(config: dict[str, Any]) -> MultiTabNet:
    """Plugin builder: a :class:`MultiTabNet` from the dict form of :class:`MultiTabConfig`."""
    return MultiTabNet(MultiTabConfig.from_dict(config))
