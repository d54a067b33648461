"""The demo contract: ORION-MSP and its baselines on the same real splits."""

from __future__ import annotations

import pytest
from tabzoo.cli._demo import run_plugin_demo

pytest.importorskip("sklearn", reason="the demo needs scikit-learn")


def test_run_demo_quick() -> None:
    rows = run_plugin_demo("orion-msp", "default:orion-msp")  # no demo of its own: the core's in-context demo runs it
    keys = {"dataset", "task", "model", "metric", "value", "fit_predict_s", "baseline"}
    assert rows and all(set(r) == keys for r in rows)
    assert {r["model"] for r in rows} == {"orion-msp", "LogisticRegression", "HistGradientBoosting"}
    assert {"breast_cancer", "wine"} <= {r["dataset"] for r in rows}  # + penguins with palmerpenguins
    for r in rows:
        assert 0.0 <= r["value"] <= 1.0 and r["fit_predict_s"] >= 0
    lr = {r["dataset"]: r["value"] for r in rows if r["model"] == "LogisticRegression"}
    assert all(v > 0.85 for v in lr.values())  # the baselines run on the same real splits


def test_shipped_checkpoint_beats_chance_on_real_data() -> None:
    orion = [r["value"] for r in run_plugin_demo("orion-msp") if r["model"] == "orion-msp"]
    assert all(v > 0.7 for v in orion)
