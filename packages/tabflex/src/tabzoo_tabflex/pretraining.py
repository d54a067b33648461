"""Pretraining recipes for TabFlex on the tabzoo priors (through :func:`tabzoo.train.pretrain`).

``small`` is what a 2-core CPU can afford: the CPU-sized config (width 128, 4 layers, 0.55M
parameters) on the ``tabflex_mix`` prior (:mod:`tabzoo_tabflex.prior`: 30% the ``mix`` prior of
tabzoo-priors, SCM + tree SCM; 70% clean linear / MLP / random-Fourier-feature teacher tasks),
episodes of 128-768 rows, up to 64 features and 2-10 classes, bf16 autocast. The paper configs keep the paper's shapes; their recipes
(``TabFlexConfig.recipe``) need a GPU. Equivalent command line::

    tabzoo pretrain --model tabflex --prior tabflex_mix --steps 14000 --out runs/tabflex-small --resume \\
        --config @packages/tabflex/pretrain-small.json

Run ``python -m tabzoo_tabflex.pretraining --out runs/tabflex-small --resume`` to start or continue,
and :func:`export` to copy the last checkpoint into the package data.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["RECIPES", "run", "export"]

RECIPES: dict[str, dict[str, Any]] = {
    "small": {
        "model_config": {"preset": "small"},
        "prior": "tabflex_mix",
        "prior_config": {"n_rows": (128, 768), "n_features": (2, 64), "n_classes": (2, 10), "teacher_share": 0.7},
        "train": {"steps": 14000, "batch_size": 16, "lr": 7e-4, "warmup_steps": 200, "clip_norm": 1.0,
                  "amp": "bf16", "checkpoint_every": 250, "min_lr_ratio": 0.05},
    },
    # the paper's S100 shape (GPU): 1152-row prompts, <= 100 features, 2-10 classes
    "S100": {
        "model_config": {"preset": "S100"},
        "prior": "mix",
        "prior_config": {"n_rows": (1152, 1152), "n_features": (2, 100), "n_classes": (2, 10)},
        "train": {"steps": 65536, "batch_size": 64, "lr": 3e-5, "warmup_steps": 1000, "amp": "auto",
                  "checkpoint_every": 1000},
    },
}


def run(out: str | Path, recipe: str = "small", resume: bool = True, **train_overrides: Any) -> Any:
    """Start or resume a pretraining run of ``recipe`` in ``out``; returns the ``TrainResult``."""
    from tabzoo.train import pretrain

    r = RECIPES[recipe]
    train = {**r["train"], **train_overrides}
    model_config = {**r["model_config"], **train.pop("model_config", {})}
    prior_config = {**r["prior_config"], **train.pop("prior_config", {})}
    return pretrain("tabflex", r["prior"], out=out, resume=resume, model_config=model_config,
                    prior_config=prior_config, **train)


def export(run_dir: str | Path, name: str = "tabflex-small", recipe: str = "small", note: str = "",
           dest: str | Path | None = None) -> Path:
    """Copy ``run_dir/model.{safetensors,json}`` into the package's ``checkpoints/`` as ``name``.

    The JSON keeps everything the run recorded (prior, steps, episodes seen, wall time, machine,
    training options) and gains the resolved model config and the recipe name.
    """
    from tabzoo_tabflex.config import get_config

    run_dir = Path(run_dir)
    dest = Path(dest) if dest is not None else Path(__file__).parent / "checkpoints"
    for ext in ("safetensors", "json"):
        shutil.copyfile(run_dir / f"model.{ext}", dest / f"{name}.{ext}")
    meta = json.loads((dest / f"{name}.json").read_text())
    meta["config"] = get_config(meta["config"]).to_dict()
    extra = meta.setdefault("extra", {})
    extra["recipe"] = recipe
    if note:
        extra["note"] = note
    (dest / f"{name}.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    for ext in ("safetensors", "json"):
        (dest / f"{name}.{ext}").chmod(0o644)
    return dest / name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="pretrain TabFlex on the tabzoo priors")
    p.add_argument("--out", required=True)
    p.add_argument("--recipe", default="small", choices=sorted(RECIPES))
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
