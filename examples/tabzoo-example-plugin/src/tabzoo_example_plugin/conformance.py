"""The conformance case: a small config, the callable under test, the capabilities claimed."""

from __future__ import annotations

from typing import Any

from tabzoo.testing import ConformanceCase, ScalingAxis
from tabzoo.testing import capabilities as cap

CONFIG = {"max_features": 6, "max_classes": 4, "d": 8, "temperature": 1.0}


def _make_model(seed: int) -> Any:
    from tabzoo_example_plugin.model import KNNAttentionClassifier

    return KNNAttentionClassifier(**CONFIG, seed=seed)


def _context_repr(model: Any, x: Any, y: Any, n_context: int) -> Any:
    """What context rows contribute: their keys ``[B, n_context, d]`` (they never see query rows)."""
    return model.keys(x)[:, :n_context]


def _masks(n_context: int, n_rows: int) -> list[Any]:
    """One attention layer over row positions: query rows read context rows (and keep themselves)."""
    from tabzoo.masks import context_query

    return [context_query(n_context)]


def _features_model(n: int, seed: int) -> Any:
    from tabzoo_example_plugin.model import KNNAttentionClassifier

    return KNNAttentionClassifier(**{**CONFIG, "max_features": n}, seed=seed)


def _features_inputs(n: int, seed: int) -> tuple[Any, ...]:
    """``x [1, 48, n]``, labels of all 48 rows, 32 context rows: only the feature count grows."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 48, n, generator=g)
    y = torch.remainder(torch.arange(48, dtype=torch.float32), CONFIG["max_classes"])[None]
    return x, y, 32


def example_case() -> ConformanceCase:
    return ConformanceCase(
        name="example",
        make_model=_make_model,
        capabilities=cap.IN_CONTEXT_DEFAULTS | {cap.NO_CONTEXT_QUERY_LEAK, cap.LINEAR_IN_FEATURES, cap.KERNEL_EQUIVALENCE},
        config=CONFIG,
        context_repr=_context_repr,
        masks=_masks,
        n_features=5,
        n_classes=3,
        scaling_axes={cap.LINEAR_IN_FEATURES: ScalingAxis(_features_inputs, base_n=16, make_model=_features_model)},
        kernel_ops=("masked_attention",),
        description="kNN-style attention classifier of tabzoo-example-plugin",
        architecture="example_knn",  # its ArchitectureSpec: the capabilities must be the same set
    )
