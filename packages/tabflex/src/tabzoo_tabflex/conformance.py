"""The ``tabflex`` conformance case: a tiny TabFlex held to the properties it claims.

Claims: in-context, context-order invariance, query equivariance and independence (query rows
read context rows only), no context<-query leak, no label leak, determinism, checkpoint round
trip, bad input, and linear cost in rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ConformanceCase, ScalingAxis

from tabzoo_tabflex.capabilities import CAPABILITIES
from tabzoo_tabflex.config import CONFIGS
from tabzoo_tabflex.model import TabFlex

__all__ = ["context_repr", "forward", "make_case", "make_model", "make_retrieval_case", "retrieval_forward"]

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


# -- the retrieval context (issue 28 item 2) through the estimator ---------------------------------------
def retrieval_forward(model: Any, x: Any, y: Any, n_context: int) -> torch.Tensor:
    """Log-probabilities ``[B, n_query, max_classes]`` of the query rows, each batch item fitted on its own
    context through the estimator with local contexts (classes absent from a context: log 1e-9)."""
    from tabzoo.table.validation import check_in_context_call

    y_context = check_in_context_call(x, y, n_context, model.max_classes)
    x = torch.as_tensor(x)
    if x.shape[-1] > model.max_features:  # the estimator would subsample a wide table (its wide_mode); the
        # model under test takes at most max_features columns, as the registered case's forward says
        raise TabzooInputError(f"{x.shape[-1]} features > max_features={model.max_features} of this model; "
                               "pass at most that many columns (the estimator's wide_mode reduces wider tables).")
    out = torch.full((x.shape[0], x.shape[1] - n_context, model.max_classes), float(np.log(1e-9)))
    from tabzoo_tabflex.estimators import TabFlexClassifier

    class _Given(TabFlexClassifier):
        def _load_model(self) -> torch.nn.Module:  # the kit's tiny TabFlex, not a shipped checkpoint
            return model

    for b in range(x.shape[0]):
        est = _Given(checkpoint="tabflex-small", n_estimators=1, context_strategy="local", local_size=16,
                     class_balance=0, feature_transforms=("none",), device="cpu", inference_precision="fp32")
        est.fit(x[b, :n_context].numpy().astype(np.float64), y_context[b].numpy().astype(np.int64))
        if x.shape[1] > n_context:
            p = est.predict_proba(x[b, n_context:].numpy().astype(np.float64))
            cols = torch.as_tensor(est.classes_.astype(np.int64))
            out[b][:, cols] = torch.log(torch.as_tensor(p, dtype=torch.float32).clamp_min(1e-9))
    return out


def make_retrieval_case() -> ConformanceCase:
    """The retrieval-context case (run by ``tests/test_retrieval_conformance.py``; not registered: it fits an
    estimator per call, too slow for ``tabzoo conformance all``)."""
    return ConformanceCase(
        name="tabflex-retrieval",
        make_model=make_model,
        capabilities=(cap.IN_CONTEXT_DEFAULTS - {cap.BATCH_INDEPENDENCE}) | {cap.MISSING_VALUES},
        config={"preset": "tiny", "context_strategy": "local", "local_size": 16},
        protocol="in-context",
        forward=retrieval_forward,
        n_features=4,
        n_classes=3,
        max_rows=40,
        factory="tabzoo_tabflex.conformance:make_retrieval_case",
        description="tiny TabFlex through the estimator with local (retrieval) contexts of 16-row clusters",
    )
