"""The demo contract: TabFlex and its baselines on the same real splits (``tabzoo demo``)."""

from __future__ import annotations

import importlib.util

import pytest
from tabzoo.cli._demo import run_plugin_demo

pytest.importorskip("sklearn", reason="the demo needs scikit-learn (tabzoo-tabflex[sklearn])")


def test_run_demo_quick() -> None:
    rows = run_plugin_demo("tabflex", "default:tabflex")  # no demo of its own: the core's in-context demo runs it
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
