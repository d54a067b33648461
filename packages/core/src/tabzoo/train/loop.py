"""The pretraining loop: any in-context architecture on any episode prior, resumable, DDP-ready.

Determinism: the episodes of draw ``u`` of step ``s`` are ``prior.sample(n, seed=batch_seed(seed,
s, u))`` (plus ``step=s`` for priors whose ``step_aware`` attribute is True, e.g. a row curriculum) and the torch RNG is re-seeded from ``(seed, step, rank)`` before every step (dropout),
so a step is a pure function of the weights, the optimizer state and ``(seed, step)``. Resuming
from a checkpoint therefore reproduces the uninterrupted loss curve, and a run on ``W``
processes computes the same updates as one process over the same global batch.

Prefetching (``PretrainConfig.workers``): background processes draw those same batches ahead of the
step (:mod:`tabzoo.train.prefetch`), so prior generation overlaps training; the batches, and so the
run, are identical with and without it.

Models with their own objective: a model that defines ``pretrain_loss(batch) -> scalar tensor``
(e.g. Ramba's masked-cell loss) is trained with it on whatever its prior's ``sample`` returns,
instead of the in-context episode loss; everything else (schedule, clipping, seeds, checkpoints,
resume) is the same.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from tabzoo.deprecation import renamed
from tabzoo.errors import TabzooInputError
from tabzoo.kernels.hardware import cpu_has_fast_bf16
from tabzoo.train import dist as tzdist
from tabzoo.train.config import PretrainConfig, WarmupCosine, batch_seed
from tabzoo.train.lock import LOCK
from tabzoo.train.prefetch import open_batch_source
from tabzoo.train.state import (
    capture_rng,
    check_resume,
    load_latest,
    machine_info,
    plot_learning_curve,
    restore_rng,
    write_state,
)

logger = logging.getLogger(__name__)

__all__ = ["PretrainResult", "episode_loss", "model_inputs", "pretrain"]
__getattr__ = renamed(__name__, {"TrainResult": "PretrainResult"})  # issue 31: what pretrain returns


@dataclass
class PretrainResult:
    """What :func:`pretrain` returns (on every rank)."""

    model: torch.nn.Module
    losses: list[float] = field(default_factory=list)
    steps: int = 0
    episodes_seen: int = 0
    wall_time_s: float = 0.0
    out: Path | None = None
    resumed_from: int = 0
    #: wall seconds of each step of this call (waiting for its batches included)
    step_seconds: list[float] = field(default_factory=list)
    #: prefetch worker processes this call used (0 = batches drawn in the training process)
    workers: int = 0
    #: with workers: batches the training process drew itself because no worker had claimed them yet
    drawn_in_process: int = 0


def model_inputs(model: torch.nn.Module, batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x [B, N, F'], y_context [B, n_context])`` for the model from an ``EpisodeBatch``.

    Missing cells (NaN) become 0, and features are zero-padded up to ``model.max_features``.
    """
    x = torch.nan_to_num(batch.x.float(), nan=0.0)
    limit = getattr(model, "max_features", None)
    if isinstance(limit, int):
        if x.shape[-1] > limit:
            raise TabzooInputError(
                f"the prior draws {x.shape[-1]} features but the model takes at most {limit}; set the "
                f"prior's max features to <= {limit} (prior_config) or build a wider model."
            )
        x = F.pad(x, (0, limit - x.shape[-1]))
    return x, batch.y[:, : batch.n_context].float()


