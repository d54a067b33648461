"""Throwaway distributions with real entry points, written into a temporary sys.path folder."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

GOOD = '''
from tabzoo.plugins import hookimpl, ArchitectureSpec, PriorSpec

def _build(config):
    import torch
    return torch.nn.Linear(config["d"], 1)

@hookimpl
def tabzoo_register_architectures(register):
    register(ArchitectureSpec(name="{arch}", build=_build, default_config={{"d": 3}},
                              capabilities=frozenset({{"in_context"}})))

@hookimpl
def tabzoo_register_priors(register):
    register(PriorSpec(name="{prior}", factory=lambda **kw: kw))
'''

BROKEN = '''
import this_module_does_not_exist_anywhere  # noqa: F401
'''

HOOK_RAISES = '''
from tabzoo.plugins import hookimpl

@hookimpl
def tabzoo_register_priors(register):
    raise RuntimeError("boom in hook")
'''


def make_dist(root: Path, dist: str, ep_name: str, module: str, source: str, version: str = "1.0") -> None:
    """Create ``module.py`` and ``<dist>-<version>.dist-info`` with one ``tabzoo`` entry point."""
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[tabzoo]\n{ep_name} = {module}\n")


def use_site(tmp_path: Path, monkeypatch: Any, sources: dict[str, str], timeout: str | None = None) -> Path:
    """A ``site`` folder on ``sys.path`` with one distribution per ``sources`` item (``"exit"`` ->
    dist ``tz-exit``, entry point ``tzexit``, module ``tz_exit``), only those plugins enabled, a
    fresh discovery cache in ``tmp_path/cache`` and no other plugin setting; the caller resets the
    registry and ``discovery._memo`` around the test."""
    root = tmp_path / "site"
    root.mkdir()
    for key, source in sources.items():
        make_dist(root, f"tz-{key}", f"tz{key}", f"tz_{key}", source)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", ",".join(f"tz{key}" for key in sources))
    monkeypatch.setenv("TABZOO_CACHE_DIR", str(tmp_path / "cache"))
    if timeout is not None:
        monkeypatch.setenv("TABZOO_PLUGIN_TIMEOUT", timeout)
    for var in ("TABZOO_STRICT_PLUGINS", "TABZOO_DISABLE_PLUGINS", "TABZOO_PLUGIN_PROBE"):
        monkeypatch.delenv(var, raising=False)
    return root
