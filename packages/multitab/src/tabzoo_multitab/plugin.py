"""tabzoo plugin entry point of tabzoo-multitab: the ``multitab`` architecture and its conformance case.

Only hook implementations live here; torch and the model are imported lazily inside them.
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import hookimpl, spec_from_config

from tabzoo_multitab.capabilities import CAPABILITIES
from tabzoo_multitab.config import MultiTabConfig

# a buildable default: 4 numeric columns, one binary and one regression task
_DEFAULTS = {"n_num": 4, "tasks": [["task0", "binary", 2], ["task1", "regression", 0]]}


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``multitab``."""
    register(spec_from_config(
        MultiTabConfig, name="multitab", build="tabzoo_multitab.model:build", defaults=_DEFAULTS,
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
