"""The determinism check's fresh worker counts as hung only without CPU progress (issue 23 item 8:
a wall-clock limit failed determinism falsely at load 20)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from tabzoo.testing.checks import fresh

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU time is read from /proc (Linux)")


def test_cpu_of_the_worker_and_its_children_is_counted() -> None:
    code = f"import subprocess; subprocess.run([{sys.executable!r}, '-c', 'sum(range(10**9))'])"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.5)
        before = fresh.tree_cpu_seconds(proc.pid)
        time.sleep(2.0)
        after = fresh.tree_cpu_seconds(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert before is not None and after is not None and after > before  # the grandchild's CPU


def test_an_idle_worker_is_given_up_after_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fresh, "TIMEOUT", 1.0)
    monkeypatch.setattr(fresh, "POLL", 0.2)
    worker = fresh._Worker(fresh._environment()[0])  # waits for a job on stdin: no CPU once started
    try:
        ready, why = worker._wait()
    finally:
        worker.close()
    assert not ready and "progress" in why
