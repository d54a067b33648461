"""tabzoo-tabflex: TabFlex (papers/004), TabPFN-style in-context learning with linear attention.

Public names (imported lazily, so ``import tabzoo_tabflex`` is cheap):

* :class:`TabFlex`, :class:`ContextState` - the network and its streamed-inference state;
* :class:`TabFlexConfig`, :data:`CONFIGS`, :func:`get_config` - S100, L100, H1K, small, tiny;
* :func:`select_model`, :func:`algorithm1` - conditional model selection (+ class count);
* :class:`RandomProjection` - seeded Gaussian projection for wide inputs;
* :func:`hierarchical_proba`, :func:`class_tree` - past the head's class limit;
* :class:`TargetBinner` - regression by target binning;
* :class:`TabFlexClassifier`, :class:`TabFlexRegressor`, :func:`load_tabflex` - scikit-learn estimators
  (need scikit-learn) loading the shipped ``tabflex-small`` checkpoint offline.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "TabFlex": "model", "ContextState": "model", "build": "model",
    "TabFlexConfig": "config", "CONFIGS": "config", "get_config": "config",
    "select_model": "selection", "algorithm1": "selection", "Selection": "selection",
    "RandomProjection": "projection",
    "hierarchical_proba": "hierarchy", "class_tree": "hierarchy",
    "TargetBinner": "binning",
    "TabFlexClassifier": "estimators", "TabFlexRegressor": "estimators", "load_tabflex": "estimators",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'tabzoo_tabflex' has no attribute {name!r}")
    value = getattr(import_module(f"tabzoo_tabflex.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
