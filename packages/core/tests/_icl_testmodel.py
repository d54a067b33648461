"""A tiny in-context model, its estimators, a blob prior and a throwaway plugin for core's tests.

``KernelICL`` works without training: each query row attends (softmax over negative squared
distances in per-episode standardised feature space) to the context rows and averages their
one-hot labels (classification) or their targets (regression). Its learnable part, a
temperature and per-feature weights, lets pretraining change something.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import torch
from _blobs import BlobsPrior  # noqa: F401  (re-exported; lives apart so prefetch workers import it cheaply)
from tabzoo.estimators import InContextClassifier, InContextRegressor
from torch import nn
from torch.nn import functional as F

DEFAULT_CONFIG: dict[str, Any] = {
    "task": "classification", "max_classes": 10, "max_features": 64, "temperature": 0.1,
}
ARCH = "icl_test"
PRIOR = "blobs_test"


class KernelICL(nn.Module):
    """``model(x [B, N, F], y_context [B, n_context]) -> [B, N - n_context, n_out]``."""

    architecture = ARCH

    def __init__(self, task: str = "classification", max_classes: int = 10, max_features: int = 64,
                 temperature: float = 0.1) -> None:
        super().__init__()
        self.task, self.max_classes, self.max_features = task, max_classes, max_features
        self.config = {"task": task, "max_classes": max_classes, "max_features": max_features,
                       "temperature": temperature}
        self.log_temp = nn.Parameter(torch.tensor(math.log(temperature)))
        self.feature_weight = nn.Parameter(torch.ones(max_features))

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        n_ctx = y_context.shape[1]
        n_feat = x.shape[-1]
        ctx = x[:, :n_ctx]
        mu = ctx.mean(1, keepdim=True)
        sd = ctx.std(1, keepdim=True, unbiased=False)
        # zero padding features are constant: they add no distance and are not counted
        n_real = (sd > 1e-6).sum(-1, keepdim=True).clamp_min(1).to(x.dtype)  # [B, 1, 1]
        z = (x - mu) / (sd + 1e-3) * self.feature_weight[:n_feat]
        zc, zq = z[:, :n_ctx], z[:, n_ctx:]
        d2 = ((zq[:, :, None, :] - zc[:, None, :, :]) ** 2).sum(-1) / n_real  # [B, Nq, Nc]
        att = torch.softmax(-d2 / self.log_temp.exp(), dim=-1)
        if self.task == "regression":
            return (att * y_context[:, None, :]).sum(-1, keepdim=True)
        onehot = F.one_hot(y_context.long().clamp(0, self.max_classes - 1), self.max_classes).to(att.dtype)
        probs = (att[..., None] * onehot[:, None, :, :]).sum(2)  # [B, Nq, K]
        return torch.log(probs.clamp_min(1e-6))

    def loss(self, logits: torch.Tensor, y_query: torch.Tensor, batch: Any) -> torch.Tensor:
        """Regression loss: MSE over real query rows."""
        mask = batch.row_mask[:, batch.n_context:].to(logits.dtype)
        err = (logits[..., 0].float() - y_query.float()) ** 2
        return (err * mask).sum() / mask.sum().clamp_min(1)


def build(config: dict[str, Any]) -> KernelICL:
    return KernelICL(**{**DEFAULT_CONFIG, **config})


class ICLTestClassifier(InContextClassifier):
    """Classifier estimator of the test architecture (untrained weights)."""

    def _load_model(self) -> nn.Module:
        return build({})


class ICLTestRegressor(InContextRegressor):
    """Regressor estimator of the test architecture (untrained weights)."""

    def _load_model(self) -> nn.Module:
        return build({"task": "regression"})


PLUGIN_SOURCE = '''
from tabzoo.plugins import hookimpl, ArchitectureSpec, PriorSpec


def _build(config):
    from _icl_testmodel import build
    return build(config)


def _prior(**config):
    from _icl_testmodel import BlobsPrior
    return BlobsPrior(**config)


@hookimpl
def tabzoo_register_architectures(register):
    from _icl_testmodel import DEFAULT_CONFIG
    register(ArchitectureSpec(name="icl_test", build=_build, default_config=DEFAULT_CONFIG,
                              estimator="_icl_testmodel:ICLTestClassifier"))


@hookimpl
def tabzoo_register_priors(register):
    register(PriorSpec(name="blobs_test", factory=_prior))
'''


def plugin_env(root: Path) -> dict[str, str]:
    """Write a throwaway distribution registering ``icl_test`` + ``blobs_test`` into ``root``;
    returns the environment for a subprocess that should see it."""
    from _fake_dists import make_dist

    root.mkdir(parents=True, exist_ok=True)
    make_dist(root, "tz-icl-test", "tzicltest", "tz_icl_test_plugin", PLUGIN_SOURCE)
    tests_dir = str(Path(__file__).resolve().parent)
    path = os.pathsep.join([str(root), tests_dir, os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "TABZOO_LOAD_PLUGINS": "tzicltest"}


def use_plugin_env(root: Path, monkeypatch: Any) -> dict[str, str]:
    """:func:`plugin_env` for this process: its folders on ``sys.path``, its plugin enabled, the
    registry reset (reset it again after the test)."""
    from tabzoo.plugins import reset_registry

    env = plugin_env(root)
    for path in reversed(env["PYTHONPATH"].split(os.pathsep)[:2]):
        monkeypatch.syspath_prepend(path)
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", env["TABZOO_LOAD_PLUGINS"])
    reset_registry()
    return env
