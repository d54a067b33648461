"""tabzoo plugin entry point of tabzoo-tabflex (``tabflex = "tabzoo_tabflex.plugin:plugin"``).

One declaration: the ``tabflex`` architecture (its config keys read from :class:`TabFlexConfig`)
and its conformance case; ``tabzoo demo`` runs the core's in-context demo on its classifier.
Nothing here imports torch. TabFlex pretrains on the shared ``icl`` prior of tabzoo-priors.
"""

from __future__ import annotations

from tabzoo.plugins import ModelPlugin, spec_from_config

from tabzoo_tabflex.capabilities import CAPABILITIES
from tabzoo_tabflex.config import CONFIGS, TabFlexConfig

plugin = ModelPlugin(
    spec_from_config(
        TabFlexConfig, name="tabflex", build="tabzoo_tabflex.model:build", preset="small", presets=CONFIGS,
        exclude=("recipe",), capabilities=CAPABILITIES, kind="in-context", pretrained=("tabflex-small", "tabflex-icl", "tabflex-long"),
        estimator="tabzoo_tabflex.estimators:TabFlexClassifier", regressor="tabzoo_tabflex.estimators:TabFlexRegressor",
        description="TabFlex (papers/004): TabPFN-style ICL with non-causal linear attention; "
                    "presets S100, L100, H1K, small (shipped), tiny",
    ),
    cases={"tabflex": "tabzoo_tabflex.conformance:make_case"},
)
