"""Plugin discovery in a child process, cached by the installed distributions (issue 24 items 4, 8).

A plugin whose import (or hook) calls ``os._exit``, kills its process or hangs would take every
command down with it if it were first imported in the command's own process. So before the
process-wide registry imports any plugin, a child process (:mod:`tabzoo.plugins.probe`) loads
every entry point in turn, reporting each start and end on its stdout:

* a child that dies while loading plugin ``X`` (``os._exit``, a signal, a crash) marks ``X``
  *killed*; one that makes no progress while loading ``X`` is killed and marks ``X`` *hung*:
  judged by its CPU time (:mod:`tabzoo.plugins.progress`), so a slow import on an overloaded
  machine is not a hang: ``TABZOO_PLUGIN_TIMEOUT`` (default 300) wall-clock seconds with almost no
  CPU used, or that many CPU-seconds used, within one plugin. A new child then loads the others, with ``X``
  recorded as an import failure; the command's process never imports ``X``.
* a plugin whose loading replaced core callables (:mod:`tabzoo.plugins.patches`) is listed as
  failed (``PluginPatchesCore: patches core: <names>``) and excluded the same way.
* the last child also returns the listing of ``tabzoo plugins`` (:func:`describe`).

The result is cached as JSON in ``$TABZOO_CACHE_DIR`` (default ``$XDG_CACHE_HOME/tabzoo`` or
``~/.cache/tabzoo``; atomic write), keyed by the SHA-256 of the Python executable, ``sys.path``,
every installed distribution's metadata folder (``name-version.dist-info``, so its name, version
and location) and that folder's modification time, the modification time of every
entry-point module, and the plugin allow/block lists. Installing, removing or upgrading any
distribution, or editing a plugin module, invalidates it, so ``tabzoo plugins`` answers from the
cache without importing any plugin. A hang is never answered from the cache (a loaded machine
may only have been slow): each new process checks again. ``TABZOO_PLUGIN_PROBE=0`` turns the child and the cache off
(plugins are then imported in-process, each under a ``BaseException`` guard), as does
``TABZOO_STRICT_PLUGINS``. Where the child cannot run at all, loading falls back to that too.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import selectors
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from tabzoo.plugins.progress import Watch

logger = logging.getLogger(__name__)

__all__ = ["CACHE_ENV", "MARK", "PROBE_ENV", "TIMEOUT_ENV", "cache_dir", "cache_key", "cached_listing", "describe",
           "excluded_plugins", "probe"]

PROBE_ENV = "TABZOO_PLUGIN_PROBE"
CACHE_ENV = "TABZOO_CACHE_DIR"
TIMEOUT_ENV = "TABZOO_PLUGIN_TIMEOUT"
MARK = "\x1etabzoo-probe\t"
"""Prefix of the child's report lines (a plugin's own prints are ignored)."""
VERSION = 1


def enabled() -> bool:
    """Whether discovery runs in a child process (``TABZOO_PLUGIN_PROBE`` not 0, not strict mode)."""
    off = os.environ.get(PROBE_ENV, "1").strip().lower() in {"0", "false", "no", "off"}
    strict = os.environ.get("TABZOO_STRICT_PLUGINS", "").strip().lower() in {"1", "true", "yes", "on"}
    return not off and not strict


def cache_dir() -> Path:
    """``$TABZOO_CACHE_DIR``, else ``$XDG_CACHE_HOME/tabzoo``, else ``~/.cache/tabzoo``."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tabzoo"


def _timeout() -> float:
    try:
        value = float(os.environ.get(TIMEOUT_ENV, "300"))
    except ValueError:
        value = 300.0
    return value if value > 0 else 300.0


def _module_mtime(value: str) -> int:
    """Modification time of an entry point's module file, found without importing it (0 if unknown)."""
    top, _, rest = value.split(":")[0].strip().partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return 0
    if spec is None or spec.origin is None:
        return 0
    base = Path(spec.origin).parent
    path = base.joinpath(*rest.split(".")).with_suffix(".py") if rest else Path(spec.origin)
    try:
        return max(path.stat().st_mtime_ns, Path(spec.origin).stat().st_mtime_ns)
    except OSError:
        return 0


