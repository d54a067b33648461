"""Checkpoints: safetensors weights next to a JSON file. Loading never unpickles.

One save/load path for every model and estimator:

* :mod:`tabzoo.checkpoint.pair` - the pair format, atomic saves under faults, loading a model
  (:func:`save_checkpoint`, :func:`load_checkpoint`, :func:`load_model`, :func:`load_weights`) and
  training states (:func:`save_state`, :func:`load_state`);
* :mod:`tabzoo.checkpoint.shipped` - checkpoints by name: a plugin's shipped ones or a user's path
  stem (:func:`load_shipped_model`, :func:`find_checkpoint`, :func:`shipped_checkpoints`);
* :mod:`tabzoo.checkpoint.io` - file primitives (atomic writes, folder locks, safetensors bytes).
"""

from __future__ import annotations

from tabzoo.checkpoint.io import flatten_state, unflatten_state
from tabzoo.checkpoint.labels import labels_from_state, labels_state
from tabzoo.checkpoint.pair import (
    FORMAT,
    STATE_FORMAT,
    Checkpoint,
    checkpoint_stem,
    estimator_files,
    estimator_id,
    load_checkpoint,
    load_model,
    load_state,
    load_weights,
    model_stem,
    package_of,
    refuse_existing,
    save_checkpoint,
    save_state,
    saved_estimator,
    write_estimator,
)
from tabzoo.checkpoint.shipped import (
    find_checkpoint,
    load_pretrained,
    load_shipped_model,
    pretrained_path,
    read_checkpoint_cached,
    resolve_checkpoint,
    shipped_checkpoints,
    shipped_dir,
)
from tabzoo.errors import CheckpointError

__all__ = [
    "FORMAT",
    "STATE_FORMAT",
    "Checkpoint",
    "CheckpointError",
    "checkpoint_stem",
    "estimator_files",
    "estimator_id",
    "model_stem",
    "find_checkpoint",
    "flatten_state",
    "load_checkpoint",
    "load_model",
    "load_pretrained",
    "load_shipped_model",
    "load_state",
    "load_weights",
    "package_of",
    "pretrained_path",
    "read_checkpoint_cached",
    "refuse_existing",
    "resolve_checkpoint",
    "save_checkpoint",
    "save_state",
    "labels_state",
    "labels_from_state",
    "saved_estimator",
    "shipped_checkpoints",
    "shipped_dir",
    "unflatten_state",
    "write_estimator",
]
