"""tabzoo plugin entry point of tabzoo-multitab: the ``multitab`` architecture and its conformance case.

Only hook implementations live here; torch and the model are imported lazily inside them.
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import ArchitectureSpec, hookimpl

from tabzoo_multitab.capabilities import CAPABILITIES

DEFAULT_CONFIG: dict[str, Any] = {
    "n_num": 4, "cat_cardinalities": [], "tasks": [["task0", "binary", 2], ["task1", "regression", 0]],
    "d_embed": 16, "n_layers": 2, "n_heads": 4, "row_heads": 4, "ff_mult": 2, "row_ff_mult": 1,
    "mask": "T-/->T", "inter_sample": True, "head_hidden": 32, "dropout": 0.1,
}


def _build(config: dict[str, Any]) -> Any:
    from tabzoo_multitab.model import build

    return build(config)


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``multitab``."""
    register(ArchitectureSpec(
        name="multitab",
        build=_build,
        default_config=DEFAULT_CONFIG,
        capabilities=CAPABILITIES,
        kind="multitask",
        estimator="tabzoo_multitab.estimator:MultiTabEstimator",
        description="MultiTab-Net (papers/001): task tokens, T-/->T multitask masked inter-feature "
                    "attention, inter-sample attention with a fixed prediction context",
    ))


@hookimpl
def tabzoo_conformance_cases(register: Any) -> None:
    """Register the ``multitab`` conformance case (rows protocol, mixed tasks)."""
    from tabzoo_multitab.conformance import make_case

    register(make_case())
