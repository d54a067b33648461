"""Issue 24 item 4: a plugin that monkeypatches the core is listed as failed ("patches core:
<names>"), never ok; the command's own process never imports it (discovery in a child), and the
in-process path puts the original objects back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from importlib import metadata
from pathlib import Path

import pytest
import tabzoo.files
import tabzoo.plugins.specs
from _fake_dists import GOOD, use_site
from tabzoo.plugins import discovery, get_registry, patches, reset_registry

PATCH_FUNCTION = '''
import tabzoo.files
from tabzoo.plugins import hookimpl, PriorSpec

def write_text(path, text):
    return None  # loses every file

tabzoo.files.write_text = write_text

@hookimpl
def tabzoo_register_priors(register):
    register(PriorSpec(name="patcher_prior", factory=lambda **kw: kw))
'''
LAZY_CASE_PLUGIN = '''
from tabzoo.plugins import ArchitectureSpec, ModelPlugin

plugin = ModelPlugin(ArchitectureSpec(name="lazypatch_arch", build=lambda config: None, kind="other"),
                     cases={"lazypatch_case": "tz_lazypatch_cases:make_case"})
'''
LAZY_CASE_MODULE = '''
import tabzoo.files
from tabzoo.testing import ConformanceCase

tabzoo.files.write_text = lambda path, text: None  # patches the core when the case module is imported

def make_case():
    return ConformanceCase("lazypatch_case")
'''
PATCH_IN_HOOK = '''
from tabzoo.plugins import hookimpl

@hookimpl
def tabzoo_register_priors(register):
    import tabzoo.plugins.specs as specs
    specs.PriorSpec.validate = lambda self: None  # a method of a core class, replaced in a hook
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = use_site(tmp_path, monkeypatch, {"patchfn": PATCH_FUNCTION, "patchhook": PATCH_IN_HOOK,
                                            "good": GOOD.format(arch="good_arch", prior="good_prior")})
    originals = (tabzoo.files.write_text, tabzoo.plugins.specs.PriorSpec.__dict__["validate"])
    discovery._memo.clear()
    reset_registry()
    yield root
    discovery._memo.clear()
    reset_registry()
    tabzoo.files.write_text = originals[0]  # only if the test failed: never leave a patched core behind
    tabzoo.plugins.specs.PriorSpec.validate = originals[1]
    for name in ("tz_patchfn", "tz_patchhook", "tz_good", "tz_lazypatch", "tz_lazypatch_cases"):
        sys.modules.pop(name, None)


def _errors(listing: dict, name: str) -> str:
    return " ".join(f["error"] for p in listing["plugins"] if p["name"] == name for f in p["failures"])


def test_the_cli_lists_a_patching_plugin_as_failed_with_what_it_patched(site: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    out = subprocess.run([sys.executable, "-m", "tabzoo.cli", "plugins", "--json"], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    assert "patches core: tabzoo.files.write_text" in _errors(listing, "tzpatchfn")
    assert "patches core: tabzoo.plugins.specs.PriorSpec.validate" in _errors(listing, "tzpatchhook")
    by_name = {p["name"]: p for p in listing["plugins"]}
    assert not by_name["tzpatchfn"]["loaded"] and by_name["tzpatchfn"]["priors"] == []
    assert by_name["tzgood"]["loaded"] and not by_name["tzgood"]["failures"]
    table = subprocess.run([sys.executable, "-m", "tabzoo.cli", "plugins"], capture_output=True, text=True,
                           env=env, timeout=300).stdout
    row = next(line for line in table.splitlines() if line.startswith("tzpatchfn"))
    assert "ERROR" in row and "patches core" in row and " ok" not in row


def test_the_registry_never_imports_a_patching_plugin(site: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = get_registry(reload=True)
    assert "tz_patchfn" not in sys.modules and "tz_patchhook" not in sys.modules
    assert tabzoo.files.write_text.__module__ == "tabzoo.files"
    failed = {r.name: r.error for r in reg.records if r.error}
    assert set(failed) == {"tzpatchfn", "tzpatchhook"} and "PluginPatchesCore" in failed["tzpatchfn"]
    assert reg.names("priors") == ["good_prior"]


def test_in_process_loading_puts_the_core_back_and_withdraws_the_plugin(site: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABZOO_PLUGIN_PROBE", "0")
    before = patches.snapshot()
    with pytest.warns(RuntimeWarning, match="patches core: tabzoo.files.write_text"):
        reg = get_registry(reload=True)
    assert "tz_patchfn" in sys.modules  # imported here, so the check had to undo it
    assert patches.changes(before, patches.snapshot(), "tz_patchfn") == {}
    assert tabzoo.files.write_text.__module__ == "tabzoo.files"
    assert tabzoo.plugins.specs.PriorSpec.__dict__["validate"].__module__ == "tabzoo.plugins.specs"
    records = {r.name: r for r in reg.records}
    assert not records["tzpatchfn"].loaded and records["tzpatchfn"].provides == {}
    assert "patcher_prior" not in reg.names("priors") and "good_prior" in reg.names("priors")
    assert [f.stage for f in records["tzpatchhook"].failures] == ["patch"]


def _stdout_of_fresh_python(code: str) -> str:
    """What ``code`` prints in a new interpreter (so nothing this process imported counts)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_plugin_that_only_imports_core_modules_is_not_flagged() -> None:
    """Importing a core module for the first time adds names and patches none. Run in a fresh process:
    in this one the module may already be imported, and re-importing it would make new objects."""
    code = ("import sys\nfrom tabzoo.plugins import patches\n"
            "assert 'tabzoo.kernels.memory' not in sys.modules\n"
            "before = patches.snapshot()\nimport tabzoo.kernels.memory\n"
            "print(sorted(patches.changes(before, patches.snapshot(), 'tz_good')))\n")
    stdout = _stdout_of_fresh_python(code)
    assert stdout.strip() == "[]", stdout


