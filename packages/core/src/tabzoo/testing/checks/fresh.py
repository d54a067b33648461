"""The fresh Python process of the determinism check.

One worker process (``python -m tabzoo.testing.checks.fresh``) is started per kit run with a
``PYTHONHASHSEED`` other than the parent's and serves every case (torch is imported once): it
reads one JSON job per line, rebuilds the case (by :attr:`ConformanceCase.factory`, else the
installed plugin case of that name and plugin, so a plugin whose case factory builds new closures
at each call needs no ``factory=``), computes the determinism probe and writes it to a safetensors file.
A worker started under another environment (``sys.path``, plugin selection) is replaced.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from tabzoo.testing.case import ConformanceCase

TIMEOUT = 300.0
"""Seconds one job may go WITHOUT using CPU (the worker and its children) before it counts as
hung; where CPU time cannot be read (no ``/proc``), seconds of wall time. A wall-clock limit alone
failed determinism falsely on an overloaded machine (multitab and npt: the worker, starting Python,
importing torch and discovering plugins, got too little CPU in 300 s at load 20)."""
MAX_SECONDS = 3600.0
"""Wall seconds one job may take at most, whatever its CPU progress."""
POLL = 5.0


def _seeded_probe(case: ConformanceCase, s: int, data: int) -> torch.Tensor:
    """The probe output of call 1 of a model built from ``s``, flattened (parent and child both)."""
    from tabzoo.testing.checks._common import _as_tensor
    from tabzoo.testing.checks.misc import _probe

    torch.manual_seed(10_000 + s)
    model = case.build(s)
    torch.manual_seed(20_007)
    return _as_tensor(_probe(case, data)(model)).detach().double().cpu()


def _registered(name: str, plugin: str | None = None) -> list[tuple[str, ConformanceCase]]:
    """``(plugin, case)`` of the installed plugin cases called ``name`` (of ``plugin`` when given),
    read from the registry (not the runner, which imports the checks)."""
    from tabzoo.plugins import get_registry

    out = []
    for entry in get_registry().items["conformance_cases"].values():
        obj = entry.obj
        case = obj if isinstance(obj, ConformanceCase) else obj() if callable(obj) else None
        owner = getattr(getattr(entry, "record", None), "name", "")
        if isinstance(case, ConformanceCase) and case.name == name and plugin in (None, owner):
            out.append((owner, case))
    return out


def _same(a: ConformanceCase, b: ConformanceCase) -> bool:
    """The same case, also when built by two calls of one factory (new closures each time): the
    same ``make_model`` function (module and qualified name), config, capabilities and protocol."""
    if a.make_model is b.make_model:
        return True

    def where(f: Any) -> tuple[str, str] | None:
        return (getattr(f, "__module__", ""), getattr(f, "__qualname__", "")) if f is not None else None

    return (where(a.make_model) == where(b.make_model) and dict(a.config) == dict(b.config)
            and a.capabilities == b.capabilities and a.protocol == b.protocol)


def locate(case: ConformanceCase) -> dict[str, Any] | None:
    """How a fresh process finds ``case``: ``{"name", "factory", "factory_args"}`` or
    ``{"name", "plugin"}`` (the registered case of that name and plugin); ``None`` when it cannot."""
    if case.factory:
        return {"name": case.name, "factory": case.factory, "factory_args": dict(case.factory_args)}
    try:
        hits = [(plugin, c) for plugin, c in _registered(case.name) if _same(c, case)]
    except Exception:  # noqa: BLE001 - not installed: no locator
        return None
    if len(hits) == 1:
        return {"name": case.name, "plugin": hits[0][0]}
    return None


class _Worker:
    """The child process and the environment it was started with."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.stderr = tempfile.TemporaryFile(mode="w+")  # a file, so that warnings never fill a pipe
        self.proc = subprocess.Popen([sys.executable, "-m", "tabzoo.testing.checks.fresh"], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        self.pending = 0  # answers of warm-up jobs not read yet

    def send(self, job: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

    def ask(self, job: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdout is not None
        self.send(job)
        while self.pending:  # a warm-up's answer comes first; its outcome does not matter
            ready, waited = self._wait()
            if not ready or not self.proc.stdout.readline():
                break
            self.pending -= 1
        ready, waited = self._wait()
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            self.stderr.seek(0)
            err = self.stderr.read()[-600:]
            return {"error": f"the fresh process gave no answer ({waited}; exit {self.proc.returncode}) "
                             f"{err.strip()}"}
        return dict(json.loads(line))

    def _wait(self) -> tuple[bool, str]:
        """Wait for an answer while the worker makes CPU progress (:data:`TIMEOUT`)."""
        assert self.proc.stdout is not None
        start = time.monotonic()
        last_cpu, last_progress = tree_cpu_seconds(self.proc.pid), start
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], POLL)
            now = time.monotonic()
            if ready:
                return True, ""
            if self.proc.poll() is not None:
                return False, "the worker exited"
            cpu = tree_cpu_seconds(self.proc.pid)
            if cpu is not None and last_cpu is not None and cpu > last_cpu + 0.05:
                last_cpu, last_progress = cpu, now
            idle = now - last_progress
            if idle > TIMEOUT or now - start > MAX_SECONDS:
                what = "CPU" if cpu is not None else "wall-clock"
                return False, f"no {what} progress for {idle:.0f} s, {now - start:.0f} s in all"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds used by process ``pid`` and its live descendants (Linux ``/proc``), ``None``
    where they cannot be read."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        stats: dict[int, tuple[int, float]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # the process ended meanwhile
            stats[int(entry.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / ticks)
    except (OSError, ValueError, IndexError):
        return None
    if pid not in stats:
        return None
    tree, total, grew = {pid}, 0.0, True
    while grew:
        more = {p for p, (ppid, _) in stats.items() if ppid in tree and p not in tree}
        tree |= more
        grew = bool(more)
    for p in tree:
        total += stats[p][1]
    return total


_WORKER: list[_Worker] = []


def _environment() -> tuple[dict[str, str], str, str]:
    parent = os.environ.get("PYTHONHASHSEED", "random")
    hashseed = str(int(parent) + 1) if parent.isdigit() else "0"
    env = {**os.environ, "PYTHONHASHSEED": hashseed, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return env, hashseed, parent


def _worker(env: dict[str, str]) -> _Worker:
    if _WORKER and (_WORKER[0].env != env or _WORKER[0].proc.poll() is not None):
        _WORKER.pop().close()
    if not _WORKER:
        _WORKER.append(_Worker(env))
    return _WORKER[0]


@atexit.register
def _stop() -> None:
    while _WORKER:
        _WORKER.pop().close()


def prestart() -> None:
    """Start the worker now and let it import torch, the kit and the installed plugins while the
    parent runs other checks (``tabzoo conformance`` calls this before its first check when a
    case runs determinism): the first determinism check then does not wait for a cold start."""
    try:
        worker = _worker(_environment()[0])
        worker.send({"warm": True})
        worker.pending += 1
    except OSError:  # no process could start: the determinism check reports it
        pass


def fresh_process_probe(case: ConformanceCase, s: int, data: int) -> tuple[torch.Tensor | None, str]:
    """The determinism probe computed by the worker process: ``(tensor, how)``, or ``(None, why not)``."""
    where = locate(case)
    if where is None:
        return None, (f"the kit cannot rebuild case {case.name!r} in a fresh process: register it through the "
                      "tabzoo_conformance_cases hook, or set ConformanceCase(factory='module:function', "
                      "factory_args={...}) to a function that returns it.")
    env, hashseed, parent = _environment()
    with tempfile.TemporaryDirectory(prefix="tabzoo-determinism-") as tmp:
        out = Path(tmp) / "probe.safetensors"
        answer = _worker(env).ask({**where, "seed": s, "data": data, "out": str(out), "device": case.device,
                                   "threads": torch.get_num_threads()})
        if "error" in answer or not out.exists():
            return None, f"the fresh process failed: {answer.get('error', 'no output written')}"
        from safetensors.torch import load_file

        return load_file(str(out))["probe"], f"PYTHONHASHSEED={hashseed}, parent {parent}"


def _job(job: dict[str, Any]) -> None:
    from dataclasses import replace
    from importlib import import_module

    from safetensors.torch import save_file

    if job.get("warm"):  # prestart(): what every job needs, imported ahead
        import tabzoo.testing.checks.misc  # noqa: F401

        _registered("")
        return
    if job.get("factory"):
        module, _, attr = job["factory"].partition(":")
        made = getattr(import_module(module), attr)(**job.get("factory_args", {}))
        cases = made if isinstance(made, (list, tuple)) else [made]
    else:
        cases = [c for _, c in _registered(job["name"], job.get("plugin"))]
    (case,) = [c for c in cases if c.name == job["name"]]
    case = replace(case, device=job["device"])
    # the parent's intra-op thread count: it decides how CPU kernels split their sums, so another
    # count changes float rounding, which is not the process state this check looks for
    torch.set_num_threads(int(job.get("threads", torch.get_num_threads())))
    save_file({"probe": _seeded_probe(case, int(job["seed"]), int(job["data"])).contiguous()}, job["out"])


def _serve() -> None:
    """The worker's loop: one JSON job per line on stdin, one JSON answer per line on stdout."""
    for line in sys.stdin:
        try:
            _job(json.loads(line))
            answer: dict[str, Any] = {"ok": True}
        except Exception as exc:  # noqa: BLE001 - reported to the parent as the finding
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
