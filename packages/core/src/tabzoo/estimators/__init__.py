"""scikit-learn estimators for in-context models (needs the ``sklearn`` extra).

Public names: :class:`InContextClassifier`, :class:`InContextRegressor` (bases a plugin
subclasses with ``_load_model``), :class:`TabularPreprocessor`, :class:`EnsembleMember`,
:func:`make_members`, :func:`resolve_device`.
"""

from __future__ import annotations

from tabzoo.estimators.base import InContextEstimator, resolve_device
from tabzoo.estimators.classifier import InContextClassifier, InContextRegressor
from tabzoo.estimators.preprocessing import (
    EnsembleMember,
    TabularPreprocessor,
    make_members,
    soft_clip,
)

__all__ = [
    "EnsembleMember",
    "InContextClassifier",
    "InContextEstimator",
    "InContextRegressor",
    "TabularPreprocessor",
    "make_members",
    "resolve_device",
    "soft_clip",
]
