"""Checkpoints by name: a plugin's shipped checkpoints (package data, no network) or a user's path stem.

A plugin ships its pretrained checkpoints as ``<package>/checkpoints/<name>.{safetensors,json}``.
Every in-context plugin loads its model through :func:`load_shipped_model`: a shipped name or the
path stem of a pair written by ``tabzoo pretrain``, checked against the architecture, read once
per path and JSON mtime, built by the plugin's ``build(config)``, every weight present.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from tabzoo.checkpoint.pair import Checkpoint, load_checkpoint, load_model
from tabzoo.errors import CheckpointError

__all__ = ["find_checkpoint", "load_pretrained", "load_shipped_model", "pretrained_path", "read_checkpoint_cached",
           "resolve_checkpoint", "shipped_checkpoints", "shipped_dir"]


def shipped_dir(package: str) -> Path:
    """The folder of the checkpoints that ``package`` (an import name, ``"tabzoo_tabflex"``) ships."""
    return Path(str(resources.files(package).joinpath("checkpoints")))


def shipped_checkpoints(package: str) -> list[str]:
    """Names of the checkpoints ``package`` ships (sorted; empty when it ships none)."""
    root = shipped_dir(package)
    return sorted(p.stem for p in root.glob("*.json")) if root.is_dir() else []


def pretrained_path(package: str, name: str) -> Path:
    """Path stem of a checkpoint shipped as package data under ``<package>/checkpoints/<name>``."""
    stem = shipped_dir(package) / name
    if not stem.with_name(name + ".json").exists():
        available = shipped_checkpoints(package)
        raise CheckpointError(
            f"package {package!r} ships no checkpoint named {name!r}; available: {available}."
        )
    return stem


def resolve_checkpoint(checkpoint: str, shipped_dir: str | Path, *, model: str, cli_name: str) -> Path:
    """Path stem of ``checkpoint``: a name shipped in ``shipped_dir``, or the stem (with or without
    ``.json`` / ``.safetensors``) of a user's ``.safetensors`` + ``.json`` pair.

    :param model: the model's name in the error message (``"TabFlex"``).
    :param cli_name: its ``tabzoo pretrain --model`` name, for the fix in the message.
    :raises CheckpointError: neither, naming the shipped checkpoints.
    """
    shipped_dir = Path(shipped_dir)
    # a shipped name is a bare name: an absolute path joined to shipped_dir would replace it
    if Path(checkpoint).name == checkpoint and (shipped_dir / f"{checkpoint}.json").exists():
        return shipped_dir / checkpoint
    path = Path(checkpoint)
    if path.suffix in (".json", ".safetensors"):
        path = path.with_suffix("")
    if Path(str(path) + ".json").exists() and Path(str(path) + ".safetensors").exists():
        return path
    shipped = sorted(q.stem for q in shipped_dir.glob("*.json"))
    raise CheckpointError(
        f"{model} checkpoint {checkpoint!r} not found: it is neither a shipped checkpoint {shipped} nor a "
        "path stem of a .safetensors + .json pair. Pass one of those names or the stem of a file written "
        f"by `tabzoo pretrain --model {cli_name}`."
    )


def find_checkpoint(checkpoint: str | Path, *, package: str, architecture: str, model: str | None = None) -> Path:
    """Path stem of ``checkpoint``: a name shipped by ``package`` or a user's path stem
    (:func:`resolve_checkpoint`); ``model`` names it in messages (default ``architecture``)."""
    return resolve_checkpoint(str(checkpoint), shipped_dir(package), model=model or architecture,
                              cli_name=architecture)


def read_checkpoint_cached(stem: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """``(tensors, config)`` of the checkpoint at ``stem``, read once per path and JSON mtime
    (a rewritten checkpoint is read again). The tensors are shared: do not modify them."""
    ckpt = load_checkpoint(stem, cached=True)
    return ckpt.tensors, ckpt.config


def load_shipped_model(checkpoint: str | Path, *, package: str, architecture: str,
                       build: Callable[[dict[str, Any]], torch.nn.Module], model: str | None = None) -> torch.nn.Module:
    """The model (eval mode) of ``checkpoint``, a name shipped by ``package`` or a user's path stem.

    :param architecture: the architecture the checkpoint's JSON must name (also its ``tabzoo pretrain
        --model`` name in messages).
    :param build: ``build(config) -> nn.Module``, the plugin's builder for the stored config.
    :param model: the model's name in messages (default ``architecture``).
    :raises CheckpointError: not found, corrupt, of another architecture, or not fitting the built model.
    """
    stem = find_checkpoint(checkpoint, package=package, architecture=architecture, model=model)
    return load_model(stem, build, architecture=architecture, cached=True).eval()


def load_pretrained(package: str, name: str) -> Checkpoint:
    """Load a checkpoint shipped as package data, with no network access."""
    return load_checkpoint(pretrained_path(package, name))
