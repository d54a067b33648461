"""tabzoo plugin entry point of tabzoo-tabflex: the ``tabflex`` architecture and its conformance case.

Only hook implementations live here; torch and the model are imported lazily inside them.
"""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import ArchitectureSpec, PriorSpec, hookimpl

# the plugin's config form: a preset plus per-field overrides (None = the preset's value)
_CONFIG_KEYS = ("name", "max_features", "max_classes", "d_model", "n_heads", "n_layers", "d_ff", "d_decoder",
                "dropout", "attention", "train_rows")
DEFAULT_CONFIG: dict[str, Any] = {"preset": "small", **dict.fromkeys(_CONFIG_KEYS)}
CAPABILITIES = frozenset({
    "in_context", "context_order_invariance", "query_equivariance", "query_independence",
    "no_context_query_leak", "label_leak", "determinism", "checkpoint_roundtrip", "bad_input",
    "linear_in_rows",
})


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
        pretrained=("tabflex-small",),
        description="TabFlex (papers/004): TabPFN-style ICL with non-causal linear attention; "
                    "presets S100, L100, H1K, small (shipped), tiny",
    ))


@hookimpl
def tabzoo_conformance_cases(register: Any) -> None:
    """Register the ``tabflex`` conformance case (the tiny preset)."""
    from tabzoo_tabflex.conformance import make_case

    register(make_case())


def _tabflex_prior(**config: Any) -> Any:
    from tabzoo_tabflex.prior import TabFlexPrior

    return TabFlexPrior(**config)


def _teacher_prior(**config: Any) -> Any:
    from tabzoo_tabflex.prior import TeacherPrior

    return TeacherPrior(**config)


@hookimpl
def tabzoo_register_priors(register: Any) -> None:
    """Register the TabFlex pretraining priors (``tabflex_mix`` needs tabzoo-priors at sampling time)."""
    register(PriorSpec(name="tabflex_mix", factory=_tabflex_prior, kind="episodes",
                       description="TabFlex pretraining prior: tabzoo_priors 'mix' (SCM + tree SCM) plus "
                                   "clean teacher tasks (linear, MLP, random Fourier features / GP)"))
    register(PriorSpec(name="tabflex_teacher", factory=_teacher_prior, kind="episodes",
                       description="classification episodes labelled by random linear / MLP / RFF teachers"))
