"""Prior batches for the training loop: drawn in-process, or prefetched by background processes.

Both sources hand the loop the SAME batches: draw ``u`` of step ``s`` is always
``prior.sample(draw_size, seed=batch_seed(seed, s, u), device=..., [step=s])`` (:func:`draw_batch`),
whichever process calls it, so a run with ``workers=N`` computes exactly what ``workers=0`` does
(on a CPU device), and ``--resume`` stays exact.

:class:`PrefetchSource` starts ``N`` worker processes (forked from a clean fork server, or
spawned: never forked from the training process, so it is safe beside torch's thread pools and
CUDA). Workers claim the run's batches in order from a shared counter and draw them ahead of the
training step (up to ``N * depth`` ahead), on the CPU, with ONE torch thread and one BLAS/OpenMP
thread each (``OMP_NUM_THREADS`` etc. are set to 1 in their environment) and at a lower priority
(``nice`` +:data:`WORKER_NICENESS`), so they use idle cores and leave the training step its own.
When the next batch is not claimed yet (the workers lag on a busy machine, or are starting), the
training process draws it itself, so prefetching never costs more than the hand-over. A batch
travels as one pickle.

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

from tabzoo.errors import TabzooInputError
from tabzoo.train.config import AUTO_WORKERS_MIN_STEPS, PretrainConfig, batch_seed

logger = logging.getLogger(__name__)

__all__ = ["InProcessSource", "PrefetchSource", "PriorWorkerError", "draw_batch", "open_batch_source", "resolve_workers",
           "prior_is_picklable"]

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
_POLL_S = 0.5
_WAIT_S = 0.005  # a worker that is far enough ahead checks again after this long
#: workers run this much nicer than the training process (they use idle cores first)
WORKER_NICENESS = 5
#: the training process draws a batch itself when no worker has claimed it yet (tests turn it off
#: to force the worker path)
STEAL = True
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


def resolve_workers(prior: Any, prior_name: str, cfg: PretrainConfig, device: torch.device, start: int) -> int:
    """The number of prefetch workers for a run resumed at ``start`` (see ``PretrainConfig.workers``)."""
    want, left = cfg.workers, cfg.steps - start
    if left <= 0:
        return 0
    if want != "auto":
        n = int(want)
        if n:
            ok, why = prior_is_picklable(prior)
            if not ok:
                raise TabzooInputError(
                    f"workers={n} needs a picklable prior (each worker process gets a copy), but prior "
                    f"{prior_name!r} does not pickle ({why}); define its class at module level and keep no "
                    "open files, locks or lambdas in it, or pass workers=0 (--workers 0)."
                )
            if device.type != "cpu":
                logger.info("workers=%d: batches are drawn on the CPU by the workers, then moved to %s", n, device)
        return n
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if device.type != "cpu" or cores < 2 or left < AUTO_WORKERS_MIN_STEPS:
        return 0
    ok, why = prior_is_picklable(prior)
    if not ok:
        logger.info("workers='auto': prior %r does not pickle (%s); drawing batches in the training process",
                    prior_name, why)
        return 0
    return 1


def open_batch_source(prior: Any, prior_name: str, cfg: PretrainConfig, device: torch.device, *, start: int,
                      draws: Sequence[int], draw_size: int) -> InProcessSource | PrefetchSource:
    """The batches of steps ``start..cfg.steps`` (draws ``draws`` of each): prefetched by
    :func:`resolve_workers` workers, or drawn in-process. Close it when done."""
    n = resolve_workers(prior, prior_name, cfg, device, start)
    if n == 0:
        return InProcessSource(prior, draw_size=draw_size, seed=cfg.seed, device=device)
    return PrefetchSource(prior, draw_size=draw_size, seed=cfg.seed, start=start, stop=cfg.steps, draws=draws,
                          workers=n, depth=cfg.prefetch_depth, device=device, steal=STEAL).start()


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

    The batches form one sequence, ``i = (step - start) * len(draws) + draw index``. A worker claims
    the next unclaimed ``i`` (a shared counter), at most ``workers * depth`` ahead of the loop, draws
    it and sends it back; the loop takes them in order. Workers run at a lower priority (``nice``
    +:data:`WORKER_NICENESS`) so they use idle cores and never slow the training step down on a busy
    machine; when the batch the loop needs next is not claimed yet (the workers lag, or are still
    starting), the training process claims and draws it itself (``stolen`` counts them), so a run
    is never slower than drawing in-process by more than the hand-over. Which process draws a batch
    never changes it.

    The loop must ask for them in that order (``get(step, draw)``), as :func:`tabzoo.train.pretrain`
    does. Use as a context manager, or call :meth:`close`.

    :param prior: a picklable prior (each worker unpickles its own copy).
    :param workers: number of worker processes (>= 1).
    :param depth: batches each worker may draw ahead of the loop (memory: ``workers * depth``).
    :param device: where :meth:`get` puts each batch (all are drawn on the CPU).
    :param steal: let the training process draw a batch no worker has claimed yet.
    """

    def __init__(self, prior: Any, *, draw_size: int, seed: int, start: int, stop: int, draws: Sequence[int],
                 workers: int, depth: int = 2, device: torch.device | str = "cpu", steal: bool = True) -> None:
        if workers < 1 or depth < 1:
            raise ValueError(f"workers and depth must be >= 1, got {workers} and {depth}")
        self.prior = prior
        self.prior_name = str(getattr(prior, "name", type(prior).__name__))
        self.draw_size, self.seed, self.first, self.stop = int(draw_size), int(seed), int(start), int(stop)
        self.draws = [int(u) for u in draws]
        self.n_workers, self.depth, self.steal = int(workers), int(depth), bool(steal)
        self.device = torch.device(device)
        self.total = max(0, self.stop - self.first) * len(self.draws)
        self.stolen = 0
        self._next = 0
        self._buffer: dict[int, tuple[Any, ...]] = {}
        self._prior_bytes = pickle.dumps(prior, protocol=pickle.HIGHEST_PROTOCOL)
        self._ctx = _context(prior)
        self._stop_event = self._ctx.Event()
        self._claim = self._ctx.Value("q", 0)  # the next unclaimed batch index (with its lock)
        self._consumed = self._ctx.Value("q", 0, lock=False)  # batches handed to the loop
        self._results: Any = None
        self.processes: list[Any] = []
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> PrefetchSource:
        n = min(self.n_workers, max(1, self.total))
        self._results = self._ctx.Queue()
        args = (self._prior_bytes, self.draw_size, self.seed, self.first, self.draws, self.total, n * self.depth,
                self._claim, self._consumed, self._results, self._stop_event)
        with _single_threaded_env():
            for k in range(n):
                p = self._ctx.Process(target=_worker_main, args=(k, *args), name=f"tabzoo-prefetch-{k}", daemon=True)
                p.start()
                self.processes.append(p)
        logger.info("prefetching prior batches in %d worker process(es) (pids %s), up to %d ahead",
                    n, [p.pid for p in self.processes], n * self.depth)
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
            self._drain()  # a worker flushing a batch into the pipe needs a reader
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
        if self._results is not None:
            self._results.cancel_join_thread()
            self._results.close()
        self._buffer.clear()
        if self.stolen:
            logger.info("the training process drew %d of %d batches itself (the workers lagged)", self.stolen,
                        self._next)

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
        msg = self._buffer.pop(i, None)
        if msg is None:
            self._drain()
            msg = self._buffer.pop(i, None)
        if msg is None and self.steal and self._claim_for_loop(i):
            self.stolen += 1
            self._advance()
            return self._to_device(draw_batch(self.prior, self.draw_size, self.seed, step, draw, "cpu"))
        if msg is None:
            msg = self._wait_for(i, step, draw)
        self._advance()
        kind, _, payload, tb, k = msg
        if kind == "error":
            self._raise_remote(payload, tb, k, step, draw)
        return self._to_device(pickle.loads(payload))

    def _key(self, i: int) -> tuple[int, int]:
        return self.first + i // len(self.draws), self.draws[i % len(self.draws)]

    def _advance(self) -> None:
        self._next += 1
        self._consumed.value = self._next

    def _to_device(self, batch: Any) -> Any:
        return batch.to(self.device) if self.device.type != "cpu" and hasattr(batch, "to") else batch

    def _claim_for_loop(self, i: int) -> bool:
        """Claim batch ``i`` for the training process if no worker has (every batch before it is done)."""
        with self._claim.get_lock():
            if self._claim.value <= i:
                self._claim.value = i + 1
                return True
        return False

    def _drain(self) -> None:
        """Move every message already in the pipe into the reorder buffer."""
        if self._results is None:
            return
        while True:
            try:
                msg = self._results.get_nowait()
            except (queue.Empty, OSError, ValueError):
                return
            self._buffer[int(msg[1])] = msg

    def _wait_for(self, i: int, step: int, draw: int) -> tuple[Any, ...]:
        """Block until a worker delivers batch ``i`` (claimed by it); fail if a worker died."""
        while True:
            try:
                msg = self._results.get(timeout=_POLL_S)
                self._buffer[int(msg[1])] = msg
            except queue.Empty:
                dead = [(k, p) for k, p in enumerate(self.processes) if p.exitcode not in (None, 0)]
                if dead or not any(p.is_alive() for p in self.processes):
                    self._drain()
                    if i in self._buffer:
                        return self._buffer.pop(i)
                    k, p = dead[0] if dead else (0, self.processes[0])
                    raise PriorWorkerError(
                        f"prefetch worker {k} (pid {p.pid}) died with exit code {p.exitcode} while the training "
                        f"process waited for step {step}, draw {draw} of prior {self.prior_name!r} (a negative "
                        "code is the signal that killed it, e.g. -9 = out of memory). Run with workers=0 "
                        "(--workers 0) to draw batches in the main process and see the failure there."
                    ) from None
            if i in self._buffer:
                return self._buffer.pop(i)

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
                 ahead: int, claim: Any, consumed: Any, out: Any, stop: Any) -> None:
    """Worker ``k``: claim the next batch index (at most ``ahead`` past the loop), draw it, send it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled by the main process, which stops us
    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)  # idle cores first: never slow the training step down
    owner = mp.parent_process()  # the training process (under forkserver, os.getppid() is the server)

    def orphaned() -> bool:
        return stop.is_set() or (owner is not None and not owner.is_alive())

    try:
        prior = pickle.loads(prior_bytes)
    except BaseException as exc:  # noqa: BLE001 - reported to the main process
        with claim.get_lock():
            i = claim.value
            claim.value = i + 1
        out.put(("error", i, _dump(exc), traceback.format_exc(), k))
        return
    while not orphaned():
        with claim.get_lock():
            i = claim.value
            if i >= total:
                break
            if i - consumed.value >= ahead:
                i = -1  # far enough ahead: wait for the loop
            else:
                claim.value = i + 1
        if i < 0:
            time.sleep(_WAIT_S)
            continue
        step, draw = start + i // len(draws), draws[i % len(draws)]
        try:
            payload = pickle.dumps(draw_batch(prior, draw_size, seed, step, draw, "cpu"),
                                   protocol=pickle.HIGHEST_PROTOCOL)
            msg: tuple[Any, ...] = ("ok", i, payload, "", k)
        except BaseException as exc:  # noqa: BLE001 - reported to the main process
            msg = ("error", i, _dump(exc), traceback.format_exc(), k)
        out.put(msg)
        if msg[0] == "error":
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
