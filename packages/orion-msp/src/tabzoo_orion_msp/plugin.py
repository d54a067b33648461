"""tabzoo plugin entry point of tabzoo-orion-msp: the ``orion-msp`` architecture and its conformance cases.

Only hook implementations live here; torch and the model are imported lazily inside them.
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import ArchitectureSpec, hookimpl

from tabzoo_orion_msp.capabilities import CAPABILITIES

# the plugin's config form: a preset plus per-field overrides (None = the preset's value)
_CONFIG_KEYS = (
    "name", "max_features", "max_classes", "d", "col_inducing", "col_heads", "col_blocks", "col_ff", "scales",
    "n_cls", "n_global", "row_heads", "row_blocks", "row_ff", "window", "random_links", "link_seed", "rope_base",
    "pma_scope", "memory_slots", "memory_heads", "memory_write", "memory_read", "memory_gate", "centre_rows", "icl_blocks", "icl_heads",
    "icl_ff", "query_sees_query", "temperature",
)
DEFAULT_CONFIG: dict[str, Any] = {"preset": "small", **dict.fromkeys(_CONFIG_KEYS)}


def _build(config: dict[str, Any]) -> Any:
    from tabzoo_orion_msp.model import build

    return build(config)


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``orion-msp``."""
    register(ArchitectureSpec(
        name="orion-msp",
        build=_build,
        default_config=DEFAULT_CONFIG,
        capabilities=CAPABILITIES,
        kind="in-context",
        estimator="tabzoo_orion_msp.estimators:OrionMSPClassifier",
        pretrained=("orion-msp-small",),
        description="ORION-MSP (papers/000): column ISAB, multi-scale block-sparse row attention, "
                    "leak-free Perceiver memory, split-masked ICL; presets paper, small (shipped), tiny",
    ))


@hookimpl
def tabzoo_conformance_cases(register: Any) -> None:
    """Register the ``orion-msp`` conformance case (the tiny preset, default query masking)."""
    from tabzoo_orion_msp.conformance import make_case

    register(make_case())
