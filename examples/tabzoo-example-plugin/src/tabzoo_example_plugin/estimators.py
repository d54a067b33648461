"""The scikit-learn estimator: the core's in-context path around the model, nothing more to write.

:class:`tabzoo.estimators.InContextClassifier` preprocesses the table, builds the ensemble members
(feature orders, class shifts), runs the model on chunks of query rows and averages the members;
the plugin only says which model to load. The model needs no weights: it is built from the
plugin's default config (a pretrained model would load its checkpoint here with
``tabzoo.checkpoint.load_shipped_model``).
"""

from __future__ import annotations

from dataclasses import asdict

import torch
from tabzoo.estimators import InContextClassifier


class KNNAttentionEstimator(InContextClassifier):
    """kNN-style attention in-context classifier (scikit-learn API; parameters of the core's estimator)."""

    def _load_model(self) -> torch.nn.Module:
        from tabzoo_example_plugin.model import KNNAttentionClassifier
        from tabzoo_example_plugin.plugin import KNNConfig

        return KNNAttentionClassifier(**asdict(KNNConfig()))
