"""scikit-learn estimators for in-context models (needs the ``sklearn`` extra).

Public names: :class:`InContextClassifier`, :class:`InContextRegressor` (bases a plugin
subclasses with ``_load_model``), :class:`TabularPreprocessor`, :class:`EnsembleMember`,
:func:`make_members`, :func:`resolve_device`; per-member views (:mod:`tabzoo.estimators.members`:
:class:`FeatureTransform`, :class:`MemberTransform`, :func:`fit_member_transforms`, :func:`balanced_subsets`)
and option resolvers (:mod:`tabzoo.estimators.options`: :func:`resolve_categorical_features`,
:func:`resolve_inference_dtype`, :func:`check_fit_mode`, :class:`PrecisionFallbackWarning`).

Large or skewed contexts (:mod:`tabzoo.estimators.encoding`, :mod:`tabzoo.estimators.local`):
:class:`~tabzoo.estimators.encoding.OneHotExpander` (``categorical_encoding="onehot"`` on an estimator
expands categorical columns into indicators while the model's width allows), :func:`class_balance`
(context row weights for rare classes plus the prior correction that undoes them), and
:func:`fit_local_contexts` (k-means clusters of the context rows, each query answered from its nearest
cluster's context, for training sets larger than the model's prompts).

A plugin opts into the member views with estimator attributes: ``feature_transforms`` (e.g.
``("none", "power")``), ``categorical_features``, ``feature_subsample = "balanced"``,
``shuffle_categories = True`` and ``standardize_members = True``; the base's ``_forward`` applies
each member's view to the context and query rows.
"""

from __future__ import annotations

from tabzoo.deprecation import renamed
from tabzoo.estimators.base import InContextEstimator, resolve_device
from tabzoo.estimators.classifier import InContextClassifier, InContextRegressor
from tabzoo.estimators.encoding import OneHotExpander, class_balance
from tabzoo.estimators.local import LocalContexts, fit_local_contexts
from tabzoo.estimators.members import (
    EnsembleMember,
    FeatureTransform,
    MemberTransform,
    balanced_subsets,
    fit_member_transforms,
    make_members,
)
from tabzoo.estimators.options import (
    PrecisionFallbackWarning,
    check_fit_mode,
    resolve_categorical_features,
    resolve_inference_dtype,
)
from tabzoo.estimators.preprocessing import TabularPreprocessor, soft_clip

__all__ = [
    "EnsembleMember",
    "FeatureTransform",
    "LocalContexts",
    "OneHotExpander",
    "class_balance",
    "fit_local_contexts",
    "MemberTransform",
    "PrecisionFallbackWarning",
    "balanced_subsets",
    "check_fit_mode",
    "fit_member_transforms",
    "resolve_categorical_features",
    "resolve_inference_dtype",
    "InContextClassifier",
    "InContextEstimator",
    "InContextRegressor",
    "TabularPreprocessor",
    "make_members",
    "resolve_device",
    "soft_clip",
]

# renamed in issue 31 (kept a while, with a DeprecationWarning)
__getattr__ = renamed(__name__, {"MemberView": "MemberTransform", "fit_member_views": "fit_member_transforms"})
