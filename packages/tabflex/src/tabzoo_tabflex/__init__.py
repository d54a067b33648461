"""tabzoo-tabflex: TabFlex (papers/004), TabPFN-style in-context learning with linear attention.

Public names (imported lazily, so ``import tabzoo_tabflex`` is cheap):

* :class:`TabFlex`, :class:`ContextState` - the network and its streamed-inference state;
* :class:`TabFlexConfig`, :data:`CONFIGS`, :func:`get_config` - S100, L100, H1K, small, tiny;
* :func:`select_model`, :func:`algorithm1` - conditional model selection (+ class count);
* :class:`RandomProjection` - seeded Gaussian projection for wide inputs;
* :class:`TargetBinner` - regression by target binning;
* :class:`TabFlexClassifier`, :class:`TabFlexRegressor`, :func:`load_tabflex` - scikit-learn estimators
  (need scikit-learn) loading the shipped ``tabflex-small`` checkpoint offline.

More classes than the head has are the core's :mod:`tabzoo.estimators.hierarchy`.
"""

from __future__ import annotations

from tabzoo.exports import lazy_exports

__version__ = "0.1.0"

_LAZY = {
    "TabFlex": "model", "ContextState": "model", "build": "model",
    "TabFlexConfig": "config", "CONFIGS": "config", "get_config": "config",
    "select_model": "selection", "algorithm1": "selection", "Selection": "selection",
    "RandomProjection": "projection",
    "TargetBinner": "binning",
    "TabFlexClassifier": "estimators", "TabFlexRegressor": "estimators", "load_tabflex": "estimators",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
