"""The demo contract: run_demo returns the plugin's model and its baselines on the same data."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("sklearn", reason="the demo needs the sklearn extra")


def test_run_demo_contract() -> None:
    from tabzoo.cli._demo import run_plugin_demo

    rows = run_plugin_demo("multitab", "tabzoo_multitab.demo:run_demo")  # as `tabzoo demo` finds and checks it
    keys = {"dataset", "task", "model", "metric", "value", "fit_predict_s"}
    assert rows and all(set(r) == keys for r in rows)
    models = {r["model"] for r in rows}
    assert {"MultiTab-Net", "MMoE", "HistGradientBoosting"} <= models
    assert models & {"LogisticRegression", "Ridge"}
    assert len({r["dataset"] for r in rows}) == 1
    tasks = {r["task"] for r in rows}
    for model in models - {"LogisticRegression", "Ridge"}:  # every model is scored on every task
        assert {r["task"] for r in rows if r["model"] == model} == tasks
    # the linear peer is LogisticRegression on classification tasks, Ridge on regression tasks
    assert {r["task"] for r in rows if r["model"] in ("LogisticRegression", "Ridge")} == tasks
    assert all(math.isfinite(r["value"]) and r["fit_predict_s"] >= 0 for r in rows)
    if rows[0]["dataset"] == "palmerpenguins":  # species is easy: every model should separate it
        species = {r["model"]: r["value"] for r in rows if r["task"] == "species"}
        assert species["MultiTab-Net"] > 0.9 and species["HistGradientBoosting"] > 0.9
