"""The demo contract: TabFlex and its baselines on the same real splits (``tabzoo demo``)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from tabzoo.plugins import get_architecture

pytest.importorskip("sklearn", reason="the demo needs scikit-learn (tabzoo-tabflex[sklearn])")


def _demo() -> Any:
    """The plugin registers no demo of its own: ``tabzoo demo`` runs the core's in-context demo on it."""
    from tabzoo.cli._demo import default_demo, discover

    entries, _ = discover()
    assert [e.target for e in entries if e.plugin == "tabflex"] == ["default:tabflex"]
    return lambda **kw: default_demo(get_architecture("tabflex"), **kw)


def test_run_demo_quick() -> None:
    run_demo = _demo()

    rows = run_demo(seed=0, quick=True)
    keys = {"dataset", "task", "model", "metric", "value", "fit_predict_s", "baseline"}
    assert rows and all(set(r) == keys for r in rows)
    datasets = {r["dataset"] for r in rows}
    assert {"breast_cancer", "wine"} <= datasets
    assert ("penguins (species)" in datasets) == (importlib.util.find_spec("palmerpenguins") is not None)
    for ds in datasets:  # the model and both baselines on every data set, scored on the same split
        assert {(r["model"], r["baseline"]) for r in rows if r["dataset"] == ds} == {
            ("tabflex", False), ("LogisticRegression", True), ("HistGradientBoosting", True)}
    for r in rows:
        assert 0.0 <= r["value"] <= 1.0 and r["fit_predict_s"] >= 0
    tabflex = {r["dataset"]: r["value"] for r in rows if r["model"] == "tabflex"}
    assert tabflex["breast_cancer"] > 0.85 and tabflex["wine"] > 0.85  # the shipped weights are useful
