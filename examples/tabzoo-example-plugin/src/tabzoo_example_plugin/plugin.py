"""The plugin's config and registration: tabzoo loads ``plugin`` through the ``tabzoo`` entry point.

Keep it cheap to import: no torch, no model code here (``build`` and the conformance case are
named by path and imported when a user builds the model or runs the kit).
"""

from __future__ import annotations

from dataclasses import dataclass

from tabzoo.plugins import ModelPlugin, spec_from_config

CAPABILITIES = frozenset({
    "in_context", "context_order_invariance", "query_equivariance", "query_independence",
    "no_context_query_leak", "label_leak", "linear_in_features", "kernel_equivalence",
    "determinism", "checkpoint_roundtrip", "bad_input", "batch_independence",
})


@dataclass(frozen=True)
class KNNConfig:
    """The model's config (``tabzoo plugins`` and ``spec.config_fields`` show these docs).

    :param max_features: widest table; narrower ones are zero-padded.
    :param max_classes: classes of the output head.
    :param d: key dimension of the random projection.
    :param temperature: softmax temperature (smaller = closer to 1-nearest-neighbour).
    :param seed: seed of the projection.
    """

    max_features: int = 8
    max_classes: int = 10
    d: int = 16
    temperature: float = 1.0
    seed: int = 0


plugin = ModelPlugin(
    spec_from_config(
        KNNConfig, name="example_knn", build="tabzoo_example_plugin.model:build", capabilities=CAPABILITIES,
        kind="in-context", estimator="tabzoo_example_plugin.estimators:KNNAttentionEstimator",
        description="kNN-style softmax attention of query rows over context rows; needs no training",
    ),
    cases="tabzoo_example_plugin.conformance:example_case",
)