def test_the_shipped_plugins_patch_nothing() -> None:
    shipped = {"tabflex", "priors", "npt", "multitab", "ramba", "orion-msp"}
    installed = {ep.name for ep in metadata.entry_points(group="tabzoo")} & shipped
    if not installed:
        pytest.skip("no shipped plugin is installed in this environment (the isolated core session)")
    code = ("from importlib import metadata\nfrom tabzoo.plugins import patches\n"
            "for ep in metadata.entry_points(group='tabzoo'):\n"
            "    before = patches.snapshot()\n    ep.load()\n"
            "    print(ep.name, sorted(patches.changes(before, patches.snapshot(), ep.value.split('.')[0])))\n")
    stdout = _stdout_of_fresh_python(code)
    lines = stdout.split("\n")
    assert {f"{name} []" for name in installed} <= set(lines), stdout
    assert all(line.endswith(" []") for line in lines if line), stdout


def test_a_lazy_case_whose_module_patches_the_core_fails_its_plugin_when_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The case module is imported only when cases are first read (after the plugin's load-time
    check, and never in the discovery child): its build runs under the same check."""
    root = use_site(tmp_path, monkeypatch, {"lazypatch": ""})
    (root / "tz_lazypatch.py").write_text(LAZY_CASE_PLUGIN)
    (root / "tz_lazypatch_cases.py").write_text(LAZY_CASE_MODULE)
    (next(root.glob("tz_lazypatch-*.dist-info")) / "entry_points.txt").write_text(
        "[tabzoo]\ntzlazypatch = tz_lazypatch:plugin\n")
    original = tabzoo.files.write_text
    discovery._memo.clear()
    reset_registry()
    try:
        reg = get_registry(reload=True)
        assert reg.names("architectures") == ["lazypatch_arch"] and "tz_lazypatch_cases" not in sys.modules
        with pytest.warns(RuntimeWarning, match=r"patches core \(while building its conformance case "
                                                r"'lazypatch_case'\): tabzoo.files.write_text"):
            assert reg.names("conformance_cases") == []
        assert tabzoo.files.write_text is original
        record = next(r for r in reg.records if r.name == "tzlazypatch")
        assert not record.loaded and record.provides == {} and reg.names("architectures") == []
        [failure] = reg.case_failures()
        assert (failure.case, failure.stage) == ("lazypatch_case", "patch") and "PluginPatchesCore" in failure.error
    finally:
        tabzoo.files.write_text = original
        discovery._memo.clear()
        reset_registry()
        for name in ("tz_lazypatch", "tz_lazypatch_cases"):
            sys.modules.pop(name, None)
