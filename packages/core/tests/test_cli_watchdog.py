"""Issue 24: hang timeouts of ``tabzoo demo`` / ``bench`` rows judge a row hung by its CPU progress:
a blocked call is stopped with the option that raises the limit, a busy one is never stopped."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from tabzoo.cli._watchdog import run_process, run_watched
from tabzoo.errors import HangError, TabzooError


def _busy(seconds: float) -> str:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return "done"


def test_a_blocked_call_is_stopped_with_a_hang_error_naming_the_option() -> None:
    release = threading.Event()
    try:
        got = run_watched(release.wait, 0.5, "the toy", "tabzoo demo --timeout")
    finally:
        release.set()
    assert isinstance(got.error, HangError) and isinstance(got.error, TabzooError)
    assert "the toy made no progress for 0.5 s" in str(got.error)
    assert "`tabzoo demo --timeout SECONDS` (now 0.5)" in str(got.error)


def test_a_busy_call_longer_than_the_timeout_is_not_stopped() -> None:
    got = run_watched(lambda: _busy(1.5), 0.5, "the toy", "tabzoo demo --timeout")
    assert got.error is None and got.value == "done"


@pytest.mark.parametrize("exc", [RuntimeError("boom"), SystemExit(0), BaseException("base")])
def test_whatever_the_call_raises_is_its_outcome_not_the_callers(exc: BaseException) -> None:
    def fail() -> None:
        raise exc

    got = run_watched(fail, 5.0, "the toy", "x")
    assert got.error is exc and type(exc).__name__ in got.traceback


def test_a_blocked_child_is_killed_and_a_finished_one_keeps_its_output() -> None:
    code, out, got = run_process([sys.executable, "-c", "import time; time.sleep(3600)"], 1.0, "the script", "x")
    assert isinstance(got.error, HangError) and code != 0
    code, out, got = run_process([sys.executable, "-c", "print('ok')"], 30.0, "the script", "x")
    assert (code, out.strip(), got.error) == (0, "ok", None)
