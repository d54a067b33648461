"""tabzoo plugin entry point of tabzoo-npt: the ``npt`` architecture and its conformance case.

Only hook implementations live here; torch and the model are imported lazily inside them.
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import hookimpl, spec_from_config

from tabzoo_npt.capabilities import CAPABILITIES
from tabzoo_npt.config import PRESETS, NPTConfig


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``npt``."""
    register(spec_from_config(
        NPTConfig, name="npt", build="tabzoo_npt.model:build", preset="small", presets=PRESETS,
        exclude=("extra",), capabilities=CAPABILITIES,
        kind="row-attention",
        estimator="tabzoo_npt.estimators:NPTClassifier",
        regressor="tabzoo_npt.estimators:NPTRegressor",
        description="Non-Parametric Transformer (papers/002): alternating attention between datapoints and "
                    "between attributes, trained per table with stochastic masking; presets base, small, tiny",
    ))


@hookimpl
def tabzoo_conformance_cases(register: Any) -> None:
    """Register the ``npt`` conformance case (the tiny preset)."""
    from tabzoo_npt.conformance import make_case

    register(make_case())
