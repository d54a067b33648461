"""tabzoo-orion-msp: ORION-MSP (papers/000), tabular in-context learning with multi-scale block-sparse
row attention and a leak-free Perceiver memory.

Public names (imported lazily, so ``import tabzoo_orion_msp`` is cheap):

* :class:`OrionMSP`, :func:`build` - the network;
* :class:`OrionConfig`, :data:`CONFIGS`, :func:`get_config` - presets ``paper``, ``small``, ``tiny``;
* :class:`OrionMSPClassifier`, :func:`load_orion` - the scikit-learn estimator (needs scikit-learn),
  loading the shipped ``orion-msp-small`` checkpoint offline.
"""

from __future__ import annotations

from tabzoo.exports import lazy_exports

__version__ = "0.1.0"

_LAZY = {
    "OrionMSP": "model", "build": "model",
    "OrionConfig": "config", "CONFIGS": "config", "get_config": "config",
    "OrionMSPClassifier": "estimators", "load_orion": "estimators",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
