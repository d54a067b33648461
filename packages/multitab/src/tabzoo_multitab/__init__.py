"""tabzoo-multitab: MultiTab-Net (papers/001), a multitask transformer for tables, with its
multitask masked attention, inter-sample attention, MLP baselines (STL, shared-bottom, MMoE, PLE)
and the multitask gain Δm.

The estimator (``MultiTabEstimator``) needs the ``sklearn`` extra and is imported lazily.
"""

from __future__ import annotations

from tabzoo.exports import lazy_exports

# lazy: importing the plugin declaration (``tabzoo_multitab.plugin``) must not import torch, or plugin
# discovery and ``tabzoo plugins`` pay for it (issue 24 item 8)
_LAZY = {
    "PLE": "baselines", "MMoE": "baselines", "SharedBottom": "baselines", "SingleTaskMLP": "baselines",
    "MASK_MODES": "config", "MultiTabConfig": "config", "TaskSpec": "config",
    "multitask_loss": "losses", "task_losses": "losses",
    "delta_m": "metrics", "explained_variance": "metrics", "roc_auc": "metrics", "task_metric": "metrics",
    "MultiTabNet": "model", "MultiTabEstimator": "estimator",
}

__all__ = [
    "MASK_MODES", "MMoE", "PLE", "MultiTabConfig", "MultiTabEstimator", "MultiTabNet", "SharedBottom",
    "SingleTaskMLP", "TaskSpec", "delta_m", "explained_variance", "multitask_loss", "roc_auc",
    "task_losses", "task_metric",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
