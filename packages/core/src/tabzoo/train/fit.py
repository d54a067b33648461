"""One training loop for models fitted on the user's table (NPT, MultiTab-Net and its baselines,
Ramba fine-tuning): :func:`fit`.

A plugin supplies a :class:`FitTask`: its minibatches (one pass over the training rows per
epoch) and its loss on one minibatch; optionally a validator for early stopping. The loop owns
everything else:

* the optimiser and the learning-rate schedule, by name (:mod:`tabzoo.train.optim`);
* gradient clipping;
* seeds: the run happens under a fork of torch's RNG seeded with ``FitConfig.seed`` (dropout
  draws from it), so a fit is a function of its seed alone and the caller's RNG is untouched;
  the task seeds its own generators (batches, masks) from the same number;
* early stopping: the validator is called every ``eval_every`` steps (or at the end of each
  epoch) and at the last step; the weights of the best evaluation are restored at the end, and
  the run stops after ``patience`` evaluations without improvement;
* a tqdm progress bar (``progress=False`` turns it off; without tqdm it is skipped with a log line);
* an optional checkpoint hook called at the end of every ``checkpoint_every``-th epoch with
  everything needed to resume from there (:class:`FitState`; pass it back as ``resume``).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

import torch

from tabzoo.errors import TabzooInputError
from tabzoo.params import check_params
from tabzoo.train.optim import OPTIMIZERS, SCHEDULES, build_optimizer, build_schedule

__all__ = ["FitConfig", "FitResult", "FitState", "FitTask", "Evaluation", "Validator", "fit"]

logger = logging.getLogger("tabzoo.train")


@runtime_checkable
class FitTask(Protocol):
    """What a model supplies to :func:`fit`.

    Optional: ``state_dict() -> dict`` and ``load_state_dict(dict)`` for the task's own random
    generators, so that a resumed run draws the same batches as an uninterrupted one.
    """

    def batches(self, epoch: int) -> Iterable[Any]:
        """The minibatches of one pass over the training rows (any objects ``loss`` accepts);
        drawn lazily: the loop stops pulling once ``max_steps`` is reached."""
        ...

    def loss(self, model: torch.nn.Module, batch: Any, step: int) -> torch.Tensor:
        """The scalar training loss of ``batch`` at optimiser step ``step`` (0-based), in train mode."""
        ...


@dataclass
class Evaluation:
    """One validation: ``loss`` is the early-stopping criterion, lower is better (the validation
    loss, or minus a metric; NaN ranks below every number), ``details`` free-form (e.g. per-task
    metrics; a ``val_loss`` there overrides ``loss`` in :attr:`FitResult.history`), recorded with
    the step and epoch it was made at. ``improved``: a validator that keeps its own best weights
    (e.g. one snapshot per task) says here whether this evaluation improved on any of them; the
    loop then keeps these weights as its best and counts patience by it instead of comparing
    ``loss``; ``None`` (default) = compare ``loss`` with the best's."""

    loss: float
    details: dict[str, Any] = field(default_factory=dict)
    step: int = 0
    epoch: int = 0
    improved: bool | None = None


#: a validator maps the model (in eval mode) to its validation loss, or to an :class:`Evaluation`
Validator = Callable[[torch.nn.Module], float | Evaluation]


