"""tabzoo plugin entry point of tabzoo-npt (``npt = "tabzoo_npt.plugin:plugin"``).

The ``npt`` architecture (config keys read from :class:`NPTConfig`: a preset plus overrides;
``cardinalities`` is required), its conformance case (the tiny preset) and its demo. NPT claims
the rows protocol with fixed-context prediction: query rows are isolated, so besides row
equivariance it claims query independence, no context<-query leak and context-order invariance.
"""

from __future__ import annotations

from tabzoo.plugins import ModelPlugin, spec_from_config

from tabzoo_npt.capabilities import CAPABILITIES
from tabzoo_npt.config import PRESETS, NPTConfig

plugin = ModelPlugin(
    spec_from_config(
        NPTConfig, name="npt", build="tabzoo_npt.model:build", preset="small", presets=PRESETS, exclude=("extra",),
        capabilities=CAPABILITIES, kind="row-attention", estimator="tabzoo_npt.estimators:NPTClassifier",
        regressor="tabzoo_npt.estimators:NPTRegressor",
        description="Non-Parametric Transformer (papers/002): alternating attention between datapoints and "
                    "between attributes, trained per table with stochastic masking; presets base, small, tiny",
    ),
    cases={"npt": "tabzoo_npt.conformance:make_case"},
    demo="tabzoo_npt.demo:run_demo",
)
