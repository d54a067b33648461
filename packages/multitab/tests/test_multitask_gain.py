"""Multitask gain on a small setting where sharing must help, scored on held-out rows (issue 26).

Five regression tasks read the same direction ``w . x`` of 8 features, each with its own unit
noise, from only 64 training rows: a model that shares what it learns across tasks sees five
noisy labels per row, a single-task model one. MultiTab-Net fitted on all five tasks must
predict task 0 better, on 1,000 fresh rows, than the same MultiTab-Net fitted on task 0 alone.
A model whose task heads shared nothing (or a multitask loss that dropped tasks) would show no
gain, and the test would fail.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="MultiTabEstimator needs the sklearn extra")

from tabzoo_multitab import MultiTabEstimator  # noqa: E402

N_TASKS = 5
RECIPE = dict(d_embed=8, n_heads=2, row_heads=2, n_layers=1, max_epochs=30, batch_size=32, lr=3e-3,
              patience=100, n_context=64, early_stopping="metric")


def _draw(n: int, w: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``X [n, 8]``, ``Y [n, 5]``: every task is ``w . x`` plus its own N(0, 1) noise."""
    X = rng.standard_normal((n, len(w)))
    return X, (X @ w)[:, None] + rng.standard_normal((n, N_TASKS))


def _task0_gain(seed: int) -> float:
    """Held-out explained variance of task 0: multitask MultiTab-Net minus single-task MultiTab-Net."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(8)
    w /= np.linalg.norm(w)
    (X, Y), (Xv, Yv), (Xt, Yt) = _draw(64, w, rng), _draw(64, w, rng), _draw(1000, w, rng)
    multi = MultiTabEstimator(task_types=["regression"] * N_TASKS, random_state=seed, **RECIPE)
    single = MultiTabEstimator(task_types=["regression"], random_state=seed, **RECIPE)
    ev_multi = multi.fit(X, Y, eval_set=(Xv, Yv)).task_scores(Xt, Yt)[0]
    ev_single = single.fit(X, Y[:, 0], eval_set=(Xv, Yv[:, 0])).task_scores(Xt, Yt[:, 0])[0]
    return ev_multi - ev_single


def test_multitask_model_beats_its_single_task_twin_on_held_out_rows() -> None:
    # measured: gains 0.113, 0.140, 0.030 (EV; the best possible EV here is 0.5)
    gains = [_task0_gain(seed) for seed in (1, 2, 3)]
    assert np.mean(gains) > 0.03, f"no multitask gain on held-out rows: {np.round(gains, 3)}"
    assert min(gains) > -0.02, f"multitask model clearly worse on one seed: {np.round(gains, 3)}"
