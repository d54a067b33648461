"""Hook implementations only: tabzoo loads this module through the ``tabzoo`` entry point.

Keep it cheap to import: no torch, no model code at module level (they load inside the hooks'
callables, when a user actually builds the model or runs the kit).
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import ArchitectureSpec, hookimpl

CAPABILITIES = frozenset({
    "in_context", "context_order_invariance", "query_equivariance", "query_independence",
    "no_context_query_leak", "label_leak", "linear_in_features", "kernel_equivalence",
    "determinism", "checkpoint_roundtrip", "bad_input", "batch_independence",
})
DEFAULT_CONFIG = {"max_features": 8, "max_classes": 10, "d": 16, "temperature": 1.0, "seed": 0}


def _build(config: dict[str, Any]) -> Any:
    from tabzoo_example_plugin.model import KNNAttentionClassifier

    return KNNAttentionClassifier(**config)


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    register(ArchitectureSpec(
        name="example_knn",
        build=_build,
        default_config=DEFAULT_CONFIG,
        capabilities=CAPABILITIES,
        kind="in-context",
        estimator="tabzoo_example_plugin.estimators:KNNAttentionEstimator",
        description="kNN-style softmax attention of query rows over context rows; needs no training",
    ))


@hookimpl
def tabzoo_conformance_cases(register: Any) -> None:
    from tabzoo_example_plugin.conformance import example_case

    register(example_case())
