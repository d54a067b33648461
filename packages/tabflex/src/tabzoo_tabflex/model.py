"""The TabFlex network: TabPFN-style row tokens with non-causal linear attention.

Every row is one token. A row's token is ``x_encoder(x)`` (a linear layer over the features,
zero-padded to ``max_features``, NaN -> 0) plus, on context rows only, ``y_encoder(onehot(y))``.
``n_layers`` post-norm blocks follow (``x = LN(x + attn(x)); x = LN(x + relu_ffn(x))``) whose attention
is :func:`tabzoo.kernels.linear_attention`: feature map elu+1, a normaliser with ``eps``, and keys
and values taken from the context rows only, so context rows read context rows and query rows read
context rows (never each other). A final LayerNorm and a GELU decoder give ``max_classes`` logits per
query row; a task with ``k <= max_classes`` classes uses the first ``k`` of them.

Two ways to run it:

* :meth:`TabFlex.forward` - the in-context model protocol ``model(x, y_context) -> logits``; used in
  training, dispatches through the kernel registry.
* :meth:`TabFlex.encode_context` + :meth:`TabFlex.predict_query` - inference that computes each
  layer's context state ``S = sum_j phi(k_j) v_j^T``, ``z = sum_j phi(k_j)`` once (context rows are
  streamed in chunks too) and then streams query rows in chunks through all layers; both steps are
  the registry ops :func:`tabzoo.kernels.linear_attention_state` and
  :func:`tabzoo.kernels.linear_attention_read`, so backend choice applies here too. Memory is
  linear in the rows and bounded per chunk; results equal :meth:`forward` up to float rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from tabzoo import kernels
from tabzoo.errors import TabzooInputError
from tabzoo.nn import LabelEmbedding, MLPHead, TransformerBlock
from torch import nn

from tabzoo_tabflex.config import TabFlexConfig, get_config

__all__ = ["TabFlex", "ContextState", "build", "EPS", "DEFAULT_CHUNK"]

#: linear-attention normaliser epsilon; the same as :func:`tabzoo.kernels.linear_attention`'s default
EPS = 1e-6
#: rows per chunk in streamed inference
DEFAULT_CHUNK = 8192


@dataclass
class ContextState:
    """Per-layer summed context of a streamed TabFlex run.

    :param kv: one ``[B, H, Dh, Dh]`` fp32 tensor per layer, ``sum_j phi(k_j) v_j^T``.
    :param k_sum: one ``[B, H, Dh]`` fp32 tensor per layer, ``sum_j phi(k_j)``.
    :param n_context: number of context rows summed.
    """

    kv: list[torch.Tensor]
    k_sum: list[torch.Tensor]
    n_context: int

    def nbytes(self) -> int:
        """Memory held by the state (independent of the number of rows)."""
        return sum(t.numel() * t.element_size() for t in (*self.kv, *self.k_sum))


class TabFlex(nn.Module):
    """TabFlex in-context classifier network.

    :param config: a :class:`TabFlexConfig`, a preset name (``"S100"``, ``"L100"``, ``"H1K"``,
        ``"small"``, ``"tiny"``) or a dict (see :func:`tabzoo_tabflex.config.get_config`).

    Attributes of the in-context protocol: ``max_features``, ``max_classes``, ``task``.
    """

    task = "classification"
    architecture = "tabflex"

    def __init__(self, config: TabFlexConfig | str | dict[str, Any] = "small") -> None:
        super().__init__()
        cfg = get_config(config)
        self.cfg = cfg
        self.max_features, self.max_classes = cfg.max_features, cfg.max_classes
        d = cfg.d_model
        self.x_encoder = nn.Linear(cfg.max_features, d)
        self.y_encoder = LabelEmbedding(cfg.max_classes, d, kind="onehot")
        self.layers = nn.ModuleList(
            TransformerBlock(d, cfg.n_heads, cfg.d_ff, dropout=cfg.dropout, norm="post", activation="relu",
                             attention_kind=cfg.attention)
            for _ in range(cfg.n_layers)
        )
        self.final_norm = nn.LayerNorm(d)
        self.decoder = MLPHead(d, cfg.d_decoder, cfg.max_classes, activation="gelu", n_layers=2)

    @property
    def config(self) -> dict[str, Any]:
        """The config as a JSON-able dict (what checkpoints store; :func:`build` reads it back)."""
        return self.cfg.to_dict()

    # ------------------------------------------------------------------ helpers
    def _pad_features(self, x: torch.Tensor) -> torch.Tensor:
        """``[..., F]`` -> ``[..., max_features]``: NaN -> 0, zero padding."""
        f = x.shape[-1]
        if f > self.max_features:
            raise TabzooInputError(
                f"TabFlex({self.cfg.name}) reads at most {self.max_features} features, got {f}. Reduce them "
                "with tabzoo_tabflex.RandomProjection (TabFlexClassifier does this automatically) or pick "
                "a config with more features (H1K reads 1000)."
            )
        x = torch.nan_to_num(x.to(self.x_encoder.weight.dtype), nan=0.0, posinf=0.0, neginf=0.0)
        if f < self.max_features:
            x = F.pad(x, (0, self.max_features - f))
        return x

    def embed(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        """Row tokens.

        :param x: ``[B, N, F]`` rows, context rows first.
        :param y_context: ``[B, n_context]`` class indices (float or long) of the context rows.
        :return: ``[B, N, d_model]``.
        """
        n_context = y_context.shape[1]
        h = self.x_encoder(self._pad_features(x))
        return self.y_encoder.add_to(h, y_context.to(h.device), n_context)

    def _check(self, x: torch.Tensor, y_context: torch.Tensor) -> int:
        if x.dim() != 3 or y_context.dim() != 2 or x.shape[0] != y_context.shape[0]:
            raise TabzooInputError(
                f"TabFlex expects x [B, N, F] and y_context [B, n_context], got {tuple(x.shape)} and "
                f"{tuple(y_context.shape)}."
            )
        n_context = y_context.shape[1]
        if not 0 < n_context < x.shape[1] + 1:
            raise TabzooInputError(
                f"TabFlex needs 1 <= n_context <= N rows; got n_context={n_context} for N={x.shape[1]}."
            )
        return n_context

    def decode(self, h: torch.Tensor) -> torch.Tensor:
        """``[..., d_model]`` final tokens -> ``[..., max_classes]`` logits."""
        return self.decoder(self.final_norm(h))

    # ------------------------------------------------------------------ protocol
    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        """In-context prediction.

        :param x: ``[B, N, F]`` float rows (``F <= max_features``); the first ``n_context`` rows are context.
        :param y_context: ``[B, n_context]`` class indices of the context rows (query labels are never read).
        :return: ``[B, N - n_context, max_classes]`` logits of the query rows.
        """
        n_context = self._check(x, y_context)
        h = self.embed(x, y_context)
        for layer in self.layers:
            h = layer(h, n_context=n_context)
        return self.decode(h[:, n_context:])

    # ------------------------------------------------------------------ streamed inference
    def _block_with_state(self, layer: TransformerBlock, h: torch.Tensor, kv: torch.Tensor,
                          k_sum: torch.Tensor) -> torch.Tensor:
        """One post-norm block for rows ``h [B, n, d]`` reading a summed context ``kv``, ``k_sum``.

        The read goes through :func:`tabzoo.kernels.linear_attention_read`, so ``kernels.use(...)``
        and ``TABZOO_KERNELS`` choose its backend.
        """
        q = layer.attn.project_queries(layer.attention_input(h))
        a = kernels.linear_attention_read(q, kv, k_sum, eps=EPS)  # [B, H, n, Dh] in the dtype of q
        return layer.after_attention(h, layer.attn.merge_heads(a))

    def _state_of(self, layer: TransformerBlock, h: torch.Tensor,
                  w: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(S [B, H, Dh, Dh], z [B, H, Dh])`` fp32 of rows ``h`` (:func:`tabzoo.kernels.linear_attention_state`).

        With row weights ``w [B, n]``: ``S = sum_j w_j phi(k_j) v_j^T`` and ``z = sum_j w_j phi(k_j)`` (a row of
        weight 2 counts as that row twice), through the same registry op (``z`` as the state of the values ``w``).
        """
        k, v = layer.attn.project_keys_values(layer.attention_input(h))
        if w is None:
            return kernels.linear_attention_state(k, v)
        wv = w.to(v.dtype)[:, None, :, None]  # [B, 1, n, 1]
        kv, _ = kernels.linear_attention_state(k, v * wv)
        zw, _ = kernels.linear_attention_state(k, wv.expand(*v.shape[:3], 1).contiguous())
        return kv, zw[..., 0]

    def _require_linear(self) -> None:
        if self.cfg.attention != "linear":
            raise TabzooInputError(
                "streamed inference needs linear attention; this model uses softmax attention. "
                "Call the model directly (model(x, y_context)) instead."
            )

    @torch.no_grad()
    def encode_context(self, x_context: torch.Tensor, y_context: torch.Tensor,
                       chunk_size: int = DEFAULT_CHUNK, weights: torch.Tensor | None = None) -> ContextState:
        """Sum the context of every layer once, streaming the context rows in chunks.

        Memory: the ``[B, n_context, d_model]`` tokens of one layer plus one chunk's activations.

        :param x_context: ``[B, n_context, F]``.
        :param y_context: ``[B, n_context]`` class indices.
        :param chunk_size: rows per chunk.
        :param weights: optional ``[B, n_context]`` positive row weights (every layer's sums weight row ``j`` by
            ``weights[:, j]``, as if it were repeated that many times); ``None`` = all 1.
        :return: the :class:`ContextState` that :meth:`predict_query` reads.
        """
        self._require_linear()
        if x_context.dim() != 3 or y_context.shape != x_context.shape[:2]:
            raise TabzooInputError(
                f"encode_context expects x_context [B, n, F] and y_context [B, n], got {tuple(x_context.shape)} "
                f"and {tuple(y_context.shape)}."
            )
        n = x_context.shape[1]
        if n < 1:
            raise TabzooInputError("encode_context needs at least one context row.")
        if weights is not None and (weights.shape != y_context.shape or not bool(torch.isfinite(weights).all())
                                    or bool((weights <= 0).any())):
            raise TabzooInputError(
                f"encode_context weights must be finite, positive and shaped like y_context {tuple(y_context.shape)}; "
                f"got shape {tuple(weights.shape)}."
            )
        chunk = max(1, int(chunk_size))
        spans = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
        h = torch.empty(x_context.shape[0], n, self.cfg.d_model, dtype=self.x_encoder.weight.dtype,
                        device=x_context.device)
        for s, e in spans:  # filled in place: no second copy of the context tokens
            h[:, s:e] = self.embed(x_context[:, s:e], y_context[:, s:e])
        kvs, sums = [], []
        for layer in self.layers:
            kv = k_sum = None
            for s, e in spans:
                kv_c, ks_c = self._state_of(layer, h[:, s:e], None if weights is None else weights[:, s:e])
                kv = kv_c if kv is None else kv.add_(kv_c)
                k_sum = ks_c if k_sum is None else k_sum.add_(ks_c)
            assert kv is not None and k_sum is not None
            kvs.append(kv)
            sums.append(k_sum)
            for s, e in spans:  # in place: row i's new token depends only on row i and the sums
                h[:, s:e] = self._block_with_state(layer, h[:, s:e], kv, k_sum)
        return ContextState(kvs, sums, n)

    @torch.no_grad()
    def predict_query(self, x_query: torch.Tensor, state: ContextState,
                      chunk_size: int = DEFAULT_CHUNK) -> torch.Tensor:
        """Logits of query rows read against a summed context, in chunks of ``chunk_size`` rows.

        :param x_query: ``[B, n_query, F]``.
        :param state: from :meth:`encode_context` (same batch size).
        :return: ``[B, n_query, max_classes]`` logits (each row independent of the others).
        """
        self._require_linear()
        if x_query.dim() != 3 or x_query.shape[0] != state.kv[0].shape[0]:
            raise TabzooInputError(
                f"predict_query expects x_query [B={state.kv[0].shape[0]}, n, F], got {tuple(x_query.shape)}."
            )
        out = torch.empty(x_query.shape[0], x_query.shape[1], self.max_classes, dtype=self.x_encoder.weight.dtype,
                          device=x_query.device)
        chunk = max(1, int(chunk_size))
        for s in range(0, x_query.shape[1], chunk):
            h = self.x_encoder(self._pad_features(x_query[:, s:s + chunk]))
            for layer, kv, k_sum in zip(self.layers, state.kv, state.k_sum, strict=True):
                h = self._block_with_state(layer, h, kv, k_sum)
            out[:, s:s + chunk] = self.decode(h)
        return out

    def predict_streamed(self, x_context: torch.Tensor, y_context: torch.Tensor, x_query: torch.Tensor,
                         chunk_size: int = DEFAULT_CHUNK) -> torch.Tensor:
        """:meth:`encode_context` then :meth:`predict_query`; ``[B, n_query, max_classes]`` logits."""
        return self.predict_query(x_query, self.encode_context(x_context, y_context, chunk_size), chunk_size)

    def flops_per_row(self) -> float:
        """Analytic forward FLOPs per row (matmuls only); TabFlex's cost is this times the rows."""
        c = self.cfg
        d, dh = c.d_model, c.d_model // c.n_heads
        per_layer = 2 * (4 * d * d + 2 * d * c.d_ff) + 2 * 2 * c.n_heads * dh * (dh + 1)
        return float(2 * c.max_features * d + c.n_layers * per_layer + 2 * (d * c.d_decoder + c.d_decoder * c.max_classes))


def build(config: dict[str, Any] | TabFlexConfig | str | None = None) -> TabFlex:
    """Plugin ``build`` callable: a TabFlex from a config dict (``{"preset": "small", ...}``)."""
    return TabFlex(config if config is not None else "small")
