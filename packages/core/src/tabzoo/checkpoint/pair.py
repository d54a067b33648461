"""A checkpoint pair: safetensors weights next to a JSON file. Loading never unpickles.

A checkpoint at stem ``path`` is the pair ``path.safetensors`` + ``path.json``. The JSON holds
the architecture name, its config, the package versions, the prior, the training steps, any
extra metadata, and the SHA-256 of the weights file, so that a truncated or mismatched file is
refused before anything is loaded.

Saving under faults (a kill -9 at any point, or two processes saving to one stem at once) never
yields a mixed pair:

1. the writer takes an exclusive ``flock`` on the folder (readers take a shared one), so saves
   to one folder are serialised and a reader never sees half of a save;
2. it removes what an earlier killed save left (``.<name>.pending`` and ``*.tmp`` files);
3. it writes both new files completely as ``.<stem>.safetensors.pending`` and
   ``.<stem>.json.pending`` (each through a temporary file, fsync, rename);
4. it renames the weights into place, then the JSON.

A kill before step 4 leaves the previous pair untouched. A kill between the two renames of step 4
leaves the new weights beside the old JSON, and the new JSON complete as ``.pending``: loading
finds that the pending JSON's SHA-256 matches the weights and uses it (the next save completes the
rename). Any other mismatch is refused with :class:`~tabzoo.errors.CheckpointError`.

The JSON's ``format`` is ``tabzoo-checkpoint/<version>``; a file of a newer version, or whose
``architecture`` is not the one asked for, is refused with a message that says what to do.

Integrity (:mod:`tabzoo.checkpoint.validate`): since format 2 the JSON carries ``digest``, one
SHA-256 over all of its content including the weights' SHA-256, so an edited config is refused
like corrupt weights. Format 1 files (no digest) are still read. For both, the config is checked
against limits and :func:`load_model` checks the model's memory before it builds it; a format 1
config is first built on the meta device, and one whose shapes differ from the weights is refused
before anything is allocated.
"""


from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from tabzoo.checkpoint.io import (
    atomic_write,
    bytes_to_tensors,
    flatten_state,
    folder_lock,
    read_bytes,
    read_json,
    sha256,
    tensors_to_bytes,
    unflatten_state,
)
from tabzoo.checkpoint.validate import DIGEST, check_build, check_config, check_digest, meta_digest
from tabzoo.errors import CheckpointError, TabzooError, TabzooInputError

FORMAT = "tabzoo-checkpoint/2"
STATE_FORMAT = "tabzoo-state/1"
_READS = {FORMAT: True, "tabzoo-checkpoint/1": False, STATE_FORMAT: False}
"""Formats read, and whether their JSON must carry a ``digest`` (format 1 predates it)."""

__all__ = ["FORMAT", "STATE_FORMAT", "Checkpoint", "checkpoint_stem", "load_checkpoint", "load_model", "load_state",
           "estimator_files", "load_weights", "model_stem", "package_of", "refuse_existing", "save_checkpoint", "save_state",
           "saved_estimator"]


def checkpoint_stem(path: str | Path) -> Path:
    """The stem of a checkpoint pair: ``path`` without a ``.safetensors`` / ``.json`` suffix."""
    p = Path(path)
    return p.with_suffix("") if p.suffix in {".safetensors", ".json"} else p


def _paths(path: str | Path) -> tuple[Path, Path]:
    stem = checkpoint_stem(path)
    return stem.with_name(stem.name + ".safetensors"), stem.with_name(stem.name + ".json")


def model_stem(stem: str | Path) -> Path:
    """The stem of a saved estimator's model pair: ``<stem>.model`` (beside the state pair ``<stem>``)."""
    s = checkpoint_stem(stem)
    return s.with_name(s.name + ".model")


def estimator_files(stem: str | Path) -> list[Path]:
    """The four files of a saved estimator at ``stem``: the state pair ``<stem>.safetensors`` /
    ``.json`` and the model pair ``<stem>.model.safetensors`` / ``.json``."""
    return [p for s in (checkpoint_stem(stem), model_stem(stem)) for p in _paths(s)]


def refuse_existing(paths: Iterable[Path], *, overwrite: bool) -> list[Path]:
    """The files of ``paths`` that exist; without ``overwrite`` any of them is refused, so a saved
    model is never replaced silently.

    :raises TabzooInputError: some file exists and ``overwrite`` is false.
    """
    existing = [p for p in paths if p.exists()]
    if existing and not overwrite:
        raise TabzooInputError(f"{', '.join(map(str, existing))} already exist(s); a saved model is never replaced "
                               "silently. Pass overwrite=True to replace it, or choose another path.")
    return existing


