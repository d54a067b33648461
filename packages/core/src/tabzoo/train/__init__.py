"""Pretraining of in-context models on synthetic priors: resumable, mixed precision, DDP-ready.

Public names: :func:`pretrain`, :class:`TrainConfig`, :class:`TrainResult`,
:func:`episode_loss`, :func:`model_inputs`, :func:`batch_seed`, :class:`WarmupCosine`,
:func:`load_history`, :func:`load_latest`.
"""

from __future__ import annotations

from tabzoo.train.config import TrainConfig, WarmupCosine, batch_seed
from tabzoo.train.loop import TrainResult, episode_loss, model_inputs, pretrain
from tabzoo.train.state import load_history, load_latest

__all__ = [
    "TrainConfig",
    "TrainResult",
    "WarmupCosine",
    "batch_seed",
    "episode_loss",
    "load_history",
    "load_latest",
    "model_inputs",
    "pretrain",
]
