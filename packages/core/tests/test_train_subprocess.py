"""Real processes: kill -9 + ``tabzoo pretrain --resume``, and 2-process DDP under torchrun."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from _icl_testmodel import BlobsPrior, build, plugin_env
from tabzoo.checkpoint import load_checkpoint
from tabzoo.train import load_history, pretrain
from tabzoo.train.config import AUTO_WORKERS_MIN_STEPS

# each test starts 2-3 fresh Python processes that import torch (~10-20 s each on the shared 2-core CI)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL and torchrun"),
]


def _pretrain_cmd(out: Path, steps: int, config: dict, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "tabzoo.cli", "pretrain", "--model", "icl_test", "--prior", "blobs_test",
        "--steps", str(steps), "--out", str(out), "--seed", "5", "--lr", "0.05", "--batch-size", "4",
        "--config", json.dumps(config), "--no-progress", *extra,
    ]


def _latest_step(out: Path) -> int:
    try:
        return int(json.loads((out / "latest.json").read_text())["step"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return -1


def _marked_processes(marker: str) -> list[int]:
    """Pids of the live processes whose environment holds ``marker`` (Linux /proc; [] elsewhere)."""
    pids = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                pids.append(int(entry.name)) if state != "Z" else None
        except OSError:
            continue
    return pids


def test_kill_minus_9_then_resume_matches_uninterrupted_run(tmp_path: Path) -> None:
    """20 steps: the run prefetches with 1 worker ('auto', from AUTO_WORKERS_MIN_STEPS = 16 steps); the worker
    must not outlive the killed run. The resumed run has fewer than 16 steps left, so it draws its batches
    itself (no second fork server to start); resuming beside workers is exact by test_train_prefetch."""
    marker = f"TABZOO_KILL_TEST={os.getpid()}-{time.monotonic_ns()}"
    env = {**plugin_env(tmp_path / "site"), marker.split("=")[0]: marker.split("=")[1]}
    steps, kill_at = 20, 6
    assert steps >= AUTO_WORKERS_MIN_STEPS > steps - kill_at
    # 14 steps of at least 0.06 s after the kill point: the same 0.84 s margin as 21 steps of 0.04 s
    config = {"checkpoint_every": 3, "plot": False, "prior_config": {"delay": 0.06}}
    out = tmp_path / "run"
    proc = subprocess.Popen(_pretrain_cmd(out, steps, config), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 480  # a guard against a hang; torch's import alone took 90 s at a load of 29
        while _latest_step(out) < kill_at:
            assert proc.poll() is None, f"pretraining exited early: {proc.communicate()[1][-2000:]}"
            assert time.monotonic() < deadline, f"no checkpoint at step {kill_at} within 480 s"
            time.sleep(0.01)
        if Path("/proc/self/environ").exists():  # the run's worker (and fork server) are up
            assert [p for p in _marked_processes(marker) if p != proc.pid], "no prefetch worker started"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while _marked_processes(marker) and time.monotonic() < deadline:  # the prefetch worker and its fork server
        time.sleep(0.2)
    assert not _marked_processes(marker), "a prefetch worker outlived the killed training process"
    killed_at = _latest_step(out)
    assert kill_at <= killed_at < steps, "the run finished before it was killed; raise the delay"

    done = subprocess.run(_pretrain_cmd(out, steps, config, "--resume", "--json"), env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["resumed_from"] == killed_at and summary["steps"] == steps

    # the uninterrupted run, in this process, with the same seed and options
    ref = pretrain(build({}), BlobsPrior(), steps=steps, seed=5, lr=0.05, batch_size=4, progress=False,
                   plot=False, checkpoint_every=3)
    history = load_history(out)
    assert len(history) == steps
    np.testing.assert_allclose(history, ref.losses, rtol=1e-5, atol=1e-6)
    weights = load_checkpoint(out / "model").tensors
    for name, value in ref.model.state_dict().items():
        torch.testing.assert_close(weights[name], value, rtol=1e-5, atol=1e-6)


def test_torchrun_two_processes_match_one_process_over_the_same_global_batch(tmp_path: Path) -> None:
    env = {**plugin_env(tmp_path / "site"), "OMP_NUM_THREADS": "1"}
    out = tmp_path / "ddp"
    config = {"micro_batches": 2, "amp": "off", "plot": False, "checkpoint_every": 100}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "tabzoo.cli", *_pretrain_cmd(out, 6, config)[3:]]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    ckpt = load_checkpoint(out / "model")
    assert ckpt.meta["extra"]["machine"]["world_size"] == 2

    single = pretrain(build({}), BlobsPrior(), steps=6, seed=5, lr=0.05, batch_size=4, micro_batches=2,
                      amp="off", progress=False, plot=False)
    np.testing.assert_allclose(load_history(out), single.losses, rtol=1e-5, atol=1e-6)
    for name, value in single.model.state_dict().items():
        torch.testing.assert_close(ckpt.tensors[name], value, rtol=1e-5, atol=1e-6)
    # the two halves of the global batch differ, so a run without averaging would not match
    half = pretrain(build({}), BlobsPrior(), steps=6, seed=5, lr=0.05, batch_size=2, micro_batches=1,
                    amp="off", progress=False, plot=False)
    assert not torch.allclose(half.model.feature_weight, single.model.feature_weight)
