"""tabzoo plugin entry point of tabzoo-multitab (``multitab = "tabzoo_multitab.plugin:plugin"``).

The ``multitab`` architecture (config keys read from :class:`MultiTabConfig`; the default is
buildable: 4 numeric columns, one binary and one regression task), its conformance case (rows
protocol, mixed tasks) and its demo. Nothing here imports torch.
"""

from __future__ import annotations

from tabzoo.plugins import ModelPlugin, spec_from_config

from tabzoo_multitab.capabilities import CAPABILITIES
from tabzoo_multitab.config import MultiTabConfig

plugin = ModelPlugin(
    spec_from_config(
        MultiTabConfig, name="multitab", build="tabzoo_multitab.model:build", capabilities=CAPABILITIES,
        defaults={"n_num": 4, "tasks": [["task0", "binary", 2], ["task1", "regression", 0]]},
        kind="multitask", estimator="tabzoo_multitab.estimator:MultiTabEstimator",
        description="MultiTab-Net (papers/001): task tokens, T-/->T multitask masked inter-feature "
                    "attention, inter-sample attention with a fixed prediction context",
    ),
    cases={"multitab": "tabzoo_multitab.conformance:make_case"},
    demo="tabzoo_multitab.demo:run_demo",
)
