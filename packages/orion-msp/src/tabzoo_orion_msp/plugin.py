"""tabzoo plugin entry point of tabzoo-orion-msp: the ``orion-msp`` architecture and its conformance cases.

Only hook implementations live here; torch and the model are imported lazily inside them.
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import hookimpl, spec_from_config

from tabzoo_orion_msp.capabilities import CAPABILITIES
from tabzoo_orion_msp.config import CONFIGS, OrionConfig


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``orion-msp``."""
    register(spec_from_config(
        OrionConfig, name="orion-msp", build="tabzoo_orion_msp.model:build", preset="small", presets=CONFIGS,
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
