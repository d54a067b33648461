"""Issue 24 items 4 and 8: plugin discovery in a child process with a timeout, cached by the
installed distributions. A plugin that calls ``os._exit`` or hangs at import fails alone; the
command goes on, and ``tabzoo plugins`` answers from the cache without importing any plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from _fake_dists import GOOD, make_dist, use_site
from tabzoo.plugins import discovery, get_registry, reset_registry

EXIT = "import os\nos._exit(3)\n"
HANG = "import time\ntime.sleep(3600)\n"
HOOK_EXIT = ("import os\nfrom tabzoo.plugins import hookimpl\n\n@hookimpl\n"
             "def tabzoo_register_priors(register):\n    os._exit(4)\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = use_site(tmp_path, monkeypatch, {"exit": EXIT, "hang": HANG, "hookexit": HOOK_EXIT,
                                            "good": GOOD.format(arch="good_arch", prior="good_prior")}, timeout="5")
    discovery._memo.clear()
    reset_registry()
    yield root
    discovery._memo.clear()
    reset_registry()


def _failures(listing: dict, name: str) -> str:
    return " ".join(f["error"] for p in listing["plugins"] if p["name"] == name for f in p["failures"])


def test_exit_and_hang_at_import_fail_only_their_plugin_in_the_cli(site: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    out = subprocess.run([sys.executable, "-m", "tabzoo.cli", "plugins", "--json"], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    assert "PluginKilledProcess" in _failures(listing, "tzexit") and "exit status 3" in _failures(listing, "tzexit")
    assert "exit status 4" in _failures(listing, "tzhookexit")
    assert "PluginHang" in _failures(listing, "tzhang") and "for 5 s" in _failures(listing, "tzhang")
    good = next(p for p in listing["plugins"] if p["name"] == "tzgood")
    assert good["loaded"] and [a["name"] for a in good["architectures"]] == ["good_arch"]
    assert len(list((tmp_path / "cache").glob("plugins-*.json"))) == 1


def test_the_registry_never_imports_a_plugin_that_killed_or_hung_the_child(site: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = get_registry(reload=True)  # would end this process (os._exit) or hang without the child
    assert reg.get("architectures", "good_arch").create().in_features == 3
    failed = {r.name: r.error for r in reg.records if r.error}
    assert set(failed) == {"tzexit", "tzhang", "tzhookexit"}
    assert "tz_exit" not in sys.modules and "tz_hang" not in sys.modules and "tz_hookexit" not in sys.modules


def test_a_second_run_answers_from_the_cache(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tzexit,tzhookexit,tzgood")  # a hang is always checked again
    first = discovery.cached_listing()
    assert first is not None
    discovery._memo.clear()

    def no_child() -> None:
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(discovery, "probe", no_child)
    assert discovery.cached_listing() == first


def test_alternating_environments_each_keep_their_cache_entry(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listings = {}
    for allow in ("tzexit,tzgood", "tzgood"):  # e.g. a session's own plugins and a test's extra sys.path
        monkeypatch.setenv("TABZOO_LOAD_PLUGINS", allow)
        discovery._memo.clear()
        listings[allow] = discovery.cached_listing()
    monkeypatch.setattr(discovery, "probe", lambda: pytest.fail("an entry was dropped: discovery ran again"))
    for allow, listing in listings.items():
        monkeypatch.setenv("TABZOO_LOAD_PLUGINS", allow)
        discovery._memo.clear()
        assert discovery.cached_listing() == listing


def test_the_cache_is_invalidated_when_the_installed_set_changes(site: Path) -> None:
    before = discovery.cache_key()
    assert discovery.cache_key() == before
    make_dist(site, "tz-new", "tznew", "tz_new", "x = 1\n", version="2.0")
    after_install = discovery.cache_key()
    assert after_install != before
    make_dist(site, "tz-new", "tznew", "tz_new", "x = 1\n", version="2.1")  # an upgrade (old folder stays)
    assert discovery.cache_key() != after_install
    os.environ["TABZOO_DISABLE_PLUGINS"] = "tznew"
    try:
        assert discovery.cache_key() not in {before, after_install}
    finally:
        del os.environ["TABZOO_DISABLE_PLUGINS"]


def test_an_edited_plugin_module_invalidates_the_cache(site: Path) -> None:
    before = discovery.cache_key()
    module = site / "tz_exit.py"  # never imported here: find_spec would return an imported twin
    stat = module.stat()
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert discovery.cache_key() != before


def test_the_cache_file_is_written_atomically_and_an_unwritable_folder_costs_only_speed(
        site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file")
    monkeypatch.setenv("TABZOO_CACHE_DIR", str(blocker / "cache"))
    assert discovery.cached_listing() is not None  # computed, not cached
    monkeypatch.setenv("TABZOO_CACHE_DIR", str(tmp_path / "cache2"))
    discovery._memo.clear()
    discovery.cached_listing()
    files = list((tmp_path / "cache2").iterdir())
    assert [f.name for f in files if f.name.endswith(".tmp")] == []
    data = json.loads(files[0].read_text())
    assert data["key"] == discovery.cache_key() and "tzhang" in data["excluded"]


@pytest.mark.parametrize("setting", [("TABZOO_PLUGIN_PROBE", "0"), ("TABZOO_STRICT_PLUGINS", "1")])
def test_discovery_in_a_child_can_be_turned_off(site: Path, monkeypatch: pytest.MonkeyPatch,
                                                setting: tuple[str, str]) -> None:
    monkeypatch.setenv(*setting)
    assert discovery.cached_listing() is None and discovery.excluded_plugins() == {}
    assert not (site.parent / "cache").exists()
