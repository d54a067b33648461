"""The op registry: backends, dispatch and forcing.

An *op* (``"masked_attention"``, ``"linear_attention"``, ``"selective_scan"``) is a public
function in :mod:`tabzoo.kernels`. Each op has several *backends*; one is the ``reference``
(slow, obvious, always available). A call dispatches to the highest-priority backend that
is available and supports the inputs.

Forcing. ``with use("name"):`` (a :class:`contextvars.ContextVar`, so it is thread- and
task-local) or the environment variable ``TABZOO_KERNELS=name`` forces a backend by name:

* ops that have a backend called ``name`` use it; if it is unavailable or does not support
  the inputs, :class:`~tabzoo.errors.KernelNotSupportedError` is raised with its reasons
  (forcing never falls back silently);
* ops without a backend of that name dispatch normally (so ``use("sdpa")`` forces SDPA
  for attention and leaves the scan alone);
* a name that no op knows is an error (it is almost certainly a typo).

``use("reference")`` therefore forces the reference everywhere. ``use(None)`` restores
automatic dispatch inside its block, ignoring ``TABZOO_KERNELS``. A ``use()`` block takes
precedence over the environment variable, which is read at every dispatch.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from tabzoo.errors import KernelNotSupportedError, PluginLoadError

__all__ = [
    "Backend",
    "Cost",
    "ENV_VAR",
    "assume_device",
    "candidates",
    "device_type",
    "dispatch",
    "forced_backend",
    "list_backends",
    "list_ops",
    "register_backend",
    "select_backend",
    "unregister_backend",
    "use",
]

logger = logging.getLogger("tabzoo.kernels")

ENV_VAR = "TABZOO_KERNELS"
_UNSET: Any = object()
_FORCED: contextvars.ContextVar[Any] = contextvars.ContextVar("tabzoo_kernels_forced", default=_UNSET)
_ASSUMED: contextvars.ContextVar[tuple[str, tuple[int, int] | None] | None] = contextvars.ContextVar(
    "tabzoo_kernels_assumed_device", default=None)

ALL_FLOAT_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


@dataclass(frozen=True)
class Cost:
    """Analytic cost of one call.

    :param flops: floating-point operations (a multiply-add counts 2).
    :param bytes: bytes moved to and from memory, at least once each (a lower bound).
    """

    flops: float
    bytes: float


def _always() -> bool:
    return True


def _no_reasons(inputs: Mapping[str, Any]) -> list[str]:
    return []


def _no_cost(inputs: Mapping[str, Any]) -> Cost:
    raise NotImplementedError("this backend declares no cost model")


@dataclass(frozen=True)
class Backend:
    """One implementation of one op.

    :param name: backend name, unique per op (``"reference"``, ``"sdpa"``, ...).
    :param op: the op it implements.
    :param fn: the implementation; called with the op's arguments by keyword.
    :param priority: larger wins; the reference uses 0.
    :param devices: device types it runs on (``"cpu"``, ``"cuda"``, ...).
    :param dtypes: floating dtypes accepted for every floating tensor input.
    :param min_capability: minimum CUDA compute capability ``(major, minor)``, or None.
    :param is_available: whether it can run in this process at all (imports, hardware).
    :param not_supported_reasons: ``inputs -> list[str]``; empty means supported. ``inputs`` is
        the op's full keyword dict (defaults filled in).
    :param cost: ``inputs -> Cost``, an analytic model of the work this backend does.
    :param origin: who registered it (module or distribution); used in error messages.
    """

    name: str
    op: str
    fn: Callable[..., Any]
    priority: int = 0
    devices: tuple[str, ...] = ("cpu", "cuda")
    dtypes: tuple[torch.dtype, ...] = ALL_FLOAT_DTYPES
    min_capability: tuple[int, int] | None = None
    is_available: Callable[[], bool] = _always
    not_supported_reasons: Callable[[Mapping[str, Any]], list[str]] = _no_reasons
    cost: Callable[[Mapping[str, Any]], Cost] = _no_cost
    origin: str = field(default="")

    def describe(self) -> str:
        """``op/name`` plus where it came from."""
        where = self.origin or getattr(self.fn, "__module__", "?")
        return f"{self.op}/{self.name} (priority {self.priority}, from {where})"

    def reasons(self, inputs: Mapping[str, Any]) -> list[str]:
        """Every reason this backend cannot run ``inputs``; empty means it can."""
        try:
            available = bool(self.is_available())
        except Exception as exc:  # an availability probe must never break dispatch
            return [f"is_available() raised {type(exc).__name__}: {exc}"]
        if not available:
            return ["not available in this process (missing library or hardware)"]
        found: list[str] = []
        tensors = [v for v in inputs.values() if isinstance(v, torch.Tensor)]
        device_types = sorted({device_type(t) for t in tensors})
        if len(device_types) > 1:
            found.append(f"inputs are on several device types {device_types}; move them to one")
        for dev in device_types:
            if dev not in self.devices:
                found.append(f"device {dev!r} not in {list(self.devices)}")
        bad = sorted({str(t.dtype) for t in tensors if t.is_floating_point() and t.dtype not in self.dtypes})
        if bad:
            found.append(f"dtype(s) {bad} not in {[str(d) for d in self.dtypes]}")
        assumed = _ASSUMED.get()
        if self.min_capability is not None and device_types == ["cuda"] and (assumed is None or assumed[1] is not None):
            cap = assumed[1] if assumed is not None and assumed[1] is not None else \
                torch.cuda.get_device_capability(tensors[0].device)
            if tuple(cap) < tuple(self.min_capability):
                found.append(f"GPU capability {cap} < required {self.min_capability}")
        if not found:
            found.extend(self.not_supported_reasons(inputs))
        return found


_BACKENDS: dict[str, dict[str, Backend]] = {}
_DEFAULTS: dict[str, dict[str, Any]] = {}


def define_op(op: str, defaults: Mapping[str, Any]) -> None:
    """Declare an op and the default values of its optional arguments (internal)."""
    _BACKENDS.setdefault(op, {})
    _DEFAULTS[op] = dict(defaults)


def register_backend(backend: Backend) -> Backend:
    """Add ``backend`` to the registry (plugins call this through their hook).

    :raises PluginLoadError: when ``(backend.op, backend.name)`` is already registered; the
        message names both registrations.
    :returns: ``backend``, so it can be used as an expression.
    """
    if not isinstance(backend, Backend):
        raise TypeError(f"register_backend expects a tabzoo.kernels.Backend, got {type(backend).__name__}")
    existing = _BACKENDS.setdefault(backend.op, {}).get(backend.name)
    if existing is not None:
        raise PluginLoadError(
            f"kernel backend {backend.op}/{backend.name} is registered twice: first by "
            f"{existing.describe()}, again by {backend.describe()}. Rename one of them "
            f"(backend names must be unique per op) or uninstall one of the plugins."
        )
    _BACKENDS[backend.op][backend.name] = backend
    logger.debug("registered kernel backend %s", backend.describe())
    return backend


def unregister_backend(op: str, name: str) -> Backend:
    """Remove and return a registered backend (for tests and plugin unloading).

    :raises KeyError: when it is not registered.
    """
    try:
        return _BACKENDS[op].pop(name)
    except KeyError:
        raise KeyError(f"no kernel backend {op}/{name}; registered: {_names(op)}") from None


def list_ops() -> list[str]:
    """Names of every op with at least one registration or definition."""
    return sorted(_BACKENDS)


def list_backends(op: str | None = None) -> list[Backend]:
    """Registered backends, of one op or of all, highest priority first (then by name)."""
    ops = [op] if op is not None else sorted(_BACKENDS)
    out: list[Backend] = []
    for o in ops:
        out.extend(sorted(_BACKENDS.get(o, {}).values(), key=lambda b: (-b.priority, b.name)))
    return out


def _names(op: str) -> list[str]:
    return [b.name for b in list_backends(op)]


def _all_names() -> set[str]:
    return {name for table in _BACKENDS.values() for name in table}


def device_type(t: torch.Tensor) -> str:
    """The device type of ``t`` as dispatch sees it (:func:`assume_device` may override it)."""
    assumed = _ASSUMED.get()
    return assumed[0] if assumed is not None else t.device.type


@contextlib.contextmanager
def assume_device(device: str, capability: tuple[int, int] | None = None) -> Iterator[None]:
    """Inside the block, backend selection treats every input as living on ``device`` (with CUDA
    ``capability``): ``select_backend`` and ``candidates`` then answer "what would run there?"
    without that hardware (e.g. ``assume_device("cuda", (9, 0))`` for an H100). Calling an op in
    the block still runs on the real tensors; it is meant for planning and tests.
    """
    token = _ASSUMED.set((str(device), tuple(capability) if capability is not None else None))  # type: ignore[arg-type]
    try:
        yield
    finally:
        _ASSUMED.reset(token)


def candidates(op: str, **inputs: Any) -> list[tuple[Backend, list[str]]]:
    """Every backend of ``op``, highest priority first, with the reasons it refuses ``inputs``
    (empty when it would run them). Honours :func:`assume_device`; ignores forcing."""
    full = _complete(op, inputs)
    return [(b, b.reasons(full)) for b in list_backends(op)]


def forced_backend() -> str | None:
    """The backend name forced right now by :func:`use` or ``TABZOO_KERNELS``, else None."""
    value = _FORCED.get()
    if value is _UNSET:
        env = os.environ.get(ENV_VAR, "").strip()
        return env or None
    return value


@contextlib.contextmanager
def use(name: str | None) -> Iterator[None]:
    """Force backend ``name`` inside the block (see the module docstring for the rules).

    ``use(None)`` restores automatic dispatch and ignores ``TABZOO_KERNELS`` in the block.

    :raises KernelNotSupportedError: when no op has a backend called ``name``.
    """
    if name is not None and name not in _all_names():
        raise KernelNotSupportedError(
            f"use({name!r}): no op has a backend named {name!r}. "
            f"Known backends: {sorted(_all_names())}."
        )
    token = _FORCED.set(name)
    try:
        yield
    finally:
        _FORCED.reset(token)


def _complete(op: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    if op not in _BACKENDS:
        raise KernelNotSupportedError(f"unknown kernel op {op!r}; known ops: {list_ops()}")
    full = dict(_DEFAULTS.get(op, {}))
    full.update(inputs)
    return full


def _select(op: str, full: Mapping[str, Any]) -> Backend:
    forced = forced_backend()
    table = _BACKENDS[op]
    if forced is not None:
        if forced in table:
            backend = table[forced]
            reasons = backend.reasons(full)
            if reasons:
                raise KernelNotSupportedError(
                    f"{op}: backend {forced!r} is forced (by use() or {ENV_VAR}) but cannot run these "
                    f"inputs: {'; '.join(reasons)}. Fix the inputs, or stop forcing it "
                    f"(use(None) / unset {ENV_VAR})."
                )
            return backend
        if forced not in _all_names():
            raise KernelNotSupportedError(
                f"{ENV_VAR}={forced!r} names no kernel backend. Known backends: {sorted(_all_names())}."
            )
    candidates = list_backends(op)
    for backend in candidates:
        if not backend.reasons(full):
            return backend
    lines = [f"  - {b.describe()}: {'; '.join(b.reasons(full))}" for b in candidates]
    raise KernelNotSupportedError(
        f"no backend of {op} supports these inputs. Candidates and why each refused:\n"
        + ("\n".join(lines) if lines else "  (none registered)")
        + "\nFix the inputs (device, dtype, shapes) or register a backend that supports them."
    )


def select_backend(op: str, **inputs: Any) -> Backend:
    """The backend a call of ``op`` with these keyword inputs would use (honours forcing).

    :raises KernelNotSupportedError: when none fits; the message lists every candidate's reasons.
    """
    return _select(op, _complete(op, inputs))


def dispatch(op: str, inputs: Mapping[str, Any]) -> Any:
    """Select a backend for ``inputs`` and call it with them as keywords (internal)."""
    full = _complete(op, inputs)
    backend = _select(op, full)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s -> %s (forced=%s)", op, backend.name, forced_backend())
    return backend.fn(**full)
