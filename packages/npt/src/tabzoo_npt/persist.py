"""Save and load a fitted NPT estimator through the core's checkpoint pairs (no pickle).

A saved estimator at stem ``path`` is two pairs, as for the core's in-context estimators
(:meth:`tabzoo.estimators.InContextEstimator.save`):

* ``path.safetensors`` + ``path.json`` - the fitted state (:func:`tabzoo.checkpoint.save_state`):
  constructor parameters, the fitted preprocessing (:class:`~tabzoo_npt.encoding.TableEncoder`),
  the label encoding (``classes_``) or the target standardisation (``y_mean_``, ``y_std_``), the
  context cells ``context_ [n_train, d]`` and, in the semi-supervised and transductive modes,
  the unlabeled rows;
* ``path.model.safetensors`` + ``path.model.json`` - the NPT weights and its architecture config
  (:func:`tabzoo.checkpoint.save_checkpoint`, architecture ``"npt"``).

Loading rebuilds the model from the stored config and weights, so predictions after a reload
are bit-identical to those before. An existing file is never replaced unless ``overwrite=True``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from tabzoo.checkpoint import labels_from_state, labels_state
from tabzoo.errors import CheckpointError
from tabzoo.estimators.base import resolve_device
from tabzoo.estimators.preprocessing import TabularPreprocessor
from tabzoo.estimators.sk import check_is_fitted

from tabzoo_npt.encoding import TableEncoder
from tabzoo_npt.model import NPTConfig, build

__all__ = ["load_estimator", "save_estimator"]

ARCHITECTURE = "npt"


def save_estimator(est: Any, path: str | Path, *, overwrite: bool = False) -> Path:
    """Save the fitted NPT estimator ``est`` at stem ``path``; returns the stem.

    :raises TabzooInputError: a file of the pair exists and ``overwrite`` is false.
    """
    from tabzoo.checkpoint import write_estimator

    check_is_fitted(est, "model_")
    encoder: TableEncoder = est.encoder_
    fitted: dict[str, Any] = {"targets": list(est.targets_)}
    if hasattr(est, "classes_"):
        fitted["classes"] = labels_state(np.asarray(est.classes_))
    if hasattr(est, "y_mean_"):
        fitted.update(y_mean=np.asarray(est.y_mean_, np.float64), y_std=np.asarray(est.y_std_, np.float64),
                      multi=bool(est._multi))
    state = {
        "params": est.get_params(deep=False),
        "encoder": encoder.state_dict(),
        "context": np.ascontiguousarray(est.context_, dtype=np.float32),
        "unlabeled": None if getattr(est, "unlabeled_", None) is None else np.ascontiguousarray(est.unlabeled_),
        "n_features_in": int(est.n_features_in_),
        "feature_names_in": [str(n) for n in getattr(est, "feature_names_in_", [])] or None,
        "fitted": fitted,
    }
    return write_estimator(path, est, state, est.model_, architecture=ARCHITECTURE,
                           config=est.model_.config.to_dict(), overwrite=overwrite)


def load_estimator(cls: type, path: str | Path, device: str | None = None) -> Any:
    """Load an estimator of class ``cls`` saved by :func:`save_estimator` (``device`` overrides the saved one)."""
    from tabzoo.checkpoint import (
        estimator_id,
        load_checkpoint,
        load_weights,
        model_stem,
        saved_estimator,
    )

    stem, state, est = saved_estimator(cls, path, device)
    want = estimator_id(cls)
    encoder = TableEncoder()
    encoder.pre = TabularPreprocessor.from_state_dict(state["encoder"]["pre"])
    encoder.cardinalities = tuple(int(c) for c in state["encoder"]["cardinalities"])
    est.encoder_ = encoder
    est.context_ = np.ascontiguousarray(state["context"], dtype=np.float32)
    unlabeled = state.get("unlabeled")
    est.unlabeled_ = None if unlabeled is None else np.ascontiguousarray(unlabeled, dtype=np.float32)
    est.n_features_in_ = int(state["n_features_in"])
    if state.get("feature_names_in"):
        est.feature_names_in_ = np.asarray(state["feature_names_in"], dtype=object)
    fitted = state["fitted"]
    est.targets_ = tuple(int(t) for t in fitted["targets"])
    if "classes" in fitted:
        est.classes_ = labels_from_state(fitted["classes"])
        est.n_classes_ = len(est.classes_)
    if "y_mean" in fitted:
        est.y_mean_, est.y_std_ = np.asarray(fitted["y_mean"]), np.asarray(fitted["y_std"])
        est._multi = bool(fitted["multi"])
    ckpt = load_checkpoint(model_stem(stem), architecture=ARCHITECTURE)
    saved_by = ckpt.meta.get("extra", {}).get("estimator")
    if saved_by not in (None, want):
        raise CheckpointError(f"{stem} holds a {saved_by}, not a {want}; load it with the class that saved it.")
    cfg = dict(ckpt.config)
    cfg.pop("preset", None)
    model = build({**cfg, "cardinalities": tuple(cfg["cardinalities"])})
    if not isinstance(model.config, NPTConfig) or model.config.to_dict() != ckpt.config:
        raise CheckpointError(f"{stem}.model.json holds a config this version of tabzoo-npt builds differently; "
                              "refit and save the model with this version.")
    load_weights(model, ckpt.tensors, what=f"{stem}.model", target=f"the model of {cls.__name__}",
                 fix="Load it with the class and tabzoo-npt version that saved it.")
    est.model_ = model.to(resolve_device(est.device)).eval()
    return est
