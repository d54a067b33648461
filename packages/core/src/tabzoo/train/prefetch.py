"""Prior batches for the training loop: drawn in-process, or prefetched by background processes.

Both sources hand the loop the SAME batches: draw ``u`` of step ``s`` is always
``prior.sample(draw_size, seed=batch_seed(seed, s, u), device=..., [step=s])`` (:func:`draw_batch`),
whichever process calls it, so a run with ``workers=N`` computes exactly what ``workers=0`` does
(on a CPU device), and ``--resume`` stays exact.

:class:`PrefetchSource` starts ``N`` worker processes (``spawn``, so it is safe beside torch's
thread pools and CUDA, and works on every OS). Worker ``k`` draws the batches ``k, k + N, ...`` of
the run's sequence ahead of the training step, up to ``depth`` finished batches each, on the CPU
with ONE torch thread and one BLAS/OpenMP thread (``OMP_NUM_THREADS`` etc. are set to 1 in its
environment), so they do not fight the training step for cores. A batch travels as one pickle.

Failure handling:

- an exception in a worker is re-raised in the main process as the SAME exception (type and
  message), its ``__cause__`` holding the worker's traceback and a note saying which step/draw
  failed; an exception that cannot be pickled arrives as :class:`PriorWorkerError` with its text;
- a worker that dies without a word (killed, out of memory, a crash in C code) raises
  :class:`PriorWorkerError` with its exit code instead of hanging the run;
- :meth:`PrefetchSource.close` (called from a ``finally``: an error, ``KeyboardInterrupt``, the
  end of the run) stops, joins and, if needed, terminates every worker, so none is left behind as
  a zombie or an orphan; workers ignore ``SIGINT`` (Ctrl-C is the main process's to handle) and
  exit by themselves when their parent disappears.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import pickle
import queue
import signal
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from tabzoo.train.config import batch_seed

logger = logging.getLogger(__name__)

__all__ = ["InProcessSource", "PrefetchSource", "PriorWorkerError", "draw_batch", "prior_is_picklable"]

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
_POLL_S = 0.5
_env_lock = threading.Lock()


class PriorWorkerError(RuntimeError):
    """A prefetch worker failed in a way that cannot be re-raised as its own exception."""


class _RemoteTraceback(Exception):
    """Carries a worker's formatted traceback as the ``__cause__`` of the re-raised exception."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return f"\n\"\"\"\n{self.tb}\"\"\""


def draw_batch(prior: Any, draw_size: int, seed: int, step: int, draw: int, device: Any) -> Any:
    """Draw ``draw`` of optimizer step ``step``: a pure function of ``(seed, step, draw)``.

    A prior whose ``step_aware`` attribute is True (e.g. with a row curriculum) also gets ``step=``.
    The draw runs under a fork of torch's CPU RNG seeded with the batch seed, so a prior that uses
    the global RNG is deterministic too, and drawing in-process leaves the training step's RNG stream
    (dropout) exactly as drawing in a worker does.
    """
    extra = {"step": step} if getattr(prior, "step_aware", False) else {}
    s = batch_seed(seed, step, draw)
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(s)
        return prior.sample(draw_size, seed=s, device=device, **extra)


