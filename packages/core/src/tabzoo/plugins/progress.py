"""Is a child process hung, or only slow? Judged by its CPU progress, not by the wall clock (issue 24).

On an overloaded machine (a load of 20 on 2 cores) importing torch took over 120 s of wall-clock
time, so a wall-clock timeout calls a slow plugin hung. :class:`Watch` reads the child's CPU time
(``/proc/<pid>/stat``: user + system, its own and its waited-for children's) and calls it hung only
when, within one plugin,

* it made **no progress**: over the last ``timeout`` wall-clock seconds it used less than
  :data:`IDLE_SHARE` of one CPU (sleeping, blocked on a lock, a pipe or the network), or
* it **spun**: it used ``timeout`` CPU-seconds (a busy loop; no import needs that much).

A runnable process on a loaded machine still gets a share of a CPU (about 10% at a load of 20 on
2 cores), far above :data:`IDLE_SHARE`. Where ``/proc`` is missing the wall clock decides alone.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path

__all__ = ["IDLE_SHARE", "Watch", "cpu_seconds", "verdict"]

IDLE_SHARE = 0.01
"""A child using less than this share of one CPU over a whole timeout window is making no progress."""


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds used so far by process ``pid`` (user + system, with its waited-for children);
    ``None`` where ``/proc`` cannot tell."""
    if pid == os.getpid():  # this process: portable, all its threads
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime (fields 14-17)
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def verdict(wall: float, idle_cpu: float | None, used_cpu: float | None, timeout: float,
            spin: bool = True) -> str | None:
    """``"blocked"``, ``"spinning"`` or ``None`` (still making progress).

    :param wall: wall-clock seconds since the current step began.
    :param idle_cpu: CPU seconds used over the last ``timeout`` wall-clock seconds (``None``: unknown).
    :param used_cpu: CPU seconds used since the current step began (``None``: unknown).
    :param spin: whether ``timeout`` CPU-seconds count as hung (``False`` for work that may
        legitimately compute for long: a demo's fit, a benchmark script; only "blocked" then).
    """
    if used_cpu is None or idle_cpu is None:
        return "blocked" if wall >= timeout else None  # no /proc: the wall clock decides
    if spin and used_cpu >= timeout:
        return "spinning"
    if wall >= timeout and idle_cpu < IDLE_SHARE * timeout:
        return "blocked"
    return None


class Watch:
    """Watch one process step by step (:meth:`restart` at each step, :meth:`check` often).

    ``pid`` may be this process itself (:func:`os.getpid`): a watchdog thread watching work run in
    another thread (``tabzoo demo``) while the watching thread itself sleeps between checks.
    """

    def __init__(self, pid: int, timeout: float, spin: bool = True) -> None:
        self.pid, self.timeout, self.spin = pid, timeout, spin
        self.restart()

    def restart(self) -> None:
        """A new step began (the child reported progress)."""
        self.begun, self.cpu0 = time.monotonic(), cpu_seconds(self.pid)
        self.samples: deque[tuple[float, float | None]] = deque([(self.begun, self.cpu0)])

    def check(self) -> str | None:
        """``"blocked"`` or ``"spinning"`` once the current step is hung, else ``None``."""
        wall, cpu = time.monotonic(), cpu_seconds(self.pid)
        self.samples.append((wall, cpu))
        while len(self.samples) > 1 and self.samples[1][0] <= wall - self.timeout:
            self.samples.popleft()  # samples[0]: the last one at or before the window's start
        base = self.samples[0][1]
        used = None if cpu is None or self.cpu0 is None else cpu - self.cpu0
        idle = None if cpu is None or base is None else cpu - base
        return verdict(wall - self.begun, idle, used, self.timeout, self.spin)

    def poll_interval(self) -> float:
        """How long to wait for the child's output before checking again (seconds)."""
        return min(0.5, max(0.05, self.timeout / 20))
