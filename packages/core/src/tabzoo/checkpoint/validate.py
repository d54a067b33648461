"""Integrity and limits of a checkpoint's JSON, checked before anything is allocated (issue 24 item 3).

* :func:`meta_digest` - one SHA-256 over the whole JSON (architecture, config, prior, steps, extra,
  and the SHA-256 of the weights file), stored as ``digest``: a hand-edited config (say ``d_model``
  set to 60,000) no longer matches and is refused as edited. SHA-256 without a key detects edits and
  corruption, not a forger who recomputes it; the checks below hold even then.
* :func:`check_config` - the config is JSON scalars, lists and objects, numbers finite, integers
  within :data:`MAX_INT`, nested at most :data:`MAX_DEPTH` levels.
* :func:`check_build` - checks the estimated memory of the real build with
  :func:`tabzoo.kernels.memory.check_memory` before it runs. With a verified digest the config
  is the one saved with these weights, so the model's size is the stored tensors' size. Without
  one (format 1), the model is first built on PyTorch's ``meta`` device (shapes only, nothing
  allocated) and a config whose shapes differ from the stored weights is refused. (The meta build
  is not run for every load: the first meta operation of a process can import sympy, seconds.)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from tabzoo.checkpoint.io import sha256
from tabzoo.errors import CheckpointError, MemoryLimitError

__all__ = ["DIGEST", "MAX_DEPTH", "MAX_INT", "check_build", "check_config", "meta_digest"]

DIGEST = "digest"
MAX_INT = 2**40
"""Largest magnitude of an integer in a config (sizes, counts, seeds)."""
MAX_DEPTH = 8


def meta_digest(meta: Mapping[str, Any]) -> str:
    """SHA-256 of the JSON ``meta`` without its ``digest`` key (keys sorted, compact separators).

    ``meta`` holds the weights file's SHA-256, so one digest covers the config and the weights."""
    body = {k: v for k, v in meta.items() if k != DIGEST}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)
    return sha256(text.encode("utf-8"))


def check_digest(meta: Mapping[str, Any], meta_path: Path, *, required: bool) -> None:
    """Refuse a JSON whose ``digest`` is missing (when ``required``) or does not match its content."""
    saved = meta.get(DIGEST)
    if saved is None and not required:
        return
    if saved != meta_digest(meta):
        what = "has no digest" if saved is None else "does not match its digest"
        raise CheckpointError(
            f"{meta_path} {what}: the JSON (config, architecture or metadata) was edited or corrupted "
            "after it was saved, so it may no longer describe the weights. Nothing was built or "
            "loaded. Use the original file, or load the weights with the config you trust and save "
            "the checkpoint again (tabzoo.checkpoint.save_checkpoint)."
        )


def check_config(config: Any, where: str) -> None:
    """Refuse a config that is not plain JSON data within limits (see the module docstring)."""

    def walk(value: Any, key: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise CheckpointError(f"{where}: config entry {key!r} is nested deeper than {MAX_DEPTH} levels. {fix}")
        if value is None or isinstance(value, (bool, str)):
            return
        if isinstance(value, int):
            if abs(value) > MAX_INT:
                raise CheckpointError(f"{where}: config entry {key!r} = {value} is beyond the limit of "
                                      f"{MAX_INT:,}. {fix}")
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                raise CheckpointError(f"{where}: config entry {key!r} = {value} is not finite. {fix}")
            return
        if isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{key}[{i}]", depth + 1)
            return
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, f"{key}.{name}" if key else str(name), depth + 1)
            return
        raise CheckpointError(f"{where}: config entry {key!r} is a {type(value).__name__}, not JSON data. {fix}")

    fix = "The checkpoint's JSON is damaged or was edited; use the original file."
    if not isinstance(config, dict):
        raise CheckpointError(f"{where}: config must be a JSON object, found {type(config).__name__}. {fix}")
    walk(config, "", 0)


def check_build(build: Callable[[dict[str, Any]], torch.nn.Module], config: dict[str, Any],
                tensors: Mapping[str, torch.Tensor], where: str, *, verified: bool,
                device: str | torch.device = "cpu") -> None:
    """Refuse, before the real ``build(config)`` allocates, a model beyond the memory limit
    (:class:`~tabzoo.errors.MemoryLimitError`). When ``verified`` (the JSON's digest matched) its
    size is that of ``tensors``; else ``build(config)`` runs on the meta device first, refusing:

    * a model whose parameter or buffer shapes differ from ``tensors`` (the stored weights), naming
      the first differences (an edited config builds another shape);
    * a model whose parameters and buffers would exceed the memory limit
      (:class:`~tabzoo.errors.MemoryLimitError` from :func:`tabzoo.kernels.memory.check_memory`).

    A builder that cannot run on the meta device (it computes values on the CPU) is not
    checked here; the real build and the strict weight loading still refuse a mismatch.
    """
    from tabzoo.kernels.memory import check_memory, format_bytes

    fix = "use a checkpoint with a smaller config, or free memory"
    if verified:
        total = sum(t.numel() * t.element_size() for t in tensors.values())
        check_memory(f"loading checkpoint {where}", float(total), fix, device=device,
                     detail=f"{format_bytes(total)} of stored weights")
        return
    try:
        with torch.device("meta"):
            model = build(dict(config))
        state = model.state_dict()
    except (MemoryLimitError, CheckpointError):
        raise
    except Exception:  # noqa: BLE001 - a builder that needs real tensors: checked by the real build
        return
    if not isinstance(model, torch.nn.Module):
        return
    diffs = [f"{name}: config gives {list(t.shape)}, weights hold {list(tensors[name].shape)}"
             for name, t in state.items() if name in tensors and tuple(t.shape) != tuple(tensors[name].shape)]
    if diffs:
        raise CheckpointError(
            f"{where}: the config in its JSON does not fit its weights ({'; '.join(diffs[:4])}"
            f"{'; ...' if len(diffs) > 4 else ''}). The JSON was edited or belongs to another save; "
            "nothing was built. Use the original JSON."
        )
    total = sum(t.numel() * t.element_size() for t in state.values())
    check_memory(f"loading checkpoint {where}", float(total), fix, device=device,
                 detail=f"{format_bytes(total)} of parameters and buffers")