def prior_is_picklable(prior: Any) -> tuple[bool, str]:
    """``(True, "")`` when ``prior`` pickles (so a worker process can hold a copy), else ``(False, why)``."""
    try:
        pickle.dumps(prior, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - any pickling failure means "cannot prefetch"
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


class InProcessSource:
    """Draws each batch when the loop asks for it (``workers=0``)."""

    def __init__(self, prior: Any, *, draw_size: int, seed: int, device: torch.device) -> None:
        self.prior, self.draw_size, self.seed, self.device = prior, draw_size, seed, device

    def get(self, step: int, draw: int) -> Any:
        return draw_batch(self.prior, self.draw_size, self.seed, step, draw, self.device)

    def close(self) -> None:
        return None


class PrefetchSource:
    """Batches of steps ``start, start + 1, ... < stop`` (draws ``draws`` of each), drawn ahead by worker processes.

    The loop must ask for them in that order (``get(step, draw)``), as :func:`tabzoo.train.pretrain`
    does. Use as a context manager, or call :meth:`close`.

    :param prior: a picklable prior (each worker unpickles its own copy).
    :param workers: number of worker processes (>= 1).
    :param depth: finished batches each worker may hold ahead of the loop (memory: ``workers *
        depth`` batches).
    :param device: where :meth:`get` puts each batch (workers draw on the CPU).
    """

    def __init__(self, prior: Any, *, draw_size: int, seed: int, start: int, stop: int, draws: Sequence[int],
                 workers: int, depth: int = 2, device: torch.device | str = "cpu") -> None:
        if workers < 1 or depth < 1:
            raise ValueError(f"workers and depth must be >= 1, got {workers} and {depth}")
        self.prior_name = str(getattr(prior, "name", type(prior).__name__))
        self.draw_size, self.seed, self.first, self.stop = int(draw_size), int(seed), int(start), int(stop)
        self.draws = [int(u) for u in draws]
        self.n_workers, self.depth = int(workers), int(depth)
        self.device = torch.device(device)
        self.total = max(0, self.stop - self.first) * len(self.draws)
        self._next = 0
        self._prior_bytes = pickle.dumps(prior, protocol=pickle.HIGHEST_PROTOCOL)
        self._ctx = _context(prior)
        self._stop_event = self._ctx.Event()
        self._queues: list[Any] = []
        self.processes: list[Any] = []
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> PrefetchSource:
        n = min(self.n_workers, max(1, self.total))
        args = (self._prior_bytes, self.draw_size, self.seed, self.first, self.draws, self.total, n)
        with _single_threaded_env():
            for k in range(n):
                q = self._ctx.Queue(maxsize=self.depth)
                p = self._ctx.Process(target=_worker_main, args=(k, *args, q, self._stop_event),
                                      name=f"tabzoo-prefetch-{k}", daemon=True)
                p.start()
                self._queues.append(q)
                self.processes.append(p)
        logger.info("prefetching prior batches in %d worker process(es) (pids %s), %d ahead each",
                    n, [p.pid for p in self.processes], self.depth)
        return self

    def __enter__(self) -> PrefetchSource:
        return self.start() if not self.processes else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, timeout: float = 5.0) -> None:
        """Stop every worker and reap it (terminate, then kill, those that do not exit in ``timeout`` s)."""
        if self._closed:
            return
        self._closed = True
        self._stop_event.set()
        deadline = time.monotonic() + timeout
        while any(p.is_alive() for p in self.processes) and time.monotonic() < deadline:
            for q in self._queues:  # a worker blocked on a full queue or flushing a batch needs a reader
                with contextlib.suppress(Exception):
                    while True:
                        q.get_nowait()
            for p in self.processes:
                p.join(timeout=0.05)
        for p in self.processes:
            if p.is_alive():
                logger.warning("prefetch worker pid %s did not stop in %.0f s; terminating it", p.pid, timeout)
                p.terminate()
                p.join(timeout=2.0)
            if p.is_alive():
                p.kill()
            p.join()
        for q in self._queues:
            q.cancel_join_thread()
            q.close()

    # -- batches --------------------------------------------------------------------------------
    def get(self, step: int, draw: int) -> Any:
        """The batch of ``(step, draw)``; raises the worker's exception if drawing it failed."""
        if self._closed:
            raise RuntimeError("this PrefetchSource is closed")
        if not self.processes:
            self.start()
        i = self._next
        want = self._key(i) if i < self.total else None
        if want != (step, draw):
            raise RuntimeError(f"batches must be asked for in order: expected {want}, got {(step, draw)}")
        k = i % len(self.processes)
        msg = self._receive(k, step, draw)
        self._next += 1
        kind, index, payload, tb = msg
        if index != i:  # cannot happen with one ordered queue per worker; guard anyway
            raise PriorWorkerError(f"prefetch worker {k} sent batch {index}, expected {i}")
        if kind == "error":
            self._raise_remote(payload, tb, k, step, draw)
        batch = pickle.loads(payload)
        if self.device.type != "cpu" and hasattr(batch, "to"):
            batch = batch.to(self.device)
        return batch

    def _key(self, i: int) -> tuple[int, int]:
        return self.first + i // len(self.draws), self.draws[i % len(self.draws)]

    def _receive(self, k: int, step: int, draw: int) -> tuple[Any, ...]:
        q, p = self._queues[k], self.processes[k]
        while True:
            try:
                return q.get(timeout=_POLL_S)
            except queue.Empty:
                if p.is_alive():
                    continue
            try:  # it may have put its last message just before exiting
                return q.get(timeout=_POLL_S)
            except queue.Empty:
                raise PriorWorkerError(
                    f"prefetch worker {k} (pid {p.pid}) died with exit code {p.exitcode} before delivering step "
                    f"{step}, draw {draw} of prior {self.prior_name!r} (a negative code is the signal that "
                    "killed it, e.g. -9 = out of memory). Run with workers=0 (--workers 0) to draw batches "
                    "in the main process and see the failure there."
                ) from None

    def _raise_remote(self, payload: bytes | None, tb: str, k: int, step: int, draw: int) -> None:
        where = (f"raised in prefetch worker {k} (pid {self.processes[k].pid}) while drawing step {step}, "
                 f"draw {draw} of prior {self.prior_name!r}; the worker's traceback is above. Run with "
                 "workers=0 (--workers 0) to draw batches in the main process.")
        exc: BaseException | None = None
        if payload is not None:
            with contextlib.suppress(Exception):
                exc = pickle.loads(payload)
        if not isinstance(exc, BaseException):
            last = tb.strip().splitlines()[-1] if tb.strip() else "unknown error"
            raise PriorWorkerError(f"{last} -- {where}") from _RemoteTraceback(tb)
        exc.add_note(where)
        raise exc from _RemoteTraceback(tb)


