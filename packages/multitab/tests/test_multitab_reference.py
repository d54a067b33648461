"""Saved outputs: seeded fits on a tiny mixed-task table must keep predicting what they predicted
when they were saved (``tests/data/multitab_reference.npz``), so that a change of training or
preprocessing cannot change a fitted model unnoticed. Regenerated on purpose: when the
feature encoding moved onto the core's preprocessing (robust scaling, soft clip at 4); and on
2026-11-29 when the estimator's defaults took issue 26's lean step (word dropout masks, dropout after
hidden activations only, one inter-sample head): MultiTab-Net's outputs only, the baselines' unchanged.

Regenerate (only after a deliberate change of the numbers, and say so in the commit):
``OMP_NUM_THREADS=1 uv run python packages/multitab/tests/test_multitab_reference.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from tabzoo.testing import saved

pytest.importorskip("sklearn", reason="the estimator needs the sklearn extra")

from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402

REFERENCE = Path(__file__).parent / "data" / "multitab_reference.npz"
SMALL = {"d_embed": 8, "n_heads": 2, "row_heads": 2, "n_layers": 1, "hidden": (16,), "max_epochs": 5,
         "batch_size": 16, "n_context": 24, "patience": 2, "random_state": 5}
TASKS = ["binary", "multiclass", "regression"]


def _mixed(n: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = np.empty((n, 3), dtype=np.float64)
    z = X[:, 0] + X[:, 1]
    Y[:, 0] = z > 0
    Y[:, 1] = np.digitize(X[:, 2], [-0.5, 0.5])
    Y[:, 2] = 3.0 * z + 0.1 * rng.normal(size=n)
    return X, Y


def _outputs(est: MultiTabEstimator, X: np.ndarray) -> np.ndarray:
    return np.concatenate([o.astype(np.float64) for o in est.predict_outputs(X)], axis=1)


def reference_outputs() -> dict[str, np.ndarray]:
    """Raw per-task outputs of MultiTab-Net and two baselines, each fitted with fixed seeds."""
    torch.set_num_threads(1)
    X, Y = _mixed()
    out: dict[str, np.ndarray] = {}
    # the MMoE fit stops early (best epoch 1 of 4 run) and restores its best weights
    for arch, monitor, extra in (("multitab", "loss", {}), ("mmoe", "metric", {"lr": 0.03, "max_epochs": 8}),
                                 ("stl", "loss", {})):
        est = MultiTabEstimator(architecture=arch, task_types=TASKS, early_stopping=monitor, **{**SMALL, **extra})
        est.fit(X[:64], Y[:64])
        out[f"{arch}_outputs"] = _outputs(est, X[64:])
        out[f"{arch}_train_loss"] = np.asarray([h["train_loss"] for h in est.fit_result_.history])
        out[f"{arch}_temperatures"] = np.asarray(est.temperatures_, dtype=np.float64)
    return out


def test_fits_reproduce_the_saved_outputs() -> None:  # bitwise where written, else rtol 1e-5 / atol 1e-6
    saved.assert_all_reproduced(REFERENCE, reference_outputs(), atol=1e-6)


if __name__ == "__main__":
    saved.regenerate(REFERENCE, reference_outputs)