@dataclass
class Checkpoint:
    """A loaded checkpoint: ``tensors`` (name -> tensor) and its ``meta`` dict."""

    tensors: dict[str, torch.Tensor]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return str(self.meta.get("architecture", ""))

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.meta.get("config", {}))


def _versions() -> dict[str, str]:
    from tabzoo import __version__

    return {"tabzoo-core": __version__, "torch": torch.__version__}


@functools.lru_cache(maxsize=64)
def _dist_of_module(top: str) -> tuple[str, str] | None:
    """The distribution that installs top-level module ``top`` (editable installs included)."""
    from importlib import metadata

    if top == "tabzoo":
        from tabzoo import __version__

        return "tabzoo-core", __version__
    # installed wheels list their modules; editable installs do not, so also try the module's name
    # as a distribution name (tabzoo_tabflex -> tabzoo-tabflex)
    names = [*metadata.packages_distributions().get(top, []), top, top.replace("_", "-")]
    for dist in dict.fromkeys(names):
        try:
            return metadata.metadata(dist)["Name"], metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def package_of(model: Any, architecture: str) -> tuple[str | None, str | None]:
    """``(distribution, version)`` that provides a model: the distribution of the module that
    defines the model's class, else the plugin that registers ``architecture``, else ``(None, None)``."""
    module = type(model).__module__ if isinstance(model, torch.nn.Module) else ""
    top = module.split(".")[0]
    if top and top not in {"torch", "builtins", "__main__"}:
        found = _dist_of_module(top)
        if found is not None:
            return found
    try:
        from tabzoo.plugins import get_registry

        record = get_registry().source("architectures", architecture)
        return record.distribution, record.version
    except Exception:  # an unregistered architecture (e.g. a bare nn.Module in a script)
        return None, None


def _pending(p: Path) -> Path:
    return p.with_name(f".{p.name}.pending")


def _clear_leftovers(weights: Path, meta_path: Path) -> None:
    """Remove what a killed save of this stem left behind (call with the exclusive lock held)."""
    for target in (weights, meta_path):
        for junk in [_pending(target), *target.parent.glob(f".{target.name}.*.tmp"),
                     *target.parent.glob(f".{_pending(target).name}.*.tmp")]:
            try:
                junk.unlink()
            except FileNotFoundError:
                pass


def _write_pair(path: str | Path, tensors: Mapping[str, torch.Tensor], meta: dict[str, Any]) -> Path:
    weights, meta_path = _paths(path)
    data = tensors_to_bytes(tensors)
    meta = {**meta, "sha256": sha256(data), "n_tensors": len(tensors)}
    meta[DIGEST] = meta_digest(meta)
    text = json.dumps(meta, indent=2, sort_keys=True).encode("utf-8")
    weights.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(weights.parent, exclusive=True):
        _clear_leftovers(weights, meta_path)
        pw, pj = _pending(weights), _pending(meta_path)
        try:
            atomic_write(pw, data)
            atomic_write(pj, text)
            os.replace(pw, weights)
            os.replace(pj, meta_path)
        except BaseException:
            for p in (pw, pj):
                if p.exists():
                    p.unlink()
            raise
    return weights


_FORMAT_RE = re.compile(r"^(tabzoo-(?:checkpoint|state))/(\d+)$")


def _check_format(meta: dict[str, Any], meta_path: Path, expected_format: str) -> None:
    found = meta.get("format")
    if isinstance(found, str) and found in _READS and found.split("/")[0] == expected_format.split("/")[0]:
        check_digest(meta, meta_path, required=_READS[found])
        return
    want = _FORMAT_RE.match(expected_format)
    got = _FORMAT_RE.match(found) if isinstance(found, str) else None
    if want and got and got.group(1) == want.group(1) and int(got.group(2)) > int(want.group(2)):
        from tabzoo import __version__

        written = meta.get("versions", {}).get("tabzoo-core", "?") if isinstance(meta.get("versions"), dict) else "?"
        raise CheckpointError(
            f"{meta_path} has format version {got.group(2)} (written by tabzoo-core {written}); this "
            f"tabzoo-core {__version__} reads version {want.group(2)} only. Upgrade: pip install -U tabzoo-core."
        )
    raise CheckpointError(
        f"{meta_path} has format {found!r}, expected {expected_format!r}; "
        "it was not written by this kind of tabzoo save."
    )


