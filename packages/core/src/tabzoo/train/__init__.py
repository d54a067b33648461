"""The core's two training loops.

* :func:`pretrain` (:mod:`tabzoo.train.loop`, ``tabzoo pretrain``): pretraining on a prior's
  batches, resumable, mixed precision, DDP-ready; in-context models with the episode loss, other
  models (e.g. Ramba) with their own ``pretrain_loss(batch)``.
* :func:`fit` (:mod:`tabzoo.train.fit`): one model fitted on one user table (NPT, MultiTab-Net,
  Ramba fine-tuning); the model supplies a :class:`FitTask` (its batches and loss).
* :class:`FineTuneMixin` (:mod:`tabzoo.train.finetune`): ``fine_tune=`` of the in-context estimators,
  their pretrained weights fine-tuned on the user's table through :func:`fit`.

Public names: :func:`pretrain`, :class:`PretrainConfig`, :class:`PretrainResult` (``TrainConfig`` and
``TrainResult`` before; deprecated aliases),
:func:`episode_loss`, :func:`model_inputs`, :func:`batch_seed`, :class:`WarmupCosine`,
:func:`load_history`, :func:`load_latest`; :func:`fit`, :class:`FitConfig`, :class:`FitTask`,
:class:`FitResult`, :class:`Evaluation`.
"""

from __future__ import annotations

from tabzoo.deprecation import renamed
from tabzoo.train.config import PretrainConfig, WarmupCosine, batch_seed
from tabzoo.train.finetune import FineTune, FineTuneMixin
from tabzoo.train.fit import Evaluation, FitConfig, FitResult, FitTask, fit
from tabzoo.train.loop import PretrainResult, episode_loss, model_inputs, pretrain
from tabzoo.train.state import load_history, load_latest

__all__ = [
    "Evaluation",
    "FineTune",
    "FineTuneMixin",
    "FitConfig",
    "FitResult",
    "FitTask",
    "PretrainConfig",
    "PretrainResult",
    "WarmupCosine",
    "batch_seed",
    "episode_loss",
    "fit",
    "load_history",
    "load_latest",
    "model_inputs",
    "pretrain",
]

# renamed in issue 31 ("config" and "train" meant several things): kept a while, with a DeprecationWarning
__getattr__ = renamed(__name__, {"TrainConfig": "PretrainConfig", "TrainResult": "PretrainResult"})
