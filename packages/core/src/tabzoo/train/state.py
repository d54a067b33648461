"""Training checkpoints on disk: atomic, pickle-free, with a ``latest.json`` pointer.

Layout of an output folder::

    out/state-00000100.{safetensors,json}   full training state after 100 steps (save_state)
    out/latest.json                          {"state": "state-00000100", "step": 100, ...}
    out/model.{safetensors,json}             the model, with metadata (save_checkpoint)
    out/learning_curve.png                   loss against step

A new state is written completely, then ``latest.json`` is replaced atomically, then older
states are removed: a kill at any moment leaves a complete state that ``latest.json`` names.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tabzoo.checkpoint import load_state, save_state
from tabzoo.checkpoint.io import atomic_write, flatten_state, sha256
from tabzoo.errors import CheckpointError, TabzooInputError
from tabzoo.train.lock import LOCK

logger = logging.getLogger(__name__)

__all__ = [
    "LATEST",
    "capture_rng",
    "check_resume",
    "describe_run",
    "export_latest",
    "load_history",
    "load_latest",
    "machine_info",
    "plot_learning_curve",
    "require_resumable",
    "restore_rng",
    "write_state",
]

LATEST = "latest.json"
INTEGRITY = "integrity_sha256"
# PretrainConfig fields a resumed run must share with the saved one: they define the model and the
# batches. The schedule, freeze list, weight decay, devices and workers may change on resume.
RESUME_FIXED = ("batch_size", "seed", "model_config", "prior_config")


def capture_rng() -> dict[str, Any]:
    """torch (CPU and CUDA), numpy and Python RNG states, storable by ``save_state``."""
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": list(np.random.get_state()),
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        state["cuda"] = [s for s in torch.cuda.get_rng_state_all()]
    return state


def restore_rng(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"].to(torch.uint8))
    np_state = state["numpy"]
    np.random.set_state((np_state[0], np.asarray(np_state[1], dtype=np.uint32), *np_state[2:]))
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.to(torch.uint8) for s in state["cuda"]])


def machine_info(device: torch.device, world_size: int) -> dict[str, Any]:
    info: dict[str, Any] = {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "world_size": world_size,
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def write_state(out: Path, step: int, state: dict[str, Any], keep: int = 1) -> Path:
    """Write the state of ``step``, point ``latest.json`` at it, then drop older states."""
    name = f"state-{step:08d}"
    state = {**state, INTEGRITY: state_digest(state)}
    save_state(out / name, state, extra={"step": step})
    pointer = {"state": name, "step": step, "episodes_seen": state.get("episodes_seen")}
    atomic_write(out / LATEST, json.dumps(pointer, indent=2).encode("utf-8"))
    states = sorted(p.name[: -len(".json")] for p in out.glob("state-*.json"))
    for old in states[:-keep] if keep > 0 else []:
        if old != name:
            for suffix in (".json", ".safetensors"):
                (out / (old + suffix)).unlink(missing_ok=True)
    return out / name


def load_latest(out: str | Path) -> dict[str, Any] | None:
    """The training state ``latest.json`` names, or ``None`` when the folder has none.

    :raises CheckpointError: when ``latest.json`` is unreadable, names no state, or names a file
        outside ``out`` (a pointer may only name a ``state-*`` checkpoint inside its folder).
    """
    out = Path(out)
    pointer = out / LATEST
    if not pointer.exists():
        return None
    name = _pointed_state(pointer)
    state = load_state(out / name)
    _verify(state, out / f"{name}.json", pointer)
    return state


def state_digest(state: dict[str, Any]) -> str:
    """SHA-256 of everything in ``state`` but its tensors (step, config, prior, scheduler, ...).

    The tensors are covered by the SHA-256 of the ``.safetensors`` file; this digest covers the JSON
    tree that ``save_state`` writes beside it, so a hand-edited step or config is detected.
    """
    tree, tensors = flatten_state({k: v for k, v in state.items() if k != INTEGRITY})

    def shapes(x: Any) -> Any:  # tensor names follow dict order, which a reload may change
        if isinstance(x, list):
            return [shapes(v) for v in x]
        if isinstance(x, dict):
            tag = x.get("__tensor__", x.get("__ndarray__"))
            if isinstance(tag, str) and tag in tensors:
                return f"{list(tensors[tag].shape)} {tensors[tag].dtype}"
            return {k: shapes(v) for k, v in x.items()}
        return x

    return sha256(json.dumps(shapes(tree), sort_keys=True, separators=(",", ":")).encode("utf-8"))


def _verify(state: Any, path: Path, pointer: Path) -> None:
    """Refuse a state whose JSON was edited: digest, step against losses and ``latest.json``."""
    fix = ("it was edited or corrupted after it was written, and resuming from it would not continue the run "
           "that was saved. Restore the folder from a backup, or start a new run in another --out folder.")
    if not isinstance(state, dict) or not isinstance(state.get("step"), int):
        raise CheckpointError(f"{path} holds no training state with an integer step; {fix}")
    saved = state.get(INTEGRITY)
    if saved is not None and saved != state_digest(state):
        raise CheckpointError(f"{path} does not match its recorded digest ({INTEGRITY}); {fix}")
    n_losses = len(np.asarray(state.get("losses", ())))
    if n_losses != state["step"]:
        raise CheckpointError(f"{path} says step {state['step']} but records {n_losses} losses; {fix}")
    try:
        said = json.loads(pointer.read_text(encoding="utf-8")).get("step")
    except (OSError, ValueError, AttributeError):
        said = None
    if said is not None and said != state["step"]:
        raise CheckpointError(f"{pointer} says step {said} but {path.name} holds step {state['step']}; {fix}")


def check_resume(state: dict[str, Any], *, prior: str, config: dict[str, Any]) -> None:
    """Refuse to resume ``state`` with another prior or another model/batch config, naming each difference.

    :param prior: the prior name of the run being started.
    :param config: its ``PretrainConfig.to_dict()``.
    :raises TabzooInputError: listing what differs (saved -> now) and the fix.
    """
    saved_cfg = state.get("config") or {}
    diffs = []
    if state.get("prior") != prior:
        diffs.append(f"prior {state.get('prior')!r} -> {prior!r}")
    for key in RESUME_FIXED:
        old, new = _plain(saved_cfg.get(key)), _plain(config.get(key))
        if old != new:
            diffs.append(f"{key} {json.dumps(old, sort_keys=True)} -> {json.dumps(new, sort_keys=True)}")
    if diffs:
        raise TabzooInputError(
            f"resume: this run differs from the one saved at step {state.get('step')}: {'; '.join(diffs)}. "
            "Resume with the saved settings, or start a new run in another --out folder (the steps, learning "
            "rate and schedule may change on resume; these may not).")


def _plain(value: Any) -> Any:
    """``value`` as JSON would give it back (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _pointed_state(pointer: Path) -> str:
    """The state name in ``pointer``, checked to be a plain ``state-*`` name inside its folder."""
    fix = (f"the run in {pointer.parent} cannot be resumed from it. Restore {pointer.name} from a backup, "
           "or start a new run in another --out folder (this run's files are left as they are).")
    try:
        data = json.loads(pointer.read_text(encoding="utf-8"))
        name = data["state"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{pointer} is corrupt ({type(exc).__name__}: {exc}); {fix}") from exc
    if not isinstance(name, str) or not name.startswith("state-") or Path(name).name != name or name in (".", ".."):
        raise CheckpointError(
            f"{pointer} names {name!r}, which is not a state-* checkpoint inside {pointer.parent}; {fix}")
    return name


def describe_run(out: str | Path) -> str:
    """One line saying what a run folder holds, for messages (``"nothing"`` when empty or absent)."""
    out = Path(out)
    if not out.exists():
        return "nothing (it does not exist)"
    if not out.is_dir():
        return "a file, not a folder"
    names = sorted(p.name for p in out.iterdir() if p.name != LOCK)
    if not names:
        return "nothing (it is empty)"
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return f"{len(names)} file(s): {shown}"


def require_resumable(out: str | Path) -> None:
    """Raise unless ``out`` holds a run that ``--resume`` can continue (a valid ``latest.json``).

    :raises CheckpointError: saying what the folder holds instead, and what to do.
    """
    out = Path(out)
    if not (out / LATEST).is_file():
        raise CheckpointError(
            f"--resume: {out} holds no resumable run ({LATEST} is missing); it holds {describe_run(out)}. "
            "Drop --resume to start a new run (in an empty folder, or with --overwrite), or pass the --out "
            "folder of the run to continue.")
    name = _pointed_state(out / LATEST)
    if not (out / f"{name}.json").is_file() or not (out / f"{name}.safetensors").is_file():
        raise CheckpointError(
            f"--resume: {out / LATEST} names {name}, but {name}.json / {name}.safetensors are not both in {out} "
            f"(it holds {describe_run(out)}); restore them, or start a new run in another --out folder.")


def load_history(out: str | Path) -> list[float]:
    """Loss per step of the run in ``out`` (from its latest state)."""
    state = load_latest(out)
    if state is None:
        raise CheckpointError(f"{out} holds no training state ({LATEST} is missing); run pretraining first.")
    return [float(v) for v in np.asarray(state["losses"], dtype=np.float64)]


def plot_learning_curve(path: Path, losses: list[float], title: str = "") -> Path | None:
    """Write a PNG of loss against step; returns ``None`` when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except ImportError:
        logger.info("matplotlib is not installed; no learning curve (pip install tabzoo-core[plot]).")
        return None
    fig = Figure(figsize=(6, 4), dpi=100)
    ax = fig.add_subplot()
    steps = np.arange(1, len(losses) + 1)
    ax.plot(steps, losses, lw=0.8, alpha=0.5, label="loss")
    if len(losses) >= 10:
        w = max(2, len(losses) // 20)
        smooth = np.convolve(losses, np.ones(w) / w, mode="valid")
        ax.plot(steps[w - 1 :], smooth, lw=1.5, label=f"mean of {w}")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    os.replace(tmp, path)
    return path


def export_latest(out: str | Path, dest: str | Path, *, overwrite: bool = False,
                  extra: dict[str, Any] | None = None, registry: Any = None, **meta: Any) -> Path:
    """Write the model of the run in ``out`` (its ``latest.json`` training state) as a checkpoint pair.

    The one way to publish a pretrained model: the weights, architecture, config (the architecture's
    ``default_config`` updated with the run's ``model_config``), prior and step come from the
    training state, so a run folder needs keep only what resumes training.

    :param dest: stem of the checkpoint to write (``dest.safetensors`` + ``dest.json``).
    :param overwrite: replace an existing checkpoint there (never silently).
    :param extra: merged over the run's own extras (episodes seen, final loss, wall time, training options).
    :param registry: where the architecture is looked up (default: the installed plugins).
    :param meta: further :func:`tabzoo.checkpoint.save_checkpoint` keywords (e.g. ``package_version``).
    :raises CheckpointError: when ``out`` holds no training state, or ``dest`` exists without ``overwrite``.
    """
    from tabzoo.checkpoint import save_checkpoint
    from tabzoo.plugins import get_registry

    state = load_latest(out)
    if state is None:
        raise CheckpointError(f"{out} holds no training state (latest.json); pass the --out folder of a run.")
    if Path(f"{dest}.json").exists() and not overwrite:
        raise CheckpointError(f"{dest}.json exists; pass overwrite=True to replace it.")
    train_config = dict(state["config"])
    spec = (registry or get_registry()).get("architectures", state["architecture"])
    config = {**dict(spec.default_config), **train_config.get("model_config", {})}
    losses = np.asarray(state["losses"], dtype=np.float64)
    run_extra = {"episodes_seen": int(state["episodes_seen"]), "wall_time_s": float(state["wall_time_s"]),
                 "final_loss": float(losses[-1]) if losses.size else None, "train_config": train_config}
    return save_checkpoint(dest, state["model"], architecture=state["architecture"], config=config,
                           prior=state["prior"], steps=int(state["step"]), extra={**run_extra, **(extra or {})},
                           **meta)