def _read_pair(path: str | Path, expected_format: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    weights, meta_path = _paths(path)
    with folder_lock(weights.parent, exclusive=False):
        meta = read_json(meta_path)
        _check_format(meta, meta_path, expected_format)
        data = read_bytes(weights)
        digest = sha256(data)
        if digest != meta.get("sha256"):
            pending = _pending(meta_path)
            newer = None
            if pending.exists():  # a save killed between its two renames: roll forward
                try:
                    newer = read_json(pending)
                except CheckpointError:
                    newer = None
            if newer is None or newer.get("sha256") != digest:
                raise CheckpointError(
                    f"{weights} does not match the SHA-256 recorded in {meta_path.name}: the weights are "
                    "truncated, corrupt, or from another save. Nothing was loaded; save the checkpoint again."
                )
            _check_format(newer, pending, expected_format)
            meta = newer
    return bytes_to_tensors(data, weights), meta


def _check_architecture(meta: dict[str, Any], path: str | Path, architecture: str | None) -> None:
    if architecture is None:
        return
    found = meta.get("architecture")
    if found != architecture:
        raise CheckpointError(
            f"checkpoint {path} holds architecture {found!r} (its JSON says so), not {architecture!r}. "
            f"Load it with the {found!r} model (tabzoo.checkpoint.load_model(path) builds the right "
            f"one), or pick a checkpoint of {architecture!r}."
        )


def save_checkpoint(
    path: str | Path,
    model: torch.nn.Module | Mapping[str, torch.Tensor],
    *,
    architecture: str,
    config: Mapping[str, Any],
    prior: str | None = None,
    steps: int | None = None,
    package_version: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Save weights to ``path.safetensors`` and metadata to ``path.json`` atomically.

    :param model: a module (its ``state_dict()`` is saved) or a flat ``{name: tensor}`` dict.
    :param config: the architecture config, JSON-serialisable.
    :param package_version: the version of the package that provides the model; by default it is
        looked up (:func:`package_of`), and recorded with the distribution's name as ``package``.
    :returns: the path of the weights file.
    """
    tensors = model.state_dict() if isinstance(model, torch.nn.Module) else dict(model)
    package, found_version = package_of(model, architecture)
    if package_version is None:
        package_version = found_version
    meta: dict[str, Any] = {
        "format": FORMAT,
        "architecture": architecture,
        "config": dict(config),
        "prior": prior,
        "steps": steps,
        "package": package,
        "package_version": package_version,
        "versions": _versions(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "extra": dict(extra or {}),
    }
    try:
        json.dumps(meta)
    except TypeError as exc:
        raise CheckpointError(f"checkpoint metadata must be JSON-serialisable: {exc}") from exc
    return _write_pair(path, tensors, meta)


def _read_checkpoint(path: str | Path) -> Checkpoint:
    tensors, meta = _read_pair(path, FORMAT)
    check_config(meta.get("config", {}), f"checkpoint {path}")
    return Checkpoint(tensors=tensors, meta=meta)


@functools.lru_cache(maxsize=8)
def _read_cached(stem: str, mtime: float) -> Checkpoint:
    return _read_checkpoint(stem)


def load_checkpoint(path: str | Path, *, architecture: str | None = None, cached: bool = False) -> Checkpoint:
    """Load a checkpoint saved by :func:`save_checkpoint`; refuses corrupt or partial files.

    :param architecture: when given, the architecture the JSON must name.
    :param cached: read each path once per mtime of its JSON (a rewritten checkpoint is read again);
        the returned object is then shared: do not modify it.
    :raises CheckpointError: missing, truncated, corrupt, mixed, newer-format or other-architecture files.
    """
    if cached:
        _, meta_path = _paths(path)
        try:
            mtime = meta_path.stat().st_mtime
        except FileNotFoundError:
            mtime = -1.0  # _read_pair raises the message that says what is missing
        ckpt = _read_cached(str(meta_path.with_suffix("")), mtime)
    else:
        ckpt = _read_checkpoint(path)
    _check_architecture(ckpt.meta, path, architecture)
    return ckpt


def load_model(
    path: str | Path, build: Any = None, *, strict: bool = True, architecture: str | None = None,
    cached: bool = False,
) -> torch.nn.Module:
    """Build a model and load a checkpoint into it.

    :param build: ``build(config) -> nn.Module``; by default the registered architecture of
        the checkpoint's ``architecture`` name builds it.
    :param architecture: the architecture the checkpoint must hold; by default, when ``build``
        is given, the built model's ``architecture`` attribute (if it has one) is compared.
    :param cached: read the file once per path and JSON mtime (:func:`load_checkpoint`).
    :raises CheckpointError: also when the config builds other shapes than the stored weights
        (checked on the meta device, before the real build allocates).
    :raises MemoryLimitError: the built model would exceed the memory limit.
    """
    ckpt = load_checkpoint(path, architecture=architecture, cached=cached)
    if build is None:
        from tabzoo.plugins import get_architecture

        build = get_architecture(ckpt.architecture).build
    check_build(build, ckpt.config, ckpt.tensors, str(path), verified=DIGEST in ckpt.meta)
    model = build(ckpt.config)
    own = getattr(model, "architecture", None)
    if architecture is None and isinstance(own, str):
        _check_architecture(ckpt.meta, path, own)
    if strict:
        load_weights(model, ckpt.tensors, what=f"checkpoint {path}",
                     target=f"architecture {ckpt.architecture!r} with its config",
                     fix="Use the config stored in the checkpoint's JSON.")
    else:
        model.load_state_dict(ckpt.tensors, strict=False)
    return model


def load_weights(model: torch.nn.Module, tensors: Mapping[str, torch.Tensor], *, what: str, target: str,
                 fix: str, error: type[TabzooError] = CheckpointError) -> None:
    """Load ``tensors`` into ``model``; refuse any missing or unexpected key.

    Raises ``error`` (default :class:`CheckpointError`) as ``"<what> does not fit <target>: missing
    keys [...], unexpected keys [...]. <fix>"``, listing at most 8 keys of each.
    """
    try:
        missing, unexpected = model.load_state_dict(dict(tensors), strict=False)
    except RuntimeError as exc:  # shapes differ ("size mismatch for ...")
        raise error(f"{what} does not fit {target}: {' '.join(str(exc).split())[:600].rstrip('.')}. {fix}") from exc
    if missing or unexpected:
        raise error(f"{what} does not fit {target}: missing keys {list(missing)[:8]}, "
                    f"unexpected keys {list(unexpected)[:8]}. {fix}")


def save_state(path: str | Path, state: Any, *, extra: Mapping[str, Any] | None = None) -> Path:
    """Save a nested training state (model, optimizer, scheduler, RNG, step) without pickle."""
    tree, tensors = flatten_state(state)
    meta = {"format": STATE_FORMAT, "tree": tree, "versions": _versions(), "extra": dict(extra or {})}
    return _write_pair(path, tensors, meta)


def load_state(path: str | Path) -> Any:
    """Load a state saved by :func:`save_state`."""
    tensors, meta = _read_pair(path, STATE_FORMAT)
    return unflatten_state(meta["tree"], tensors)


def estimator_id(cls: type) -> str:
    """How a save names the estimator class that wrote it: ``"<module>:<qualname>"``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def write_estimator(path: str | Path, est: Any, state: dict[str, Any], model: torch.nn.Module | Mapping[str, torch.Tensor],
                    *, architecture: str, config: Mapping[str, Any], overwrite: bool,
                    extra: Mapping[str, Any] | None = None) -> Path:
    """What every estimator's ``save`` ends with: refuse an earlier save at ``path`` (unless
    ``overwrite``), then write ``state`` (:func:`save_state`, the pair ``<stem>``) and ``model``
    (a module or its tensors; :func:`save_checkpoint`, the pair ``<stem>.model``), both tagged with
    ``{"estimator": estimator_id(type(est)), **extra}``. Returns the stem.

    :raises TabzooInputError: a file of the four exists and ``overwrite`` is false (nothing is written).
    """
    stem = checkpoint_stem(path)
    refuse_existing(estimator_files(stem), overwrite=overwrite)
    who = {"estimator": estimator_id(type(est)), **dict(extra or {})}
    save_state(stem, state, extra=who)
    save_checkpoint(model_stem(stem), model, architecture=architecture, config=dict(config), extra=who)
    return stem


def saved_estimator(cls: type, path: str | Path, device: str | None = None) -> tuple[Path, dict[str, Any], Any]:
    """What every estimator's ``load`` starts from: the stem of ``path``, the state saved there by
    :func:`save_state` (a dict with the estimator's ``"params"``), and an unfitted ``cls(**params)``,
    with ``device`` (when given) replacing the saved one. The caller restores its fitted attributes.

    :raises CheckpointError: the state holds no ``"params"`` dict (not an estimator's save)."""
    stem = checkpoint_stem(path)
    state = load_state(stem)
    if not isinstance(state, dict) or not isinstance(state.get("params"), dict):
        raise CheckpointError(f"{stem}.json holds no saved estimator (no 'params'); load a stem written by an "
                              "estimator's save(), or save the estimator again.")
    params = dict(state["params"])
    if device is not None:
        params["device"] = device
    return stem, state, cls(**params)
