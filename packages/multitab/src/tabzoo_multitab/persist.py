"""Save and load a fitted :class:`~tabzoo_multitab.estimator.MultiTabEstimator` through the core's
checkpoint pairs (safetensors + JSON, no pickle).

A saved estimator at stem ``path`` is two pairs:

* ``path.safetensors`` + ``path.json`` - the fitted state (:func:`tabzoo.checkpoint.save_state`):
  constructor parameters, the feature encoding (the core's preprocessor state), the tasks with their
  classes and regression standardisation, the prediction context rows, the temperatures, the
  per-task selection (``task_epochs_``, ``selection_``) and the epochs run;
* ``path.model.safetensors`` + ``path.model.json`` - the weights
  (:func:`tabzoo.checkpoint.save_checkpoint`, architecture ``"multitab-estimator"``): the network
  ``model_`` under ``model.*`` and, under per-task or guarded selection, every kept per-task
  snapshot of ``task_model_`` under ``task_model.nets.<k>.*`` (one per distinct epoch).

Loading rebuilds the networks from the saved parameters and the fitted encoders, then loads the
weights, refusing any missing, unexpected or mis-shaped tensor, so predictions after a reload are
bit-identical to those before. The training history (``fit_result_``) is not saved. An existing
file is never replaced unless ``overwrite=True``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from tabzoo.checkpoint import labels_from_state, labels_state
from tabzoo.errors import CheckpointError
from tabzoo.estimators import resolve_device
from tabzoo.estimators.preprocessing import NUMERIC, TabularPreprocessor
from tabzoo.estimators.sk import check_is_fitted

from tabzoo_multitab.config import TaskSpec
from tabzoo_multitab.preprocess import FeatureEncoder, TargetEncoder
from tabzoo_multitab.selection import PerTaskModel

__all__ = ["ARCHITECTURE", "save_estimator", "load_estimator"]

#: the ``architecture`` the weights pair names (the estimator's networks, not one bare model)
ARCHITECTURE = "multitab-estimator"
#: version of the state layout below
LAYOUT = 1


def save_estimator(est: Any, path: str | Path, *, overwrite: bool = False) -> Path:
    """Save the fitted estimator ``est`` at stem ``path``; returns the stem.

    :raises TabzooInputError: a file of either pair exists and ``overwrite`` is false.
    """
    from tabzoo.checkpoint import write_estimator

    check_is_fitted(est, "model_")
    tenc: TargetEncoder = est.target_encoder_
    ctx = est.context_
    task_model = getattr(est, "task_model_", None)
    state = {
        "layout": LAYOUT,
        "params": est.get_params(deep=False),
        "encoder": est.encoder_.pre.state_dict(),
        "tasks": [[t.name, t.kind, t.n_classes] for t in tenc.tasks],
        "classes": [labels_state(c) for c in tenc.classes],
        "stats": [[float(m), float(s)] for m, s in tenc.stats],
        "context": None if ctx is None else [ctx[0].detach().cpu(), None if ctx[1] is None else ctx[1].detach().cpu()],
        "single_output": bool(est.single_output_),
        "n_features_in": int(est.n_features_in_),
        "feature_names_in": [str(n) for n in getattr(est, "feature_names_in_", [])] or None,
        "temperatures": [float(t) for t in est.temperatures_],
        "task_epochs": [int(e) for e in est.task_epochs_],
        "selection": [dict(c) for c in est.selection_],
        "n_epochs": int(est.n_epochs_),
        "task_model_epochs": None if task_model is None else list(task_model.task_epochs),
    }
    tensors = {f"model.{k}": v for k, v in est.model_.state_dict().items()}
    if task_model is not None:
        tensors |= {f"task_model.{k}": v for k, v in task_model.state_dict().items()}
    return write_estimator(path, est, state, tensors, architecture=ARCHITECTURE,
                           config={"architecture": str(est.architecture), "tasks": state["tasks"]},
                           overwrite=overwrite, extra={"layout": LAYOUT})


def load_estimator(cls: type, path: str | Path, device: str | None = None) -> Any:
    """An estimator of class ``cls`` saved by :func:`save_estimator` (``device`` overrides the saved one).

    :raises CheckpointError: a file is missing or corrupt, the pair was saved by another class or
        another model, or its weights do not fit the networks the saved parameters build.
    """
    from tabzoo.checkpoint import (
        checkpoint_stem,
        estimator_id,
        load_checkpoint,
        load_weights,
        model_stem,
        saved_estimator,
    )

    stem = checkpoint_stem(path)
    want = estimator_id(cls)
    # the weights pair first: load_checkpoint names a missing file and refuses another model's pair
    ckpt = load_checkpoint(model_stem(stem), architecture=ARCHITECTURE)
    saved_by = ckpt.meta.get("extra", {}).get("estimator")
    if saved_by != want:
        raise CheckpointError(f"{stem}.model holds a {saved_by}, not a {want}; load it with the class that saved it.")
    stem, state, est = saved_estimator(cls, stem, device)
    if state.get("layout") != LAYOUT:
        raise CheckpointError(f"{stem}.json is not a saved {cls.__name__} (layout {LAYOUT}); save it again with "
                              "this version of tabzoo-multitab.")
    tasks = [TaskSpec(str(n), str(k), int(c)) for n, k, c in state["tasks"]]
    if ckpt.config.get("tasks") != state["tasks"] or ckpt.config.get("architecture") != state["params"].get("architecture"):
        raise CheckpointError(f"{stem}.json and {stem}.model.json belong to different saved estimators "
                              f"(tasks {state['tasks']} vs {ckpt.config.get('tasks')}); save the estimator again.")
    est.device_ = resolve_device(est.device)
    enc = FeatureEncoder.__new__(FeatureEncoder)
    enc.pre = TabularPreprocessor.from_state_dict(state["encoder"])
    kinds = enc.pre.kinds
    enc.numeric = [j for j, k in enumerate(kinds) if k == NUMERIC]
    enc.coded = [j for j, k in enumerate(kinds) if k != NUMERIC]
    est.encoder_ = enc
    tenc = TargetEncoder()
    tenc.tasks = tasks
    tenc.classes = [labels_from_state(c) for c in state["classes"]]
    tenc.stats = [(float(m), float(s)) for m, s in state["stats"]]
    est.target_encoder_ = tenc
    est.tasks_ = tuple(tasks)
    est.classes_ = list(tenc.classes)
    est.single_output_ = bool(state["single_output"])
    est.n_features_in_ = int(state["n_features_in"])
    if state.get("feature_names_in"):
        est.feature_names_in_ = np.asarray(state["feature_names_in"], dtype=object)
    ctx = state["context"]
    est.context_ = None if ctx is None else (ctx[0].to(est.device_), None if ctx[1] is None else ctx[1].to(est.device_))
    est.temperatures_ = [float(t) for t in state["temperatures"]]
    est.task_epochs_ = [int(e) for e in state["task_epochs"]]
    est.selection_ = [dict(c) for c in state["selection"]]
    est.n_epochs_ = int(state["n_epochs"])

    def part(prefix: str) -> dict[str, torch.Tensor]:
        return {k[len(prefix):]: v for k, v in ckpt.tensors.items() if k.startswith(prefix)}

    unknown = [k for k in ckpt.tensors if not k.startswith(("model.", "task_model."))]
    if unknown:
        raise CheckpointError(f"{stem}.model holds tensors {unknown[:3]} that no network of {cls.__name__} has.")
    fix = "Load it with the class and tabzoo-multitab version that saved it."
    with torch.random.fork_rng(devices=[]):  # building draws initial weights: leave the caller's RNG alone
        model = est._build()
        load_weights(model, part("model."), what=f"{stem}.model", target=f"the network of {cls.__name__}", fix=fix)
        est.model_ = model.to(est.device_).eval()
        est.task_model_ = None
        epochs = state["task_model_epochs"]
        if epochs is not None:
            task_model = PerTaskModel(est._build(), [est._build().state_dict()] * len(tasks), epochs, tasks)
            load_weights(task_model, part("task_model."), what=f"{stem}.model",
                         target=f"the per-task snapshots of {cls.__name__}", fix=fix)
            est.task_model_ = task_model.to(est.device_).eval()
    return est