@dataclass
class FitConfig:
    """Settings of one per-dataset fit.

    :param max_steps: optimiser steps; ``None`` = until ``max_epochs``.
    :param max_epochs: passes over :meth:`FitTask.batches`; ``None`` = until ``max_steps``.
    :param optimizer: one of :data:`tabzoo.train.optim.OPTIMIZERS`.
    :param fused: Adam/AdamW through torch's fused kernel (faster; rounds differently from the
        default multi-tensor update, see :func:`tabzoo.train.optim.build_optimizer`).
    :param lookahead_k: wrap the optimiser in Lookahead with this period (0 = no Lookahead).
    :param schedule: ``"constant"``, ``"flat_cosine"`` (flat for ``flat_fraction`` of
        ``max_steps``, then a cosine to 0; needs ``max_steps``) or ``"cosine"`` (the same with
        ``flat_fraction=0``, whatever ``flat_fraction`` says).
    :param clip_norm: gradient-norm clipping (``None`` or 0 = off).
    :param eval_every: steps between validations; ``None`` = at the end of each epoch. The last
        step is always validated.
    :param patience: validations without improvement before stopping.
    :param min_delta: an evaluation improves when its loss is below the best by more than this.
    :param min_steps: no early stop before this many steps (the best weights are still tracked);
        for objectives whose weighting moves during training, e.g. NPT's annealed loss trade-off.
    :param checkpoint_every: epochs between calls of the ``checkpoint`` hook.
    """

    max_steps: int | None = None
    max_epochs: int | None = None
    optimizer: str = "adam"
    fused: bool = False
    lr: float = 1e-3
    weight_decay: float = 0.0
    lookahead_k: int = 0
    lookahead_alpha: float = 0.5
    schedule: str = "constant"
    flat_fraction: float = 0.7
    clip_norm: float | None = 1.0
    eval_every: int | None = None
    patience: int = 10
    min_delta: float = 0.0
    min_steps: int = 0
    seed: int = 0
    progress: bool = False
    desc: str = "fit"
    checkpoint_every: int = 1

    def __post_init__(self) -> None:
        if self.max_steps is None and self.max_epochs is None:
            raise TabzooInputError("FitConfig needs max_steps or max_epochs (or both); set one of them.")
        check_params(self, positive_int=("max_steps", "max_epochs", "eval_every", "patience", "checkpoint_every"),
                     nonnegative_int=("lookahead_k", "min_steps"), positive=("lr",),
                     nonnegative=("weight_decay", "clip_norm", "min_delta"), unit=("flat_fraction", "lookahead_alpha"))
        if self.optimizer not in OPTIMIZERS or self.schedule not in SCHEDULES:
            raise TabzooInputError(f"optimizer={self.optimizer!r}, schedule={self.schedule!r}: use one of "
                                   f"{OPTIMIZERS} and one of {SCHEDULES}.")


@dataclass
class FitResult:
    """What :func:`fit` did.

    :ivar losses: training loss of every step.
    :ivar epoch_losses: mean training loss of every epoch (started epochs, the last may be partial).
    :ivar evaluations: every validation, in order; ``best`` is the one whose weights were kept.
    """

    steps: int = 0
    epochs: int = 0
    losses: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    evaluations: list[Evaluation] = field(default_factory=list)
    best: Evaluation | None = None
    stopped_early: bool = False
    seconds: float = 0.0

    @property
    def best_step(self) -> int:
        """Step (1-based count of steps done) of the kept weights; 0 without validation."""
        return self.best.step if self.best is not None else 0

    @property
    def best_epoch(self) -> int:
        """Epoch (0-based) of the kept weights; -1 without validation."""
        return self.best.epoch if self.best is not None else -1

    @property
    def best_loss(self) -> float:
        return self.best.loss if self.best is not None else math.inf

    @property
    def val_losses(self) -> list[tuple[int, float]]:
        """``(step, loss)`` of every validation."""
        return [(e.step, e.loss) for e in self.evaluations]

    @property
    def history(self) -> list[dict[str, Any]]:
        """One dict per epoch: ``epoch``, ``train_loss`` and the last validation made in it
        (``val_loss`` and its details), if any."""
        rows: list[dict[str, Any]] = [{"epoch": e, "train_loss": v} for e, v in enumerate(self.epoch_losses)]
        for ev in self.evaluations:
            rows[ev.epoch]["val_loss"] = ev.loss
            rows[ev.epoch].update(ev.details)
        return rows