def episode_loss(model: torch.nn.Module, logits: torch.Tensor, batch: Any) -> torch.Tensor:
    """Mean loss over the real query rows of a batch.

    Classification: cross-entropy with the logits of classes ``>= n_classes`` of each episode
    masked out, padding rows ignored. Regression: ``model.loss(logits, y_query, batch)`` when the
    model defines it, else the masked mean squared error of ``logits[..., 0]``.

    :param logits: ``[B, n_query, n_out]``.
    """
    n_ctx = batch.n_context
    y_query = batch.y[:, n_ctx:]
    rows = batch.row_mask[:, n_ctx:].to(logits.device)
    if batch.task == "regression":
        own_loss = getattr(model, "loss", None)
        if callable(own_loss):
            return own_loss(logits, y_query, batch)
        err = (logits[..., 0].float() - y_query.float()) ** 2
        return (err * rows).sum() / rows.sum().clamp_min(1)
    n_out = logits.shape[-1]
    too_many = int(batch.n_classes.max())
    if too_many > n_out:
        raise TabzooInputError(
            f"the prior draws up to {too_many} classes but the model's head has {n_out}; lower the "
            "prior's max classes (prior_config) or build a model with a larger head."
        )
    valid = torch.arange(n_out, device=logits.device)[None, :] < batch.n_classes.to(logits.device)[:, None]
    masked = logits.float().masked_fill(~valid[:, None, :], float("-inf"))
    target = y_query.long().clamp(0, n_out - 1)
    ce = F.cross_entropy(masked.reshape(-1, n_out), target.reshape(-1), reduction="none").view_as(target)
    ce = torch.where(rows, ce, torch.zeros_like(ce))
    return ce.sum() / rows.sum().clamp_min(1)


def _resolve_model(model: Any, cfg: PretrainConfig, registry: Any) -> tuple[torch.nn.Module, str, dict[str, Any]]:
    if isinstance(model, torch.nn.Module):
        return model, str(getattr(model, "architecture", type(model).__name__)), dict(getattr(model, "config", {}) or {})
    from tabzoo.plugins import ArchitectureSpec, get_registry

    spec = model if isinstance(model, ArchitectureSpec) else (registry or get_registry()).get("architectures", str(model))
    config = {**dict(spec.default_config), **cfg.model_config}
    torch.manual_seed(cfg.seed)
    return spec.create(cfg.model_config), spec.name, config


def _resolve_prior(prior: Any, cfg: PretrainConfig, registry: Any) -> tuple[Any, str]:
    if isinstance(prior, str):
        from tabzoo.plugins import get_registry

        spec = (registry or get_registry()).get("priors", prior)
        return spec.create(**cfg.prior_config), prior
    from tabzoo.plugins import PriorSpec

    if isinstance(prior, PriorSpec):
        return prior.create(**cfg.prior_config), prior.name
    if not callable(getattr(prior, "sample", None)):
        raise TabzooInputError(
            f"prior {prior!r} has no sample(batch_size, *, seed, device) method; pass a registered "
            "prior name or a prior object."
        )
    return prior, str(getattr(prior, "name", type(prior).__name__))


def _amp(mode: str, device: torch.device) -> tuple[torch.dtype | None, bool]:
    """(autocast dtype or None, whether a GradScaler is needed)."""
    if mode == "off":
        return None, False
    if device.type == "cuda":
        if mode == "fp16" or (mode == "auto" and not torch.cuda.is_bf16_supported()):
            return torch.float16, True
        return torch.bfloat16, False
    if mode == "fp16":
        raise TabzooInputError("amp='fp16' needs a GPU; use amp='bf16' (or 'auto') on CPU.")
    if mode == "auto" and not cpu_has_fast_bf16():
        # measured on an AVX2-only EPYC: bf16 matmul 0.4 GFLOP/s vs fp32 18 GFLOP/s (a bf16 step 14x slower)
        logger.info("amp='auto': this CPU has no AVX512-BF16/AMX, so bf16 would be emulated; training in fp32.")
        return None, False
    return torch.bfloat16, False


def _device(cfg: PretrainConfig, info: tzdist.DistInfo) -> torch.device:
    if cfg.device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", info.local_rank)
        return torch.device("cpu")
    return torch.device(cfg.device)


def _refuse_existing_run(out: Path) -> None:
    """Raise when ``out`` already holds files: starting afresh there would replace a run."""
    if out.exists() and (not out.is_dir() or any(p.name != LOCK for p in out.iterdir())):
        what = "a run" if (out / "latest.json").exists() else "files"
        raise TabzooInputError(
            f"{out} already holds {what}; pretraining there would overwrite it. Pass --resume to "
            "continue it, --overwrite to replace it, or choose another --out folder.")


