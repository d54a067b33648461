"""Save and load a fitted :class:`~tabzoo_ramba.api.Ramba` with every ensemble member (no pickle).

A saved Ramba at stem ``path`` is, through the core's checkpoint pairs:

* ``path.safetensors`` + ``path.json`` - the binding (:func:`tabzoo.checkpoint.save_state`): the
  task, the normalisation statistics and their cutoff, the sampler, the seed, the regression
  calibration line, and the number of members with each member's file name and SHA-256;
* ``path.member{k}.safetensors`` + ``.json`` for ``k = 0 .. K-1`` - member ``k``'s weights and
  config (:func:`tabzoo.checkpoint.save_checkpoint`, architecture ``"ramba"``); member 0 is
  :attr:`Ramba.model`.

Loading rebuilds every member from its config and weights, so a reloaded ensemble predicts the
same values as before (bit-identical on the same machine). An existing file is never replaced
unless ``overwrite=True``; a missing or altered member file is refused with a
:class:`~tabzoo.errors.CheckpointError` that names it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tabzoo.checkpoint import checkpoint_stem
from tabzoo.errors import CheckpointError, NotFittedError

from tabzoo_ramba.data import RelationalTask
from tabzoo_ramba.sampling import SamplerConfig
from tabzoo_ramba.serialize import ColumnStats

if TYPE_CHECKING:
    from tabzoo_ramba.api import Ramba

__all__ = ["FORMAT", "load_ramba", "member_stem", "save_ramba"]

#: the ``extra["format"]`` of a saved Ramba's state file
FORMAT = "tabzoo-ramba/1"


def member_stem(path: str | Path, k: int) -> Path:
    """The checkpoint stem of member ``k`` of the Ramba saved at ``path``."""
    stem = checkpoint_stem(path)
    return stem.with_name(f"{stem.name}.member{k}")


def _pair(stem: Path) -> list[Path]:
    return [stem.with_name(stem.name + ext) for ext in (".safetensors", ".json")]


def _members_on_disk(stem: Path) -> list[Path]:
    """The member files of earlier saves at ``stem`` (any count)."""
    return sorted(stem.parent.glob(f"{stem.name}.member*.safetensors")) + sorted(
        stem.parent.glob(f"{stem.name}.member*.json"))


def save_ramba(r: Ramba, path: str | Path, *, overwrite: bool = False) -> Path:
    """Save ``r`` (bound by ``fit`` or ``bind``) and all of its :attr:`~Ramba.members` at stem
    ``path``; returns the stem.

    :param overwrite: replace an earlier save at ``path`` (its member files included).
    :raises NotFittedError: ``r`` is not bound to a task.
    :raises TabzooInputError: a file of the save exists and ``overwrite`` is false.
    """
    from tabzoo.checkpoint import refuse_existing, save_checkpoint, save_state

    if r.task is None or r.stats is None:
        raise NotFittedError("the Ramba is not bound to a task: call fit(...) or bind(...) before save")
    stem = checkpoint_stem(path)
    existing = refuse_existing((*_pair(stem), *_members_on_disk(stem)), overwrite=overwrite)
    if r.model is not r.members[0]:  # the model was replaced after fit: it alone predicts (as in predict)
        r.members, r.snapshots_per_member = [r.model], 1
    for p in existing:  # an overwrite: no member of the earlier save survives
        p.unlink()
    members = []
    for k, member in enumerate(r.members):
        ms = member_stem(stem, k)
        save_checkpoint(ms, member, architecture="ramba", config=member.config, extra={"member": k})
        members.append({"file": ms.name, "sha256": _meta(ms).get("sha256")})
    task = r.task
    state = {
        "task": {"entity_table": task.entity_table, "target": task.target, "kind": task.kind,
                 "horizon_s": float(task.horizon_s), "hidden": list(task.hidden), "lookback_s": float(task.lookback_s),
                 "name": task.name, "column_horizons": [[c, float(h)] for c, h in task.column_horizons]},
        "stats": {"cutoff": int(r.stats.cutoff),
                  "columns": [[t, c, float(mu), float(sd)] for (t, c), (mu, sd) in sorted(r.stats.stats.items())]},
        "sampler": dataclasses.asdict(r.sampler), "seed": int(r.seed),
        "calibration": None if r.calibration is None else [float(v) for v in r.calibration],
        "members": members, "snapshots_per_member": int(r.snapshots_per_member),
    }
    save_state(stem, state, extra={"format": FORMAT})
    return stem


def load_ramba(cls: type[Ramba], path: str | Path, *, progress: bool = False) -> Ramba:
    """Load a Ramba saved by :func:`save_ramba` (every member; eval mode), built as ``cls``
    (:class:`~tabzoo_ramba.api.Ramba`, passed in by :meth:`Ramba.load`, so this module never imports it).

    :raises CheckpointError: the state or a member file is missing, corrupt, of another kind, or
        not the member that was saved.
    """
    from tabzoo.checkpoint import load_model, load_state

    from tabzoo_ramba.model import RambaModel

    stem = checkpoint_stem(path)
    meta = _meta(stem)
    if meta.get("extra", {}).get("format") != FORMAT:
        raise CheckpointError(f"{stem}.json is not a saved Ramba ({FORMAT}); load a single model checkpoint with "
                              "tabzoo.checkpoint.load_model(path, build=RambaModel)")
    state = load_state(stem)
    models = []
    for k, rec in enumerate(state["members"]):
        ms = stem.with_name(rec["file"])
        missing = [str(p) for p in _pair(ms) if not p.exists()]
        if missing:
            raise CheckpointError(f"the Ramba saved at {stem} has {len(state['members'])} members, but member {k}'s "
                                  f"{' and '.join(missing)} is missing; save the whole ensemble again")
        if _meta(ms).get("sha256") != rec["sha256"]:  # load_model checks the weights against this JSON
            raise CheckpointError(f"member {k} at {ms} is not the member saved with {stem}.json (its weights "
                                  "differ); save the whole ensemble again")
        models.append(load_model(ms, build=RambaModel, architecture="ramba").eval())
    if not models:
        raise CheckpointError(f"{stem}.json lists no members; save the Ramba again")
    r = cls(models[0], sampler=SamplerConfig(**state["sampler"]), seed=int(state["seed"]), progress=progress)
    r.members = models
    r.snapshots_per_member = int(state.get("snapshots_per_member", 1))  # saves before snapshots: 1
    t = state["task"]
    r.task = RelationalTask(t["entity_table"], t["target"], t["kind"], horizon_s=t["horizon_s"],
                            hidden=tuple(t["hidden"]), lookback_s=t["lookback_s"], name=t["name"],
                            column_horizons=[tuple(p) for p in t["column_horizons"]])
    r.stats = ColumnStats({(tb, c): (mu, sd) for tb, c, mu, sd in state["stats"]["columns"]},
                          int(state["stats"]["cutoff"]))
    r.calibration = None if state["calibration"] is None else (float(state["calibration"][0]),
                                                                float(state["calibration"][1]))
    return r


def _meta(stem: Path) -> dict[str, Any]:
    """The JSON of the pair at ``stem`` (raises :class:`CheckpointError` when it is missing)."""
    from tabzoo.checkpoint.io import read_json

    return read_json(stem.with_name(stem.name + ".json"))
