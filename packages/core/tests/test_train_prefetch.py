"""Prefetching prior batches in worker processes: same batches and same run as in-process drawing,
worker errors re-raised in the training process, and no worker left behind."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from _blobs import BlobsPrior
from _icl_testmodel import KernelICL, build
from _prefetch_priors import FailingPrior, SlowInWorker, StepBlobs, UnpicklableError
from tabzoo.errors import TabzooInputError
from tabzoo.train import PretrainConfig, load_latest, prefetch, pretrain
from tabzoo.train.prefetch import PrefetchSource, PriorWorkerError, draw_batch

FAST = {"progress": False, "plot": False, "lr": 0.05, "batch_size": 4}
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="checks worker processes through /proc and signals")


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[PrefetchSource]:
    """Every PrefetchSource the loop starts, so a test can check its processes afterwards. The
    training process never draws a batch itself here (``STEAL`` off): the workers draw them all."""
    monkeypatch.setattr(prefetch, "STEAL", False)
    seen: list[PrefetchSource] = []
    original = PrefetchSource.start

    def spy(self: PrefetchSource) -> PrefetchSource:
        seen.append(self)
        return original(self)

    monkeypatch.setattr(PrefetchSource, "start", spy)
    return seen


def _assert_reaped(sources: list[PrefetchSource]) -> None:
    """Every worker has exited and been waited for: no live process, no zombie."""
    assert sources and all(s.processes for s in sources)
    for s in sources:
        for p in s.processes:
            assert not p.is_alive() and p.exitcode is not None
            if os.path.exists("/proc/self"):
                assert not os.path.exists(f"/proc/{p.pid}"), f"worker {p.pid} is still in the process table"


def _same_batch(a: Any, b: Any) -> None:
    for name in ("x", "y", "row_mask", "feature_mask", "n_classes"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert (a.n_context, a.task, a.categorical) == (b.n_context, b.task, b.categorical)


@pytest.mark.parametrize("steal", [False, True])
def test_prefetched_batches_are_the_in_process_batches(steal: bool) -> None:
    prior = StepBlobs()
    with PrefetchSource(prior, draw_size=3, seed=7, start=2, stop=6, draws=[0, 2], workers=2, depth=1,
                        steal=steal) as src:
        for step in range(2, 6):
            for u in (0, 2):
                _same_batch(src.get(step, u), draw_batch(prior, 3, 7, step, u, "cpu"))
        with pytest.raises(RuntimeError, match="in order"):
            src.get(9, 0)
    assert steal or src.stolen == 0
    _assert_reaped([src])


def test_a_lagging_worker_is_helped_and_the_run_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker takes 0.2 s a batch, a step 0.05 s: the training process draws most batches
    itself, the worker some, and the run equals the in-process one."""

    class SlowStep(KernelICL):
        def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
            time.sleep(0.05)
            return super().forward(x, y_context)

    seen: list[PrefetchSource] = []
    original = PrefetchSource.start
    monkeypatch.setattr(PrefetchSource, "start", lambda self: (seen.append(self), original(self))[1])
    ref = pretrain(SlowStep(), SlowInWorker(), steps=30, seed=4, workers=0, **FAST)
    res = pretrain(SlowStep(), SlowInWorker(), steps=30, seed=4, workers=1, **FAST)
    assert res.losses == ref.losses
    assert 0 < seen[0].stolen < 30 and res.drawn_in_process == seen[0].stolen
    _assert_reaped(seen)


def test_training_is_identical_with_and_without_prefetch(started: list[PrefetchSource]) -> None:
    """Losses and weights are bit-identical for 0, 1 and 2 workers (two draws per step)."""
    runs = {w: pretrain(build({}), StepBlobs(), steps=6, seed=3, micro_batches=2, workers=w, **FAST)
            for w in (0, 1, 2)}
    assert [r.workers for r in runs.values()] == [0, 1, 2]
    for w in (1, 2):
        assert runs[w].losses == runs[0].losses
        for (n, a), b in zip(runs[w].model.state_dict().items(), runs[0].model.state_dict().values(), strict=True):
            assert torch.equal(a, b), n
    _assert_reaped(started)


