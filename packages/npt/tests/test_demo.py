"""The demo contract: run_demo returns one row per model on the same splits, NPT included."""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn", reason="the demo needs scikit-learn (tabzoo-npt[sklearn])")


@pytest.mark.slow
def test_run_demo_rows() -> None:
    from tabzoo.cli._demo import run_plugin_demo

    rows = run_plugin_demo("npt", "tabzoo_npt.demo:run_demo")  # as `tabzoo demo` finds and checks it
    keys = {"dataset", "task", "model", "metric", "value", "fit_predict_s"}
    assert all(set(r) == keys for r in rows)
    assert {(r["task"], r["model"]) for r in rows} >= {("regression", "npt"), ("regression", "ridge"),
                                                     ("imputation", "npt"), ("imputation", "mean")}
    by = {(r["task"], r["model"]): r["value"] for r in rows}
    assert by[("imputation", "npt")] < by[("imputation", "mean")]  # NPT uses the other columns
    assert by[("regression", "npt")] < 1.3 * by[("regression", "ridge")]