def _dist_stamp(dist: metadata.Distribution) -> tuple[str, int]:
    """A distribution's metadata folder (``name-version.dist-info``) and its modification time;
    reading each one's METADATA would cost half a second for a hundred distributions."""
    path = getattr(dist, "_path", None)
    if path is None:
        return f"{dist.metadata['Name']}=={dist.version}", 0
    try:
        return str(path), Path(path).stat().st_mtime_ns
    except OSError:
        return str(path), 0


def cache_key() -> str:
    """SHA-256 of everything the discovery result depends on (see the module docstring)."""
    dists = sorted(_dist_stamp(d) for d in metadata.distributions())
    eps = sorted((ep.name, ep.value, _module_mtime(ep.value)) for ep in metadata.entry_points(group="tabzoo"))
    envs = [os.environ.get(v, "") for v in ("TABZOO_LOAD_PLUGINS", "TABZOO_DISABLE_PLUGINS")]
    text = json.dumps([VERSION, sys.executable, sys.path, dists, eps, envs, _timeout()])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cache_file(key: str) -> Path:
    return cache_dir() / f"plugins-{key[:24]}.json"


def _read_cache(key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(_cache_file(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


KEEP = 8
"""Cache entries kept (the newest): environments that alternate (a virtual environment and a
test's extra ``sys.path``, two allow-lists) would otherwise re-discover on every switch."""


def _write_cache(key: str, data: dict[str, Any]) -> None:
    """Write the cache atomically (temporary file, fsync, rename) and drop all but the :data:`KEEP`
    newest entries; a cache folder that cannot be written only costs speed."""
    target = _cache_file(key)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".plugins.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({**data, "key": key}, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        older = sorted((f for f in target.parent.glob("plugins-*.json") if f != target),
                       key=lambda f: f.stat().st_mtime_ns, reverse=True)
        for old in older[KEEP - 1:]:
            old.unlink(missing_ok=True)
    except OSError as exc:
        logger.debug("plugin discovery cache not written to %s: %s", target, exc)


def _run_child(excluded: dict[str, str], timeout: float) -> tuple[str, Any]:
    """Run one child; ``("done", listing)``, or ``("killed", (plugin, status))``, or ``("hung",
    (plugin, how))`` (:mod:`tabzoo.plugins.progress`), or ``("failed", reason)`` when the child broke
    outside any plugin."""
    env = {**os.environ, PROBE_ENV: "0", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    cmd = [sys.executable, "-m", "tabzoo.plugins.probe", json.dumps(excluded)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env=env)
    assert proc.stdout is not None
    current: str | None = None
    buffer = b""
    watch = Watch(proc.pid, timeout)
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        try:
            while True:
                hung = watch.check()
                if hung:
                    proc.kill()
                    proc.wait()
                    return ("hung", (current, hung)) if current else ("failed", f"no answer ({hung}, {timeout:g} s)")
                if not sel.select(watch.poll_interval()):
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    line = raw.decode("utf-8", "replace")
                    if not line.startswith(MARK):
                        continue
                    tag, _, rest = line[len(MARK):].partition("\t")
                    if tag in ("start", "done"):
                        current = rest if tag == "start" else None
                        watch.restart()
                    elif tag == "listing":
                        proc.wait()
                        return "done", json.loads(rest)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    code = proc.wait()
    return ("killed", (current, code)) if current else ("failed", f"the child exited with status {code}")


def probe() -> dict[str, Any] | None:
    """Discover plugins in child processes (see the module docstring); ``None`` when the child
    cannot run. ``{"excluded": {entry point: reason}, "listing": describe(...)}``."""
    timeout = _timeout()
    excluded: dict[str, str] = {}
    for _ in range(64):  # each round excludes one more plugin; 64 bad plugins is beyond belief
        try:
            outcome, value = _run_child(excluded, timeout)
        except (OSError, ValueError) as exc:
            logger.debug("plugin discovery child failed: %s", exc)
            return None
        if outcome == "done":
            patched = _patchers(value)
            if not patched or set(patched) <= set(excluded):
                return {"excluded": excluded, "listing": value, "created": time.time()}
            excluded.update(patched)  # never imported in the command's process; listed as failed
            continue
        if outcome == "hung":
            name, how = value
            what = (f"used {timeout:g} CPU-seconds without finishing" if how == "spinning" else
                    f"made no progress for {timeout:g} s (it used almost no CPU: sleeping or blocked)")
            excluded[name] = (f"PluginHang: its import or registration {what}, so tabzoo does not load it "
                              f"(raise {TIMEOUT_ENV}, now {timeout:g}, if it is only slow)")
        elif outcome == "killed":
            name, code = value
            excluded[name] = (f"PluginKilledProcess: its import or registration ended the process (exit status "
                              f"{code}, e.g. os._exit or a crash), so tabzoo does not load it")
        else:
            logger.debug("plugin discovery child failed: %s", value)
            return None
    return None


def _patchers(listing: dict[str, Any]) -> dict[str, str]:
    """Plugins whose loading in the child replaced core callables (:mod:`tabzoo.plugins.patches`)."""
    return {p["name"]: next(f["error"] for f in p["failures"] if f["stage"] == "patch")
            for p in listing.get("plugins", []) if any(f["stage"] == "patch" for f in p["failures"])}


_memo: dict[str, dict[str, Any] | None] = {}


def discovered() -> dict[str, Any] | None:
    """The discovery result for the current installation (cache, else :func:`probe`); ``None``
    when discovery in a child is off or impossible."""
    if not enabled():
        return None
    key = cache_key()
    if key in _memo:
        return _memo[key]
    data = _read_cache(key)
    if data is not None and _stale_hang(data):
        data = None
    if data is None:
        data = probe()
        if data is not None:
            _write_cache(key, data)
    _memo.clear()
    _memo[key] = data
    return data


HANG_RECHECK_S = 0.0
"""A cached hang is re-checked after this many seconds: a loaded machine may have caused it (an
import of torch took over 120 s at a load of 20 on 2 cores), so hangs are not trusted from the cache."""


def _stale_hang(data: dict[str, Any]) -> bool:
    hung = any(reason.startswith("PluginHang") for reason in data.get("excluded", {}).values())
    return hung and time.time() - float(data.get("created", 0)) >= HANG_RECHECK_S


def excluded_plugins() -> dict[str, str]:
    """Entry points that must not be imported in this process, with the failure to record."""
    data = discovered()
    return dict(data["excluded"]) if data else {}


def cached_listing() -> dict[str, Any] | None:
    """The ``tabzoo plugins`` listing without importing any plugin, when discovery is on."""
    data = discovered()
    return data["listing"] if data else None


def describe(reg: Any) -> dict[str, Any]:
    """What ``tabzoo plugins --json`` lists of registry ``reg``: ``{"plugins": [record +
    architectures/priors/kind], "conflicts": [{"kind", "name", "distributions", "message"}]}``."""
    from tabzoo.errors import AmbiguousPluginError

    out = []
    for rec in reg.records:
        item = rec.as_dict()
        archs = [reg.items["architectures"][n].obj for n in rec.provides.get("architectures", [])
                 if n in reg.items["architectures"]]
        item["architectures"] = [
            {"name": a.name, "kind": a.kind, "capabilities": sorted(a.capabilities)} for a in archs
        ]
        item["priors"] = [
            {"name": n, "kind": reg.items["priors"][n].obj.kind}
            for n in rec.provides.get("priors", []) if n in reg.items["priors"]
        ]
        commands = reg.items.get("commands", {})
        item["commands"] = [n for n in rec.provides.get("commands", []) if n in commands]
        kinds = sorted(k for k, v in rec.provides.items() if v)
        item["kind"] = ",".join(kinds) if kinds else None
        out.append(item)
    conflicts = []
    for kind, table in reg.conflicts().items():
        for name, records in table.items():
            try:
                reg.check_name(kind, name)
                message = ""
            except AmbiguousPluginError as exc:
                message = str(exc)
            conflicts.append({
                "kind": kind, "name": name, "message": message,
                "distributions": [{"name": r.name, "distribution": r.distribution, "version": r.version}
                                  for r in records],
            })
    return {"plugins": out, "conflicts": conflicts}
