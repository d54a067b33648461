"""Issue 24: conformance cases a plugin declares by name are built when cases are first asked for,
not while the plugin loads, so loading (and plugin discovery's child) imports no torch."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings

import pytest
from tabzoo.plugins import ArchitectureSpec, ModelPlugin
from tabzoo.plugins.manager import PluginRegistry
from tabzoo.plugins.records import PluginRecord
from tabzoo.testing import ConformanceCase
from tabzoo.testing import capabilities as cap


def _plugin(arch: str, cases: dict) -> ModelPlugin:
    return ModelPlugin(ArchitectureSpec(name=arch, build=lambda c: None, kind="other"), cases=cases)


def test_named_cases_are_built_once_on_first_read_and_a_failure_is_recorded_then() -> None:
    calls: list[str] = []

    def ok() -> ConformanceCase:
        calls.append("ok")
        return ConformanceCase("lazy_ok", capabilities={cap.KERNEL_EQUIVALENCE})

    def bad() -> ConformanceCase:
        calls.append("bad")
        raise ZeroDivisionError("case factory exploded")

    reg, rec = PluginRegistry(), PluginRecord("tzlazy", "tz-lazy", "1.0", "tz_lazy:plugin")
    reg.add_plugin(_plugin("lazy_arch", {"lazy_ok": ok, "lazy_bad": bad}), rec)
    assert calls == [] and rec.failures == [] and rec.provides["conformance_cases"] == ["lazy_ok", "lazy_bad"]
    assert reg.names("architectures") == ["lazy_arch"] and calls == []  # other kinds build no case
    with pytest.warns(RuntimeWarning, match="case factory exploded"):
        assert reg.names("conformance_cases") == ["lazy_ok"]
    assert calls == ["ok", "bad"] and rec.provides["conformance_cases"] == ["lazy_ok"]
    failures = {(f.case, f.stage): f.error for f in reg.case_failures()}
    assert failures == {("lazy_bad", "case"): "ZeroDivisionError: case factory exploded"}
    assert [c.name for c, _ in reg.conformance_cases()] == ["lazy_ok"] and calls == ["ok", "bad"]


def test_a_name_two_distributions_declare_is_a_conflict_before_anything_is_built() -> None:
    calls: list[str] = []
    reg = PluginRegistry()
    with pytest.warns(RuntimeWarning, match="ambiguous|also registered"):
        for dist in ("tz-one", "tz-two"):
            reg.add_plugin(_plugin(f"arch_{dist[-3:]}", {"twin": lambda: calls.append("built")}),
                           PluginRecord(dist, dist, "1.0", f"{dist}:plugin"))
    assert calls == [] and {r.distribution for r in reg.conflicts()["conformance_cases"]["twin"]} == {"tz-one", "tz-two"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert reg.names("conformance_cases") == [] and calls == []


PROBE = """
import sys, warnings
from tabzoo.plugins.manager import PluginRegistry
warnings.simplefilter("ignore")
reg = PluginRegistry()
reg.load_entry_points()
print("torch" in sys.modules, sorted(reg.items["conformance_cases"].pending()))
"""


@pytest.mark.skipif(importlib.util.find_spec("tabzoo_tabflex") is None,
                    reason="the shipped plugins are not installed (isolated core session)")
def test_loading_the_shipped_plugins_imports_no_torch() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300,
                         env={**{k: v for k, v in os.environ.items() if not k.startswith("TABZOO_")},
                              "TABZOO_PLUGIN_PROBE": "0"})
    assert out.returncode == 0, out.stderr
    imported, pending = out.stdout.split(" ", 1)
    assert imported == "False", out.stdout
    assert "'tabflex'" in pending and "'orion-msp'" in pending, pending
