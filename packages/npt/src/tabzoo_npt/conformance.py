"""The ``npt`` conformance case: a tiny NPT on the kit's "rows" protocol.

The kit calls ``forward(model, x [B, N, F], y [B, N], query_mask [B, N])``; the case turns that
into NPT cells (``F`` numeric features and one numeric target attribute), hides the targets of
the query rows, and isolates the query rows as the fixed-context prediction does. The output is
the target prediction of every row ``[B, N, 1]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tabzoo.testing.case import ConformanceCase

from tabzoo_npt.capabilities import CAPABILITIES
from tabzoo_npt.model import NPT, build

__all__ = ["make_case", "make_model", "forward", "N_FEATURES", "CONFIG"]

N_FEATURES = 4
CONFIG_LAYERS = 4  # the tiny preset's n_layers (ABD, ABA, ABD, ABA); ABA mixes no rows
CONFIG: dict[str, Any] = {"preset": "tiny", "cardinalities": [0] * (N_FEATURES + 1)}


def make_model(seed: int) -> NPT:
    """A tiny NPT with weights drawn from ``seed`` (the global RNG is left as it was)."""
    return _seeded(CONFIG, seed)


def make_sized(seed: int, sizes: Mapping[str, Any]) -> NPT:
    """:func:`make_model` for ``sizes["n_features"]`` numeric features (the kit's size search)."""
    return _seeded({**CONFIG, "cardinalities": [0] * (int(sizes["n_features"]) + 1)}, seed)


def _seeded(config: dict[str, Any], seed: int) -> NPT:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build(config)
    return model.eval()


def forward(model: NPT, x: torch.Tensor, y: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Rows protocol -> NPT: ``[B, N, F]`` features + ``[B, N]`` targets, query targets hidden."""
    from tabzoo.errors import TabzooInputError

    if not all(isinstance(t, torch.Tensor) for t in (x, y, query_mask)):
        raise TabzooInputError(
            "x, y and query_mask must be torch tensors (numeric labels); encode string or mixed labels first."
        )
    if x.dim() != 3 or y.shape != x.shape[:2] or query_mask.shape != y.shape or query_mask.dtype != torch.bool:
        raise TabzooInputError(
            "x must be [batch, rows, features] with y and a bool query_mask [batch, rows]; fix the shapes."
        )
    if bool(query_mask.all(dim=1).any()):
        raise TabzooInputError(
            "every row of an episode is masked, so there is no context to predict from; leave at least one "
            "row's target visible."
        )
    values = torch.cat([x, y[..., None].to(x.dtype)], dim=-1)
    mask = torch.zeros(values.shape, dtype=torch.bool, device=x.device)
    mask[..., -1] = query_mask
    return model(values, mask, query_mask)[..., -1, :1]


def _masks(n_context: int, n_rows: int) -> list[Any]:
    from tabzoo.masks import context_query

    n_abd = (CONFIG_LAYERS + 1) // 2
    return [context_query(n_context)] * n_abd



def make_case() -> ConformanceCase:
    """The registered case."""
    return ConformanceCase(
        name="npt",
        make_model=make_model,
        capabilities=CAPABILITIES,
        config=CONFIG,
        protocol="rows",
        forward=forward,
        masks=_masks,
        n_features=N_FEATURES,
        n_classes=0,
        max_features=64,  # the size search builds NPTs of 1..64 features (make_sized)
        make_sized=make_sized,
        max_rows=24,
        description="tiny NPT, fixed-context mode: query rows read the context and themselves",
    )
