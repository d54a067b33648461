"""With every package installed, `tabzoo demo` finds each model plugin's registered demo (TabFlex and
ORION-MSP register none: the core's in-context demo runs their classifiers)."""

from __future__ import annotations

import pytest
from tabzoo.cli import main
from tabzoo.cli._demo import discover
from tabzoo.plugins import reset_registry


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch):
    for var in ("TABZOO_LOAD_PLUGINS", "TABZOO_DISABLE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    reset_registry()
    yield
    reset_registry()


def test_every_model_plugin_ships_a_demo_that_is_found() -> None:
    entries, models = discover()
    demos = {e.plugin: e.target for e in entries}
    assert demos == {
        "tabflex": "default:tabflex", "orion-msp": "default:orion-msp",  # the core's in-context demo
        "npt": "tabzoo_npt.demo:run_demo", "multitab": "tabzoo_multitab.demo:run_demo",
        "ramba": "tabzoo_ramba.demo:run_demo",
    }
    assert "priors" not in models  # registers no architecture: nothing to demo


def test_unknown_model_lists_every_installed_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--model", "tabpfn"]) == 2
    err = capsys.readouterr().err
    for name in ("tabflex", "orion-msp", "npt", "multitab", "ramba"):
        assert name in err
    assert "no installed plugin provides that model" in err
