"""tabzoo-priors: synthetic data priors for pretraining and controlled experiments.

Episode priors (``sample(batch_size, *, seed, device) -> EpisodeBatch``): :class:`SCMPrior`,
:class:`TreeSCMPrior`, :class:`TeacherPrior`, :class:`MixturePrior` and the shared in-context prior
:class:`ICLPrior` (``icl``). Streaming: :class:`EpisodeStream`,
:func:`make_dataloader`, :class:`Curriculum`. Multitask: :class:`MultiTabBench`,
:class:`MMoEPrior`. NPT lookup: :class:`LookupPrior`. Relational: :class:`RelationalPrior`.
Plots: :func:`plot_datasets`.
"""

from __future__ import annotations

from tabzoo.exports import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "SCMPrior": "scm", "TreeSCMPrior": "scm", "EpisodePrior": "scm",
    "DatasetConfig": "config", "SCMConfig": "config", "TreeSCMConfig": "config",
    "RawBatch": "_assemble", "ICLPrior": "icl", "TeacherPrior": "teachers", "TeacherConfig": "teachers", "MixturePrior": "mixture", "ACTIVATIONS": "activations",
    "Curriculum": "sampler", "CurriculumStage": "sampler", "EpisodeStream": "sampler",
    "make_dataloader": "sampler",
    "MultiTabBench": "multitab", "MMoEPrior": "multitab", "MultiTaskData": "multitab",
    "MultiTaskSplits": "multitab", "correlated_weights": "multitab",
    "LookupPrior": "lookup", "LookupBatch": "lookup",
    "RelationalPrior": "relational", "RelationalConfig": "relational",
    "plot_datasets": "plot", "derive_seed": "_random",
}

__all__ = ["__version__", *_EXPORTS]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
