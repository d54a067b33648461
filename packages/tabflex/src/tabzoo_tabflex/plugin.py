"""tabzoo plugin entry point of tabzoo-tabflex: the ``tabflex`` architecture and its conformance case.

Only hook implementations live here; torch and the model are imported lazily inside them. The
plugin registers no prior of its own: TabFlex pretrains on the shared ``icl`` prior of
tabzoo-priors (like every in-context plugin).
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import ArchitectureSpec, hookimpl

from tabzoo_tabflex.capabilities import CAPABILITIES

# the plugin's config form: a preset plus per-field overrides (None = the preset's value)
_CONFIG_KEYS = ("name", "max_features", "max_classes", "d_model", "n_heads", "n_layers", "d_ff", "d_decoder",
                "dropout", "attention", "train_rows")
DEFAULT_CONFIG: dict[str, Any] = {"preset": "small", **dict.fromkeys(_CONFIG_KEYS)}


def _build(config: dict[str, Any]) -> Any:
    from tabzoo_tabflex.model import build

    return build(config)


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``tabflex``."""
    register(ArchitectureSpec(
        name="tabflex",
        build=_build,
        default_config=DEFAULT_CONFIG,
        capabilities=CAPABILITIES,
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

