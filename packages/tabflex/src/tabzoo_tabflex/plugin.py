"""tabzoo plugin entry point of tabzoo-tabflex: the ``tabflex`` architecture and its conformance case.

Only hook implementations live here; torch and the model are imported lazily inside them. The
plugin registers no prior of its own: TabFlex pretrains on the shared ``icl`` prior of
tabzoo-priors (like every in-context plugin).
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import hookimpl, spec_from_config

from tabzoo_tabflex.capabilities import CAPABILITIES
from tabzoo_tabflex.config import CONFIGS, TabFlexConfig


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``tabflex``."""
    register(spec_from_config(
        TabFlexConfig, name="tabflex", build="tabzoo_tabflex.model:build", preset="small", presets=CONFIGS,
        exclude=("recipe",), capabilities=CAPABILITIES,
        kind="in-context",
        estimator="tabzoo_tabflex.estimators:TabFlexClassifier",
        regressor="tabzoo_tabflex.estimators:TabFlexRegressor",
        pretrained=("tabflex-small", "tabflex-icl"),
        description="TabFlex (papers/004): TabPFN-style ICL with non-causal linear attention; "
                    "presets S100, L100, H1K, small (shipped), tiny",
    ))


@hookimpl
def tabzoo_conformance_cases(register: Any) -> None:
    """Register the ``tabflex`` conformance case (the tiny preset)."""
    from tabzoo_tabflex.conformance import make_case

    register(make_case())

