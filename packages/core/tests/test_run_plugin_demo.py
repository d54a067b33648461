"""run_plugin_demo: the one demo smoke test of the plugins' tests (tabzoo.cli._demo)."""

from __future__ import annotations

import pytest
from tabzoo.cli import _demo
from tabzoo.cli._demo import DemoEntry, run_plugin_demo


def _entries(*targets: str, rows: object = None) -> tuple[list[DemoEntry], dict[str, list[str]]]:
    row = {"dataset": "d", "task": "t", "model": "toy", "metric": "accuracy", "value": 1, "fit_predict_s": 0}
    run = lambda **kw: rows if rows is not None else [dict(row, seed=kw["seed"])]  # noqa: E731
    return [DemoEntry("toy", "toy-dist", "1", ["toy"], t, run) for t in targets], {"toy": ["toy"]}


def test_runs_the_one_registered_demo_and_checks_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_demo, "discover", lambda: _entries("toy.demo:run_demo"))
    rows = run_plugin_demo("toy", "toy.demo:run_demo", seed=3)
    assert rows[0]["seed"] == 3 and rows[0]["value"] == 1.0 and isinstance(rows[0]["value"], float)


@pytest.mark.parametrize("targets", [(), ("a:f", "b:g"), ("default:toy",)])
def test_no_demo_several_or_another_target_is_refused(monkeypatch: pytest.MonkeyPatch, targets: tuple[str, ...]) -> None:
    monkeypatch.setattr(_demo, "discover", lambda: _entries(*targets))
    with pytest.raises(LookupError, match="tabzoo_register_demos"):
        run_plugin_demo("toy", "toy.demo:run_demo")


def test_rows_against_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_demo, "discover", lambda: _entries("toy.demo:run_demo", rows=[{"model": "toy"}]))
    with pytest.raises(TypeError, match="without"):
        run_plugin_demo("toy")