def test_a_worker_error_is_reraised_and_resume_after_it_is_exact(tmp_path: Path,
                                                                 started: list[PrefetchSource]) -> None:
    cfg = PretrainConfig(steps=8, checkpoint_every=1, seed=2, **FAST)
    with pytest.raises(ValueError, match="boom at step 5") as info:
        pretrain(build({}), FailingPrior(fail_at=5), out=tmp_path, config=cfg, workers=1)
    exc = info.value
    text = str(exc)
    assert f"pid {os.getpid()}," not in text  # drawn in another process ...
    assert "torch threads 1, OMP 1" in text  # ... with one torch thread and one OpenMP thread
    assert any("prefetch worker 0" in n and "step 5, draw 0" in n and "workers=0" in n for n in exc.__notes__)
    assert "_prefetch_priors.py" in str(exc.__cause__)  # the worker's traceback
    _assert_reaped(started)
    assert load_latest(tmp_path)["step"] == 5  # steps 0-4 trained and saved, nothing after

    resumed = pretrain(build({}), StepBlobs(), out=tmp_path, config=cfg, resume=True, workers=1)
    ref = pretrain(build({}), StepBlobs(), config=cfg, workers=0)
    assert resumed.resumed_from == 5
    np.testing.assert_array_equal(resumed.losses, ref.losses)
    for (n, a), b in zip(resumed.model.state_dict().items(), ref.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), n


def test_unpicklable_errors_and_dead_workers_raise_prior_worker_error(started: list[PrefetchSource]) -> None:
    assert isinstance(UnpicklableError(1), Exception)
    with pytest.raises(PriorWorkerError, match="UnpicklableError.*prefetch worker 0.*step 2"):
        pretrain(build({}), FailingPrior(fail_at=2, how="unpicklable"), steps=4, workers=1, **FAST)
    with pytest.raises(PriorWorkerError, match=r"died with exit code -9 while the training process waited for step [01], draw 0.*workers=0"):
        pretrain(build({}), FailingPrior(fail_at=1, how="kill"), steps=4, workers=1, **FAST)
    _assert_reaped(started)


def test_ctrl_c_in_the_training_process_stops_the_workers(started: list[PrefetchSource]) -> None:
    class Interrupted(KernelICL):
        calls = 0

        def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
            Interrupted.calls += 1
            if Interrupted.calls == 3:
                raise KeyboardInterrupt
            return super().forward(x, y_context)

    with pytest.raises(KeyboardInterrupt):
        pretrain(Interrupted(), StepBlobs(), steps=50, workers=2, prefetch_depth=3, **FAST)
    _assert_reaped(started)


def test_workers_auto_and_bad_values(monkeypatch: pytest.MonkeyPatch, started: list[PrefetchSource]) -> None:
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert pretrain(build({}), BlobsPrior(), steps=3, **FAST).workers == 0  # too short to pay
    assert pretrain(build({}), BlobsPrior(), steps=16, **FAST).workers == 1

    class LocalPrior(BlobsPrior):  # a local class does not pickle: 'auto' draws in-process
        pass

    assert pretrain(build({}), LocalPrior(), steps=16, **FAST).workers == 0
    with pytest.raises(TabzooInputError, match="picklable.*workers=0"):
        pretrain(build({}), LocalPrior(), steps=2, workers=1, **FAST)
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    assert pretrain(build({}), BlobsPrior(), steps=16, **FAST).workers == 0  # one core: nothing to overlap with
    for bad in (-1, "2", 1.5, True):
        with pytest.raises(TabzooInputError, match="workers must be"):
            PretrainConfig(workers=bad)  # type: ignore[arg-type]
    with pytest.raises(TabzooInputError, match="prefetch_depth"):
        PretrainConfig(prefetch_depth=0)
    _assert_reaped(started)


def test_cli_workers_flag() -> None:
    from tabzoo.cli import pretrain_cmd

    parser = argparse.ArgumentParser()
    pretrain_cmd.add_parser(parser.add_subparsers())
    base = ["pretrain", "--model", "m", "--prior", "p", "--steps", "3", "--out", "o"]
    assert "workers" not in pretrain_cmd.train_options(parser.parse_args(base))  # PretrainConfig's default: auto
    assert pretrain_cmd.train_options(parser.parse_args([*base, "--workers", "auto"]))["workers"] == "auto"
    assert pretrain_cmd.train_options(parser.parse_args([*base, "--workers", "2"]))["workers"] == 2
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--workers", "two"])
