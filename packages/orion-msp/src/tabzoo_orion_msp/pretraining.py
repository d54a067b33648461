"""Pretraining recipe of the shipped checkpoint and its export as package data.

The run is plain ``tabzoo pretrain`` on the shared ``icl`` prior (tabzoo-priors; see
``pretraining/README.md`` at the repository root). The curriculum is appendix B.2 scaled down to
one CPU thread (``pretrain-icl.json``, then ``pretrain-icl-stage3.json``):

=======  ======================================  ==========================================
stage    paper                                   here
=======  ======================================  ==========================================
1        25 000 steps x 2 048 datasets, 1 024     300 steps x 8 datasets, 128 rows (fixed),
         rows (fixed), everything trains          everything trains; one warmup + cosine
                                                  (peak 1e-3) over stages 1-2
2        2 000 steps x 512, rows log-uniform       40 steps x 8, rows log-uniform 128-512
         1 024-40 000
3        50 steps x 512, rows uniform             15 steps x 8, rows uniform 512-768,
         40 000-60 000, ICL transformer only      ``freeze: [columns, rows, memory]``
=======  ======================================  ==========================================

Stage 3 resumes the state of stages 1-2 (``--resume``, larger ``--steps``). Session 4 resumed
that state (step 355) with everything trainable again (``pretrain-icl-s4.json``): stage 1b, rows 256
(fixed), then stage 2b, rows log-uniform 256-1,024, under one new warmup + cosine ending at the
run's ``--steps`` (a resume re-derives the cosine from ``--steps``). Stages were cut by the wall
clock where the session ran out of time; the shipped metadata (``extra.notes``) records the steps
each stage really ran.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tabzoo.errors import CheckpointError

__all__ = ["CHECKPOINT_DIR", "STAGES", "export_checkpoint"]

CHECKPOINT_DIR = Path(__file__).parent / "checkpoints"

#: the scaled-down B.2 curriculum as planned (the metadata's notes say what really ran)
STAGES: tuple[dict[str, Any], ...] = (
    {"stage": 1, "steps": 300, "rows": [128, 128], "rows_distribution": "fixed", "batch_size": 8,
     "trainable": "all"},
    {"stage": 2, "steps": 40, "rows": [128, 512], "rows_distribution": "log_uniform", "batch_size": 8,
     "trainable": "all"},
    {"stage": 3, "steps": 15, "rows": [512, 768], "rows_distribution": "uniform", "batch_size": 8,
     "trainable": "icl_only", "freeze": ["columns", "rows", "memory"]},
    {"stage": "1b", "steps": 285, "rows": [256, 256], "rows_distribution": "fixed", "batch_size": 8,
     "trainable": "all", "recipe": "pretrain-icl-s4.json"},
    {"stage": "2b", "steps": 80, "rows": [256, 1024], "rows_distribution": "log_uniform", "batch_size": 8,
     "trainable": "all", "recipe": "pretrain-icl-s4.json"},
)


def export_checkpoint(run_dir: str | Path, name: str = "orion-msp-small", *, overwrite: bool = False,
                      notes: dict[str, Any] | None = None) -> Path:
    """Export a run's model (from its training state) into the package data, with metadata and its
    learning curve (:func:`tabzoo.train.state.export_latest`: the run folder keeps only what resumes).

    :param run_dir: the ``--out`` folder of ``tabzoo pretrain`` (holds ``latest.json`` and the state).
    :param name: checkpoint name in the package (``<name>.safetensors``, ``<name>.json``,
        ``<name>-learning-curve.png``).
    :param overwrite: replace an existing checkpoint of that name (never silently).
    :param notes: extra metadata (curriculum, prior caveats) stored under ``extra.notes``.
    :return: the stem of the written checkpoint.
    """
    from tabzoo.train.state import export_latest

    from tabzoo_orion_msp import __version__

    run = Path(run_dir)
    dest = CHECKPOINT_DIR / name
    if Path(str(dest) + ".json").exists() and not overwrite:
        raise CheckpointError(f"{dest}.json exists; pass overwrite=True to replace the shipped checkpoint.")
    export_latest(run, dest, overwrite=True, package_version=__version__,
                  extra={"notes": dict(notes or {}), "curriculum": list(STAGES)})
    curve = run / "learning_curve.png"
    if curve.exists():
        shutil.copyfile(curve, CHECKPOINT_DIR / f"{name}-learning-curve.png")
    json.loads(Path(str(dest) + ".json").read_text())  # written and readable
    return dest
