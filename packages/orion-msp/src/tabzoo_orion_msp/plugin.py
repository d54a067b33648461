"""tabzoo plugin entry point of tabzoo-orion-msp (``orion-msp = "tabzoo_orion_msp.plugin:plugin"``).

The ``orion-msp`` architecture, its config keys read from :class:`OrionConfig` (a preset plus
per-field overrides), and its conformance case (the tiny preset, default query masking).
``tabzoo demo`` runs the core's in-context demo on its classifier. Nothing here imports torch.
"""

from __future__ import annotations

from tabzoo.plugins import ModelPlugin, spec_from_config

from tabzoo_orion_msp.capabilities import CAPABILITIES
from tabzoo_orion_msp.config import CONFIGS, OrionConfig

plugin = ModelPlugin(
    spec_from_config(
        OrionConfig, name="orion-msp", build="tabzoo_orion_msp.model:build", preset="small", presets=CONFIGS,
        capabilities=CAPABILITIES, kind="in-context", estimator="tabzoo_orion_msp.estimators:OrionMSPClassifier",
        pretrained=("orion-msp-small",),
        description="ORION-MSP (papers/000): column ISAB, multi-scale block-sparse row attention, "
                    "leak-free Perceiver memory, split-masked ICL; presets paper, small (shipped), tiny",
    ),
    cases={"orion-msp": "tabzoo_orion_msp.conformance:make_case"},
)