@dataclass
class FitState:
    """Everything the ``checkpoint`` hook gets, and ``resume`` takes back: the run continues at
    the start of epoch ``epoch``. On disk: ``save_state(path, state.to_dict())`` and
    ``FitState.from_dict(load_state(path))`` (:mod:`tabzoo.checkpoint`: safetensors + JSON, atomic)."""

    epoch: int
    step: int
    model_state: dict[str, Any]
    optimizer_state: dict[str, Any]
    schedule_state: dict[str, Any] | None
    rng_state: torch.Tensor
    task_state: dict[str, Any] | None
    best_state: dict[str, Any] | None
    result: FitResult
    since_best: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A tree of tensors, dicts, lists and JSON scalars (what ``save_state`` writes)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["result"] = asdict(self.result)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FitState:
        """Inverse of :meth:`to_dict`."""
        r = dict(data["result"])
        r["evaluations"] = [Evaluation(**e) for e in r["evaluations"]]
        r["best"] = None if r["best"] is None else Evaluation(**r["best"])
        return cls(**{**data, "result": FitResult(**r)})


def _bar(cfg: FitConfig) -> Any:
    if not cfg.progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        logger.info("tqdm is not installed; no progress bar (pip install 'tabzoo-core[progress]').")
        return None
    by_step = cfg.max_steps is not None
    return tqdm(total=cfg.max_steps if by_step else cfg.max_epochs, desc=cfg.desc,
                unit="step" if by_step else "epoch", leave=False)


def _rank(loss: float) -> float:
    """NaN ranks below every number (worst)."""
    return math.inf if math.isnan(loss) else loss


def _rng_devices(model: torch.nn.Module) -> list[int]:
    param = next(model.parameters(), None)
    if param is not None and param.device.type == "cuda":
        return [param.device.index or 0]
    return []


def fit(model: torch.nn.Module, task: FitTask, cfg: FitConfig, *, validate: Validator | None = None,
        checkpoint: Callable[[FitState], None] | None = None, resume: FitState | None = None) -> FitResult:
    """Train ``model`` in place on ``task`` and return the history; the model ends in eval mode
    with the weights of the best validation (the last weights without ``validate``).

    :param validate: called in eval mode; returns the validation loss (lower is better) or an
        :class:`Evaluation`. ``None`` = no early stopping.
    :param checkpoint: called with a :class:`FitState` after every ``cfg.checkpoint_every``-th epoch.
    :param resume: a state the hook received: continue from its epoch, exactly as if uninterrupted.
    """
    with torch.random.fork_rng(devices=_rng_devices(model)):
        torch.manual_seed(int(cfg.seed))
        return _Fit(model, task, cfg, validate, checkpoint).run(resume)


