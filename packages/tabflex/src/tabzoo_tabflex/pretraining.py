"""Pretraining recipes for TabFlex on the shared ``icl`` prior of tabzoo-priors (through
:func:`tabzoo.train.pretrain`).

``icl`` (the recipe of the ``tabflex-icl`` checkpoint): the CPU-sized ``small`` shape (width 128,
4 layers, 0.55M parameters) started from ``tabflex-small``'s weights and trained on the ``icl``
prior (SCM, tree SCM and linear / MLP / GP teacher tasks with categorical, missing, imbalanced,
irrelevant and duplicated columns; 1 to 100 features, so every input slot is trained; 2-10
classes) with a row curriculum 256-1,024 -> 512-2,048 -> 1,024-4,096 rows. Equivalent command line::

    tabzoo pretrain --model tabflex --prior icl --steps 400 --out runs/tabflex-icl --resume \\
        --config @packages/tabflex/pretrain-icl.json

``small`` is the recipe of the older ``tabflex-small`` checkpoint (trained from scratch, 128-768
rows, 2-64 features); it ran on a TabFlex-private prior that no longer exists and now names
``icl`` with the same sizes. The paper configs keep the paper's shapes; their recipes
(``TabFlexConfig.recipe``) need a GPU.

Run ``python -m tabzoo_tabflex.pretraining --recipe icl --out runs/tabflex-icl --resume`` to start
or continue, and :func:`export` to write its training state's model into the package data.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["RECIPES", "run", "export"]

_ICL_CURRICULUM = [
    {"name": "short", "steps": 60, "rows": [256, 1024], "rows_distribution": "log_uniform"},
    {"name": "medium", "steps": 90, "rows": [512, 2048], "rows_distribution": "log_uniform"},
    {"name": "long", "steps": 250, "rows": [1024, 4096], "rows_distribution": "log_uniform"},
]

RECIPES: dict[str, dict[str, Any]] = {
    # what tabflex-icl ran (= packages/tabflex/pretrain-icl.json)
    "icl": {
        "model_config": {"preset": "small", "train_rows": 4096},
        "prior": "icl",
        "prior_config": {"max_features": 100, "max_classes": 10, "curriculum": _ICL_CURRICULUM},
        "train": {"steps": 400, "batch_size": 8, "lr": 2e-4, "warmup_steps": 10, "clip_norm": 1.0,
                  "amp": "auto", "seed": 1, "checkpoint_every": 10, "min_lr_ratio": 0.1,
                  "init_from": "tabflex-small"},
    },
    "small": {
        "model_config": {"preset": "small"},
        "prior": "icl",
        "prior_config": {"n_rows": (128, 768), "max_features": 64, "max_classes": 10},
        "train": {"steps": 14000, "batch_size": 16, "lr": 7e-4, "warmup_steps": 200, "clip_norm": 1.0,
                  "amp": "auto", "checkpoint_every": 250, "min_lr_ratio": 0.05},
    },
    # the paper's S100 shape (GPU): 1152-row prompts, <= 100 features, 2-10 classes
    "S100": {
        "model_config": {"preset": "S100"},
        "prior": "icl",
        "prior_config": {"n_rows": (1152, 1152), "max_features": 100, "max_classes": 10},
        "train": {"steps": 65536, "batch_size": 64, "lr": 3e-5, "warmup_steps": 1000, "amp": "auto",
                  "checkpoint_every": 1000},
    },
}


def run(out: str | Path, recipe: str = "icl", resume: bool = True, **train_overrides: Any) -> Any:
    """Start or resume a pretraining run of ``recipe`` in ``out``; returns the ``PretrainResult``."""
    from tabzoo.train import pretrain

    r = RECIPES[recipe]
    train = {**r["train"], **train_overrides}
    model_config = {**r["model_config"], **train.pop("model_config", {})}
    prior_config = {**r["prior_config"], **train.pop("prior_config", {})}
    init = train.get("init_from")
    if init and not Path(str(init) + ".json").exists():  # a shipped checkpoint name
        train["init_from"] = str(Path(__file__).parent / "checkpoints" / str(init))
    return pretrain("tabflex", r["prior"], out=out, resume=resume, model_config=model_config,
                    prior_config=prior_config, **train)


def export(run_dir: str | Path, name: str = "tabflex-small", recipe: str = "small", note: str = "",
           dest: str | Path | None = None, *, overwrite: bool = False) -> Path:
    """Export a run's model, from its training state, as the checkpoint ``name`` in ``dest``.

    One call to :func:`tabzoo.train.state.export_latest` (as ORION-MSP's export): the weights,
    config, prior, step, episodes seen, wall time and training options come from the run's
    ``latest.json`` state, so a run folder keeps only what resumes training. The metadata gains
    the recipe name, the package and its version (and ``note``).

    :param run_dir: the ``--out`` folder of the run.
    :param dest: folder to write ``<name>.safetensors`` + ``<name>.json`` in (default: the package's
        ``checkpoints/``).
    :param overwrite: replace an existing checkpoint of that name (never silently).
    :return: the stem of the written checkpoint.
    :raises CheckpointError: when the run holds no training state, or the checkpoint exists without ``overwrite``.
    """
    from tabzoo.train.state import export_latest

    from tabzoo_tabflex import __version__

    folder = Path(dest) if dest is not None else Path(__file__).parent / "checkpoints"
    extra: dict[str, Any] = {"recipe": recipe, "package": "tabzoo-tabflex"}
    if note:
        extra["note"] = note
    stem = folder / name
    export_latest(run_dir, stem, overwrite=overwrite, extra=extra, package_version=__version__)
    return stem


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="pretrain TabFlex on the tabzoo priors")
    p.add_argument("--out", required=True)
    p.add_argument("--recipe", default="icl", choices=sorted(RECIPES))
    p.add_argument("--resume", action="store_true")
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    extra: dict[str, Any] = {"progress": not a.no_progress}
    if a.steps is not None:
        extra["steps"] = a.steps
    res = run(a.out, a.recipe, a.resume, **extra)
    logger.info("done: %d steps, %d episodes, %.0f s", res.steps, res.episodes_seen, res.wall_time_s)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
