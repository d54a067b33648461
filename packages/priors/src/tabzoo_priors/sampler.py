"""Episode streaming for pretraining: curriculum stages and a worker-safe ``IterableDataset``.

The curriculum of ORION-MSP appendix B.2 is :meth:`Curriculum.orion_msp`:

=======  ======  ================  ============  ==============================  ===========
stage    steps   datasets / step   micro-batches rows per dataset                 trains
=======  ======  ================  ============  ==============================  ===========
1        25 000  2 048             8             1 024 (fixed)                    everything
2         2 000    512             1             log-uniform in [1 024, 40 000]   everything
3            50    512             1             uniform in [40 000, 60 000]      ICL only
=======  ======  ================  ============  ==============================  ===========

Within a micro-batch all datasets share one row count; it varies across micro-batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from tabzoo_priors._random import derive_seed

__all__ = ["CurriculumStage", "Curriculum", "EpisodeStream", "make_dataloader"]

_DISTS = ("fixed", "log_uniform", "uniform")


@dataclass(frozen=True)
class CurriculumStage:
    """One curriculum stage.

    :param steps: optimiser steps in this stage.
    :param datasets_per_step: datasets per optimiser step (over all micro-batches).
    :param micro_batches: gradient-accumulation micro-batches per step.
    :param rows: ``(min, max)`` rows per dataset.
    :param rows_distribution: ``"fixed"`` (uses ``rows[0]``), ``"log_uniform"`` or ``"uniform"``.
    :param trainable: ``"all"`` or ``"icl_only"`` (a hint for the trainer: freeze the rest).
    """

    name: str
    steps: int
    datasets_per_step: int
    micro_batches: int
    rows: tuple[int, int]
    rows_distribution: str = "fixed"
    trainable: str = "all"

    def __post_init__(self) -> None:
        if self.rows_distribution not in _DISTS:
            raise TabzooInputError(
                f"stage {self.name!r}: rows_distribution={self.rows_distribution!r}; use one of {_DISTS}."
            )
        if self.steps < 1 or self.micro_batches < 1 or self.datasets_per_step < self.micro_batches:
            raise TabzooInputError(
                f"stage {self.name!r}: need steps >= 1 and datasets_per_step >= micro_batches >= 1."
            )
        if not 4 <= self.rows[0] <= self.rows[1]:
            raise TabzooInputError(f"stage {self.name!r}: rows={self.rows} must satisfy 4 <= min <= max.")

    @property
    def micro_batch_size(self) -> int:
        """Datasets per micro-batch."""
        return max(1, self.datasets_per_step // self.micro_batches)

    def sample_rows(self, g: torch.Generator) -> int:
        """Rows for one micro-batch."""
        lo, hi = self.rows
        if self.rows_distribution == "fixed" or lo == hi:
            return lo
        u = float(torch.rand((), generator=g))
        if self.rows_distribution == "uniform":
            return min(hi, lo + int(u * (hi - lo + 1)))
        return min(hi, int(math.exp(math.log(lo) + u * (math.log(hi + 1) - math.log(lo)))))


@dataclass(frozen=True)
class Curriculum:
    """A sequence of :class:`CurriculumStage`; step ``s`` falls in the first stage not yet used up."""

    stages: tuple[CurriculumStage, ...]

    @classmethod
    def orion_msp(cls) -> Curriculum:
        """The three-stage curriculum of ORION-MSP appendix B.2."""
        return cls((
            CurriculumStage("stage1", 25_000, 2048, 8, (1024, 1024), "fixed", "all"),
            CurriculumStage("stage2", 2_000, 512, 1, (1024, 40_000), "log_uniform", "all"),
            CurriculumStage("stage3", 50, 512, 1, (40_000, 60_000), "uniform", "icl_only"),
        ))

    def scaled(self, *, steps: float = 1.0, datasets: float = 1.0, rows: float = 1.0) -> Curriculum:
        """A proportionally smaller (or larger) curriculum, e.g. for CPU runs."""
        out = []
        for s in self.stages:
            mb = max(1, min(s.micro_batches, round(s.datasets_per_step * datasets)))
            out.append(replace(
                s, steps=max(1, round(s.steps * steps)),
                datasets_per_step=max(mb, round(s.datasets_per_step * datasets)), micro_batches=mb,
                rows=(max(4, round(s.rows[0] * rows)), max(4, round(s.rows[1] * rows))),
            ))
        return Curriculum(tuple(out))

    @classmethod
    def from_config(cls, stages: Any) -> Curriculum:
        """Build from a :class:`Curriculum`, ``"orion_msp"`` or a JSON-able list of stage dicts.

        A stage dict needs ``steps`` and ``rows`` (``[min, max]``); ``rows_distribution``
        (default ``"log_uniform"``), ``name``, ``datasets_per_step`` and ``micro_batches``
        (default 1: the trainer's own batch size applies) and ``trainable`` are optional.
        """
        if isinstance(stages, Curriculum):
            return stages
        if stages == "orion_msp":
            return cls.orion_msp()
        if not isinstance(stages, (list, tuple)) or not stages:
            raise TabzooInputError(
                f"curriculum must be 'orion_msp', a Curriculum or a non-empty list of stage dicts, got {stages!r}."
            )
        out = []
        for i, st in enumerate(stages):
            if isinstance(st, CurriculumStage):
                out.append(st)
                continue
            if not isinstance(st, dict) or "steps" not in st or "rows" not in st:
                raise TabzooInputError(
                    f"curriculum stage {i} is {st!r}; give a dict with 'steps' and 'rows': [min, max]."
                )
            extra = sorted(set(st) - {"name", "steps", "rows", "rows_distribution", "datasets_per_step",
                                      "micro_batches", "trainable"})
            if extra:
                raise TabzooInputError(f"curriculum stage {i}: unknown key(s) {extra}.")
            out.append(CurriculumStage(
                name=str(st.get("name", f"stage{i + 1}")), steps=int(st["steps"]),
                datasets_per_step=int(st.get("datasets_per_step", 1)),
                micro_batches=int(st.get("micro_batches", 1)),
                rows=(int(st["rows"][0]), int(st["rows"][1])),
                rows_distribution=str(st.get("rows_distribution", "log_uniform")),
                trainable=str(st.get("trainable", "all")),
            ))
        return cls(tuple(out))

    def stage_at_step(self, step: int) -> CurriculumStage:
        """The stage of optimiser step ``step``; steps past the end stay in the last stage."""
        left = int(step)
        for s in self.stages:
            if left < s.steps:
                return s
            left -= s.steps
        return self.stages[-1]

    def to_config(self) -> list[dict[str, Any]]:
        """JSON-able form, the inverse of :meth:`from_config`."""
        return [{"name": s.name, "steps": s.steps, "rows": list(s.rows), "rows_distribution": s.rows_distribution,
                 "datasets_per_step": s.datasets_per_step, "micro_batches": s.micro_batches,
                 "trainable": s.trainable} for s in self.stages]

    @property
    def total_steps(self) -> int:
        return sum(s.steps for s in self.stages)

    @property
    def total_micro_batches(self) -> int:
        return sum(s.steps * s.micro_batches for s in self.stages)

    def locate(self, micro_batch: int) -> tuple[CurriculumStage, int]:
        """``(stage, optimiser step)`` of global micro-batch index ``micro_batch``."""
        step, left = 0, micro_batch
        for s in self.stages:
            if left < s.steps * s.micro_batches:
                return s, step + left // s.micro_batches
            left -= s.steps * s.micro_batches
            step += s.steps
        raise IndexError(f"micro-batch {micro_batch} is past the curriculum's end.")


class EpisodeStream(IterableDataset):
    """Stream of episode batches from a prior; safe and reproducible with DataLoader workers.

    Item ``i`` (a micro-batch) is generated with seed ``derive_seed(seed, i)``. Worker ``w`` of
    ``W`` produces items ``i = start + w + k * W`` (k = its own step counter), and a DataLoader
    collects workers round-robin, so the stream is the same for any number of workers.

    :param prior: any object with ``sample(batch_size, *, seed, device, n_rows)`` (an episode prior).
    :param seed: stream seed.
    :param batch_size: datasets per item when no curriculum is given.
    :param curriculum: a :class:`Curriculum`; sets rows and micro-batch size per item.
    :param n_batches: stop after this many items (default: the curriculum's length, else forever).
    :param start: index of the first item (exact resume after ``start`` items were consumed).
    :param raw: yield :class:`tabzoo_priors.RawBatch` instead of ``EpisodeBatch``.
    """

    def __init__(
        self, prior: Any, *, seed: int, batch_size: int | None = None,
        curriculum: Curriculum | None = None, n_batches: int | None = None, start: int = 0,
        raw: bool = False,
    ) -> None:
        super().__init__()
        if curriculum is None and batch_size is None:
            raise TabzooInputError("EpisodeStream needs batch_size=<int> or curriculum=<Curriculum>.")
        self.prior, self.seed, self.batch_size = prior, int(seed), batch_size
        self.curriculum, self.start, self.raw = curriculum, int(start), raw
        if n_batches is None and curriculum is not None:
            n_batches = curriculum.total_micro_batches - self.start
        self.n_batches = n_batches

    def item(self, i: int) -> Any:
        """Generate item ``i`` of the stream (pure function of the stream's settings and ``i``)."""
        item_seed = derive_seed(self.seed, i)
        n_rows, bs = None, self.batch_size
        if self.curriculum is not None:
            stage, _ = self.curriculum.locate(i)
            g = torch.Generator().manual_seed(derive_seed(self.seed, i, 3))
            n_rows, bs = stage.sample_rows(g), stage.micro_batch_size
        fn = self.prior.sample_raw if self.raw else self.prior.sample
        return fn(bs, seed=item_seed, n_rows=n_rows)

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        worker_id, n_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        k = 0
        while True:
            offset = worker_id + k * n_workers
            if self.n_batches is not None and offset >= self.n_batches:
                return
            yield self.item(self.start + offset)
            k += 1


def _identity(x: Any) -> Any:
    return x


def make_dataloader(
    prior: Any, *, seed: int, batch_size: int | None = None, curriculum: Curriculum | None = None,
    n_batches: int | None = None, start: int = 0, num_workers: int = 0, **loader_kwargs: Any,
) -> DataLoader:
    """A ``DataLoader`` over :class:`EpisodeStream`; each element is one ``EpisodeBatch``.

    Example::

        loader = make_dataloader(SCMPrior(), seed=0, batch_size=16, n_batches=100, num_workers=2)
        for batch in loader: ...
    """
    stream = EpisodeStream(prior, seed=seed, batch_size=batch_size, curriculum=curriculum,
                           n_batches=n_batches, start=start, raw=loader_kwargs.pop("raw", False))
    if num_workers > 0:
        loader_kwargs.setdefault("persistent_workers", False)
    return DataLoader(stream, batch_size=None, collate_fn=_identity, num_workers=num_workers,
                      **loader_kwargs)
