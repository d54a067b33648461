"""Checkpoints: safetensors weights next to a JSON file. Loading never unpickles.

A checkpoint at stem ``path`` is the pair ``path.safetensors`` + ``path.json``. The JSON holds
the architecture name, its config, the package versions, the prior, the training steps, any
extra metadata, and the SHA-256 of the weights file, so that a truncated or mismatched file is
refused before anything is loaded. Both files are written atomically (temporary file + rename),
weights first; a crash between the two renames leaves a hash mismatch, which loading reports.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from tabzoo.checkpoint.io import (
    atomic_write,
    bytes_to_tensors,
    flatten_state,
    read_bytes,
    read_json,
    sha256,
    tensors_to_bytes,
    unflatten_state,
)
from tabzoo.errors import CheckpointError

FORMAT = "tabzoo-checkpoint/1"
STATE_FORMAT = "tabzoo-state/1"

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "flatten_state",
    "load_checkpoint",
    "load_model",
    "load_pretrained",
    "load_state",
    "pretrained_path",
    "save_checkpoint",
    "save_state",
    "unflatten_state",
]


def _paths(path: str | Path) -> tuple[Path, Path]:
    p = Path(path)
    stem = p.with_suffix("") if p.suffix in {".safetensors", ".json"} else p
    return stem.with_name(stem.name + ".safetensors"), stem.with_name(stem.name + ".json")


@dataclass
class Checkpoint:
    """A loaded checkpoint: ``tensors`` (name -> tensor) and its ``meta`` dict."""

    tensors: dict[str, torch.Tensor]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return str(self.meta.get("architecture", ""))

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.meta.get("config", {}))


def _versions() -> dict[str, str]:
    from tabzoo import __version__

    return {"tabzoo-core": __version__, "torch": torch.__version__}


def _write_pair(path: str | Path, tensors: Mapping[str, torch.Tensor], meta: dict[str, Any]) -> Path:
    weights, meta_path = _paths(path)
    data = tensors_to_bytes(tensors)
    meta = {**meta, "sha256": sha256(data), "n_tensors": len(tensors)}
    atomic_write(weights, data)
    atomic_write(meta_path, json.dumps(meta, indent=2, sort_keys=True).encode("utf-8"))
    return weights


def _read_pair(path: str | Path, expected_format: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    weights, meta_path = _paths(path)
    meta = read_json(meta_path)
    if meta.get("format") != expected_format:
        raise CheckpointError(
            f"{meta_path} has format {meta.get('format')!r}, expected {expected_format!r}; "
            "it was not written by this kind of tabzoo save."
        )
    data = read_bytes(weights)
    if sha256(data) != meta.get("sha256"):
        raise CheckpointError(
            f"{weights} does not match the SHA-256 recorded in {meta_path.name}: the weights are "
            "truncated, corrupt, or from another save. Nothing was loaded; save the checkpoint again."
        )
    return bytes_to_tensors(data, weights), meta


def save_checkpoint(
    path: str | Path,
    model: torch.nn.Module | Mapping[str, torch.Tensor],
    *,
    architecture: str,
    config: Mapping[str, Any],
    prior: str | None = None,
    steps: int | None = None,
    package_version: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Save weights to ``path.safetensors`` and metadata to ``path.json`` atomically.

    :param model: a module (its ``state_dict()`` is saved) or a flat ``{name: tensor}`` dict.
    :param config: the architecture config, JSON-serialisable.
    :returns: the path of the weights file.
    """
    tensors = model.state_dict() if isinstance(model, torch.nn.Module) else dict(model)
    meta: dict[str, Any] = {
        "format": FORMAT,
        "architecture": architecture,
        "config": dict(config),
        "prior": prior,
        "steps": steps,
        "package_version": package_version,
        "versions": _versions(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "extra": dict(extra or {}),
    }
    try:
        json.dumps(meta)
    except TypeError as exc:
        raise CheckpointError(f"checkpoint metadata must be JSON-serialisable: {exc}") from exc
    return _write_pair(path, tensors, meta)


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Load a checkpoint saved by :func:`save_checkpoint`; refuses corrupt or partial files."""
    tensors, meta = _read_pair(path, FORMAT)
    return Checkpoint(tensors=tensors, meta=meta)


def load_model(path: str | Path, build: Any = None, *, strict: bool = True) -> torch.nn.Module:
    """Build a model and load a checkpoint into it.

    :param build: ``build(config) -> nn.Module``; by default the registered architecture of
        the checkpoint's ``architecture`` name builds it.
    """
    ckpt = load_checkpoint(path)
    if build is None:
        from tabzoo.plugins import get_architecture

        model = get_architecture(ckpt.architecture).build(ckpt.config)
    else:
        model = build(ckpt.config)
    missing, unexpected = model.load_state_dict(ckpt.tensors, strict=False)
    if strict and (missing or unexpected):
        raise CheckpointError(
            f"checkpoint {path} does not fit architecture {ckpt.architecture!r} with its config: "
            f"missing keys {list(missing)[:8]}, unexpected keys {list(unexpected)[:8]}. Use the "
            "config stored in the checkpoint's JSON."
        )
    return model


def pretrained_path(package: str, name: str) -> Path:
    """Path stem of a checkpoint shipped as package data under ``<package>/checkpoints/<name>``."""
    root = resources.files(package).joinpath("checkpoints")
    stem = Path(str(root)) / name
    if not stem.with_name(name + ".json").exists():
        available = sorted(p.stem for p in Path(str(root)).glob("*.json")) if Path(str(root)).is_dir() else []
        raise CheckpointError(
            f"package {package!r} ships no checkpoint named {name!r}; available: {available}."
        )
    return stem


def load_pretrained(package: str, name: str) -> Checkpoint:
    """Load a checkpoint shipped as package data, with no network access."""
    return load_checkpoint(pretrained_path(package, name))


def save_state(path: str | Path, state: Any, *, extra: Mapping[str, Any] | None = None) -> Path:
    """Save a nested training state (model, optimizer, scheduler, RNG, step) without pickle."""
    tree, tensors = flatten_state(state)
    meta = {"format": STATE_FORMAT, "tree": tree, "versions": _versions(), "extra": dict(extra or {})}
    return _write_pair(path, tensors, meta)


def load_state(path: str | Path) -> Any:
    """Load a state saved by :func:`save_state`."""
    tensors, meta = _read_pair(path, STATE_FORMAT)
    return unflatten_state(meta["tree"], tensors)
