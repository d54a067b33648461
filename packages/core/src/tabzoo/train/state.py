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
from tabzoo.checkpoint.io import atomic_write
from tabzoo.errors import CheckpointError

logger = logging.getLogger(__name__)

__all__ = [
    "LATEST",
    "capture_rng",
    "load_history",
    "load_latest",
    "machine_info",
    "plot_learning_curve",
    "restore_rng",
    "write_state",
]

LATEST = "latest.json"


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
    """The training state ``latest.json`` names, or ``None`` when the folder has none."""
    out = Path(out)
    pointer = out / LATEST
    if not pointer.exists():
        return None
    try:
        name = json.loads(pointer.read_text(encoding="utf-8"))["state"]
    except (json.JSONDecodeError, KeyError) as exc:
        raise CheckpointError(f"{pointer} is corrupt ({exc}); delete it and the run restarts from step 0.") from exc
    return load_state(out / name)


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
