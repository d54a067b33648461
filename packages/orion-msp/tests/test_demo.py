"""The demo contract: ORION-MSP and its baselines on the same real splits."""

from __future__ import annotations

from typing import Any

import pytest
from tabzoo.plugins import get_architecture

pytest.importorskip("sklearn", reason="the demo needs scikit-learn")


def _demo() -> Any:
    """The plugin registers no demo of its own: ``tabzoo demo`` runs the core's in-context demo on it."""
    from tabzoo.cli._demo import default_demo, discover

    entries, _ = discover()
    assert [e.target for e in entries if e.plugin == "orion-msp"] == ["default:orion-msp"]
    return lambda **kw: default_demo(get_architecture("orion-msp"), **kw)


def test_run_demo_quick() -> None:
    run_demo = _demo()

    rows = run_demo(seed=0, quick=True)
    keys = {"dataset", "task", "model", "metric", "value", "fit_predict_s", "baseline"}
    assert rows and all(set(r) == keys for r in rows)
    assert {r["model"] for r in rows} == {"orion-msp", "LogisticRegression", "HistGradientBoosting"}
    assert {"breast_cancer", "wine"} <= {r["dataset"] for r in rows}  # + penguins with palmerpenguins
    for r in rows:
        assert 0.0 <= r["value"] <= 1.0 and r["fit_predict_s"] >= 0
    lr = {r["dataset"]: r["value"] for r in rows if r["model"] == "LogisticRegression"}
    assert all(v > 0.85 for v in lr.values())  # the baselines run on the same real splits


def test_shipped_checkpoint_beats_chance_on_real_data() -> None:
    run_demo = _demo()

    orion = [r["value"] for r in run_demo(seed=0, quick=True) if r["model"] == "orion-msp"]
    assert all(v > 0.7 for v in orion)
