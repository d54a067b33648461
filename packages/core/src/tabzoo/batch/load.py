"""A fitted estimator back from the checkpoint pairs its ``save`` wrote (safetensors + JSON, no pickle).

The state's JSON names the estimator class (``"module:Class"``); it must be an
:class:`~tabzoo.estimators.base.InContextEstimator` (or have a ``load`` classmethod that a plugin
documents, e.g. NPT's), so a JSON file cannot make a worker call anything else. Loads are cached per
process by (stem, mtime, device): a Dask or Ray worker loads each model once.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from tabzoo.errors import CheckpointError

__all__ = ["load_estimator", "saved_class"]


def saved_class(path: str | Path) -> Any:
    """The estimator class named by the fitted state at stem ``path``."""
    from tabzoo.checkpoint import checkpoint_stem
    from tabzoo.checkpoint.io import read_json
    from tabzoo.estimators.base import InContextEstimator
    from tabzoo.plugins import resolve_object

    stem = checkpoint_stem(path)
    meta = read_json(stem.with_name(stem.name + ".json"))
    name = (meta.get("extra") or {}).get("estimator")
    if not isinstance(name, str) or ":" not in name:
        raise CheckpointError(f"{stem}.json names no estimator class; it is not a fitted estimator saved with "
                              "est.save(path). Save the fitted estimator with .save() first.")
    cls = resolve_object(name)
    if not (isinstance(cls, type) and issubclass(cls, InContextEstimator)):
        raise CheckpointError(f"{stem}.json names {name!r}, which is not a tabzoo in-context estimator; load it "
                              "with its own class's load().")
    return cls


@functools.lru_cache(maxsize=8)
def _load(stem: str, mtime: float, device: str | None) -> Any:
    return saved_class(stem).load(stem, device=device)


def load_estimator(path: str | Path, device: str | None = None) -> Any:
    """The fitted estimator saved at stem ``path`` (``est.save(path)``), loaded once per process.

    :param device: overrides the saved device (workers without a GPU: ``"cpu"``).
    :raises CheckpointError: a missing or corrupt pair, or a state that names no in-context estimator.
    """
    from tabzoo.checkpoint import checkpoint_stem

    stem = checkpoint_stem(path)
    meta = stem.with_name(stem.name + ".json")
    mtime = meta.stat().st_mtime if meta.exists() else 0.0
    return _load(str(stem), mtime, device)
