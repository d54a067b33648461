"""Atomic, pickle-free file I/O: safetensors for tensors, JSON for everything else."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from tabzoo.errors import CheckpointError


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def folder_lock(folder: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold an advisory ``flock`` on ``folder`` (exclusive for writers, shared for readers).

    Serialises checkpoint saves to one folder across processes, so two writers never interleave
    the files of a pair; the kernel releases it when a holder dies, even by ``kill -9``. Where
    ``fcntl`` or ``flock`` is unavailable (Windows, some network file systems) it does nothing,
    and loading still refuses a mixed pair by its SHA-256.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def tensors_to_bytes(tensors: Mapping[str, torch.Tensor]) -> bytes:
    """Serialise a flat ``{name: tensor}`` dict to safetensors bytes (CPU, contiguous, unshared)."""
    clean: dict[str, torch.Tensor] = {}
    for key, value in tensors.items():
        if not isinstance(value, torch.Tensor):
            raise CheckpointError(f"tensor {key!r} is a {type(value).__name__}, not a torch.Tensor.")
        clean[key] = value.detach().to("cpu").contiguous().clone()
    return st_save(clean)


def bytes_to_tensors(data: bytes, where: Path) -> dict[str, torch.Tensor]:
    try:
        return st_load(data)
    except Exception as exc:  # safetensors raises its own error types
        raise CheckpointError(
            f"{where} is not a valid safetensors file ({exc}); it is truncated or corrupt. "
            "Re-save or re-download the checkpoint."
        ) from exc


def read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise CheckpointError(
            f"checkpoint metadata {path} does not exist; a checkpoint is a pair "
            f"{path.with_suffix('.safetensors').name} + {path.name}. Check the path."
        ) from exc
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{path} is not valid JSON ({exc}); the file is truncated or corrupt.") from exc
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path} must hold a JSON object, found {type(meta).__name__}.")
    return meta


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise CheckpointError(
            f"checkpoint weights {path} do not exist, although its JSON does. The checkpoint is "
            "incomplete; save it again."
        ) from exc


# -- nested state (optimizer, scheduler, RNG) without pickle -------------------------------------
def flatten_state(obj: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """Split a nested structure into a JSON-able tree and a flat tensor dict.

    Supports dict (any int/str keys), list, tuple, str, int, float (incl. nan/inf), bool, None,
    ``torch.Tensor`` and ``numpy.ndarray``. Anything else raises :class:`CheckpointError`.
    """
    tensors: dict[str, torch.Tensor] = {}

    def enc(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            key = f"t{len(tensors)}"
            tensors[key] = x
            return {"__tensor__": key}
        if isinstance(x, np.ndarray):
            key = f"t{len(tensors)}"
            tensors[key] = torch.from_numpy(np.ascontiguousarray(x))
            return {"__ndarray__": key}
        if isinstance(x, bool) or x is None or isinstance(x, str):
            return x
        if isinstance(x, (int, np.integer)):
            return int(x)
        if isinstance(x, (float, np.floating)):
            return float(x) if math.isfinite(x) else {"__float__": repr(float(x))}
        if isinstance(x, tuple):
            return {"__tuple__": [enc(v) for v in x]}
        if isinstance(x, list):
            return [enc(v) for v in x]
        if isinstance(x, Mapping):
            if all(isinstance(k, str) for k in x) and not any(k.startswith("__") for k in x):
                return {k: enc(v) for k, v in x.items()}
            return {"__dict__": [[enc(k), enc(v)] for k, v in x.items()]}
        raise CheckpointError(
            f"cannot store a {type(x).__name__} without pickle; convert it to tensors, numbers, "
            "strings, lists or dicts first."
        )

    return enc(obj), tensors


def unflatten_state(tree: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    """Inverse of :func:`flatten_state`."""

    def dec(x: Any) -> Any:
        if isinstance(x, list):
            return [dec(v) for v in x]
        if isinstance(x, dict):
            if "__tensor__" in x:
                return tensors[x["__tensor__"]]
            if "__ndarray__" in x:
                return tensors[x["__ndarray__"]].numpy()
            if "__float__" in x:
                return float(x["__float__"])
            if "__tuple__" in x:
                return tuple(dec(v) for v in x["__tuple__"])
            if "__dict__" in x:
                return {_hashable(dec(k)): dec(v) for k, v in x["__dict__"]}
            return {k: dec(v) for k, v in x.items()}
        return x

    return dec(tree)


def _hashable(x: Any) -> Any:
    return tuple(x) if isinstance(x, list) else x
