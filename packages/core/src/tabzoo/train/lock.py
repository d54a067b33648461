"""One writer per run folder: a lock file holding the writer's pid, host and start time.

``run_lock(out)`` creates ``out/.tabzoo.lock`` and holds an advisory ``flock`` on it while the run
writes. A second writer is refused with the holder's pid, host and start time. A lock whose
holder is gone (the kernel released its ``flock``, or, where ``flock`` is unavailable, its pid is
dead on this host) is stale: it is reported in the log and taken over.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tabzoo.errors import TabzooInputError

logger = logging.getLogger(__name__)

__all__ = ["LOCK", "RunLockedError", "read_lock", "run_lock"]

LOCK = ".tabzoo.lock"


class RunLockedError(TabzooInputError):
    """Another process is writing this run folder; the message names it."""


def read_lock(out: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The holder recorded in ``out``'s lock file (``pid``, ``host``, ``started``), or ``None``."""
    try:
        data = json.loads((Path(out) / LOCK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists, owned by someone else
    return True


def _describe(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "an unknown process"
    started = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if isinstance(started, (int, float)) else "?"
    return f"pid {holder.get('pid')} on host {holder.get('host')!r} (started {when})"


def _flock(fd: int) -> bool | None:
    """Try to take an exclusive flock: True taken, False held by another, None unsupported."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


@contextlib.contextmanager
def run_lock(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the lock of run folder ``out`` (created if missing) for the body of the ``with``.

    :raises RunLockedError: when a live process holds it, naming its pid, host and start time.
    """
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise TabzooInputError(f"cannot create the run folder {folder} ({exc.strerror or exc}); check the path.") from exc
    try:
        holder = read_lock(folder)
        host = platform.node()
        taken = _flock(fd)
        if taken is False or (taken is None and holder and _held_elsewhere(holder, host)):
            raise RunLockedError(
                f"{folder} is being written by {_describe(holder)}; wait for that run to end or use another "
                f"--out folder. If it is gone, delete {folder / LOCK}."
            )
        if holder and holder.get("pid") != os.getpid():
            logger.warning("%s: took over the stale lock of %s, which has ended.", folder, _describe(holder))
        me = {"pid": os.getpid(), "host": host, "started": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode("utf-8"), 0)
        os.fsync(fd)
        try:
            yield folder / LOCK
        finally:
            with contextlib.suppress(OSError):
                (folder / LOCK).unlink()
    finally:
        os.close(fd)  # releases the flock


def _held_elsewhere(holder: dict[str, Any], host: str) -> bool:
    """Without flock: a holder on another host, or a live pid on this one, still holds the lock."""
    if holder.get("host") != host:
        return True
    pid = holder.get("pid")
    return isinstance(pid, int) and pid != os.getpid() and _pid_alive(pid)
