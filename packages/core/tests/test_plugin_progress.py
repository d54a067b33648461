"""Issue 24: a plugin's import is called hung by its CPU progress, not by the wall clock, so a slow
import on an overloaded machine is not a hang, while a sleeping or a spinning one is."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from _fake_dists import GOOD, use_site
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.plugins import discovery, progress, reset_registry

SPIN = "while True:\n    pass\n"
# about 10% of one CPU for 6 s: what a 1-s import looks like at a load of 20 on 2 cores
SLOW = ("import time\nend = time.monotonic() + 6\nwhile time.monotonic() < end:\n"
        "    t = time.process_time() + 0.005\n    while time.process_time() < t:\n        pass\n"
        "    time.sleep(0.045)\n") + GOOD.format(arch="slow_arch", prior="slow_prior")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = use_site(tmp_path, monkeypatch, {"spin": SPIN, "slow": SLOW}, timeout="2")
    discovery._memo.clear()
    reset_registry()
    yield root
    discovery._memo.clear()
    reset_registry()


@pytest.mark.skipif(progress.cpu_seconds(os.getpid()) is None, reason="no /proc: the wall clock decides")
def test_a_slow_import_is_not_hung_and_a_spinning_one_is(site: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        excluded = discovery.excluded_plugins()
    assert set(excluded) == {"tzspin"}, excluded  # tzslow ran 6 s against a 2-s timeout and still loaded
    assert "used 2 CPU-seconds without finishing" in excluded["tzspin"]
    assert "raise TABZOO_PLUGIN_TIMEOUT, now 2," in excluded["tzspin"]
    listing = discovery.cached_listing()
    slow = next(p for p in listing["plugins"] if p["name"] == "tzslow")
    assert slow["loaded"] and [a["name"] for a in slow["architectures"]] == ["slow_arch"]


def test_cpu_seconds_of_a_child_grow_while_it_works_and_not_while_it_sleeps() -> None:
    if progress.cpu_seconds(os.getpid()) is None:
        pytest.skip("no /proc on this system")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        watch = progress.Watch(sleeper.pid, timeout=0.5)
        first = progress.cpu_seconds(sleeper.pid)
        time.sleep(1.5)  # the interpreter's start may take CPU; after it, none
        later = progress.cpu_seconds(sleeper.pid)
        assert first is not None and later is not None and later >= first
        watch.restart()
        time.sleep(0.7)
        assert watch.check() == "blocked"
    finally:
        sleeper.kill()
        sleeper.wait()


@given(timeout=st.floats(1, 1e4), share=st.floats(0, 1), wall_factor=st.floats(0, 10))
def test_the_verdict_follows_cpu_progress(timeout: float, share: float, wall_factor: float) -> None:
    wall = timeout * wall_factor
    window = min(wall, timeout)
    idle, used = share * window, share * wall
    got = progress.verdict(wall, idle, used, timeout)
    if used >= timeout:
        assert got == "spinning"
    elif wall >= timeout and share < progress.IDLE_SHARE:
        assert got == "blocked"
    else:
        assert got is None  # e.g. 10% of a CPU for 10 timeouts: slow, not hung
    assert progress.verdict(wall, None, None, timeout) == ("blocked" if wall >= timeout else None)