class _Fit:
    def __init__(self, model: torch.nn.Module, task: FitTask, cfg: FitConfig, validate: Validator | None,
                 checkpoint: Callable[[FitState], None] | None) -> None:
        self.model, self.task, self.cfg, self.validate, self.checkpoint = model, task, cfg, validate, checkpoint
        self.opt = build_optimizer(model.parameters(), cfg.optimizer, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                   lookahead_k=cfg.lookahead_k, lookahead_alpha=cfg.lookahead_alpha, fused=cfg.fused)
        self.sched = build_schedule(self.opt, cfg.schedule, total_steps=cfg.max_steps, flat_fraction=cfg.flat_fraction)
        self.result = FitResult()
        self.best_state: dict[str, Any] | None = None
        self.since_best = 0
        self.epoch = 0

    def _resume(self, state: FitState) -> None:
        self.model.load_state_dict(state.model_state)
        self.opt.load_state_dict(state.optimizer_state)
        if self.sched is not None and state.schedule_state is not None:
            self.sched.load_state_dict(state.schedule_state)
        torch.random.set_rng_state(state.rng_state)
        if state.task_state is not None:
            load = getattr(self.task, "load_state_dict", None)
            if load is None:
                raise TabzooInputError(f"the resumed state holds task state but {type(self.task).__name__} has no "
                                       "load_state_dict; resume with the task that wrote it.")
            load(state.task_state)
        self.result, self.best_state = copy.deepcopy(state.result), copy.deepcopy(state.best_state)
        self.since_best, self.epoch = state.since_best, state.epoch

    def _state(self) -> FitState:
        task_state = getattr(self.task, "state_dict", None)
        return FitState(epoch=self.epoch, step=self.result.steps, model_state=copy.deepcopy(self.model.state_dict()),
                        optimizer_state=copy.deepcopy(self.opt.state_dict()),
                        schedule_state=None if self.sched is None else self.sched.state_dict(),
                        rng_state=torch.random.get_rng_state(),
                        task_state=copy.deepcopy(task_state()) if callable(task_state) else None,
                        best_state=copy.deepcopy(self.best_state), result=copy.deepcopy(self.result),
                        since_best=self.since_best)

    def _done(self) -> bool:
        cfg = self.cfg
        return self.result.stopped_early or (cfg.max_steps is not None and self.result.steps >= cfg.max_steps) or (
            cfg.max_epochs is not None and self.epoch >= cfg.max_epochs)

    def run(self, resume: FitState | None) -> FitResult:
        if resume is not None:
            self._resume(resume)
        bar = _bar(self.cfg)
        if bar is not None:
            bar.update(self.result.steps if self.cfg.max_steps is not None else self.epoch)
        t0 = time.perf_counter() - self.result.seconds
        try:
            while not self._done():
                self._epoch(bar)
                self.epoch += 1
                if bar is not None and self.cfg.max_steps is None:
                    bar.update(1)
                if self.checkpoint is not None and self.epoch % self.cfg.checkpoint_every == 0 and not self._done():
                    self.result.seconds = time.perf_counter() - t0
                    self.checkpoint(self._state())
        finally:
            if bar is not None:
                bar.close()
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        self.model.eval()
        self.result.seconds = time.perf_counter() - t0
        self.result.epochs = self.epoch
        return self.result

    def _epoch(self, bar: Any) -> None:
        cfg, result = self.cfg, self.result
        self.model.train()
        first = len(result.losses)
        evaluated_at = -1
        batches: Iterator[Any] = iter(self.task.batches(self.epoch))
        while cfg.max_steps is None or result.steps < cfg.max_steps:
            try:
                batch = next(batches)
            except StopIteration:
                break
            loss = self.task.loss(self.model, batch, result.steps)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.clip_norm:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
            self.opt.step()
            if self.sched is not None:
                self.sched.step()
            result.losses.append(float(loss.detach()))
            result.steps += 1
            if bar is not None and cfg.max_steps is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{result.losses[-1]:.4f}")
            last = cfg.max_steps is not None and result.steps >= cfg.max_steps
            if cfg.eval_every is not None and (result.steps % cfg.eval_every == 0 or last):
                evaluated_at = result.steps
                if self._evaluate(bar):
                    break
        done = result.losses[first:]
        total = 0.0
        for value in done:
            total += value
        result.epoch_losses.append(total / max(1, len(done)))
        if not result.stopped_early and evaluated_at != result.steps and (
                cfg.eval_every is None or (cfg.max_epochs is not None and self.epoch + 1 >= cfg.max_epochs)):
            self._evaluate(bar)

    def _evaluate(self, bar: Any) -> bool:
        """Validate, keep the best weights; ``True`` when the run should stop."""
        if self.validate is None:
            return False
        self.model.eval()
        out = self.validate(self.model)
        self.model.train()
        ev = out if isinstance(out, Evaluation) else Evaluation(float(out))
        ev.step, ev.epoch = self.result.steps, self.epoch
        self.result.evaluations.append(ev)
        if bar is not None:
            bar.set_postfix(loss=f"{self.result.losses[-1]:.4f}" if self.result.losses else "-", val=f"{ev.loss:.4f}")
        best = self.result.best
        if ev.improved if ev.improved is not None else (
                best is None or _rank(ev.loss) < _rank(best.loss) - self.cfg.min_delta):
            self.result.best, self.since_best = ev, 0
            self.best_state = copy.deepcopy(self.model.state_dict())
            return False
        self.since_best += 1
        if self.since_best >= self.cfg.patience and self.result.steps >= self.cfg.min_steps:
            logger.info("early stop at step %d, epoch %d (best: step %d, loss %.4g)", ev.step, ev.epoch,
                        self.result.best_step, self.result.best_loss)
            self.result.stopped_early = True
            return True
        return False