def _context(prior: Any) -> Any:
    """``forkserver`` where the OS has it, else ``spawn``; never plain ``fork``, since forking a
    process that runs torch's thread pools (or CUDA) can deadlock the child.

    The fork server is a clean process, started once per Python process, that imports this module
    (torch) and the first prefetched prior's module; each worker is then forked from it, ready in a
    fraction of a second instead of re-importing torch.
    """
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    module = getattr(type(prior), "__module__", None)
    preload = [__name__] + ([module] if module and module not in ("__main__", "__mp_main__") else [])
    ctx.set_forkserver_preload(preload)  # only takes effect when the server starts
    return ctx


@contextlib.contextmanager
def _single_threaded_env() -> Iterator[None]:
    """Set the BLAS/OpenMP thread variables to 1 while child processes are spawned (they copy the env)."""
    with _env_lock:
        saved = {v: os.environ.get(v) for v in _THREAD_VARS}
        os.environ.update({v: "1" for v in _THREAD_VARS})
        try:
            yield
        finally:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old


def _worker_main(k: int, prior_bytes: bytes, draw_size: int, seed: int, start: int, draws: list[int], total: int,
                 n: int, out: Any, stop: Any) -> None:
    """Worker ``k`` of ``n``: draw batches ``k, k + n, ...`` and put them on ``out`` in order."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled by the main process, which stops us
    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)

    owner = mp.parent_process()  # the training process (under forkserver, os.getppid() is the server)

    def orphaned() -> bool:
        return stop.is_set() or (owner is not None and not owner.is_alive())

    def put(msg: tuple[Any, ...]) -> bool:
        while True:
            try:
                out.put(msg, timeout=_POLL_S)
                return True
            except queue.Full:
                if orphaned():
                    return False

    try:
        prior = pickle.loads(prior_bytes)
    except BaseException as exc:  # noqa: BLE001 - reported to the main process
        put(("error", k, _dump(exc), traceback.format_exc()))
        return
    for i in range(k, total, n):
        if orphaned():
            break
        step, draw = start + i // len(draws), draws[i % len(draws)]
        try:
            payload = pickle.dumps(draw_batch(prior, draw_size, seed, step, draw, "cpu"),
                                   protocol=pickle.HIGHEST_PROTOCOL)
            msg: tuple[Any, ...] = ("ok", i, payload, "")
        except BaseException as exc:  # noqa: BLE001 - reported to the main process
            msg = ("error", i, _dump(exc), traceback.format_exc())
        if not put(msg) or msg[0] == "error":
            break
    if orphaned():
        out.cancel_join_thread()  # nobody will read what is left in the pipe: exit without flushing it


def _dump(exc: BaseException) -> bytes | None:
    try:
        data = pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(data)  # some exceptions pickle but cannot be rebuilt
        return data
    except Exception:  # noqa: BLE001
        return None
