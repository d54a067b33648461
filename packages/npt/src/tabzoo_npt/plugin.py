"""tabzoo plugin entry point of tabzoo-npt: the ``npt`` architecture and its conformance case.

Only hook implementations live here; torch and the model are imported lazily inside them.
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import ArchitectureSpec, hookimpl

from tabzoo_npt.capabilities import CAPABILITIES

# rows protocol, fixed-context prediction: query rows are isolated (they read context rows and
# themselves), so besides row equivariance NPT claims query independence, no context<-query
# leak and context-order invariance; masked targets are never read (label leak).
DEFAULT_CONFIG: dict[str, Any] = {"preset": "small", "cardinalities": None}


def _build(config: dict[str, Any]) -> Any:
    from tabzoo_npt.model import build

    return build(config)


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``npt``."""
    register(ArchitectureSpec(
        name="npt",
        build=_build,
        default_config=DEFAULT_CONFIG,
        capabilities=CAPABILITIES,
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
