"""Masked-cell pretraining of Ramba on synthetic relational databases (the ``relational`` prior).

The prior is resolved by name through the core's prior registry (:func:`tabzoo.plugins.get_prior`;
tabzoo-priors registers it), inside :func:`synthetic_source`; nothing here imports tabzoo-priors.
The shipped ``ramba-tiny-synth`` checkpoint was made with (by the earlier Ramba-only loop, whose
schedule was a one-cycle rather than warm-up + cosine; its run state is in that loop's format)::

    python -m tabzoo_ramba.pretraining --out runs/ramba-tiny-synth --steps 1500 --resume
    python -m tabzoo_ramba.pretraining --out runs/ramba-tiny-synth --export ramba-tiny-synth

(``--out`` is the run's folder in the core's layout; ``--resume`` continues an interrupted run from
its last state; without it an existing run is never overwritten.) The loop is the core's
pretraining loop (:func:`tabzoo.train.pretrain`), fed by
:class:`~tabzoo_ramba.train.MaskedCellPrior`. A zero-shot model never sees the target database
during pretraining.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from tabzoo.errors import TabzooInputError

from tabzoo_ramba.model import RambaModel
from tabzoo_ramba.sampling import SamplerConfig

__all__ = ["RECIPES", "synthetic_source", "run", "export", "load_pretrained_model", "CHECKPOINTS"]

log = logging.getLogger(__name__)
CHECKPOINTS = Path(__file__).parent / "checkpoints"
RECIPES: dict[str, dict[str, Any]] = {
    "tiny-synth": {
        "model_config": {"preset": "tiny", "text_encoder": "hashing"},
        "prior_config": {"n_tables": (2, 5), "root_rows": (20, 120), "fanout": (1.0, 4.0), "n_columns": (2, 6)},
        "train": {"steps": 1500, "batch_size": 8, "lr": 1e-3, "dbs_every": 4, "checkpoint_every": 100},
        "sampler": {"n_child": 8, "max_expansions": 8, "max_rows": 48},
    },
}


def synthetic_source(**prior_config: Any) -> Any:
    """``seed -> RelationalDatabase`` from the registered ``relational`` prior (tabzoo-priors).

    :raises PluginLoadError: when no installed plugin registers it (the message names the package).
    """
    from tabzoo.plugins import get_prior

    prior = get_prior("relational", **prior_config)
    return lambda seed: prior.sample_database(seed=int(seed))


def run(out: str | Path, *, recipe: str = "tiny-synth", steps: int | None = None, resume: bool = False,
        progress: bool = True, seed: int = 0, device: str = "cpu") -> tuple[RambaModel, list[float]]:
    """Pretrain (or continue) the recipe's model; the run lives in the folder ``out``."""
    from tabzoo_ramba.train import pretrain_mlm

    if recipe not in RECIPES:
        raise TabzooInputError(f"unknown recipe {recipe!r}; use one of {sorted(RECIPES)}")
    r = RECIPES[recipe]
    train = dict(r["train"])
    if steps is not None:
        train["steps"] = int(steps)
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = RambaModel(r["model_config"])
    history = pretrain_mlm(model, synthetic_source(**r["prior_config"]), sampler=SamplerConfig(**r["sampler"]),
                           out=out, resume=resume, progress=progress, seed=seed, device=device, **train)
    return model, history


def export(out: str | Path, name: str, *, recipe: str = "tiny-synth", directory: Path = CHECKPOINTS) -> Path:
    """Copy the model weights of the last state of the run in the folder ``out`` into a checkpoint
    ``directory/name``."""
    from tabzoo.checkpoint import save_checkpoint
    from tabzoo.train import load_latest

    state = load_latest(out)
    if state is None:
        raise TabzooInputError(f"{out} holds no pretraining run (no latest.json); run it first.")
    model = RambaModel(RECIPES[recipe]["model_config"])
    model.load_state_dict(state["model"])
    history = [float(x) for x in state["losses"]]
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / name
    if stem.with_name(name + ".json").exists():
        raise FileExistsError(f"{stem}.json exists; delete it first to replace the shipped checkpoint")
    tail = history[-50:]
    return save_checkpoint(stem, model, architecture="ramba", config=model.config, prior="relational",
                           steps=int(state["step"]), package_version="0.1.0",
                           extra={"recipe": recipe, "recipe_config": json.loads(json.dumps(RECIPES[recipe])),
                                  "final_loss_mean50": sum(tail) / max(1, len(tail))})


def load_pretrained_model(name: str = "ramba-tiny-synth") -> RambaModel:
    """A shipped checkpoint as a :class:`RambaModel` (eval mode)."""
    from tabzoo.checkpoint import load_model

    path = CHECKPOINTS / name
    if not path.with_name(name + ".json").exists():
        raise TabzooInputError(f"no shipped Ramba checkpoint {name!r} in {CHECKPOINTS}; pretrain one with "
                               "python -m tabzoo_ramba.pretraining")
    model = load_model(path, build=RambaModel)
    assert isinstance(model, RambaModel)
    return model.eval()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--recipe", default="tiny-synth", choices=sorted(RECIPES))
    p.add_argument("--steps", type=int)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--export", metavar="NAME", help="export the run at --out as a package checkpoint and stop")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    if args.export:
        print(export(args.out, args.export, recipe=args.recipe))
        return 0
    run(args.out, recipe=args.recipe, steps=args.steps, resume=args.resume, progress=not args.no_progress)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
