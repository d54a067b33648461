"""Checkpoint files under faults (issue 16 item 5), in real processes.

* two processes saving to one stem at once, with a third loading all the while: every load is a
  consistent pair (the weights and the JSON of the same save);
* a save killed with SIGKILL at every step of the write protocol, and at random moments: what is
  left loads as the previous or the new save, never a mix, and the next save cleans up;
* a JSON naming another architecture, or a newer format version, is refused clearly.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from tabzoo.checkpoint import load_checkpoint, load_model, save_checkpoint
from tabzoo.checkpoint.validate import meta_digest
from tabzoo.errors import CheckpointError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork and SIGKILL are POSIX")
CTX = mp.get_context("fork")


def _tensors(value: float, size: int = 128) -> dict[str, torch.Tensor]:
    return {"a": torch.full((size, size), value), "b": torch.full((size,), -value)}


def _save(stem: Path, value: float, size: int = 128) -> None:
    save_checkpoint(stem, _tensors(value, size), architecture="toy", config={}, extra={"value": value})


def _assert_consistent(stem: Path) -> float:
    ckpt = load_checkpoint(stem)
    value = ckpt.meta["extra"]["value"]
    assert torch.all(ckpt.tensors["a"] == value) and torch.all(ckpt.tensors["b"] == -value), "mixed pair"
    return float(value)


def _writer(stem: str, writer: int, n: int) -> None:
    torch.set_num_threads(1)
    for i in range(n):
        _save(Path(stem), writer * 1000.0 + i)


def test_two_writers_and_a_reader_never_see_a_mixed_pair(tmp_path: Path) -> None:
    stem = tmp_path / "ck"
    procs = [CTX.Process(target=_writer, args=(str(stem), w, 25)) for w in (1, 2)]
    for p in procs:
        p.start()
    seen: set[float] = set()
    deadline = time.monotonic() + 120
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        try:
            seen.add(_assert_consistent(stem))
        except CheckpointError as exc:
            assert "does not exist" in str(exc), exc  # only before the first save lands
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    final = _assert_consistent(stem)
    assert final in {1024.0, 2024.0}  # the last save of one of the writers
    assert len(seen) >= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.json", "ck.safetensors"]


def _crash_on_call(stem: str, func: str, k: int) -> None:
    """Save value 2.0, sending ourselves SIGKILL at the ``k``-th call of ``os.<func>``."""
    real = getattr(os, func)
    calls = {"n": 0}

    def hook(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)

    setattr(os, func, hook)
    _save(Path(stem), 2.0)
    os._exit(3)  # the crash point was never reached


# the write protocol: fsync pending weights, rename it, fsync pending JSON, rename it, then the
# two commits (weights, JSON); every point before, between and after is a crash point
CRASH_POINTS = [("fsync", 1), ("fsync", 2), ("replace", 1), ("replace", 2), ("replace", 3), ("replace", 4)]


@pytest.mark.parametrize(("func", "k"), CRASH_POINTS)
def test_kill_9_at_every_step_of_a_save(tmp_path: Path, func: str, k: int) -> None:
    stem = tmp_path / "ck"
    _save(stem, 1.0)
    p = CTX.Process(target=_crash_on_call, args=(str(stem), func, k))
    p.start()
    p.join(60)
    assert p.exitcode == -signal.SIGKILL
    value = _assert_consistent(stem)
    # before the weights are committed the old save stands; after it, the new one is found
    assert value == (2.0 if (func, k) == ("replace", 4) else 1.0)
    _save(stem, 3.0)  # the next save works and removes the leftovers
    assert _assert_consistent(stem) == 3.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.json", "ck.safetensors"]


WRITER = textwrap.dedent('''
    import os, random, signal, sys, time, torch
    from tabzoo.checkpoint import save_checkpoint
    torch.set_num_threads(1)
    stem, rng = sys.argv[1], random.Random(int(sys.argv[2]))
    for attempt in range(3):  # one interpreter (one torch import); each writer is a fork of it
        pid = os.fork()
        if pid == 0:
            i = 0
            while True:
                i += 1
                v = float(i)
                save_checkpoint(stem, {"a": torch.full((512, 512), v), "b": torch.full((512,), -v)},
                                architecture="toy", config={}, extra={"value": v})
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        print("killed", os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, flush=True)
        sys.stdin.readline()  # the test has checked the files
''')


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the writers are forks of one fresh interpreter")
def test_kill_9_at_random_moments_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """Three writers killed with SIGKILL at random moments of their save loop; after each, the files
    hold one whole checkpoint (or none yet). The writers are forks of one fresh interpreter, so torch
    is imported once, not three times."""
    stem = tmp_path / "ck"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(stem), "16"], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.stdout is not None and proc.stdin is not None
    try:
        for _ in range(3):
            assert proc.stdout.readline().strip() == b"killed True"
            try:
                _assert_consistent(stem)
            except CheckpointError as exc:
                assert "does not exist" in str(exc), exc  # killed before its first save landed
            proc.stdin.write(b"\n")
            proc.stdin.flush()
        assert proc.wait(120) == 0
    finally:
        proc.kill()
        proc.wait()
    _save(stem, -1.0, size=512)
    assert _assert_consistent(stem) == -1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.json", "ck.safetensors", "writer.py"]


def test_json_of_another_architecture_is_refused(tmp_path: Path) -> None:
    model = torch.nn.Linear(3, 2)
    model.architecture = "linear_a"  # type: ignore[assignment]
    save_checkpoint(tmp_path / "m", model, architecture="linear_a", config={})
    with pytest.raises(CheckpointError, match=r"holds architecture 'linear_a'.*not 'linear_b'"):
        load_checkpoint(tmp_path / "m", architecture="linear_b")

    def build_b(config: dict) -> torch.nn.Module:
        m = torch.nn.Linear(3, 2)
        m.architecture = "linear_b"  # type: ignore[assignment]
        return m

    with pytest.raises(CheckpointError, match="not 'linear_b'"):
        load_model(tmp_path / "m", build=build_b)
    assert isinstance(load_model(tmp_path / "m", build=lambda c: torch.nn.Linear(3, 2)), torch.nn.Linear)


def test_json_of_a_future_format_version_is_refused(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "m", torch.nn.Linear(3, 2), architecture="lin", config={})
    meta_path = tmp_path / "m.json"
    meta = json.loads(meta_path.read_text())
    meta["format"] = "tabzoo-checkpoint/7"
    meta["versions"]["tabzoo-core"] = "9.0.0"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"format version 7 \(written by tabzoo-core 9\.0\.0\).*Upgrade"):
        load_checkpoint(tmp_path / "m")


def test_estimator_load_refuses_a_model_of_another_architecture(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    import numpy as np
    from _icl_testmodel import ICLTestClassifier

    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    stem = ICLTestClassifier(n_estimators=1, device="cpu").fit(X, y).save(tmp_path / "est")
    meta_path = stem.with_name(stem.name + ".model.json")
    meta = json.loads(meta_path.read_text())
    meta["architecture"] = "someone_else"
    meta["digest"] = meta_digest(meta)  # a consistent JSON of another architecture, not an edit
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="holds architecture 'someone_else'.*not 'icl_test'"):
        ICLTestClassifier.load(stem)
