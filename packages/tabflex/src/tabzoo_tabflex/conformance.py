"""The ``tabflex`` conformance case: a tiny TabFlex held to the properties it claims.

Claims: in-context, context-order invariance, query equivariance and independence (query rows
read context rows only), no context<-query leak, no label leak, determinism, checkpoint round
trip, bad input, and linear cost in rows.
"""

from __future__ import annotations

from typing import Any

import torch
from tabzoo.testing.case import ConformanceCase, ScalingAxis

from tabzoo_tabflex.capabilities import CAPABILITIES
from tabzoo_tabflex.config import CONFIGS
from tabzoo_tabflex.model import TabFlex

__all__ = ["make_case", "make_model", "context_repr", "forward"]

CONFIG = CONFIGS["tiny"]


def make_model(seed: int) -> TabFlex:
    """A tiny TabFlex with weights drawn from ``seed`` (independent of the global RNG)."""
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = TabFlex(CONFIG)
    finally:
        torch.random.set_rng_state(state)
    return model.eval()


def context_repr(model: TabFlex, x: torch.Tensor, y: torch.Tensor, n_context: int) -> torch.Tensor:
    """Final tokens of the context rows ``[B, n_context, d_model]``."""
    h = model.embed(x, y[:, :n_context])
    for layer in model.layers:
        h = layer(h, n_context=n_context)
    return h[:, :n_context]


def forward(model: TabFlex, x: Any, y: Any, n_context: int) -> torch.Tensor:
    """The call under test: ``TabFlex.forward(x, y[:, :n_context])`` behind the in-context input
    validation of :mod:`tabzoo.table.validation` (what ``TabFlexClassifier`` checks before it
    calls the model; ``TabFlex.forward`` itself checks shapes only). Query labels are never read."""
    from tabzoo.table.validation import check_in_context_call

    y_context = check_in_context_call(x, y, n_context, model.max_classes)
    return model(x, y_context)


def _rows_inputs(n: int, seed: int) -> tuple[Any, ...]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, 4, generator=g)
    n_context = n // 2
    y = torch.randint(0, 3, (1, n), generator=g).float()
    return x, y, n_context


def make_case() -> ConformanceCase:
    """The registered case."""
    return ConformanceCase(
        name="tabflex",
        make_model=make_model,
        capabilities=CAPABILITIES,
        config={"preset": "tiny"},
        protocol="in-context",
        context_repr=context_repr,
        forward=forward,
        n_features=4,
        n_classes=3,
        max_features=16,  # the tiny preset's x-encoder width and class limit: the kit's size search
        max_classes=10,  # draws up to these (features to 16, classes to 10)
        max_rows=24,
        scaling_axes={"linear_in_rows": ScalingAxis(make_inputs=_rows_inputs, base_n=256)},
        description="tiny TabFlex: linear attention, context-only keys",
    )
