"""Configuration of pretraining, the learning-rate schedule and the per-step seeds."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from tabzoo.deprecation import renamed
from tabzoo.errors import TabzooInputError

__all__ = ["PretrainConfig", "WarmupCosine", "batch_seed"]
__getattr__ = renamed(__name__, {"TrainConfig": "PretrainConfig"})  # issue 31: the pretraining config

AMP_MODES = ("auto", "bf16", "fp16", "off")
AUTO_WORKERS_MIN_STEPS = 16  # below this many steps a worker's start-up (a few seconds) does not pay


@dataclass
class PretrainConfig:
    """Everything that defines a pretraining run (stored in every checkpoint).

    :param steps: optimizer steps.
    :param batch_size: episodes per optimizer step, over all processes (the global batch).
    :param micro_batches: prior draws per step, over all processes; each has
        ``batch_size / micro_batches`` episodes. Gradients are accumulated over a process's
        draws; under DDP each process takes the draws ``u`` with ``u % world_size == rank``, so
        it must be a multiple of the world size. ``None`` = the world size (no accumulation).
    :param lr: peak learning rate of AdamW.
    :param weight_decay: AdamW decoupled weight decay.
    :param warmup_steps: linear warmup; ``None`` = 5% of ``steps``.
    :param min_lr_ratio: the cosine decays to ``lr * min_lr_ratio`` at the last step.
    :param clip_norm: gradient-norm clipping (``None`` or 0 = off).
    :param amp: ``"auto"`` (bf16 on a CPU with AVX512-BF16/AMX, else fp32; bf16 or fp16 +
        GradScaler on GPU), ``"bf16"``,
        ``"fp16"`` (GPU only, with a GradScaler), or ``"off"``.
    :param seed: batches are a pure function of ``(seed, step, draw)``; weights are
        initialised after ``torch.manual_seed(seed)``.
    :param checkpoint_every: steps between checkpoints; ``None`` = every 10% of the run. A
        final checkpoint is always written.
    :param device: ``"auto"`` = cuda when available (``cuda:LOCAL_RANK`` under torchrun).
    :param progress: tqdm bar (rank 0 only; needs ``tqdm``).
    :param plot: write ``learning_curve.png`` next to each checkpoint (needs ``matplotlib``).
    :param model_config: overrides of the architecture's default config.
    :param prior_config: keyword arguments of the prior's factory.
    :param init_from: path stem of a model checkpoint (``tabzoo.checkpoint`` safetensors + JSON,
        e.g. a shipped one) whose weights start the run (fine-tuning); its tensors must fit the
        model. A resumed run loads its own state instead.
    :param freeze: parameter-name prefixes that get no gradient (fine-tuning part of a model).
    :param workers: background processes that draw prior batches ahead of the training step, so
        generation overlaps training (:mod:`tabzoo.train.prefetch`). ``0`` = draw each batch in the
        training process when the step needs it. ``"auto"`` (default) = 1 worker when it pays: a
        CPU device, >= 2 usable cores, >= 16 steps left to run (a worker takes a few seconds to
        start) and a picklable prior; else 0. Workers run 1 torch thread and 1 BLAS/OpenMP thread
        each and draw on the CPU. The batches are identical either way (each is a pure function
        of ``(seed, step, draw)``); on a GPU, ``workers=0`` draws on the GPU, which gives other
        random numbers than a worker's CPU draw.
    :param prefetch_depth: finished batches each worker may hold ahead of the loop (memory cost:
        ``workers * prefetch_depth`` batches).
    :param stop_after: stop once this step is done (the schedule still spans ``steps``), e.g. to
        split a long run over sessions; a later call with ``resume`` continues it exactly.
    """

    steps: int = 1000
    batch_size: int = 8
    micro_batches: int | None = None
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int | None = None
    min_lr_ratio: float = 0.1
    clip_norm: float | None = 1.0
    amp: str = "auto"
    seed: int = 0
    checkpoint_every: int | None = None
    device: str = "auto"
    progress: bool = True
    plot: bool = True
    model_config: dict[str, Any] = field(default_factory=dict)
    prior_config: dict[str, Any] = field(default_factory=dict)
    init_from: str | None = None
    freeze: list[str] = field(default_factory=list)
    workers: int | str = "auto"
    prefetch_depth: int = 2
    stop_after: int | None = None

    def __post_init__(self) -> None:
        if int(self.steps) < 1:
            raise TabzooInputError(f"steps must be >= 1, got {self.steps}.")
        if int(self.batch_size) < 1:
            raise TabzooInputError(f"batch_size must be >= 1, got {self.batch_size}.")
        if self.amp not in AMP_MODES:
            raise TabzooInputError(f"amp must be one of {AMP_MODES}, got {self.amp!r}.")
        if self.lr <= 0:
            raise TabzooInputError(f"lr must be > 0, got {self.lr}.")
        if isinstance(self.freeze, str) or not all(isinstance(f, str) and f for f in self.freeze):
            raise TabzooInputError(
                f"freeze must be a list of parameter-name prefixes, e.g. ['rows', 'memory'], got {self.freeze!r}."
            )
        self.freeze = list(self.freeze)
        if self.workers != "auto" and (isinstance(self.workers, bool) or not isinstance(self.workers, int)
                                       or self.workers < 0):
            raise TabzooInputError(
                f"workers must be 'auto' or an integer >= 0 (0 = draw batches in the training process), "
                f"got {self.workers!r}."
            )
        if isinstance(self.prefetch_depth, bool) or not isinstance(self.prefetch_depth, int) or self.prefetch_depth < 1:
            raise TabzooInputError(f"prefetch_depth must be an integer >= 1, got {self.prefetch_depth!r}.")
        if self.stop_after is not None and int(self.stop_after) < 1:
            raise TabzooInputError(f"stop_after must be >= 1 (or None), got {self.stop_after}.")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PretrainConfig:
        """Build from a dict, refusing unknown keys (with the list of known ones)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TabzooInputError(f"unknown training options {unknown}; known options are {sorted(known)}.")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def resolved_warmup(self) -> int:
        return max(0, int(self.warmup_steps if self.warmup_steps is not None else round(0.05 * self.steps)))

    def resolved_checkpoint_every(self) -> int:
        return max(1, int(self.checkpoint_every or max(1, self.steps // 10)))

    def resolved_micro_batches(self, world_size: int) -> int:
        m = int(self.micro_batches or world_size)
        if m % world_size:
            raise TabzooInputError(
                f"micro_batches={m} is not a multiple of the {world_size} processes; set micro_batches "
                f"to a multiple of {world_size}."
            )
        if self.batch_size % m:
            raise TabzooInputError(
                f"batch_size={self.batch_size} does not split into micro_batches={m} equal draws; use a "
                f"batch_size that is a multiple of {m}."
            )
        return m


class WarmupCosine:
    """``LambdaLR`` factor: linear warmup from ~0 to 1, then cosine down to ``min_ratio``.

    A plain object (not a closure) so that the scheduler's ``state_dict`` stores its fields.
    """

    def __init__(self, total_steps: int, warmup_steps: int, min_ratio: float) -> None:
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)
        self.min_ratio = float(min_ratio)

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / (self.warmup_steps + 1)
        span = max(1, self.total_steps - self.warmup_steps - 1)
        progress = min(1.0, (step - self.warmup_steps) / span)
        return self.min_ratio + (1.0 - self.min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def batch_seed(seed: int, step: int, draw: int) -> int:
    """The prior seed of draw ``draw`` of step ``step``: a pure function, so resume is exact."""
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(step), int(draw)]).generate_state(1)[0])