def pretrain(
    model: Any,
    prior: Any,
    *,
    out: str | Path | None = None,
    config: PretrainConfig | None = None,
    resume: bool = False,
    overwrite: bool = False,
    registry: Any = None,
    **overrides: Any,
) -> PretrainResult:
    """Pretrain an in-context model on a prior.

    :param model: a registered architecture name, an ``ArchitectureSpec`` or an ``nn.Module``
        (``model(x, y_context) -> logits``).
    :param prior: a registered prior name, a ``PriorSpec``, or an object with
        ``sample(batch_size, *, seed, device) -> EpisodeBatch``.
    :param out: output folder for checkpoints (``None`` = no checkpoints, no resume).
    :param config: a :class:`PretrainConfig`; keyword ``overrides`` replace its fields.
    :param resume: continue from ``out/latest.json`` when it exists (else start at step 0).
    :param overwrite: start afresh in an ``out`` that already holds a run, replacing it. Without
        ``resume`` or ``overwrite``, an ``out`` that is not empty is refused: a run is never lost.
    :param registry: a ``PluginRegistry`` to resolve names (default: the process-wide one).
    """
    cfg = PretrainConfig.from_dict({**(config.to_dict() if config else {}), **overrides})
    if resume and overwrite:
        raise TabzooInputError("resume=True and overwrite=True contradict each other: pass one of them.")
    if out is not None and not resume and not overwrite:
        _refuse_existing_run(Path(out))
    info = tzdist.setup(cfg.device)
    try:
        return _Run(model, prior, cfg, out, registry, info).run(resume)
    finally:
        if info.owns_group:
            import torch.distributed as dist

            dist.destroy_process_group()


