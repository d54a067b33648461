"""Plugin loading through real entry points of throwaway distributions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _fake_dists import BROKEN, GOOD, HOOK_RAISES, make_dist
from tabzoo.errors import PluginLoadError, TabzooInputError
from tabzoo.plugins import HOOK_NAMES, ArchitectureSpec, PluginRegistry, PriorSpec

NAMES = "tzgood,tzbroken,tzhook,tzdup"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    make_dist(tmp_path, "tz-good", "tzgood", "tz_good_plugin", GOOD.format(arch="toy", prior="toyprior"))
    make_dist(tmp_path, "tz-broken", "tzbroken", "tz_broken_plugin", BROKEN, version="0.3")
    monkeypatch.syspath_prepend(str(tmp_path))
    for var in ("TABZOO_STRICT_PLUGINS", "TABZOO_LOAD_PLUGINS", "TABZOO_DISABLE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _load(monkeypatch: pytest.MonkeyPatch, allow: str = NAMES) -> PluginRegistry:
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", allow)
    reg = PluginRegistry()
    reg.load_entry_points()
    return reg


def _record(reg: PluginRegistry, name: str):
    return next(r for r in reg.records if r.name == name)


def test_broken_plugin_is_recorded_and_good_one_loads(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.warns(RuntimeWarning, match=r"tzbroken.*tz-broken 0\.3.*this_module_does_not_exist"):
        reg = _load(monkeypatch)
    broken = _record(reg, "tzbroken")
    assert not broken.loaded and "ModuleNotFoundError" in (broken.error or "")
    assert (broken.distribution, broken.version) == ("tz-broken", "0.3")
    good = _record(reg, "tzgood")
    assert good.loaded and good.error is None
    assert reg.names("architectures") == ["toy"]
    assert reg.get("architectures", "toy").create({"d": 5}).in_features == 5
    assert reg.get("priors", "toyprior").create(a=1) == {"a": 1}
    assert reg.source("architectures", "toy").distribution == "tz-good"


def test_strict_mode_raises(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABZOO_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError, match="tz-broken 0.3"):
        _load(monkeypatch)


def test_allow_and_block_lists(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _load(monkeypatch, allow="tzgood")
    assert _record(reg, "tzbroken").skipped == "not in TABZOO_LOAD_PLUGINS"
    assert _record(reg, "tzgood").loaded
    monkeypatch.setenv("TABZOO_DISABLE_PLUGINS", "tz-broken")  # by distribution name
    reg = _load(monkeypatch)
    assert _record(reg, "tzbroken").skipped == "in TABZOO_DISABLE_PLUGINS"
    assert not any(r.error for r in reg.records)


def test_hook_that_raises_is_recorded(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_dist(site, "tz-hook", "tzhook", "tz_hook_plugin", HOOK_RAISES)
    with pytest.warns(RuntimeWarning, match="boom in hook"):
        reg = _load(monkeypatch, allow="tzhook,tzgood")
    assert "tabzoo_register_priors failed" in (_record(reg, "tzhook").error or "")
    assert reg.names("priors") == ["toyprior"]


def test_duplicate_name_is_ambiguous_not_fatal(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.errors import AmbiguousPluginError

    make_dist(site, "tz-dup", "tzdup", "tz_dup_plugin", GOOD.format(arch="toy", prior="other"), "2.0")
    with pytest.warns(RuntimeWarning, match="ambiguous"):
        reg = _load(monkeypatch, allow="tzgood,tzdup")
    with pytest.raises(AmbiguousPluginError, match=r"tz-dup 2\.0.*tz-good 1\.0|tz-good 1\.0.*tz-dup 2\.0") as info:
        reg.get("architectures", "toy")
    assert "TABZOO_DISABLE_PLUGINS=tzgood" in str(info.value) and "TABZOO_DISABLE_PLUGINS=tzdup" in str(info.value)
    assert "toy" not in reg.names("architectures")
    assert reg.names("priors") == ["other", "toyprior"]  # every other name works
    monkeypatch.setenv("TABZOO_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError, match="ambiguous"):
        _load(monkeypatch, allow="tzgood,tzdup")


def test_unknown_name_error_lists_installed(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.warns(RuntimeWarning):
        reg = _load(monkeypatch)
    with pytest.raises(PluginLoadError, match=r"no architecture named 'nope'.*\['toy'\].*tzbroken"):
        reg.get("architectures", "nope")


def test_register_wrong_type_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.plugins import PluginRecord

    reg = PluginRegistry()
    with pytest.raises(PluginLoadError, match="expects a ArchitectureSpec"):
        reg.add("architectures", PriorSpec(name="p", factory=dict), PluginRecord("x", "d", "1", "m"))


def test_spec_validation() -> None:
    with pytest.raises(TabzooInputError, match="invalid"):
        ArchitectureSpec(name="", build=lambda c: None)
    with pytest.raises(TabzooInputError, match="kind"):
        PriorSpec(name="p", factory=dict, kind="nonsense")
    spec = ArchitectureSpec(name="a", build=lambda c: c, default_config={"d": 1})
    with pytest.raises(TabzooInputError, match="no config keys"):
        spec.create({"e": 2})
    assert spec.create({"d": 4}) == {"d": 4}


def test_spec_regressor_field() -> None:
    """``regressor`` is optional, validated like an import path, and resolved lazily."""
    plain = ArchitectureSpec(name="a", build=lambda c: c)
    assert plain.regressor is None
    with pytest.raises(TabzooInputError, match="ships no regressor"):
        plain.regressor_class()
    with pytest.raises(TabzooInputError, match="package.module:ClassName"):
        ArchitectureSpec(name="a", build=lambda c: c, regressor="sklearn.linear_model.Ridge")
    spec = ArchitectureSpec(name="a", build=lambda c: c, estimator="sklearn.linear_model:LogisticRegression",
                            regressor="sklearn.linear_model:Ridge")
    pytest.importorskip("sklearn", reason="resolving the regressor imports scikit-learn")
    from sklearn.linear_model import LogisticRegression, Ridge

    assert spec.regressor_class() is Ridge
    assert spec.estimator_class() is LogisticRegression
    with pytest.raises(PluginLoadError, match="no attribute"):
        ArchitectureSpec(name="a", build=lambda c: c, regressor="sklearn.linear_model:NoSuch").regressor_class()


def test_hookspecs_are_the_documented_four() -> None:
    import tabzoo.plugins.hookspecs as hs

    assert set(HOOK_NAMES) == {n for n in dir(hs) if n.startswith("tabzoo_")}


def test_cli_plugins_json_in_subprocess(site: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(site), "TABZOO_LOAD_PLUGINS": NAMES}
    out = subprocess.run(
        [sys.executable, "-m", "tabzoo.cli", "plugins", "--json"],
        capture_output=True, text=True, env=env, check=True,
    )
    data = json.loads(out.stdout)
    by_name = {p["name"]: p for p in data["plugins"]}
    assert by_name["tzbroken"]["error"].startswith("import failed")
    assert by_name["tzgood"]["architectures"] == [{"name": "toy", "kind": "in-context", "capabilities": ["in_context"]}]
    assert by_name["tzgood"]["kind"] == "architectures,priors"
    table = subprocess.run(
        [sys.executable, "-m", "tabzoo.cli", "plugins"], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert "tz-broken" in table and "ERROR" in table
