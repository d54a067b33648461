"""Issue 16 items 1-2: a third-party distribution that fails at every stage and claims names
another distribution also claims. tabzoo keeps working beside it; every failure is recorded with
the distribution and version; ambiguous names raise an error naming both distributions.

The distributions are real: ``*.dist-info`` folders with ``entry_points.txt`` on a temp sys.path,
found by ``importlib.metadata`` exactly as installed wheels are (see ``_fake_dists``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from _fake_dists import make_dist
from tabzoo.errors import AmbiguousPluginError, PluginBuildError, PluginLoadError
from tabzoo.plugins import PluginRegistry

EVIL = '''
from tabzoo.plugins import ArchitectureSpec, CaseFactory, PriorSpec, hookimpl
from tabzoo.kernels import Backend


def _ok_build(config):
    import torch
    return torch.nn.Linear(2, 1)


def _bad_build(config):
    raise RuntimeError("build exploded")


class SneakySpec(ArchitectureSpec):
    def __post_init__(self):  # skips the checks the base class makes
        pass


def _twin_fn(**kw):
    raise AssertionError("an ambiguous backend must never run")


@hookimpl
def tabzoo_register_architectures(register):
    register("tabflex")                                              # wrong type
    register(SneakySpec(name="evil_sneaky", build=_ok_build, kind="nonsense"))  # fails validation
    register(ArchitectureSpec(name="evil_bad_build", build=_bad_build))
    register(ArchitectureSpec(name="evil_ok", build=_ok_build))
    register(ArchitectureSpec(name="twin_arch", build=_ok_build))    # conflicts with tz-twin
    register(ArchitectureSpec(name="tabflex", build=_ok_build))      # conflicts with tabzoo-tabflex if present


@hookimpl
def tabzoo_register_priors(register):
    register(PriorSpec(name="evil_prior", factory=dict))
    register(PriorSpec(name="twin_prior", factory=dict))
    register(PriorSpec(name="bad name with spaces", factory=dict))   # the spec itself raises: hook fails


@hookimpl
def tabzoo_register_kernel_backends(register):
    register(Backend(name="twin_backend", op="masked_attention", fn=_twin_fn, priority=10**6))
    raise RuntimeError("backend hook exploded")


def _raise():
    raise ZeroDivisionError("case factory exploded")


@hookimpl
def tabzoo_conformance_cases(register):
    register(CaseFactory(name="evil_case", factory=_raise))
    register(CaseFactory(name="evil_wrong", factory=lambda: "not a case"))
    register(42)
    register(CaseFactory(name="twin_case", factory=_twin_case))


def _twin_case():
    from tabzoo.testing import ConformanceCase
    return ConformanceCase(name="twin_case", capabilities=frozenset({"kernel_equivalence"}))
'''

TWIN = '''
from tabzoo.plugins import ArchitectureSpec, CaseFactory, PriorSpec, hookimpl
from tabzoo.kernels import Backend


def _build(config):
    import torch
    return torch.nn.Linear(3, 1)


def _fn(**kw):
    raise AssertionError("an ambiguous backend must never run")


@hookimpl
def tabzoo_register_architectures(register):
    register(ArchitectureSpec(name="twin_arch", build=_build))
    register(ArchitectureSpec(name="twin_only", build=_build))


@hookimpl
def tabzoo_register_priors(register):
    register(PriorSpec(name="twin_prior", factory=dict))


@hookimpl
def tabzoo_register_kernel_backends(register):
    register(Backend(name="twin_backend", op="masked_attention", fn=_fn, priority=10**6))


def _case():
    from tabzoo.testing import ConformanceCase
    return ConformanceCase(name="twin_case", capabilities=frozenset({"kernel_equivalence"}))


@hookimpl
def tabzoo_conformance_cases(register):
    register(CaseFactory(name="twin_case", factory=_case))
'''

VARS = ("TABZOO_STRICT_PLUGINS", "TABZOO_LOAD_PLUGINS", "TABZOO_DISABLE_PLUGINS")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    make_dist(tmp_path, "tz-evil", "tzevil", "tz_evil_plugin", EVIL, version="6.6.6")
    make_dist(tmp_path, "tz-twin", "tztwin", "tz_twin_plugin", TWIN, version="0.2")
    monkeypatch.syspath_prepend(str(tmp_path))
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _load(monkeypatch: pytest.MonkeyPatch, allow: str = "tzevil,tztwin") -> PluginRegistry:
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", allow)
    reg = PluginRegistry()
    with pytest.warns(RuntimeWarning):
        reg.load_entry_points()
    return reg


def _stages(reg: PluginRegistry, plugin: str) -> dict[tuple[str, str | None], str]:
    rec = next(r for r in reg.records if r.name == plugin)
    return {(f.stage, f.name or f.hook): f.error for f in rec.failures}


def test_every_stage_is_isolated_and_recorded(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _load(monkeypatch)
    evil = next(r for r in reg.records if r.name == "tzevil")
    assert evil.loaded and (evil.distribution, evil.version) == ("tz-evil", "6.6.6")
    stages = _stages(reg, "tzevil")
    assert "expects a ArchitectureSpec, got str" in stages[("validate", "tabzoo_register_architectures")]
    assert "kind 'nonsense'" in stages[("validate", "evil_sneaky")]
    assert "bad name with spaces" in stages[("hook", "tabzoo_register_priors")]
    assert "backend hook exploded" in stages[("hook", "tabzoo_register_kernel_backends")]
    assert "ZeroDivisionError: case factory exploded" == stages[("case", "evil_case")]
    assert "not a ConformanceCase" in stages[("case", "evil_wrong")]
    assert "got int" in stages[("validate", "tabzoo_conformance_cases")]
    # everything that was fine is usable: in the failing plugin and beside it
    assert {"evil_ok", "evil_bad_build", "twin_only"} <= set(reg.names("architectures"))
    assert "evil_sneaky" not in reg.names("architectures")
    assert reg.get("architectures", "evil_ok").create().in_features == 2
    assert reg.get("priors", "evil_prior").create(a=1) == {"a": 1}
    assert reg.get("architectures", "twin_only").create().in_features == 3
    # a build that raises: a clear error naming the distribution, recorded, nothing else affected
    with pytest.raises(PluginBuildError, match=r"evil_bad_build.*tz-evil 6\.6\.6.*build exploded"):
        reg.get("architectures", "evil_bad_build").create()
    assert ("build", "evil_bad_build") in _stages(reg, "tzevil")
    assert reg.get("architectures", "evil_ok").create().in_features == 2
    # the kit's view (tabzoo conformance reports these as failed cases)
    failures = {(f.case, f.stage): f for f in reg.case_failures()}
    assert failures[("evil_case", "case")].distribution == "tz-evil"
    assert failures[("evil_case", "case")].version == "6.6.6"
    assert {("evil_wrong", "case"), ("tzevil", "validate"), ("twin_case", "conflict")} <= set(failures)
    assert [c.name for c, _ in reg.conformance_cases()] == []


@pytest.mark.parametrize(("kind", "name"), [
    ("architectures", "twin_arch"), ("priors", "twin_prior"),
    ("kernel_backends", "masked_attention:twin_backend"), ("conformance_cases", "twin_case"),
])
def test_conflicting_names_are_ambiguous(site: Path, monkeypatch: pytest.MonkeyPatch, kind: str, name: str) -> None:
    reg = _load(monkeypatch)
    with pytest.raises(AmbiguousPluginError) as info:
        reg.get(kind, name)
    msg = str(info.value)
    for text in ("tz-evil 6.6.6", "tz-twin 0.2", "TABZOO_DISABLE_PLUGINS=tzevil", "TABZOO_DISABLE_PLUGINS=tztwin"):
        assert text in msg
    assert name not in reg.names(kind)  # no winner was picked
    assert {r.distribution for r in reg.conflicts()[kind][name]} == {"tz-evil", "tz-twin"}


def test_ambiguous_backend_never_dispatches(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from tabzoo.kernels import list_backends, masked_attention
    from tabzoo.masks import full

    _load(monkeypatch)
    assert "twin_backend" not in {b.name for b in list_backends("masked_attention")}
    q = torch.randn(1, 2, 4, 8)
    masked_attention(q, q, q, full())  # would raise AssertionError if either twin ran


def test_disabling_either_side_resolves_the_conflict(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for disabled, dist in (("tzevil", "tz-twin"), ("tztwin", "tz-evil")):
        monkeypatch.setenv("TABZOO_DISABLE_PLUGINS", disabled)
        monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tzevil,tztwin")
        reg = PluginRegistry()
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reg.load_entry_points()
        assert reg.source("architectures", "twin_arch").distribution == dist
        assert reg.source("priors", "twin_prior").distribution == dist
        assert not reg.conflicts()


def test_strict_mode_raises_at_first_failure(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABZOO_STRICT_PLUGINS", "1")
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tzevil")
    with pytest.raises(PluginLoadError, match=r"tz-evil 6\.6\.6.*expects a ArchitectureSpec.*TABZOO_STRICT_PLUGINS"):
        PluginRegistry().load_entry_points()


def _cli(site: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in VARS}
    env.update(PYTHONPATH=str(site), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "tabzoo.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_cli_plugins_beside_the_evil_distribution(site: Path) -> None:
    table = _cli(site, "plugins")
    assert table.returncode == 0, table.stderr
    assert "Traceback" not in table.stdout + table.stderr
    assert "AMBIGUOUS NAMES" in table.stdout and "twin_arch" in table.stdout
    assert "PARTLY LOADED" in table.stdout
    data = json.loads(_cli(site, "plugins", "--json").stdout)
    conflicts = {(c["kind"], c["name"]): c for c in data["conflicts"]}
    assert {d["distribution"] for d in conflicts[("architectures", "twin_arch")]["distributions"]} == {
        "tz-evil", "tz-twin"}
    evil = next(p for p in data["plugins"] if p["name"] == "tzevil")
    assert {f["stage"] for f in evil["failures"]} >= {"validate", "hook", "case", "conflict"}
    assert any(a["name"] == "evil_ok" for a in evil["architectures"])


def test_cli_using_an_ambiguous_name_says_how_to_fix(site: Path, tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("a,y\n1,0\n2,1\n")
    out = _cli(site, "predict", "--model", "twin_arch", "--train", str(tmp_path / "t.csv"),
               "--test", str(tmp_path / "t.csv"), "--target", "y")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "ambiguous" in out.stderr and "tz-evil 6.6.6" in out.stderr and "tz-twin 0.2" in out.stderr
    assert "TABZOO_DISABLE_PLUGINS=tztwin" in out.stderr


@pytest.mark.slow
def test_cli_conformance_tabflex_beside_the_evil_distribution(site: Path) -> None:
    pytest.importorskip("tabzoo_tabflex", reason="tabzoo-tabflex is not installed with only the core")
    tab = json.loads(_cli(site, "plugins", "--json").stdout)
    conflicts = {(c["kind"], c["name"]) for c in tab["conflicts"]}
    assert ("architectures", "tabflex") in conflicts  # tz-evil also claims the name
    out = _cli(site, "conformance", "tabflex", "--max-examples", "3")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "FAILED" not in out.stdout
    everything = _cli(site, "conformance", "all", "--max-examples", "2")
    # the run never crashes; reporting the unbuildable cases as failures (exit 1) is the kit's part
    assert "Traceback" not in everything.stderr, everything.stderr
    assert everything.returncode in (0, 1)


def test_cli_conformance_core_beside_the_evil_distribution(site: Path) -> None:
    out = _cli(site, "conformance", "core_kernels", "--max-examples", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("raise_", ["SystemExit(0)", "type('Boom', (BaseException,), {})('boom')", "GeneratorExit()"])
def test_a_base_exception_at_import_or_in_a_hook_fails_only_that_plugin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raise_: str) -> None:
    tag = str(zlib.crc32(raise_.encode()))  # a module name per case
    make_dist(tmp_path, f"tz-import{tag}", f"tzimport{tag}", f"tz_import{tag}", f"raise {raise_}\n")
    make_dist(tmp_path, f"tz-hook{tag}", f"tzhook{tag}", f"tz_hook{tag}",
              f"from tabzoo.plugins import hookimpl\n\n@hookimpl\ndef tabzoo_register_priors(register):\n"
              f"    raise {raise_}\n")
    make_dist(tmp_path, "tz-twin", "tztwin", "tz_twin_plugin", TWIN, version="0.2")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = _load(monkeypatch, f"tzimport{tag},tzhook{tag},tztwin")
    assert "import" in {f.stage for f in next(r for r in reg.records if r.name == f"tzimport{tag}").failures}
    assert "hook" in {f.stage for f in next(r for r in reg.records if r.name == f"tzhook{tag}").failures}
    assert reg.get("architectures", "twin_only").create().in_features == 3


def test_ctrl_c_in_a_plugin_still_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_dist(tmp_path, "tz-ctrlc", "tzctrlc", "tz_ctrlc", "raise KeyboardInterrupt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tzctrlc")
    with pytest.raises(KeyboardInterrupt):
        PluginRegistry().load_entry_points()
