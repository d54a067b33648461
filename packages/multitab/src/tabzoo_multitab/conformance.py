"""The ``multitab`` conformance case: a tiny MultiTab-Net with a binary, a 3-class and a
regression head, held to the rows protocol.

Rows flagged in ``query_mask`` are prediction rows: they read the non-query rows and
themselves; non-query (context) rows read only each other. MultiTab-Net never reads labels, so
the label-leak check holds by construction; ``y`` is still validated (a NaN label in a visible
row is bad input). The output per row is the concatenation of the task heads, ``[B, N, 5]``.
"""

from __future__ import annotations

from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from tabzoo.masks import Mask, context_query
from tabzoo.testing.case import ConformanceCase

from tabzoo_multitab.capabilities import CAPABILITIES
from tabzoo_multitab.config import MultiTabConfig
from tabzoo_multitab.model import MultiTabNet

__all__ = ["CONFIG", "make_case", "make_model", "rows_forward", "row_masks"]

CONFIG: dict[str, Any] = MultiTabConfig(
    n_num=4, tasks=(("t_bin", "binary", 2), ("t_multi", "multiclass", 3), ("t_reg", "regression", 0)),
    d_embed=8, n_layers=2, n_heads=2, row_heads=2, head_hidden=8, dropout=0.0,
).to_dict()


def make_model(seed: int) -> MultiTabNet:
    """A tiny MultiTab-Net with weights drawn from ``seed`` (the global RNG is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = MultiTabNet(MultiTabConfig.from_dict(CONFIG))
    return model.eval()


def rows_forward(model: MultiTabNet, x: torch.Tensor, y: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Rows protocol: ``x [B, N, F]``, ``y [B, N]``, ``query_mask [B, N]`` -> ``[B, N, sum(n_out)]``."""
    if not all(isinstance(t, torch.Tensor) for t in (x, y, query_mask)):
        raise TabzooInputError(
            "x, y and query_mask must be torch tensors (float x and y, bool query_mask); convert labels of "
            "mixed types (e.g. str and int) to numbers first."
        )
    if not y.is_floating_point() or query_mask.dtype != torch.bool:
        raise TabzooInputError(f"y must be float and query_mask bool, got {y.dtype} and {query_mask.dtype}; convert them.")
    if x.dim() != 3:
        raise TabzooInputError(f"x must be [batch, rows, features], got shape {tuple(x.shape)}; add the batch axis.")
    if y.shape != x.shape[:2] or query_mask.shape != y.shape:
        raise TabzooInputError(
            f"y {tuple(y.shape)} and query_mask {tuple(query_mask.shape)} must both be [batch, rows] = {tuple(x.shape[:2])}."
        )
    if bool(query_mask.all(dim=1).any()):
        raise TabzooInputError("a set has every row flagged as a query (empty context); keep at least one context row.")
    if not torch.isfinite(torch.where(query_mask, torch.zeros_like(y), y)).all():
        raise TabzooInputError("y holds NaN or inf in a visible (non-query) row; impute it or flag the row as a query.")
    return model(x, None, query_mask=query_mask)


def row_masks(n_context: int, n_rows: int) -> list[Mask]:
    """Inter-sample masks of the stack over rows (context first), for the static leak proofs."""
    return [context_query(n_context)] * CONFIG["n_layers"]


def make_case() -> ConformanceCase:
    """The registered case."""
    return ConformanceCase(
        name="multitab",
        make_model=make_model,
        capabilities=CAPABILITIES,
        config=CONFIG,
        protocol="rows",
        forward=rows_forward,
        masks=row_masks,
        n_features=4,
        n_classes=0,
        max_rows=24,
        description="tiny MultiTab-Net: T-/->T task tokens, inter-sample attention, query rows read context + self",
    )
