"""Fine-tuning through the core loop: validation, best-state restore, patience, undefined metrics."""

from __future__ import annotations

import numpy as np
import pytest
from tabzoo.metrics import r2_score
from tabzoo.train.fit import FitResult
from tabzoo_ramba import Ramba, RelationalTask, SamplerConfig, temporal_split
from tabzoo_ramba.conformance import shop_database
from tabzoo_ramba.data import to_seconds
from tabzoo_ramba.train import finetune

TASK = RelationalTask("orders", "label", "regression", horizon_s=86400.0, lookback_s=60 * 86400.0)


def _bound() -> tuple[Ramba, list, np.ndarray, list, np.ndarray]:
    db, _ = shop_database(1, n_orders=60)
    times = to_seconds(db.table("orders").column("time"))
    q = [np.datetime64(int(np.quantile(times, p)), "s") for p in (0.6, 0.75)]
    split = temporal_split(db, TASK, q[0], q[1])
    r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SamplerConfig(n_child=5, max_rows=30),
              progress=False)
    r.bind(db, TASK, split["val"].seeds[0][2])
    return r, r._seqs(db, split["train"].seeds), split["train"].y, r._seqs(db, split["val"].seeds), split["val"].y


def test_finetune_keeps_the_best_validation() -> None:
    r, tr, y_tr, va, y_va = _bound()
    assert r.stats is not None
    mu, sd = r.stats.get(TASK.entity_table, TASK.target)
    res = finetune(r.model, tr, y_tr, kind="regression", mu=mu, sd=sd, val=va, y_val=y_va, steps=6, batch_size=8,
                   eval_every=2, lr=5e-2, progress=False, encoder=r.encoder, predict=r._predict_seqs, patience=1)
    assert isinstance(res, FitResult) and res.best is not None
    assert [e.step for e in res.evaluations] == [2, 4, 6][: len(res.evaluations)]
    assert res.best.loss == min(e.loss for e in res.evaluations)
    # the kept weights are those of the best validation (the loss is minus R^2)
    assert r2_score(y_va, r._predict_seqs(va)) == pytest.approx(-res.best.loss, abs=1e-6)
    assert res.steps == 6 or (res.stopped_early and res.steps == res.evaluations[-1].step)


def test_finetune_without_a_defined_val_metric_trains_to_the_end() -> None:
    r, tr, y_tr, va, y_va = _bound()
    res = finetune(r.model, tr, y_tr, kind="regression", val=va, y_val=np.zeros_like(y_va), steps=3, batch_size=8,
                   eval_every=1, progress=False, encoder=r.encoder, predict=r._predict_seqs)
    assert res.steps == 3 and not res.evaluations and len(res.losses) == 3
