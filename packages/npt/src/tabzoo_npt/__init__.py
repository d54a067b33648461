"""tabzoo-npt: Non-Parametric Transformers (papers/002; DESIGN.md §3 "tabzoo-npt").

Public names are imported lazily, so ``import tabzoo_npt`` stays light::

    from tabzoo_npt import NPTClassifier, NPTRegressor, NPTImputer, NPT, corruption_test
"""

from __future__ import annotations

from tabzoo.exports import lazy_exports

__version__ = "0.1.0"

_LAZY = {
    "NPT": "model", "NPTConfig": "model", "build": "model", "PRESETS": "model",
    "NPTFitConfig": "train", "TrainConfig": "train", "fit_npt": "train", "stratified_batches": "train",
    "predict_cells": "predict", "context_indices": "predict",
    "stochastic_mask": "masking",
    "NPTClassifier": "estimators", "NPTRegressor": "estimators", "NPTImputer": "estimators",
    "corruption_test": "diagnostics", "CorruptionReport": "diagnostics",
}
__all__ = sorted(set(_LAZY) - {"TrainConfig"})  # TrainConfig: the deprecated name of NPTFitConfig

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