class _Run:
    def __init__(self, model: Any, prior: Any, cfg: PretrainConfig, out: str | Path | None, registry: Any,
                 info: tzdist.DistInfo) -> None:
        self.cfg, self.info = cfg, info
        self.device = _device(cfg, info)
        self.model, self.arch, self.arch_config = _resolve_model(model, cfg, registry)
        if cfg.init_from:
            self._init_weights(cfg.init_from)
        self.model.to(self.device).train()
        self.prior, self.prior_name = _resolve_prior(prior, cfg, registry)
        self.out = Path(out) if out is not None else None
        self.micro = cfg.resolved_micro_batches(info.world_size)
        self.draw_size = cfg.batch_size // self.micro
        self.my_draws = [u for u in range(self.micro) if u % info.world_size == info.rank]
        self.amp_dtype, use_scaler = _amp(cfg.amp, self.device)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=use_scaler)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        if not self.params:
            raise TabzooInputError(f"architecture {self.arch!r} has no trainable parameters.")
        self.opt = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.trainable = self._apply_freeze(cfg.freeze)
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, WarmupCosine(cfg.steps, cfg.resolved_warmup(), cfg.min_lr_ratio)
        )
        own_loss = getattr(self.model, "pretrain_loss", None)
        self.own_loss = own_loss if callable(own_loss) else None
        self.losses: list[float] = []
        self.step = 0
        self.wall_before = 0.0
        self.source: Any = None

    def _apply_freeze(self, prefixes: list[str]) -> list[torch.nn.Parameter]:
        """Set ``requires_grad=False`` on the parameters under ``prefixes``; return the rest.

        Frozen parameters stay in the optimizer (so the optimizer state still loads on resume) but
        never get a gradient, and AdamW skips parameters without one (no step, no weight decay).
        """
        if not prefixes:
            return list(self.params)
        names = dict(self.model.named_parameters())
        unmatched = [f for f in prefixes if not any(n == f or n.startswith(f + ".") for n in names)]
        if unmatched:
            tops = sorted({n.split(".")[0] for n in names})
            raise TabzooInputError(
                f"freeze prefixes {unmatched} match no parameter of {self.arch!r}; its top-level modules are {tops}."
            )
        frozen = {id(p) for n, p in names.items() if any(n == f or n.startswith(f + ".") for f in prefixes)}
        for p in self.params:
            if id(p) in frozen:
                p.requires_grad_(False)
        trainable = [p for p in self.params if id(p) not in frozen]
        if not trainable:
            raise TabzooInputError(f"freeze={prefixes} freezes every parameter of {self.arch!r}; leave some trainable.")
        logger.info("froze %d of %d parameter tensors (%s)", len(self.params) - len(trainable), len(self.params),
                    ", ".join(prefixes))
        return trainable

    def _init_weights(self, stem: str) -> None:
        from tabzoo.checkpoint import load_checkpoint, load_weights

        ckpt = load_checkpoint(stem)
        load_weights(self.model, ckpt.tensors, what=f"init_from={stem!r}", target="the model",
                     fix=f"Pass model_config matching the checkpoint's config {ckpt.config}.",
                     error=TabzooInputError)
        logger.info("initialised %s from %s", self.arch, stem)

    # -- state --------------------------------------------------------------------------------
    def _state(self, wall: float) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "scheduler": self.sched.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": capture_rng(),
            "step": self.step,
            "episodes_seen": self.step * self.cfg.batch_size,
            "losses": np.asarray(self.losses, dtype=np.float64),
            "wall_time_s": wall,
            "config": self.cfg.to_dict(),
            "architecture": self.arch,
            "prior": self.prior_name,
        }

    def _restore(self) -> None:
        if self.out is None:
            raise TabzooInputError("resume=True needs an output folder (out=...) to resume from.")
        state = load_latest(self.out)
        if state is None:
            logger.info("no checkpoint in %s; starting at step 0.", self.out)
            return
        if state["architecture"] != self.arch:
            raise TabzooInputError(
                f"{self.out} holds a run of architecture {state['architecture']!r}, not {self.arch!r}; "
                "use another --out folder or the same --model."
            )
        check_resume(state, prior=self.prior_name, config=self.cfg.to_dict())
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        self._reschedule(int(state["scheduler"].get("last_epoch", state["step"])))
        if state["scaler"]:
            self.scaler.load_state_dict(state["scaler"])
        restore_rng(state["rng"])
        self.step = int(state["step"])
        self.losses = [float(v) for v in np.asarray(state["losses"], dtype=np.float64)]
        self.wall_before = float(state["wall_time_s"])
        logger.info("resumed %s at step %d", self.out, self.step)

    def _reschedule(self, last_epoch: int) -> None:
        """Make the restored schedule follow the CURRENT config (``--steps``, ``--lr``, warmup, floor).

        ``LambdaLR.load_state_dict`` restores the fields of the saved :class:`WarmupCosine`, so a resume
        with a larger ``--steps`` would otherwise stay at the old run's end (the lr floor) for ever.
        The cosine is defined by the current ``steps``: a longer run raises the lr from the resumed
        step on to where the longer cosine is at that step.
        """
        cfg = self.cfg
        want = WarmupCosine(cfg.steps, cfg.resolved_warmup(), cfg.min_lr_ratio)
        old = self.sched.lr_lambdas[0]
        if isinstance(old, WarmupCosine) and (vars(old) != vars(want) or self.sched.base_lrs[0] != cfg.lr):
            logger.warning("resume: schedule changed from %s (lr %g) to %s (lr %g); the cosine now follows "
                           "steps=%d", vars(old), self.sched.base_lrs[0], vars(want), cfg.lr, cfg.steps)
        self.sched.lr_lambdas = [want for _ in self.opt.param_groups]
        self.sched.base_lrs = [cfg.lr for _ in self.opt.param_groups]
        for group, base in zip(self.opt.param_groups, self.sched.base_lrs, strict=True):
            group["lr"] = base * want(last_epoch)
        self.sched._last_lr = [g["lr"] for g in self.opt.param_groups]

    def _checkpoint(self, wall: float) -> None:
        if self.out is None or not self.info.is_main:
            return
        from tabzoo.checkpoint import save_checkpoint

        self.out.mkdir(parents=True, exist_ok=True)
        write_state(self.out, self.step, self._state(wall))
        save_checkpoint(
            self.out / "model", self.model, architecture=self.arch, config=self.arch_config,
            prior=self.prior_name, steps=self.step,
            extra={
                "episodes_seen": self.step * self.cfg.batch_size,
                "wall_time_s": wall,
                "machine": machine_info(self.device, self.info.world_size),
                "final_loss": self.losses[-1] if self.losses else None,
                "train_config": self.cfg.to_dict(),
            },
        )
        if self.cfg.plot:
            plot_learning_curve(self.out / "learning_curve.png", self.losses, f"{self.arch} on {self.prior_name}")

    # -- one step -------------------------------------------------------------------------------
    def _train_step(self) -> float:
        cfg, info = self.cfg, self.info
        torch.manual_seed(batch_seed(cfg.seed, self.step, 1_000_000 + info.rank))
        self.opt.zero_grad(set_to_none=True)
        scale = 1.0 / len(self.my_draws)
        local = 0.0
        for u in self.my_draws:
            batch = self.source.get(self.step, u)  # = draw_batch(prior, ..., seed, step, u): same either way
            ctx = (torch.autocast(self.device.type, dtype=self.amp_dtype) if self.amp_dtype is not None
                   else contextlib.nullcontext())
            if self.own_loss is not None:
                with ctx:
                    loss = self.own_loss(batch).float()
            else:
                x, y_ctx = model_inputs(self.model, batch)
                with ctx:
                    logits = self.model(x, y_ctx)
                loss = episode_loss(self.model, logits.float(), batch)
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"loss is {loss.item()} at step {self.step} (draw {u}); lower lr, turn amp off, or "
                    "check the prior for NaN labels."
                )
            self.scaler.scale(loss * scale).backward()
            local += float(loss.detach()) * scale
        tzdist.average_gradients(self.trainable, info.world_size)
        self.scaler.unscale_(self.opt)
        if cfg.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.trainable, cfg.clip_norm)
        self.scaler.step(self.opt)
        self.scaler.update()
        self.sched.step()
        return tzdist.all_reduce_mean(local, info.world_size, self.device)

    def run(self, resume: bool) -> PretrainResult:
        cfg = self.cfg
        if resume:
            self._restore()
        start = self.step
        every = cfg.resolved_checkpoint_every()
        bar = None
        if cfg.progress and self.info.is_main and start < cfg.steps:
            try:
                from tqdm.auto import tqdm

                bar = tqdm(total=cfg.steps, initial=start, desc=f"pretrain {self.arch}", unit="step")
            except ImportError:
                logger.info("tqdm is not installed; no progress bar (pip install tabzoo-core[progress]).")
        t0 = time.perf_counter()
        step_seconds: list[float] = []
        n_workers = stolen = 0
        try:
            self.source = open_batch_source(self.prior, self.prior_name, cfg, self.device, start=start,
                                            draws=self.my_draws, draw_size=self.draw_size)
            n_workers = len(getattr(self.source, "processes", ()))
            t_step = time.perf_counter()
            end = cfg.steps if cfg.stop_after is None else min(cfg.steps, int(cfg.stop_after))
            while self.step < end:
                loss = self._train_step()
                self.losses.append(loss)
                self.step += 1
                now = time.perf_counter()
                step_seconds.append(now - t_step)
                t_step = now
                elapsed = now - t0
                if bar is not None:
                    eps = (self.step - start) * cfg.batch_size / max(elapsed, 1e-9)
                    bar.set_postfix(loss=f"{loss:.4f}", eps=f"{eps:.1f}/s", refresh=False)
                    bar.update(1)
                if self.step % every == 0 or self.step == end:
                    self._checkpoint(self.wall_before + elapsed)
        finally:  # an error, Ctrl-C or the end: stop and reap the workers, then close the bar
            if self.source is not None:
                stolen = int(getattr(self.source, "stolen", 0))
                self.source.close()
                self.source = None
            if bar is not None:
                bar.close()
        wall = self.wall_before + time.perf_counter() - t0
        if self.info.distributed:
            import torch.distributed as dist

            dist.barrier()
        return PretrainResult(self.model, list(self.losses), self.step, self.step * cfg.batch_size, wall, self.out, start,
                           step_seconds, n_workers, stolen)
