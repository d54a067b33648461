"""tabzoo plugin entry point: registers the priors. Heavy modules are imported lazily."""

from __future__ import annotations

from typing import Any

from tabzoo.plugins import PriorSpec, hookimpl


def _lazy(path: str) -> Any:
    module_name, _, attr = path.partition(":")

    def factory(**config: Any) -> Any:
        from importlib import import_module

        return getattr(import_module(module_name), attr)(**config)

    factory.__name__ = f"make_{attr}"
    factory.__doc__ = f"Build ``{path}`` with ``**config``."
    return factory


@hookimpl
def tabzoo_register_priors(register: Any) -> None:
    """Register every prior of tabzoo-priors."""
    specs = [
        ("scm", "tabzoo_priors.scm:SCMPrior", "episodes",
         "MLP-style SCM prior (ORION-MSP B.1.1): random DAG, per-node activations incl. random Fourier features"),
        ("tree_scm", "tabzoo_priors.scm:TreeSCMPrior", "episodes",
         "tree SCM prior (ORION-MSP B.1.2): random decision trees of depth 1-4 as mechanisms"),
        ("mix", "tabzoo_priors.mixture:MixturePrior", "episodes",
         "pretraining mixture: 70% SCM, 30% tree SCM batches"),
        ("icl", "tabzoo_priors.icl:ICLPrior", "episodes",
         "shared in-context prior: SCM, tree SCM, linear/MLP/GP teachers; categoricals, missing, "
         "imbalance, irrelevant and duplicated columns, every input slot, row curriculum to 4,096"),
        ("teacher", "tabzoo_priors.teachers:TeacherPrior", "episodes",
         "linear / MLP / random-Fourier-feature (GP) teacher tasks (kind=...)"),
        ("multitab_bench", "tabzoo_priors.multitab:MultiTabBench", "multitask",
         "MultiTab-Bench: t tasks with pairwise weight correlation p, polynomial degree and noise per task"),
        ("mmoe", "tabzoo_priors.multitab:MMoEPrior", "multitask",
         "MMoE's two-task synthetic regression generator"),
        ("npt_lookup", "tabzoo_priors.lookup:LookupPrior", "lookup",
         "NPT duplication/lookup task with random-features and add-one variants"),
        ("relational", "tabzoo_priors.relational:RelationalPrior", "relational",
         "random relational databases: schema DAG, foreign keys, timestamps, typed cells"),
    ]
    for name, path, kind, description in specs:
        register(PriorSpec(name=name, factory=_lazy(path), kind=kind, description=description))
