"""Masked-cell pretraining and task fine-tuning loops (progress bars, resumable state).

* :func:`pretrain_mlm`: 15% of the cells of time-causal subgraphs are masked and predicted
  (Huber / BCE / CE). Databases come from a callable ``db_source(i) -> RelationalDatabase`` (e.g.
  the synthetic ``relational`` prior of tabzoo-priors, or a real database's own tables); every
  ``checkpoint_every`` steps the full state (model, optimizer, step, RNG) is written with
  :func:`tabzoo.checkpoint.save_state` and a rerun with ``resume=True`` continues from it.
* :func:`finetune`: the task loss (BCE on the boolean head, Huber on the numeric head in
  z-units of the target) on the seeds of the train split, keeping the best state on the val split;
  it runs the core's per-dataset loop (:func:`tabzoo.train.fit.fit`), :class:`FinetuneTask`
  supplying the batches and the loss.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tabzoo.errors import TabzooInputError
from tabzoo.metrics import r2_score, roc_auc
from tabzoo.train.fit import FitConfig, FitResult, fit
from tqdm.auto import tqdm

from tabzoo_ramba.sampling import SamplerConfig, graph_index, sample_subgraph
from tabzoo_ramba.serialize import ColumnStats, collate, serialize
from tabzoo_ramba.serialize import Sequence as Seq

PRETRAIN_SAMPLER = SamplerConfig(n_child=8, max_rows=48)
__all__ = ["PRETRAIN_SAMPLER", "pretrain_mlm", "finetune", "FinetuneTask", "mlm_sequences"]

log = logging.getLogger(__name__)


def mlm_sequences(db: Any, n: int, rng: np.random.Generator, sampler: SamplerConfig, *,
                  mask_rate: float = 0.15, lookback_s: float = 30 * 86400.0) -> list[Seq]:
    """``n`` pretraining sequences of ``db``: random seed rows of its timed tables at their own
    time (so nothing later enters), statistics fitted at that time, ``mask_rate`` of cells masked."""
    idx = graph_index(db)
    timed = [t for t in db.table_names if idx.times[t] is not None and db.primary_key(t) is not None
             and db.table(t).n_rows]
    if not timed:
        raise TabzooInputError("pretraining needs a table with a primary key and a time column")
    out = []
    stats_cache: dict[int, ColumnStats] = {}
    for _ in range(n):
        tab = timed[int(rng.integers(0, len(timed)))]
        row = int(rng.integers(0, db.table(tab).n_rows))
        times = idx.times[tab]
        assert times is not None  # tables without a time column were filtered out above
        t = int(times[row])
        key = db.table(tab).column(db.primary_key(tab))[row]
        sub = sample_subgraph(idx, tab, key, np.datetime64(t, "s"), lookback_s=lookback_s, config=sampler)
        # statistics of the whole database up to the seed's day (cached per day)
        day = t - t % 86400 + 86400
        stats = stats_cache.get(day)
        if stats is None:
            stats = stats_cache[day] = ColumnStats.fit(db, idx, min(day, t))
        out.append(serialize(db, idx, sub, stats, mask_rate=mask_rate, rng=rng))
    return out


def _save(path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, sched: Any, step: int,
          history: list[float]) -> None:
    from tabzoo.checkpoint import save_state

    save_state(path, {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "step": step,
                      "history": list(history), "rng": torch.random.get_rng_state()})


def pretrain_mlm(model: Any, db_source: Callable[[int], Any], *, steps: int, batch_size: int = 8,
                 lr: float = 5e-4, weight_decay: float = 0.1, warmup: float = 0.2, dbs_every: int = 4,
                 sampler: SamplerConfig = PRETRAIN_SAMPLER, out: str | Path | None = None,
                 checkpoint_every: int = 50, resume: bool = False, seed: int = 0, progress: bool = True,
                 encoder: Any = None, stop_after: int | None = None) -> list[float]:
    """Masked-cell pretraining for ``steps`` steps; a new database every ``dbs_every`` steps.

    One-cycle schedule (``warmup`` share linear warm-up, then cosine), AdamW, clip 1.0 (Table 20).
    :param out: state path stem (``out.safetensors`` + ``out.json``); with ``resume=True`` and an
        existing state, training continues from its step. Without ``resume`` an existing state is
        never overwritten (raises).
    :param stop_after: stop once this step is reached (the schedule still spans ``steps``), e.g.
        to split a long run over sessions.
    :returns: the loss per step.
    """
    from tabzoo_ramba.text import default_encoder

    encoder = encoder or default_encoder(model.cfg.text_encoder)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(steps, 1), pct_start=warmup)
    step, history = 0, []
    path = Path(out) if out is not None else None
    if path is not None and path.with_name(path.name + ".json").exists():
        if not resume:
            raise FileExistsError(f"{path}.json exists; pass resume=True to continue it, or choose another path")
        from tabzoo.checkpoint import load_state

        state = load_state(path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step, history = int(state["step"]), list(state["history"])
        torch.random.set_rng_state(state["rng"])
        if "sched" in state:
            sched.load_state_dict(state["sched"])
        else:  # a state written before the schedule was saved: replay it
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for _ in range(step):
                    sched.step()
    model.train()
    bar = tqdm(total=steps, initial=step, disable=not progress, desc="ramba pretrain")
    pool: list[Seq] = []
    pool_block = -1
    end = steps if stop_after is None else min(steps, int(stop_after))
    while step < end:
        block = step // dbs_every  # the pool is a pure function of (seed, block): resuming is exact
        if block != pool_block:
            db = db_source(seed * 1_000_003 + block)
            pool = mlm_sequences(db, batch_size * dbs_every, np.random.default_rng([seed, block, 1]), sampler)
            pool_block = block
        rng = np.random.default_rng([seed, step])
        batch_seqs = [pool[int(i)] for i in rng.choice(len(pool), size=batch_size, replace=False)]
        batch = collate(batch_seqs, encoder)
        loss, parts = model.mlm_loss(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        history.append(float(loss.detach()))
        bar.update(1)
        bar.set_postfix(loss=f"{float(loss.detach()):.3f}")
        if path is not None and (step % checkpoint_every == 0 or step == end):
            _save(path, model, opt, sched, step, history)
    bar.close()
    model.eval()
    return history


class FinetuneTask:
    """Ramba's side of the core loop (:func:`tabzoo.train.fit.fit`) when fine-tuning: minibatches of
    ``batch_size`` training sequences drawn without replacement (``ceil(n / batch_size)`` per
    epoch) and the task loss (BCE on the target logit, or Huber on z-scored targets ``[n]``)."""

    def __init__(self, train: Sequence[Seq], y: torch.Tensor, *, kind: str, batch_size: int, seed: int,
                 encoder: Any) -> None:
        self.train, self.y, self.kind, self.batch_size, self.encoder = train, y, kind, batch_size, encoder
        self.rng = np.random.default_rng(seed)

    def batches(self, epoch: int) -> Iterator[np.ndarray]:
        size = min(self.batch_size, len(self.train))
        for _ in range(-(-len(self.train) // size)):
            yield self.rng.choice(len(self.train), size=size, replace=False)

    def loss(self, model: torch.nn.Module, batch: np.ndarray, step: int) -> torch.Tensor:
        out = model.predict_target(collate([self.train[int(i)] for i in batch], self.encoder))  # type: ignore[operator]
        tgt = self.y[torch.as_tensor(batch)]
        return (F.binary_cross_entropy_with_logits(out, tgt) if self.kind == "classification"
                else F.huber_loss(out, tgt, delta=1.0))

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]


def finetune(model: Any, train: Sequence[Seq], y_train: np.ndarray, *, kind: str, mu: float = 0.0, sd: float = 1.0,
             val: Sequence[Seq] | None = None, y_val: np.ndarray | None = None, steps: int = 200,
             batch_size: int = 16, lr: float = 1e-3, eval_every: int = 50, seed: int = 0, progress: bool = True,
             encoder: Any = None, predict: Callable[[Sequence[Seq]], np.ndarray] | None = None,
             patience: int | None = None) -> FitResult:
    """Fine-tune on serialized task sequences (targets masked) for ``steps`` steps through the core
    loop: AdamW (no weight decay), clip 1.0, dropout seeded by ``seed``.

    Classification: BCE on the target logit. Regression: Huber on ``(y - mu) / sd``. With a val
    split, the model is validated every ``eval_every`` steps and at the last; the state with the
    best val metric (ROC-AUC / R^2, via ``predict``) is kept, and with ``patience`` the run stops
    after that many validations without improvement (``None`` = never). When the val metric is
    undefined (one class, or a constant target) the last state is kept.

    :returns: the core :class:`~tabzoo.train.fit.FitResult` (``losses``: the loss per step).
    """
    from tabzoo_ramba.text import default_encoder

    encoder = encoder or default_encoder(model.cfg.text_encoder)
    if len(train) == 0:
        raise TabzooInputError("no training seeds: the train split is empty; move val_start later")
    y = torch.as_tensor(np.asarray(y_train, dtype=np.float32))
    if kind == "regression":
        y = (y - mu) / sd
    validate = None
    if val is not None and predict is not None and len(val) and y_val is not None:
        if len(np.unique(np.asarray(y_val))) < 2:
            log.info("the val split's target takes one value: its metric is undefined; keeping the last state")
        else:
            held_out, y_held = val, np.asarray(y_val)
            metric = roc_auc if kind == "classification" else r2_score

            def validate(m: torch.nn.Module) -> float:
                return -metric(y_held, predict(held_out))

    n_evals = -(-steps // max(1, eval_every)) + 1
    cfg = FitConfig(max_steps=steps, optimizer="adamw", lr=lr, weight_decay=0.0, clip_norm=1.0,
                    eval_every=eval_every, patience=patience or n_evals, seed=seed, progress=progress,
                    desc="ramba finetune")
    task = FinetuneTask(train, y, kind=kind, batch_size=batch_size, seed=seed, encoder=encoder)
    return fit(model, task, cfg, validate=validate)
