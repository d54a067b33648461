"""tabzoo-multitab: MultiTab-Net (papers/001), a multitask transformer for tables, with its
multitask masked attention, inter-sample attention, MLP baselines (STL, shared-bottom, MMoE, PLE)
and the multitask gain Δm.

The estimator (``MultiTabEstimator``) needs the ``sklearn`` extra and is imported lazily.
"""

from __future__ import annotations

from typing import Any

from tabzoo_multitab.baselines import PLE, MMoE, SharedBottom, SingleTaskMLP
from tabzoo_multitab.config import MASK_MODES, MultiTabConfig, TaskSpec
from tabzoo_multitab.losses import multitask_loss, task_losses
from tabzoo_multitab.metrics import delta_m, explained_variance, roc_auc, task_metric
from tabzoo_multitab.model import MultiTabNet

__all__ = [
    "MASK_MODES", "MMoE", "PLE", "MultiTabConfig", "MultiTabEstimator", "MultiTabNet", "SharedBottom",
    "SingleTaskMLP", "TaskSpec", "delta_m", "explained_variance", "multitask_loss", "roc_auc",
    "task_losses", "task_metric",
]


def __getattr__(name: str) -> Any:
    if name == "MultiTabEstimator":
        from tabzoo_multitab.estimator import MultiTabEstimator

        return MultiTabEstimator
    raise AttributeError(f"module 'tabzoo_multitab' has no attribute {name!r}")
