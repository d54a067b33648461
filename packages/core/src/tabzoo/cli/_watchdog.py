"""Hang timeouts for the rows of ``tabzoo demo`` and ``tabzoo bench`` (issue 24).

A model whose fit or predict blocks forever (a deadlock, a wait on a socket, a sleeping loop) must
not hang the whole command: its row is stopped with a :class:`~tabzoo.errors.HangError` that names
the option raising the limit, and the other rows' results are kept. "Hung" is judged by CPU
progress (:mod:`tabzoo.plugins.progress`), never by the wall clock, so a slow model on an
overloaded machine is not stopped: a row is hung once it used less than 1% of one CPU over the
last ``timeout`` seconds. A row that computes for long is progress, not a hang.

* :func:`run_watched` runs a demo in a daemon thread of this process while this thread watches
  the process's CPU time. A hung thread cannot be killed in Python; it is left blocked (it uses no
  CPU) and the command goes on without it.
* :func:`run_process` runs a benchmark script as a child process and kills it once hung.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tabzoo.errors import HangError
from tabzoo.plugins.progress import Watch

__all__ = ["Outcome", "hang_error", "run_process", "run_watched"]


def hang_error(what: str, timeout: float, option: str) -> HangError:
    """The error of a row that made no progress for ``timeout`` seconds; ``option`` raises the limit."""
    return HangError(
        f"{what} made no progress for {timeout:g} s (it used almost no CPU: sleeping or blocked), so it "
        f"was stopped; if it is only slow, raise the limit with `{option} SECONDS` (now {timeout:g})."
    )


@dataclass
class Outcome:
    """What a watched call gave: its ``value``, or the exception it raised (``error``, with its
    ``traceback``), or a :class:`~tabzoo.errors.HangError` when it was stopped as hung."""

    value: Any = None
    error: BaseException | None = None
    traceback: str = ""


def run_watched(fn: Callable[[], Any], timeout: float, what: str, option: str) -> Outcome:
    """Call ``fn()`` in a daemon thread; return once it finishes, or once it is hung.

    Any ``BaseException`` of ``fn`` (``SystemExit`` included) is returned as the outcome's error;
    ``KeyboardInterrupt`` in this thread (Ctrl-C) propagates.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported as the row's failure
            box["error"], box["traceback"] = exc, traceback.format_exc(limit=6)

    worker = threading.Thread(target=target, name=f"tabzoo-watched-{what}", daemon=True)
    watch = Watch(os.getpid(), timeout, spin=False)
    worker.start()
    while worker.is_alive():
        worker.join(watch.poll_interval())
        if worker.is_alive() and watch.check():
            return Outcome(error=hang_error(what, timeout, option))
    return Outcome(box.get("value"), box.get("error"), box.get("traceback", ""))


def run_process(cmd: Sequence[str], timeout: float, what: str, option: str, **popen: Any) -> tuple[int, str, Outcome]:
    """Run ``cmd`` with its stdout captured; ``(returncode, stdout, outcome)``.

    The child is killed once hung (``outcome.error`` is then a :class:`HangError`, and the
    return code that of the kill).
    """
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(list(cmd), stdout=out, **popen)
        watch = Watch(proc.pid, timeout, spin=False)
        outcome = Outcome()
        try:
            while True:
                try:
                    proc.wait(watch.poll_interval())
                    break
                except subprocess.TimeoutExpired:
                    if watch.check():
                        outcome = Outcome(error=hang_error(what, timeout, option))
                        proc.kill()
                        proc.wait()
                        break
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return proc.returncode, text, outcome
