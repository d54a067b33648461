"""Pretraining recipe of the shipped checkpoint and its export as package data.

The run is plain ``tabzoo pretrain`` (see ``pretraining/README.md`` at the repository root). The
curriculum is appendix B.2 scaled down to a 2-core CPU:

=======  ==================  =====================  ============================  ===========
stage    paper               here                   rows per dataset              trains
=======  ==================  =====================  ============================  ===========
1        25 000 steps x 2048  ``STAGES[0]`` steps    fixed (paper 1 024, here 128)  everything
2         2 000 steps x 512   ``STAGES[1]`` steps    log-uniform (paper 1 024-40 000,  everything
                                                     here 128-512), lr at its floor
3            50 steps x 512   not run                40 000-60 000, ICL only         -
=======  ==================  =====================  ============================  ===========

Stage 2 resumes stage 1's state (``--resume``) with a larger ``--steps``; the learning-rate
schedule is the one stored in the state, so stage 2 runs at the cosine's floor. Stage 3 needs
freezing every component but the ICL transformer, which ``tabzoo.train`` does not offer yet.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tabzoo.errors import CheckpointError

__all__ = ["CHECKPOINT_DIR", "STAGES", "export_checkpoint"]

CHECKPOINT_DIR = Path(__file__).parent / "checkpoints"

#: the scaled-down B.2 curriculum: (name, total steps at the end of the stage, prior_config rows)
STAGES: tuple[dict[str, Any], ...] = (
    {"stage": 1, "until_step": 600, "n_rows": [128, 128], "micro_batches": 8, "batch_size": 8},
    {"stage": 2, "until_step": None, "n_rows": [128, 512], "micro_batches": 8, "batch_size": 8},
)


def export_checkpoint(run_dir: str | Path, name: str = "orion-msp-small", *, overwrite: bool = False,
                      notes: dict[str, Any] | None = None) -> Path:
    """Copy a run's exported model into the package data, with metadata and its learning curve.

    :param run_dir: the ``--out`` folder of ``tabzoo pretrain`` (holds ``model.safetensors/json``).
    :param name: checkpoint name in the package (``<name>.safetensors``, ``<name>.json``,
        ``<name>-learning-curve.png``).
    :param overwrite: replace an existing checkpoint of that name (never silently).
    :param notes: extra metadata (curriculum, prior caveats) stored under ``extra.notes``.
    :return: the stem of the written checkpoint.
    """
    from tabzoo.checkpoint import load_checkpoint, save_checkpoint

    from tabzoo_orion_msp import __version__

    run = Path(run_dir)
    ckpt = load_checkpoint(run / "model")
    dest = CHECKPOINT_DIR / name
    if Path(str(dest) + ".json").exists() and not overwrite:
        raise CheckpointError(f"{dest}.json exists; pass overwrite=True to replace the shipped checkpoint.")
    meta = ckpt.meta
    extra = dict(meta.get("extra") or {})
    extra["notes"] = dict(notes or {})
    extra["curriculum"] = list(STAGES)
    save_checkpoint(dest, ckpt.tensors, architecture=meta["architecture"], config=meta["config"],
                    prior=meta.get("prior"), steps=meta.get("steps"), package_version=__version__, extra=extra)
    curve = run / "learning_curve.png"
    if curve.exists():
        shutil.copyfile(curve, CHECKPOINT_DIR / f"{name}-learning-curve.png")
    json.loads(Path(str(dest) + ".json").read_text())  # written and readable
    return dest
